//! A reference [`Store`]: the scripts' commands over a `BTreeMap`, with a clock you set by hand.
//!
//! It exists so the native twins can be tested with no server at all, and so the differential test
//! has an oracle that is small enough to read. It knows strings, hashes, lists and sorted sets (the
//! fair lock's queue and timeouts), Redis's strict expiry rule (`now > deadline`), and Redis's error
//! texts for the commands the scripts use.

use super::{CommandError, Store, parse_i64};
use bytes::Bytes;
use std::collections::BTreeMap;

/// A value in the reference keyspace.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Value {
    /// A string.
    Str(Bytes),
    /// A hash, fields in insertion order (as Redis's compact encoding keeps them).
    Hash(Vec<(Bytes, Bytes)>),
    /// A list.
    List(Vec<Bytes>),
    /// A sorted set, lowest score first, ties by member.
    ZSet(Vec<(Bytes, Score)>),
}

/// A sorted set's score. A score is never NaN (Redis refuses one), so it is totally ordered.
#[derive(Clone, Copy, Debug, PartialEq, PartialOrd)]
pub struct Score(pub f64);

impl Eq for Score {}

#[derive(Clone, Debug, PartialEq, Eq)]
struct Entry {
    value: Value,
    /// Unix milliseconds; the key exists through this millisecond and is gone after it.
    deadline: Option<i64>,
}

/// The reference keyspace.
#[derive(Clone, Debug, Default)]
pub struct ReferenceStore {
    now: i64,
    keys: BTreeMap<Bytes, Entry>,
    published: Vec<(Bytes, Bytes)>,
}

impl ReferenceStore {
    /// An empty keyspace at unix time `now_ms`.
    pub fn new(now_ms: i64) -> ReferenceStore {
        ReferenceStore {
            now: now_ms,
            ..ReferenceStore::default()
        }
    }

    /// The current time, unix milliseconds.
    pub fn now(&self) -> i64 {
        self.now
    }

    /// Moves the clock to `now_ms`.
    pub fn set_now(&mut self, now_ms: i64) {
        self.now = now_ms;
    }

    /// Moves the clock forward by `ms`.
    pub fn advance(&mut self, ms: i64) {
        self.now += ms;
    }

    /// Every message published so far, in order.
    pub fn published(&self) -> &[(Bytes, Bytes)] {
        &self.published
    }

    /// `SET key value` (no TTL), as a plain write from outside the scripts.
    pub fn set_string(&mut self, key: &[u8], value: &[u8]) {
        self.put(key, Value::Str(Bytes::copy_from_slice(value)), None);
    }

    /// `DEL key` then `RPUSH key value`, as a plain write from outside the scripts.
    pub fn set_list(&mut self, key: &[u8], value: &[u8]) {
        self.put(key, Value::List(vec![Bytes::copy_from_slice(value)]), None);
    }

    /// `PERSIST key`: whether a TTL was removed.
    pub fn persist(&mut self, key: &[u8]) -> bool {
        match self.live_mut(key) {
            Some(e) if e.deadline.is_some() => {
                e.deadline = None;
                true
            }
            _ => false,
        }
    }

    /// The live value at `key`.
    pub fn value(&mut self, key: &[u8]) -> Option<&Value> {
        self.live_mut(key).map(|e| &e.value)
    }

    /// Every live key with its value and deadline (unix ms), in key order.
    pub fn snapshot(&self) -> Vec<(Bytes, Value, Option<i64>)> {
        self.keys
            .iter()
            .filter(|(_, e)| !self.expired(e))
            .map(|(k, e)| (k.clone(), e.value.clone(), e.deadline))
            .collect()
    }

    fn expired(&self, e: &Entry) -> bool {
        e.deadline.is_some_and(|d| self.now > d)
    }

    fn put(&mut self, key: &[u8], value: Value, deadline: Option<i64>) {
        self.keys
            .insert(Bytes::copy_from_slice(key), Entry { value, deadline });
    }

    /// The entry at `key`, deleting it first if it has expired (Redis's lazy expiry).
    fn live_mut(&mut self, key: &[u8]) -> Option<&mut Entry> {
        if self.keys.get(key).is_some_and(|e| self.expired(e)) {
            self.keys.remove(key);
        }
        self.keys.get_mut(key)
    }

    fn list_mut(&mut self, key: &[u8]) -> Result<Option<&mut Vec<Bytes>>, CommandError> {
        match self.live_mut(key) {
            None => Ok(None),
            Some(Entry {
                value: Value::List(l),
                ..
            }) => Ok(Some(l)),
            Some(_) => Err(CommandError::wrong_type()),
        }
    }

    fn zset_mut(&mut self, key: &[u8]) -> Result<Option<&mut Vec<(Bytes, Score)>>, CommandError> {
        match self.live_mut(key) {
            None => Ok(None),
            Some(Entry {
                value: Value::ZSet(z),
                ..
            }) => Ok(Some(z)),
            Some(_) => Err(CommandError::wrong_type()),
        }
    }

    /// Deletes `key` if its list or sorted set is empty, as Redis deletes an emptied collection.
    fn drop_if_empty(&mut self, key: &[u8]) {
        let empty = match self.keys.get(key).map(|e| &e.value) {
            Some(Value::List(l)) => l.is_empty(),
            Some(Value::ZSet(z)) => z.is_empty(),
            _ => false,
        };
        if empty {
            self.keys.remove(key);
        }
    }

    /// Puts `member` at `score` in the sorted set at `key` (created if missing): whether it is new.
    fn zset_put(&mut self, key: &[u8], member: &[u8], score: f64) -> Result<bool, CommandError> {
        if self.zset_mut(key)?.is_none() {
            self.put(key, Value::ZSet(Vec::new()), None);
        }
        let z = self.zset_mut(key)?.expect("created above");
        let old = z.iter().position(|(m, _)| m == member);
        if let Some(i) = old {
            z.remove(i);
        }
        let at = z
            .iter()
            .position(|(m, s)| (s.0, &m[..]) > (score, member))
            .unwrap_or(z.len());
        z.insert(at, (Bytes::copy_from_slice(member), Score(score)));
        Ok(old.is_none())
    }

    fn hash_mut(&mut self, key: &[u8]) -> Result<Option<&mut Vec<(Bytes, Bytes)>>, CommandError> {
        match self.live_mut(key) {
            None => Ok(None),
            Some(Entry {
                value: Value::Hash(h),
                ..
            }) => Ok(Some(h)),
            Some(_) => Err(CommandError::wrong_type()),
        }
    }
}

fn not_a_float() -> CommandError {
    CommandError("ERR value is not a valid float".into())
}

/// A score argument, as the scripts send them (a Lua number printed with `%.17g`).
fn parse_score(arg: &[u8]) -> Result<f64, CommandError> {
    std::str::from_utf8(arg)
        .ok()
        .and_then(|s| s.parse::<f64>().ok())
        .filter(|v| !v.is_nan())
        .ok_or_else(not_a_float)
}

fn invalid_expire(cmd: &str) -> CommandError {
    CommandError(format!("ERR invalid expire time in '{cmd}' command"))
}

impl Store for ReferenceStore {
    fn exists(&mut self, key: &[u8]) -> Result<bool, CommandError> {
        Ok(self.live_mut(key).is_some())
    }

    fn hexists(&mut self, key: &[u8], field: &[u8]) -> Result<bool, CommandError> {
        Ok(self
            .hash_mut(key)?
            .is_some_and(|h| h.iter().any(|(f, _)| f == field)))
    }

    fn hincrby(&mut self, key: &[u8], field: &[u8], delta: i64) -> Result<i64, CommandError> {
        let Some(hash) = self.hash_mut(key)? else {
            let value = Bytes::from(delta.to_string());
            self.put(
                key,
                Value::Hash(vec![(Bytes::copy_from_slice(field), value)]),
                None,
            );
            return Ok(delta);
        };
        let slot = hash.iter_mut().find(|(f, _)| f == field);
        let old = match &slot {
            Some((_, v)) => parse_i64(v)
                .ok_or_else(|| CommandError("ERR hash value is not an integer".into()))?,
            None => 0,
        };
        let new = old
            .checked_add(delta)
            .ok_or_else(|| CommandError("ERR increment or decrement would overflow".into()))?;
        let text = Bytes::from(new.to_string());
        match slot {
            Some((_, v)) => *v = text,
            None => hash.push((Bytes::copy_from_slice(field), text)),
        }
        Ok(new)
    }

    fn hget(&mut self, key: &[u8], field: &[u8]) -> Result<Option<Bytes>, CommandError> {
        Ok(self
            .hash_mut(key)?
            .and_then(|h| h.iter().find(|(f, _)| f == field).map(|(_, v)| v.clone())))
    }

    fn pexpire(&mut self, key: &[u8], ms: &[u8]) -> Result<bool, CommandError> {
        let ms = parse_i64(ms).ok_or_else(CommandError::not_an_integer)?;
        let now = self.now;
        let deadline = ms
            .checked_add(now)
            .ok_or_else(|| invalid_expire("pexpire"))?;
        let Some(entry) = self.live_mut(key) else {
            return Ok(false);
        };
        if deadline <= now {
            self.keys.remove(key);
        } else {
            entry.deadline = Some(deadline);
        }
        Ok(true)
    }

    fn pttl(&mut self, key: &[u8]) -> Result<i64, CommandError> {
        let now = self.now;
        Ok(match self.live_mut(key) {
            None => -2,
            Some(Entry { deadline: None, .. }) => -1,
            Some(Entry {
                deadline: Some(d), ..
            }) => (*d - now).max(0),
        })
    }

    fn del(&mut self, key: &[u8]) -> Result<bool, CommandError> {
        Ok(self.live_mut(key).is_some() && self.keys.remove(key).is_some())
    }

    fn publish(&mut self, channel: &[u8], message: &[u8]) -> Result<i64, CommandError> {
        self.published.push((
            Bytes::copy_from_slice(channel),
            Bytes::copy_from_slice(message),
        ));
        Ok(0)
    }

    fn spublish(&mut self, channel: &[u8], message: &[u8]) -> Result<i64, CommandError> {
        // One server: a shard channel's subscribers are those of the channel's name.
        self.publish(channel, message)
    }

    fn set_px(&mut self, key: &[u8], value: &[u8], ms: &[u8]) -> Result<(), CommandError> {
        let ms = parse_i64(ms).ok_or_else(CommandError::not_an_integer)?;
        if ms <= 0 {
            return Err(invalid_expire("set"));
        }
        let deadline = ms
            .checked_add(self.now)
            .ok_or_else(|| invalid_expire("set"))?;
        self.put(
            key,
            Value::Str(Bytes::copy_from_slice(value)),
            Some(deadline),
        );
        Ok(())
    }

    fn get(&mut self, key: &[u8]) -> Result<Option<Bytes>, CommandError> {
        match self.live_mut(key) {
            None => Ok(None),
            Some(Entry {
                value: Value::Str(s),
                ..
            }) => Ok(Some(s.clone())),
            Some(_) => Err(CommandError::wrong_type()),
        }
    }

    fn incrby(&mut self, key: &[u8], delta: i64) -> Result<i64, CommandError> {
        match self.live_mut(key) {
            None => {
                self.put(key, Value::Str(Bytes::from(delta.to_string())), None);
                Ok(delta)
            }
            Some(Entry {
                value: Value::Str(s),
                ..
            }) => {
                let old = parse_i64(s).ok_or_else(CommandError::not_an_integer)?;
                let new = old.checked_add(delta).ok_or_else(|| {
                    CommandError("ERR increment or decrement would overflow".into())
                })?;
                *s = Bytes::from(new.to_string());
                Ok(new)
            }
            Some(_) => Err(CommandError::wrong_type()),
        }
    }

    fn time(&mut self) -> (i64, i64) {
        (self.now.div_euclid(1000), self.now.rem_euclid(1000) * 1000)
    }

    fn hset(&mut self, key: &[u8], field: &[u8], value: &[u8]) -> Result<i64, CommandError> {
        let value = Bytes::copy_from_slice(value);
        let Some(hash) = self.hash_mut(key)? else {
            let fields = vec![(Bytes::copy_from_slice(field), value)];
            self.put(key, Value::Hash(fields), None);
            return Ok(1);
        };
        match hash.iter_mut().find(|(f, _)| f == field) {
            Some((_, v)) => {
                *v = value;
                Ok(0)
            }
            None => {
                hash.push((Bytes::copy_from_slice(field), value));
                Ok(1)
            }
        }
    }

    fn hdel(&mut self, key: &[u8], field: &[u8]) -> Result<bool, CommandError> {
        let Some(hash) = self.hash_mut(key)? else {
            return Ok(false);
        };
        let Some(at) = hash.iter().position(|(f, _)| f == field) else {
            return Ok(false);
        };
        hash.remove(at);
        if hash.is_empty() {
            self.keys.remove(key);
        }
        Ok(true)
    }

    fn hlen(&mut self, key: &[u8]) -> Result<i64, CommandError> {
        Ok(self.hash_mut(key)?.map_or(0, |h| h.len() as i64))
    }

    fn hkeys(&mut self, key: &[u8]) -> Result<Vec<Bytes>, CommandError> {
        Ok(self
            .hash_mut(key)?
            .map(|h| h.iter().map(|(f, _)| f.clone()).collect())
            .unwrap_or_default())
    }

    fn lindex(&mut self, key: &[u8], index: i64) -> Result<Option<Bytes>, CommandError> {
        let Some(list) = self.list_mut(key)? else {
            return Ok(None);
        };
        let len = list.len() as i64;
        let i = if index < 0 { len + index } else { index };
        Ok((0..len).contains(&i).then(|| list[i as usize].clone()))
    }

    fn lpop(&mut self, key: &[u8]) -> Result<Option<Bytes>, CommandError> {
        let Some(list) = self.list_mut(key)? else {
            return Ok(None);
        };
        let first = (!list.is_empty()).then(|| list.remove(0));
        self.drop_if_empty(key);
        Ok(first)
    }

    fn rpush(&mut self, key: &[u8], element: &[u8]) -> Result<i64, CommandError> {
        let element = Bytes::copy_from_slice(element);
        match self.list_mut(key)? {
            Some(list) => {
                list.push(element);
                Ok(list.len() as i64)
            }
            None => {
                self.put(key, Value::List(vec![element]), None);
                Ok(1)
            }
        }
    }

    fn lrange_all(&mut self, key: &[u8]) -> Result<Vec<Bytes>, CommandError> {
        Ok(self.list_mut(key)?.map(|l| l.clone()).unwrap_or_default())
    }

    fn lrem_all(&mut self, key: &[u8], element: &[u8]) -> Result<i64, CommandError> {
        let Some(list) = self.list_mut(key)? else {
            return Ok(0);
        };
        let before = list.len();
        list.retain(|e| e != element);
        let removed = (before - list.len()) as i64;
        self.drop_if_empty(key);
        Ok(removed)
    }

    fn zscore(&mut self, key: &[u8], member: &[u8]) -> Result<Option<f64>, CommandError> {
        Ok(self
            .zset_mut(key)?
            .and_then(|z| z.iter().find(|(m, _)| m == member).map(|(_, s)| s.0)))
    }

    fn zadd(&mut self, key: &[u8], score: &[u8], member: &[u8]) -> Result<bool, CommandError> {
        let score = parse_score(score)?;
        self.zset_put(key, member, score)
    }

    fn zincrby(
        &mut self,
        key: &[u8],
        increment: &[u8],
        member: &[u8],
    ) -> Result<f64, CommandError> {
        let increment = parse_score(increment)?;
        let score = self.zscore(key, member)?.unwrap_or(0.0) + increment;
        if score.is_nan() {
            return Err(CommandError(
                "ERR resulting score is not a number (NaN)".into(),
            ));
        }
        self.zset_put(key, member, score)?;
        Ok(score)
    }

    fn zrem(&mut self, key: &[u8], member: &[u8]) -> Result<bool, CommandError> {
        let Some(z) = self.zset_mut(key)? else {
            return Ok(false);
        };
        let found = z.iter().position(|(m, _)| m == member);
        if let Some(i) = found {
            z.remove(i);
        }
        self.drop_if_empty(key);
        Ok(found.is_some())
    }

    fn zrange_all(&mut self, key: &[u8]) -> Result<Vec<Bytes>, CommandError> {
        Ok(self
            .zset_mut(key)?
            .map(|z| z.iter().map(|(m, _)| m.clone()).collect())
            .unwrap_or_default())
    }
}
