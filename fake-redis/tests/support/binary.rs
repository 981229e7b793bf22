//! The `fake-redis-server` binary as a child process, for the tests that run it whole.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub const BIN: &str = env!("CARGO_BIN_EXE_fake-redis-server");

/// Generous for a loaded 2-core machine.
pub const PATIENCE: Duration = Duration::from_secs(60);

/// Starts the binary on a free port; returns it and the port its log names.
pub fn start(args: &[&str]) -> (Child, u16) {
    let (child, port, _) = start_logging(args);
    (child, port)
}

/// [`start`], with the log lines before the one naming the port.
pub fn start_logging(args: &[&str]) -> (Child, u16, Vec<String>) {
    let mut command = Command::new(BIN);
    command.args(["--port", "0"]).args(args);
    spawn_logging(command)
}

/// [`start_logging`] under an open-file limit of `files` descriptors (soft and hard, as
/// `ulimit -n` sets them), through `sh`.
pub fn start_with_open_files(files: u32, args: &[&str]) -> (Child, u16, Vec<String>) {
    let mut command = Command::new("sh");
    command
        .arg("-c")
        .arg(format!("ulimit -n {files} && exec \"$0\" \"$@\""))
        .arg(BIN)
        .args(["--port", "0"])
        .args(args);
    spawn_logging(command)
}

fn spawn_logging(mut command: Command) -> (Child, u16, Vec<String>) {
    let mut child = command
        .env("RUST_LOG", "info")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the binary starts");
    let stderr = child.stderr.take().expect("piped stderr");
    let mut lines = BufReader::new(stderr).lines();
    let mut before = Vec::new();
    let port = loop {
        let line = lines
            .next()
            .expect("the server logs its address before anything else ends")
            .expect("readable log");
        if let Some(addr) = line.split("addr=").nth(1) {
            let port = addr.trim().rsplit(':').next().unwrap_or_default();
            break port.parse().expect("a port in the log line");
        }
        before.push(line);
    };
    // Keep draining the log so the server never blocks on a full pipe.
    std::thread::spawn(move || for _ in lines {});
    (child, port, before)
}

/// Waits up to `bound` for the binary to exit: its status, or `None` if it still runs.
pub fn exit_within(child: &mut Child, bound: Duration) -> Option<std::process::ExitStatus> {
    let deadline = Instant::now() + bound;
    loop {
        if let Some(status) = child.try_wait().expect("waitable") {
            return Some(status);
        }
        if Instant::now() >= deadline {
            return None;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Waits (up to [`PATIENCE`]) for the binary to exit.
pub fn wait_for_exit(child: &mut Child) -> std::process::ExitStatus {
    let deadline = Instant::now() + PATIENCE;
    loop {
        if let Some(status) = child.try_wait().expect("waitable") {
            return status;
        }
        assert!(Instant::now() < deadline, "the server did not stop");
        std::thread::sleep(Duration::from_millis(20));
    }
}
