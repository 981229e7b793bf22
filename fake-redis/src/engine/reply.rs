//! Which replies reach a client: `CLIENT REPLY ON|OFF|SKIP`, and the commands that answer
//! nothing at all (a second `MONITOR`, a `SHUTDOWN` that stops the server).
//!
//! The engine still computes every reply; it only says whether the door sends it
//! ([`Engine::reply_is_silenced`]), so both doors drop the same replies. Redis's rules
//! (`prepareClientToWrite`, `resetClient`): while replies are off, or for the one command after
//! `CLIENT REPLY SKIP`, nothing the command answers is written, errors included. What the server
//! *pushes* is written whatever the mode, as Redis marks it `CLIENT_PUSHING`: subscription
//! confirmations (the reply of `SUBSCRIBE` and its kin), pub/sub messages and invalidation
//! messages. A monitor line is a plain reply, and a monitor with replies off gets none.
//!
//! A blocked command keeps the mode it started with until its reply comes: a `SKIP` covers the
//! reply of the `BLPOP` after it, however late.

use crate::engine::{Client, ClientId, Engine};
use crate::resp::Frame;

/// A client's `CLIENT REPLY` mode.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum ReplyMode {
    /// Every reply is sent (the default, and `CLIENT REPLY ON`).
    #[default]
    On,
    /// No reply is sent until `CLIENT REPLY ON` (`CLIENT REPLY OFF`).
    Off,
    /// `CLIENT REPLY SKIP` is running: the next command's reply is skipped.
    SkipNext,
    /// This command's reply is skipped.
    Skip,
}

impl ReplyMode {
    /// Whether a reply of the running command is dropped.
    pub fn drops(self) -> bool {
        matches!(self, ReplyMode::Off | ReplyMode::Skip)
    }

    /// The mode for the next command once this one has its reply.
    fn after_command(self) -> ReplyMode {
        match self {
            ReplyMode::Skip => ReplyMode::On,
            ReplyMode::SkipNext => ReplyMode::Skip,
            mode => mode,
        }
    }
}

impl Engine {
    /// Decides, at the end of `client`'s command, whether its `reply` is sent, and moves a
    /// `SKIP` on. A blocked command decides when its reply comes ([`Engine::unblock`]).
    pub(crate) fn settle_reply(&mut self, client: ClientId, reply: &Frame) {
        let Some(c) = self.clients.get_mut(&client.0) else {
            return;
        };
        if c.is_blocked() {
            return;
        }
        let pushed = matches!(reply, Frame::Push(_));
        c.silenced = std::mem::take(&mut c.no_reply) || (c.reply_mode.drops() && !pushed);
        c.reply_mode = c.reply_mode.after_command();
    }

    /// Whether the reply `client`'s last command (or its block) gave must not be sent: the door
    /// drops it, as Redis never writes it. Asked once per reply.
    pub fn reply_is_silenced(&mut self, client: ClientId) -> bool {
        self.clients
            .get_mut(&client.0)
            .is_some_and(|c| std::mem::take(&mut c.silenced))
    }
}

impl Client {
    /// Decides whether the reply a block ended with is sent, by the mode its command started
    /// with, and moves a `SKIP` on.
    pub(crate) fn settle_unblocked_reply(&mut self) {
        self.silenced = self.reply_mode.drops();
        self.reply_mode = self.reply_mode.after_command();
    }
}
