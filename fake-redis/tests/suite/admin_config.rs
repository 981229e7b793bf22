//! `CONFIG` changes what the engine does: the BUSY threshold reaches the engine's
//! configuration (`maxmemory` is with the eviction tests, `maxmemory.rs`), and `CONFIG GET *` lists
//! every parameter of Redis 7.0. (`requirepass`, the `default` user's password, is with the
//! ACL tests.)

use crate::support::argv;
use bytes::Bytes;
use fake_redis::{Engine, Frame, ManualClock};

#[test]
fn the_busy_threshold_reaches_the_engine_s_configuration() {
    let mut engine = Engine::new(ManualClock::default());
    let c = engine.connect();
    assert_eq!(engine.config().busy_reply_threshold_ms, 5000);
    assert_eq!(
        engine.execute(c, &argv("CONFIG SET lua-time-limit 100")),
        Frame::OK
    );
    assert_eq!(engine.config().busy_reply_threshold_ms, 100);
    assert_eq!(
        engine.execute(c, &argv("CONFIG SET busy-reply-threshold 250")),
        Frame::OK
    );
    assert_eq!(engine.config().busy_reply_threshold_ms, 250);
}

#[test]
fn config_get_star_lists_every_parameter_of_redis_7_with_its_default() {
    let mut engine = Engine::new(ManualClock::default());
    let c = engine.connect();
    let Frame::Map(pairs) = engine.execute(c, &argv("CONFIG GET *")) else {
        panic!("CONFIG GET replies a map");
    };
    assert_eq!(pairs.len(), 192);
    let value = |name: &str| {
        pairs
            .iter()
            .find(|(k, _)| *k == Frame::Bulk(Bytes::copy_from_slice(name.as_bytes())))
            .map(|(_, v)| v.clone())
    };
    let bulk = |v: &str| Some(Frame::Bulk(Bytes::copy_from_slice(v.as_bytes())));
    assert_eq!(value("maxmemory"), bulk("0"));
    assert_eq!(value("notify-keyspace-events"), bulk(""));
    assert_eq!(value("databases"), bulk("16"));
    assert_eq!(value("appendonly"), bulk("no"));
    assert_eq!(value("save"), bulk(""));
}
