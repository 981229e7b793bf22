//! The fake's Sentinel (`fake-redis-server --replicas <n>`) against a real `redis-sentinel` 7.0,
//! and the `redis` crate's Sentinel client finding the fake primary and following a failover.
//!
//! The real side is a group of this test's own, never the shared one `scripts/test` starts (these
//! tests fail it over): a redis-server primary, a replica, and one redis-sentinel watching them
//! as `mymaster` with its default settings, on free loopback ports, stopped on drop. Replies are
//! compared byte for byte where a real sentinel's are fixed; where they hold times, run ids or
//! ports, the field names, their order and their fixed values are.

use crate::support;

use bytes::BytesMut;
use fake_redis::ReplicaLag;
use fake_redis::resp::{Frame, ReplyParser};
use fake_redis::server::{ClockChoice, RunningGroup, ServerConfig, ServerGroup};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use support::OwnServer;
use support::raw::{self, Real};

const MASTER: &str = "mymaster";

/// A primary, a replica and one sentinel of real Redis, stopped on drop.
struct RealGroup {
    primary: OwnServer,
    replica: OwnServer,
    sentinel: Child,
    sentinel_port: u16,
    dir: std::path::PathBuf,
}

impl RealGroup {
    fn start() -> RealGroup {
        let primary = OwnServer::start();
        let replica = OwnServer::start_with(&[
            "--replicaof".into(),
            "127.0.0.1".into(),
            primary.port.to_string(),
        ]);
        let dir = std::env::temp_dir().join(format!(
            "fake-redis-sentinel-test-{}-{}",
            std::process::id(),
            replica.port
        ));
        std::fs::create_dir_all(&dir).unwrap();
        let sentinel_port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .unwrap()
            .port();
        let conf = dir.join("sentinel.conf");
        std::fs::write(
            &conf,
            format!(
                "port {sentinel_port}\nbind 127.0.0.1\ndir {}\n\
                 sentinel monitor {MASTER} 127.0.0.1 {} 1\n",
                dir.display(),
                primary.port
            ),
        )
        .unwrap();
        let sentinel = Command::new("redis-sentinel")
            .arg(&conf)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("redis-sentinel must be installed (Debian's redis-sentinel 7.0) for this test");
        let group = RealGroup {
            primary,
            replica,
            sentinel,
            sentinel_port,
            dir,
        };
        // Ready once the sentinel has found the replica, linked to its primary.
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if std::net::TcpStream::connect(("127.0.0.1", sentinel_port)).is_ok() {
                let mut conn = Real::connect(sentinel_port);
                let replicas = parse(&conn.call(&[b"SENTINEL", b"REPLICAS", MASTER.as_bytes()]));
                let linked = as_maps(&replicas).first().is_some_and(|r| {
                    get(r, "flags") == "slave" && get(r, "master-link-status") == "ok"
                });
                if linked {
                    return group;
                }
            }
            assert!(
                Instant::now() < deadline,
                "the real sentinel never saw the replica"
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }
}

impl Drop for RealGroup {
    fn drop(&mut self) {
        let _ = self.sentinel.kill();
        let _ = self.sentinel.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// The fake's primary, one replica and sentinel, in a runtime of their own.
struct FakeGroup {
    runtime: tokio::runtime::Runtime,
    running: Option<RunningGroup>,
}

impl FakeGroup {
    fn start(replicas: u16) -> FakeGroup {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let config = ServerConfig {
            port: 0,
            clock: ClockChoice::System,
            ..ServerConfig::default()
        };
        let running = runtime
            .block_on(ServerGroup::start_replicated(
                config,
                replicas,
                ReplicaLag::default(),
                MASTER,
            ))
            .unwrap();
        FakeGroup {
            runtime,
            running: Some(running),
        }
    }

    fn port(&self, i: usize) -> u16 {
        self.running.as_ref().unwrap().addrs()[i].port()
    }

    fn sentinel_port(&self) -> u16 {
        let addrs = self.running.as_ref().unwrap().addrs();
        addrs[addrs.len() - 1].port()
    }
}

impl Drop for FakeGroup {
    fn drop(&mut self) {
        if let Some(running) = self.running.take() {
            self.runtime.block_on(running.stop());
        }
    }
}

fn parse(bytes: &[u8]) -> Frame {
    let mut buf = BytesMut::from(bytes);
    ReplyParser::new().parse(&mut buf).unwrap().unwrap()
}

fn text(frame: &Frame) -> String {
    match frame {
        Frame::Bulk(b) | Frame::Verbatim { text: b, .. } => String::from_utf8_lossy(b).into_owned(),
        Frame::Simple(s) => s.to_string(),
        Frame::Integer(n) => n.to_string(),
        other => format!("{other:?}"),
    }
}

/// A reply's maps (an array of maps, flat pairs in RESP2) as (field, value) lists.
fn as_maps(reply: &Frame) -> Vec<Vec<(String, String)>> {
    match reply {
        Frame::Array(items)
            if items
                .iter()
                .all(|i| matches!(i, Frame::Array(_) | Frame::Map(_))) =>
        {
            items.iter().flat_map(as_maps).collect()
        }
        Frame::Array(flat) => vec![
            flat.chunks(2)
                .map(|p| (text(&p[0]), p.get(1).map(text).unwrap_or_default()))
                .collect(),
        ],
        Frame::Map(pairs) => vec![pairs.iter().map(|(k, v)| (text(k), text(v))).collect()],
        _ => Vec::new(),
    }
}

fn get<'a>(map: &'a [(String, String)], name: &str) -> &'a str {
    map.iter()
        .find(|(k, _)| k == name)
        .map_or("", |(_, v)| v.as_str())
}

/// Fields whose values are times, ids, ports or offsets: compared by name only.
const VARYING: &[&str] = &[
    "name",
    "port",
    "runid",
    "last-ok-ping-reply",
    "last-ping-reply",
    "info-refresh",
    "role-reported-time",
    "master-port",
    "slave-repl-offset",
];

/// The maps of a reply with the varying values left out.
fn shape(reply: &[u8]) -> Vec<Vec<(String, String)>> {
    let maps = as_maps(&parse(reply));
    maps.into_iter()
        .map(|m| {
            m.into_iter()
                .map(|(k, v)| {
                    let v = if VARYING.contains(&k.as_str()) {
                        String::new()
                    } else {
                        v
                    };
                    (k, v)
                })
                .collect()
        })
        .collect()
}

/// Replies a real sentinel gives the same bytes for every time, in RESP2 then RESP3.
const FIXED: &[&[&str]] = &[
    &["PING"],
    &["PING hi"],
    &["SENTINEL"],
    &["SENTINEL foo"],
    &["SENTINEL master"],
    &["SENTINEL", "MASTER", MASTER, "x"],
    &["SENTINEL masters x"],
    &["SENTINEL myid x"],
    &["SENTINEL get-master-addr-by-name"],
    &["SENTINEL get-master-addr-by-name nope"],
    &["SENTINEL master nope"],
    &["SENTINEL replicas nope"],
    &["SENTINEL slaves nope"],
    &["SENTINEL sentinels nope"],
    &["SENTINEL", "sentinels", MASTER],
    &["SENTINEL failover nope"],
    &["SENTINEL failover"],
    &["SENTINEL", "ckquorum", MASTER],
    &["SENTINEL ckquorum nope"],
    &["SENTINEL help"],
    &["ROLE"],
    &["ROLE x"],
    &["GET x"],
    &["SET x y"],
    &["QUIT"],
    &["RESET"],
    &["SELECT 0"],
    &["PUBLISH a b"],
    &["AUTH x"],
    &["HELLO 4"],
    &["CLIENT SETNAME n"],
    &["CLIENT GETNAME"],
    &["CLIENT SETINFO lib-name x"],
    &["COMMAND COUNT"],
    &["ACL WHOAMI"],
    &["SUBSCRIBE"],
];

/// Sends a command of a table (see `raw::words`) and returns its reply's bytes.
fn call(conn: &mut Real, argv: &[&str]) -> Vec<u8> {
    let argv: Vec<&[u8]> = raw::words(argv).iter().map(|a| a.as_bytes()).collect();
    conn.call(&argv)
}

#[test]
fn the_fake_sentinel_answers_as_redis_sentinel_does() {
    let real = RealGroup::start();
    let fake = FakeGroup::start(1);
    let mut mismatches = Vec::new();
    for protocol in ["2", "3"] {
        let mut r = Real::connect(real.sentinel_port);
        let mut f = Real::connect(fake.sentinel_port());
        // HELLO's shape, its client id aside.
        let hello = |conn: &mut Real| {
            let mut reply = as_maps(&parse(&call(conn, &["HELLO", protocol])));
            reply[0].retain(|(k, _)| k != "id");
            reply
        };
        assert_eq!(hello(&mut f), hello(&mut r), "HELLO {protocol}");
        for argv in FIXED {
            let (want, got) = (call(&mut r, argv), call(&mut f, argv));
            if want != got {
                mismatches.push(format!(
                    "RESP{protocol} {argv:?}:\n  real {:?}\n  fake {:?}",
                    String::from_utf8_lossy(&want),
                    String::from_utf8_lossy(&got)
                ));
            }
        }
        for argv in [
            &["SENTINEL", "masters"][..],
            &["SENTINEL", "master", MASTER],
            &["SENTINEL", "replicas", MASTER],
            &["SENTINEL", "slaves", MASTER],
        ] {
            let (want, got) = (call(&mut r, argv), call(&mut f, argv));
            // The same frame types (RESP3 maps), the same fields in the same order.
            assert_eq!(got[0], want[0], "{argv:?}'s reply type");
            if shape(&want) != shape(&got) {
                mismatches.push(format!(
                    "RESP{protocol} {argv:?}:\n  real {:?}\n  fake {:?}",
                    shape(&want),
                    shape(&got)
                ));
            }
        }
        let addr = |conn: &mut Real, port: u16| {
            let reply = call(conn, &["SENTINEL", "get-master-addr-by-name", MASTER]);
            String::from_utf8_lossy(&reply).replace(&port.to_string(), "PORT")
        };
        assert_eq!(addr(&mut f, fake.port(0)), addr(&mut r, real.primary.port));
        let myid = |conn: &mut Real| parse(&call(conn, &["SENTINEL", "myid"]));
        assert!(
            matches!((myid(&mut f), myid(&mut r)), (Frame::Bulk(a), Frame::Bulk(b)) if a.len() == 40 && b.len() == 40)
        );
        let sentinel_section = |conn: &mut Real, port: u16| {
            let info = call(conn, &["INFO", "sentinel"]);
            String::from_utf8_lossy(&info).replace(&port.to_string(), "PORT")
        };
        assert_eq!(
            sentinel_section(&mut f, fake.port(0)),
            sentinel_section(&mut r, real.primary.port)
        );
    }
    assert!(mismatches.is_empty(), "{}", mismatches.join("\n"));
}

/// Reads pub/sub messages on `conn` until one on `last`, as (channel, message) pairs.
fn messages_until(conn: &mut Real, last: &str) -> Vec<(String, String)> {
    let mut seen = Vec::new();
    loop {
        let frame = parse(&conn.reply());
        let (Frame::Array(parts) | Frame::Push(parts)) = frame else {
            panic!("not a message: {frame:?}");
        };
        let parts: Vec<String> = parts.iter().map(text).collect();
        if parts[0] != "pmessage" {
            continue;
        }
        let (channel, message) = (parts[2].clone(), parts[3].clone());
        let done = channel == last;
        seen.push((channel, message));
        if done {
            return seen;
        }
    }
}

#[test]
fn a_failover_publishes_what_redis_sentinel_publishes_up_to_switch_master() {
    let real = RealGroup::start();
    let fake = FakeGroup::start(1);
    let run = |sentinel: u16, ports: [u16; 2]| {
        let mut sub = Real::connect(sentinel);
        call(&mut sub, &["PSUBSCRIBE", "*"]);
        let mut conn = Real::connect(sentinel);
        assert_eq!(
            call(&mut conn, &["SENTINEL", "failover", MASTER]),
            b"+OK\r\n"
        );
        let id = text(&parse(&call(&mut conn, &["SENTINEL", "myid"])));
        let events = messages_until(&mut sub, "+switch-master");
        // The real sentinel notices the old primary's new role in its own time: those events,
        // and its `-role-change` reports, are not part of the switch.
        let events: Vec<(String, String)> = events
            .into_iter()
            .filter(|(c, _)| c != "-role-change" && c != "+role-change")
            .map(|(c, m)| {
                let m = m
                    .replace(&id, "MYID")
                    .replace(&ports[0].to_string(), "OLD")
                    .replace(&ports[1].to_string(), "NEW");
                (c, m)
            })
            .collect();
        let addr = call(&mut conn, &["SENTINEL", "get-master-addr-by-name", MASTER]);
        (
            events,
            String::from_utf8_lossy(&addr).replace(&ports[1].to_string(), "NEW"),
        )
    };
    let want = run(real.sentinel_port, [real.primary.port, real.replica.port]);
    let got = run(fake.sentinel_port(), [fake.port(0), fake.port(1)]);
    assert_eq!(got, want);
    // After the switch the old primary follows the new one.
    let mut old = Real::connect(fake.port(0));
    let role = as_maps(&parse(&call(&mut old, &["ROLE"])));
    assert_eq!(role[0][0].0, "slave");
    assert_eq!(
        call(&mut old, &["SET", "k", "v"]),
        b"-READONLY You can't write against a read only replica.\r\n"
    );
}

#[test]
fn a_failover_without_a_replica_is_refused_as_redis_sentinel_words_it() {
    let fake = FakeGroup::start(0);
    let mut conn = Real::connect(fake.sentinel_port());
    assert_eq!(
        call(&mut conn, &["SENTINEL", "failover", MASTER]),
        b"-NOGOODSLAVE No suitable replica to promote\r\n"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_redis_crate_finds_the_fake_primary_and_follows_a_failover() {
    use redis::AsyncCommands;
    use redis::sentinel::{SentinelClient, SentinelServerType};
    let config = ServerConfig {
        port: 0,
        ..ServerConfig::default()
    };
    let running = ServerGroup::start_replicated(config, 2, ReplicaLag::default(), MASTER)
        .await
        .unwrap();
    let ports: Vec<u16> = running.addrs().iter().map(|a| a.port()).collect();
    let sentinel_url = format!("redis://127.0.0.1:{}/", ports[3]);
    let mut client = SentinelClient::build(
        vec![sentinel_url.as_str()],
        MASTER.to_owned(),
        None,
        SentinelServerType::Master,
    )
    .unwrap();
    let mut primary = client.get_async_connection().await.unwrap();
    let _: () = primary.set("orders", "held").await.unwrap();

    let sentinel = redis::Client::open(sentinel_url.as_str()).unwrap();
    let mut control = sentinel.get_multiplexed_async_connection().await.unwrap();
    let ok: String = redis::cmd("SENTINEL")
        .arg("FAILOVER")
        .arg(MASTER)
        .query_async(&mut control)
        .await
        .unwrap();
    assert_eq!(ok, "OK");
    let addr: (String, u16) = redis::cmd("SENTINEL")
        .arg("GET-MASTER-ADDR-BY-NAME")
        .arg(MASTER)
        .query_async(&mut control)
        .await
        .unwrap();
    assert!(addr.1 == ports[1] || addr.1 == ports[2], "{addr:?}");

    // The old connection now reaches a replica, which refuses the write.
    let refused: redis::RedisResult<()> = primary.set("orders", "again").await;
    assert_eq!(refused.unwrap_err().code(), Some("READONLY"));
    // Asking the sentinel again leads to the new primary, with what the old one had written.
    let mut promoted = client.get_async_connection().await.unwrap();
    let held: Option<String> = promoted.get("orders").await.unwrap();
    assert_eq!(held.as_deref(), Some("held"));
    let _: () = promoted.set("orders", "again").await.unwrap();
    let role: redis::Value = redis::cmd("ROLE").query_async(&mut promoted).await.unwrap();
    assert!(format!("{role:?}").contains("master"), "{role:?}");
    running.stop().await;
}

/// A group bound to another address than 127.0.0.1 (here the loopback alias 127.0.0.2) names it
/// wherever it names a node: `ROLE` and `INFO replication` on both sides of a link, and the
/// Sentinel's address of the primary, which a Sentinel client then connects to.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_group_bound_to_an_address_announces_it() {
    use redis::sentinel::{SentinelClient, SentinelServerType};
    let bind = std::net::Ipv4Addr::new(127, 0, 0, 2);
    let config = ServerConfig {
        port: 0,
        bind: bind.into(),
        ..ServerConfig::default()
    };
    let running = ServerGroup::start_replicated(config, 1, ReplicaLag::default(), MASTER)
        .await
        .unwrap();
    let ports: Vec<u16> = running.addrs().iter().map(|a| a.port()).collect();
    let url = |port: u16| format!("redis://127.0.0.2:{port}/");
    let conn = |port: u16| async move {
        (redis::Client::open(url(port)).unwrap())
            .get_multiplexed_async_connection()
            .await
            .unwrap()
    };
    let role: (String, String, u16, String, i64) = redis::cmd("ROLE")
        .query_async(&mut conn(ports[1]).await)
        .await
        .unwrap();
    assert_eq!(
        (role.0.as_str(), role.1.as_str(), role.2),
        ("slave", "127.0.0.2", ports[0])
    );
    let (_, _, replicas): (String, i64, Vec<(String, String, String)>) = redis::cmd("ROLE")
        .query_async(&mut conn(ports[0]).await)
        .await
        .unwrap();
    assert_eq!(replicas[0].0, "127.0.0.2");
    assert_eq!(replicas[0].1, ports[1].to_string());
    let info: String = redis::cmd("INFO")
        .arg("replication")
        .query_async(&mut conn(ports[1]).await)
        .await
        .unwrap();
    assert!(info.contains("\r\nmaster_host:127.0.0.2\r\n"), "{info}");
    let info: String = redis::cmd("INFO")
        .arg("replication")
        .query_async(&mut conn(ports[0]).await)
        .await
        .unwrap();
    let slave0 = format!("\r\nslave0:ip=127.0.0.2,port={},", ports[1]);
    assert!(info.contains(&slave0), "{info}");
    let addr: (String, u16) = redis::cmd("SENTINEL")
        .arg("GET-MASTER-ADDR-BY-NAME")
        .arg(MASTER)
        .query_async(&mut conn(ports[2]).await)
        .await
        .unwrap();
    assert_eq!(addr, ("127.0.0.2".to_owned(), ports[0]));
    let mut client = SentinelClient::build(
        vec![url(ports[2])],
        MASTER.to_owned(),
        None,
        SentinelServerType::Master,
    )
    .unwrap();
    let mut primary = client.get_async_connection().await.unwrap();
    let pong: String = redis::cmd("PING").query_async(&mut primary).await.unwrap();
    assert_eq!(pong, "PONG");
    running.stop().await;
}
