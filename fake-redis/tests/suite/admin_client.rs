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
