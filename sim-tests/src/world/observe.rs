//! What the checkers see, and the trace: the world's observations of a run.
//!
//! The server side is read from the server itself after every call that touched a lock, and after
//! every fault that can change a lock without a call (a restart, a failover, a clock jump): each
//! owner's grant opens when the owner first appears in the lock's hash and closes when it is gone,
//! at its deadline if it expired. The client side is read from the machine's lock events: the
//! interval a client believes it holds a lock runs from its grant to the earlier of its
//! `valid_until` and the moment it sends its unlock. The online checkers, (d) and (f), run here at
//! the moment their rule applies. The trace is one line per event and the marks name the moments
//! tests and the examples look for; the messages record each call's journey and each unlock
//! message's, for drawing them; none of these is written by a world built `without_trace`.

use super::read_write::Which;
use super::{EPOCH_MS, World, lock_name};
use crate::checkers;
use crate::history::{Delivery, Mark, Message, Run};
use crate::server::{LockState, SimServer};
use bytes::Bytes;
use lock_core::machine::{Call, CallId, HoldState, LockEvent, RwSide};
use lock_core::{BackendError, MonoTime, Reply};
use std::collections::BTreeSet;

/// A server-side grant being recorded.
pub(super) struct OpenGrant {
    owner: Bytes,
    from: u64,
    deadline: Option<u64>,
}

/// A grant a replica's promotion lost (the new primary lacked it), kept until the run ends to
/// learn whether its owner was told it holds it: if so, it counts as held until the deadline it
/// had (the owner goes on believing it, the data-loss rule); if not (the replica check refused it,
/// or its outcome stayed unknown), it ends at the failover, since nobody relied on it.
#[derive(Clone, Debug)]
pub(super) struct LostGrant {
    lock: u32,
    owner: Bytes,
    from: u64,
    at: u64,
    deadline: u64,
}

fn stamp(ms: u64) -> String {
    format!("[{:>4}.{:03}s]", ms / 1000, ms % 1000)
}

impl<S: SimServer> World<S> {
    pub(super) fn note(&mut self, actor: &str, what: impl FnOnce() -> String) {
        if self.tracing {
            let what = what();
            self.trace
                .push(format!("{} {:<6} {}", stamp(self.now), actor, what));
        }
    }

    pub(super) fn mark(&mut self, actor: &str, what: &str, detail: impl FnOnce() -> String) {
        if !self.tracing {
            return;
        }
        let detail = detail();
        self.note(actor, || format!("{what} {detail}"));
        self.marks.push(Mark {
            at: self.now,
            actor: actor.to_owned(),
            what: what.to_owned(),
            detail,
        });
    }

    /// Starts the journey of a call that `client` sends now.
    pub(super) fn message_sent(&mut self, client: usize, id: CallId, call: &Call, lost: bool) {
        if !self.tracing {
            return;
        }
        self.message_of.insert((client, id), self.messages.len());
        self.messages.push(Message {
            client,
            call: call.clone(),
            sent: self.now,
            request_lost: lost,
            applied: None,
            reply: None,
            reply_lost: false,
            answered: None,
            keys_after: Vec::new(),
        });
    }

    /// Records that the server applied a call now, with its reply and the keys it names.
    pub(super) fn message_applied(
        &mut self,
        client: usize,
        id: CallId,
        result: &Result<Reply, BackendError>,
        reply_lost: bool,
    ) {
        let Some(&i) = self.message_of.get(&(client, id)) else {
            return;
        };
        let now = self.server_clock();
        let keys_after = match &self.messages[i].call {
            Call::Script(s) => s.keys.clone(),
            Call::Command(_) => Vec::new(),
        }
        .into_iter()
        .map(|k| {
            let state = self.server.lock_state(&k, now);
            (k, state)
        })
        .collect();
        let m = &mut self.messages[i];
        m.applied = Some(self.now);
        m.reply = Some(result.clone());
        m.reply_lost = reply_lost;
        m.keys_after = keys_after;
    }

    /// Records that a call's reply reached its client now.
    pub(super) fn message_answered(&mut self, client: usize, id: CallId) {
        if let Some(&i) = self.message_of.get(&(client, id)) {
            self.messages[i].answered = Some(self.now);
        }
    }

    /// Records that an unlock message published at `sent` reached `client` now.
    pub(super) fn delivered(&mut self, client: usize, sent: u64) {
        if self.tracing {
            self.deliveries.push(Delivery {
                client,
                sent,
                arrived: self.now,
            });
        }
    }

    /// Records what a call did to the locks it touched (checkers (a) and (b)), from the server's
    /// reply if it ran.
    pub(super) fn observe_call(&mut self, client: usize, call: &Call, reply: Option<&Reply>) {
        if let (Call::Script(s), Some(Reply::Array(items))) = (call, reply)
            && s.script.name == "acquire_fenced"
            && let [Reply::Int(-1), Reply::Int(token)] = items.as_slice()
        {
            let lock = self.case.clients[client].lock;
            let token = *token as u64;
            // A replayed request returns the token it was granted: not a new grant.
            let replay = self
                .granted_tokens
                .get(&(lock, token))
                .is_some_and(|o| *o == s.args[1]);
            if !replay {
                self.granted_tokens.insert((lock, token), s.args[1].clone());
                let owner = String::from_utf8_lossy(&s.args[1]).into_owned();
                let list = self.history.tokens.entry(lock).or_default();
                list.push((self.now, owner, token));
            }
        }
        let names = match call {
            Call::Script(s) => &s.keys[..],
            Call::Command(argv) => argv.get(1..).unwrap_or_default(),
        };
        // In lock order, each once, as a set would hold them: a call names a few keys.
        let mut touched: Vec<u32> = names
            .iter()
            .filter(|k| self.lock_index_lens & super::len_bit(k) != 0)
            .filter_map(|k| self.lock_index.get(k).copied())
            .collect();
        touched.sort_unstable();
        touched.dedup();
        self.observe(touched);
    }

    /// Brings the server-side grant intervals up to date with every lock's state now.
    pub(super) fn observe_all(&mut self) {
        let locks: BTreeSet<u32> = self.lock_index.values().copied().collect();
        self.observe(locks.into_iter().collect());
    }

    /// `locks` in ascending order, each once.
    fn observe(&mut self, locks: Vec<u32>) {
        let now = self.server_clock();
        for lock in locks {
            let key = self.lock_key(lock);
            let state = self.server.lock_state(&key, now).unwrap_or_default();
            self.observe_lock(lock, state);
            self.observe_queue(lock);
        }
    }

    fn observe_lock(&mut self, lock: u32, state: LockState) {
        let now = self.now;
        let offset = self.server.clock_jump();
        // A promotion loses what is missing as the world reads the locks just after it, and no
        // more: a key a later call of its millisecond deletes was not lost (a restart's or a
        // rollback's millisecond keeps its older, wider rule).
        let promoted_now = self.network.promoting;
        let data_lost_now = promoted_now
            || (self.history.data_loss.last() == Some(&now) && !self.network.promoted_now(now));
        let mut lost = Vec::new();
        let open = self.grants.entry(lock).or_default();
        let deadline = state
            .deadline
            .map(|d| (d - EPOCH_MS - offset + 1).max(0) as u64);
        let mut closed: Vec<(Bytes, u64, u64)> = Vec::new();
        let mut expired = Vec::new();
        open.retain(|g| {
            if state.owners.iter().any(|(o, _)| *o == g.owner) {
                return true;
            }
            // Gone: deleted or expired now, or lost with the server's data, in which case the
            // grant is taken to last until the deadline it had.
            let to = if data_lost_now {
                g.deadline.unwrap_or(now).max(now)
            } else {
                g.deadline.map_or(now, |d| d.min(now))
            };
            if !data_lost_now && g.deadline.is_some_and(|d| d <= now) {
                expired.push((to, String::from_utf8_lossy(&g.owner).into_owned()));
            }
            if promoted_now {
                lost.push(LostGrant {
                    lock,
                    owner: g.owner.clone(),
                    from: g.from,
                    at: now,
                    deadline: to,
                });
            } else {
                closed.push((g.owner.clone(), g.from, to));
            }
            false
        });
        let replicated = self.case.replicas > 0;
        for (owner, _) in &state.owners {
            match open.iter_mut().find(|g| g.owner == *owner) {
                Some(g) => g.deadline = deadline,
                None => {
                    open.push(OpenGrant {
                        owner: owner.clone(),
                        from: now,
                        deadline,
                    });
                    if replicated {
                        self.grant_starts.push((lock, owner.clone(), now));
                    }
                }
            }
        }
        self.lost_grants.extend(lost);
        for (field, from, to) in closed {
            self.record_grant(lock, &field, from, to);
        }
        for (at, owner) in expired {
            self.note("server", || {
                format!("{} of {owner} expired at {}", lock_name(lock), stamp(at))
            });
            if !self.tracing {
                continue;
            }
            self.marks.push(Mark {
                at,
                actor: "server".into(),
                what: "expire".into(),
                detail: format!("{} of {owner}", lock_name(lock)),
            });
        }
    }

    pub(super) fn lock_event(&mut self, client: usize, event: LockEvent) {
        let name = self.name(client);
        let until = |w: &Self, v: MonoTime| w.sim_time(client, v);
        let rw = self.rw_role(client).is_some();
        let hold_id = match &event {
            LockEvent::Acquired { hold, .. }
            | LockEvent::Renewed { hold, .. }
            | LockEvent::ValidUntilChanged { hold, .. }
            | LockEvent::StateChanged { hold, .. }
            | LockEvent::MaxHoldReached { hold, .. } => hold.id,
        };
        let which = self.which(client, hold_id);
        // On a read-write lock, the hold's side follows its name in the marks.
        let side = match self.side_of(client, hold_id) {
            Some(RwSide::Read) if rw => " (read)",
            Some(RwSide::Write) if rw => " (write)",
            _ => "",
        };
        match &event {
            LockEvent::Acquired {
                hold,
                count,
                valid_until,
            } => {
                // A new grant to this owner may be renewed again, whatever happened to an earlier
                // hold of the same owner (on a read-write lock, either of its holds).
                let key = Bytes::copy_from_slice(hold.name.as_bytes());
                let unlocked = &mut self.clients[client].unlocked;
                unlocked.granted(key.clone(), hold.owner.as_bytes().clone());
                if rw {
                    unlocked.granted(key, hold.owner.writer().as_bytes().clone());
                }
                if self.case.replicas > 0
                    && let Some(&lock) = self.lock_index.get(hold.name.as_bytes())
                {
                    let owner = hold.owner.as_bytes().clone();
                    self.confirmed.push((lock, owner, self.now));
                }
                let v = until(self, *valid_until);
                self.mark(&name, "acquire", || {
                    format!("{}{side} count={count} valid_until={}", hold.name, stamp(v))
                });
                self.extend(client, which, v);
            }
            LockEvent::Renewed { hold, valid_until } => {
                let v = until(self, *valid_until);
                let ttl = self.case.watchdog;
                self.mark(&name, "renew", || {
                    format!("{}{side} ttl={ttl} valid_until={}", hold.name, stamp(v))
                });
                self.extend(client, which, v);
            }
            LockEvent::ValidUntilChanged { hold, valid_until } => {
                let v = until(self, *valid_until);
                self.note(&name, || {
                    format!("valid_until {}{side} -> {}", hold.name, stamp(v))
                });
                self.extend(client, which, v);
            }
            LockEvent::StateChanged {
                hold,
                state: HoldState::MayBeLost,
                ..
            } => {
                self.mark(&name, "may-be-lost", || format!("{}{side}", hold.name));
                // The lease may have run out on the server and been granted afresh (to this owner
                // too, by a re-entry): the counts may differ from here on, so (f) stops applying.
                if which != Which::Neither {
                    self.doubt_hold(client);
                }
            }
            LockEvent::StateChanged {
                hold,
                state: HoldState::Lost,
                ..
            } => {
                self.mark(&name, "lost", || format!("{}{side}", hold.name));
                match which {
                    Which::Current => self.close_belief(client),
                    Which::Downgrade => self.close_downgrade(client),
                    Which::Neither => {}
                }
            }
            LockEvent::MaxHoldReached { hold, .. } => {
                self.mark(&name, "max-hold", || format!("{}{side}", hold.name));
            }
            LockEvent::StateChanged {
                hold,
                state: HoldState::Released,
                ..
            } => {
                // The last count was given back: the client no longer believes it holds the lock.
                self.note(&name, || format!("released {}{side}", hold.name));
                match which {
                    Which::Current => {
                        self.close_belief(client);
                        self.close_section(client);
                    }
                    Which::Downgrade => self.close_downgrade(client),
                    Which::Neither => {}
                }
            }
            // Valid again after a confirmed renewal: the doubt about the counts stays.
            LockEvent::StateChanged { .. } => {}
        }
    }

    /// The belief `which` is confirmed until `valid_until` (simulation ms).
    fn extend(&mut self, client: usize, which: Which, valid_until: u64) {
        match which {
            Which::Current => self.extend_belief(client, valid_until),
            Which::Downgrade => self.extend_downgrade(client, valid_until),
            Which::Neither => {}
        }
    }

    /// Marks the current hold, if any, as one whose count the server may see differently: (f) no
    /// longer applies to it.
    pub(super) fn doubt_hold(&mut self, client: usize) {
        if let Some(h) = self.clients[client].holding.as_mut() {
            h.uncertain = true;
        }
    }

    fn extend_belief(&mut self, client: usize, valid_until: u64) {
        let now = self.now;
        let lock = self.case.clients[client].lock;
        let who = self.name(client);
        let Some(h) = self.clients[client].holding.as_mut() else {
            return;
        };
        if now >= h.believed_until {
            // The belief had lapsed: what was believed is one interval, and a new one starts.
            let (side, from, to) = (h.side, h.believed_from, h.believed_until);
            h.believed_from = now;
            h.believed_until = valid_until;
            self.record_belief(lock, &who, side, from, to);
        } else {
            h.believed_until = valid_until;
        }
    }

    pub(super) fn close_belief(&mut self, client: usize) {
        let now = self.now;
        let lock = self.case.clients[client].lock;
        let who = self.name(client);
        if let Some(h) = self.clients[client].holding.as_mut() {
            let (side, from, to) = (h.side, h.believed_from, h.believed_until.min(now));
            h.believed_from = now;
            h.believed_until = now;
            self.record_belief(lock, &who, side, from, to);
        }
    }

    /// Checker (f) for the client's current hold, if it is quiescent now.
    pub(super) fn check_quiescent_counts(&mut self, client: usize) {
        let now = self.now;
        let c = &self.clients[client];
        let Some(h) = c.holding.as_ref() else { return };
        let in_flight = !c.inflight.is_empty() || c.machine.ops_in_progress() > 0;
        if !checkers::quiescent(in_flight, h.uncertain, h.believed_until, now) {
            return;
        }
        let lock = self.case.clients[client].lock;
        let key = self.lock_key(lock);
        let name = std::str::from_utf8(&key).unwrap_or_default();
        let snapshot = match h.side {
            None => c.machine.hold(name, h.owner),
            Some(side) => c.machine.read_write_hold(name, h.owner, side),
        };
        let client_count = snapshot.map_or(0, |s| i64::from(s.count));
        let owner = self.hold_field(client, h.owner_name.clone());
        let server_now = self.server_clock();
        let server_count = self
            .server
            .lock_state(&key, server_now)
            .and_then(|s| s.owners.into_iter().find(|(o, _)| o == owner.as_bytes()))
            .map_or(0, |(_, n)| n);
        let who = &self.case.clients[client].name;
        if let Some(v) = checkers::hold_counts(now, who, name, client_count, server_count) {
            self.history.online.push(v);
        }
    }

    /// Whether the owner of a grant a promotion lost was told it holds it: a machine reported an
    /// acquire of that lock by that owner after the grant began and before its next grant.
    fn was_confirmed(&self, g: &LostGrant) -> bool {
        let next = self
            .grant_starts
            .iter()
            .filter(|(lock, owner, at)| *lock == g.lock && *owner == g.owner && *at > g.from)
            .map(|&(_, _, at)| at)
            .min()
            .unwrap_or(u64::MAX);
        self.confirmed.iter().any(|(lock, owner, at)| {
            *lock == g.lock && *owner == g.owner && g.from <= *at && *at < next
        })
    }

    pub(super) fn finish(mut self) -> Run {
        // Keys that expired after the last call that touched them are seen now.
        self.observe_all();
        for client in 0..self.clients.len() {
            if self.clients[client].holding.is_some() {
                self.close_belief(client);
            }
        }
        let horizon = self.case.horizon;
        let foreign = std::mem::take(&mut self.foreign).finish(horizon);
        for (lock, open) in std::mem::take(&mut self.grants) {
            for g in open {
                let to = g.deadline.unwrap_or(horizon).min(horizon);
                self.record_grant(lock, &g.owner, g.from, to);
            }
        }
        for g in std::mem::take(&mut self.lost_grants) {
            let to = if self.was_confirmed(&g) {
                g.deadline.min(horizon)
            } else {
                g.at
            };
            self.record_grant(g.lock, &g.owner, g.from, to);
        }
        let violations = checkers::check(&self.history);
        self.marks.sort_by_key(|m| m.at);
        let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
        for line in &self.trace {
            for b in line.bytes().chain(std::iter::once(b'\n')) {
                hash ^= u64::from(b);
                hash = hash.wrapping_mul(0x100_0000_01b3);
            }
        }
        let client_ids = self
            .clients
            .iter()
            .zip(&self.case.clients)
            .map(|(c, spec)| (c.machine.client_id().to_owned(), spec.name.clone()))
            .collect();
        Run {
            client_ids,
            trace: self.trace,
            trace_hash: hash,
            events: self.events,
            violations,
            history: self.history,
            marks: self.marks,
            messages: self.messages,
            deliveries: self.deliveries,
            queues: self.queues,
            foreign,
        }
    }
}

/// A call as the marks name it: the script and its lock, or the command.
pub(super) fn short(call: &Call) -> String {
    match call {
        Call::Script(s) => format!(
            "{}({})",
            s.script.name,
            s.keys
                .first()
                .map(|k| String::from_utf8_lossy(k).into_owned())
                .unwrap_or_default()
        ),
        Call::Command(_) => describe(call),
    }
}

/// A call as the trace names it: the script and its first keys, or the command's words.
pub fn describe(call: &Call) -> String {
    match call {
        Call::Script(s) => {
            let keys: Vec<String> = s
                .keys
                .iter()
                .take(3)
                .map(|k| String::from_utf8_lossy(k).into_owned())
                .collect();
            format!("{}({})", s.script.name, keys.join(","))
        }
        Call::Command(argv) => argv
            .iter()
            .map(|a| String::from_utf8_lossy(a).into_owned())
            .collect::<Vec<_>>()
            .join(" "),
    }
}
