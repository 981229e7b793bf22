//! One client on one connection to a fresh server: it sends its bytes in pieces, leaves, and the
//! server must neither panic nor hang, must answer with a bounded amount of output, and must
//! forget the client. The connection is an in-memory pipe on tokio's paused clock and the
//! server's clock is virtual, so no fault the bytes inject waits on real time.
//!
//! The `server_bytes` tests and the `server_connection` fuzz target both drive the server with
//! this, so it uses nothing beyond `fake_redis`, `bytes` and `tokio`.

use bytes::Bytes;
use fake_redis::server::{ClockChoice, Server, ServerConfig};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Output a connection may produce at most: generous, but far below what a leak or a loop would
/// write.
pub const OUTPUT_BOUND: usize = 4 * 1024 * 1024;

/// Sends `input` in pieces of the sizes in `chunks` (cycled) to a fresh server, which wants the
/// password `pw` if `password` is set; closes the client's side and checks the rule. Returns how
/// many bytes the server wrote.
pub fn check_connection(input: &[u8], chunks: &[usize], password: bool) -> usize {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .start_paused(true)
        .build()
        .expect("a runtime");
    runtime.block_on(async {
        let server = Server::new(&ServerConfig {
            clock: ClockChoice::Virtual {
                epoch_ms: fake_redis::DEFAULT_EPOCH_MS,
            },
            requirepass: password.then(|| Bytes::from_static(b"pw")),
            ..ServerConfig::default()
        });
        let (client, server_side) = tokio::io::duplex(64 * 1024);
        let serving = tokio::spawn({
            let server = server.clone();
            async move { server.serve_connection(server_side).await }
        });
        let (mut reader, mut writer) = tokio::io::split(client);
        let reading = tokio::spawn(async move {
            let mut total = 0usize;
            let mut buf = [0u8; 8192];
            while let Ok(n) = reader.read(&mut buf).await {
                if n == 0 || total > OUTPUT_BOUND {
                    break;
                }
                total += n;
            }
            total
        });
        let mut rest = input;
        for &size in chunks.iter().cycle() {
            if rest.is_empty() {
                break;
            }
            let (piece, tail) = rest.split_at(size.min(rest.len()));
            // The server may have closed the connection already (QUIT, a protocol error).
            if writer.write_all(piece).await.is_err() {
                break;
            }
            rest = tail;
        }
        let _ = writer.shutdown().await;
        drop(writer);
        tokio::time::timeout(Duration::from_secs(3600), serving)
            .await
            .expect("the connection ends once the client has gone")
            .expect("the connection task does not panic");
        let written = tokio::time::timeout(Duration::from_secs(3600), reading)
            .await
            .expect("the reader sees the end")
            .expect("the reader does not panic");
        assert!(written <= OUTPUT_BOUND, "{written} bytes of output");
        assert_eq!(server.connection_count(), 0);
        assert_eq!(server.engine().lock().unwrap().client_count(), 0);
        written
    })
}
