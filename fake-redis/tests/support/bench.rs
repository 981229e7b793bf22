//! An engine on a manual clock, as the simulator drives it, for the tests of the blocking
//! commands (`blocking.rs`, `blocking_streams.rs`): commands that may block, the clock moved by
//! hand, `CLIENT UNBLOCK`, and the text the server commands answer. Also the door those tests
//! block through on tokio's paused clock: two `FakeConnection`s to one engine.

use bytes::Bytes;
use fake_redis::{
    ClientId, Engine, FakeConnection, Frame, ManualClock, NodeId, TokioClock, shared,
};
use std::array;

/// The error of a client whose block `CLIENT UNBLOCK <id> ERROR` ended.
pub const UNBLOCKED: &str = "UNBLOCKED client unblocked via CLIENT UNBLOCK";

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

    /// `other` ends `blocked`'s block with `CLIENT UNBLOCK`, then `reason` if any: one client
    /// unblocked, whose reply is `want`.
    #[track_caller]
    pub fn assert_unblocks(
        &mut self,
        other: ClientId,
        blocked: ClientId,
        reason: Option<&str>,
        want: Frame,
    ) {
        let id = blocked.0.to_string();
        let mut words = vec!["CLIENT", "UNBLOCK", &id];
        words.extend(reason);
        assert_eq!(self.run(other, &words), Frame::Integer(1), "{words:?}");
        assert_eq!(self.engine.take_unblocked_reply(blocked), Some(want));
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

/// Two connections (nodes 1 and 2) to one engine on tokio's clock.
pub fn tokio_connections() -> (FakeConnection, FakeConnection) {
    let engine = shared(Engine::new(TokioClock::new()));
    (
        FakeConnection::new(engine.clone(), NodeId(1)),
        FakeConnection::new(engine, NodeId(2)),
    )
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
