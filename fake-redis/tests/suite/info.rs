//! `INFO` beside a real redis-server (7.0): the fields client test suites read before their first
//! test (redis-py's conftest reads `redis_version`, `arch_bits` and `cluster_enabled`) are there,
//! under Redis's section headers, in Redis's section order, with a standalone server's values.
//!
//! The test starts its own redis-server on a free loopback port (no persistence) and kills it when
//! done, so it never touches a shared server.

use crate::support;

use redis::aio::ConnectionLike;
use std::collections::BTreeMap;
use support::{OwnServer, connect_real, fake_connection};

/// The reply to `INFO <args>`, as text.
async fn info(conn: &mut impl ConnectionLike, args: &[&str]) -> String {
    redis::cmd("INFO")
        .arg(args)
        .query_async::<String>(conn)
        .await
        .expect("INFO replies")
}

/// Each `field:value` line of an INFO reply, by field.
fn fields(text: &str) -> BTreeMap<&str, &str> {
    text.lines()
        .filter(|line| !line.starts_with('#'))
        .filter_map(|line| line.split_once(':'))
        .collect()
}

/// Asserts that each field of `names` has the same value in both INFO replies, or is in neither.
#[track_caller]
fn assert_same_fields(real: &str, fake: &str, names: &[&str]) {
    let (real, fake) = (fields(real), fields(fake));
    for name in names {
        assert_eq!(fake.get(name), real.get(name), "INFO field {name}");
    }
}

/// The section headers of an INFO reply, in order.
fn headers(text: &str) -> Vec<&str> {
    text.lines().filter(|line| line.starts_with("# ")).collect()
}

#[tokio::test]
async fn info_has_what_client_test_suites_read_first() {
    let server = OwnServer::start();
    let mut real = connect_real(server.port).await;
    let mut fake = fake_connection();

    assert_eq!(
        info(&mut fake, &["cluster"]).await,
        info(&mut real, &["cluster"]).await
    );

    let real_default = info(&mut real, &[]).await;
    let fake_default = info(&mut fake, &[]).await;
    assert_same_fields(
        &real_default,
        &fake_default,
        &[
            "redis_version",
            "redis_mode",
            "arch_bits",
            "cluster_enabled",
        ],
    );
    let real_headers = headers(&real_default);
    let fake_headers = headers(&fake_default);
    let in_real_order: Vec<&str> = real_headers
        .iter()
        .copied()
        .filter(|h| fake_headers.contains(h))
        .collect();
    assert_eq!(
        fake_headers, in_real_order,
        "the fake's sections, in Redis's order"
    );
    assert!(fake_headers.contains(&"# Cluster"), "{fake_headers:?}");
}

/// The shape of a reply, not its text (ids and addresses differ between the servers).
fn shape(value: &redis::Value) -> &'static str {
    match value {
        redis::Value::VerbatimString { .. } => "verbatim string",
        redis::Value::BulkString(_) => "bulk string",
        _ => "other",
    }
}

#[tokio::test]
async fn text_replies_are_verbatim_strings_in_resp3() {
    let server = OwnServer::start();
    for resp3 in [false, true] {
        let (mut real, mut fake) = support::connect_both(server.port, resp3).await;
        for args in [
            &["INFO"][..],
            &["INFO", "cluster"],
            &["CLIENT", "INFO"],
            &["CLIENT", "LIST"],
        ] {
            let ask = || redis::cmd(args[0]).arg(&args[1..]).clone();
            let theirs: redis::Value = ask().query_async(&mut real).await.unwrap();
            let ours: redis::Value = ask().query_async(&mut fake).await.unwrap();
            assert_eq!(shape(&ours), shape(&theirs), "{args:?}, RESP3 {resp3}");
        }
    }
}

#[tokio::test]
async fn info_has_every_default_section_and_the_fields_clients_read() {
    let server = OwnServer::start();
    let mut real = connect_real(server.port).await;
    let mut fake = fake_connection();
    let (real_info, fake_info) = (info(&mut real, &[]).await, info(&mut fake, &[]).await);
    let headers = |t: &str| -> Vec<String> {
        t.lines()
            .filter(|l| l.starts_with("# "))
            .map(|l| l.trim().to_owned())
            .collect()
    };
    assert_eq!(headers(&fake_info), headers(&real_info));
    assert_same_fields(
        &real_info,
        &fake_info,
        &[
            "role",
            "loading",
            "async_loading",
            "aof_enabled",
            "connected_slaves",
            "maxmemory",
            "maxmemory_policy",
            "cluster_enabled",
            "redis_mode",
            "rdb_bgsave_in_progress",
            "aof_rewrite_in_progress",
            "master_repl_offset",
        ],
    );
    let fake_fields = fields(&fake_info);
    for present in [
        "used_memory",
        "used_memory_human",
        "used_memory_peak",
        "mem_fragmentation_ratio",
        "mem_fragmentation_bytes",
        // Tests of eviction subtract it from `used_memory` (the fake keeps no buffers: 0).
        "mem_not_counted_for_evict",
        "run_id",
        "tcp_port",
        "process_id",
        "rdb_last_save_time",
        "used_cpu_sys",
        "connected_clients",
        "total_commands_processed",
    ] {
        assert!(fake_fields.contains_key(present), "{present} missing");
    }
}

/// `instantaneous_ops_per_sec`, in `# Stats` after `total_commands_processed` as on Redis, is the
/// mean of the last 16 samples taken every 100 ms of the engine's clock: 10 commands every 100 ms
/// read 100 once 16 samples are in, and one command every 100 ms reads 10.
#[test]
fn instantaneous_ops_per_sec_is_sampled_on_the_engines_clock() {
    use fake_redis::{Engine, ManualClock};
    let clock = ManualClock::new(1_700_000_000_000);
    let mut engine = Engine::new(clock.clone());
    let client = engine.connect();
    let ops = |engine: &mut Engine| {
        let info = engine.execute(client, &support::argv("INFO stats"));
        let text = match info {
            fake_redis::Frame::Bulk(text) | fake_redis::Frame::Verbatim { text, .. } => text,
            other => panic!("INFO replies text: {other:?}"),
        };
        let text = String::from_utf8_lossy(&text).into_owned();
        let after_total = text
            .split_once("total_commands_processed:")
            .and_then(|(_, rest)| rest.split_once("\r\n"))
            .map(|(_, rest)| rest.lines().next().unwrap_or_default().to_owned());
        after_total.expect("total_commands_processed is there")
    };
    assert_eq!(ops(&mut engine), "instantaneous_ops_per_sec:0");
    for _ in 0..20 {
        clock.advance(100);
        for _ in 0..10 {
            engine.execute(client, &support::argv("PING"));
        }
    }
    clock.advance(100);
    assert_eq!(ops(&mut engine), "instantaneous_ops_per_sec:100");
    for _ in 0..16 {
        clock.advance(100);
        engine.execute(client, &support::argv("CONFIG GET hz"));
    }
    // Each of the last 16 samples saw one command in 100 ms (the INFO, then CONFIG GETs).
    assert_eq!(ops(&mut engine), "instantaneous_ops_per_sec:10");
}
