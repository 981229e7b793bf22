//! Transactions: `MULTI`/`EXEC`/`DISCARD` and optimistic locking with `WATCH`.
//!
//! Commands are queued after `MULTI` and run back to back, at one frozen time, by `EXEC`. A
//! command that could not be queued (unknown, wrong arity) makes `EXEC` reply `EXECABORT` and run
//! nothing; a command that fails while running only fails itself. A watched key that was written
//! (by anyone, `EXEC`ing client included) or that expired since `WATCH` makes `EXEC` reply a null
//! array and run nothing.

use super::{NOT_QUEUED, Spec};
use crate::engine::{Cx, Multi};
use crate::frame::Frame;
use bytes::Bytes;

pub(crate) static MULTI: Spec = Spec::new("multi", 1, NOT_QUEUED, multi_command);
pub(crate) static EXEC: Spec = Spec::new("exec", 1, NOT_QUEUED, exec_command);
pub(crate) static DISCARD: Spec = Spec::new("discard", 1, NOT_QUEUED, discard_command);
pub(crate) static WATCH: Spec = Spec::new("watch", -2, NOT_QUEUED, watch_command);
pub(crate) static UNWATCH: Spec = Spec::new("unwatch", 1, 0, unwatch_command);

fn multi_command(cx: &mut Cx<'_>, _argv: &[Bytes]) -> Frame {
    let client = cx.client();
    if client.multi.is_some() {
        return Frame::error("ERR MULTI calls can not be nested");
    }
    client.multi = Some(Multi::default());
    Frame::OK
}

fn exec_command(cx: &mut Cx<'_>, _argv: &[Bytes]) -> Frame {
    let id = cx.client;
    let now = cx.now;
    let Some(multi) = cx.client().multi.take() else {
        return Frame::error("ERR EXEC without MULTI");
    };
    if multi.failed {
        cx.engine.unwatch(id);
        return Frame::error("EXECABORT Transaction discarded because of previous errors.");
    }
    let engine = &mut *cx.engine;
    let client = engine.clients.get(&id).expect("connected");
    let touched = client.dirty_cas
        || client
            .watching
            .iter()
            .any(|(db, key)| engine.dbs[*db].watched_key_expired(key, id, now));
    engine.unwatch(id);
    if touched {
        return Frame::NullArray;
    }
    let replies = multi
        .queue
        .iter()
        .map(|argv| engine.run_queued(id, argv, now))
        .collect();
    Frame::Array(replies)
}

fn discard_command(cx: &mut Cx<'_>, _argv: &[Bytes]) -> Frame {
    let id = cx.client;
    if cx.client().multi.take().is_none() {
        return Frame::error("ERR DISCARD without MULTI");
    }
    cx.engine.unwatch(id);
    Frame::OK
}

fn watch_command(cx: &mut Cx<'_>, argv: &[Bytes]) -> Frame {
    let (id, db, now) = (cx.client, cx.db, cx.now);
    if cx.client().multi.is_some() {
        return Frame::error("ERR WATCH inside MULTI is not allowed");
    }
    for key in &argv[1..] {
        let client = cx.client();
        if client.watching.iter().any(|(d, k)| *d == db && k == key) {
            continue;
        }
        client.watching.push((db, key.clone()));
        cx.engine.dbs[db].watch(key, id, now);
        cx.engine.watchers += 1;
    }
    Frame::OK
}

fn unwatch_command(cx: &mut Cx<'_>, _argv: &[Bytes]) -> Frame {
    let id = cx.client;
    cx.engine.unwatch(id);
    Frame::OK
}
