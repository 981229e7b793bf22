//! The `FAKE.*` admin commands: what a test in any language needs to drive the fake over the
//! wire.
//!
//! In-process tests hold the engine and its clock; a test talking RESP has only its connection.
//! These commands give it the same handles: read the clock (`FAKE.TIME`), move the virtual clock
//! so leases run out without waiting (`FAKE.ADVANCE`), inject every fault of the engine's plan
//! (`FAKE.FAULT`), read what the faults did (`FAKE.EVENTS`), and say which client process a
//! connection belongs to, since faults are aimed at nodes (`FAKE.NODE`); `FAKE.HELP` lists them.
//! They are served by the server, not the engine: they never go through the fault plan, and need
//! authentication like any other command.
//!
//! Inside `MULTI` they queue like any command (a client's pipeline is often a transaction) and run
//! in order at `EXEC`, nothing else running between them. A transaction runs at one frozen time,
//! so its engine commands all see the time `EXEC` started, whatever a `FAKE.ADVANCE` in it does;
//! that `FAKE.ADVANCE` moves the clock in one step, without stopping at the times due on the way
//! (nothing else may run inside a transaction): the expiry, the scheduled faults and the waiting
//! connections that fell due catch up when the transaction is over, at the new time. A server
//! fault a queued `FAKE.FAULT` makes due now (a restart, a crash) also happens then, after the
//! reply. `FAKE.AUTH` is never queued: it runs at once.
//!
//! They are also a weapon: `FAKE.FAULT DROP-REPLY * CHANCE 1` silences every client, `FAKE.FAULT
//! RESTART` wipes the data, `FAKE.ADVANCE` expires every lease. So they have a protection of their
//! own, apart from `requirepass` (which every application client knows): with an admin password
//! (`--admin-password`, [`ServerConfig::admin_password`](super::ServerConfig)) a connection must
//! send `FAKE.AUTH <password>` before any other `FAKE.*` command, and gets `NOPERM` until it
//! does. Without one they are open to every client, but only while the server listens on a
//! loopback address; bound to any other address, they are refused until a password is set.
//!
//! Every time here is unix milliseconds on the server's clock *before* clock jumps, the time fault
//! plans are written in (`TIME` shows the server's time, jumps included).
//!
//! ```text
//! FAKE.AUTH <admin-password>                 allow this connection the other FAKE.* commands
//! FAKE.HELP                                  these lines
//! FAKE.TIME                                  the clock, unix ms
//! FAKE.ADVANCE <ms>                          move the virtual clock forward, stopping at every due
//!                                            time on the way; reply the new time
//! FAKE.NODE [<node>]                         this connection's node (default: its CLIENT ID)
//! FAKE.EVENTS                                the fault log: [at, node|nil, seq|nil, what]
//! FAKE.FAULT CLEAR                           forget every fault not yet fired
//! FAKE.FAULT DROP-REQUEST  <node|*> [<which>]        never applied; the connection closes
//! FAKE.FAULT DROP-REPLY    <node|*> [<which>]        applied; the connection closes unanswered
//! FAKE.FAULT DELAY-REQUEST <node|*> <ms> [<which>]   applied <ms> later
//! FAKE.FAULT DELAY-REPLY   <node|*> <ms> [<which>]   applied now, answered <ms> later
//! FAKE.FAULT DROP-DELIVERY <node|*> [<which>]        pub/sub messages to the node lost
//! FAKE.FAULT LINK-DOWN       <node> <ms> [<when>]    requests and messages lost (connection closed)
//! FAKE.FAULT SUBSCRIBER-DOWN <node> <ms> [<when>]    messages lost, subscribed connections closed
//! FAKE.FAULT PAUSE           <node> <ms> [<when>]    a GC pause: requests and messages wait it out
//! FAKE.FAULT CRASH   <node> [<when>]                 the node's connections close
//! FAKE.FAULT RESTART [<when>]                        all connections close; data, scripts lost
//! FAKE.FAULT FAILOVER <lag-ms> [<when>]              a restart losing the last <lag-ms> of writes
//! FAKE.FAULT CLOCK-JUMP <delta-ms> [<when>]          the server's time jumps (back when negative)
//! FAKE.FAULT CLIENT-PAUSE <ms> [WRITE|ALL] [<when>]  the server holds commands, as CLIENT PAUSE
//! FAKE.FAULT REPLICA-STALL <replica> <ms> [<when>]   the primary's stream stops reaching a replica
//! FAKE.FAULT SLOT-MIGRATION <slot> <to-shard> <ms> [<when>]
//!                                            a cluster's slot moves, its keys spread over <ms>
//! FAKE.FAULT SHARD-FAILOVER <shard> <replica> [<when>]
//!                                            a cluster's shard promotes its replica
//!
//! <which> = NEXT <count> | SEQS <from> <until> | DURING <from> <until> | CHANCE <p>
//!           (NEXT on * is the next <count> commands of any node, counted together)
//!           (default NEXT 1, which needs a node)
//! <when>  = AT <unix-ms> | IN <ms>   (default now)
//! ```
//!
//! Every fault prints as these words ([`Fault`]'s `Display`, times written `AT <unix-ms>`), and
//! [`parse_fault`] reads them back to the same fault. The two cluster faults act on a cluster
//! node (`--cluster`): whichever node takes them schedules them in the cluster's shared map
//! (`engine/cluster.rs`); a node of no cluster keeps them in its plan and ignores them, as it
//! does `REPLICA-STALL` without replicas.

use super::Shared;
use crate::cmd::{Args, SYNTAX, int, is, wrong_arity};
use crate::engine::script_watch::{lock, lock_unless_busy};
use crate::engine::{ClientId, Engine};
use crate::fault::{CommandFate, Fault, FaultEventKind, FaultPlan, NodeId, Trigger};
use crate::resp::Frame;
use bytes::Bytes;
use std::sync::{Arc, Weak};

/// One of the admin commands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AdminCommand {
    /// `FAKE.TIME`
    Time,
    /// `FAKE.ADVANCE <ms>`
    Advance,
    /// `FAKE.FAULT <kind> <args…>`
    Fault,
    /// `FAKE.EVENTS`
    Events,
    /// `FAKE.NODE [<node>]`
    Node,
    /// `FAKE.AUTH <admin-password>`
    Auth,
    /// `FAKE.HELP`
    Help,
}

/// Who may run the admin commands (see the module docs).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum AdminAccess {
    /// Every client (no admin password, a loopback address).
    Open,
    /// The connections that sent `FAKE.AUTH` with this password.
    Password(Bytes),
    /// Nobody (no admin password, an address beyond loopback).
    Refused,
}

impl AdminAccess {
    /// The access a server set up by `config` grants.
    pub(crate) fn new(config: &super::ServerConfig) -> AdminAccess {
        match &config.admin_password {
            Some(password) => AdminAccess::Password(password.clone()),
            None if config.bind.is_loopback() => AdminAccess::Open,
            None => AdminAccess::Refused,
        }
    }
}

impl AdminCommand {
    /// The admin command named `name` (any case), if it is one.
    pub fn lookup(name: &[u8]) -> Option<AdminCommand> {
        // Most requests are not admin commands: one comparison sends them on their way.
        if name.len() < 9 || !name[..5].eq_ignore_ascii_case(b"fake.") {
            return None;
        }
        let sub = &name[5..];
        [
            ("time", AdminCommand::Time),
            ("advance", AdminCommand::Advance),
            ("fault", AdminCommand::Fault),
            ("events", AdminCommand::Events),
            ("node", AdminCommand::Node),
            ("auth", AdminCommand::Auth),
            ("help", AdminCommand::Help),
        ]
        .into_iter()
        .find_map(|(n, c)| is(sub, n).then_some(c))
    }

    /// The name errors use, lowercase as Redis writes command names in them.
    pub fn name(self) -> &'static str {
        match self {
            AdminCommand::Time => "fake.time",
            AdminCommand::Advance => "fake.advance",
            AdminCommand::Fault => "fake.fault",
            AdminCommand::Events => "fake.events",
            AdminCommand::Node => "fake.node",
            AdminCommand::Auth => "fake.auth",
            AdminCommand::Help => "fake.help",
        }
    }

    /// Whether `argc` arguments (the name included) are the right number.
    fn arity_ok(self, argc: usize) -> bool {
        match self {
            AdminCommand::Time | AdminCommand::Events | AdminCommand::Help => argc == 1,
            AdminCommand::Advance | AdminCommand::Auth => argc == 2,
            AdminCommand::Fault => argc >= 2,
            AdminCommand::Node => argc <= 2,
        }
    }
}

/// The fault kinds `FAKE.FAULT` takes, in the order its error lists them.
pub const FAULT_KINDS: [&str; 17] = [
    "drop-request",
    "drop-reply",
    "delay-request",
    "delay-reply",
    "drop-delivery",
    "link-down",
    "subscriber-down",
    "pause",
    "crash",
    "restart",
    "failover",
    "clock-jump",
    "client-pause",
    "replica-stall",
    "slot-migration",
    "shard-failover",
    "clear",
];

/// What an admin command asks of its connection.
pub(crate) enum Outcome {
    /// Reply this.
    Reply(Frame),
    /// Move the virtual clock to this time with [`advance_to`], then reply the time: work that
    /// needs other connections to run, which cannot happen under the engine's lock.
    AdvanceTo(i64),
}

/// Runs an admin command for `client`, or queues it in the client's open transaction. Checks
/// come in Redis's order: arity, then authentication; a command refused inside `MULTI` fails
/// the transaction, as Redis's `rejectCommand` does.
pub(crate) fn run(
    command: AdminCommand,
    shared: &Arc<Shared>,
    engine: &mut Engine,
    client: ClientId,
    argv: &[Bytes],
) -> Outcome {
    let checked = if !command.arity_ok(argv.len()) {
        Err(wrong_arity(command.name()))
    } else if !engine.is_authenticated(client) {
        Err(Frame::error("NOAUTH Authentication required."))
    } else {
        admit(command, shared, engine, client, argv)
    };
    let in_multi = engine
        .client_mut(client.0)
        .is_some_and(|c| c.multi.is_some());
    if let Err(refused) = checked {
        if let Some(multi) = engine.client_mut(client.0).and_then(|c| c.multi.as_mut()) {
            multi.failed = true;
        }
        return Outcome::Reply(refused);
    }
    if in_multi && command != AdminCommand::Auth {
        if !engine.runs_foreign_commands() {
            let shared = Arc::downgrade(shared);
            engine.set_foreign_commands(Box::new(move |engine, client, argv| {
                run_queued(&shared, engine, client, argv)
            }));
        }
        if let Some(multi) = engine.client_mut(client.0).and_then(|c| c.multi.as_mut()) {
            multi.queue.push(argv.to_vec());
        }
        return Outcome::Reply(Frame::simple("QUEUED"));
    }
    let mut args = Args::new(argv);
    let reply = match command {
        AdminCommand::Advance => match advance_target(shared, engine, &mut args) {
            Ok(target) => return Outcome::AdvanceTo(target),
            Err(e) => Err(e),
        },
        _ => run_plain(command, engine, client, args, true),
    };
    Outcome::Reply(reply.unwrap_or_else(|e| e))
}

/// The admin commands that need nothing but the engine. `apply_now` applies a server fault due
/// now before the reply (false inside `EXEC`, which must not close its own connection midway).
fn run_plain(
    command: AdminCommand,
    engine: &mut Engine,
    client: ClientId,
    mut args: Args<'_>,
    apply_now: bool,
) -> Result<Frame, Frame> {
    match command {
        AdminCommand::Time => Ok(Frame::Integer(engine.clock_now())),
        AdminCommand::Events => Ok(events(engine)),
        AdminCommand::Node => node(engine, client, &mut args),
        AdminCommand::Fault => fault(engine, args, apply_now).map(|()| Frame::OK),
        AdminCommand::Help => Ok(help()),
        AdminCommand::Auth | AdminCommand::Advance => Ok(Frame::OK),
    }
}

/// Runs an admin command that `MULTI` queued, when `EXEC` reaches it (see the module docs for
/// the clock): None for a name that is not one, or once the server is gone.
fn run_queued(
    shared: &Weak<Shared>,
    engine: &mut Engine,
    client: ClientId,
    argv: &[Bytes],
) -> Option<Frame> {
    let command = AdminCommand::lookup(argv.first()?)?;
    let shared = shared.upgrade()?;
    let mut args = Args::new(argv);
    let reply = match command {
        AdminCommand::Advance => advance_target(&shared, engine, &mut args).map(|target| {
            if let Some(clock) = shared.clock.manual() {
                clock.set(target.max(engine.clock_now()));
            }
            shared.clock.notify_advanced();
            Frame::Integer(engine.clock_now())
        }),
        _ => run_plain(command, engine, client, args, false),
    };
    Some(reply.unwrap_or_else(|e| e))
}

/// `FAKE.HELP`: every admin command with its arguments, as Redis's `HELP` subcommands answer.
fn help() -> Frame {
    Frame::Array(HELP_LINES.iter().map(|&line| Frame::simple(line)).collect())
}

/// The lines of `FAKE.HELP`.
const HELP_LINES: &[&str] = &[
    "FAKE.<subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "AUTH <admin-password>",
    "    Allow this connection the other FAKE.* commands (with --admin-password).",
    "TIME",
    "    The server's clock before clock jumps, unix ms.",
    "ADVANCE <ms>",
    "    Move the virtual clock forward, stopping at every due time on the way; reply the new time.",
    "NODE [<node>]",
    "    This connection's node (default: its CLIENT ID), or move it to <node>.",
    "EVENTS",
    "    The fault log: [at, node|nil, seq|nil, what] per fault applied.",
    "FAULT CLEAR",
    "    Forget every fault not yet fired.",
    "FAULT DROP-REQUEST|DROP-REPLY|DROP-DELIVERY <node|*> [<which>]",
    "    Lose the request (never applied), the reply (applied), or pub/sub messages to the node.",
    "FAULT DELAY-REQUEST|DELAY-REPLY <node|*> <ms> [<which>]",
    "    Apply the request <ms> later, or apply it now and answer <ms> later.",
    "FAULT LINK-DOWN|SUBSCRIBER-DOWN|PAUSE <node> <ms> [<when>]",
    "    Lose requests and messages, lose messages and close subscribers, or pause the node.",
    "FAULT CRASH <node> [<when>]",
    "    Close the node's connections, for good.",
    "FAULT RESTART [<when>]",
    "    Close every connection; data and scripts are lost.",
    "FAULT FAILOVER <lag-ms> [<when>]",
    "    A restart losing the last <lag-ms> of writes.",
    "FAULT CLOCK-JUMP <delta-ms> [<when>]",
    "    The server's time jumps (back when negative).",
    "FAULT CLIENT-PAUSE <ms> [WRITE|ALL] [<when>]",
    "    The server holds every command, or those that may write, as CLIENT PAUSE does.",
    "FAULT REPLICA-STALL <replica> <ms> [<when>]",
    "    The primary's write stream stops reaching the replica; it all arrives at the end.",
    "FAULT SLOT-MIGRATION <slot> <to-shard> <ms> [<when>]",
    "    A cluster's slot moves to the shard, its keys one by one over <ms> (ASK, then MOVED).",
    "FAULT SHARD-FAILOVER <shard> <replica> [<when>]",
    "    A cluster's shard promotes the replica with what it received; the primary fails.",
    "    <which> is NEXT <count> | SEQS <from> <until> | DURING <from> <until> | CHANCE <p>.",
    "    NEXT on * counts the commands of every node together.",
    "    <when> is AT <unix-ms> | IN <ms>.",
    "HELP",
    "    Print this help.",
];

/// Whether `client` may run `command` under the server's [`AdminAccess`]; `FAKE.AUTH` is checked
/// (and, with the right password, remembered for the connection) here.
fn admit(
    command: AdminCommand,
    shared: &Shared,
    engine: &mut Engine,
    client: ClientId,
    argv: &[Bytes],
) -> Result<(), Frame> {
    match &shared.admin {
        AdminAccess::Refused => Err(Frame::error(
            "NOPERM FAKE.* commands are refused: the server listens beyond loopback without \
             --admin-password",
        )),
        AdminAccess::Open if command == AdminCommand::Auth => Err(Frame::error(
            "ERR FAKE.AUTH called without any admin password configured",
        )),
        AdminAccess::Open => Ok(()),
        AdminAccess::Password(password) => {
            let Some(c) = engine.client_mut(client.0) else {
                return Err(Frame::error("ERR the connection is closed"));
            };
            if command == AdminCommand::Auth {
                c.admin = argv[1] == password;
                return if c.admin {
                    Ok(())
                } else {
                    Err(Frame::error("WRONGPASS invalid admin password"))
                };
            }
            if c.admin {
                Ok(())
            } else {
                Err(Frame::error(
                    "NOPERM FAKE.* commands need FAKE.AUTH <admin-password> on this connection",
                ))
            }
        }
    }
}

/// `FAKE.ADVANCE <ms>`'s checks: the time it moves the clock to.
fn advance_target(shared: &Shared, engine: &Engine, args: &mut Args<'_>) -> Result<i64, Frame> {
    if shared.clock.manual().is_none() {
        return Err(Frame::error(
            "ERR FAKE.ADVANCE needs the virtual clock: start the server with --clock virtual",
        ));
    }
    let ms = args.next_int()?;
    if ms < 0 {
        return Err(Frame::error(
            "ERR FAKE.ADVANCE moves the clock forward only; use FAKE.FAULT CLOCK-JUMP to move the \
             server's time back",
        ));
    }
    Ok(engine.clock_now().saturating_add(ms))
}

/// Moves the virtual clock to `target` and returns the time it reads then.
///
/// The clock stops at every time something is due on the way (a connection waiting for a delay
/// or a pause, a scheduled restart, failover, crash or clock jump), in order: there the engine
/// catches up (server faults fire, expiry runs), the connections due are woken, and the clock
/// waits until they have run. So every delayed request lands at its own time, before the reply.
pub(crate) async fn advance_to(shared: &Shared, target: i64) -> i64 {
    let Some(clock) = shared.clock.manual() else {
        return lock(&shared.engine).clock_now();
    };
    let mut stepping = true;
    loop {
        let stop = {
            let mut engine = lock(&shared.engine);
            let now = engine.clock_now();
            let due = [
                shared.clock.next_timer_until(target),
                engine.next_server_fault_time().filter(|&t| t <= target),
            ]
            .into_iter()
            .flatten()
            .min()
            .filter(|_| stepping);
            let to = due.unwrap_or(target).max(now);
            clock.set(to);
            engine.catch_up();
            due.map(|_| to)
        };
        // The group's other engines read the same clock: their due work runs at this time too
        // (a replica applies what has arrived), one lock at a time; one running a script catches
        // up after it.
        for (peer, scripts) in &shared.peers {
            if let Some(mut peer) = lock_unless_busy(peer, scripts) {
                peer.catch_up();
            }
        }
        shared.clock.notify_advanced();
        match stop {
            // A connection that does not run (never, while the server is healthy) must not
            // hold the clock: then it goes straight to the target.
            Some(at) => stepping = shared.clock.settled(at).await,
            None => return lock(&shared.engine).clock_now(),
        }
    }
}

/// `FAKE.NODE [<node>]`.
fn node(engine: &mut Engine, client: ClientId, args: &mut Args<'_>) -> Result<Frame, Frame> {
    if args.remaining() == 0 {
        let node = engine.node_of(client).unwrap_or(NodeId(client.0));
        return Ok(Frame::Integer(node.0 as i64));
    }
    match args.next_int()? {
        n if n >= 0 => {
            engine.set_node(client, Some(NodeId(n as u64)));
            Ok(Frame::OK)
        }
        _ => Err(Frame::error("ERR a node is a non-negative integer")),
    }
}

fn events(engine: &Engine) -> Frame {
    let opt = |v: Option<u64>| v.map_or(Frame::Null, |v| Frame::Integer(v as i64));
    Frame::Array(
        engine
            .fault_plan()
            .log()
            .iter()
            .map(|e| {
                Frame::Array(vec![
                    Frame::Integer(e.at),
                    opt(e.node.map(|n| n.0)),
                    opt(e.seq),
                    Frame::Bulk(Bytes::from(describe(&e.kind))),
                ])
            })
            .collect(),
    )
}

/// A fault event as one line of text.
pub fn describe(kind: &FaultEventKind) -> String {
    match kind {
        FaultEventKind::RequestDropped => "request-dropped".into(),
        FaultEventKind::ReplyDropped => "reply-dropped".into(),
        FaultEventKind::RequestDelayed(ms) => format!("request-delayed {ms}"),
        FaultEventKind::ReplyDelayed(ms) => format!("reply-delayed {ms}"),
        FaultEventKind::LinkDown => "link-down".into(),
        FaultEventKind::PausedUntil(t) => format!("paused-until {t}"),
        FaultEventKind::DeliveryDropped => "delivery-dropped".into(),
        FaultEventKind::DeliveryHeld(t) => format!("delivery-held-until {t}"),
        FaultEventKind::SubscriberLost => "subscriber-lost".into(),
        FaultEventKind::SubscriberRestored => "subscriber-restored".into(),
        FaultEventKind::Crashed(n) => format!("crashed {n}"),
        FaultEventKind::Severed(n) => format!("severed {n}"),
        FaultEventKind::Restarted(kept) => {
            format!("restarted data-{}", if *kept { "kept" } else { "lost" })
        }
        FaultEventKind::FailedOver { lag_ms, undone } => {
            format!("failed-over lag {lag_ms} undone {undone}")
        }
        FaultEventKind::ClockJumped(delta) => format!("clock-jumped {delta}"),
        FaultEventKind::ClientsPaused(until, writes_only) => format!(
            "clients-paused-until {until} {}",
            if *writes_only { "write" } else { "all" }
        ),
        FaultEventKind::ShardFailedOver(shard) => format!("shard-failed-over {shard}"),
        FaultEventKind::SlotMigrated { slot, to_shard } => {
            format!("slot-migrated {slot} to-shard {to_shard}")
        }
    }
}

/// The arguments of one `FAKE.FAULT` after its kind, read left to right. A missing argument is
/// the kind's arity error, as Redis words a subcommand's.
struct FaultArgs<'a> {
    kind: &'static str,
    args: Args<'a>,
}

impl<'a> FaultArgs<'a> {
    fn missing(&self) -> Frame {
        wrong_arity(&format!("fake.fault|{}", self.kind))
    }

    fn next(&mut self) -> Result<&'a [u8], Frame> {
        match self.args.next() {
            Some(arg) => Ok(arg),
            None => Err(self.missing()),
        }
    }

    fn int(&mut self) -> Result<i64, Frame> {
        int(self.next()?)
    }

    fn ms(&mut self) -> Result<i64, Frame> {
        match self.int()? {
            ms if ms >= 0 => Ok(ms),
            _ => Err(Frame::error(
                "ERR a duration is a non-negative number of milliseconds",
            )),
        }
    }

    /// A small index (a replica, a shard, a slot): a number from 0 to 65535, `what` in its error.
    fn index(&mut self, what: &str) -> Result<u16, Frame> {
        match self.int()? {
            n if (0..=i64::from(u16::MAX)).contains(&n) => Ok(n as u16),
            _ => Err(Frame::error_owned(format!(
                "ERR {what} is a number from 0 to 65535"
            ))),
        }
    }

    /// `<node>` (a non-negative integer), or `*` for every node where `any` allows it.
    fn node(&mut self, any: bool) -> Result<Option<NodeId>, Frame> {
        let arg = self.next()?;
        if any && arg == b"*" {
            return Ok(None);
        }
        match int(arg) {
            Ok(n) if n >= 0 => Ok(Some(NodeId(n as u64))),
            Ok(_) => Err(Frame::error("ERR a node is a non-negative integer")),
            Err(_) if any => Err(Frame::error(
                "ERR a node is a non-negative integer (FAKE.NODE shows a connection's), or * for \
                 every node",
            )),
            Err(_) => Err(Frame::error(
                "ERR a node is a non-negative integer (FAKE.NODE shows a connection's)",
            )),
        }
    }

    /// `[NEXT <count> | SEQS <from> <until> | DURING <from> <until> | CHANCE <p>]`. `NEXT` on
    /// every node (`*`) counts every node's commands together, so `overall` says whether the
    /// kind of fault has such a count (commands do, deliveries do not).
    fn which(&mut self, node: Option<NodeId>, overall: bool) -> Result<Trigger, Frame> {
        let next_counts = node.is_some() || overall;
        if self.args.remaining() == 0 {
            return match next_counts {
                true => Ok(Trigger::Next { count: 1 }),
                false => Err(next_needs_a_node()),
            };
        }
        if self.args.eat("next") {
            if !next_counts {
                return Err(next_needs_a_node());
            }
            let count = self.ms()? as u64;
            Ok(Trigger::Next { count })
        } else if self.args.eat("seqs") {
            let from = self.ms()? as u64;
            let until = self.ms()? as u64;
            Ok(Trigger::Seqs { from, until })
        } else if self.args.eat("during") {
            let from = self.int()?;
            let until = self.int()?;
            Ok(Trigger::During { from, until })
        } else if self.args.eat("chance") {
            let p = crate::cmd::float(self.next()?)
                .filter(|p| (0.0..=1.0).contains(p))
                .ok_or_else(|| Frame::error("ERR a chance is a number from 0 to 1"))?;
            Ok(Trigger::Chance { p })
        } else {
            Err(SYNTAX)
        }
    }

    /// `[AT <unix-ms> | IN <ms>]`: when, on the fault clock; now by default.
    fn when(&mut self, now: i64) -> Result<i64, Frame> {
        if self.args.remaining() == 0 {
            return Ok(now);
        }
        if self.args.eat("at") {
            self.int()
        } else if self.args.eat("in") {
            Ok(now.saturating_add(self.ms()?))
        } else {
            Err(SYNTAX)
        }
    }

    /// Nothing may follow the last argument.
    fn end(&self) -> Result<(), Frame> {
        self.args.finish()
    }
}

fn next_needs_a_node() -> Frame {
    Frame::error(
        "ERR NEXT counts one node's deliveries: name a node, or use SEQS, DURING or CHANCE",
    )
}

fn unknown_kind(kind: &[u8]) -> Frame {
    let kind: String = String::from_utf8_lossy(kind).chars().take(128).collect();
    let kind = kind.replace(['\r', '\n'], " ");
    Frame::error_owned(format!(
        "ERR unknown fault kind '{kind}'; the kinds are {}",
        FAULT_KINDS.join(", ")
    ))
}

/// What the words after `FAKE.FAULT` ask for.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum FaultRequest {
    /// `CLEAR`: forget every fault not yet fired.
    Clear,
    /// Add this fault.
    Add(Fault),
}

/// Reads the words after `FAKE.FAULT` (`argv[0]` is the command's name), a `<when>` counted from
/// `now`: the inverse of [`Fault`]'s `Display` (see the module docs).
pub fn parse_fault(argv: &[Bytes], now: i64) -> Result<FaultRequest, Frame> {
    read_fault(Args::new(argv), now)
}

fn read_fault(mut args: Args<'_>, now: i64) -> Result<FaultRequest, Frame> {
    let named = args.next_bytes()?;
    let kind = FAULT_KINDS
        .into_iter()
        .find(|k| is(named, k))
        .ok_or_else(|| unknown_kind(named))?;
    let mut a = FaultArgs { kind, args };
    let command = |a: &mut FaultArgs<'_>, fault: fn(u64) -> CommandFate, delayed: bool| {
        let node = a.node(true)?;
        let ms = if delayed { a.ms()? as u64 } else { 0 };
        let trigger = a.which(node, true)?;
        Ok::<_, Frame>(Fault::Command {
            node,
            fault: fault(ms),
            trigger,
        })
    };
    let window = |a: &mut FaultArgs<'_>| -> Result<(NodeId, i64, i64), Frame> {
        let node = a.node(false)?.unwrap_or_default();
        let ms = a.ms()?;
        let from = a.when(now)?;
        Ok((node, from, from.saturating_add(ms)))
    };
    let fault = match kind {
        "clear" => {
            a.end()?;
            return Ok(FaultRequest::Clear);
        }
        "drop-request" => command(&mut a, |_| CommandFate::DropRequest, false)?,
        "drop-reply" => command(&mut a, |_| CommandFate::DropReply, false)?,
        "delay-request" => command(&mut a, CommandFate::DelayRequest, true)?,
        "delay-reply" => command(&mut a, CommandFate::DelayReply, true)?,
        "drop-delivery" => {
            let node = a.node(true)?;
            let trigger = a.which(node, false)?;
            Fault::DropDelivery { node, trigger }
        }
        "link-down" => {
            let (node, from, until) = window(&mut a)?;
            Fault::LinkDown { node, from, until }
        }
        "subscriber-down" => {
            let (node, from, until) = window(&mut a)?;
            Fault::SubscriberDown { node, from, until }
        }
        "pause" => {
            let (node, from, until) = window(&mut a)?;
            Fault::Pause { node, from, until }
        }
        "crash" => {
            let node = a.node(false)?.unwrap_or_default();
            Fault::Crash {
                node,
                at: a.when(now)?,
            }
        }
        "restart" => Fault::Restart { at: a.when(now)? },
        "failover" => {
            let lag_ms = a.ms()?;
            Fault::Failover {
                at: a.when(now)?,
                lag_ms,
            }
        }
        "clock-jump" => {
            let delta_ms = a.int()?;
            Fault::ClockJump {
                at: a.when(now)?,
                delta_ms,
            }
        }
        "client-pause" => {
            let ms = a.ms()?;
            let writes_only = if a.args.eat("write") {
                true
            } else {
                a.args.eat("all");
                false
            };
            let at = a.when(now)?;
            Fault::ClientPause {
                at,
                until: at.saturating_add(ms),
                writes_only,
            }
        }
        "replica-stall" => {
            let replica = a.index("a replica")?;
            let ms = a.ms()?;
            let from = a.when(now)?;
            Fault::ReplicaStall {
                replica,
                from,
                until: from.saturating_add(ms),
            }
        }
        "slot-migration" => {
            let slot = a.index("a slot")?;
            if slot >= crate::engine::cluster::SLOTS {
                return Err(Frame::error("ERR a slot is a number from 0 to 16383"));
            }
            let to_shard = a.index("a shard")?;
            let ms = a.ms()?;
            let from = a.when(now)?;
            Fault::SlotMigration {
                slot,
                to_shard,
                from,
                until: from.saturating_add(ms),
            }
        }
        "shard-failover" => {
            let shard = a.index("a shard")?;
            let replica = a.index("a replica")?;
            Fault::ShardFailover {
                shard,
                replica,
                at: a.when(now)?,
            }
        }
        _ => return Err(unknown_kind(named)),
    };
    a.end()?;
    Ok(FaultRequest::Add(fault))
}

/// `FAKE.FAULT <kind> <args…>`: adds the fault to the engine's plan. A server-side fault due now
/// (a restart, failover, crash or clock jump without `AT`/`IN`) happens before the reply, so a
/// restart closes this connection too, once the reply is written.
fn fault(engine: &mut Engine, args: Args<'_>, apply_now: bool) -> Result<(), Frame> {
    let now = engine.clock_now();
    let fault = match read_fault(args, now)? {
        FaultRequest::Clear => {
            let seed = engine.fault_plan().seed();
            engine.set_fault_plan(FaultPlan::new(seed));
            return Ok(());
        }
        FaultRequest::Add(fault) => fault,
    };
    engine.add_fault(fault);
    if apply_now && fault.server_time().is_some_and(|at| at <= now) {
        engine.apply_due_server_faults();
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lookup_finds_admin_commands_in_any_case_and_nothing_else() {
        assert_eq!(
            AdminCommand::lookup(b"fake.advance"),
            Some(AdminCommand::Advance)
        );
        assert_eq!(AdminCommand::lookup(b"FAKE.Time"), Some(AdminCommand::Time));
        assert_eq!(AdminCommand::lookup(b"fake.nope"), None);
        assert_eq!(AdminCommand::lookup(b"SET"), None);
        assert_eq!(AdminCommand::lookup(b"fake."), None);
    }

    fn parsed(text: &str, now: i64) -> Result<FaultRequest, Frame> {
        let argv: Vec<Bytes> = std::iter::once("FAKE.FAULT")
            .chain(text.split(' '))
            .map(|w| Bytes::copy_from_slice(w.as_bytes()))
            .collect();
        parse_fault(&argv, now)
    }

    #[test]
    fn every_fault_prints_as_the_words_that_arm_it_again() {
        let n = Some(NodeId(4));
        let faults = [
            Fault::Command {
                node: n,
                fault: CommandFate::DropRequest,
                trigger: Trigger::Next { count: 2 },
            },
            Fault::Command {
                node: None,
                fault: CommandFate::DropReply,
                trigger: Trigger::Chance { p: 0.25 },
            },
            Fault::Command {
                node: n,
                fault: CommandFate::DelayRequest(7),
                trigger: Trigger::Seqs { from: 1, until: 9 },
            },
            Fault::Command {
                node: None,
                fault: CommandFate::DelayReply(3),
                trigger: Trigger::During {
                    from: -5,
                    until: 40,
                },
            },
            Fault::DropDelivery {
                node: None,
                trigger: Trigger::Chance { p: 1.0 },
            },
            Fault::LinkDown {
                node: NodeId(1),
                from: 10,
                until: 30,
            },
            Fault::SubscriberDown {
                node: NodeId(2),
                from: 11,
                until: 31,
            },
            Fault::Pause {
                node: NodeId(3),
                from: 12,
                until: 32,
            },
            Fault::Crash {
                node: NodeId(5),
                at: 13,
            },
            Fault::Restart { at: 14 },
            Fault::Failover {
                at: 15,
                lag_ms: 200,
            },
            Fault::ClockJump {
                at: 16,
                delta_ms: -250,
            },
            Fault::ClientPause {
                at: 17,
                until: 117,
                writes_only: true,
            },
            Fault::ReplicaStall {
                replica: 1,
                from: 18,
                until: 68,
            },
            Fault::SlotMigration {
                slot: 12_182,
                to_shard: 2,
                from: 19,
                until: 1_019,
            },
            Fault::ShardFailover {
                shard: 1,
                replica: 0,
                at: 20,
            },
        ];
        for fault in faults {
            let text = fault.to_string();
            assert_eq!(parsed(&text, 0), Ok(FaultRequest::Add(fault)), "{text}");
        }
        assert_eq!(parsed("CLEAR", 0), Ok(FaultRequest::Clear));
    }

    #[test]
    fn the_cluster_faults_read_their_words_and_count_from_now() {
        assert_eq!(
            parsed("slot-migration 866 2 500", 1_000),
            Ok(FaultRequest::Add(Fault::SlotMigration {
                slot: 866,
                to_shard: 2,
                from: 1_000,
                until: 1_500,
            }))
        );
        assert_eq!(
            parsed("SHARD-FAILOVER 0 1 IN 250", 1_000),
            Ok(FaultRequest::Add(Fault::ShardFailover {
                shard: 0,
                replica: 1,
                at: 1_250,
            }))
        );
        assert_eq!(
            parsed("SLOT-MIGRATION 16384 1 10", 0),
            Err(Frame::error("ERR a slot is a number from 0 to 16383"))
        );
        assert_eq!(
            parsed("SHARD-FAILOVER 0", 0),
            Err(wrong_arity("fake.fault|shard-failover"))
        );
        assert_eq!(
            parsed("SHARD-FAILOVER -1 0", 0),
            Err(Frame::error("ERR a shard is a number from 0 to 65535"))
        );
    }

    #[test]
    fn not_integer_is_the_engine_s_text() {
        assert_eq!(
            crate::cmd::NOT_INTEGER.error_text(),
            Some("ERR value is not an integer or out of range")
        );
    }
}
