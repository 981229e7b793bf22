//! The reply parser never panics on any bytes. Run with `cargo +nightly fuzz run resp_reply`.
#![no_main]

use bytes::BytesMut;
use fake_redis::resp::ReplyParser;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut parser = ReplyParser::new();
    let mut buf = BytesMut::from(data);
    while let Ok(Some(_frame)) = parser.parse(&mut buf) {}
});
