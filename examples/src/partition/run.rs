//! One run: the network, the servers, the resource and the clients started; the nemesis's
//! schedule played against them; everything torn down; the history merged and checked.
//!
//! The orchestrator is this process; every other part is a process of its own in a namespace of
//! its own (this binary's `proxy`, `resource` and `client` subcommands, and the Redis servers).
//! Teardown runs on every way out of [`run`]: a guard calls `net::teardown` on drop, and the
//! binary's interrupt handler calls it for the run's prefix.

use super::checker::{Findings, check};
use super::client::Mode;
use super::history::{Kind, Record, Recorder, parse_all, unix_ms};
use super::nemesis::{FaultKind, Step, schedule};
use super::net::{self, Net, Ns};
use super::servers::{Servers, Topology, spawn_in};
use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};
use std::process::Child;
use std::time::Duration;

/// What one run is asked to do.
#[derive(Clone, Debug)]
pub struct Settings {
    /// The seed of the schedule and of the clients' work times.
    pub seed: u64,
    /// Which servers.
    pub topology: Topology,
    /// The modes run side by side, each on its own lock with its own clients.
    pub modes: Vec<Mode>,
    /// Clients per mode.
    pub clients: usize,
    /// How long the workload runs, ms.
    pub duration_ms: u64,
    /// The fault kinds drawn from (all if empty).
    pub faults: Vec<FaultKind>,
    /// The prefix of every namespace and link of the run.
    pub prefix: String,
    /// Where the run's files go (histories, logs, pictures).
    pub dir: PathBuf,
    /// This binary, started in the namespaces for the proxy, resource and client roles.
    pub exe: PathBuf,
}

/// What a run found.
#[derive(Debug)]
pub struct Outcome {
    /// The seed.
    pub seed: u64,
    /// The schedule played.
    pub steps: Vec<Step>,
    /// Per mode, the checker's findings.
    pub findings: BTreeMap<Mode, Findings>,
    /// The merged history.
    pub history: Vec<Record>,
}

/// Tears the run down when dropped, whatever the way out.
struct Teardown(String);

impl Drop for Teardown {
    fn drop(&mut self) {
        if let Err(e) = net::teardown(&self.0) {
            eprintln!("teardown of {}: {e}", self.0);
        }
    }
}

/// A client process and what it is.
struct ClientProc {
    index: usize,
    ns: Ns,
    process: Child,
}

/// Everything started.
struct World {
    servers: Servers,
    clients: Vec<ClientProc>,
    resource: Child,
    dir: PathBuf,
    nemesis: Recorder,
}

/// Runs one run to its end and checks it.
pub async fn run(s: &Settings) -> io::Result<Outcome> {
    let _teardown = Teardown(s.prefix.clone());
    std::fs::create_dir_all(&s.dir)?;
    let steps = schedule(s.seed, s.duration_ms, &s.faults, s.clients);
    let mut net = Net::create(&s.prefix)?;
    let epoch_ms = unix_ms();
    let mut world = start(s, &mut net, epoch_ms)?;
    let start_ms = super::history::since_epoch_us(epoch_ms) / 1000 + 500;
    play(&mut world, &steps, start_ms, epoch_ms).await;
    let stop_ms = start_ms + s.duration_ms;
    wait_for_clients(&mut world, epoch_ms, stop_ms).await;
    stop_all(&mut world);
    let history = read_history(&s.dir)?;
    std::fs::write(
        s.dir.join("history.tsv"),
        history.iter().map(|r| format!("{r}\n")).collect::<String>(),
    )?;
    let by_lock = check(&history);
    let findings = s
        .modes
        .iter()
        .map(|m| (*m, by_lock.get(&m.lock()).cloned().unwrap_or_default()))
        .collect();
    Ok(Outcome {
        seed: s.seed,
        steps,
        findings,
        history,
    })
}

fn start(s: &Settings, net: &mut Net, epoch_ms: u64) -> io::Result<World> {
    let pids = s.dir.join("pids");
    let note_pid = |child: &Child| {
        use std::io::Write;
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&pids);
        let _ = file.and_then(|mut f| writeln!(f, "{}", child.id()));
    };
    let exe = s.exe.to_string_lossy().into_owned();
    let proxy = |ns: &Ns, i: usize| -> io::Result<Child> {
        let control = s.dir.join(format!("r{i}.fault"));
        let args = [
            "proxy".to_owned(),
            format!("--listen={}:{}", ns.ip, super::servers::PORT),
            format!("--upstream=127.0.0.1:{}", super::servers::INNER_PORT),
            format!("--control={}", control.display()),
            format!("--seed={}", s.seed ^ i as u64),
        ];
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let child = spawn_in(ns, &exe, &args, &s.dir.join(format!("proxy{i}.log")))?;
        note_pid(&child);
        Ok(child)
    };
    let servers = Servers::start(s.topology, net, &s.dir, &proxy)?;
    for server in &servers.redis {
        server
            .pid()
            .into_iter()
            .for_each(|p| note_pid_raw(&pids, p));
    }
    for (_, child) in &servers.sentinels {
        note_pid(child);
    }
    let resource_ns = net.add("res", 250)?;
    let resource_addr = format!("{}:7000", resource_ns.ip);
    let args = [
        "resource".to_owned(),
        format!("--listen={resource_addr}"),
        format!("--history={}", s.dir.join("hist-resource.tsv").display()),
        format!("--epoch-ms={epoch_ms}"),
    ];
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let resource = spawn_in(&resource_ns, &exe, &args, &s.dir.join("resource.log"))?;
    note_pid(&resource);
    let clients = start_clients(s, net, &servers, &resource_addr, epoch_ms)?;
    clients.iter().for_each(|c| note_pid(&c.process));
    let nemesis = Recorder::open(&s.dir.join("hist-nemesis.tsv"), "nemesis", epoch_ms)?;
    Ok(World {
        servers,
        clients,
        resource,
        dir: s.dir.clone(),
        nemesis,
    })
}

fn note_pid_raw(pids: &Path, pid: u32) {
    use std::io::Write;
    let file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(pids);
    let _ = file.and_then(|mut f| writeln!(f, "{pid}"));
}

fn start_clients(
    s: &Settings,
    net: &mut Net,
    servers: &Servers,
    resource: &str,
    epoch_ms: u64,
) -> io::Result<Vec<ClientProc>> {
    let exe = s.exe.to_string_lossy().into_owned();
    let urls = servers.client_urls().join(",");
    // The workload starts half a second from now, once the clients have connected.
    let stop_ms = super::history::since_epoch_us(epoch_ms) / 1000 + 500 + s.duration_ms;
    let mut clients = Vec::new();
    for (m, mode) in s.modes.iter().enumerate() {
        for index in 0..s.clients {
            let name = format!("{}-{index}", mode.name());
            // At most 4 modes of at most 9 clients (the command line's bounds): 100..=139.
            let host = u8::try_from(100 + m * 10 + index.min(9)).unwrap_or(u8::MAX);
            let ns = net.add(&format!("c{m}{index}"), host)?;
            let args = [
                "client".to_owned(),
                format!("--name={name}"),
                format!("--mode={}", mode.name()),
                format!("--topology={}", s.topology.name()),
                format!("--urls={urls}"),
                format!("--resource={resource}"),
                format!("--epoch-ms={epoch_ms}"),
                format!("--stop-ms={stop_ms}"),
                format!(
                    "--seed={}",
                    s.seed.wrapping_mul(31).wrapping_add(host as u64)
                ),
                format!(
                    "--history={}",
                    s.dir.join(format!("hist-{name}.tsv")).display()
                ),
            ];
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            let log = s.dir.join(format!("{name}.log"));
            let process = spawn_in(&ns, &exe, &args, &log)?;
            clients.push(ClientProc { index, ns, process });
        }
    }
    Ok(clients)
}

async fn sleep_until(epoch_ms: u64, at_ms: u64) {
    let now = super::history::since_epoch_us(epoch_ms) / 1000;
    if at_ms > now {
        tokio::time::sleep(Duration::from_millis(at_ms - now)).await;
    }
}

/// Plays the schedule: each fault applied at its time and undone at its heal.
async fn play(world: &mut World, steps: &[Step], start_ms: u64, epoch_ms: u64) {
    for step in steps {
        sleep_until(epoch_ms, start_ms + step.at_ms).await;
        let (undo, target) = apply(world, step);
        let detail = format!("{step}{target}");
        world.nemesis.record(Kind::Fault, "", 0, None, &detail);
        sleep_until(epoch_ms, start_ms + step.heal_ms()).await;
        let healed = undo_fault(world, undo);
        world
            .nemesis
            .record(Kind::Heal, "", 0, None, &format!("{step}{healed}"));
    }
}

/// What undoes a fault.
enum Undo {
    Heal(Vec<Ns>),
    Resume(Vec<u32>),
    Restart(usize),
    Control(PathBuf),
    Nothing,
}

/// Applies `step`; what undoes it, and a note on what it struck.
fn apply(world: &mut World, step: &Step) -> (Undo, String) {
    let Some(primary) = world.servers.primary() else {
        return (Undo::Nothing, " (skipped: no primary answered)".to_owned());
    };
    let on = format!(" on r{primary}");
    let result = match step.kind {
        FaultKind::PrimaryReplicas => primary_from_replicas(world, primary),
        FaultKind::Split => split(world, primary, step.target),
        FaultKind::ClientPrimary => client_from_primary(world, primary, step.target),
        FaultKind::PauseServer => signal(world.servers.redis[primary].pid(), "-STOP"),
        FaultKind::PauseClient => {
            let pids = targets(world, step.target)
                .map(|c| c.process.id())
                .collect();
            signal_all(pids, "-STOP")
        }
        FaultKind::Kill => {
            world.servers.redis[primary].kill();
            Ok(Undo::Restart(primary))
        }
        FaultKind::Latency | FaultKind::Loss => proxy_fault(world, primary, step),
    };
    match result {
        Ok(undo) => (undo, on),
        Err(e) => (Undo::Nothing, format!("{on} (failed: {e})")),
    }
}

fn targets(world: &World, index: usize) -> impl Iterator<Item = &ClientProc> {
    world.clients.iter().filter(move |c| c.index == index)
}

fn primary_from_replicas(world: &World, primary: usize) -> io::Result<Undo> {
    let servers = &world.servers;
    let left = vec![&servers.redis[primary].ns];
    let mut right: Vec<&Ns> = servers
        .replicas_of(primary)
        .into_iter()
        .map(|r| &servers.redis[r].ns)
        .collect();
    right.extend(servers.sentinels.iter().map(|(ns, _)| ns));
    net::partition(&left, &right)?;
    Ok(Undo::Heal(left.into_iter().chain(right).cloned().collect()))
}

/// The minority: the primary, one more server (sentinel 0, or on a cluster a primary of another
/// shard) and client `index` of each mode; the majority: everyone else but the resource.
fn split(world: &World, primary: usize, index: usize) -> io::Result<Undo> {
    let servers = &world.servers;
    let replicas = servers.replicas_of(primary);
    let mut minority: Vec<&Ns> = vec![&servers.redis[primary].ns];
    let mut majority: Vec<&Ns> = Vec::new();
    let extra = match servers.topology {
        Topology::Sentinel => None,
        Topology::Cluster => {
            (0..servers.redis.len()).find(|i| *i != primary && !replicas.contains(i))
        }
    };
    for (i, server) in servers.redis.iter().enumerate() {
        if i == primary {
            continue;
        }
        if Some(i) == extra {
            minority.push(&server.ns)
        } else {
            majority.push(&server.ns)
        }
    }
    for (i, (ns, _)) in servers.sentinels.iter().enumerate() {
        if i == 0 {
            minority.push(ns)
        } else {
            majority.push(ns)
        }
    }
    for c in &world.clients {
        if c.index == index {
            minority.push(&c.ns)
        } else {
            majority.push(&c.ns)
        }
    }
    net::partition(&minority, &majority)?;
    Ok(Undo::Heal(
        minority.into_iter().chain(majority).cloned().collect(),
    ))
}

fn client_from_primary(world: &World, primary: usize, index: usize) -> io::Result<Undo> {
    let left = vec![&world.servers.redis[primary].ns];
    let right: Vec<&Ns> = targets(world, index).map(|c| &c.ns).collect();
    net::partition(&left, &right)?;
    Ok(Undo::Heal(left.into_iter().chain(right).cloned().collect()))
}

fn signal(pid: Option<u32>, sig: &str) -> io::Result<Undo> {
    signal_all(pid.into_iter().collect(), sig)
}

fn signal_all(pids: Vec<u32>, sig: &str) -> io::Result<Undo> {
    for pid in &pids {
        net::run("kill", &[sig, &pid.to_string()])?;
    }
    Ok(Undo::Resume(pids))
}

fn proxy_fault(world: &World, primary: usize, step: &Step) -> io::Result<Undo> {
    let control = world.dir.join(format!("r{primary}.fault"));
    let text = match step.kind {
        FaultKind::Latency => format!("{} 0", step.amount),
        _ => format!("0 {}", step.amount),
    };
    std::fs::write(&control, text)?;
    Ok(Undo::Control(control))
}

/// Undoes a fault; a note if it could not be.
fn undo_fault(world: &mut World, undo: Undo) -> String {
    let result = match undo {
        Undo::Heal(namespaces) => namespaces.iter().try_for_each(net::heal),
        Undo::Resume(pids) => pids
            .iter()
            .try_for_each(|p| net::run("kill", &["-CONT", &p.to_string()]).map(drop)),
        Undo::Restart(i) => {
            let log = world.servers.log(i);
            let server = &mut world.servers.redis[i];
            let started = server.start(&log);
            if let Some(pid) = server.pid() {
                note_pid_raw(&world.dir.join("pids"), pid);
            }
            started
        }
        Undo::Control(path) => std::fs::write(path, "0 0"),
        Undo::Nothing => Ok(()),
    };
    match result {
        Ok(()) => String::new(),
        Err(e) => format!(" (heal failed: {e})"),
    }
}

/// Waits for the clients to finish their last hold (at most 5 s past the stop time).
async fn wait_for_clients(world: &mut World, epoch_ms: u64, stop_ms: u64) {
    sleep_until(epoch_ms, stop_ms).await;
    for _ in 0..50 {
        let running = world
            .clients
            .iter_mut()
            .any(|c| matches!(c.process.try_wait(), Ok(None)));
        if !running {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Kills every process the run started (the teardown kills whatever is left in the namespaces).
fn stop_all(world: &mut World) {
    let mut children: Vec<&mut Child> = world.clients.iter_mut().map(|c| &mut c.process).collect();
    children.push(&mut world.resource);
    children.extend(world.servers.proxies.iter_mut());
    children.extend(world.servers.sentinels.iter_mut().map(|(_, c)| c));
    for child in children {
        let _ = net::run("kill", &["-CONT", &child.id().to_string()]);
        let _ = child.kill();
        let _ = child.wait();
    }
    for server in &mut world.servers.redis {
        if let Some(pid) = server.pid() {
            let _ = net::run("kill", &["-CONT", &pid.to_string()]);
        }
        server.kill();
    }
}

/// Every history file of the run, merged in time order.
fn read_history(dir: &Path) -> io::Result<Vec<Record>> {
    let mut text = String::new();
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if name.starts_with("hist-") && name.ends_with(".tsv") {
            text.push_str(&std::fs::read_to_string(&path)?);
            text.push('\n');
        }
    }
    Ok(parse_all(&text))
}
