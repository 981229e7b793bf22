//! The one reply type: a value of RESP3, the richer of Redis's two protocols.
//!
//! Commands build their replies as Redis's `addReply*` functions do: a hash's fields are a
//! [`Frame::Map`], a missing value is [`Frame::Null`], a pub/sub message is a [`Frame::Push`]. A
//! client that speaks RESP2 (every client, until it sends `HELLO 3`) sees them downgraded the way
//! Redis downgrades them: a map becomes a flat array of its keys and values, a set an array, a
//! double a bulk string, a boolean an integer, a push an array, and the two nulls become `$-1` and
//! `*-1`.
//!
//! The same type is what the wire carries both ways: the codec's encoder
//! ([`resp::encode`](crate::resp::encode())) writes a frame straight into a connection's output for
//! either protocol, and its reply parser ([`ReplyParser`](crate::resp::ReplyParser)) reads Redis's
//! replies back into frames. So the variants cover every reply Redis 7.0 can send, including the
//! two the engine's commands do not build: big numbers (a script's `big_number`) and verbatim
//! strings (`CLIENT INFO` in RESP3). The front doors that are not a wire convert instead:
//! [`Frame::to_redis_value`] for the `redis` crate, [`Frame::to_resp2`] for comparing with what a
//! RESP2 client sees (a user of the fake with a reply type of its own, such as the lock's, converts
//! from that).

use crate::resp::format_double;
use bytes::{Bytes, BytesMut};
use std::borrow::Cow;
use std::fmt;

/// One reply, in RESP3's vocabulary; each variant says how it is written for RESP2 and RESP3.
#[derive(Clone, Debug, PartialEq)]
pub enum Frame {
    /// A simple string (`+OK`). A `\r` or `\n` in it is written as a space, so the reply stays
    /// one line.
    Simple(Cow<'static, str>),
    /// An error, its full text with the code first (`ERR syntax error`), without the `-`. A `\r`
    /// or `\n` in it is written as a space.
    Error(Cow<'static, str>),
    /// An error whose text is not UTF-8, its bytes as a client sent them (an unknown command
    /// named in bytes that are not text, echoed back as Redis echoes it). Written as
    /// [`Frame::Error`] is; [`Frame::error_from_bytes`] picks between the two.
    ErrorBytes(Bytes),
    /// An integer (`:1`).
    Integer(i64),
    /// A bulk string (`$3\r\nfoo`).
    Bulk(Bytes),
    /// A null value: `$-1` in RESP2, `_` in RESP3 (a missing key's `GET`).
    Null,
    /// A null array: `*-1` in RESP2, `_` in RESP3 (an `EXEC` aborted by `WATCH`).
    NullArray,
    /// An array (`*N`).
    Array(Vec<Frame>),
    /// A map of key/value pairs, in order (`HGETALL`, `HELLO`): `%N` in RESP3, an array of its
    /// 2N keys and values in RESP2.
    Map(Vec<(Frame, Frame)>),
    /// A set (unordered in principle; kept in the order the engine produced): `~N` in RESP3, an
    /// array in RESP2.
    Set(Vec<Frame>),
    /// A double: `,<text>` in RESP3, a bulk string of the same text in RESP2, the text being
    /// [`format_double`]'s.
    Double(f64),
    /// A double already printed, as Redis's `addReplyHumanLongDouble` prints a long double (a
    /// geo coordinate: `%.17Lf` with its trailing zeros cut, so `13.36138933897018433`, where
    /// [`Frame::Double`] would print `13.361389338970184`): `,<text>` in RESP3, a bulk string of
    /// the same text in RESP2. The text must be a number a client can parse.
    DoubleText(Cow<'static, str>),
    /// A boolean: `#t`/`#f` in RESP3, the integer 1 or 0 in RESP2.
    Boolean(bool),
    /// An out-of-band push (a pub/sub message or subscription confirmation): `>N` in RESP3, an
    /// array in RESP2.
    Push(Vec<Frame>),
    /// A big number as its decimal text (a script's `big_number`): `(` in RESP3, a bulk string
    /// in RESP2. The text is written unchanged, so it must be an optional `-` and digits.
    BigNumber(Cow<'static, str>),
    /// A verbatim string (`CLIENT INFO` in RESP3): `=<len>\r\n<format>:<text>` in RESP3, a bulk
    /// string of the text in RESP2.
    Verbatim {
        /// The three-byte format Redis names the text with: `txt` or `mkd`.
        format: [u8; 3],
        /// The text itself, without the `format:` prefix.
        text: Bytes,
    },
    /// A reply with attributes ahead of it (`DEBUG PROTOCOL attrib`): in RESP3 `|N` and the N
    /// key/value pairs, then the reply; in RESP2, which has no attributes, the reply alone, as
    /// Redis answers a RESP2 client the same call.
    Attribute {
        /// The attributes' key/value pairs, in order.
        attributes: Vec<(Frame, Frame)>,
        /// The reply they annotate.
        value: Box<Frame>,
    },
}

impl Frame {
    /// `+OK`.
    pub const OK: Frame = Frame::Simple(Cow::Borrowed("OK"));

    /// A simple string from static text.
    pub const fn simple(s: &'static str) -> Frame {
        Frame::Simple(Cow::Borrowed(s))
    }

    /// An error reply with static text (code first).
    pub const fn error(s: &'static str) -> Frame {
        Frame::Error(Cow::Borrowed(s))
    }

    /// An error reply with computed text (code first).
    pub fn error_owned(s: String) -> Frame {
        Frame::Error(Cow::Owned(s))
    }

    /// An error reply from text that may not be UTF-8: [`Frame::Error`] when it is,
    /// [`Frame::ErrorBytes`] otherwise.
    pub fn error_from_bytes(text: Vec<u8>) -> Frame {
        match String::from_utf8(text) {
            Ok(text) => Frame::Error(Cow::Owned(text)),
            Err(bytes) => Frame::ErrorBytes(Bytes::from(bytes.into_bytes())),
        }
    }

    /// Whether this is an error reply (of either kind).
    pub fn is_error(&self) -> bool {
        matches!(self, Frame::Error(_) | Frame::ErrorBytes(_))
    }

    /// A bulk string from anything that converts to bytes.
    pub fn bulk(b: impl Into<Bytes>) -> Frame {
        Frame::Bulk(b.into())
    }

    /// Text a person reads (`INFO`, `CLIENT LIST`): a verbatim string of format `txt` in RESP3,
    /// a bulk string in RESP2, as Redis replies.
    pub fn text(text: impl Into<Bytes>) -> Frame {
        Frame::Verbatim {
            format: *b"txt",
            text: text.into(),
        }
    }

    /// A bulk string copied from a slice.
    pub fn bulk_from(b: &[u8]) -> Frame {
        Frame::Bulk(Bytes::copy_from_slice(b))
    }

    /// The error text, if this is an error reply whose text is UTF-8 (not a
    /// [`Frame::ErrorBytes`]; [`Frame::is_error`] tells either).
    pub fn error_text(&self) -> Option<&str> {
        match self {
            Frame::Error(e) => Some(e),
            _ => None,
        }
    }

    /// The frame as a RESP2 client receives it: maps flattened, sets and pushes as arrays,
    /// doubles, big numbers and verbatim strings as bulk strings, booleans as integers (nulls
    /// stay distinct: `$-1` and `*-1`).
    pub fn to_resp2(self) -> Frame {
        match self {
            Frame::Map(pairs) => Frame::Array(
                pairs
                    .into_iter()
                    .flat_map(|(k, v)| [k.to_resp2(), v.to_resp2()])
                    .collect(),
            ),
            Frame::Set(items) | Frame::Push(items) | Frame::Array(items) => {
                Frame::Array(items.into_iter().map(Frame::to_resp2).collect())
            }
            Frame::Double(d) => Frame::Bulk(Bytes::from(format_double(d))),
            Frame::Boolean(b) => Frame::Integer(i64::from(b)),
            Frame::BigNumber(digits) | Frame::DoubleText(digits) => Frame::Bulk(text_bytes(digits)),
            Frame::Verbatim { text, .. } => Frame::Bulk(text),
            Frame::Attribute { value, .. } => value.to_resp2(),
            other => other,
        }
    }

    /// The frame as a `redis` crate value, for a client speaking `protocol` (2 or 3).
    ///
    /// Errors become `Value::ServerError`, parsed from their text as the crate parses the wire,
    /// so the crate maps codes (`NOSCRIPT`, `EXECABORT`, …) to its error kinds as it would.
    pub fn to_redis_value(self, protocol: u8) -> redis::Value {
        use redis::Value;
        let frame = if protocol >= 3 { self } else { self.to_resp2() };
        match frame {
            Frame::Simple(s) if s == "OK" => Value::Okay,
            Frame::Simple(s) => Value::SimpleString(s.into_owned()),
            Frame::Error(e) => error_value(&e),
            Frame::ErrorBytes(e) => error_value(&String::from_utf8_lossy(&e)),
            Frame::Integer(n) => Value::Int(n),
            Frame::Bulk(b) => Value::BulkString(b.to_vec()),
            Frame::Null | Frame::NullArray => Value::Nil,
            Frame::Array(items) => Value::Array(
                items
                    .into_iter()
                    .map(|f| f.to_redis_value(protocol))
                    .collect(),
            ),
            Frame::Map(pairs) => Value::Map(
                pairs
                    .into_iter()
                    .map(|(k, v)| (k.to_redis_value(protocol), v.to_redis_value(protocol)))
                    .collect(),
            ),
            Frame::Set(items) => Value::Set(
                items
                    .into_iter()
                    .map(|f| f.to_redis_value(protocol))
                    .collect(),
            ),
            Frame::Double(d) => Value::Double(d),
            Frame::DoubleText(text) => Value::Double(text.parse().unwrap_or(f64::NAN)),
            Frame::Boolean(b) => Value::Boolean(b),
            Frame::Push(items) => {
                let mut items = items.into_iter().map(|f| f.to_redis_value(protocol));
                let kind = match items.next() {
                    Some(Value::BulkString(k)) => push_kind(&k),
                    _ => redis::PushKind::Other(String::new()),
                };
                Value::Push {
                    kind,
                    data: items.collect(),
                }
            }
            Frame::Attribute { attributes, value } => Value::Attribute {
                data: Box::new(value.to_redis_value(protocol)),
                attributes: attributes
                    .into_iter()
                    .map(|(k, v)| (k.to_redis_value(protocol), v.to_redis_value(protocol)))
                    .collect(),
            },
            // How the crate holds these depends on its features (a big number is a `BigInt` with
            // `num-bigint`, bytes without), so its own parser builds them.
            leaf @ (Frame::BigNumber(_) | Frame::Verbatim { .. }) => {
                let mut wire = BytesMut::new();
                crate::resp::encode(&leaf, 3, &mut wire);
                parsed_value(&wire)
            }
        }
    }
}

/// A big number's or printed double's text as bulk-string bytes, copied only if it was computed.
fn text_bytes(text: Cow<'static, str>) -> Bytes {
    match text {
        Cow::Borrowed(s) => Bytes::from_static(s.as_bytes()),
        Cow::Owned(s) => Bytes::from(s),
    }
}

fn push_kind(kind: &[u8]) -> redis::PushKind {
    use redis::PushKind as K;
    match kind {
        b"message" => K::Message,
        b"pmessage" => K::PMessage,
        b"smessage" => K::SMessage,
        b"subscribe" => K::Subscribe,
        b"psubscribe" => K::PSubscribe,
        b"ssubscribe" => K::SSubscribe,
        b"unsubscribe" => K::Unsubscribe,
        b"punsubscribe" => K::PUnsubscribe,
        b"sunsubscribe" => K::SUnsubscribe,
        b"invalidate" => K::Invalidate,
        other => K::Other(String::from_utf8_lossy(other).into_owned()),
    }
}

/// A `Value::ServerError` with exactly this error text, built by the crate's own parser.
pub fn error_value(text: &str) -> redis::Value {
    let mut wire = BytesMut::with_capacity(text.len() + 3);
    crate::resp::put_line(&mut wire, b'-', text.as_bytes());
    parsed_value(&wire)
}

/// One encoded reply as the `redis` crate parses it from the wire.
fn parsed_value(wire: &[u8]) -> redis::Value {
    redis::parse_redis_value(wire).unwrap_or_else(|_| {
        redis::Value::SimpleString(String::from_utf8_lossy(wire).trim_end().to_owned())
    })
}

impl fmt::Display for Frame {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Frame::Simple(s) => f.write_str(s),
            Frame::Error(e) => write!(f, "(error) {e}"),
            Frame::ErrorBytes(e) => write!(f, "(error) {}", e.escape_ascii()),
            Frame::Integer(n) => write!(f, "(integer) {n}"),
            Frame::Bulk(b) | Frame::Verbatim { text: b, .. } => {
                write!(f, "{:?}", String::from_utf8_lossy(b))
            }
            Frame::Null | Frame::NullArray => f.write_str("(nil)"),
            Frame::Double(d) => write!(f, "(double) {}", format_double(*d)),
            Frame::DoubleText(text) => write!(f, "(double) {text}"),
            Frame::BigNumber(n) => write!(f, "(big number) {n}"),
            Frame::Boolean(b) => write!(f, "({b})"),
            Frame::Array(items) | Frame::Set(items) | Frame::Push(items) => {
                f.write_str("[")?;
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{item}")?;
                }
                f.write_str("]")
            }
            Frame::Map(pairs) => write_pairs(f, pairs),
            Frame::Attribute { attributes, value } => {
                f.write_str("(attributes) ")?;
                write_pairs(f, attributes)?;
                write!(f, " {value}")
            }
        }
    }
}

/// `{k: v, ...}`.
fn write_pairs(f: &mut fmt::Formatter<'_>, pairs: &[(Frame, Frame)]) -> fmt::Result {
    f.write_str("{")?;
    for (i, (k, v)) in pairs.iter().enumerate() {
        if i > 0 {
            f.write_str(", ")?;
        }
        write!(f, "{k}: {v}")?;
    }
    f.write_str("}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resp2_flattens_maps_and_keeps_nulls_apart() {
        let map = Frame::Map(vec![(Frame::bulk("f"), Frame::bulk("v"))]);
        assert_eq!(
            map.to_resp2(),
            Frame::Array(vec![Frame::bulk("f"), Frame::bulk("v")])
        );
        assert_eq!(Frame::Null.to_resp2(), Frame::Null);
        assert_eq!(Frame::NullArray.to_resp2(), Frame::NullArray);
        assert_eq!(Frame::Boolean(true).to_resp2(), Frame::Integer(1));
    }

    #[test]
    fn errors_become_the_crates_error_kinds() {
        let v = Frame::error("NOSCRIPT No matching script. Please use EVAL.").to_redis_value(2);
        let err = v.extract_error().unwrap_err();
        assert_eq!(
            err.kind(),
            redis::ErrorKind::Server(redis::ServerErrorKind::NoScript)
        );
        let v = Frame::error("WRONGTYPE Operation against a key holding the wrong kind of value")
            .to_redis_value(2);
        let err = v.extract_error().unwrap_err();
        assert_eq!(err.code(), Some("WRONGTYPE"));
    }

    #[test]
    fn wire_frames_encode_as_the_engine_built_them() {
        let map = Frame::Map(vec![(Frame::bulk("f"), Frame::Boolean(true))]);
        let mut out = bytes::BytesMut::new();
        crate::resp::encode(&map, 3, &mut out);
        assert_eq!(&out[..], b"%1\r\n$1\r\nf\r\n#t\r\n");
        out.clear();
        crate::resp::encode(&map, 2, &mut out);
        assert_eq!(&out[..], b"*2\r\n$1\r\nf\r\n:1\r\n");
        out.clear();
        crate::resp::encode(&Frame::NullArray, 2, &mut out);
        assert_eq!(&out[..], b"*-1\r\n");
    }

    #[test]
    fn the_front_doors_print_doubles_as_the_wire_does() {
        let nan = Frame::Double(-f64::NAN);
        assert_eq!(nan.clone().to_resp2(), Frame::bulk("-nan"));
        assert_eq!(Frame::Double(-0.0).to_string(), "(double) -0");
    }

    #[test]
    fn big_numbers_and_verbatim_strings_are_bulk_strings_in_resp2() {
        let big = Frame::BigNumber("-12345678901234567890".into());
        let info = Frame::Verbatim {
            format: *b"txt",
            text: Bytes::from_static(b"id=1 resp=3"),
        };
        assert_eq!(big.clone().to_resp2(), Frame::bulk("-12345678901234567890"));
        assert_eq!(info.clone().to_resp2(), Frame::bulk("id=1 resp=3"));
        assert_eq!(
            big.clone().to_redis_value(2),
            redis::Value::BulkString(b"-12345678901234567890".to_vec())
        );
        assert!(matches!(big.to_redis_value(3), redis::Value::BigNumber(_)));
        let info = Frame::Verbatim {
            format: *b"txt",
            text: Bytes::from_static(b"id=1 resp=3"),
        };
        assert_eq!(
            info.to_redis_value(3),
            redis::Value::VerbatimString {
                format: redis::VerbatimFormat::Text,
                text: "id=1 resp=3".into(),
            }
        );
    }

    #[test]
    fn doubles_print_as_redis_does() {
        assert_eq!(format_double(10.5), "10.5");
        assert_eq!(format_double(3.0), "3");
        assert_eq!(format_double(0.1), "0.10000000000000001");
        assert_eq!(format_double(1e20), "1e+20");
        assert_eq!(format_double(f64::INFINITY), "inf");
    }
}
