//! `CLIENT LIST` and `CLIENT INFO` lines carry every field of Redis 7.0, in its order, beside a
//! redis-server of the test's own.

use crate::support;

use support::{OwnServer, connect_real, fake_connection};

async fn text(conn: &mut impl redis::aio::ConnectionLike, args: &[&str]) -> String {
    redis::cmd(args[0])
        .arg(&args[1..])
        .query_async::<String>(conn)
        .await
        .expect("a text reply")
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
