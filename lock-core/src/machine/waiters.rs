//! Unlock-channel subscriptions, and whom an unlock message wakes.
//!
//! One subscription per channel per client, made when the first waiter needs it and dropped with
//! the last. An unlock message (`0`) wakes one local waiter, as Redisson's semaphore does; the
//! read-write lock's write release publishes `1`, which wakes every waiter. If none is
//! asleep right now (all mid-attempt), the wake is kept as a permit for the next one to sleep. A
//! waiter that was woken and then stopped waiting passes its wake on. A lost subscription may have
//! missed messages, so when it is restored every waiter retries at once.

use super::{BackendError, LockMachine, Output, PubSubEvent};
use crate::script::rw::write_release::READ_UNLOCK_MESSAGE;
use bytes::Bytes;
use std::collections::VecDeque;

#[derive(Debug)]
pub(crate) struct Channel {
    state: SubState,
    /// Waiting acquires, in arrival order.
    waiters: VecDeque<u64>,
    /// Unlock messages that found no sleeping waiter.
    permits: usize,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum SubState {
    Subscribing,
    Active,
    /// The subscribe call failed; waiters fall back to timed rounds until a new waiter retries it.
    Failed,
}

impl LockMachine {
    /// Adds `op` as a waiter on `channel`, subscribing if needed. Returns whether it may try
    /// again right away (the subscription is in place, or could not be made and rounds will do).
    pub(crate) fn join_waiters(&mut self, op: u64, channel: Bytes) -> bool {
        let entry = self.channels.entry(channel.clone()).or_insert(Channel {
            state: SubState::Failed,
            waiters: VecDeque::new(),
            permits: 0,
        });
        entry.waiters.push_back(op);
        match entry.state {
            SubState::Active => true,
            SubState::Subscribing => false,
            SubState::Failed => {
                entry.state = SubState::Subscribing;
                self.push(Output::Subscribe { channel });
                false
            }
        }
    }

    /// Removes `op` from the waiters of `channel`; passes a wake it had on to the next waiter,
    /// and unsubscribes when it was the last.
    pub(crate) fn leave_waiters(&mut self, op: u64, channel: &Bytes, pass_wake: bool) {
        let Some(entry) = self.channels.get_mut(channel) else {
            return;
        };
        entry.waiters.retain(|w| *w != op);
        entry.permits = entry.permits.min(entry.waiters.len());
        if entry.waiters.is_empty() {
            let state = entry.state;
            self.channels.remove(channel);
            if state != SubState::Failed {
                self.push(Output::Unsubscribe {
                    channel: channel.clone(),
                });
            }
        } else if pass_wake {
            self.wake_one(channel);
        }
    }

    /// Whether a wake is waiting for `op` on its channel (taken if so).
    pub(crate) fn take_permit(&mut self, op: u64) -> bool {
        for entry in self.channels.values_mut() {
            if entry.permits > 0 && entry.waiters.contains(&op) {
                entry.permits -= 1;
                return true;
            }
        }
        false
    }

    fn wake_one(&mut self, channel: &Bytes) {
        let Some(entry) = self.channels.get(channel) else {
            return;
        };
        let sleeping = entry
            .waiters
            .iter()
            .copied()
            .find(|op| self.is_sleeping(*op));
        match sleeping {
            Some(op) => {
                self.wake_acquire(op, true);
            }
            None => {
                if let Some(entry) = self.channels.get_mut(channel) {
                    entry.permits = (entry.permits + 1).min(entry.waiters.len());
                }
            }
        }
    }

    /// Wakes every waiter on `channel`; one mid-attempt retries as soon as its attempt comes back
    /// held.
    fn wake_all(&mut self, channel: &Bytes) {
        let Some(entry) = self.channels.get(channel) else {
            return;
        };
        let waiting: Vec<u64> = entry.waiters.iter().copied().collect();
        for op in waiting {
            if !self.wake_acquire(op, false) {
                self.set_wake_pending(op);
            }
        }
    }

    pub(crate) fn on_subscribed(&mut self, channel: Bytes, result: Result<(), BackendError>) {
        let Some(entry) = self.channels.get_mut(&channel) else {
            return;
        };
        if entry.state != SubState::Subscribing {
            return;
        }
        match &result {
            Ok(()) => entry.state = SubState::Active,
            Err(err) => {
                tracing::warn!(channel = %String::from_utf8_lossy(&channel), error = %err,
                    "cannot subscribe to the unlock channel; waiters poll every wait round");
                entry.state = SubState::Failed;
            }
        }
        // The retry after subscribing closes the window in which a release was missed.
        let waiting: Vec<u64> = entry.waiters.iter().copied().collect();
        for op in waiting {
            if self.is_awaiting_subscription(op) {
                self.wake_acquire(op, false);
            }
        }
    }

    pub(crate) fn on_pubsub(&mut self, event: PubSubEvent) {
        match event {
            PubSubEvent::Message { channel, payload } if &payload[..] == READ_UNLOCK_MESSAGE => {
                self.wake_all(&channel)
            }
            PubSubEvent::Message { channel, .. } => self.wake_one(&channel),
            PubSubEvent::SubscriptionLost => {
                tracing::debug!("unlock subscriptions lost; waiters rely on their rounds");
                if self.broken != Some(super::BrokenRule::IgnoreDataLoss) {
                    self.doubt_every_hold();
                }
            }
            PubSubEvent::SubscriptionRestored => {
                if self.broken != Some(super::BrokenRule::IgnoreDataLoss) {
                    self.renew_now();
                }
                // Messages may have been missed meanwhile: every waiter retries now.
                let waiting: Vec<u64> = self
                    .channels
                    .values()
                    .flat_map(|c| c.waiters.iter().copied())
                    .collect();
                for op in waiting {
                    if !self.wake_acquire(op, false) {
                        self.set_wake_pending(op);
                    }
                }
            }
        }
    }
}
