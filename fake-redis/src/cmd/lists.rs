//! List commands: `LPUSH`/`RPUSH`, `LLEN`, `LRANGE`.
//!
//! The lock never stores a list. These few exist so that a test can put a list where a lock script
//! expects a hash or a string (and see Redis's `WRONGTYPE` with the script's suffix), and read it
//! back: the differential test of the lock's scripts does exactly that, through the same client
//! code, against real Redis and against the fake. As in Redis, a push keeps the key's TTL, a push
//! to a missing key creates it without one, and `LRANGE` parses its indexes before it looks at
//! the key.

use super::{Spec, WRITE, WRONGTYPE, int, is};
use crate::db::Value;
use crate::engine::Cx;
use crate::frame::Frame;
use bytes::Bytes;
use std::collections::VecDeque;

pub(crate) static LPUSH: Spec = Spec::new("lpush", -3, WRITE, push_command);
pub(crate) static RPUSH: Spec = Spec::new("rpush", -3, WRITE, push_command);
pub(crate) static LLEN: Spec = Spec::new("llen", 2, 0, llen_command);
pub(crate) static LRANGE: Spec = Spec::new("lrange", 4, 0, lrange_command);

/// The list at `key` (None when missing), WRONGTYPE for another type.
fn read<'a>(cx: &'a mut Cx<'_>, key: &[u8]) -> Result<Option<&'a VecDeque<Bytes>>, Frame> {
    match cx.lookup(key) {
        None => Ok(None),
        Some(e) => match &e.value {
            Value::List(list) => Ok(Some(list)),
            _ => Err(WRONGTYPE),
        },
    }
}

/// `LPUSH`/`RPUSH key element…`: the list's new length. `LPUSH a b` leaves `b a`, as in Redis.
fn push_command(cx: &mut Cx<'_>, argv: &[Bytes]) -> Frame {
    let left = is(&argv[0], "lpush");
    let key = &argv[1];
    let exists = match read(cx, key) {
        Ok(list) => list.is_some(),
        Err(e) => return e,
    };
    let now = cx.now;
    let db = cx.db();
    if !exists {
        db.insert(key.clone(), Value::List(VecDeque::new()), None, now);
    }
    let len = match db.write(key, now).map(|e| &mut e.value) {
        Some(Value::List(list)) => {
            for element in &argv[2..] {
                if left {
                    list.push_front(element.clone());
                } else {
                    list.push_back(element.clone());
                }
            }
            list.len()
        }
        _ => return WRONGTYPE,
    };
    db.touch(key);
    Frame::Integer(len as i64)
}

fn llen_command(cx: &mut Cx<'_>, argv: &[Bytes]) -> Frame {
    match read(cx, &argv[1]) {
        Ok(list) => Frame::Integer(list.map_or(0, |l| l.len() as i64)),
        Err(e) => e,
    }
}

/// `LRANGE key start stop`: inclusive, negative indexes count from the end, out-of-range ones are
/// clamped (Redis's `addListRangeReply`).
fn lrange_command(cx: &mut Cx<'_>, argv: &[Bytes]) -> Frame {
    let (start, stop) = match (int(&argv[2]), int(&argv[3])) {
        (Ok(start), Ok(stop)) => (start, stop),
        (Err(e), _) | (_, Err(e)) => return e,
    };
    let list = match read(cx, &argv[1]) {
        Ok(Some(list)) => list,
        Ok(None) => return Frame::Array(Vec::new()),
        Err(e) => return e,
    };
    let len = list.len() as i64;
    let start = if start < 0 {
        (start + len).max(0)
    } else {
        start
    };
    let stop = if stop < 0 {
        stop + len
    } else {
        stop.min(len - 1)
    };
    if start > stop || start >= len {
        return Frame::Array(Vec::new());
    }
    Frame::Array(
        list.range(start as usize..=stop as usize)
            .map(|e| Frame::Bulk(e.clone()))
            .collect(),
    )
}
