//! The server's connection handler on any bytes, split anywhere: it never panics, never hangs,
//! answers with a bounded amount of output, and forgets the client once it has gone. Run with
//! `cargo +nightly fuzz run server_connection` from this folder. The harness is the one the
//! `server_bytes` property tests use.
#![no_main]

#[path = "../../fake-redis/tests/support/drive.rs"]
mod drive;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // The first byte chooses the write size and whether the server wants a password.
    let Some((&control, input)) = data.split_first() else {
        return;
    };
    let chunk = usize::from(control & 0x3f) + 1;
    let password = control & 0x40 != 0;
    drive::check_connection(input, &[chunk], password);
});
