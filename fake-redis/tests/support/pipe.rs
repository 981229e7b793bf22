//! In-memory connections to a TCP server, for the tests of what the server adds to the engine
//! (the `FAKE.*` admin commands, refusals on the wire): a pipe served as one connection, and
//! one inline command with the first line of its reply.

use fake_redis::server::Server;
use tokio::io::{AsyncReadExt, AsyncWriteExt, DuplexStream};

/// One connection to `server`, served on a task of its own.
pub fn connect(server: &Server) -> DuplexStream {
    let (client, server_side) = tokio::io::duplex(64 * 1024);
    let server = server.clone();
    tokio::spawn(async move { server.serve_connection(server_side).await });
    client
}

/// Sends one inline command and returns its reply's first line.
pub async fn ask(conn: &mut DuplexStream, line: &str) -> String {
    conn.write_all(format!("{line}\r\n").as_bytes())
        .await
        .unwrap();
    let mut reply = Vec::new();
    let mut byte = [0u8; 1];
    while !reply.ends_with(b"\r\n") {
        conn.read_exact(&mut byte).await.unwrap();
        reply.push(byte[0]);
    }
    String::from_utf8_lossy(&reply[..reply.len() - 2]).into_owned()
}
