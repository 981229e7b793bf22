//! The script running in an engine, as front doors see it without the engine's lock, and the
//! two ways to take that lock.
//!
//! A [`ScriptWatch`] is what the script running in the engine is doing, in atomics that a front
//! door reads without the lock. A runaway script holds the engine's lock for as long as it runs,
//! so the TCP server looks at the watch (one atomic load) before it locks
//! ([`lock_unless_busy`]), and while a script runs it answers from the watch alone (`BUSY`,
//! `SCRIPT KILL`, `FUNCTION STATS` of a running function) instead of waiting for the lock on a
//! tokio worker that others need. On the wall clock it also ends a library's load at Redis's load
//! timeout; a load is no script, and never busy to others. The Lua
//! runner writes it; the engine keeps it in its script cache, the same object for the engine's
//! whole life, since the front doors hold it.

use crate::engine::Engine;
use crate::resp::Frame;
use bytes::Bytes;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU8, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::Duration;

/// Locks the engine; a panic while it was held poisons nothing the engine relies on.
pub(crate) fn lock(engine: &Mutex<Engine>) -> MutexGuard<'_, Engine> {
    engine.lock().unwrap_or_else(|e| e.into_inner())
}

/// Locks the engine unless a script is running in it (then `None`: the lock would wait for the
/// script). While no script runs this costs one atomic load more than [`lock`]. While an
/// ordinary command holds the lock, it tries again a few times, looking at the watch in between
/// (a script that starts meanwhile is noticed instead of waited for), then waits on the mutex
/// itself: a long command (or a busy multi-worker runtime) parks the thread instead of
/// spinning it.
pub(crate) fn lock_unless_busy<'a>(
    engine: &'a Mutex<Engine>,
    watch: &ScriptWatch,
) -> Option<MutexGuard<'a, Engine>> {
    for _ in 0..TRIES_BEFORE_WAITING {
        if watch.running() {
            return None;
        }
        match engine.try_lock() {
            Ok(guard) => return Some(guard),
            Err(std::sync::TryLockError::Poisoned(e)) => return Some(e.into_inner()),
            Err(std::sync::TryLockError::WouldBlock) => std::thread::yield_now(),
        }
    }
    if watch.running() {
        return None;
    }
    Some(lock(engine))
}

/// How often [`lock_unless_busy`] finds the lock taken before it waits on the mutex: an ordinary
/// command holds it for microseconds, a few yields.
const TRIES_BEFORE_WAITING: usize = 8;

/// What runs a script: `EVAL` and its kin, or a function (`FCALL`). Redis's `BUSY` texts and
/// which `KILL` may end it differ.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ScriptKind {
    /// `EVAL`, `EVALSHA` and their `_RO` forms: ended by `SCRIPT KILL`.
    Eval,
    /// `FCALL` and `FCALL_RO`: ended by `FUNCTION KILL`.
    Function,
}

impl ScriptKind {
    /// The error Redis replies to other clients while a script of this kind is busy.
    pub fn busy_error(self) -> Frame {
        Frame::error(self.busy_text())
    }

    /// The text of [`busy_error`](Self::busy_error).
    pub fn busy_text(self) -> &'static str {
        match self {
            ScriptKind::Eval => {
                "BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE."
            }
            ScriptKind::Function => {
                "BUSY Redis is busy running a script. You can only call FUNCTION KILL or SHUTDOWN NOSAVE."
            }
        }
    }
}

/// The script running in an engine, as front doors see it without the engine's lock (see the
/// [module docs](self)). The engine's Lua runner writes it; a front door reads it and asks for a
/// kill through it.
pub(crate) struct ScriptWatch {
    /// `IDLE`, or `RUNNING` and maybe `BUSY`, `FUNCTION`, `WROTE`, `KILL`.
    state: AtomicU8,
    /// The wall-clock start of the running script, in ns after `origin` (wall mode only).
    started: AtomicU64,
    origin: std::time::Instant,
    /// The busy threshold in ms on the wall clock; `u64::MAX` under the instruction budget.
    threshold_ms: AtomicU64,
    /// The server is going away: the script ends at once, written or not.
    abort: AtomicBool,
    /// Someone waits for the running script to change (so its end notifies).
    waited: AtomicBool,
    /// Notified when the script passes the threshold and when it ends.
    changed: tokio::sync::Notify,
    /// Called once a script has run long, to move the thread's other work elsewhere (a server on
    /// a tokio runtime hands its worker to another thread).
    detach: OnceLock<Box<dyn Fn() -> bool + Send + Sync>>,
    /// `DEBUG SLEEP` on a clock that moves by itself: the engine's time (unix ms) until which
    /// the server is busy, or `i64::MIN`. Front doors wait it out before they run a request or
    /// write a reply, as a real server's clients wait for its one thread.
    asleep_until: AtomicI64,
    /// The running function, for `FUNCTION STATS` from other clients while it is busy.
    function: Mutex<Option<RunningFunction>>,
    /// While a library loads on the wall clock: when its time is up, in ns after `origin` (0
    /// when none loads).
    load_deadline: AtomicU64,
}

/// What `FUNCTION STATS` tells other clients of a running function: the same all along, since
/// nothing that changes it runs while the function does.
#[derive(Clone, Debug, Default)]
pub(crate) struct RunningFunction {
    /// The function's name.
    pub name: Bytes,
    /// The `FCALL` that runs it, as its client sent it.
    pub command: Vec<Bytes>,
    /// The libraries loaded.
    pub libraries: usize,
    /// The functions they register.
    pub functions: usize,
}

/// How long Redis lets a library's code run while it loads (its `LOAD_TIMEOUT_MS`).
const LOAD_TIMEOUT: Duration = Duration::from_millis(500);

// The bits of `ScriptWatch::state`, one word so that front doors pay one load.
/// A script runs.
const RUNNING: u8 = 1;
/// It is past the busy threshold: other clients get `BUSY`.
const BUSY: u8 = 2;
/// It is a function (`FCALL`), not an `EVAL`.
const FUNCTION: u8 = 4;
/// It has called a write command: `UNKILLABLE`.
const WROTE: u8 = 8;
/// A `KILL` asked it to end.
const KILL: u8 = 16;
/// Its thread no longer holds a tokio worker.
const DETACHED: u8 = 32;

/// What `SCRIPT KILL` or `FUNCTION KILL` did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum KillOutcome {
    /// Nothing is running: `NOTBUSY`.
    NotBusy,
    /// The script has written: `UNKILLABLE`.
    Unkillable,
    /// The running script is of the other kind: its `BUSY` error.
    OtherKind(ScriptKind),
    /// The script ends at its next look at the watch: `OK`.
    Killed,
}

impl KillOutcome {
    /// The reply Redis gives.
    pub fn reply(self) -> Frame {
        match self {
            KillOutcome::NotBusy => Frame::error("NOTBUSY No scripts in execution right now."),
            KillOutcome::Unkillable => Frame::error(
                "UNKILLABLE Sorry the script already executed write commands against the dataset. \
                 You can either wait the script termination or kill the server in a hard way using \
                 the SHUTDOWN NOSAVE command.",
            ),
            KillOutcome::OtherKind(kind) => kind.busy_error(),
            KillOutcome::Killed => Frame::OK,
        }
    }
}

impl Default for ScriptWatch {
    fn default() -> ScriptWatch {
        ScriptWatch {
            state: AtomicU8::new(0),
            started: AtomicU64::new(0),
            origin: std::time::Instant::now(),
            threshold_ms: AtomicU64::new(u64::MAX),
            abort: AtomicBool::new(false),
            waited: AtomicBool::new(false),
            changed: tokio::sync::Notify::new(),
            detach: OnceLock::new(),
            asleep_until: AtomicI64::new(i64::MIN),
            function: Mutex::new(None),
            load_deadline: AtomicU64::new(0),
        }
    }
}

impl ScriptWatch {
    /// `DEBUG SLEEP`: the server is busy until the engine's clock reads `until` (unix ms).
    pub fn sleep_until(&self, until: i64) {
        self.asleep_until.fetch_max(until, Ordering::AcqRel);
    }

    /// The `DEBUG SLEEP` that kept the server busy until `until` is over: forgotten, unless a
    /// later one was asked for meanwhile.
    pub fn sleep_over(&self, until: i64) {
        let _ = self.asleep_until.compare_exchange(
            until,
            i64::MIN,
            Ordering::AcqRel,
            Ordering::Acquire,
        );
    }

    /// The time a `DEBUG SLEEP` keeps the server busy until, if one was asked for (it may
    /// have passed: a front door compares it with the clock).
    pub fn asleep_until(&self) -> Option<i64> {
        let until = self.asleep_until.load(Ordering::Acquire);
        (until != i64::MIN).then_some(until)
    }

    /// Whether a script is running (the one atomic load front doors pay before locking).
    pub fn running(&self) -> bool {
        self.state.load(Ordering::Acquire) != 0
    }

    /// The kind of the script that is busy to other clients, if one is.
    pub fn busy(&self) -> Option<ScriptKind> {
        let state = self.state.load(Ordering::Acquire);
        (state & BUSY != 0).then_some(kind_of(state))
    }

    /// Measures scripts' running time on the wall clock, as Redis: past `threshold` (its
    /// `busy-reply-threshold`) a script is busy to other clients until it ends or is killed, and
    /// no instruction budget ends it. Without this (the default, and always on virtual clocks)
    /// the running time is the instruction budget, so that a run replays, and no script is ever
    /// busy to other clients.
    pub fn measure_on_wall_clock(&self, threshold: Duration) {
        let ms = u64::try_from(threshold.as_millis()).unwrap_or(u64::MAX - 1);
        self.threshold_ms
            .store(ms.min(u64::MAX - 1), Ordering::Relaxed);
    }

    /// Whether scripts run on the wall clock rather than the instruction budget.
    pub fn on_wall_clock(&self) -> bool {
        self.threshold_ms.load(Ordering::Relaxed) != u64::MAX
    }

    /// Sets what a long script calls (see the field) until it returns true; the first call of
    /// this wins.
    pub fn set_detach(&self, detach: Box<dyn Fn() -> bool + Send + Sync>) {
        let _ = self.detach.set(detach);
    }

    /// A script of `kind` starts (on the engine's thread, under its lock).
    pub fn begin(&self, kind: ScriptKind) {
        if self.on_wall_clock() {
            self.started.store(self.elapsed_ns(), Ordering::Relaxed);
        }
        let kind = match kind {
            ScriptKind::Eval => 0,
            ScriptKind::Function => FUNCTION,
        };
        self.state.store(RUNNING | kind, Ordering::Release);
    }

    /// A function starts: [`begin`](Self::begin), and what `FUNCTION STATS` says of it.
    pub fn begin_function(&self, running: RunningFunction) {
        *self.function.lock().unwrap_or_else(|e| e.into_inner()) = Some(running);
        self.begin(ScriptKind::Function);
    }

    /// `FUNCTION STATS` while the running function is busy: its name, its command and how long
    /// it has run (on the wall clock, where alone a function is busy to others).
    pub fn function_stats(&self) -> Frame {
        let running = self
            .function
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
            .unwrap_or_default();
        let ran = self
            .elapsed_ns()
            .saturating_sub(self.started.load(Ordering::Relaxed));
        let script = Frame::Map(vec![
            (bulk("name"), Frame::Bulk(running.name)),
            (
                bulk("command"),
                Frame::Array(running.command.into_iter().map(Frame::Bulk).collect()),
            ),
            (
                bulk("duration_ms"),
                Frame::Integer(i64::try_from(ran / 1_000_000).unwrap_or(i64::MAX)),
            ),
        ]);
        function_stats(script, running.libraries, running.functions)
    }

    /// A library's code starts to run while it loads: on the wall clock, past Redis's load
    /// timeout the hook ends it.
    pub fn begin_load(&self) {
        if self.on_wall_clock() {
            let deadline = self
                .elapsed_ns()
                .saturating_add(LOAD_TIMEOUT.as_nanos() as u64);
            self.load_deadline.store(deadline.max(1), Ordering::Relaxed);
        }
    }

    /// The library's code has run.
    pub fn end_load(&self) {
        self.load_deadline.store(0, Ordering::Relaxed);
    }

    /// The running script ends; whoever waits for that is woken.
    pub fn end(&self) {
        *self.function.lock().unwrap_or_else(|e| e.into_inner()) = None;
        let before = self.state.swap(0, Ordering::SeqCst);
        if before & BUSY != 0 || self.waited.swap(false, Ordering::SeqCst) {
            self.changed.notify_waiters();
        }
    }

    /// The running script has called a write command: it can no longer be killed.
    pub fn wrote(&self) {
        self.state.fetch_or(WROTE, Ordering::AcqRel);
    }

    /// Whether the running script has called a write command (Redis's `SCRIPT_WRITE_DIRTY`).
    pub fn has_written(&self) -> bool {
        self.state.load(Ordering::Acquire) & WROTE != 0
    }

    /// What the running script's hook does now: `true` to end the script (it was killed, or the
    /// server is going away). Under the wall clock it also marks the script busy once it passes
    /// the threshold.
    pub fn check(&self, instructions: u64) -> bool {
        let state = self.state.load(Ordering::Acquire);
        if state & KILL != 0 || self.abort.load(Ordering::Relaxed) {
            return true;
        }
        let load_deadline = self.load_deadline.load(Ordering::Relaxed);
        if load_deadline != 0 {
            // A load is no script: never busy to others, ended by its own timeout.
            return self.elapsed_ns() >= load_deadline;
        }
        // Only a script detaches: the hook also fires outside one (it counts every instruction
        // of the state, a library's load and the engine's own Lua among them), and no `end`
        // would clear the mark of a script that never began.
        if instructions >= DETACH_AFTER
            && state & (RUNNING | DETACHED) == RUNNING
            && let Some(detach) = self.detach.get()
            && detach()
        {
            self.state.fetch_or(DETACHED, Ordering::AcqRel);
        }
        let threshold = self.threshold_ms.load(Ordering::Relaxed);
        if state & (BUSY | RUNNING) == RUNNING && threshold != u64::MAX {
            let ran = self
                .elapsed_ns()
                .saturating_sub(self.started.load(Ordering::Relaxed));
            if ran / 1_000_000 >= threshold {
                self.state.fetch_or(BUSY, Ordering::AcqRel);
                self.changed.notify_waiters();
            }
        }
        false
    }

    /// `SCRIPT KILL` (`kind` Eval) or `FUNCTION KILL` (Function) from another client, as
    /// Redis checks them: nothing running, written, the other kind, then killed.
    pub fn kill(&self, kind: ScriptKind) -> KillOutcome {
        let state = self.state.load(Ordering::Acquire);
        if state & RUNNING == 0 {
            return KillOutcome::NotBusy;
        }
        if state & WROTE != 0 {
            return KillOutcome::Unkillable;
        }
        let running = kind_of(state);
        if running != kind {
            return KillOutcome::OtherKind(running);
        }
        match self
            .state
            .compare_exchange(state, state | KILL, Ordering::AcqRel, Ordering::Acquire)
        {
            Ok(_) => KillOutcome::Killed,
            // It ended, wrote or passed the threshold meanwhile: judge again.
            Err(_) => self.kill(kind),
        }
    }

    /// The server is going away (`SHUTDOWN NOSAVE`): the running script, if any, ends at its next
    /// look at the watch, written or not, and so does any later one.
    pub fn abort(&self) {
        self.abort.store(true, Ordering::Relaxed);
    }

    /// Resolves once the state differs from what `running` and `busy` said (the script passed
    /// the threshold or ended); at once if it already does.
    pub async fn changed(&self, seen_busy: bool) {
        let notified = self.changed.notified();
        tokio::pin!(notified);
        notified.as_mut().enable();
        self.waited.store(true, Ordering::SeqCst);
        let state = self.state.load(Ordering::SeqCst);
        if state == 0 || (state & BUSY != 0) != seen_busy {
            return;
        }
        notified.await;
    }

    fn elapsed_ns(&self) -> u64 {
        u64::try_from(self.origin.elapsed().as_nanos()).unwrap_or(u64::MAX)
    }
}

impl Engine {
    /// The watch on the scripts this engine runs (without the `lua` feature none runs, and the
    /// watch stays idle).
    pub(crate) fn script_watch(&mut self) -> Arc<ScriptWatch> {
        self.scripts().watch()
    }
}

/// Lua instructions after which a script counts as long and detaches (a few milliseconds).
const DETACH_AFTER: u64 = 1_000_000;

/// `FUNCTION STATS`'s reply: the running script (nil, or its map) and the Lua engine's counts.
pub(crate) fn function_stats(running: Frame, libraries: usize, functions: usize) -> Frame {
    let count = |n: usize| Frame::Integer(i64::try_from(n).unwrap_or(i64::MAX));
    let counts = Frame::Map(vec![
        (bulk("libraries_count"), count(libraries)),
        (bulk("functions_count"), count(functions)),
    ]);
    Frame::Map(vec![
        (bulk("running_script"), running),
        (bulk("engines"), Frame::Map(vec![(bulk("LUA"), counts)])),
    ])
}

fn bulk(s: &'static str) -> Frame {
    Frame::Bulk(Bytes::from_static(s.as_bytes()))
}

fn kind_of(state: u8) -> ScriptKind {
    if state & FUNCTION != 0 {
        ScriptKind::Function
    } else {
        ScriptKind::Eval
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kills_are_judged_in_redis_s_order() {
        let watch = ScriptWatch::default();
        assert_eq!(watch.kill(ScriptKind::Eval), KillOutcome::NotBusy);
        watch.begin(ScriptKind::Function);
        // The other kind's KILL gets the running kind's BUSY text.
        assert_eq!(
            watch.kill(ScriptKind::Eval),
            KillOutcome::OtherKind(ScriptKind::Function)
        );
        assert_eq!(
            KillOutcome::OtherKind(ScriptKind::Function).reply(),
            Frame::error(
                "BUSY Redis is busy running a script. You can only call FUNCTION KILL or SHUTDOWN NOSAVE."
            )
        );
        assert!(!watch.check(0));
        assert_eq!(watch.kill(ScriptKind::Function), KillOutcome::Killed);
        assert!(watch.check(0), "the hook ends a killed script");
        watch.end();
        assert!(!watch.running());
        // A script that wrote cannot be killed, whichever KILL asks first.
        watch.begin(ScriptKind::Eval);
        watch.wrote();
        assert_eq!(watch.kill(ScriptKind::Function), KillOutcome::Unkillable);
        assert_eq!(watch.kill(ScriptKind::Eval), KillOutcome::Unkillable);
        assert!(!watch.check(0));
        watch.abort();
        assert!(watch.check(0), "a shutdown ends even a script that wrote");
        watch.end();
    }

    #[test]
    fn only_the_wall_clock_makes_a_script_busy() {
        let watch = ScriptWatch::default();
        watch.begin(ScriptKind::Eval);
        assert!(!watch.check(u64::from(u32::MAX)));
        assert_eq!(watch.busy(), None, "the budget never makes a script busy");
        watch.end();
        watch.measure_on_wall_clock(Duration::ZERO);
        watch.begin(ScriptKind::Eval);
        assert!(!watch.check(0));
        assert_eq!(watch.busy(), Some(ScriptKind::Eval));
        watch.end();
        assert_eq!(watch.busy(), None);
    }

    /// The hook fires wherever the state's instruction count takes it, inside no script too (a
    /// library's load starts far into the budget): the watch stays idle there. Had it detached,
    /// every front door would have waited for ever for the end of a script that never began.
    #[test]
    fn only_a_script_detaches() {
        let watch = ScriptWatch::default();
        let detached = std::sync::Arc::new(AtomicBool::new(false));
        let seen = std::sync::Arc::clone(&detached);
        watch.set_detach(Box::new(move || {
            seen.store(true, Ordering::Relaxed);
            true
        }));
        assert!(!watch.check(DETACH_AFTER * 100));
        watch.begin_load();
        assert!(!watch.check(DETACH_AFTER * 100));
        watch.end_load();
        assert!(!detached.load(Ordering::Relaxed));
        assert!(!watch.running());
        watch.begin(ScriptKind::Eval);
        assert!(!watch.check(DETACH_AFTER));
        assert!(detached.load(Ordering::Relaxed), "a long script detaches");
        watch.end();
        assert!(!watch.running());
    }
}
