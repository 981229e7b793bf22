//! `CLIENT KILL` closes the connections its filters name (the caller only with `SKIPME no`, once
//! its reply is out), and `CLIENT LIST` filters by id and type.

use bytes::Bytes;
use fake_redis::{Engine, Frame, ManualClock};

fn argv(line: &str) -> Vec<Bytes> {
    line.split_whitespace()
        .map(|w| Bytes::copy_from_slice(w.as_bytes()))
        .collect()
}

fn list(engine: &mut Engine, client: fake_redis::ClientId, line: &str) -> String {
    match engine.execute(client, &argv(line)) {
        Frame::Verbatim { text, .. } | Frame::Bulk(text) => String::from_utf8_lossy(&text).into(),
        other => panic!("CLIENT LIST replies text: {other:?}"),
    }
}

#[test]
fn client_kill_by_id_closes_that_connection_only() {
    let mut engine = Engine::new(ManualClock::default());
    let (me, other, third) = (engine.connect(), engine.connect(), engine.connect());
    let kill = format!("CLIENT KILL ID {}", other.0);
    assert_eq!(engine.execute(me, &argv(&kill)), Frame::Integer(1));
    assert!(!engine.is_connected(other));
    assert!(engine.is_connected(third));
    assert_eq!(engine.execute(me, &argv(&kill)), Frame::Integer(0));
    // The caller is spared by default, and closed after its reply with SKIPME no.
    let kill_me = format!("CLIENT KILL ID {}", me.0);
    assert_eq!(engine.execute(me, &argv(&kill_me)), Frame::Integer(0));
    assert_eq!(
        engine.execute(me, &argv(&format!("{kill_me} SKIPME no"))),
        Frame::Integer(1)
    );
    assert!(!engine.is_connected(me));
}

#[test]
fn client_list_filters_by_id_and_type() {
    let mut engine = Engine::new(ManualClock::default());
    let (me, subscriber) = (engine.connect(), engine.connect());
    engine.execute(subscriber, &argv("SUBSCRIBE ch"));
    let by_id = list(&mut engine, me, &format!("CLIENT LIST ID {}", subscriber.0));
    assert!(
        by_id.starts_with(&format!("id={} ", subscriber.0)),
        "{by_id}"
    );
    assert_eq!(by_id.lines().count(), 1);
    let pubsub = list(&mut engine, me, "CLIENT LIST TYPE pubsub");
    assert!(
        pubsub.contains("cmd=subscribe") && pubsub.contains("sub=1"),
        "{pubsub}"
    );
    let normal = list(&mut engine, me, "CLIENT LIST TYPE normal");
    assert!(
        normal.contains("cmd=client|list") && normal.lines().count() == 1,
        "{normal}"
    );
    assert_eq!(list(&mut engine, me, "CLIENT LIST ID 999999"), "");
}

#[test]
fn client_kill_maxage_closes_the_connections_at_least_that_many_seconds_old() {
    let clock = ManualClock::new(1_000_500);
    let mut engine = Engine::with_config(
        clock.clone(),
        fake_redis::EngineConfig {
            version: fake_redis::Version::V7_4,
            ..fake_redis::EngineConfig::default()
        },
    );
    let old = engine.connect();
    clock.advance(4_000);
    let newer = engine.connect();
    // 4.5 seconds later, in whole seconds as Redis counts them: the old connection is 5 seconds
    // old (1,000 to 1,005), the newer one 1 (1,004 to 1,005).
    clock.advance(500);
    let me = engine.connect();
    assert_eq!(
        engine.execute(me, &argv("CLIENT KILL MAXAGE 6")),
        Frame::Integer(0)
    );
    assert_eq!(
        engine.execute(me, &argv("CLIENT KILL MAXAGE 5")),
        Frame::Integer(1)
    );
    assert!(!engine.is_connected(old));
    assert!(engine.is_connected(newer));
    for (line, error) in [
        (
            "CLIENT KILL MAXAGE 0",
            "ERR maxage should be greater than 0",
        ),
        (
            "CLIENT KILL MAXAGE -5",
            "ERR maxage should be greater than 0",
        ),
        (
            "CLIENT KILL MAXAGE x",
            "ERR maxage is not an integer or out of range",
        ),
    ] {
        assert_eq!(
            engine.execute(me, &argv(line)),
            Frame::error(error),
            "{line}"
        );
    }
    // Redis 7.0 has no such filter.
    let mut engine = Engine::new(ManualClock::default());
    let me = engine.connect();
    assert_eq!(
        engine.execute(me, &argv("CLIENT KILL MAXAGE 5")),
        Frame::error("ERR syntax error")
    );
}
