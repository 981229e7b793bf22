//! Several connections to one server, and everything each receives, compared byte for byte.
//!
//! A scenario is a list of steps, each a command sent on one of the connections. After each
//! step every connection is synchronized: it sends `PING sync-<step>-<conn>` and reads up to
//! that marker's reply, so what the step made the server write to it (its reply, a monitor
//! line, an invalidation message, a pub/sub message) lands in its transcript in the order the
//! server wrote it. A step marked `quiet` is not synchronized (its connection may not answer
//! pings: `CLIENT REPLY OFF`, a paused client, a command queued in `MULTI`). The same scenario runs on a redis-server of the
//! test's own and on `fake-redis-server`, and the transcripts must be equal once the parts no
//! two servers share are masked: a monitor line's time and client address.

use super::raw::Real;

/// One step: a command on connection `conn`. An argument `$ID<n>` is replaced by connection
/// `n`'s id (`CLIENT ID`), which differs from one server to the other.
pub struct Step {
    pub conn: usize,
    pub argv: &'static [&'static str],
    /// Not followed by the synchronization of every connection; its connection is left out of
    /// the synchronizations until its next step that is followed by one.
    pub quiet: bool,
    /// The server closes the connection after this command (`QUIT`): what it writes until then
    /// ends the transcript.
    pub closes: bool,
}

/// A step after which the server closes the connection.
pub const fn close(conn: usize, argv: &'static [&'static str]) -> Step {
    Step {
        conn,
        argv,
        quiet: false,
        closes: true,
    }
}

/// The id of a scenario's first connection, on both servers.
const FIRST_ID: u64 = 200;

/// A step followed by a synchronization.
pub const fn call(conn: usize, argv: &'static [&'static str]) -> Step {
    Step {
        conn,
        argv,
        quiet: false,
        closes: false,
    }
}

/// A step without one.
pub const fn send(conn: usize, argv: &'static [&'static str]) -> Step {
    Step {
        conn,
        argv,
        quiet: true,
        closes: false,
    }
}

/// Runs `steps` on connections of the server at `port` speaking `protocols` (one each), and
/// returns each connection's transcript, masked.
pub fn run(port: u16, protocols: &[u8], steps: &[Step]) -> Vec<String> {
    // Both servers number connections one by one: burn ids up to the same first one, so ids in
    // replies (`CLIENT GETREDIR`, a broken redirect) are the same on both.
    loop {
        let mut probe = Real::connect(port);
        let reply = String::from_utf8(probe.call(&[b"CLIENT", b"ID"])).unwrap();
        let id: u64 = reply.trim_start_matches(':').trim_end().parse().unwrap();
        assert!(
            id < FIRST_ID,
            "the server has numbered {id} connections already"
        );
        if id == FIRST_ID - 1 {
            break;
        }
    }
    // Each connection makes a round trip before the next opens: the fake numbers a connection
    // when its task first runs, which under load need not be the order of the connects.
    let mut conns: Vec<Real> = protocols
        .iter()
        .map(|_| {
            let mut conn = Real::connect(port);
            conn.call(&[b"PING"]);
            conn
        })
        .collect();
    for (conn, &protocol) in conns.iter_mut().zip(protocols) {
        if protocol == 3 {
            conn.call(&[b"HELLO", b"3"]);
        }
    }
    let ids: Vec<String> = conns
        .iter_mut()
        .map(|c| {
            let reply = String::from_utf8(c.call(&[b"CLIENT", b"ID"])).unwrap();
            reply.trim_start_matches(':').trim_end().to_owned()
        })
        .collect();
    let mut transcripts = vec![Vec::new(); conns.len()];
    let mut pending = vec![false; conns.len()];
    for (i, step) in steps.iter().enumerate() {
        let argv: Vec<Vec<u8>> = step
            .argv
            .iter()
            .map(|a| match a.strip_prefix("$ID") {
                Some(n) => ids[n.parse::<usize>().unwrap()].clone().into_bytes(),
                None => a.as_bytes().to_vec(),
            })
            .collect();
        let argv: Vec<&[u8]> = argv.iter().map(Vec::as_slice).collect();
        conns[step.conn].send(&argv);
        if step.closes {
            let rest = conns[step.conn].read_to_close();
            transcripts[step.conn].extend_from_slice(&rest);
            transcripts[step.conn].extend_from_slice(b"<closed>");
            pending[step.conn] = true;
        } else {
            pending[step.conn] = step.quiet;
        }
        if step.quiet {
            continue;
        }
        // The step's own connection first: once its reply is in, the server has run the step,
        // so what the step sent the others is ahead of their markers.
        let order = std::iter::once(step.conn).chain((0..conns.len()).filter(|&j| j != step.conn));
        for j in order {
            if pending[j] {
                continue;
            }
            let conn = &mut conns[j];
            let marker = format!("sync-{i}-{j}");
            conn.send(&[b"PING", marker.as_bytes()]);
            let mut seen = conn.read_until(format!("{marker}\r\n").as_bytes());
            seen.extend_from_slice(marker.as_bytes());
            transcripts[j].extend_from_slice(&seen);
            transcripts[j].extend_from_slice(b"\r\n");
        }
    }
    transcripts.iter().map(|t| mask(t)).collect()
}

/// The transcript as text, each monitor line's time and client address masked
/// (`+<time> [0 <addr>] "GET" "k"`, `lua` kept).
pub fn mask(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    text.split("\r\n")
        .map(|line| {
            let Some(rest) = line.strip_prefix('+') else {
                return line.to_owned();
            };
            let Some((time, rest)) = rest.split_once(" [") else {
                return line.to_owned();
            };
            let Some((place, args)) = rest.split_once("] ") else {
                return line.to_owned();
            };
            let Some((db, addr)) = place.split_once(' ') else {
                return line.to_owned();
            };
            let is_time = time.len() > 7
                && time.as_bytes()[time.len() - 7] == b'.'
                && time.bytes().all(|b| b.is_ascii_digit() || b == b'.');
            if !is_time {
                return line.to_owned();
            }
            let addr = if addr == "lua" { "lua" } else { "<addr>" };
            format!("+<time> [{db} {addr}] {args}")
        })
        .collect::<Vec<_>>()
        .join("\r\n")
}

/// Runs `steps` on both servers and fails with each connection whose transcript differs.
#[track_caller]
pub fn assert_same(fake_port: u16, protocols: &[u8], steps: &[Step]) {
    let server = super::OwnServer::start();
    let want = run(server.port, protocols, steps);
    let got = run(fake_port, protocols, steps);
    for (i, (w, g)) in want.iter().zip(&got).enumerate() {
        assert_eq!(
            g, w,
            "connection {i} (RESP{}): the fake's transcript (left) differs from Redis's",
            protocols[i]
        );
    }
}
