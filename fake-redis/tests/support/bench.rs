//! An engine on a manual clock, as the simulator drives it, for the tests of the blocking
//! commands (`blocking.rs`, `blocking_streams.rs`): commands that may block, the clock moved by
//! hand, and the text the server commands answer.

use bytes::Bytes;
use fake_redis::{ClientId, Engine, Frame, ManualClock};
use std::array;

/// An engine on a manual clock, and a way to run one command.
pub struct Bench {
    pub engine: Engine,
    pub clock: ManualClock,
}

impl Bench {
    pub fn new() -> Bench {
        let clock = ManualClock::new(1_700_000_000_000);
        Bench {
            engine: Engine::new(clock.clone()),
            clock,
        }
    }

    pub fn run(&mut self, client: ClientId, words: &[&str]) -> Frame {
        self.engine.execute(client, &argv(words))
    }

    /// `N` clients connected in turn.
    pub fn clients<const N: usize>(&mut self) -> [ClientId; N] {
        array::from_fn(|_| self.engine.connect())
    }

    /// Runs a command that must block.
    #[track_caller]
    pub fn assert_blocks(&mut self, client: ClientId, words: &[&str]) {
        assert_eq!(self.block(client, words), None, "{words:?} blocks");
    }

    /// Runs a command that may block: None while it is blocked.
    pub fn block(&mut self, client: ClientId, words: &[&str]) -> Option<Frame> {
        self.engine.execute_or_block(client, &argv(words))
    }

    pub fn advance(&mut self, ms: i64) {
        self.clock.advance(ms);
        self.engine.catch_up();
    }

    /// The text of a command that answers with text (`INFO`, `CLIENT LIST`).
    pub fn text(&mut self, client: ClientId, words: &[&str]) -> String {
        let Frame::Verbatim { text, .. } = self.run(client, words) else {
            panic!("{words:?} answers with text");
        };
        String::from_utf8_lossy(&text).into_owned()
    }

    /// `INFO`'s `blocked_clients:N` line.
    pub fn blocked_clients(&mut self, client: ClientId) -> String {
        self.text(client, &["INFO", "clients"])
            .lines()
            .find(|l| l.starts_with("blocked_clients:"))
            .unwrap()
            .to_owned()
    }
}

/// A command from its words (which may hold spaces).
pub fn argv(words: &[&str]) -> Vec<Bytes> {
    words
        .iter()
        .map(|w| Bytes::copy_from_slice(w.as_bytes()))
        .collect()
}

pub fn bulk(s: &str) -> Frame {
    Frame::Bulk(Bytes::copy_from_slice(s.as_bytes()))
}
