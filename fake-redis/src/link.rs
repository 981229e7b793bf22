//! A client's link to the engine: where the fault plan meets tokio time.
//!
//! Both command front doors ([`FakeBackend`](crate::FakeBackend) and
//! [`FakeConnection`](crate::FakeConnection)) send through a `Link`. It owns the node's engine
//! connection (reconnecting transparently, as a connection manager does, when a restart or failover
//! closed it while idle), asks the plan what happens to each call, and carries that out with tokio
//! sleeps, so that under tokio's paused time a 35-second GC pause costs nothing. The engine lock
//! (a std mutex) is never held across an `.await`.

use crate::engine::{ClientId, Engine};
use crate::fault::{CommandFate, FaultEventKind, NodeId};
use crate::frame::Frame;
use bytes::Bytes;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

/// An engine shared by front doors (a std mutex: commands never wait inside it).
pub type SharedEngine = Arc<Mutex<Engine>>;

/// Wraps an engine for sharing between front doors.
pub fn shared(engine: Engine) -> SharedEngine {
    Arc::new(Mutex::new(engine))
}

/// Locks the engine; a panic while it was held poisons nothing the engine relies on.
pub(crate) fn lock(engine: &SharedEngine) -> MutexGuard<'_, Engine> {
    engine.lock().unwrap_or_else(|e| e.into_inner())
}

/// The response timeout front doors use unless told otherwise (Redisson's default).
pub const DEFAULT_RESPONSE_TIMEOUT: Duration = Duration::from_secs(3);

/// Why a call through a link returned no reply.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum LinkError {
    /// No reply within the response timeout: the call may or may not have been applied.
    TimedOut(String),
    /// The node has crashed: nothing was sent.
    Crashed,
}

struct LinkState {
    client: Option<ClientId>,
    db: usize,
    protocol: u8,
}

pub(crate) struct Link {
    pub engine: SharedEngine,
    pub node: NodeId,
    state: Mutex<LinkState>,
    pub response_timeout: Duration,
}

/// Sleeps until the engine's clock (before jumps) reads `until`, assuming it moves with tokio's
/// clock (a `TokioClock`, or real time).
pub(crate) async fn sleep_until_clock(engine: &SharedEngine, until: i64) {
    let now = lock(engine).clock_now();
    if until > now {
        tokio::time::sleep(Duration::from_millis((until - now) as u64)).await;
    }
}

impl Drop for Link {
    fn drop(&mut self) {
        // The last handle is gone: close the connection, as dropping a real one would.
        if let Some(c) = self.state().client.take() {
            lock(&self.engine).disconnect(c);
        }
    }
}

impl Link {
    pub fn new(engine: SharedEngine, node: NodeId, response_timeout: Duration) -> Link {
        Link {
            engine,
            node,
            state: Mutex::new(LinkState {
                client: None,
                db: 0,
                protocol: 2,
            }),
            response_timeout,
        }
    }

    fn state(&self) -> MutexGuard<'_, LinkState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The database the connection has selected.
    pub fn db(&self) -> usize {
        self.state().db
    }

    /// The protocol the connection speaks.
    pub fn protocol(&self) -> u8 {
        self.state().protocol
    }

    /// The engine connection, opened (or reopened after a restart, with its database and protocol)
    /// if needed.
    fn connection(&self, engine: &mut Engine) -> ClientId {
        let mut state = self.state();
        if let Some(c) = state.client
            && engine.is_connected(c)
        {
            return c;
        }
        let c = engine.connect_as(self.node);
        if state.db != 0 {
            engine.execute(
                c,
                &[
                    Bytes::from_static(b"SELECT"),
                    Bytes::from(state.db.to_string()),
                ],
            );
        }
        if state.protocol != 2 {
            engine.execute(
                c,
                &[
                    Bytes::from_static(b"HELLO"),
                    Bytes::from(state.protocol.to_string()),
                ],
            );
        }
        state.client = Some(c);
        c
    }

    /// Runs `commands` back to back on the engine, now. `on` pins the connection a delayed request
    /// was sent on: if it closed meanwhile, the request is lost (`None`).
    fn apply(&self, commands: &[Vec<Bytes>], on: Option<ClientId>) -> Option<Vec<Frame>> {
        let mut engine = lock(&self.engine);
        // A restart due now closes connections before this request picks one.
        engine.apply_due_server_faults();
        let client = match on {
            Some(c) if !engine.is_connected(c) => return None,
            Some(c) => c,
            None => self.connection(&mut engine),
        };
        let replies = commands
            .iter()
            .map(|argv| engine.execute(client, argv))
            .collect();
        let mut state = self.state();
        state.db = engine.selected_db(client);
        state.protocol = engine.protocol(client);
        Some(replies)
    }

    fn timed_out(&self) -> LinkError {
        LinkError::TimedOut(format!(
            "no reply within the response timeout of {} ms",
            self.response_timeout.as_millis()
        ))
    }

    /// Sends `commands` as one request and waits for their replies, through the fault plan.
    pub async fn call(
        self: &Arc<Self>,
        commands: Vec<Vec<Bytes>>,
    ) -> Result<Vec<Frame>, LinkError> {
        let node = self.node;
        // A paused node sends nothing until its pause ends.
        let mut waited = 0;
        loop {
            let paused = {
                let e = lock(&self.engine);
                e.fault_plan().paused_until(node, e.clock_now())
            };
            let Some(until) = paused else { break };
            if waited == 0 {
                lock(&self.engine).log_fault(Some(node), None, FaultEventKind::PausedUntil(until));
            }
            waited += 1;
            if waited > 64 {
                break; // the clock does not move with tokio's: do not spin forever
            }
            sleep_until_clock(&self.engine, until).await;
        }
        let (seq, fate) = {
            let mut e = lock(&self.engine);
            let now = e.clock_now();
            if e.fault_plan().crash_time(node).is_some_and(|t| t <= now) {
                return Err(LinkError::Crashed);
            }
            let seq = e.next_command_seq(node);
            (seq, e.fault_plan().command_fate(node, seq, now))
        };
        let log = |kind| lock(&self.engine).log_fault(Some(node), Some(seq), kind);
        match fate {
            CommandFate::Deliver => self.apply(&commands, None).ok_or_else(|| self.timed_out()),
            CommandFate::DropRequest | CommandFate::LinkDown { .. } => {
                log(if matches!(fate, CommandFate::DropRequest) {
                    FaultEventKind::RequestDropped
                } else {
                    FaultEventKind::LinkDown
                });
                tokio::time::sleep(self.response_timeout).await;
                Err(self.timed_out())
            }
            CommandFate::DropReply => {
                self.apply(&commands, None);
                log(FaultEventKind::ReplyDropped);
                tokio::time::sleep(self.response_timeout).await;
                Err(self.timed_out())
            }
            CommandFate::DelayReply(ms) => {
                let replies = self.apply(&commands, None);
                log(FaultEventKind::ReplyDelayed(ms));
                let delay = Duration::from_millis(ms);
                if delay >= self.response_timeout {
                    tokio::time::sleep(self.response_timeout).await;
                    return Err(self.timed_out());
                }
                tokio::time::sleep(delay).await;
                replies.ok_or_else(|| self.timed_out())
            }
            CommandFate::DelayRequest(ms) => {
                log(FaultEventKind::RequestDelayed(ms));
                let sent_on = {
                    let mut e = lock(&self.engine);
                    self.connection(&mut e)
                };
                // The request is in flight whatever the caller does: it lands even if the caller
                // gives up (a timeout, a dropped future) before it does.
                let (tx, rx) = tokio::sync::oneshot::channel();
                let link = Arc::clone(self);
                tokio::spawn(async move {
                    tokio::time::sleep(Duration::from_millis(ms)).await;
                    if let Some(replies) = link.apply(&commands, Some(sent_on)) {
                        let _ = tx.send(replies);
                    }
                });
                match tokio::time::timeout(self.response_timeout, rx).await {
                    Ok(Ok(replies)) => Ok(replies),
                    _ => Err(self.timed_out()),
                }
            }
        }
    }
}
