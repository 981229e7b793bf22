//! How `ACL LIST` and `ACL GETUSER` describe a user after Redis 7.0: Redis 7.2 and later keep the
//! command rules as given, each once and in the order last given, where 7.0 computed them from
//! the permissions; Redis 7.4 sets `sanitize-payload` on every user it creates, and Valkey takes
//! the payload flags without listing them and adds its `databases` field. The replies were read
//! off redis-server 7.4.1 and valkey-server 9.1.2; with `REDIS_7_4_SERVER` or `VALKEY_SERVER`
//! naming a binary, the test asks that server too.

use crate::versions_7_4::assert_calls;
use fake_redis::Version;

const REDIS_7_4: &[(&[&str], &str)] = &[
    (
        &[
            "ACL", "SETUSER", "t", "on", ">pw", "+@hash", "-@slow", "+get", "~k*", "%R~r*", "&ch*",
        ],
        "+OK\r\n",
    ),
    (
        &["ACL", "GETUSER", "t"],
        "*12\r\n$5\r\nflags\r\n*2\r\n$2\r\non\r\n$16\r\nsanitize-payload\r\n$9\r\npasswords\r\n*1\r\n$64\r\n30c952fab122c3f9759f02a6d95c3758b246b4fee239957b2d4fee46e26170c4\r\n$8\r\ncommands\r\n$24\r\n-@all +@hash -@slow +get\r\n$4\r\nkeys\r\n$9\r\n~k* %R~r*\r\n$8\r\nchannels\r\n$4\r\n&ch*\r\n$9\r\nselectors\r\n*0\r\n",
    ),
    (
        &[
            "ACL",
            "SETUSER",
            "w",
            "+@all",
            "-@dangerous",
            "+@hash",
            "-hset",
            "+hset",
        ],
        "+OK\r\n",
    ),
    (
        &[
            "ACL",
            "SETUSER",
            "c",
            "+@all",
            "-config",
            "+config|get",
            "-@admin",
            "+select|0",
            "+CLIENT|ID",
            "-client",
        ],
        "+OK\r\n",
    ),
    (
        &["ACL", "SETUSER", "r", "reset", "+@read", "-@all", "+get"],
        "+OK\r\n",
    ),
    (
        &[
            "ACL",
            "SETUSER",
            "s",
            "skip-sanitize-payload",
            "+acl|whoami",
            "+acl",
            "-acl|cat",
            "(+get ~x)",
            "(-@all +set)",
        ],
        "+OK\r\n",
    ),
    (
        &["ACL", "GETUSER", "s"],
        "*12\r\n$5\r\nflags\r\n*2\r\n$3\r\noff\r\n$21\r\nskip-sanitize-payload\r\n$9\r\npasswords\r\n*0\r\n$8\r\ncommands\r\n$19\r\n-@all +acl -acl|cat\r\n$4\r\nkeys\r\n$0\r\n\r\n$8\r\nchannels\r\n$0\r\n\r\n$9\r\nselectors\r\n*2\r\n*6\r\n$8\r\ncommands\r\n$10\r\n-@all +get\r\n$4\r\nkeys\r\n$2\r\n~x\r\n$8\r\nchannels\r\n$0\r\n\r\n*6\r\n$8\r\ncommands\r\n$10\r\n-@all +set\r\n$4\r\nkeys\r\n$0\r\n\r\n$8\r\nchannels\r\n$0\r\n\r\n",
    ),
    (
        &[
            "ACL",
            "SETUSER",
            "d",
            "sanitize-payload",
            "nocommands",
            "+debug|object",
            "-debug|object",
            "+debug",
        ],
        "-ERR Error in ACL SETUSER modifier '-debug|object': Unknown command or category name in ACL\r\n",
    ),
    (
        &["ACL", "LIST"],
        "*6\r\n$93\r\nuser c off sanitize-payload resetchannels +@all -config +config|get -@admin +select|0 -client\r\n$51\r\nuser default on nopass sanitize-payload ~* &* +@all\r\n$52\r\nuser r off sanitize-payload resetchannels -@all +get\r\n$123\r\nuser s off skip-sanitize-payload resetchannels -@all +acl -acl|cat (~x resetchannels -@all +get) (resetchannels -@all +set)\r\n$146\r\nuser t on sanitize-payload #30c952fab122c3f9759f02a6d95c3758b246b4fee239957b2d4fee46e26170c4 ~k* %R~r* resetchannels &ch* -@all +@hash -@slow +get\r\n$72\r\nuser w off sanitize-payload resetchannels +@all -@dangerous +@hash +hset\r\n",
    ),
];

const VALKEY_9_1: &[(&[&str], &str)] = &[
    (
        &[
            "ACL", "SETUSER", "t", "on", ">pw", "+@hash", "-@slow", "+get", "~k*", "%R~r*", "&ch*",
        ],
        "+OK\r\n",
    ),
    (
        &["ACL", "GETUSER", "t"],
        "*14\r\n$5\r\nflags\r\n*1\r\n$2\r\non\r\n$9\r\npasswords\r\n*1\r\n$64\r\n30c952fab122c3f9759f02a6d95c3758b246b4fee239957b2d4fee46e26170c4\r\n$8\r\ncommands\r\n$24\r\n-@all +@hash -@slow +get\r\n$4\r\nkeys\r\n$9\r\n~k* %R~r*\r\n$8\r\nchannels\r\n$4\r\n&ch*\r\n$9\r\ndatabases\r\n$6\r\nalldbs\r\n$9\r\nselectors\r\n*0\r\n",
    ),
    (
        &[
            "ACL",
            "SETUSER",
            "w",
            "+@all",
            "-@dangerous",
            "+@hash",
            "-hset",
            "+hset",
        ],
        "+OK\r\n",
    ),
    (
        &[
            "ACL",
            "SETUSER",
            "c",
            "+@all",
            "-config",
            "+config|get",
            "-@admin",
            "+select|0",
            "+CLIENT|ID",
            "-client",
        ],
        "+OK\r\n",
    ),
    (
        &["ACL", "SETUSER", "r", "reset", "+@read", "-@all", "+get"],
        "+OK\r\n",
    ),
    (
        &[
            "ACL",
            "SETUSER",
            "s",
            "skip-sanitize-payload",
            "+acl|whoami",
            "+acl",
            "-acl|cat",
            "(+get ~x)",
            "(-@all +set)",
        ],
        "+OK\r\n",
    ),
    (
        &["ACL", "GETUSER", "s"],
        "*14\r\n$5\r\nflags\r\n*1\r\n$3\r\noff\r\n$9\r\npasswords\r\n*0\r\n$8\r\ncommands\r\n$19\r\n-@all +acl -acl|cat\r\n$4\r\nkeys\r\n$0\r\n\r\n$8\r\nchannels\r\n$0\r\n\r\n$9\r\ndatabases\r\n$6\r\nalldbs\r\n$9\r\nselectors\r\n*2\r\n*8\r\n$8\r\ncommands\r\n$10\r\n-@all +get\r\n$4\r\nkeys\r\n$2\r\n~x\r\n$8\r\nchannels\r\n$0\r\n\r\n$9\r\ndatabases\r\n$6\r\nalldbs\r\n*8\r\n$8\r\ncommands\r\n$10\r\n-@all +set\r\n$4\r\nkeys\r\n$0\r\n\r\n$8\r\nchannels\r\n$0\r\n\r\n$9\r\ndatabases\r\n$6\r\nalldbs\r\n",
    ),
    (
        &[
            "ACL",
            "SETUSER",
            "d",
            "sanitize-payload",
            "nocommands",
            "+debug|object",
            "-debug|object",
            "+debug",
        ],
        "-ERR Error in ACL SETUSER modifier '-debug|object': Unknown command or category name in ACL\r\n",
    ),
    (
        &["ACL", "LIST"],
        "*6\r\n$76\r\nuser c off resetchannels +@all -config +config|get -@admin +select|0 -client\r\n$34\r\nuser default on nopass ~* &* +@all\r\n$35\r\nuser r off resetchannels -@all +get\r\n$101\r\nuser s off resetchannels -@all +acl -acl|cat (~x resetchannels -@all +get) (resetchannels -@all +set)\r\n$129\r\nuser t on #30c952fab122c3f9759f02a6d95c3758b246b4fee239957b2d4fee46e26170c4 ~k* %R~r* resetchannels &ch* -@all +@hash -@slow +get\r\n$55\r\nuser w off resetchannels +@all -@dangerous +@hash +hset\r\n",
    ),
];

#[test]
fn redis_7_4_describes_a_user_by_its_rules_as_given() {
    assert_calls(Version::V7_4, "REDIS_7_4_SERVER", REDIS_7_4);
}

#[test]
fn valkey_9_1_describes_a_user_by_its_rules_as_given() {
    assert_calls(Version::Valkey9_1, "VALKEY_SERVER", VALKEY_9_1);
}
