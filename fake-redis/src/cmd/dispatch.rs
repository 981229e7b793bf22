//! Running a command: the checks every command passes in Redis's order, then its handler.
//!
//! Redis's `processCommand` looks the name up (a container's subcommand too), checks the arity
//! (the subcommand's too), then authentication, then the user's ACL permissions (`acl/`, which
//! `EXEC` checks again for each queued command), then the pub/sub context, then queues the
//! command if a transaction is open; only a command that passes all of that runs. The same order is kept here, once, for every way a command reaches the
//! engine: [`Engine::execute`] (a client's request), the commands an `EXEC` runs back to back
//! (checked when they were queued), and [`Engine::run_script`] (a native script without the
//! protocol, for simulators). The engine's constructors are here too: they hand it the work it
//! needs from this layer ([`CommandHooks`]), so that the engine never calls up. The engine's own
//! part, the frozen time and the bookkeeping around a command, is in `engine/mod.rs`; the
//! handlers are in the family files beside this one.

use super::client::{Feed, Gate};
use super::parse::Args;
use super::{
    Cx, NO_AUTH, NOT_QUEUED, PUBSUB_CONTEXT, Refusal, Spec, WRITE, acl, command_name, lookup_in,
    unknown_command, wrong_arity,
};
use crate::clock::Clock;
use crate::engine::monitor::Source;
use crate::engine::{ClientId, CommandHooks, Engine, EngineConfig};
use crate::resp::Frame;
use bytes::Bytes;

/// What the engine runs of this layer: the end of a command (clients a pause postponed, clients
/// blocked on keys) and the users a server starts with.
const HOOKS: CommandHooks = CommandHooks {
    resume_postponed: super::resume_postponed,
    serve_blocked: super::serve_blocked,
    new_acl: super::Acl::new,
};

impl Engine {
    /// An engine on `clock` with the default configuration.
    pub fn new(clock: impl Clock) -> Engine {
        Engine::with_config(clock, EngineConfig::default())
    }

    /// An engine on `clock` set up by `config`.
    pub fn with_config(clock: impl Clock, config: EngineConfig) -> Engine {
        Engine::build(clock, config, HOOKS)
    }

    /// Runs one command for `client` and returns its reply. `argv[0]` is the command's name, in
    /// any case. See the [engine's docs](crate::engine) for the outbox contract. A closed
    /// connection (after `QUIT`, a restart, a failover or a crash) gets `ERR the connection is
    /// closed`; its driver should [`connect`](Engine::connect) again.
    ///
    /// A blocking command (`BLPOP` and its kin) does not block here: it answers at once, as
    /// inside `MULTI` (nil when there is nothing to take). A driver that can wait for a blocked
    /// reply calls [`execute_or_block`](Engine::execute_or_block) instead.
    pub fn execute(&mut self, client: ClientId, argv: &[Bytes]) -> Frame {
        let Some(now) = self.start_command(client) else {
            return Frame::error("ERR the connection is closed");
        };
        let reply = dispatch(self, client.0, argv, now, false);
        self.settle_reply(client, &reply);
        let reply = self.reply_after_early_invalidations(client, reply);
        self.end_command(client, now);
        reply
    }

    /// [`execute`](Engine::execute), except that a blocking command with nothing to take blocks
    /// the client (`engine/blocking.rs`): then there is no reply yet (None). The driver sends
    /// the client nothing more until [`take_unblocked_reply`](Engine::take_unblocked_reply)
    /// gives the reply; it is woken ([`register_waker`](Engine::register_waker)) when the block
    /// ends, and sleeps until [`block_deadline`](Engine::block_deadline) on its clock, then calls
    /// [`catch_up`](Engine::catch_up), for the timeout.
    pub fn execute_or_block(&mut self, client: ClientId, argv: &[Bytes]) -> Option<Frame> {
        let Some(now) = self.start_command(client) else {
            return Some(Frame::error("ERR the connection is closed"));
        };
        let reply = dispatch(self, client.0, argv, now, true);
        let blocked = self.is_blocked(client);
        self.settle_reply(client, &reply);
        let reply = self.reply_after_early_invalidations(client, reply);
        self.end_command(client, now);
        if blocked {
            // Still blocked after the serving at the end of its own command (a command that
            // blocks makes no key ready, so it always is): no reply yet.
            return self.take_unblocked_reply(client);
        }
        Some(reply)
    }

    /// Runs a native script's function in database `db` over `keys` and `args`, as `EVALSHA`
    /// would, whether or not it is registered or in the script cache (for simulators that skip
    /// the protocol).
    pub fn run_script(
        &mut self,
        db: usize,
        script: &crate::native::NativeScript,
        keys: &[Bytes],
        args: &[Bytes],
    ) -> Frame {
        let now = self.tick();
        // No connection runs it: client 0 is never connected, and a script asks nothing of one.
        let cx = &mut Cx::new(self, 0, db, now);
        let reply = super::scripting::run(cx, script, keys, args, false);
        self.collect_dirty();
        self.propagate(None, now);
        reply
    }
}

/// Checks a command of client `id` in Redis's order, then queues it in the client's transaction
/// or runs it.
// One caller, on every command's path: inlined, `execute` is one call frame.
#[inline(always)]
fn dispatch(engine: &mut Engine, id: u64, argv: &[Bytes], now: i64, may_block: bool) -> Frame {
    // Only a call shaped as `EVALSHA <40 hex digits> …` asks for the short path.
    if argv.len() >= 3
        && argv[1].len() == 40
        && let Some(reply) = known_evalsha(engine, id, argv, now, may_block)
    {
        return reply;
    }
    let Some(name) = argv.first() else {
        return Frame::error("ERR empty command");
    };
    let version = engine.version();
    let spec = match engine.is_sentinel() {
        false => lookup_in(version, name),
        true => super::sentinel::lookup(name),
    };
    let debug_refused =
        spec.is_some_and(|s| s.name == "debug") && !engine.config().enable_debug_command.allows();
    let client = engine.client_mut(id).expect("checked by start_command");
    let Some(spec) = spec else {
        client.last_command = "NULL";
        if let Some(m) = &mut client.multi {
            m.failed = true;
        }
        let error = unknown_command(argv);
        engine.count_rejection("NULL", &error);
        return error;
    };
    if !spec.arity_ok(argv.len()) {
        client.last_command = spec.name;
        return reject(engine, id, spec, wrong_arity(spec.name));
    }
    // A container's subcommand is looked up, and its arity checked, before authentication.
    let name = match command_name(version, spec, argv) {
        Ok(name) => name,
        Err(refusal) => {
            client.last_command = match refusal {
                Refusal::Unknown => "NULL",
                Refusal::Arity(name) => name,
            };
            return reject(engine, id, spec, refusal.error(spec, argv));
        }
    };
    client.last_command = name;
    // Redis refuses a protected command its switch keeps off before it checks authentication.
    if debug_refused {
        return reject(engine, id, spec, super::debug::refused());
    }
    // What the later checks ask of the client, read now: a map lookup per command instead of
    // four. Only a check that is off on the common path (ACL rules, a cluster's routing) may
    // change the client before the command runs, and then it is read again.
    let mut seen = Seen::of(client);
    if !client.authenticated && !spec.has(NO_AUTH) && engine.acl().users.auth_required() {
        return reject(
            engine,
            id,
            spec,
            Frame::error("NOAUTH Authentication required."),
        );
    }
    if !engine.acl().users.is_open() {
        let context = match seen.in_multi {
            true => acl::Context::Multi,
            false => acl::Context::TopLevel,
        };
        if let Err(denied) = acl::check_call(engine, id, name, name, argv, context, now) {
            return reject(engine, id, spec, denied.error(name));
        }
        seen = Seen::again(engine, id);
    }
    if engine.is_cluster_node() {
        if let Err(error) = super::redirect::route(engine, id, spec, name, argv, now) {
            return redirected(engine, id, spec, error);
        }
        seen = Seen::again(engine, id);
    }
    if engine.evicts() || engine.is_tracking() {
        let queued = engine.outbox_len(ClientId(id));
        let checked = match engine.evicts() {
            true => check_memory(engine, id, name, argv, seen.in_multi, now),
            false => Ok(()),
        };
        engine.invalidate_before_command(id, queued, now);
        if let Err(error) = checked {
            return reject(engine, id, spec, error);
        }
    }
    if engine.checks_replicas() && is_write_call(engine, id, spec) {
        return reject(engine, id, spec, replica_refusal(engine));
    }
    if seen.in_pubsub_context && !spec.has(PUBSUB_CONTEXT) {
        let error = Frame::error_owned(format!(
            "ERR Can't execute '{name}': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / \
             QUIT / RESET are allowed in this context"
        ));
        return reject(engine, id, spec, error);
    }
    if engine.is_read_only_replica()
        && engine.refuses_stale_reads()
        && denies_stale(engine, id, spec, name)
    {
        return reject(engine, id, spec, crate::engine::replication::MASTERDOWN);
    }
    let (monitor, in_multi) = (seen.monitor, seen.in_multi);
    match super::client::gate(engine, id, monitor, in_multi, name, argv, may_block, now) {
        Gate::Run => {}
        Gate::Refuse(error) => return reject(engine, id, spec, error),
        Gate::Postponed => return Frame::Null,
    }
    if in_multi && !spec.has(NOT_QUEUED) {
        let client = engine.client_mut(id).expect("checked by start_command");
        if let Some(m) = &mut client.multi {
            m.queue.push(argv.to_vec());
        }
        return Frame::simple("QUEUED");
    }
    let db = seen.db;
    let feed = engine.has_monitors().then(|| Feed::of(version, name));
    if engine.is_tracking() {
        super::client::before_call(engine, name, argv);
    }
    let source = Source::Client(id);
    if let Some(feed) = &feed {
        feed.before(engine, source, db, argv, now);
    }
    let mark = super::propagate::mark(engine);
    let cx = &mut Cx::new(engine, id, db, now);
    cx.may_block = may_block;
    cx.reads = super::reads_of(spec, argv);
    let mut reply = (spec.run)(cx, &mut Args::new(argv)).unwrap_or_else(|error| error);
    if name.ends_with("|help") && version.is_valkey() {
        reply = super::valkey_help::adapt(name, reply);
    }
    if let Some(mark) = mark {
        super::propagate::after(engine, db, now, spec, argv, &reply, mark);
    }
    if let Some(feed) = feed {
        let db = engine.selected_db(ClientId(id));
        feed.after(engine, source, db, argv, now);
    }
    if engine.is_tracking() {
        super::client::track_read(engine, id, name, argv, now);
        super::client::end_client_command(engine, id, spec);
    }
    // A command that blocked counts when its block ends (`engine/blocking.rs`).
    if engine.blocked_clients() == 0 || !engine.is_blocked(ClientId(id)) {
        engine.count_call(id, name, argv, &reply, false);
    }
    reply
}

/// `EVALSHA` of a loaded native script, on an engine and a client where every check of
/// [`dispatch`] passes and no observer follows the command (no ACL rules, cluster, `maxmemory`,
/// replica role, pause, monitor, client tracking; a client outside `MULTI` and the pub/sub
/// context), with a plain key count: the lock's calls, over and over. It runs the script as
/// `EVALSHA`'s handler would and counts the call as `dispatch` counts it, without looking the
/// name up or parsing the arguments again. Anything else is None, before any effect, and takes
/// the general path, which stays the only one for every other call.
#[inline(never)]
fn known_evalsha(
    engine: &mut Engine,
    id: u64,
    argv: &[Bytes],
    now: i64,
    may_block: bool,
) -> Option<Frame> {
    let [name, sha, numkeys, rest @ ..] = argv else {
        return None;
    };
    // Clients spell it in one case or the other; any mix still matches.
    let spelled = name[..] == *b"EVALSHA" || name[..] == *b"evalsha";
    if sha.len() != 40 || !(spelled || name.eq_ignore_ascii_case(b"evalsha")) {
        return None;
    }
    let numkeys = plain_count(numkeys).filter(|&n| n <= rest.len())?;
    if engine.is_sentinel()
        || !engine.acl().users.is_open()
        || engine.is_cluster_node()
        || engine.evicts()
        || engine.is_read_only_replica()
        || engine.pause_at(now).is_some()
        || engine.has_monitors()
        || engine.is_tracking()
        || engine.lock_scripts_run_on_lua()
    {
        return None;
    }
    let script = engine.scripts().get(sha)?.clone();
    let client = engine.client_mut(id).expect("checked by start_command");
    // A client not authenticated takes the general path, which asks whether it must be.
    if client.multi.is_some()
        || client.monitor
        || client.in_pubsub_context()
        || !client.authenticated
    {
        return None;
    }
    let spec = &super::scripting::EVALSHA;
    client.last_command = spec.name;
    let db = client.db;
    let (keys, args) = rest.split_at(numkeys);
    let cx = &mut Cx::new(engine, id, db, now);
    cx.may_block = may_block;
    let reply = super::scripting::run(cx, &script, keys, args, false);
    if engine.blocked_clients() == 0 || !engine.is_blocked(ClientId(id)) {
        engine.count_call(id, spec.name, argv, &reply, false);
    }
    Some(reply)
}

/// A key count written plainly (one to three digits, no sign, no leading zero): others, valid or
/// not, take the general path and its parser.
#[inline(always)]
fn plain_count(text: &[u8]) -> Option<usize> {
    if text.is_empty() || text.len() > 3 || (text.len() > 1 && text[0] == b'0') {
        return None;
    }
    text.iter().try_fold(0usize, |n, &b| {
        b.is_ascii_digit().then(|| n * 10 + usize::from(b - b'0'))
    })
}

/// What [`dispatch`] asks of a client between its name's checks and its run.
#[derive(Clone, Copy)]
struct Seen {
    in_multi: bool,
    monitor: bool,
    in_pubsub_context: bool,
    db: usize,
}

impl Seen {
    #[inline(always)]
    fn of(client: &crate::engine::Client) -> Seen {
        Seen {
            in_multi: client.multi.is_some(),
            monitor: client.monitor,
            in_pubsub_context: client.in_pubsub_context(),
            db: client.db,
        }
    }

    /// The client read again, after a check that may have changed it.
    #[cold]
    fn again(engine: &mut Engine, id: u64) -> Seen {
        Seen::of(engine.client_mut(id).expect("checked by start_command"))
    }
}

/// Redis's reply to a command refused because memory is over `maxmemory`.
pub(crate) const OOM: Frame =
    Frame::error("OOM command not allowed when used memory > 'maxmemory'.");

/// Redis's `maxmemory` step of `processCommand`, while a limit is set: evicts what the policy
/// lets it (`engine/evict.rs`); if memory is still over the limit, refuses a command that may
/// grow it (Redis's `denyoom` flag; an `EXEC` whose queue holds one; an `EVAL` whose shebang
/// declares neither `allow-oom` nor `no-writes`) and, inside `MULTI`, any command but `EXEC`,
/// `DISCARD`, `QUIT` and `RESET`, as Redis refuses queuing more.
#[cold]
fn check_memory(
    engine: &mut Engine,
    id: u64,
    name: &str,
    argv: &[Bytes],
    in_multi: bool,
    now: i64,
) -> Result<(), Frame> {
    if engine.perform_evictions(now) {
        return Ok(());
    }
    let queuing = in_multi && !matches!(name, "exec" | "discard" | "quit" | "reset");
    match queuing || denies_oom(engine, id, name, argv) {
        true => Err(OOM),
        false => Ok(()),
    }
}

/// Whether a call is one Redis refuses while out of memory (see [`check_memory`]).
fn denies_oom(engine: &mut Engine, id: u64, name: &str, argv: &[Bytes]) -> bool {
    use super::command_docs::{flag, queued_with_flag, redis_flags};
    if matches!(name, "eval" | "eval_ro")
        && let Some(declared) = argv
            .get(1)
            .and_then(|body| super::shebang::declared_flags(body))
    {
        return !(declared.no_writes || declared.allow_oom);
    }
    if name == "exec" {
        return queued_with_flag(engine, id, flag::DENYOOM);
    }
    redis_flags(engine.version(), name) & flag::DENYOOM != 0
}

/// Runs again, from the start, a command of client `id` that a pause held (`cmd/client.rs`).
pub(super) fn run_resumed(engine: &mut Engine, id: u64, argv: &[Bytes], now: i64) -> Frame {
    dispatch(engine, id, argv, now, true)
}

/// Whether a call is a write as Redis's `processCommand` judges it: a command flagged `write`
/// (but see [`script_decides_writes`]), or an `EXEC` whose queue holds one.
#[cold]
fn is_write_call(engine: &Engine, id: u64, spec: &Spec) -> bool {
    use super::command_docs::{flag, queued_with_flag};
    (spec.has(WRITE) && !script_decides_writes(spec))
        || (std::ptr::eq(spec, &super::transactions::EXEC)
            && queued_with_flag(engine, id, flag::WRITE))
}

/// Why a node that [checks writes](Engine::checks_replicas) refuses one: Redis's
/// `NOREPLICAS` on a primary with too few good replicas (`min-replicas-to-write`), its
/// `READONLY` on a replica.
#[cold]
fn replica_refusal(engine: &Engine) -> Frame {
    match engine.is_read_only_replica() {
        true => crate::engine::replication::READONLY,
        false => crate::engine::replication::NOREPLICAS,
    }
}

/// Whether a replica whose link is down refuses a call while `replica-serve-stale-data` is
/// `no`: a command Redis does not flag `stale`, or an `EXEC` whose queue holds one.
#[cold]
fn denies_stale(engine: &Engine, id: u64, spec: &Spec, name: &str) -> bool {
    use super::command_docs::{flag, queued_without_flag, redis_flags};
    redis_flags(engine.version(), name) & flag::STALE == 0
        || (std::ptr::eq(spec, &super::transactions::EXEC)
            && queued_without_flag(engine, id, flag::STALE))
}

/// Whether `spec` is `EVAL` or `EVALSHA`, whose script (without a shebang's flags) Redis does not
/// count as a write: on a replica it runs, and its write calls fail instead (`lua/mod.rs`).
#[cold]
fn script_decides_writes(spec: &Spec) -> bool {
    std::ptr::eq(spec, &super::scripting::EVAL)
        || std::ptr::eq(spec, &super::scripting::EVALSHA)
        || std::ptr::eq(spec, &super::functions::FCALL)
}

/// Redis's `rejectCommand`: a command refused before it runs fails the client's open
/// transaction, and a refused `EXEC` discards it (its watches too) and says why as an
/// `EXECABORT`, the reason without its `ERR` code.
#[cold]
fn reject(engine: &mut Engine, id: u64, spec: &Spec, error: Frame) -> Frame {
    let error = refusal(engine, id, spec, error);
    let name = engine.client_mut(id).map_or("NULL", |c| c.last_command);
    engine.count_rejection(name, &error);
    error
}

/// A call a cluster node does not serve (`cmd/redirect.rs`): refused as [`reject`] refuses it,
/// except that an `EXEC` answers the redirection itself, its transaction discarded, as Redis's
/// `processCommand` does.
#[cold]
fn redirected(engine: &mut Engine, id: u64, spec: &Spec, error: Frame) -> Frame {
    if !std::ptr::eq(spec, &super::transactions::EXEC) {
        return reject(engine, id, spec, error);
    }
    if let Some(client) = engine.client_mut(id) {
        client.multi = None;
    }
    engine.unwatch(id);
    engine.count_rejection("exec", &error);
    error
}

/// The reply [`reject`] gives.
fn refusal(engine: &mut Engine, id: u64, spec: &Spec, error: Frame) -> Frame {
    let client = engine.client_mut(id).expect("checked by start_command");
    if !std::ptr::eq(spec, &super::transactions::EXEC) {
        if let Some(m) = &mut client.multi {
            m.failed = true;
        }
        return error;
    }
    client.multi = None;
    engine.unwatch(id);
    let text = error.error_text().unwrap_or_default();
    let reason = text.strip_prefix("ERR ").unwrap_or(text);
    Frame::error_owned(format!(
        "EXECABORT Transaction discarded because of: {reason}"
    ))
}

/// Runs the commands of an `EXEC`, back to back at the transaction's frozen time (each was
/// checked when it was queued): one reply each.
pub(super) fn run_queued(cx: &mut Cx<'_>, queue: &[Vec<Bytes>]) -> Vec<Frame> {
    // Nothing inside a transaction blocks or subscribes to a shard channel.
    cx.caller = super::context::Caller::Transaction;
    let version = cx.engine().version();
    queue
        .iter()
        .map(|argv| {
            let Some(spec) = argv.first().and_then(|n| lookup_in(version, n)) else {
                return cx
                    .run_foreign(argv)
                    .unwrap_or_else(|| unknown_command(argv));
            };
            // ACL rules may have changed since the command was queued: Redis checks it again.
            if !cx.engine().acl().users.is_open()
                && let Err(denied) = check_queued(cx, spec, argv)
            {
                return denied.exec_error();
            }
            // A `SELECT` earlier in the transaction moves the commands after it.
            cx.db = cx.selected_db();
            let feed = cx.engine().has_monitors().then(|| {
                let name = super::command_name(version, spec, argv).unwrap_or(spec.name);
                Feed::of(version, name)
            });
            let source = Source::Client(cx.client);
            if cx.engine().is_tracking() {
                let name = super::command_name(version, spec, argv).unwrap_or(spec.name);
                super::client::before_call(cx.node(), name, argv);
            }
            if let Some(feed) = &feed {
                let (db, now) = (cx.db, cx.now);
                feed.before(cx.node(), source, db, argv, now);
            }
            cx.reads = super::reads_of(spec, argv);
            let mark = super::propagate::mark(cx.engine());
            let reply = (spec.run)(cx, &mut Args::new(argv)).unwrap_or_else(|error| error);
            if let Some(mark) = mark {
                let (db, now) = (cx.db, cx.now);
                super::propagate::after(cx.node(), db, now, spec, argv, &reply, mark);
            }
            cx.reads = super::Reads::None;
            if let Some(feed) = feed {
                let (db, now) = (cx.selected_db(), cx.now);
                feed.after(cx.node(), source, db, argv, now);
            }
            if cx.engine().is_tracking() {
                let name = super::command_name(version, spec, argv).unwrap_or(spec.name);
                let (id, now) = (cx.client, cx.now);
                super::client::track_read(cx.node(), id, name, argv, now);
            }
            let name = command_name(version, spec, argv).unwrap_or(spec.name);
            let client = cx.client;
            cx.node().count_call(client, name, argv, &reply, false);
            reply
        })
        .collect()
}

/// The ACL check `EXEC` makes of a queued command before it runs it (`acl/`).
#[cold]
fn check_queued(cx: &mut Cx<'_>, spec: &'static Spec, argv: &[Bytes]) -> Result<(), acl::Denied> {
    let Ok(name) = command_name(cx.engine().version(), spec, argv) else {
        return Ok(());
    };
    let (id, now) = (cx.client, cx.now);
    acl::check_call(cx.node(), id, name, name, argv, acl::Context::Multi, now)
}
