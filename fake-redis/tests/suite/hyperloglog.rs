//! HyperLogLog values cross between the fake and a real Redis 7.0: a value one server wrote is
//! read by the other (`GET` there, `SET` here, `PFCOUNT`), in its sparse and its dense form, and
//! the same additions leave the same bytes and the same estimate on both.

use crate::support;

use redis::AsyncCommands;
use support::{OwnServer, connect_real, fake_connection};

/// Elements `prefix0`, `prefix1`, … added `n` at a time, so a value goes through many edits.
fn elements(prefix: &str, n: usize) -> Vec<String> {
    (0..n).map(|i| format!("{prefix}{i}")).collect()
}

async fn add_all(conn: &mut impl redis::aio::ConnectionLike, key: &str, all: &[String]) {
    for chunk in all.chunks(50) {
        let mut cmd = redis::cmd("PFADD");
        cmd.arg(key).arg(chunk);
        cmd.query_async::<i64>(conn).await.expect("PFADD succeeds");
    }
}

#[tokio::test]
async fn hyperloglogs_cross_between_the_servers_in_both_encodings() {
    let server = OwnServer::start();
    let mut real = connect_real(server.port).await;
    let mut fake = fake_connection();
    // 200 elements stay sparse; 5000 make Redis go dense.
    for (key, n) in [("small", 200), ("large", 5000)] {
        let all = elements(key, n);
        add_all(&mut real, key, &all).await;
        add_all(&mut fake, key, &all).await;
        let from_real: Vec<u8> = real.get(key).await.unwrap();
        let from_fake: Vec<u8> = fake.get(key).await.unwrap();
        assert_eq!(
            from_real, from_fake,
            "{key}: the same additions, the same bytes"
        );
        assert_eq!(
            from_real[4],
            u8::from(n < 1000),
            "{key}: the encoding Redis chose"
        );

        // Redis's value read by the fake, and the fake's by Redis, before any count is cached.
        let _: () = fake.set(format!("{key}:r"), &from_real).await.unwrap();
        let _: () = real.set(format!("{key}:f"), &from_fake).await.unwrap();
        let real_count: i64 = real.pfcount(key).await.unwrap();
        let fake_reads_real: i64 = fake.pfcount(format!("{key}:r")).await.unwrap();
        let real_reads_fake: i64 = real.pfcount(format!("{key}:f")).await.unwrap();
        let fake_count: i64 = fake.pfcount(key).await.unwrap();
        assert_eq!(
            fake_reads_real, real_count,
            "{key}: the fake estimates Redis's value"
        );
        assert_eq!(
            real_reads_fake, real_count,
            "{key}: Redis estimates the fake's value"
        );
        assert_eq!(fake_count, real_count, "{key}: the same estimate");
        assert!(
            (real_count - n as i64).abs() < n as i64 / 20,
            "{key}: {real_count} of {n}"
        );

        // The cached estimate is written back the same way.
        let cached_real: Vec<u8> = real.get(key).await.unwrap();
        let cached_fake: Vec<u8> = fake.get(key).await.unwrap();
        assert_eq!(
            cached_real, cached_fake,
            "{key}: the cached count in the header"
        );
    }

    // Merging a sparse and a dense value, and counting the union, agree too.
    let mut merge = redis::cmd("PFMERGE");
    merge.arg("merged").arg("small").arg("large");
    merge.query_async::<()>(&mut real).await.unwrap();
    merge.query_async::<()>(&mut fake).await.unwrap();
    let merged_real: Vec<u8> = real.get("merged").await.unwrap();
    let merged_fake: Vec<u8> = fake.get("merged").await.unwrap();
    assert_eq!(merged_real, merged_fake);
    let union_real: i64 = real.pfcount(&["small", "large"]).await.unwrap();
    let union_fake: i64 = fake.pfcount(&["small", "large"]).await.unwrap();
    assert_eq!(union_real, union_fake);
}

/// `OBJECT ENCODING k` after `SET k <hll>` and then `command`.
async fn encoding_after(
    side: &mut impl redis::aio::ConnectionLike,
    hll: &[u8],
    command: &[&str],
) -> String {
    let _: () = redis::cmd("SET")
        .arg("k")
        .arg(hll)
        .query_async(side)
        .await
        .unwrap();
    redis::cmd(command[0])
        .arg(&command[1..])
        .query_async::<redis::Value>(side)
        .await
        .unwrap_or_else(|e| panic!("{command:?}: {e}"));
    redis::cmd("OBJECT")
        .arg("ENCODING")
        .arg("k")
        .query_async(side)
        .await
        .unwrap()
}

/// A HyperLogLog `SET` from its bytes is `embstr` (short) on both servers, and becomes `raw` only
/// through a command that unshares it to edit it in place, whether or not it then changes
/// anything; a command that only reads it leaves it as it was.
#[tokio::test]
async fn a_hyperloglog_turns_raw_only_where_a_command_unshares_it() {
    let server = OwnServer::start();
    let mut real = connect_real(server.port).await;
    let mut fake = fake_connection();
    let _: i64 = real.pfadd("src", &["a", "b", "c"]).await.unwrap();
    let hll: Vec<u8> = real.get("src").await.unwrap();
    let _: () = fake.set("src", &hll).await.unwrap();
    let cases: &[(&[&str], &str)] = &[
        (&["GET", "k"], "embstr"),
        (&["PFCOUNT", "k", "src"], "embstr"),
        (&["PFMERGE", "dst", "k"], "embstr"),
        (&["PFCOUNT", "k"], "raw"),
        (&["PFADD", "k"], "raw"),
        (&["PFADD", "k", "a"], "raw"),
        (&["PFMERGE", "k"], "raw"),
        (&["PFDEBUG", "ENCODING", "k"], "raw"),
    ];
    for (command, want) in cases {
        let on_redis = encoding_after(&mut real, &hll, command).await;
        let on_fake = encoding_after(&mut fake, &hll, command).await;
        assert_eq!(
            [on_redis.as_str(), on_fake.as_str()],
            [*want, *want],
            "{command:?}: OBJECT ENCODING after it on redis, then on the fake"
        );
    }
}
