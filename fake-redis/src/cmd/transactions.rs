//! Transactions: `MULTI`/`EXEC`/`DISCARD` and optimistic locking with `WATCH`.
//!
//! Commands are queued after `MULTI` and run back to back, at one frozen time, by `EXEC`. A
//! command that could not be queued (unknown, wrong arity) makes `EXEC` reply `EXECABORT` and run
//! nothing; a command that fails while running only fails itself. A watched key that was written
//! (by anyone, `EXEC`ing client included) or that expired since `WATCH` makes `EXEC` reply a null
//! array and run nothing.

use super::{Args, CmdResult, Cx, NOT_QUEUED, Spec, dispatch};
use crate::engine::Multi;
use crate::resp::Frame;

pub(crate) static MULTI: Spec = Spec::new("multi", 1, NOT_QUEUED, multi_command);
pub(crate) static EXEC: Spec =
    Spec::new("exec", 1, NOT_QUEUED, exec_command).with_reads(super::ReadRule::Never);
pub(crate) static DISCARD: Spec = Spec::new("discard", 1, NOT_QUEUED, discard_command);
pub(crate) static WATCH: Spec =
    Spec::new("watch", -2, NOT_QUEUED, watch_command).with_reads(super::ReadRule::Never);
pub(crate) static UNWATCH: Spec = Spec::new("unwatch", 1, 0, unwatch_command);

fn multi_command(cx: &mut Cx<'_>, _args: &mut Args<'_>) -> CmdResult {
    let client = cx.client();
    if client.multi.is_some() {
        return Err(Frame::error("ERR MULTI calls can not be nested"));
    }
    client.multi = Some(Multi::default());
    Ok(Frame::OK)
}

fn exec_command(cx: &mut Cx<'_>, _args: &mut Args<'_>) -> CmdResult {
    let Some(multi) = cx.client().multi.take() else {
        return Err(Frame::error("ERR EXEC without MULTI"));
    };
    if multi.failed {
        cx.unwatch();
        return Err(Frame::error(
            "EXECABORT Transaction discarded because of previous errors.",
        ));
    }
    let touched = cx.watch_broken();
    cx.unwatch();
    if touched {
        return Ok(Frame::NullArray);
    }
    Ok(Frame::Array(dispatch::run_queued(cx, &multi.queue)))
}

fn discard_command(cx: &mut Cx<'_>, _args: &mut Args<'_>) -> CmdResult {
    if cx.client().multi.take().is_none() {
        return Err(Frame::error("ERR DISCARD without MULTI"));
    }
    cx.unwatch();
    Ok(Frame::OK)
}

fn watch_command(cx: &mut Cx<'_>, args: &mut Args<'_>) -> CmdResult {
    if cx.client().multi.is_some() {
        return Err(Frame::error("ERR WATCH inside MULTI is not allowed"));
    }
    for key in args {
        cx.watch(key);
    }
    Ok(Frame::OK)
}

fn unwatch_command(cx: &mut Cx<'_>, _args: &mut Args<'_>) -> CmdResult {
    cx.unwatch();
    Ok(Frame::OK)
}
