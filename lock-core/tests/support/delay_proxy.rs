//! A TCP proxy that delays every chunk by a fixed time, both ways, in order: a long, steady
//! network between a lock client and a real `redis-server`, for the tests that need one.
//!
//! Each direction of each connection is a reader that stamps every chunk it reads with its due
//! time (read time + delay) and a writer that sleeps until that time and writes it whole, so
//! order is kept and the delay is the same for every byte however the traffic is chunked. A
//! round trip through it takes twice the delay. Every task stops when the proxy is dropped.

#![allow(dead_code)]

use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio::task::JoinSet;
use tokio::time::Instant;

/// A proxy from a local port to `127.0.0.1:<upstream>`, delaying each direction by `delay`.
pub struct DelayProxy {
    port: u16,
    tasks: tokio::task::AbortHandle,
}

impl DelayProxy {
    /// Starts it on a free loopback port.
    pub async fn start(upstream: u16, delay: Duration) -> DelayProxy {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind the proxy");
        let port = listener.local_addr().expect("its address").port();
        let tasks = tokio::spawn(accept(listener, upstream, delay)).abort_handle();
        DelayProxy { port, tasks }
    }

    /// Its URL.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }
}

impl Drop for DelayProxy {
    fn drop(&mut self) {
        self.tasks.abort();
    }
}

/// Accepts connections and pipes each to the upstream; the pipes are aborted with this task.
async fn accept(listener: TcpListener, upstream: u16, delay: Duration) {
    let mut pipes = JoinSet::new();
    loop {
        let Ok((client, _)) = listener.accept().await else {
            continue;
        };
        let Ok(server) = TcpStream::connect(("127.0.0.1", upstream)).await else {
            continue;
        };
        let _ = client.set_nodelay(true);
        let _ = server.set_nodelay(true);
        let (client_read, client_write) = client.into_split();
        let (server_read, server_write) = server.into_split();
        pipes.spawn(pipe(client_read, server_write, delay));
        pipes.spawn(pipe(server_read, client_write, delay));
        // Reap the finished ones so the set does not grow.
        while pipes.try_join_next().is_some() {}
    }
}

/// One direction: every chunk read goes out `delay` after it was read, in order.
async fn pipe(mut from: OwnedReadHalf, mut to: OwnedWriteHalf, delay: Duration) {
    let (tx, mut rx) = mpsc::unbounded_channel::<(Instant, Vec<u8>)>();
    let writer = async move {
        while let Some((due, chunk)) = rx.recv().await {
            tokio::time::sleep_until(due).await;
            if to.write_all(&chunk).await.is_err() {
                return;
            }
        }
        let _ = to.shutdown().await;
    };
    let reader = async move {
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            match from.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(n) => {
                    if tx
                        .send((Instant::now() + delay, buf[..n].to_vec()))
                        .is_err()
                    {
                        return;
                    }
                }
            }
        }
    };
    tokio::join!(reader, writer);
}
