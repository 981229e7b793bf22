//! The resource the lock protects: a server that takes writes, refuses a fencing token lower
//! than the highest it has accepted for that lock, and records every write, accepted or not,
//! with its token and its writer.
//!
//! The protocol is one line each way: `WRITE <lock> <writer> <hold> <seq> <token|->` is answered
//! `OK` or `STALE <highest>`. A write without a token (the unfenced modes) is always accepted.
//! The decision and its record are made under one mutex, so the history's order is the order the
//! resource decided in.

use super::history::{Kind, Recorder};
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};

/// One write, as the protocol carries it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Write {
    /// The lock it was made under.
    pub lock: String,
    /// The client.
    pub writer: String,
    /// The client's hold number.
    pub hold: u64,
    /// The write's number within the hold.
    pub seq: u64,
    /// Its fencing token, if fenced.
    pub token: Option<u64>,
}

impl Write {
    /// The request line (without its newline).
    pub fn line(&self) -> String {
        let token = self.token.map_or("-".to_owned(), |t| t.to_string());
        format!(
            "WRITE {} {} {} {} {token}",
            self.lock, self.writer, self.hold, self.seq
        )
    }

    /// Parses a request line.
    pub fn parse(line: &str) -> Option<Write> {
        let mut words = line.split_whitespace();
        if words.next()? != "WRITE" {
            return None;
        }
        let lock = words.next()?.to_owned();
        let writer = words.next()?.to_owned();
        let hold = words.next()?.parse().ok()?;
        let seq = words.next()?.parse().ok()?;
        let token = match words.next()? {
            "-" => None,
            t => Some(t.parse().ok()?),
        };
        Some(Write {
            lock,
            writer,
            hold,
            seq,
            token,
        })
    }
}

/// The highest accepted token per lock.
#[derive(Debug, Default)]
pub struct Fence {
    highest: HashMap<String, u64>,
}

impl Fence {
    /// Accepts the write (`Ok`) or refuses it with the highest token (`Err`).
    pub fn decide(&mut self, write: &Write) -> Result<(), u64> {
        let Some(token) = write.token else {
            return Ok(());
        };
        let highest = self.highest.entry(write.lock.clone()).or_insert(0);
        if token < *highest {
            return Err(*highest);
        }
        *highest = token;
        Ok(())
    }
}

/// Serves writes on `listen` until the process ends.
pub async fn serve(listen: SocketAddr, recorder: Recorder) -> std::io::Result<()> {
    let listener = TcpListener::bind(listen).await?;
    let state = Arc::new(Mutex::new((Fence::default(), recorder)));
    loop {
        let (stream, _) = listener.accept().await?;
        tokio::spawn(connection(stream, Arc::clone(&state)));
    }
}

async fn connection(stream: TcpStream, state: Arc<Mutex<(Fence, Recorder)>>) {
    let (read, mut write) = stream.into_split();
    let mut lines = BufReader::new(read).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        let reply = match Write::parse(&line) {
            Some(w) => decide_and_record(&state, &w),
            None => "ERR unknown request".to_owned(),
        };
        if write
            .write_all(format!("{reply}\n").as_bytes())
            .await
            .is_err()
        {
            break;
        }
    }
}

fn decide_and_record(state: &Mutex<(Fence, Recorder)>, w: &Write) -> String {
    let mut guard = match state.lock() {
        Ok(guard) => guard,
        Err(poisoned) => poisoned.into_inner(),
    };
    let (fence, recorder) = &mut *guard;
    let detail = format!("seq {}", w.seq);
    match fence.decide(w) {
        Ok(()) => {
            recorder.record_as(&w.writer, Kind::Accepted, &w.lock, w.hold, w.token, &detail);
            "OK".to_owned()
        }
        Err(highest) => {
            let detail = format!("{detail}, highest {highest}");
            recorder.record_as(&w.writer, Kind::Rejected, &w.lock, w.hold, w.token, &detail);
            format!("STALE {highest}")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(lock: &str, token: Option<u64>) -> Write {
        Write {
            lock: lock.into(),
            writer: "w".into(),
            hold: 1,
            seq: 0,
            token,
        }
    }

    #[test]
    fn a_lower_token_is_refused_per_lock_and_an_equal_one_accepted() {
        let mut fence = Fence::default();
        assert_eq!(fence.decide(&write("a", Some(5))), Ok(()));
        assert_eq!(fence.decide(&write("a", Some(5))), Ok(()));
        assert_eq!(fence.decide(&write("a", Some(4))), Err(5));
        assert_eq!(fence.decide(&write("b", Some(4))), Ok(()));
        assert_eq!(fence.decide(&write("a", None)), Ok(()));
    }

    #[test]
    fn a_request_line_reads_back() {
        let w = write("{pt}fenced", Some(17));
        assert_eq!(Write::parse(&w.line()), Some(w));
        assert_eq!(Write::parse("WRITE x"), None);
    }
}
