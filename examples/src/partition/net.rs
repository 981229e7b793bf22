//! The run's network: one namespace per process, each on a veth pair to one bridge, and the
//! kernel rules that partition them.
//!
//! Every name the run makes starts with its prefix (namespaces `<prefix>-<node>`, links
//! `<prefix>v<n>` and the bridge `<prefix>br`), so two runs never collide and [`teardown`] finds
//! everything of one run from the prefix alone, even from another process after a crash: it kills
//! every process in the run's namespaces, deletes the namespaces (which takes their veth ends with
//! them) and then any link left with the prefix.
//!
//! A partition is a set of nftables drop rules inside the namespaces on both sides (input and
//! output, by address), so established TCP connections stall as they would on a cut cable; a heal
//! flushes them.

use std::io;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};

/// Set once the run is being torn down (an interrupt): no namespace or process is made after it,
/// so a teardown racing the start-up cannot miss one.
static STOPPING: AtomicBool = AtomicBool::new(false);

/// Stops every later [`Net::add`] and process start of this process.
pub fn stop_making() {
    STOPPING.store(true, Ordering::SeqCst);
}

/// An error if the run is being torn down.
pub fn check_not_stopping() -> io::Result<()> {
    if STOPPING.load(Ordering::SeqCst) {
        return Err(io::Error::other("the run is being torn down"));
    }
    Ok(())
}

/// The subnet every run uses: each run has its own bridge and no address in the host's
/// namespace, so runs do not see each other's.
pub const SUBNET: &str = "10.77.0";

/// Runs `program` with `args`, failing with its stderr if it exits non-zero.
pub fn run(program: &str, args: &[&str]) -> io::Result<String> {
    let out = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .output()?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Err(io::Error::other(format!(
            "{program} {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        )))
    }
}

/// Runs `program` with `args` and feeds it `input` on stdin.
fn run_with_input(program: &str, args: &[&str], input: &str) -> io::Result<()> {
    use std::io::Write;
    let mut child = Command::new(program)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()?;
    if let Some(mut stdin) = child.stdin.take() {
        stdin.write_all(input.as_bytes())?;
    }
    let out = child.wait_with_output()?;
    if out.status.success() {
        Ok(())
    } else {
        Err(io::Error::other(format!(
            "{program} {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        )))
    }
}

/// A namespace of the run, with its address on the bridge.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ns {
    /// The namespace's name (`<prefix>-<node>`).
    pub name: String,
    /// Its address on the bridge.
    pub ip: String,
}

/// The run's bridge and namespaces.
#[derive(Debug)]
pub struct Net {
    prefix: String,
    bridge: String,
    links: usize,
}

impl Net {
    /// Makes the run's bridge.
    pub fn create(prefix: &str) -> io::Result<Net> {
        check_not_stopping()?;
        let bridge = format!("{prefix}br");
        run("ip", &["link", "add", &bridge, "type", "bridge"])?;
        run("ip", &["link", "set", &bridge, "up"])?;
        Ok(Net {
            prefix: prefix.to_owned(),
            bridge,
            links: 0,
        })
    }

    /// Makes the namespace `<prefix>-<node>` with address `SUBNET.<host>` on the bridge, its
    /// loopback up, and an empty nftables table for partitions.
    pub fn add(&mut self, node: &str, host: u8) -> io::Result<Ns> {
        check_not_stopping()?;
        let name = format!("{}-{node}", self.prefix);
        let ip = format!("{SUBNET}.{host}");
        self.links += 1;
        let outer = format!("{}v{}", self.prefix, self.links);
        let inner = format!("{}i{}", self.prefix, self.links);
        run("ip", &["netns", "add", &name])?;
        run(
            "ip",
            &[
                "link", "add", &outer, "type", "veth", "peer", "name", &inner,
            ],
        )?;
        run("ip", &["link", "set", &inner, "netns", &name])?;
        run("ip", &["link", "set", &outer, "master", &self.bridge])?;
        run("ip", &["link", "set", &outer, "up"])?;
        let cidr = format!("{ip}/24");
        run("ip", &["-n", &name, "addr", "add", &cidr, "dev", &inner])?;
        run("ip", &["-n", &name, "link", "set", &inner, "up"])?;
        run("ip", &["-n", &name, "link", "set", "lo", "up"])?;
        let table = "add table inet pt\n\
             add chain inet pt in { type filter hook input priority 0; }\n\
             add chain inet pt out { type filter hook output priority 0; }\n";
        run_with_input("ip", &["netns", "exec", &name, "nft", "-f", "-"], table)?;
        Ok(Ns { name, ip })
    }
}

/// Drops every packet between `ns` and the addresses `peers`, both ways, inside `ns`.
pub fn block(ns: &Ns, peers: &[String]) -> io::Result<()> {
    if peers.is_empty() {
        return Ok(());
    }
    let set = peers.join(", ");
    let rules = format!(
        "add rule inet pt in ip saddr {{ {set} }} drop\nadd rule inet pt out ip daddr {{ {set} }} drop\n"
    );
    run_with_input("ip", &["netns", "exec", &ns.name, "nft", "-f", "-"], &rules)
}

/// Cuts the two sides apart: rules on both, so neither side's packets reach the other.
pub fn partition(left: &[&Ns], right: &[&Ns]) -> io::Result<()> {
    let ips = |side: &[&Ns]| side.iter().map(|n| n.ip.clone()).collect::<Vec<_>>();
    let (left_ips, right_ips) = (ips(left), ips(right));
    for ns in left {
        block(ns, &right_ips)?;
    }
    for ns in right {
        block(ns, &left_ips)?;
    }
    Ok(())
}

/// Removes every partition rule in `ns`.
pub fn heal(ns: &Ns) -> io::Result<()> {
    run(
        "ip",
        &[
            "netns", "exec", &ns.name, "nft", "flush", "table", "inet", "pt",
        ],
    )
    .map(drop)
}

/// The namespaces whose names start with `<prefix>-`.
pub fn namespaces(prefix: &str) -> Vec<String> {
    let listing = run("ip", &["netns", "list"]).unwrap_or_default();
    let own = format!("{prefix}-");
    listing
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|name| name.starts_with(&own))
        .map(str::to_owned)
        .collect()
}

/// The links whose names start with `prefix`.
pub fn links(prefix: &str) -> Vec<String> {
    let listing = run("ip", &["-o", "link", "show"]).unwrap_or_default();
    listing
        .lines()
        .filter_map(|l| l.split(": ").nth(1))
        .map(|name| name.split('@').next().unwrap_or(name))
        .filter(|name| name.starts_with(prefix))
        .map(str::to_owned)
        .collect()
}

/// Removes everything of the run `prefix`: kills every process in its namespaces (stopped ones
/// too: SIGKILL ends a stopped process), deletes the namespaces and any link left. Best effort on
/// each item, so one failure does not leave the rest; the error lists what failed.
pub fn teardown(prefix: &str) -> io::Result<()> {
    let mut failures = Vec::new();
    for ns in namespaces(prefix) {
        let pids = run("ip", &["netns", "pids", &ns]).unwrap_or_default();
        for pid in pids.split_whitespace() {
            let _ = run("kill", &["-KILL", pid]);
        }
        if let Err(e) = run("ip", &["netns", "del", &ns]) {
            failures.push(e.to_string());
        }
    }
    for link in links(prefix) {
        if let Err(e) = run("ip", &["link", "del", &link]) {
            // A veth end goes with its peer's namespace: gone already is fine.
            if links(prefix).contains(&link) {
                failures.push(e.to_string());
            }
        }
    }
    if failures.is_empty() {
        Ok(())
    } else {
        Err(io::Error::other(failures.join("; ")))
    }
}
