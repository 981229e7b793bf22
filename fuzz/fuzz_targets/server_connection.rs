//! The server's connection handler on any bytes, split anywhere: it never panics, never hangs,
//! and forgets the client once it has gone. Run with `cargo +nightly fuzz run server_connection`
//! from this folder. The bytes go through an in-memory pipe on tokio's paused clock, and the
//! server's clock is virtual, so faults a case injects never wait on real time.
#![no_main]

use bytes::Bytes;
use fake_redis::server::{ClockChoice, Server, ServerConfig};
use libfuzzer_sys::fuzz_target;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

fuzz_target!(|data: &[u8]| {
    // The first byte chooses the write size and whether the server wants a password.
    let Some((&control, input)) = data.split_first() else {
        return;
    };
    let chunk = usize::from(control & 0x3f) + 1;
    let password = control & 0x40 != 0;
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
            let mut buf = [0u8; 8192];
            while let Ok(n) = reader.read(&mut buf).await {
                if n == 0 {
                    break;
                }
            }
        });
        for piece in input.chunks(chunk) {
            if writer.write_all(piece).await.is_err() {
                break;
            }
        }
        let _ = writer.shutdown().await;
        drop(writer);
        tokio::time::timeout(Duration::from_secs(3600), serving)
            .await
            .expect("the connection ends once the client has gone")
            .expect("the connection task does not panic");
        let _ = reading.await;
        assert_eq!(server.connection_count(), 0);
    });
});
