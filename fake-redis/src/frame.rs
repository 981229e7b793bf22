//! The engine's reply type: one value of RESP3, the richer of Redis's two protocols.
//!
//! Commands build their replies as Redis's `addReply*` functions do: a hash's fields are a
//! [`Frame::Map`], a missing value is [`Frame::Null`], a pub/sub message is a [`Frame::Push`]. A
//! client that speaks RESP2 (every client, until it sends `HELLO 3`) sees them downgraded the way
//! Redis downgrades them: a map becomes a flat array of its keys and values, a set an array, a
//! double a bulk string, a boolean an integer, a push an array, and the two nulls become `$-1` and
//! `*-1`. [`Frame::to_resp2`] does that downgrade; encoders and front doors decide the bytes.

use crate::resp::format_double;
use bytes::Bytes;
use std::borrow::Cow;
use std::fmt;

/// One reply, in RESP3's vocabulary.
#[derive(Clone, Debug, PartialEq)]
pub enum Frame {
    /// A simple string (`+OK`).
    Simple(Cow<'static, str>),
    /// An error, its full text with the code first (`ERR syntax error`).
    Error(Cow<'static, str>),
    /// An integer (`:1`).
    Integer(i64),
    /// A bulk string (`$3\r\nfoo`).
    Bulk(Bytes),
    /// A null value: `$-1` in RESP2, `_` in RESP3 (a missing key's `GET`).
    Null,
    /// A null array: `*-1` in RESP2, `_` in RESP3 (an `EXEC` aborted by `WATCH`).
    NullArray,
    /// An array.
    Array(Vec<Frame>),
    /// A map of key/value pairs, in order (`HGETALL`, `HELLO`).
    Map(Vec<(Frame, Frame)>),
    /// A set (unordered in principle; kept in the order the engine produced).
    Set(Vec<Frame>),
    /// A double.
    Double(f64),
    /// A boolean.
    Boolean(bool),
    /// An out-of-band push (a pub/sub message or subscription confirmation).
    Push(Vec<Frame>),
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

    /// A bulk string from anything that converts to bytes.
    pub fn bulk(b: impl Into<Bytes>) -> Frame {
        Frame::Bulk(b.into())
    }

    /// A bulk string copied from a slice.
    pub fn bulk_from(b: &[u8]) -> Frame {
        Frame::Bulk(Bytes::copy_from_slice(b))
    }

    /// Whether this is an error reply.
    pub fn is_error(&self) -> bool {
        matches!(self, Frame::Error(_))
    }

    /// The error text, if this is an error reply.
    pub fn error_text(&self) -> Option<&str> {
        match self {
            Frame::Error(e) => Some(e),
            _ => None,
        }
    }

    /// The frame as a RESP2 client receives it: maps flattened, sets and pushes as arrays,
    /// doubles as bulk strings, booleans as integers (nulls stay distinct: `$-1` and `*-1`).
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
            other => other,
        }
    }

    /// The frame as a [`lock_core::Reply`] (RESP2's shape; nulls become `Nil`).
    pub fn to_reply(&self) -> lock_core::Reply {
        use lock_core::Reply;
        match self {
            Frame::Simple(s) => Reply::Status(s.to_string()),
            Frame::Error(e) => Reply::Error(e.to_string()),
            Frame::Integer(n) => Reply::Int(*n),
            Frame::Bulk(b) => Reply::Bulk(b.clone()),
            Frame::Null | Frame::NullArray => Reply::Nil,
            Frame::Array(items) | Frame::Set(items) | Frame::Push(items) => {
                Reply::Array(items.iter().map(Frame::to_reply).collect())
            }
            Frame::Map(pairs) => Reply::Array(
                pairs
                    .iter()
                    .flat_map(|(k, v)| [k.to_reply(), v.to_reply()])
                    .collect(),
            ),
            Frame::Double(d) => Reply::Bulk(Bytes::from(format_double(*d))),
            Frame::Boolean(b) => Reply::Int(i64::from(*b)),
        }
    }

    /// A [`lock_core::Reply`] (a native script's result) as a frame.
    pub fn from_reply(reply: lock_core::Reply) -> Frame {
        use lock_core::Reply;
        match reply {
            Reply::Nil => Frame::Null,
            Reply::Int(n) => Frame::Integer(n),
            Reply::Bulk(b) => Frame::Bulk(b),
            Reply::Status(s) => Frame::Simple(Cow::Owned(s)),
            Reply::Error(e) => Frame::Error(Cow::Owned(e)),
            Reply::Array(items) => Frame::Array(items.into_iter().map(Frame::from_reply).collect()),
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
        }
    }
}

/// The one bridge from the engine's replies to the wire codec: [`crate::resp::encode`] writes the
/// result for a RESP2 or RESP3 client, so the bytes are decided in one place.
impl From<Frame> for crate::resp::Frame {
    fn from(frame: Frame) -> crate::resp::Frame {
        use crate::resp::Frame as Wire;
        let all = |items: Vec<Frame>| items.into_iter().map(Wire::from).collect();
        match frame {
            Frame::Simple(s) => Wire::Simple(s.into_owned()),
            Frame::Error(e) => Wire::Error(e.into_owned()),
            Frame::Integer(n) => Wire::Integer(n),
            Frame::Bulk(b) => Wire::Bulk(b),
            Frame::Null => Wire::Null,
            Frame::NullArray => Wire::NullArray,
            Frame::Array(items) => Wire::Array(all(items)),
            Frame::Map(pairs) => Wire::Map(
                pairs
                    .into_iter()
                    .map(|(k, v)| (Wire::from(k), Wire::from(v)))
                    .collect(),
            ),
            Frame::Set(items) => Wire::Set(all(items)),
            Frame::Double(d) => Wire::Double(d),
            Frame::Boolean(b) => Wire::Boolean(b),
            Frame::Push(items) => Wire::Push(all(items)),
        }
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
    let mut wire = Vec::with_capacity(text.len() + 3);
    wire.push(b'-');
    // An error line cannot hold a line break; Redis replaces them with spaces too.
    wire.extend(
        text.bytes()
            .map(|b| if b == b'\r' || b == b'\n' { b' ' } else { b }),
    );
    wire.extend_from_slice(b"\r\n");
    redis::parse_redis_value(&wire)
        .unwrap_or_else(|_| redis::Value::SimpleString(format!("-{text}")))
}

impl fmt::Display for Frame {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Frame::Simple(s) => f.write_str(s),
            Frame::Error(e) => write!(f, "(error) {e}"),
            Frame::Integer(n) => write!(f, "(integer) {n}"),
            Frame::Bulk(b) => write!(f, "{:?}", String::from_utf8_lossy(b)),
            Frame::Null | Frame::NullArray => f.write_str("(nil)"),
            Frame::Double(d) => write!(f, "(double) {}", format_double(*d)),
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
            Frame::Map(pairs) => {
                f.write_str("{")?;
                for (i, (k, v)) in pairs.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{k}: {v}")?;
                }
                f.write_str("}")
            }
        }
    }
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
        crate::resp::encode(&map.clone().into(), 3, &mut out);
        assert_eq!(&out[..], b"%1\r\n$1\r\nf\r\n#t\r\n");
        out.clear();
        crate::resp::encode(&map.into(), 2, &mut out);
        assert_eq!(&out[..], b"*2\r\n$1\r\nf\r\n:1\r\n");
        out.clear();
        crate::resp::encode(&Frame::NullArray.into(), 2, &mut out);
        assert_eq!(&out[..], b"*-1\r\n");
    }

    #[test]
    fn the_front_doors_print_doubles_as_the_wire_does() {
        let nan = Frame::Double(-f64::NAN);
        assert_eq!(nan.clone().to_resp2(), Frame::bulk("-nan"));
        assert_eq!(nan.to_reply(), lock_core::Reply::Bulk(Bytes::from("-nan")));
        assert_eq!(Frame::Double(-0.0).to_string(), "(double) -0");
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
