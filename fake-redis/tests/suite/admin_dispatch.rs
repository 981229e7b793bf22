//! What a container command's call meets before its handler, against a real redis-server 7.0
//! byte for byte: the subcommand is looked up and its arity checked right after the command's
//! own arity, so those errors come before `NOAUTH`, before the pub/sub context's refusal, and at
//! `MULTI`'s queue time (the `EXEC` then aborts); then the arguments the handlers count
//! themselves, and the replies of `MEMORY DOCTOR` and `ACL DELUSER`.

use crate::support;

use fake_redis::{Engine, Frame, ManualClock};
use support::argv;
use support::raw::{self, eval};

const CASES: &[raw::Case] = &[
    // In a transaction, a subcommand's arity and an unknown subcommand refuse at queue time.
    &[
        &["MULTI"],
        &["CONFIG GET"],
        &["CLIENT FOO"],
        &["PING"],
        &["EXEC"],
        &["MULTI"],
        &["OBJECT HELP x"],
        &["EXEC"],
        &["MULTI"],
        &["CONFIG"],
        &["EXEC"],
    ],
    // Scripts and ACL DRYRUN check the subcommand too.
    &[
        eval!("return redis.call('config','get')"),
        eval!("return redis.call('client','foo')"),
        eval!("return redis.call('object','help','x')"),
        &["ACL DRYRUN default config get"],
        &["ACL DRYRUN default client foo"],
        &["ACL DRYRUN default config get x"],
        &["ACL DRYRUN default config"],
        &["ACL DRYRUN default object help x"],
        &["ACL DRYRUN default"],
        &["ACL DRYRUN default get"],
    ],
    // Arguments a handler counts itself, and the subcommands whose arity is fixed.
    &[
        &["ACL CAT a b"],
        &["ACL CAT read x"],
        &["ACL GENPASS 1 2"],
        &["ACL LOG 1 2"],
        &["ACL LOG RESET x"],
        &["SLOWLOG GET 1 2"],
        &["PUBSUB HELP x"],
        &["PUBSUB NUMPAT x"],
        &["COMMAND COUNT x"],
        &["COMMAND FOO"],
        &["CLIENT ID x"],
        &["CLIENT GETNAME x"],
        &["CLIENT SETNAME"],
        &["CONFIG HELP x"],
        &["LATENCY LATEST x"],
        &["MEMORY STATS x"],
    ],
    &[
        &["MEMORY DOCTOR"],
        &["ACL DELUSER default"],
        &["ACL DELUSER nobody nobody2"],
        &["ACL DELUSER nobody default"],
        &["ACL DELUSER"],
    ],
];

raw::same_as_redis!(
    CASES,
    raw::FLUSHALL,
    container_calls_are_checked_as_redis_checks_them_in_resp2,
    container_calls_are_checked_as_redis_checks_them_in_resp3
);

/// A subscribed RESP2 client: a subcommand's errors come before the context's refusal.
#[test]
fn in_the_pub_sub_context_subcommand_errors_come_first() {
    let cases: &[raw::Case] = &[&[
        &["SUBSCRIBE x"],
        &["CONFIG FOO"],
        &["CONFIG GET"],
        &["CONFIG GET x"],
        &["CLIENT FOO x"],
        &["GET"],
    ]];
    raw::assert_same(cases, raw::FLUSHALL, 2);
}

#[test]
fn before_auth_subcommand_errors_come_before_noauth() {
    let (server, mut engine, _) = raw::behind_requirepass();
    let requests: &[&[&[u8]]] = &[
        &[b"CLIENT", b"FOO"],
        &[b"CLIENT"],
        &[b"CLIENT", b"ID", b"x"],
        &[b"CLIENT", b"ID"],
        &[b"CONFIG", b"GET"],
        &[b"CONFIG", b"GET", b"x"],
        &[b"ACL", b"WHOAMI", b"x"],
    ];
    for request in requests {
        let want = raw::Real::connect(server.port).call(request);
        let client = engine.connect();
        let request: Vec<bytes::Bytes> = request
            .iter()
            .map(|a| bytes::Bytes::copy_from_slice(a))
            .collect();
        let mut got = bytes::BytesMut::new();
        fake_redis::resp::encode(&engine.execute(client, &request), 2, &mut got);
        assert_eq!(
            String::from_utf8_lossy(&got),
            String::from_utf8_lossy(&want),
            "{request:?}"
        );
    }
}

/// `CLIENT LIST`'s `cmd` names a subcommand in full, and `NULL` after an unknown one.
#[test]
fn client_list_names_the_last_subcommand_in_full() {
    let mut engine = Engine::new(ManualClock::default());
    let (a, b) = (engine.connect(), engine.connect());
    let cmd_of_a = |engine: &mut Engine| {
        let reply = engine.execute(b, &argv(&format!("CLIENT LIST ID {}", a.0)));
        let Frame::Verbatim { text: line, .. } = reply else {
            panic!("CLIENT LIST replies a verbatim string, not {reply:?}");
        };
        let line = String::from_utf8_lossy(&line).into_owned();
        line.split(' ')
            .find_map(|f| f.strip_prefix("cmd="))
            .map(str::to_owned)
            .expect("a cmd field")
    };
    engine.execute(a, &argv("CONFIG GET maxmemory"));
    assert_eq!(cmd_of_a(&mut engine), "config|get");
    engine.execute(a, &argv("CLIENT FOO"));
    assert_eq!(cmd_of_a(&mut engine), "NULL");
    engine.execute(a, &argv("OBJECT HELP x"));
    assert_eq!(cmd_of_a(&mut engine), "object|help");
    engine.execute(a, &argv("GET k"));
    assert_eq!(cmd_of_a(&mut engine), "get");
}
