//! `DEBUG DIGEST` and `DEBUG DIGEST-VALUE`: Redis 7.0's SHA1 signature of the dataset and of
//! single values, so that a test can compare two servers' data (or one server's before and
//! after a reload) in one call, and get the same 40 hex digits from the fake as from Redis.
//!
//! Redis builds both from two steps over a 20-byte state. *Fold* hashes some bytes with SHA1
//! and XORs the hash into the state: the order of folds does not matter, which suits unordered
//! things (a set's members, a hash's fields, the keys of a database). *Chain* folds the bytes
//! and then replaces the state with the SHA1 of itself: the order matters, which suits ordered
//! things (a list's elements, a field and then its value). A value's signature chains its type
//! number (big-endian, 4 bytes), then its contents, and folds the marker `!!expire!!` when the
//! key has a TTL. The dataset's signature chains each non-empty database's number and folds
//! each key's signature (the key chained, then its value's steps). Scores are printed as C's
//! `%.17g`. An empty dataset, or a missing key, is 40 zeros.

use crate::engine::db::{Entry, Value};
use crate::engine::stream::StreamId;
use crate::resp::number::format_g17;
use sha1_smol::Sha1;

/// The 20-byte state the steps work on.
type State = [u8; 20];

fn sha1(bytes: &[u8]) -> State {
    Sha1::from(bytes).digest().bytes()
}

/// XORs the SHA1 of `bytes` into `state` (order-free).
fn fold(state: &mut State, bytes: &[u8]) {
    for (s, h) in state.iter_mut().zip(sha1(bytes)) {
        *s ^= h;
    }
}

/// Folds `bytes`, then replaces the state with its own SHA1 (order-bound).
fn chain(state: &mut State, bytes: &[u8]) {
    fold(state, bytes);
    *state = sha1(state);
}

/// The steps of a pair of things (a hash's field and value, a member and its score): their own
/// chained state, folded into `state`.
fn fold_pair(state: &mut State, first: &[u8], second: &[u8]) {
    let mut pair = [0u8; 20];
    chain(&mut pair, first);
    chain(&mut pair, second);
    fold(state, &pair);
}

/// Redis's type numbers (`OBJ_STRING` ...).
fn type_number(value: &Value) -> u32 {
    match value {
        Value::Str(_) => 0,
        Value::List(_) => 1,
        Value::Set(_) => 2,
        Value::ZSet(_) => 3,
        Value::Hash(_) => 4,
        Value::Stream(_) => 6,
    }
}

/// Adds the steps of `entry`'s value (and its TTL marker) to `state`.
fn mix_value(state: &mut State, entry: &Entry) {
    chain(state, &type_number(&entry.value).to_be_bytes());
    match &entry.value {
        Value::Str(s) => chain(state, s),
        Value::List(l) => l.iter().for_each(|e| chain(state, e)),
        Value::Set(s) => s.iter().for_each(|m| fold(state, m)),
        Value::ZSet(z) => z
            .iter()
            .for_each(|(score, m)| fold_pair(state, m, format_g17(score).as_bytes())),
        Value::Hash(h) => h.iter().for_each(|(f, v)| fold_pair(state, f, v)),
        Value::Stream(s) => {
            for (id, fields) in s.range(StreamId::MIN, StreamId::MAX, false, 0) {
                chain(state, format!("{}.{}", id.ms, id.seq).as_bytes());
                fields.iter().for_each(|f| chain(state, f));
            }
        }
    }
    if entry.deadline().is_some() {
        fold(state, b"!!expire!!");
    }
}

/// 40 lowercase hex digits.
pub(crate) fn hex(state: &State) -> String {
    state.iter().map(|b| format!("{b:02x}")).collect()
}

/// `DEBUG DIGEST-VALUE`'s signature of one value; zeros for a missing key.
pub(crate) fn value_digest(entry: Option<&Entry>) -> State {
    let mut state = [0u8; 20];
    if let Some(entry) = entry {
        mix_value(&mut state, entry);
    }
    state
}

/// `DEBUG DIGEST`'s signature of the dataset: `databases` holds, for each database, its keys
/// with their entries (any order: keys are folded).
pub(crate) fn dataset_digest<'a, I, K>(databases: I) -> State
where
    I: IntoIterator<Item = (usize, K)>,
    K: IntoIterator<Item = (&'a [u8], &'a Entry)>,
{
    let mut state = [0u8; 20];
    for (index, keys) in databases {
        let mut keys = keys.into_iter().peekable();
        if keys.peek().is_none() {
            continue;
        }
        chain(&mut state, &(index as u32).to_be_bytes());
        for (key, entry) in keys {
            let mut one = [0u8; 20];
            chain(&mut one, key);
            mix_value(&mut one, entry);
            fold(&mut state, &one);
        }
    }
    state
}
