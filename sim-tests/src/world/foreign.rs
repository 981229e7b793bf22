//! Foreign lock clients: another library's lock, driven in the same world as ours, on the same
//! engine and virtual clock, so that a lesson can set the two side by side under one fault.
//!
//! The foreign lock is redis-py's `Lock` as its documentation describes it. Acquiring is
//! `SET name token NX PX timeout`, tried again every `sleep` while it fails (a blocking acquire).
//! Releasing and extending are Lua scripts that compare the key's value with the client's token,
//! sent with `EVALSHA` and, when the server answers `NOSCRIPT`, with `EVAL`: neither is one of our
//! lock's scripts, so the fake runs them on its embedded Lua. The lock has no watchdog: its lease
//! is `timeout`, and a client that stops (a GC pause) outlives it without knowing. A release that
//! finds another token replies 0 (redis-py raises `LockNotOwnedError`); by then the work is done.
//!
//! A foreign client's workload is the same cycle as one of ours, once: acquire, write to the
//! lock's unfenced resource, work half its time, write, work the other half, write, release. Its
//! messages take the case's lowest latency and meet no network fault; it can be paused.

use super::{Ev, World};
use crate::history::{ForeignMessage, ForeignRun, ForeignSpec, Interval};
use crate::server::{ConnId, SimServer};
use bytes::Bytes;
use fake_redis::NodeId;
use fake_redis::seed::Seed;
use lock_core::machine::Call;
use lock_core::{BackendError, Reply};

/// redis-py's release, written from its documented behaviour: delete the key only if it still
/// holds this client's token; 1 if deleted, 0 if not.
pub const RELEASE_SCRIPT: &str = "\
local stored = redis.call('GET', KEYS[1])
if stored ~= ARGV[1] then
  return 0
end
redis.call('DEL', KEYS[1])
return 1
";

/// The SHA1 of [`RELEASE_SCRIPT`], as a client computes it before its first `EVALSHA` (a test
/// holds it to what the server's `SCRIPT LOAD` replies).
pub const RELEASE_SHA: &str = "e3d55b4a83273298ad441891585cae154f4a9306";

/// redis-py's extend, written from its documented behaviour: if the key still holds this client's
/// token, add `ARGV[2]` ms to its time to live (or, with `ARGV[3]` = `1`, make that the time to
/// live); 1 if extended, 0 if not.
pub const EXTEND_SCRIPT: &str = "\
if redis.call('GET', KEYS[1]) ~= ARGV[1] then
  return 0
end
local ttl = tonumber(ARGV[2])
if ARGV[3] == '0' then
  local left = redis.call('PTTL', KEYS[1])
  if left > 0 then
    ttl = ttl + left
  end
end
redis.call('PEXPIRE', KEYS[1], ttl)
return 1
";

/// The random stream of the foreign clients' tokens (apart from the world's own streams).
const TOKENS: u64 = 101;

/// The node numbers of foreign clients start here, clear of the case's clients.
const FIRST_NODE: u64 = 1_000;

/// Where a foreign client's cycle is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Step {
    NotStarted,
    Acquiring,
    /// Holding, with `writes` of the three done.
    Working {
        writes: u8,
    },
    Releasing,
    Finished,
}

/// What happens to a foreign client next.
#[derive(Clone, Debug)]
pub(super) enum ForeignEv {
    /// Its workload takes the next step.
    Step,
    /// A command reaches the server.
    Arrive { message: usize },
    /// The reply reaches the client.
    Reply { message: usize },
    /// A GC pause starts.
    Pause { for_ms: u64 },
    /// It runs again.
    Resume,
}

/// A foreign client's state in the world.
pub(super) struct ForeignClient {
    spec: ForeignSpec,
    conn: ConnId,
    token: Bytes,
    step: Step,
    paused_until: Option<u64>,
    /// Since when it believes it holds the lock.
    holding_since: Option<u64>,
    /// Whether the release went by `EVAL` after a `NOSCRIPT`.
    evaled: bool,
}

/// An open grant of a foreign key: who, since when, until when it lives.
#[derive(Clone, Debug)]
pub(super) struct ForeignGrant {
    key: String,
    client: usize,
    from: u64,
    deadline: u64,
}

/// The foreign side of a world.
#[derive(Default)]
pub(super) struct Foreign {
    clients: Vec<ForeignClient>,
    open: Vec<ForeignGrant>,
    run: ForeignRun,
}

impl Foreign {
    /// What the run hands back.
    pub(super) fn finish(mut self, horizon: u64) -> ForeignRun {
        let keys = self.run.keys();
        for g in std::mem::take(&mut self.open) {
            self.run.grants.push(Interval {
                lock: key_index(&keys, &g.key),
                who: self.clients[g.client].spec.name.clone(),
                from: g.from,
                to: g.deadline.min(horizon),
            });
        }
        for c in &self.clients {
            if let Some(from) = c.holding_since {
                self.run.beliefs.push(Interval {
                    lock: key_index(&keys, &c.spec.key),
                    who: c.spec.name.clone(),
                    from,
                    to: horizon,
                });
            }
        }
        self.run
    }
}

fn key_index(keys: &[String], key: &str) -> u32 {
    keys.iter().position(|k| k == key).unwrap_or(0) as u32
}

fn bulk(s: &str) -> Bytes {
    Bytes::copy_from_slice(s.as_bytes())
}

impl<S: SimServer> World<S> {
    /// Adds foreign clients to the world, each with its own connection, before it runs.
    pub fn with_foreign(mut self, specs: &[ForeignSpec]) -> World<S> {
        for spec in specs {
            let i = self.foreign.clients.len();
            let conn = self.server.connect(NodeId(FIRST_NODE + i as u64));
            let draw = |seq| Seed(self.case.seed).blend(TOKENS, i as u64, seq);
            // redis-py's token is a uuid1's 32 hex digits: drawn from the seed here.
            let token = format!("{:016x}{:016x}", draw(0), draw(1));
            self.foreign.clients.push(ForeignClient {
                spec: spec.clone(),
                conn,
                token: Bytes::from(token),
                step: Step::NotStarted,
                paused_until: None,
                holding_since: None,
                evaled: false,
            });
            self.foreign.run.specs.push(spec.clone());
            self.foreign_at(spec.start, i, ForeignEv::Step);
            if let Some((at, for_ms)) = spec.pause {
                self.foreign_at(at, i, ForeignEv::Pause { for_ms });
            }
        }
        self
    }

    fn foreign_at(&mut self, at: u64, client: usize, ev: ForeignEv) {
        self.schedule(at, Ev::Foreign { client, ev });
    }

    pub(super) fn foreign_event(&mut self, client: usize, ev: ForeignEv) {
        let held = matches!(ev, ForeignEv::Step | ForeignEv::Reply { .. });
        if let Some(until) = self.foreign.clients[client].paused_until
            && held
            && self.now < until
        {
            // Paused: it neither acts nor hears until it resumes.
            self.foreign_at(until, client, ev);
            return;
        }
        let name = self.foreign.clients[client].spec.name.clone();
        match ev {
            ForeignEv::Step => self.foreign_step(client),
            ForeignEv::Arrive { message } => self.foreign_arrive(client, message),
            ForeignEv::Reply { message } => self.foreign_reply(client, message),
            ForeignEv::Pause { for_ms } => {
                let until = self.now + for_ms;
                self.foreign.clients[client].paused_until = Some(until);
                self.mark(&name, "pause", || format!("for {for_ms} ms"));
                self.foreign_at(until, client, ForeignEv::Resume);
            }
            ForeignEv::Resume => {
                self.foreign.clients[client].paused_until = None;
                self.mark(&name, "resume", String::new);
            }
        }
    }

    fn foreign_step(&mut self, client: usize) {
        let c = &self.foreign.clients[client];
        let (name, key) = (c.spec.name.clone(), c.spec.key.clone());
        match c.step {
            Step::NotStarted => {
                self.mark(&name, "wait", || key.clone());
                self.foreign.clients[client].step = Step::Acquiring;
                self.foreign_acquire(client);
            }
            Step::Acquiring => self.foreign_acquire(client),
            Step::Working { writes } => {
                self.foreign_write(client);
                if writes + 1 == 3 {
                    self.foreign_release(client);
                } else {
                    self.foreign_work_half(client, writes + 1);
                }
            }
            Step::Releasing | Step::Finished => {}
        }
    }

    fn foreign_acquire(&mut self, client: usize) {
        let c = &self.foreign.clients[client];
        let argv = vec![
            bulk("SET"),
            bulk(&c.spec.key),
            c.token.clone(),
            bulk("NX"),
            bulk("PX"),
            bulk(&c.spec.timeout.to_string()),
        ];
        self.foreign_send(client, argv, "acquire");
    }

    fn foreign_release(&mut self, client: usize) {
        let c = &mut self.foreign.clients[client];
        c.step = Step::Releasing;
        let (name, key, token) = (c.spec.name.clone(), c.spec.key.clone(), c.token.clone());
        if let Some(from) = c.holding_since.take() {
            let lock = key_index(&self.foreign.run.keys(), &key);
            self.foreign.run.beliefs.push(Interval {
                lock,
                who: name.clone(),
                from,
                to: self.now,
            });
        }
        self.mark(&name, "unlock", || key.clone());
        let argv = vec![
            bulk("EVALSHA"),
            bulk(RELEASE_SHA),
            bulk("1"),
            bulk(&key),
            token,
        ];
        self.foreign_send(client, argv, "release");
    }

    fn foreign_work_half(&mut self, client: usize, writes: u8) {
        let c = &mut self.foreign.clients[client];
        c.step = Step::Working { writes };
        let half = c.spec.work / 2;
        self.foreign_at(self.now + half, client, ForeignEv::Step);
    }

    /// A write to the key's unfenced resource, which accepts anything: it only records whose
    /// critical sections overlapped.
    fn foreign_write(&mut self, client: usize) {
        let c = &self.foreign.clients[client];
        let (name, key) = (c.spec.name.clone(), c.spec.key.clone());
        let others: Vec<String> = self
            .foreign
            .clients
            .iter()
            .enumerate()
            .filter(|(i, o)| *i != client && o.spec.key == key && o.holding_since.is_some())
            .map(|(_, o)| o.spec.name.clone())
            .collect();
        for other in others {
            self.foreign
                .run
                .overlaps
                .push((self.now, key.clone(), name.clone(), other));
        }
        self.mark(&name, "write", || format!("unfenced {key}"));
    }

    fn foreign_send(&mut self, client: usize, argv: Vec<Bytes>, purpose: &'static str) {
        let message = self.foreign.run.messages.len();
        let name = self.foreign.clients[client].spec.name.clone();
        let call = Call::Command(argv.clone());
        self.note(&name, || format!("sends {}", super::describe(&call)));
        self.foreign.run.messages.push(ForeignMessage {
            client,
            argv,
            purpose,
            sent: self.now,
            applied: None,
            reply: None,
            answered: None,
        });
        let at = self.now + self.case.latency.0;
        self.foreign_at(at, client, ForeignEv::Arrive { message });
    }

    fn foreign_arrive(&mut self, client: usize, message: usize) {
        let conn = self.foreign.clients[client].conn;
        let argv = self.foreign.run.messages[message].argv.clone();
        let call = Call::Command(argv);
        let now = self.server_clock();
        let result = self.server.call(conn, &call, now);
        let name = self.foreign.clients[client].spec.name.clone();
        self.note("server", || {
            format!(
                "applies {} from {name} -> {}",
                super::describe(&call),
                match &result {
                    Ok(r) => r.to_string(),
                    Err(e) => e.to_string(),
                }
            )
        });
        let m = &mut self.foreign.run.messages[message];
        m.applied = Some(self.now);
        m.reply = Some(result);
        self.foreign_observe(client, message);
        let at = self.now + self.case.latency.0;
        self.foreign_at(at, client, ForeignEv::Reply { message });
    }

    /// The key's life on the server after a command: a grant opens at an `OK` to `SET NX`, and
    /// closes when the release deleted it or when it has expired.
    fn foreign_observe(&mut self, client: usize, message: usize) {
        let m = &self.foreign.run.messages[message];
        let key = self.foreign.clients[client].spec.key.clone();
        let now = self.now;
        let keys = self.foreign.run.keys();
        let expired: Vec<ForeignGrant> = self
            .foreign
            .open
            .iter()
            .filter(|g| g.key == key && g.deadline <= now)
            .cloned()
            .collect();
        self.foreign
            .open
            .retain(|g| !(g.key == key && g.deadline <= now));
        for g in expired {
            let who = self.foreign.clients[g.client].spec.name.clone();
            self.foreign.run.grants.push(Interval {
                lock: key_index(&keys, &key),
                who: who.clone(),
                from: g.from,
                to: g.deadline,
            });
            self.marks.push(super::Mark {
                at: g.deadline,
                actor: "server".into(),
                what: "expire".into(),
                detail: format!("{key} of {who}"),
            });
        }
        match (m.purpose, &m.reply) {
            ("acquire", Some(Ok(Reply::Status(s)))) if s == "OK" => {
                let timeout = self.foreign.clients[client].spec.timeout;
                self.foreign.open.push(ForeignGrant {
                    key,
                    client,
                    from: now,
                    deadline: now + timeout,
                });
            }
            ("release", Some(Ok(Reply::Int(1)))) => {
                if let Some(i) = self
                    .foreign
                    .open
                    .iter()
                    .position(|g| g.key == key && g.client == client)
                {
                    let g = self.foreign.open.remove(i);
                    self.foreign.run.grants.push(Interval {
                        lock: key_index(&keys, &key),
                        who: self.foreign.clients[client].spec.name.clone(),
                        from: g.from,
                        to: now,
                    });
                }
            }
            _ => {}
        }
    }

    fn foreign_reply(&mut self, client: usize, message: usize) {
        self.foreign.run.messages[message].answered = Some(self.now);
        let m = &self.foreign.run.messages[message];
        let reply = m.reply.clone();
        let purpose = m.purpose;
        let c = &self.foreign.clients[client];
        let (name, key, sleep) = (c.spec.name.clone(), c.spec.key.clone(), c.spec.sleep);
        match (purpose, reply) {
            ("acquire", Some(Ok(Reply::Status(s)))) if s == "OK" => {
                let timeout = self.foreign.clients[client].spec.timeout;
                self.mark(&name, "acquire", || format!("{key} SET NX PX {timeout}"));
                self.foreign.clients[client].holding_since = Some(self.now);
                self.foreign_write(client);
                self.foreign_work_half(client, 1);
            }
            ("acquire", _) => {
                // Taken by another: a blocking acquire sleeps and tries again.
                self.foreign_at(self.now + sleep.max(1), client, ForeignEv::Step);
            }
            ("release", Some(Err(BackendError::Server(e))))
                if e.starts_with("NOSCRIPT") && !self.foreign.clients[client].evaled =>
            {
                // The script is not in the server's cache: send its body.
                self.foreign.clients[client].evaled = true;
                let c = &self.foreign.clients[client];
                let argv = vec![
                    bulk("EVAL"),
                    bulk(RELEASE_SCRIPT),
                    bulk("1"),
                    bulk(&c.spec.key),
                    c.token.clone(),
                ];
                self.foreign_send(client, argv, "release");
            }
            ("release", reply) => {
                self.foreign.clients[client].step = Step::Finished;
                match reply {
                    Some(Ok(Reply::Int(1))) => {
                        self.mark(&name, "released", || format!("{key}: the key is deleted"));
                    }
                    Some(Ok(Reply::Int(0))) => self.mark(&name, "unlock-failed", || {
                        format!("{key}: the release script replied 0, the token is not ours: LockNotOwnedError")
                    }),
                    other => self.mark(&name, "unlock-failed", || format!("{key}: {other:?}")),
                }
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::case::{Case, ClientSpec, Fault};
    use crate::engine_server::EngineServer;

    /// A foreign holder paused past its lease beside one of ours paused as long.
    fn both_paused() -> (Case, Vec<ForeignSpec>) {
        let mut case = Case::new(7, 40_000);
        let mut ours = ClientSpec::new("c", 0);
        ours.work = (16_000, 16_000);
        ours.fenced = false;
        case.clients.push(ours);
        case.faults.push(Fault::Pause {
            client: 0,
            at: 4_000,
            for_ms: 12_000,
        });
        let foreign = |name: &str, start, work, pause| ForeignSpec {
            name: name.into(),
            key: "F0".into(),
            start,
            timeout: 10_000,
            sleep: 1_000,
            work,
            pause,
        };
        let specs = vec![
            foreign("a", 0, 16_000, Some((4_000, 12_000))),
            foreign("b", 8_000, 8_000, None),
        ];
        (case, specs)
    }

    fn run(case: &Case, specs: &[ForeignSpec]) -> crate::Run {
        World::new(case, EngineServer::new(case.seed))
            .with_foreign(specs)
            .run()
    }

    #[test]
    fn the_same_case_with_a_foreign_lock_on_the_vm_gives_the_same_trace() {
        let (case, specs) = both_paused();
        let first = run(&case, &specs);
        let again = run(&case, &specs);
        assert_eq!(first.trace, again.trace);
        assert_eq!(first.trace_hash, again.trace_hash);
        assert_eq!(first.foreign, again.foreign);
        // The release went to the VM: EVALSHA of a body that is none of the lock's scripts.
        assert!(first.trace.iter().any(|l| l.contains("applies EVALSHA")));
    }

    #[test]
    fn the_paused_foreign_holder_loses_its_lock_and_its_late_release_replies_0() {
        let (case, specs) = both_paused();
        let run = run(&case, &specs);
        let f = &run.foreign;
        let grants: Vec<(&str, u64, u64)> = f
            .grants
            .iter()
            .map(|g| (g.who.as_str(), g.from, g.to))
            .collect();
        // a's key lives its 10 s lease; b takes the key after it expired, and deletes it.
        assert_eq!(grants[0].0, "a");
        assert_eq!(grants[0].2, grants[0].1 + 10_000);
        assert_eq!(grants[1].0, "b");
        assert!(grants[1].1 >= grants[0].2);
        let releases: Vec<&ForeignMessage> = f
            .messages
            .iter()
            .filter(|m| m.purpose == "release")
            .collect();
        // The first EVALSHA meets an empty script cache; EVAL runs the body.
        assert!(
            matches!(&releases[0].reply, Some(Err(BackendError::Server(e))) if e.starts_with("NOSCRIPT"))
        );
        let a_last = releases.iter().rev().find(|m| m.client == 0).unwrap();
        assert_eq!(a_last.reply, Some(Ok(Reply::Int(0))));
        let b_last = releases.iter().rev().find(|m| m.client == 1).unwrap();
        assert_eq!(b_last.reply, Some(Ok(Reply::Int(1))));
        // a wrote while b held the lock, and only then was told.
        let (at, ..) = f
            .overlaps
            .iter()
            .find(|(_, _, writer, other)| (writer.as_str(), other.as_str()) == ("a", "b"))
            .expect("a writes inside b's critical section");
        assert!(*at < a_last.applied.unwrap());
        // Ours, paused as long, kept its lock: the watchdog's lease outlived the pause.
        assert!(run.first("c", "lost").is_none());
        assert!(run.first("c", "released").is_some());
        assert!(run.violations.is_empty(), "{:?}", run.violations);
    }

    #[test]
    fn the_extend_script_adds_to_the_ttl_only_for_the_tokens_owner() {
        let mut server = EngineServer::new(1);
        let conn = server.connect(NodeId(0));
        let now = super::super::EPOCH_MS;
        let cmd = |words: &[&str]| Call::Command(words.iter().map(|w| bulk(w)).collect());
        let ok = server.call(conn, &cmd(&["SET", "k", "t", "NX", "PX", "1000"]), now);
        assert_eq!(ok, Ok(Reply::Status("OK".into())));
        let extend = |token: &str, ms: &str, replace: &str| {
            cmd(&["EVAL", EXTEND_SCRIPT, "1", "k", token, ms, replace])
        };
        assert_eq!(
            server.call(conn, &extend("t", "500", "0"), now),
            Ok(Reply::Int(1))
        );
        assert_eq!(
            server.call(conn, &cmd(&["PTTL", "k"]), now),
            Ok(Reply::Int(1_500))
        );
        assert_eq!(
            server.call(conn, &extend("t", "200", "1"), now),
            Ok(Reply::Int(1))
        );
        assert_eq!(
            server.call(conn, &cmd(&["PTTL", "k"]), now),
            Ok(Reply::Int(200))
        );
        assert_eq!(
            server.call(conn, &extend("x", "900", "1"), now),
            Ok(Reply::Int(0))
        );
        let release = |token: &str| cmd(&["EVAL", RELEASE_SCRIPT, "1", "k", token]);
        assert_eq!(server.call(conn, &release("x"), now), Ok(Reply::Int(0)));
        assert_eq!(server.call(conn, &release("t"), now), Ok(Reply::Int(1)));
        assert_eq!(server.call(conn, &release("t"), now), Ok(Reply::Int(0)));
        let load = cmd(&["SCRIPT", "LOAD", RELEASE_SCRIPT]);
        assert_eq!(
            server.call(conn, &load, now),
            Ok(Reply::Bulk(Bytes::from_static(RELEASE_SHA.as_bytes())))
        );
    }
}
