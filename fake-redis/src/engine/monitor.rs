//! `MONITOR`: the clients that see every command the server runs, one line each.
//!
//! A monitor is a connection in the monitors list, in the order it sent `MONITOR`. Each command
//! that runs is written to every monitor's outbox as Redis's `replicationFeedMonitors` writes it:
//! a status line `<unix seconds>.<micros> [<db> <addr>] "<arg>" ...`, each argument quoted and
//! escaped by `sdscatrepr`'s rules, the same bytes in RESP2 and RESP3. The time is the command's
//! frozen time on the engine's clock (Redis reads the wall clock), so a run on a virtual clock
//! replays its monitor output exactly. The line goes through the outbox like a pub/sub message,
//! so the doors and the fault plan carry it as they carry any push.
//!
//! Which commands are shown, and when, is the command table's business (`cmd/client.rs`):
//! a command refused before it runs is not shown, an administrative one never is, `EVAL` and
//! `FCALL` are shown before the commands their script calls (which are shown with the address
//! `lua`), and a command's `AUTH` arguments read `(redacted)`.
//!
//! The command log is a monitor for a test: the same commands, kept as values in the engine
//! (the last so many) instead of written to a connection, so that a test can read what ran
//! without a connection of its own ([`Engine::log_commands`], [`Engine::logged_commands`]).

use crate::engine::{ClientId, Engine};
use crate::fault::NodeId;
use crate::resp::Frame;
use bytes::Bytes;
use std::collections::VecDeque;

/// One command the command log kept: what `MONITOR` would show.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LoggedCommand {
    /// When it ran (unix ms, the command's frozen time).
    pub at: i64,
    /// The client that sent it; `None` for a command a script called.
    pub client: Option<ClientId>,
    /// The client's node in the fault plan.
    pub node: Option<NodeId>,
    /// The database it ran in.
    pub db: usize,
    /// The command and its arguments (`AUTH` arguments read `(redacted)`).
    pub argv: Vec<Bytes>,
}

/// The last `cap` commands (see the module docs).
#[derive(Debug)]
pub(crate) struct CommandLog {
    cap: usize,
    entries: VecDeque<LoggedCommand>,
}

/// Who ran a command a monitor sees.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Source {
    /// A client's command (in a transaction too), shown with the client's address.
    Client(u64),
    /// A command a script called, shown as `lua`.
    Script,
}

/// The address `CLIENT LIST`, `CLIENT KILL` and `MONITOR` give connection `id`.
pub(crate) fn peer_addr(id: u64) -> String {
    format!("in-process:{id}")
}

impl Engine {
    /// Makes `id` a monitor: false if it already was one (Redis then ignores the command, and
    /// sends no reply).
    pub(crate) fn add_monitor(&mut self, id: u64) -> bool {
        match self.clients.get_mut(&id) {
            Some(c) if !c.monitor => {
                c.monitor = true;
                self.monitors.push(id);
                self.observed = true;
                true
            }
            _ => false,
        }
    }

    /// Takes `id` out of the monitors (`RESET`, a disconnect).
    pub(crate) fn remove_monitor(&mut self, id: u64) {
        if let Some(c) = self.clients.get_mut(&id) {
            c.monitor = false;
        }
        self.monitors.retain(|&m| m != id);
        self.observed = !self.monitors.is_empty() || self.command_log.is_some();
    }

    /// Whether any client monitors, or the command log is on: while neither, no command pays
    /// for the line.
    #[inline]
    pub(crate) fn has_monitors(&self) -> bool {
        self.observed
    }

    /// Keeps the last `cap` commands from now on (0 turns the log off and forgets it): what
    /// `MONITOR` would show, as values ([`Engine::logged_commands`]).
    pub fn log_commands(&mut self, cap: usize) {
        self.command_log = (cap > 0).then(|| {
            Box::new(CommandLog {
                cap,
                entries: VecDeque::new(),
            })
        });
        self.observed = !self.monitors.is_empty() || self.command_log.is_some();
    }

    /// The commands the log kept, oldest first.
    pub fn logged_commands(&self) -> Vec<LoggedCommand> {
        self.command_log
            .as_ref()
            .map(|log| log.entries.iter().cloned().collect())
            .unwrap_or_default()
    }

    /// Writes the line of a command `source` ran in database `db` at `now` (its arguments as the
    /// monitors see them) to every monitor.
    pub(crate) fn feed_monitors(&mut self, source: Source, db: usize, argv: &[Bytes], now: i64) {
        if self.command_log.is_some() {
            let client = match source {
                Source::Client(id) => Some(ClientId(id)),
                Source::Script => None,
            };
            let node = client.and_then(|c| self.node_of(c));
            if let Some(log) = self.command_log.as_mut() {
                if log.entries.len() == log.cap {
                    log.entries.pop_front();
                }
                log.entries.push_back(LoggedCommand {
                    at: now,
                    client,
                    node,
                    db,
                    argv: argv.to_vec(),
                });
            }
        }
        if self.monitors.is_empty() {
            return;
        }
        let line = monitor_line(source, db, argv, now);
        for id in self.monitors.clone() {
            // A monitor line is a reply, not a push: a monitor with replies off gets none.
            if let Some(c) = self.clients.get_mut(&id)
                && !c.reply_mode.drops()
            {
                c.push(now, Frame::Simple(line.clone().into()));
            }
        }
    }
}

/// One monitor line, without the `+` and the line break the encoder adds.
pub(crate) fn monitor_line(source: Source, db: usize, argv: &[Bytes], now: i64) -> String {
    let (seconds, millis) = (now.div_euclid(1000), now.rem_euclid(1000));
    let addr = match source {
        Source::Client(id) => peer_addr(id),
        Source::Script => "lua".to_owned(),
    };
    let mut line = format!("{seconds}.{:06} [{db} {addr}]", millis * 1000);
    for arg in argv {
        line.push(' ');
        quote(arg, &mut line);
    }
    line
}

/// Redis's `sdscatrepr`: the bytes in double quotes, `\\` and `"` escaped, the usual control
/// characters by name, every other byte outside printable ASCII as `\xNN`.
fn quote(arg: &[u8], out: &mut String) {
    out.push('"');
    for &b in arg {
        match b {
            b'\\' => out.push_str("\\\\"),
            b'"' => out.push_str("\\\""),
            b'\n' => out.push_str("\\n"),
            b'\r' => out.push_str("\\r"),
            b'\t' => out.push_str("\\t"),
            7 => out.push_str("\\a"),
            8 => out.push_str("\\b"),
            b' '..=b'~' => out.push(char::from(b)),
            _ => out.push_str(&format!("\\x{b:02x}")),
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_quotes_its_arguments_as_sdscatrepr_does() {
        let argv = [
            Bytes::from_static(b"SET"),
            Bytes::from_static(b"k"),
            Bytes::from_static("v\x01\"\\ \n\t\x07\x08\r é".as_bytes()),
        ];
        assert_eq!(
            monitor_line(Source::Client(7), 3, &argv, 1_796_184_651_619),
            "1796184651.619000 [3 in-process:7] \"SET\" \"k\" \
             \"v\\x01\\\"\\\\ \\n\\t\\a\\b\\r \\xc3\\xa9\""
        );
        assert_eq!(
            monitor_line(Source::Script, 0, &argv[..1], 5),
            "0.005000 [0 lua] \"SET\""
        );
    }
}
