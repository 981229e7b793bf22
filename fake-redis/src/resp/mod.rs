//! The Redis wire protocol (RESP2 and RESP3), as Redis 7.0 speaks it.
//!
//! A fake Redis server is only useful if clients cannot tell it from the real
//! one, and the first thing a client (or a fuzzer, or a confused telnet user)
//! meets is the request parser and the reply encoder. The codec is three
//! parts, one file each, around one reply type, with the limits they share here:
//!
//! * `frame.rs`: [`Frame`], the one reply type: what the engine returns, what the encoder
//!   writes and what the reply parser reads back.
//! * `request.rs`: [`RequestParser`] turns bytes from a client into argument
//!   vectors exactly as Redis 7.0's `processInputBuffer` does, quirks
//!   included, or a [`ProtocolError`] after which the server must reply with
//!   [`ProtocolError::write_reply`] and close the connection.
//! * `encode.rs`: [`encode()`] writes a [`Frame`], the
//!   engine's own reply, for protocol version 2 or 3, byte for byte as
//!   Redis's `addReply*` functions do; [`format_double`] is how Redis prints
//!   a double.
//! * `reply.rs`: [`ReplyParser`] reads RESP2/RESP3 replies back into frames,
//!   for tests and test clients, bounded on arbitrary bytes.
//!
//! Integers on the wire (counts, lengths, `:` replies) are read with the one
//! parser of Redis's `string2ll` rules, [`number::parse_i64`], which the commands
//! share (`number.rs`, with the other number rules).

mod encode;
mod frame;
pub mod number;
mod reply;
mod request;

#[cfg(test)]
mod tests;

pub(crate) use encode::put_line;
pub use encode::{encode, format_double, format_double_shortest};
pub use frame::{Frame, error_value};
pub use reply::{ReplyError, ReplyLimits, ReplyParser};
pub use request::{ProtocolError, RequestParser, split_args};

/// Longest inline request, or `*`/`$` header line, that Redis buffers while
/// waiting for its line end (`PROTO_INLINE_MAX_SIZE`, 64 KiB). A buffer that
/// holds more than this many bytes without a line end is a protocol error.
pub const PROTO_INLINE_MAX_SIZE: usize = 64 * 1024;

/// Default largest bulk argument a client may send (`proto-max-bulk-len`,
/// 512 MiB). Change it per parser with [`RequestParser::set_max_bulk_len`].
pub const PROTO_MAX_BULK_LEN: u64 = 512 * 1024 * 1024;

/// Largest multibulk argument count Redis 7.0 accepts (`INT_MAX`).
pub const MAX_MULTIBULK_LEN: i64 = i32::MAX as i64;

/// Largest multibulk argument count accepted before the client has
/// authenticated (when authentication is required).
pub const UNAUTHENTICATED_MAX_MULTIBULK_LEN: i64 = 10;

/// Largest bulk argument accepted before the client has authenticated (when
/// authentication is required).
pub const UNAUTHENTICATED_MAX_BULK_LEN: i64 = 16 * 1024;

/// Most slots either parser reserves up front for an announced count, however
/// large the count (Redis: `min(multibulklen, 1024)`), so that a header alone
/// cannot make it allocate.
const PREALLOC_MAX: usize = 1024;
