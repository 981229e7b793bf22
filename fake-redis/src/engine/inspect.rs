//! Reading and placing keys without a command: what tests and simulators check the keyspace with.
//!
//! A checker that asks "who holds the lock now, and until when?" must not change the answer by
//! asking: a `GET` through [`Engine::execute`](crate::Engine::execute) expires a key it finds
//! past its deadline, counts as a command, and goes through the fault plan of a front door.
//! These methods read the live keyspace without side effects, and place values that no command
//! of the lock writes (a wrong-typed value on a lock's key) the way a command would place them,
//! so the tests can build any keyspace and see the engine as it is.

use crate::engine::Engine;
use crate::engine::db::Value;
use bytes::Bytes;

impl Engine {
    /// The live value and deadline at `key` in database `db`, without side effects.
    pub fn value(&self, db: usize, key: &[u8]) -> Option<(Value, Option<i64>)> {
        self.peek_value(db, key)
            .map(|(value, deadline)| (value.clone(), deadline))
    }

    /// [`Engine::value`], borrowed: the live value and deadline at `key` in database `db`,
    /// without side effects and without copying the value (a checker that reads a hash after
    /// every call needs its fields, not a copy of them).
    pub fn peek_value(&self, db: usize, key: &[u8]) -> Option<(&Value, Option<i64>)> {
        let now = self.now();
        self.dbs()
            .get(db)?
            .peek(key, now)
            .map(|e| (&e.value, e.deadline()))
    }

    /// Writes `value` at `key` in database `db` with `deadline` (unix ms), replacing what was
    /// there, as a command would (watchers are touched, the journal records it).
    pub fn set_value(&mut self, db: usize, key: &[u8], value: Value, deadline: Option<i64>) {
        let now = self.now();
        let d = self.db_mut(db);
        d.insert(key, value, deadline, now);
        d.touch(key);
    }

    /// `SET key value` in database `db`.
    pub fn set_string(&mut self, db: usize, key: &[u8], value: &[u8]) {
        self.set_value(db, key, Value::Str(Bytes::copy_from_slice(value)), None);
    }

    /// `DEL key` then `RPUSH key items…` in database `db`, without a command.
    pub fn set_list(&mut self, db: usize, key: &[u8], items: &[&[u8]]) {
        self.set_value(db, key, Value::List(items.iter().collect()), None);
    }

    /// Every live key of database `db` with its value and deadline, sorted by key.
    pub fn snapshot(&self, db: usize) -> Vec<(Bytes, Value, Option<i64>)> {
        let now = self.now();
        self.dbs()[db]
            .live_entries(now)
            .into_iter()
            .map(|(k, e)| {
                let d = e.deadline();
                (k, e.value, d)
            })
            .collect()
    }

    /// The number of keys physically present in database `db`, logically expired ones included
    /// (`DBSIZE`).
    pub fn dbsize(&self, db: usize) -> usize {
        self.dbs()[db].len()
    }
}
