//! The replies a lock script or query can produce, as the server sends them.
//!
//! This is the common ground between the native script twins, the Redis backend and the fake: a
//! small RESP2 value. Error replies nested in an array (a transaction's) stay values; a top-level
//! error reply travels as an error of the backend instead.

use bytes::Bytes;
use std::fmt;

/// One RESP2 reply.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Reply {
    /// The nil bulk string (`$-1`), or a null array.
    Nil,
    /// An integer (`:n`).
    Int(i64),
    /// A bulk string (`$len`).
    Bulk(Bytes),
    /// A simple status (`+OK`).
    Status(String),
    /// An error reply (`-ERR …`), with its full text.
    Error(String),
    /// An array (`*n`).
    Array(Vec<Reply>),
}

impl Reply {
    /// A bulk string from anything that converts to bytes.
    pub fn bulk(b: impl Into<Bytes>) -> Reply {
        Reply::Bulk(b.into())
    }

    /// The integer, if this is one.
    pub fn as_int(&self) -> Option<i64> {
        match self {
            Reply::Int(n) => Some(*n),
            _ => None,
        }
    }
}

impl fmt::Display for Reply {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Reply::Nil => f.write_str("(nil)"),
            Reply::Int(n) => write!(f, "(integer) {n}"),
            Reply::Bulk(b) => write!(f, "{:?}", String::from_utf8_lossy(b)),
            Reply::Status(s) => f.write_str(s),
            Reply::Error(e) => write!(f, "(error) {e}"),
            Reply::Array(items) => {
                f.write_str("[")?;
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{item}")?;
                }
                f.write_str("]")
            }
        }
    }
}
