//! `INFO` has every section of Redis 7.0's default reply, with the fields clients and test suites
//! read, beside a redis-server of the test's own; and `CLIENT LIST` lines carry every field of
//! 7.0, in its order, with its filters and errors.

mod support;

use std::collections::BTreeMap;
use support::{OwnServer, connect_real, fake_connection};

async fn text(conn: &mut impl redis::aio::ConnectionLike, args: &[&str]) -> String {
    redis::cmd(args[0])
        .arg(&args[1..])
        .query_async::<String>(conn)
        .await
        .expect("a text reply")
}

fn fields(text: &str) -> BTreeMap<&str, &str> {
    text.lines()
        .filter(|line| !line.starts_with('#'))
        .filter_map(|line| line.split_once(':'))
        .collect()
}

#[tokio::test]
async fn info_has_every_default_section_and_the_fields_clients_read() {
    let server = OwnServer::start();
    let mut real = connect_real(server.port).await;
    let mut fake = fake_connection();
    let (real_info, fake_info) = (
        text(&mut real, &["INFO"]).await,
        text(&mut fake, &["INFO"]).await,
    );
    let headers = |t: &str| -> Vec<String> {
        t.lines()
            .filter(|l| l.starts_with("# "))
            .map(|l| l.trim().to_owned())
            .collect()
    };
    assert_eq!(headers(&fake_info), headers(&real_info));
    let (real_fields, fake_fields) = (fields(&real_info), fields(&fake_info));
    for same in [
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
    ] {
        assert_eq!(fake_fields.get(same), real_fields.get(same), "{same}");
    }
    for present in [
        "used_memory",
        "used_memory_human",
        "used_memory_peak",
        "mem_fragmentation_ratio",
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

#[tokio::test]
async fn client_list_lines_have_every_field_of_redis_7_in_order() {
    let server = OwnServer::start();
    let mut real = connect_real(server.port).await;
    let mut fake = fake_connection();
    let names = |line: &str| -> Vec<String> {
        line.split_whitespace()
            .filter_map(|f| f.split_once('=').map(|(k, _)| k.to_owned()))
            .collect()
    };
    for args in [&["CLIENT", "LIST"][..], &["CLIENT", "INFO"]] {
        let (r, f) = (text(&mut real, args).await, text(&mut fake, args).await);
        assert_eq!(names(&f), names(&r), "{args:?}");
        assert!(
            f.contains(&format!("cmd={}", args.join("|").to_lowercase())),
            "{f}"
        );
    }
}
