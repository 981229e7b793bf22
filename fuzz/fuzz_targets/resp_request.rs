//! The request parser never panics, and never yields more than it was given, on any bytes split
//! anywhere. Run with `cargo +nightly fuzz run resp_request` from this folder.
#![no_main]

use bytes::BytesMut;
use fake_redis::resp::RequestParser;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // The first byte chooses the chunk size and whether the client has authenticated.
    let Some((&control, input)) = data.split_first() else {
        return;
    };
    let chunk = usize::from(control & 0x3f) + 1;
    let mut parser = RequestParser::new();
    parser.set_authenticated(control & 0x40 == 0);
    let mut buf = BytesMut::new();
    for piece in input.chunks(chunk) {
        buf.extend_from_slice(piece);
        loop {
            match parser.parse(&mut buf) {
                Ok(Some(argv)) => {
                    let total: usize = argv.iter().map(|a| a.len()).sum();
                    assert!(total <= input.len());
                }
                Ok(None) => break,
                Err(_) => return,
            }
        }
    }
});
