//! Geo commands against a real Redis 7.0: each line runs on a redis-server of the test's own and
//! on the fake, in RESP2 and in RESP3, and the replies must be equal: hashes, coordinates to the
//! last digit Redis prints, distances, the order of unsorted searches, and error texts.

use crate::support;

use support::assert_table_matches_redis;

const TABLE: &[&str] = &[
    "GEOADD Sicily 13.361389 38.115556 Palermo 15.087269 37.502669 Catania",
    "GEOADD Sicily 13.361389 38.115556 Palermo",
    "GEOADD Sicily CH 13.361389 38.115557 Palermo",
    "GEOADD Sicily NX 13.5 38.1 Palermo 12.5 37.8 Marsala",
    "GEOADD Sicily XX CH 14.0 37.0 Nowhere 13.361389 38.115556 Palermo",
    "GEOADD Sicily NX XX 13 38 x",
    "GEOADD Sicily 200 10 x",
    "GEOADD Sicily 10 86 x",
    "GEOADD Sicily x 10 x",
    "GEOADD Sicily 10 10",
    "GEOADD Sicily 10 10 a 11",
    "GEOADD Sicily -180 -85.05112878 sw 180 85.05112878 ne 0 0 origin",
    "GEOADD Sicily 15.2 37.1 Siracusa 14.2 37.1 Agrigento 13.9 37.6 Caltanissetta",
    "ZRANGE Sicily 0 -1 WITHSCORES",
    "GEOPOS Sicily Palermo Catania nobody sw ne origin",
    "GEOPOS nokey a b",
    "GEOPOS Sicily",
    "GEOHASH Sicily Palermo Catania nobody sw ne origin",
    "GEOHASH nokey a",
    "GEODIST Sicily Palermo Catania",
    "GEODIST Sicily Palermo Catania km",
    "GEODIST Sicily Palermo Catania MI",
    "GEODIST Sicily Palermo Catania ft",
    "GEODIST Sicily Palermo Catania yards",
    "GEODIST Sicily Palermo Catania km x",
    "GEODIST Sicily Palermo nobody",
    "GEODIST nokey a b",
    "GEODIST Sicily sw ne",
    "GEODIST Sicily Palermo Palermo",
    "GEORADIUS Sicily 15 37 200 km",
    "GEORADIUS Sicily 15 37 200 km ASC",
    "GEORADIUS Sicily 15 37 200 km DESC WITHDIST",
    "GEORADIUS Sicily 15 37 200 km WITHDIST WITHCOORD WITHHASH",
    "GEORADIUS Sicily 15 37 200 km COUNT 2",
    "GEORADIUS Sicily 15 37 200 km COUNT 2 DESC",
    "GEORADIUS Sicily 15 37 200 km COUNT 1 ANY",
    "GEORADIUS Sicily 15 37 200 km ANY",
    "GEORADIUS Sicily 15 37 200 km COUNT 0",
    "GEORADIUS Sicily 15 37 200 km COUNT x",
    "GEORADIUS Sicily 15 37 -1 km",
    "GEORADIUS Sicily 15 37 x km",
    "GEORADIUS Sicily 15 37 200 parsecs",
    "GEORADIUS Sicily 15 37 200 km FOO",
    "GEORADIUS Sicily 15 37 0 km",
    "GEORADIUS Sicily 0 0 1 m",
    "GEORADIUS Sicily 0 0 20000 km",
    "GEORADIUS Sicily 15 37 10000 km",
    "GEORADIUS Sicily 200 37 100 km",
    "GEORADIUS nokey 15 37 200 km",
    "GEORADIUS Sicily 15 37 200 km STORE dst",
    "ZRANGE dst 0 -1 WITHSCORES",
    "GEORADIUS Sicily 15 37 200 km STOREDIST dst COUNT 2",
    "ZRANGE dst 0 -1 WITHSCORES",
    "GEORADIUS Sicily 15 37 200 km STORE dst WITHDIST",
    "GEORADIUS Sicily 15 37 1 m STORE dst",
    "EXISTS dst",
    "GEORADIUS_RO Sicily 15 37 200 km WITHDIST",
    "GEORADIUS_RO Sicily 15 37 200 km STORE dst",
    "GEORADIUSBYMEMBER Sicily Palermo 100 km",
    "GEORADIUSBYMEMBER Sicily Palermo 200 km WITHDIST WITHCOORD",
    "GEORADIUSBYMEMBER Sicily nobody 100 km",
    "GEORADIUSBYMEMBER nokey nobody 100 km",
    "GEORADIUSBYMEMBER nokey nobody 100 km STORE dst2",
    "GEORADIUSBYMEMBER_RO Sicily Catania 150 km DESC",
    "GEOSEARCH Sicily FROMMEMBER Palermo BYRADIUS 200 km",
    "GEOSEARCH Sicily FROMLONLAT 15 37 BYRADIUS 200 km ASC WITHDIST",
    "GEOSEARCH Sicily FROMLONLAT 15 37 BYBOX 400 400 km ASC WITHCOORD",
    "GEOSEARCH Sicily FROMLONLAT 15 37 BYBOX 400 400 km",
    "GEOSEARCH Sicily FROMLONLAT 15 37 BYBOX 100 300 km WITHDIST",
    "GEOSEARCH Sicily FROMMEMBER Catania BYBOX 1 1 mi",
    "GEOSEARCH Sicily FROMLONLAT 0 0 BYBOX 40000 20000 km",
    "GEOSEARCH Sicily FROMLONLAT 15 37 BYRADIUS 200 km COUNT 2 ANY",
    "GEOSEARCH Sicily FROMLONLAT 15 37",
    "GEOSEARCH Sicily BYRADIUS 200 km",
    "GEOSEARCH Sicily FROMLONLAT 15 37 FROMMEMBER Palermo BYRADIUS 1 km",
    "GEOSEARCH Sicily FROMLONLAT 15 37 BYRADIUS 1 km BYBOX 1 1 km",
    "GEOSEARCH Sicily FROMLONLAT 15 37 BYBOX -1 1 km",
    "GEOSEARCH Sicily FROMLONLAT 15 37 BYBOX x 1 km",
    "GEOSEARCH Sicily FROMLONLAT 15 37 BYBOX 1 x km",
    "GEOSEARCH Sicily FROMMEMBER nobody BYRADIUS 1 km",
    "GEOSEARCH Sicily FROMLONLAT 15 37 BYRADIUS 200 km STORE dst",
    "GEOSEARCH nokey FROMMEMBER nobody BYRADIUS 1 km",
    "GEOSEARCHSTORE dst Sicily FROMLONLAT 15 37 BYRADIUS 200 km",
    "ZRANGE dst 0 -1 WITHSCORES",
    "GEOSEARCHSTORE dst Sicily FROMLONLAT 15 37 BYRADIUS 200 km STOREDIST COUNT 3 DESC",
    "ZRANGE dst 0 -1 WITHSCORES",
    "GEOSEARCHSTORE dst Sicily FROMLONLAT 15 37 BYRADIUS 200 km WITHDIST",
    "GEOSEARCHSTORE dst nokey FROMLONLAT 15 37 BYRADIUS 200 km",
    "EXISTS dst",
    "SET str v",
    "GEOADD str 10 10 a",
    "GEOPOS str a",
    "GEOHASH str a",
    "GEODIST str a b",
    "GEORADIUS str 15 37 200 km",
    "GEOSEARCH str FROMLONLAT 15 37 BYRADIUS 200 km",
    "ZADD z 0 a 1e20 b -5 c 4503599627370496 d",
    "GEOPOS z a b c d",
    "GEOHASH z a c",
    "GEODIST z a d",
];

// In RESP2, and in RESP3 after `HELLO 3`, where coordinates are doubles.
support::table_matches_redis!(
    TABLE,
    geo_commands_reply_exactly_as_redis_7_does,
    geo_commands_in_resp3_reply_exactly_as_redis_7_does
);

/// Many points over the globe: every search's members, order and distances as Redis's, so the
/// cell choice, the nine-cell scan and the edge exclusions are Redis's.
#[tokio::test]
async fn searches_over_many_points_match_redis() {
    let mut lines = Vec::new();
    let mut x = 12345u64;
    let mut next = move || {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (x >> 11) as f64 / (1u64 << 53) as f64
    };
    for i in 0..400 {
        let lon = next() * 360.0 - 180.0;
        let lat = next() * 170.0 - 85.0;
        lines.push(format!("GEOADD world {lon:.6} {lat:.6} p{i}"));
    }
    for (lon, lat, r) in [
        (0.0, 0.0, 3000.0),
        (179.9, 10.0, 2000.0),
        (-179.9, -70.0, 1500.0),
        (10.0, 84.0, 800.0),
        (100.0, -30.0, 5000.0),
        (50.0, 45.0, 100.0),
    ] {
        lines.push(format!("GEORADIUS world {lon} {lat} {r} km WITHDIST"));
        lines.push(format!(
            "GEOSEARCH world FROMLONLAT {lon} {lat} BYBOX {r} {r} km WITHHASH"
        ));
        lines.push(format!(
            "GEOSEARCH world FROMLONLAT {lon} {lat} BYRADIUS {r} km COUNT 5 WITHCOORD"
        ));
    }
    lines.push("GEORADIUSBYMEMBER world p7 4000 km".into());
    lines.push("GEOHASH world p1 p2 p3 p4 p5".into());
    lines.push("GEOPOS world p1 p2 p3".into());
    let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
    assert_table_matches_redis(&lines, false).await;
}

/// A search scans each cell's score range from its start: members below and above every cell,
/// negative scores and scores past the geohash range among them, are never met.
#[tokio::test]
async fn searches_scan_only_their_cells_score_ranges() {
    assert_table_matches_redis(
        &[
            "ZADD mixed -1e300 low -5 neg 0 zero 1e20 huge 4503599627370495 top",
            "GEOADD mixed 13.361389 38.115556 Palermo 15.087269 37.502669 Catania",
            "GEOADD mixed -179.99 -84.9 southwest 179.99 84.9 northeast",
            "GEOSEARCH mixed FROMLONLAT 15 37 BYRADIUS 200 km ASC",
            "GEOSEARCH mixed FROMLONLAT -180 -85 BYBOX 100 100 km",
            "GEOSEARCH mixed FROMLONLAT 180 85 BYRADIUS 100 km",
            "GEORADIUS mixed 0 0 100 km",
            "GEORADIUSBYMEMBER mixed Palermo 300 km DESC WITHDIST",
            "GEOSEARCHSTORE out mixed FROMMEMBER Catania BYRADIUS 200 km",
            "ZRANGE out 0 -1 WITHSCORES",
            "GEOSEARCHSTORE out mixed FROMLONLAT 0 0 BYRADIUS 1 km",
            "EXISTS out",
        ],
        false,
    )
    .await;
}

/// Coordinates, radii and box sides that `strtod` cannot hold (underflowing to zero or
/// overflowing to infinity) are refused with each argument's own error, as sorted-set scores are.
#[tokio::test]
async fn out_of_range_floats_are_refused_with_each_argument_s_error() {
    assert_table_matches_redis(
        &[
            "GEOADD under 1e-400 10 bad",
            "GEOADD under 10 -1e-400 bad",
            "GEOADD under 1e-310 10 tiny 0.0e-400 0 zero",
            "GEOADD under 1e400 10 bad",
            "GEOSEARCH under FROMLONLAT 0 0 BYRADIUS 1e-400 km",
            "GEOSEARCH under FROMLONLAT 0 0 BYRADIUS 1e400 km",
            "GEOSEARCH under FROMLONLAT 1e-400 0 BYRADIUS 1 km",
            "GEOSEARCH under FROMLONLAT 0 0 BYBOX 1e-400 1 km",
            "GEOSEARCH under FROMLONLAT 0 0 BYBOX 1 1e-400 km",
            "GEORADIUS under 0 1e-400 10 km",
            "GEORADIUS under 0 0 1e-400 km",
            "GEORADIUSBYMEMBER under tiny 1e-400 km",
            "ZADD under 1e-400 z",
            "ZRANGE under 0 -1 WITHSCORES",
        ],
        false,
    )
    .await;
}

/// Coordinates on the wire, byte for byte: Redis prints them as a long double (`%.17Lf`, trailing
/// zeros cut), as a bulk string in RESP2 and as a double's text in RESP3, so a RESP3 client reads
/// `,13.36138933897018433` where a double would print `,13.361389338970184`. The distances are
/// `%.4f` bulk strings in both; a script that asks for RESP3 gets the coordinate as a number.
const COORDINATES: &[support::raw::Case] = &[&[
    &[
        "GEOADD",
        "Sicily",
        "13.361389",
        "38.115556",
        "Palermo",
        "15.087269",
        "37.502669",
        "Catania",
        "0",
        "0",
        "origin",
    ],
    &["GEOPOS Sicily Palermo Catania origin nobody"],
    &[
        "GEORADIUS",
        "Sicily",
        "15",
        "37",
        "200",
        "km",
        "WITHCOORD",
        "WITHDIST",
        "ASC",
    ],
    &[
        "GEOSEARCH",
        "Sicily",
        "FROMMEMBER",
        "origin",
        "BYRADIUS",
        "10",
        "km",
        "WITHCOORD",
    ],
    &[
        "EVAL",
        "redis.setresp(3); return redis.call('GEOPOS', KEYS[1], 'Palermo')",
        "1",
        "Sicily",
    ],
]];

#[test]
fn coordinates_are_written_byte_for_byte_as_redis_writes_them() {
    support::raw::assert_same(COORDINATES, support::raw::FLUSHALL, 2);
    support::raw::assert_same(COORDINATES, support::raw::FLUSHALL, 3);
}
