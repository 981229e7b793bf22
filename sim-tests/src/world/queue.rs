//! The world's events to come, in (time, sequence number) order: two events of one millisecond
//! keep the order they were scheduled in.
//!
//! Nearly every event falls due within a few seconds of the present, and time moves a
//! millisecond at a time, so most events wait on a wheel: one bucket per millisecond of a window
//! that starts at the earliest time an event on it can have. An event joins its millisecond's
//! bucket at the back; since sequence numbers only grow, a bucket is in sequence order as it
//! stands, and the next event is the front of the first bucket that holds one. An event due past
//! the window (a watchdog pass, a far timer) waits in a binary heap instead, and the next event is
//! whichever of the two fronts comes first, so the order is exactly the heap's alone would be.
//! A heap for everything cost a sift through a few hundred entries at every push and pop.
//!
//! The events themselves, some of which carry a whole call or reply, wait in slots and move once
//! in and once out; the wheel and the heap hold only their numbers.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

/// Milliseconds the wheel spans: longer than the response timeout and a client's work, so only
/// the rare far event goes to the heap.
const WHEEL_MS: u64 = 8_192;

/// An event's place: (time, sequence number, slot).
type Entry = (u64, u64, u32);

pub(super) struct Queue<T> {
    /// Bucket `t % WHEEL_MS` holds the events of time `t`, for `t` in
    /// `cursor..cursor + WHEEL_MS`, in sequence order.
    wheel: Vec<VecDeque<Entry>>,
    /// How many events the wheel holds.
    on_wheel: usize,
    /// No event on the wheel is earlier; it only moves forward.
    cursor: u64,
    /// The events outside the wheel's window.
    far: BinaryHeap<Reverse<Entry>>,
    slots: Vec<Option<T>>,
    /// The slots whose events were taken.
    free: Vec<u32>,
}

impl<T> Default for Queue<T> {
    fn default() -> Self {
        Queue {
            wheel: (0..WHEEL_MS).map(|_| VecDeque::new()).collect(),
            on_wheel: 0,
            cursor: 0,
            far: BinaryHeap::new(),
            slots: Vec::new(),
            free: Vec::new(),
        }
    }
}

impl<T> Queue<T> {
    /// Adds `ev` at time `at` with sequence number `seq`, which must be greater than every
    /// sequence number given before.
    pub(super) fn push(&mut self, at: u64, seq: u64, ev: T) {
        let slot = match self.free.pop() {
            Some(slot) => {
                self.slots[slot as usize] = Some(ev);
                slot
            }
            None => {
                self.slots.push(Some(ev));
                u32::try_from(self.slots.len() - 1).expect("fewer than 2^32 events waiting")
            }
        };
        if at >= self.cursor && at - self.cursor < WHEEL_MS {
            self.wheel[(at % WHEEL_MS) as usize].push_back((at, seq, slot));
            self.on_wheel += 1;
        } else {
            self.far.push(Reverse((at, seq, slot)));
        }
    }

    /// The next event, with its time.
    pub(super) fn pop(&mut self) -> Option<(u64, T)> {
        let near = if self.on_wheel > 0 {
            while self.wheel[(self.cursor % WHEEL_MS) as usize].is_empty() {
                self.cursor += 1;
            }
            self.wheel[(self.cursor % WHEEL_MS) as usize]
                .front()
                .copied()
        } else {
            None
        };
        let far = self.far.peek().map(|Reverse(entry)| *entry);
        let (at, _, slot) = match (near, far) {
            (Some(near), Some(far)) if far < near => self.far.pop()?.0,
            (Some(_), _) => {
                self.on_wheel -= 1;
                self.wheel[(self.cursor % WHEEL_MS) as usize].pop_front()?
            }
            (None, Some(_)) => self.far.pop()?.0,
            (None, None) => return None,
        };
        // Nothing later is scheduled before the present: the window may start here.
        if self.on_wheel == 0 {
            self.cursor = self.cursor.max(at);
        }
        let ev = self.slots[slot as usize]
            .take()
            .expect("a queued slot holds its event");
        self.free.push(slot);
        Some((at, ev))
    }
}

#[cfg(test)]
mod tests {
    use super::{Queue, WHEEL_MS};
    use std::cmp::Reverse;
    use std::collections::BinaryHeap;

    #[test]
    fn events_come_out_in_time_then_sequence_order_as_a_heap_gives_them() {
        let mut queue = Queue::default();
        let mut heap = BinaryHeap::new();
        let (mut now, mut seq) = (0u64, 0u64);
        let mut x: u64 = 11;
        let mut popped = 0;
        for _ in 0..20_000 {
            x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            // Mostly near, some at the present, some far past the wheel's window.
            let after = match (x >> 40) % 10 {
                0 => 0,
                1 => WHEEL_MS + (x >> 20) % (3 * WHEEL_MS),
                _ => (x >> 24) % 50,
            };
            seq += 1;
            queue.push(now + after, seq, seq);
            heap.push(Reverse((now + after, seq)));
            if !(x >> 33).is_multiple_of(3) {
                let ours = queue.pop();
                let theirs = heap.pop().map(|Reverse((at, seq))| (at, seq));
                assert_eq!(ours, theirs);
                now = ours.map_or(now, |(at, _)| at);
                popped += 1;
            }
        }
        while let Some(Reverse((at, seq))) = heap.pop() {
            assert_eq!(queue.pop(), Some((at, seq)));
            popped += 1;
        }
        assert_eq!(queue.pop(), None);
        assert_eq!(popped, 20_000);
    }
}
