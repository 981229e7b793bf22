//! `SORT` and `SORT_RO`: the elements of a list, set or sorted set, ordered numerically or
//! (`ALPHA`) by bytes, by themselves or by the keys a `BY` pattern names, cut by `LIMIT`, replied
//! or replaced by what `GET` patterns name, or stored as a list (`STORE`).
//!
//! The rules are Redis's `sortCommandGeneric`: options are parsed before the key is looked up; a
//! `BY` pattern without `*` means "do not sort" (a list and a sorted set keep their order, a set
//! is then sorted by bytes when stored); in a pattern `*` is replaced by the element and
//! `key->field` reads a hash field; `#` is the element itself. Numeric sorting reads each
//! weight with C's `strtod` (a missing one is 0) and breaks ties by the elements' bytes; a weight
//! that is not a number fails the whole command with `One or more scores can't be converted
//! into double`. The fake compares bytes where Redis uses `strcoll`, which is the same in the C
//! locale Redis runs in by default.

use super::{Args, CmdResult, Cx, SYNTAX, Spec, WRITE, WRONGTYPE, is};
use crate::engine::db::Value;
use crate::engine::list::List;
use crate::resp::Frame;
use bytes::Bytes;
use std::cmp::Ordering;

pub(crate) static SORT: Spec = Spec::new("sort", -2, WRITE, sort_command)
    .with_reads(super::ReadRule::Decide(super::reads::store_option_reads));
pub(crate) static SORT_RO: Spec = Spec::new("sort_ro", -2, 0, sort_command);

/// `SORT key [BY pattern] [LIMIT offset count] [GET pattern…] [ASC|DESC] [ALPHA] [STORE
/// destination]`, parsed as Redis parses it.
struct Sort<'a> {
    key: &'a Bytes,
    by: Option<&'a Bytes>,
    gets: Vec<&'a Bytes>,
    offset: i64,
    count: i64,
    desc: bool,
    alpha: bool,
    store: Option<&'a Bytes>,
    /// A `BY` pattern without `*`: the elements keep their order.
    dont_sort: bool,
}

impl<'a> Sort<'a> {
    fn parse(args: &mut Args<'a>, readonly: bool) -> Result<Sort<'a>, Frame> {
        let key = args.next_bytes()?;
        let mut sort = Sort {
            key,
            by: None,
            gets: Vec::new(),
            offset: 0,
            count: -1,
            desc: false,
            alpha: false,
            store: None,
            dont_sort: false,
        };
        while let Some(opt) = args.next() {
            let left = args.remaining();
            if is(opt, "asc") {
                sort.desc = false;
            } else if is(opt, "desc") {
                sort.desc = true;
            } else if is(opt, "alpha") {
                sort.alpha = true;
            } else if is(opt, "limit") && left >= 2 {
                sort.offset = args.next_int()?;
                sort.count = args.next_int()?;
            } else if !readonly && is(opt, "store") && left >= 1 {
                sort.store = Some(args.next_bytes()?);
            } else if is(opt, "by") && left >= 1 {
                let pattern = args.next_bytes()?;
                sort.by = Some(pattern);
                sort.dont_sort = !pattern.contains(&b'*');
            } else if is(opt, "get") && left >= 1 {
                sort.gets.push(args.next_bytes()?);
            } else {
                return Err(SYNTAX);
            }
        }
        Ok(sort)
    }

    fn apply(mut self, cx: &mut Cx<'_>) -> CmdResult {
        let (elements, ordered) = match cx.lookup(self.key) {
            None => (Vec::new(), true),
            Some(e) => {
                if matches!(e.value, Value::ZSet(_)) {
                    // Redis converts a sorted set to its skiplist to sort it, for good
                    // (`zsetConvert` in sort.c): `OBJECT ENCODING` shows it after.
                    e.mark_encoding(super::server::marks::CONVERTED);
                }
                match &e.value {
                    Value::List(l) => (l.iter().map(Bytes::copy_from_slice).collect(), true),
                    Value::Set(s) => (s.iter().cloned().collect::<Vec<_>>(), false),
                    Value::ZSet(z) => (z.iter().map(|(_, m)| m.clone()).collect(), true),
                    _ => return Err(WRONGTYPE),
                }
            }
        };
        // A stored set must not depend on its hash order, nor a script's: Redis sorts it by
        // bytes instead, so that replicas and the AOF get the same result.
        if self.dont_sort && !ordered && (self.store.is_some() || cx.in_script()) {
            self.dont_sort = false;
            self.alpha = true;
            self.by = None;
        }
        let len = elements.len() as i64;
        let start = self.offset.max(0);
        let mut end = if self.count < 0 {
            len - 1
        } else {
            start.saturating_add(self.count) - 1
        };
        let start = if start >= len {
            end = len - 2;
            len - 1
        } else {
            start
        };
        end = end.min(len - 1);
        let mut elements = elements;
        if self.dont_sort {
            if ordered && self.desc {
                elements.reverse();
            }
        } else {
            elements = self.sorted(cx, elements)?;
        }
        let picked: &[Bytes] = if end >= start {
            &elements[start as usize..=end as usize]
        } else {
            &[]
        };
        let mut output: Vec<Option<Bytes>> = Vec::new();
        for element in picked {
            if self.gets.is_empty() {
                output.push(Some(element.clone()));
            }
            for pattern in &self.gets {
                output.push(lookup_by_pattern(cx, pattern, element));
            }
        }
        let Some(destination) = self.store else {
            return Ok(Frame::Array(
                output
                    .into_iter()
                    .map(|v| v.map_or(Frame::Null, Frame::Bulk))
                    .collect(),
            ));
        };
        let len = output.len();
        let list: List = output.into_iter().map(Option::unwrap_or_default).collect();
        let value = (!list.is_empty()).then_some(Value::List(list));
        super::store_or_delete(cx, destination, value, (super::class::LIST, "sortstore"));
        Ok(Frame::Integer(len as i64))
    }

    /// The elements in the order the options ask for, or the conversion error.
    fn sorted(&self, cx: &mut Cx<'_>, elements: Vec<Bytes>) -> Result<Vec<Bytes>, Frame> {
        let mut keyed: Vec<(Bytes, Option<Bytes>, f64)> = Vec::with_capacity(elements.len());
        let mut not_a_number = false;
        for element in elements {
            let weight = match self.by {
                Some(pattern) => lookup_by_pattern(cx, pattern, &element),
                None => Some(element.clone()),
            };
            let score = match (&weight, self.alpha) {
                (Some(w), false) => match sort_score(w) {
                    Some(s) => s,
                    None => {
                        not_a_number = true;
                        0.0
                    }
                },
                _ => 0.0,
            };
            keyed.push((element, weight, score));
        }
        if not_a_number {
            return Err(Frame::error(
                "ERR One or more scores can't be converted into double",
            ));
        }
        let by_pattern = self.by.is_some();
        keyed.sort_by(|x, y| {
            let order = if !self.alpha {
                x.2.partial_cmp(&y.2)
                    .unwrap_or(Ordering::Equal)
                    .then_with(|| x.0.cmp(&y.0))
            } else if by_pattern {
                // A missing weight sorts first.
                x.1.cmp(&y.1)
            } else {
                x.0.cmp(&y.0)
            };
            if self.desc { order.reverse() } else { order }
        });
        Ok(keyed.into_iter().map(|(e, _, _)| e).collect())
    }
}

/// A weight as Redis reads it for a numeric sort: `strtod` over the whole text, no range error,
/// no NaN.
fn sort_score(text: &[u8]) -> Option<f64> {
    let v = super::zsets::strtod(text)?;
    let digits = text
        .iter()
        .take_while(|&&b| b != b'e' && b != b'E')
        .any(|b| (b'1'..=b'9').contains(b));
    let lower = text.to_ascii_lowercase();
    let named_infinity = lower.windows(3).any(|w| w == b"inf");
    if (v.is_infinite() && !named_infinity) || (v == 0.0 && digits && !text.starts_with(b"0x")) {
        return None;
    }
    Some(v)
}

/// What a `BY` or `GET` pattern names for `element`, as Redis's `lookupKeyByPattern`: `#` is the
/// element; otherwise the first `*` is replaced by it, and a `->field` after it reads that field
/// of a hash. Nothing for a pattern without `*`, a missing key, or a value of another type.
fn lookup_by_pattern(cx: &mut Cx<'_>, pattern: &[u8], element: &Bytes) -> Option<Bytes> {
    if pattern == b"#" {
        return Some(element.clone());
    }
    let star = pattern.iter().position(|&b| b == b'*')?;
    let after = &pattern[star + 1..];
    let field = after
        .windows(2)
        .position(|w| w == b"->")
        .filter(|&at| at + 2 < after.len());
    let (postfix, field) = match field {
        Some(at) => (&after[..at], Some(&after[at + 2..])),
        None => (after, None),
    };
    let key = [&pattern[..star], &element[..], postfix].concat();
    let entry = cx.lookup(&key)?;
    match (&entry.value, field) {
        (Value::Hash(h), Some(field)) => h.get(field).map(Bytes::copy_from_slice),
        (Value::Str(s), None) => Some(s.clone()),
        _ => None,
    }
}

fn sort_command(cx: &mut Cx<'_>, args: &mut Args<'_>) -> CmdResult {
    let readonly = is(args.name(), "sort_ro");
    Sort::parse(args, readonly)?.apply(cx)
}
