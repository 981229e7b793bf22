//! The Redis wire protocol (RESP2 and RESP3), as Redis 7.0 speaks it.
//!
//! A fake Redis server is only useful if clients cannot tell it from the real
//! one, and the first thing a client (or a fuzzer, or a confused telnet user)
//! meets is the request parser and the reply encoder. This module therefore
//! re-implements Redis 7.0's `processMultibulkBuffer` / `processInlineBuffer`
//! (`networking.c`) and `sdssplitargs` (`sds.c`) byte for byte, including
//! their quirks: the same limits, the same `-ERR Protocol error: ...` texts,
//! the same bytes accepted (Redis never checks the `\n` after a `\r`, nor the
//! `\r\n` after a bulk payload), and the same incremental behaviour over
//! partial input. It also provides the reply side: an encoder that writes the
//! engine's own [`Frame`] straight into an output buffer, as Redis 7.0's
//! `addReply*` functions write it for a RESP2 or a RESP3 client, and a
//! bounded, incremental [`ReplyParser`] that decodes replies back into the
//! same frames for tests and test clients (the type holds every reply Redis
//! sends; a RESP3 null, a blob error and attributes are what parsing folds).
//!
//! The module depends on nothing but `bytes`, `std`, [`Frame`] and
//! lock-core's integer parser.
//!
//! * Requests: [`RequestParser`] turns bytes from a client into argument
//!   vectors, or a [`ProtocolError`] after which the server must reply with
//!   [`ProtocolError::write_reply`] and close the connection.
//! * Replies: [`encode`] writes a [`Frame`] for protocol version 2 or 3.
//! * Client side: [`ReplyParser`] reads RESP2/RESP3 replies into [`Frame`]s.
//!
//! Integers on the wire (counts, lengths, `:` replies) are read by Redis's
//! `string2ll` rules, with the one parser of them, [`lock_core::script::parse_i64`].

use crate::frame::Frame;
use bytes::{Buf, BufMut, Bytes, BytesMut};
use lock_core::script::parse_i64;
use std::borrow::Cow;
use std::fmt;
use std::fmt::Write as _;

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

/// Most argv slots reserved up front for a multibulk request, whatever count
/// the client announced (Redis: `min(multibulklen, 1024)`).
const ARGV_PREALLOC_MAX: usize = 1024;

// ---------------------------------------------------------------------------
// Protocol errors
// ---------------------------------------------------------------------------

/// A request that Redis 7.0 rejects as a protocol error.
///
/// Redis answers each of these with `-ERR <message>\r\n` (see
/// [`ProtocolError::write_reply`]) and then closes the connection; the
/// [`Display`](fmt::Display) text is that message without `-ERR `, e.g.
/// `Protocol error: invalid bulk length`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ProtocolError {
    /// More than [`PROTO_INLINE_MAX_SIZE`] bytes buffered after a `*` without
    /// a `\r`: `Protocol error: too big mbulk count string`.
    TooBigMultibulkCount,
    /// The `*` count is not an integer or exceeds [`MAX_MULTIBULK_LEN`]:
    /// `Protocol error: invalid multibulk length`.
    InvalidMultibulkLength,
    /// The `*` count exceeds [`UNAUTHENTICATED_MAX_MULTIBULK_LEN`] before
    /// authentication: `Protocol error: unauthenticated multibulk length`.
    UnauthenticatedMultibulkLength,
    /// More than [`PROTO_INLINE_MAX_SIZE`] bytes buffered at the start of a
    /// `$` line without a `\r`: `Protocol error: too big bulk count string`.
    TooBigBulkCount,
    /// An argument header does not start with `$`:
    /// `Protocol error: expected '$', got 'X'`. The byte is the one found,
    /// except that `\r` and `\n` are shown as a space, as Redis does.
    ExpectedDollar(u8),
    /// The `$` length is not an integer, is negative, or exceeds the
    /// parser's maximum bulk length: `Protocol error: invalid bulk length`.
    InvalidBulkLength,
    /// The `$` length exceeds [`UNAUTHENTICATED_MAX_BULK_LEN`] before
    /// authentication: `Protocol error: unauthenticated bulk length`.
    UnauthenticatedBulkLength,
    /// More than [`PROTO_INLINE_MAX_SIZE`] bytes of an inline request without
    /// a `\n`: `Protocol error: too big inline request`.
    TooBigInlineRequest,
    /// An inline request with an unterminated quote, or a closing quote not
    /// followed by a space: `Protocol error: unbalanced quotes in request`.
    UnbalancedQuotes,
}

impl ProtocolError {
    /// The exact message bytes Redis sends after `-ERR ` (no line end).
    ///
    /// Unlike the [`Display`](fmt::Display) text, this keeps a non-UTF-8 byte
    /// of [`ProtocolError::ExpectedDollar`] as the raw byte.
    #[must_use]
    pub fn message_bytes(&self) -> Vec<u8> {
        let text: &str = match self {
            ProtocolError::TooBigMultibulkCount => "Protocol error: too big mbulk count string",
            ProtocolError::InvalidMultibulkLength => "Protocol error: invalid multibulk length",
            ProtocolError::UnauthenticatedMultibulkLength => {
                "Protocol error: unauthenticated multibulk length"
            }
            ProtocolError::TooBigBulkCount => "Protocol error: too big bulk count string",
            ProtocolError::ExpectedDollar(byte) => {
                let mut msg = b"Protocol error: expected '$', got '".to_vec();
                msg.push(*byte);
                msg.push(b'\'');
                return msg;
            }
            ProtocolError::InvalidBulkLength => "Protocol error: invalid bulk length",
            ProtocolError::UnauthenticatedBulkLength => {
                "Protocol error: unauthenticated bulk length"
            }
            ProtocolError::TooBigInlineRequest => "Protocol error: too big inline request",
            ProtocolError::UnbalancedQuotes => "Protocol error: unbalanced quotes in request",
        };
        text.as_bytes().to_vec()
    }

    /// Appends the reply Redis sends before closing the connection:
    /// `-ERR <message>\r\n`, byte for byte.
    pub fn write_reply(&self, out: &mut BytesMut) {
        out.put_slice(b"-ERR ");
        out.put_slice(&self.message_bytes());
        out.put_slice(b"\r\n");
    }
}

impl fmt::Display for ProtocolError {
    /// Writes the message without `-ERR `; a non-UTF-8 byte in
    /// [`ProtocolError::ExpectedDollar`] is shown as U+FFFD.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&String::from_utf8_lossy(&self.message_bytes()))
    }
}

impl std::error::Error for ProtocolError {}

// ---------------------------------------------------------------------------
// Request parser
// ---------------------------------------------------------------------------

/// Incremental parser for client requests, matching Redis 7.0's
/// `processInputBuffer` byte for byte.
///
/// Feed it the connection's input buffer with [`RequestParser::parse`]; it
/// removes the bytes it has used and keeps a partly read multibulk request
/// (the announced count, the current bulk length, the arguments read so far)
/// inside itself, as Redis keeps `multibulklen`, `bulklen` and `argv` in its
/// client struct. Call it again when more bytes arrive.
///
/// A request starting with `*` is a multibulk request; anything else is an
/// inline request (one line, split like `sdssplitargs`). Requests that
/// produce no arguments (an empty inline line, `*0`, `*-1`, any `*` count
/// `<= 0`) are skipped, as Redis skips them: [`RequestParser::parse`] never
/// returns an empty argument vector.
///
/// Quirks kept from Redis on purpose:
/// * the byte after a header's `\r` is skipped without being checked, and so
///   are the two bytes after a bulk payload;
/// * line ends are searched for like C's `strchr`, which stops at a NUL
///   byte: a NUL before the `\r` of a header (or the `\n` of an inline line)
///   makes the parser wait, until the 64 KiB limit turns it into an error;
/// * the 64 KiB "too big" errors are raised only while no line end is
///   buffered, so the outcome depends on how much the buffer holds at once,
///   as it does in Redis.
///
/// After a [`ProtocolError`] the parser stays failed and returns the same
/// error on every call: reply with [`ProtocolError::write_reply`] and close
/// the connection.
#[derive(Debug, Clone)]
pub struct RequestParser {
    /// `false` while the connection still has to authenticate.
    authenticated: bool,
    /// Largest accepted bulk length (`proto-max-bulk-len`).
    max_bulk_len: i64,
    /// Arguments still to read for the multibulk request in progress; 0 when
    /// no multibulk request is in progress (Redis `multibulklen`).
    multibulk_remaining: usize,
    /// Length of the bulk argument whose header has been read but whose
    /// payload has not (Redis `bulklen`, `-1` being `None`).
    bulk_len: Option<usize>,
    /// Arguments read so far for the multibulk request in progress.
    argv: Vec<Bytes>,
    /// The error this parser failed with, if it did.
    failed: Option<ProtocolError>,
}

impl Default for RequestParser {
    fn default() -> Self {
        Self::new()
    }
}

impl RequestParser {
    /// A parser for a connection that needs no authentication (the server
    /// has no password), with the default `proto-max-bulk-len` of 512 MiB.
    ///
    /// For a server with a password, call
    /// [`set_authenticated(false)`](RequestParser::set_authenticated) on each
    /// new connection and `set_authenticated(true)` after a successful AUTH.
    #[must_use]
    pub fn new() -> Self {
        RequestParser {
            authenticated: true,
            max_bulk_len: PROTO_MAX_BULK_LEN as i64,
            multibulk_remaining: 0,
            bulk_len: None,
            argv: Vec::new(),
            failed: None,
        }
    }

    /// Sets whether the connection counts as authenticated (Redis:
    /// `!authRequired(c)`). While it does not, a multibulk count above 10 or
    /// a bulk length above 16384 is a protocol error. Takes effect for the
    /// next header read.
    pub fn set_authenticated(&mut self, authenticated: bool) {
        self.authenticated = authenticated;
    }

    /// Whether the connection counts as authenticated (see
    /// [`RequestParser::set_authenticated`]).
    #[must_use]
    pub fn is_authenticated(&self) -> bool {
        self.authenticated
    }

    /// Sets the largest bulk argument accepted (Redis `proto-max-bulk-len`);
    /// longer ones are [`ProtocolError::InvalidBulkLength`].
    pub fn set_max_bulk_len(&mut self, max: u64) {
        self.max_bulk_len = i64::try_from(max).unwrap_or(i64::MAX);
    }

    /// The largest bulk argument accepted.
    #[must_use]
    pub fn max_bulk_len(&self) -> u64 {
        self.max_bulk_len as u64
    }

    /// Whether the parser holds no partly read request (nothing consumed
    /// from the buffer is waiting for more bytes).
    #[must_use]
    pub fn is_idle(&self) -> bool {
        self.multibulk_remaining == 0
    }

    /// Reads the next command from the front of `buf`.
    ///
    /// Returns `Ok(Some(argv))` for a complete command (never empty), with
    /// its bytes removed from `buf`; `Ok(None)` when more bytes are needed,
    /// having possibly moved complete parts of a multibulk request from `buf`
    /// into the parser; `Err` for a protocol error. Only append to `buf`
    /// between calls. Call again after `Ok(Some)`: pipelined commands are
    /// returned one per call.
    ///
    /// # Errors
    ///
    /// A [`ProtocolError`] when the bytes break the protocol as Redis 7.0
    /// sees it; the parser then returns that error on every later call.
    pub fn parse(&mut self, buf: &mut BytesMut) -> Result<Option<Vec<Bytes>>, ProtocolError> {
        if let Some(err) = self.failed {
            return Err(err);
        }
        let result = self.parse_inner(buf);
        if let Err(err) = result {
            self.failed = Some(err);
            self.argv = Vec::new();
        }
        result
    }

    fn parse_inner(&mut self, buf: &mut BytesMut) -> Result<Option<Vec<Bytes>>, ProtocolError> {
        loop {
            if self.multibulk_remaining == 0 {
                let Some(&first) = buf.first() else {
                    return Ok(None);
                };
                if first == b'*' {
                    match self.read_multibulk_header(buf)? {
                        Header::Incomplete => return Ok(None),
                        Header::Empty => continue,
                        Header::Started => {}
                    }
                } else {
                    match read_inline(buf)? {
                        None => return Ok(None),
                        Some(argv) if argv.is_empty() => continue,
                        Some(argv) => return Ok(Some(argv)),
                    }
                }
            }
            return self.read_bulks(buf);
        }
    }

    /// The `*<count>\r\n` line (the first half of `processMultibulkBuffer`).
    fn read_multibulk_header(&mut self, buf: &mut BytesMut) -> Result<Header, ProtocolError> {
        let Some(cr) = c_strchr(buf, b'\r') else {
            if buf.len() > PROTO_INLINE_MAX_SIZE {
                return Err(ProtocolError::TooBigMultibulkCount);
            }
            return Ok(Header::Incomplete);
        };
        // Redis wants one more byte after the '\r', whatever it is.
        if cr + 2 > buf.len() {
            return Ok(Header::Incomplete);
        }
        let count = match parse_i64(&buf[1..cr]) {
            Some(n) if n <= MAX_MULTIBULK_LEN => n,
            _ => return Err(ProtocolError::InvalidMultibulkLength),
        };
        if count > UNAUTHENTICATED_MAX_MULTIBULK_LEN && !self.authenticated {
            return Err(ProtocolError::UnauthenticatedMultibulkLength);
        }
        buf.advance(cr + 2);
        if count <= 0 {
            return Ok(Header::Empty);
        }
        // 1 <= count <= i32::MAX, so it fits in usize.
        let count = count as usize;
        self.multibulk_remaining = count;
        self.argv = Vec::with_capacity(count.min(ARGV_PREALLOC_MAX));
        Ok(Header::Started)
    }

    /// The `$<len>\r\n<payload>\r\n` arguments (the loop of
    /// `processMultibulkBuffer`).
    fn read_bulks(&mut self, buf: &mut BytesMut) -> Result<Option<Vec<Bytes>>, ProtocolError> {
        while self.multibulk_remaining > 0 {
            let len = match self.bulk_len {
                Some(len) => len,
                None => {
                    let Some(cr) = c_strchr(buf, b'\r') else {
                        if buf.len() > PROTO_INLINE_MAX_SIZE {
                            return Err(ProtocolError::TooBigBulkCount);
                        }
                        return Ok(None);
                    };
                    if cr + 2 > buf.len() {
                        return Ok(None);
                    }
                    if buf[0] != b'$' {
                        // addReplyErrorFormat turns '\r' and '\n' into spaces.
                        let got = match buf[0] {
                            b'\r' | b'\n' => b' ',
                            other => other,
                        };
                        return Err(ProtocolError::ExpectedDollar(got));
                    }
                    let len = match parse_i64(&buf[1..cr]) {
                        Some(n) if n >= 0 && n <= self.max_bulk_len => n,
                        _ => return Err(ProtocolError::InvalidBulkLength),
                    };
                    if len > UNAUTHENTICATED_MAX_BULK_LEN && !self.authenticated {
                        return Err(ProtocolError::UnauthenticatedBulkLength);
                    }
                    buf.advance(cr + 2);
                    let len = usize::try_from(len).map_err(|_| ProtocolError::InvalidBulkLength)?;
                    self.bulk_len = Some(len);
                    len
                }
            };
            // The payload plus two bytes Redis skips without looking at them.
            if buf.len() < len.saturating_add(2) {
                return Ok(None);
            }
            let arg = buf.split_to(len).freeze();
            buf.advance(2);
            self.argv.push(arg);
            self.bulk_len = None;
            self.multibulk_remaining -= 1;
        }
        Ok(Some(std::mem::take(&mut self.argv)))
    }
}

/// What reading a `*` header did.
enum Header {
    /// The line is not complete yet; nothing consumed.
    Incomplete,
    /// A count `<= 0`: the line was consumed and yields no command.
    Empty,
    /// A positive count: the line was consumed and arguments follow.
    Started,
}

/// One inline request (`processInlineBuffer`): `Ok(None)` when its `\n` has
/// not arrived, else its arguments (possibly none) with the line consumed.
fn read_inline(buf: &mut BytesMut) -> Result<Option<Vec<Bytes>>, ProtocolError> {
    let Some(lf) = c_strchr(buf, b'\n') else {
        if buf.len() > PROTO_INLINE_MAX_SIZE {
            return Err(ProtocolError::TooBigInlineRequest);
        }
        return Ok(None);
    };
    let end = if lf > 0 && buf[lf - 1] == b'\r' {
        lf - 1
    } else {
        lf
    };
    let argv = split_args(&buf[..end]).ok_or(ProtocolError::UnbalancedQuotes)?;
    buf.advance(lf + 1);
    Ok(Some(argv))
}

/// C `strchr(buf, needle)` over a NUL-terminated copy of `buf`: the index of
/// the first `needle`, or `None` if a NUL byte or the end comes first.
fn c_strchr(buf: &[u8], needle: u8) -> Option<usize> {
    let i = buf.iter().position(|&b| b == needle || b == 0)?;
    (buf[i] == needle).then_some(i)
}

/// C `isspace` in the "C" locale.
fn is_c_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r')
}

fn hex_value(b: u8) -> u8 {
    match b {
        b'0'..=b'9' => b - b'0',
        b'a'..=b'f' => b - b'a' + 10,
        b'A'..=b'F' => b - b'A' + 10,
        _ => 0,
    }
}

/// Redis's `sdssplitargs`: splits an inline request into arguments, or
/// `None` for unbalanced quotes.
///
/// Arguments are separated by C whitespace; an unquoted argument ends at a
/// space, `\t`, `\r` or `\n` (not at `\v` or `\f`). `"..."` understands
/// `\n \r \t \b \a \xHH` and `\<any>` for that byte; `'...'` understands
/// only `\'`. A quote may open in the middle of an argument, and a closing
/// quote must be followed by whitespace or the end of the line. The line is
/// read as a C string: it ends at its first NUL byte.
#[must_use]
pub fn split_args(line: &[u8]) -> Option<Vec<Bytes>> {
    let line = match line.iter().position(|&b| b == 0) {
        Some(nul) => &line[..nul],
        None => line,
    };
    let at = |i: usize| -> u8 { line.get(i).copied().unwrap_or(0) };
    let mut args = Vec::new();
    let mut p = 0;
    loop {
        while at(p) != 0 && is_c_space(at(p)) {
            p += 1;
        }
        if at(p) == 0 {
            return Some(args);
        }
        let mut in_double = false;
        let mut in_single = false;
        let mut done = false;
        let mut current = Vec::new();
        while !done {
            let c = at(p);
            if in_double {
                if c == b'\\'
                    && at(p + 1) == b'x'
                    && at(p + 2).is_ascii_hexdigit()
                    && at(p + 3).is_ascii_hexdigit()
                {
                    current.push(hex_value(at(p + 2)) * 16 + hex_value(at(p + 3)));
                    p += 3;
                } else if c == b'\\' && at(p + 1) != 0 {
                    p += 1;
                    current.push(match at(p) {
                        b'n' => b'\n',
                        b'r' => b'\r',
                        b't' => b'\t',
                        b'b' => 0x08,
                        b'a' => 0x07,
                        other => other,
                    });
                } else if c == b'"' {
                    if at(p + 1) != 0 && !is_c_space(at(p + 1)) {
                        return None;
                    }
                    done = true;
                } else if c == 0 {
                    return None;
                } else {
                    current.push(c);
                }
            } else if in_single {
                if c == b'\\' && at(p + 1) == b'\'' {
                    p += 1;
                    current.push(b'\'');
                } else if c == b'\'' {
                    if at(p + 1) != 0 && !is_c_space(at(p + 1)) {
                        return None;
                    }
                    done = true;
                } else if c == 0 {
                    return None;
                } else {
                    current.push(c);
                }
            } else {
                match c {
                    b' ' | b'\n' | b'\r' | b'\t' | 0 => done = true,
                    b'"' => in_double = true,
                    b'\'' => in_single = true,
                    _ => current.push(c),
                }
            }
            if at(p) != 0 {
                p += 1;
            }
        }
        args.push(Bytes::from(current));
    }
}

// ---------------------------------------------------------------------------
// The encoder
// ---------------------------------------------------------------------------

/// Appends `frame` to `out` as Redis 7.0 writes it to a client speaking
/// `protocol_version`: 3 (or more) for RESP3, anything else for RESP2.
///
/// RESP2 has no nulls, maps, sets, doubles, booleans, pushes, big numbers or
/// verbatim strings, so they are written the way Redis's `addReply*`
/// functions write them for RESP2 clients: `$-1`/`*-1`, flat arrays, bulk
/// strings and integers (see [`Frame`]'s variants).
pub fn encode(frame: &Frame, protocol_version: u8, out: &mut BytesMut) {
    let resp3 = protocol_version >= 3;
    match frame {
        Frame::Simple(text) => put_line(out, b'+', text.as_bytes()),
        Frame::Error(text) => put_line(out, b'-', text.as_bytes()),
        Frame::Integer(n) => put_header(out, b':', *n),
        Frame::Bulk(data) => put_bulk(out, data),
        Frame::Null => {
            out.put_slice(if resp3 { b"_\r\n" } else { b"$-1\r\n" });
        }
        Frame::NullArray => {
            out.put_slice(if resp3 { b"_\r\n" } else { b"*-1\r\n" });
        }
        Frame::Array(items) => put_aggregate(out, b'*', items, protocol_version),
        Frame::Set(items) => {
            put_aggregate(
                out,
                if resp3 { b'~' } else { b'*' },
                items,
                protocol_version,
            );
        }
        Frame::Push(items) => {
            put_aggregate(
                out,
                if resp3 { b'>' } else { b'*' },
                items,
                protocol_version,
            );
        }
        Frame::Map(pairs) => {
            if resp3 {
                put_header(out, b'%', len_i64(pairs.len()));
            } else {
                put_header(out, b'*', len_i64(pairs.len()).saturating_mul(2));
            }
            for (key, value) in pairs {
                encode(key, protocol_version, out);
                encode(value, protocol_version, out);
            }
        }
        Frame::Double(d) => {
            let text = format_double(*d);
            if resp3 {
                out.put_u8(b',');
                out.put_slice(text.as_bytes());
                out.put_slice(b"\r\n");
            } else {
                put_bulk(out, text.as_bytes());
            }
        }
        Frame::Boolean(b) => {
            if resp3 {
                out.put_slice(if *b { b"#t\r\n" } else { b"#f\r\n" });
            } else {
                out.put_slice(if *b { b":1\r\n" } else { b":0\r\n" });
            }
        }
        Frame::BigNumber(digits) => {
            if resp3 {
                put_line(out, b'(', digits.as_bytes());
            } else {
                put_bulk(out, digits.as_bytes());
            }
        }
        Frame::Verbatim { format, text } => {
            if resp3 {
                put_header(out, b'=', len_i64(text.len()).saturating_add(4));
                out.put_slice(format);
                out.put_u8(b':');
                out.put_slice(text);
                out.put_slice(b"\r\n");
            } else {
                put_bulk(out, text);
            }
        }
    }
}

fn len_i64(len: usize) -> i64 {
    i64::try_from(len).unwrap_or(i64::MAX)
}

/// `<prefix><n>\r\n`.
fn put_header(out: &mut BytesMut, prefix: u8, n: i64) {
    out.put_u8(prefix);
    // Writing to a BytesMut cannot fail.
    let _ = write!(out, "{n}");
    out.put_slice(b"\r\n");
}

/// `<prefix><text>\r\n`, with `\r` and `\n` in `text` written as spaces so
/// that the reply stays one line.
pub(crate) fn put_line(out: &mut BytesMut, prefix: u8, text: &[u8]) {
    out.reserve(text.len() + 3);
    out.put_u8(prefix);
    for &b in text {
        out.put_u8(if b == b'\r' || b == b'\n' { b' ' } else { b });
    }
    out.put_slice(b"\r\n");
}

/// `$<len>\r\n<data>\r\n`.
fn put_bulk(out: &mut BytesMut, data: &[u8]) {
    put_header(out, b'$', len_i64(data.len()));
    out.put_slice(data);
    out.put_slice(b"\r\n");
}

fn put_aggregate(out: &mut BytesMut, prefix: u8, items: &[Frame], protocol_version: u8) {
    put_header(out, prefix, len_i64(items.len()));
    for item in items {
        encode(item, protocol_version, out);
    }
}

/// Formats a double as Redis 7.0's `addReplyDouble` does: `inf` and `-inf`
/// for infinities, otherwise C's `%.17g` (so `nan`/`-nan`, `-0`,
/// `0.10000000000000001`, `1e+20`, `1.4999999999999999e-07`). The one
/// formatter: the engine's RESP2 downgrades and its front doors print doubles
/// with it too.
#[must_use]
pub fn format_double(d: f64) -> String {
    if d.is_nan() {
        return if d.is_sign_negative() { "-nan" } else { "nan" }.to_string();
    }
    if d.is_infinite() {
        return if d > 0.0 { "inf" } else { "-inf" }.to_string();
    }
    let mut out = String::new();
    if d.is_sign_negative() {
        out.push('-');
    }
    if d == 0.0 {
        out.push('0');
        return out;
    }
    // 17 significant digits, correctly rounded: "d.dddddddddddddddde<exp>".
    let sci = format!("{:.16e}", d.abs());
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    if (-4..17).contains(&exp) {
        // %f style with 16 - exp decimals, trailing zeros removed.
        if exp >= 0 {
            let (int_part, frac) = digits.split_at(exp as usize + 1);
            out.push_str(int_part);
            let frac = frac.trim_end_matches('0');
            if !frac.is_empty() {
                out.push('.');
                out.push_str(frac);
            }
        } else {
            out.push_str("0.");
            for _ in 0..(-exp - 1) {
                out.push('0');
            }
            out.push_str(digits.trim_end_matches('0'));
        }
    } else {
        // %e style with 16 decimals, trailing zeros removed.
        let (first, rest) = digits.split_at(1);
        out.push_str(first);
        let rest = rest.trim_end_matches('0');
        if !rest.is_empty() {
            out.push('.');
            out.push_str(rest);
        }
        let sign = if exp < 0 { '-' } else { '+' };
        let _ = write!(out, "e{sign}{:02}", exp.unsigned_abs());
    }
    out
}

// ---------------------------------------------------------------------------
// Reply parser (client side)
// ---------------------------------------------------------------------------

/// Why a reply could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReplyError {
    /// The type byte is not one of RESP2/RESP3's.
    UnknownType(u8),
    /// The bytes break the protocol; the text says how.
    Malformed(&'static str),
    /// Aggregates nest deeper than [`ReplyLimits::max_depth`].
    TooDeep,
    /// A line, bulk string or aggregate exceeds a [`ReplyLimits`] bound.
    TooLarge,
}

impl fmt::Display for ReplyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReplyError::UnknownType(b) => write!(f, "unknown reply type byte 0x{b:02x}"),
            ReplyError::Malformed(what) => write!(f, "malformed reply: {what}"),
            ReplyError::TooDeep => f.write_str("reply nested too deeply"),
            ReplyError::TooLarge => f.write_str("reply exceeds a size limit"),
        }
    }
}

impl std::error::Error for ReplyError {}

/// Bounds that keep [`ReplyParser`] safe on arbitrary bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReplyLimits {
    /// Deepest nesting of aggregates (an array inside an array is depth 2).
    pub max_depth: usize,
    /// Longest bulk string, blob error or verbatim string.
    pub max_bulk_len: usize,
    /// Most elements in one aggregate (a map counts its keys and values).
    pub max_elements: usize,
    /// Longest simple line (status, error, number, ...) without its `\r\n`.
    pub max_line_len: usize,
}

impl Default for ReplyLimits {
    /// Depth 128, bulk 512 MiB, 2^31 - 1 elements, lines of 1 MiB.
    fn default() -> Self {
        ReplyLimits {
            max_depth: 128,
            max_bulk_len: PROTO_MAX_BULK_LEN as usize,
            max_elements: i32::MAX as usize,
            max_line_len: 1024 * 1024,
        }
    }
}

/// Incremental, bounded parser for RESP2 and RESP3 replies.
///
/// [`ReplyParser::parse`] reads one whole reply from the front of a buffer
/// and removes its bytes, or consumes nothing and returns `Ok(None)` while
/// the reply is incomplete. It accepts every RESP2 and RESP3 type whatever
/// the protocol version: `_` becomes [`Frame::Null`], a blob error `!`
/// becomes [`Frame::Error`], and attributes (`|`) are read and dropped,
/// the reply they annotate being returned. Simple strings and errors that
/// are not UTF-8 are converted lossily. Streamed strings and aggregates
/// (`$?`, `*?`), which Redis never sends, are rejected as malformed.
///
/// Memory use is bounded by the input: nothing is reserved from a declared
/// length beyond what the buffer already holds, and [`ReplyLimits`] bounds
/// nesting and sizes. After an error the stream cannot be resynchronised.
#[derive(Debug, Clone, Default)]
pub struct ReplyParser {
    limits: ReplyLimits,
    /// After an incomplete parse: the buffer length it saw, and the length
    /// needed before another attempt can get further.
    pending: Option<(usize, usize)>,
}

impl ReplyParser {
    /// A parser with [`ReplyLimits::default`].
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// A parser with the given limits.
    #[must_use]
    pub fn with_limits(limits: ReplyLimits) -> Self {
        ReplyParser {
            limits,
            pending: None,
        }
    }

    /// The limits in force.
    #[must_use]
    pub fn limits(&self) -> &ReplyLimits {
        &self.limits
    }

    /// Reads the next reply from the front of `buf`: `Ok(Some(frame))` with
    /// its bytes removed, `Ok(None)` if it is not complete yet (nothing
    /// removed), or an error. Use one parser per buffer: after an incomplete
    /// reply it remembers how many bytes the buffer must reach before trying
    /// again.
    ///
    /// # Errors
    ///
    /// A [`ReplyError`] when the bytes are not RESP or exceed the limits;
    /// the stream cannot be read further.
    pub fn parse(&mut self, buf: &mut BytesMut) -> Result<Option<Frame>, ReplyError> {
        if let Some((seen, needed)) = self.pending {
            // Only skip the attempt while the same buffer is still too short.
            if buf.len() >= seen && buf.len() < needed {
                return Ok(None);
            }
        }
        let mut cursor = Cursor {
            buf,
            pos: 0,
            limits: &self.limits,
        };
        match cursor.frame(1) {
            Ok(frame) => {
                let used = cursor.pos;
                buf.advance(used);
                self.pending = None;
                Ok(Some(frame))
            }
            Err(Stop::Incomplete(needed)) => {
                self.pending = Some((buf.len(), needed.max(buf.len() + 1)));
                Ok(None)
            }
            Err(Stop::Invalid(err)) => {
                self.pending = None;
                Err(err)
            }
        }
    }
}

/// Why a parse attempt stopped.
enum Stop {
    /// More input needed; at least this many bytes in all.
    Incomplete(usize),
    Invalid(ReplyError),
}

impl From<ReplyError> for Stop {
    fn from(err: ReplyError) -> Self {
        Stop::Invalid(err)
    }
}

struct Cursor<'a> {
    buf: &'a [u8],
    pos: usize,
    limits: &'a ReplyLimits,
}

impl<'a> Cursor<'a> {
    /// One frame at nesting `depth` (1 for the top level).
    fn frame(&mut self, depth: usize) -> Result<Frame, Stop> {
        // Attributes are skipped in a loop, not by recursion, so that a run
        // of them cannot exhaust the stack.
        loop {
            let Some(&kind) = self.buf.get(self.pos) else {
                return Err(Stop::Incomplete(self.pos + 1));
            };
            self.pos += 1;
            let frame = match kind {
                b'+' => Frame::Simple(lossy(self.line()?)),
                b'-' => Frame::Error(lossy(self.line()?)),
                b':' => Frame::Integer(self.number()?),
                b'$' => match self.number()? {
                    -1 => Frame::Null,
                    len => Frame::Bulk(Bytes::copy_from_slice(self.blob(len)?)),
                },
                b'!' => {
                    let len = self.number()?;
                    Frame::Error(lossy(self.blob(len)?))
                }
                b'=' => {
                    let len = self.number()?;
                    let blob = self.blob(len)?;
                    if blob.len() < 4 || blob[3] != b':' {
                        return Err(ReplyError::Malformed("verbatim string without format").into());
                    }
                    Frame::Verbatim {
                        format: [blob[0], blob[1], blob[2]],
                        text: Bytes::copy_from_slice(&blob[4..]),
                    }
                }
                b'*' => match self.number()? {
                    -1 => Frame::NullArray,
                    len => Frame::Array(self.elements(len, depth)?),
                },
                b'~' => {
                    let len = self.number()?;
                    Frame::Set(self.elements(len, depth)?)
                }
                b'>' => {
                    let len = self.number()?;
                    Frame::Push(self.elements(len, depth)?)
                }
                b'%' => {
                    let len = self.number()?;
                    Frame::Map(self.pairs(len, depth)?)
                }
                b'|' => {
                    let len = self.number()?;
                    self.pairs(len, depth)?;
                    continue;
                }
                b'_' => {
                    if !self.line()?.is_empty() {
                        return Err(ReplyError::Malformed("null with content").into());
                    }
                    Frame::Null
                }
                b'#' => match self.line()? {
                    b"t" => Frame::Boolean(true),
                    b"f" => Frame::Boolean(false),
                    _ => return Err(ReplyError::Malformed("invalid boolean").into()),
                },
                b',' => {
                    let text = std::str::from_utf8(self.line()?)
                        .map_err(|_| ReplyError::Malformed("invalid double"))?;
                    let d = text
                        .parse::<f64>()
                        .map_err(|_| ReplyError::Malformed("invalid double"))?;
                    Frame::Double(d)
                }
                b'(' => {
                    let line = self.line()?;
                    let digits = line.strip_prefix(b"-").unwrap_or(line);
                    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
                        return Err(ReplyError::Malformed("invalid big number").into());
                    }
                    // All ASCII, checked above.
                    Frame::BigNumber(lossy(line))
                }
                other => return Err(ReplyError::UnknownType(other).into()),
            };
            return Ok(frame);
        }
    }

    /// The rest of the current line, without its `\r\n`, which is consumed.
    fn line(&mut self) -> Result<&'a [u8], Stop> {
        let buf: &'a [u8] = self.buf;
        let rest = &buf[self.pos..];
        let window = &rest[..rest.len().min(self.limits.max_line_len.saturating_add(1))];
        match window.iter().position(|&b| b == b'\r' || b == b'\n') {
            Some(i) if window[i] == b'\n' => {
                Err(ReplyError::Malformed("line feed without carriage return").into())
            }
            Some(i) => match rest.get(i + 1) {
                None => Err(Stop::Incomplete(self.pos + i + 2)),
                Some(b'\n') => {
                    self.pos += i + 2;
                    Ok(&rest[..i])
                }
                Some(_) => Err(ReplyError::Malformed("carriage return without line feed").into()),
            },
            None if rest.len() > self.limits.max_line_len => Err(ReplyError::TooLarge.into()),
            None => Err(Stop::Incomplete(self.buf.len() + 1)),
        }
    }

    /// A line holding a decimal `i64`.
    fn number(&mut self) -> Result<i64, Stop> {
        let line = self.line()?;
        parse_i64(line).ok_or_else(|| ReplyError::Malformed("invalid integer").into())
    }

    /// `len` payload bytes and their `\r\n`.
    fn blob(&mut self, len: i64) -> Result<&'a [u8], Stop> {
        let len = usize::try_from(len).map_err(|_| ReplyError::Malformed("negative length"))?;
        if len > self.limits.max_bulk_len {
            return Err(ReplyError::TooLarge.into());
        }
        let buf: &'a [u8] = self.buf;
        let end = self.pos.saturating_add(len).saturating_add(2);
        if buf.len() < end {
            return Err(Stop::Incomplete(end));
        }
        if &buf[end - 2..end] != b"\r\n" {
            return Err(ReplyError::Malformed("bulk payload not followed by CRLF").into());
        }
        let data = &buf[self.pos..end - 2];
        self.pos = end;
        Ok(data)
    }

    /// Checks an aggregate's declared length and nesting.
    fn aggregate_len(&self, len: i64, depth: usize, per_item: usize) -> Result<usize, Stop> {
        let len = usize::try_from(len).map_err(|_| ReplyError::Malformed("negative length"))?;
        if len.saturating_mul(per_item) > self.limits.max_elements {
            return Err(ReplyError::TooLarge.into());
        }
        if depth >= self.limits.max_depth {
            return Err(ReplyError::TooDeep.into());
        }
        Ok(len)
    }

    /// Room to reserve for `len` items: no more than the rest of the buffer
    /// could hold (each item takes at least 3 bytes), and at most 1024.
    fn capacity_for(&self, len: usize) -> usize {
        len.min((self.buf.len() - self.pos) / 3)
            .min(ARGV_PREALLOC_MAX)
    }

    fn elements(&mut self, len: i64, depth: usize) -> Result<Vec<Frame>, Stop> {
        let len = self.aggregate_len(len, depth, 1)?;
        let mut items = Vec::with_capacity(self.capacity_for(len));
        for _ in 0..len {
            items.push(self.frame(depth + 1)?);
        }
        Ok(items)
    }

    fn pairs(&mut self, len: i64, depth: usize) -> Result<Vec<(Frame, Frame)>, Stop> {
        let len = self.aggregate_len(len, depth, 2)?;
        let mut pairs = Vec::with_capacity(self.capacity_for(len.saturating_mul(2)) / 2);
        for _ in 0..len {
            let key = self.frame(depth + 1)?;
            let value = self.frame(depth + 1)?;
            pairs.push((key, value));
        }
        Ok(pairs)
    }
}

/// Text of a line, with each byte that is not UTF-8 as U+FFFD.
fn lossy(line: &[u8]) -> Cow<'static, str> {
    Cow::Owned(String::from_utf8_lossy(line).into_owned())
}

// ---------------------------------------------------------------------------
// Tests
// ---------------------------------------------------------------------------

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    // --- helpers -----------------------------------------------------------

    fn b(s: &[u8]) -> Bytes {
        Bytes::copy_from_slice(s)
    }

    fn argv(parts: &[&[u8]]) -> Vec<Bytes> {
        parts.iter().map(|p| b(p)).collect()
    }

    /// Everything one parser yields from `input` given at once: the commands,
    /// then the error if any (else `None` with the bytes left over).
    fn parse_all(
        parser: &mut RequestParser,
        input: &[u8],
    ) -> (Vec<Vec<Bytes>>, Option<ProtocolError>) {
        let mut cmds = Vec::new();
        let err = drain(&mut BytesMut::from(input), &mut cmds, |buf| {
            parser.parse(buf)
        })
        .err();
        (cmds, err)
    }

    /// Pushes to `out` whatever `parse` yields from `buf` until it wants more bytes or fails.
    fn drain<T, E>(
        buf: &mut BytesMut,
        out: &mut Vec<T>,
        mut parse: impl FnMut(&mut BytesMut) -> Result<Option<T>, E>,
    ) -> Result<(), E> {
        while let Some(item) = parse(buf)? {
            out.push(item);
        }
        Ok(())
    }

    /// Feeds `input` to `parse` in the given chunk sizes (cycled), draining it after each chunk:
    /// what it yielded, then the error if any (else `None` with the bytes left over).
    fn feed_chunked<T, E>(
        input: &[u8],
        chunks: &[usize],
        mut parse: impl FnMut(&mut BytesMut) -> Result<Option<T>, E>,
    ) -> (Vec<T>, Option<E>) {
        let mut buf = BytesMut::new();
        let mut items = Vec::new();
        let mut offset = 0;
        let mut i = 0;
        loop {
            if let Err(e) = drain(&mut buf, &mut items, &mut parse) {
                return (items, Some(e));
            }
            if offset >= input.len() {
                return (items, None);
            }
            let size = chunks
                .get(i % chunks.len().max(1))
                .copied()
                .unwrap_or(1)
                .max(1);
            let end = (offset + size).min(input.len());
            buf.extend_from_slice(&input[offset..end]);
            offset = end;
            i += 1;
        }
    }

    fn parse_whole(input: &[u8]) -> (Vec<Vec<Bytes>>, Option<ProtocolError>) {
        parse_all(&mut RequestParser::new(), input)
    }

    /// Feeds `input` to `parser` in the given chunk sizes (cycled), draining
    /// commands after each chunk.
    fn parse_chunked(
        parser: &mut RequestParser,
        input: &[u8],
        chunks: &[usize],
    ) -> (Vec<Vec<Bytes>>, Option<ProtocolError>) {
        feed_chunked(input, chunks, |buf| parser.parse(buf))
    }

    fn err_of(input: &[u8]) -> ProtocolError {
        parse_whole(input).1.expect("expected a protocol error")
    }

    fn unauth_err_of(input: &[u8]) -> Option<ProtocolError> {
        let mut p = RequestParser::new();
        p.set_authenticated(false);
        parse_all(&mut p, input).1
    }

    fn encoded(frame: &Frame, version: u8) -> Vec<u8> {
        let mut out = BytesMut::new();
        encode(frame, version, &mut out);
        out.to_vec()
    }

    fn parse_reply(input: &[u8]) -> Result<Option<Frame>, ReplyError> {
        ReplyParser::new().parse(&mut BytesMut::from(input))
    }

    // --- protocol errors: exact texts ---------------------------------------

    #[test]
    fn error_texts_are_exact() {
        let cases: &[(ProtocolError, &str)] = &[
            (
                ProtocolError::TooBigMultibulkCount,
                "Protocol error: too big mbulk count string",
            ),
            (
                ProtocolError::InvalidMultibulkLength,
                "Protocol error: invalid multibulk length",
            ),
            (
                ProtocolError::UnauthenticatedMultibulkLength,
                "Protocol error: unauthenticated multibulk length",
            ),
            (
                ProtocolError::TooBigBulkCount,
                "Protocol error: too big bulk count string",
            ),
            (
                ProtocolError::ExpectedDollar(b'x'),
                "Protocol error: expected '$', got 'x'",
            ),
            (
                ProtocolError::InvalidBulkLength,
                "Protocol error: invalid bulk length",
            ),
            (
                ProtocolError::UnauthenticatedBulkLength,
                "Protocol error: unauthenticated bulk length",
            ),
            (
                ProtocolError::TooBigInlineRequest,
                "Protocol error: too big inline request",
            ),
            (
                ProtocolError::UnbalancedQuotes,
                "Protocol error: unbalanced quotes in request",
            ),
        ];
        for (err, text) in cases {
            assert_eq!(err.to_string(), *text);
            let mut out = BytesMut::new();
            err.write_reply(&mut out);
            assert_eq!(&out[..], format!("-ERR {text}\r\n").as_bytes());
        }
    }

    #[test]
    fn invalid_multibulk_length() {
        for input in [
            &b"*abc\r\n"[..],
            b"*2147483648\r\n",
            b"*01\r\n",
            b"*-0\r\n",
            b"*\r\n",
            b"*+1\r\n",
            b"*1 \r\n",
            b"*123456789012345678901\r\n",
        ] {
            assert_eq!(
                err_of(input),
                ProtocolError::InvalidMultibulkLength,
                "{input:?}"
            );
        }
        // INT_MAX itself is accepted (and then waits for the arguments).
        assert_eq!(parse_whole(b"*2147483647\r\n"), (vec![], None));
        assert_eq!(parse_whole(b"*2000000\r\n"), (vec![], None));
    }

    #[test]
    fn unauthenticated_limits() {
        assert_eq!(
            unauth_err_of(b"*11\r\n"),
            Some(ProtocolError::UnauthenticatedMultibulkLength)
        );
        assert_eq!(unauth_err_of(b"*10\r\n"), None);
        assert_eq!(
            unauth_err_of(b"*1\r\n$16385\r\n"),
            Some(ProtocolError::UnauthenticatedBulkLength)
        );
        assert_eq!(unauth_err_of(b"*1\r\n$16384\r\n"), None);
        // The INT_MAX check comes first.
        assert_eq!(
            unauth_err_of(b"*2147483648\r\n"),
            Some(ProtocolError::InvalidMultibulkLength)
        );
        // So does the invalid bulk length check.
        assert_eq!(
            unauth_err_of(b"*1\r\n$536870913\r\n"),
            Some(ProtocolError::InvalidBulkLength)
        );
        // Authenticated connections have neither limit.
        assert_eq!(parse_whole(b"*11\r\n$16385\r\n").1, None);

        // AUTH in a pipeline: the limits lift for the following commands.
        let mut p = RequestParser::new();
        p.set_authenticated(false);
        assert!(!p.is_authenticated());
        let mut buf = BytesMut::from(&b"*2\r\n$4\r\nAUTH\r\n$1\r\np\r\n*11\r\n"[..]);
        assert_eq!(p.parse(&mut buf), Ok(Some(argv(&[b"AUTH", b"p"]))));
        p.set_authenticated(true);
        assert_eq!(p.parse(&mut buf), Ok(None));
        assert!(!p.is_idle());
    }

    #[test]
    fn expected_dollar() {
        assert_eq!(err_of(b"*1\r\nx\r\n"), ProtocolError::ExpectedDollar(b'x'));
        assert_eq!(
            err_of(b"*2\r\n$1\r\na\r\n:1\r\n"),
            ProtocolError::ExpectedDollar(b':')
        );
        // '\r' and '\n' are reported as a space, as Redis does.
        assert_eq!(err_of(b"*1\r\n\r\n"), ProtocolError::ExpectedDollar(b' '));
        assert_eq!(
            err_of(b"*1\r\n\nfoo\r\n"),
            ProtocolError::ExpectedDollar(b' ')
        );
        // A non-UTF-8 byte is sent raw.
        let err = err_of(b"*1\r\n\xff\r\n");
        assert_eq!(err, ProtocolError::ExpectedDollar(0xff));
        let mut out = BytesMut::new();
        err.write_reply(&mut out);
        assert_eq!(
            &out[..],
            b"-ERR Protocol error: expected '$', got '\xff'\r\n"
        );
        assert_eq!(
            err.to_string(),
            "Protocol error: expected '$', got '\u{fffd}'"
        );
        // The header is only examined once its line is complete.
        assert_eq!(parse_whole(b"*1\r\nx"), (vec![], None));
    }

    #[test]
    fn invalid_bulk_length() {
        for input in [
            &b"*1\r\n$-1\r\n"[..],
            b"*1\r\n$536870913\r\n",
            b"*1\r\n$abc\r\n",
            b"*1\r\n$01\r\n",
            b"*1\r\n$\r\n",
            b"*1\r\n$+3\r\n",
            b"*1\r\n$99999999999999999999\r\n",
        ] {
            assert_eq!(err_of(input), ProtocolError::InvalidBulkLength, "{input:?}");
        }
        assert_eq!(parse_whole(b"*1\r\n$536870912\r\n"), (vec![], None));

        let mut p = RequestParser::new();
        p.set_max_bulk_len(3);
        assert_eq!(p.max_bulk_len(), 3);
        assert_eq!(
            parse_all(&mut p, b"*1\r\n$4\r\n").1,
            Some(ProtocolError::InvalidBulkLength)
        );
        let mut p = RequestParser::new();
        p.set_max_bulk_len(3);
        assert_eq!(
            parse_all(&mut p, b"*1\r\n$3\r\nfoo\r\n").0,
            vec![argv(&[b"foo"])]
        );
    }

    #[test]
    fn too_big_count_strings_and_inline() {
        let mut input = b"*".to_vec();
        input.resize(PROTO_INLINE_MAX_SIZE, b'1');
        assert_eq!(parse_whole(&input), (vec![], None));
        input.push(b'1');
        assert_eq!(err_of(&input), ProtocolError::TooBigMultibulkCount);

        let mut input = b"*1\r\n".to_vec();
        input.resize(4 + PROTO_INLINE_MAX_SIZE, b'$');
        assert_eq!(parse_whole(&input), (vec![], None));
        input.push(b'$');
        assert_eq!(err_of(&input), ProtocolError::TooBigBulkCount);

        let mut input = vec![b'a'; PROTO_INLINE_MAX_SIZE];
        assert_eq!(parse_whole(&input), (vec![], None));
        input.push(b'a');
        assert_eq!(err_of(&input), ProtocolError::TooBigInlineRequest);

        // A longer line is fine once its end is in the buffer.
        let mut input = b"echo ".to_vec();
        input.resize(PROTO_INLINE_MAX_SIZE + 10, b'a');
        input.extend_from_slice(b"\r\n");
        let (cmds, err) = parse_whole(&input);
        assert_eq!(err, None);
        assert_eq!(cmds.len(), 1);
        assert_eq!(cmds[0][1].len(), PROTO_INLINE_MAX_SIZE + 5);
    }

    #[test]
    fn unbalanced_quotes() {
        for input in [
            &b"set a 'b\r\n"[..],
            b"echo \"a\"b\r\n",
            b"echo 'a'b\r\n",
            b"\"abc\n",
            b"echo \"abc\\\r\n",
            b"echo 'a\\\\'\r\n",
            b"echo \"a\"\"b\"\n",
        ] {
            assert_eq!(err_of(input), ProtocolError::UnbalancedQuotes, "{input:?}");
        }
    }

    #[test]
    fn errors_are_sticky_and_follow_earlier_commands() {
        let mut p = RequestParser::new();
        let (cmds, err) = parse_all(
            &mut p,
            b"PING\r\n*1\r\n$4\r\nPING\r\n*x\r\n*1\r\n$4\r\nPING\r\n",
        );
        assert_eq!(cmds, vec![argv(&[b"PING"]), argv(&[b"PING"])]);
        assert_eq!(err, Some(ProtocolError::InvalidMultibulkLength));
        let mut buf = BytesMut::from(&b"PING\r\n"[..]);
        assert_eq!(
            p.parse(&mut buf),
            Err(ProtocolError::InvalidMultibulkLength)
        );
    }

    // --- accepted requests and Redis quirks --------------------------------

    #[test]
    fn multibulk_basic_and_pipelined() {
        let input = b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$0\r\n\r\n*1\r\n$4\r\nPING\r\n*2\r\n$4\r\nECHO\r\n$5\r\na\r\nb\0\r\n";
        let mut p = RequestParser::new();
        let mut buf = BytesMut::from(&input[..]);
        assert_eq!(p.parse(&mut buf), Ok(Some(argv(&[b"SET", b"k", b""]))));
        assert_eq!(p.parse(&mut buf), Ok(Some(argv(&[b"PING"]))));
        assert_eq!(p.parse(&mut buf), Ok(Some(argv(&[b"ECHO", b"a\r\nb\0"]))));
        assert_eq!(p.parse(&mut buf), Ok(None));
        assert!(buf.is_empty());
        assert!(p.is_idle());
    }

    #[test]
    fn empty_requests_are_skipped() {
        let (cmds, err) =
            parse_whole(b"*0\r\n*-5\r\n\r\n\n   \r\n*-99999999999\r\n*1\r\n$4\r\nPING\r\n");
        assert_eq!(err, None);
        assert_eq!(cmds, vec![argv(&[b"PING"])]);
        assert_eq!(parse_whole(b"*0\r\nPING\r\n").0, vec![argv(&[b"PING"])]);
        assert_eq!(parse_whole(b"\r\n\nping\r\r\n").0, vec![argv(&[b"ping"])]);
    }

    #[test]
    fn crlf_bytes_after_lines_and_payloads_are_not_checked() {
        // Redis skips two bytes after a payload without looking at them ...
        let (cmds, err) = parse_whole(b"*1\r\n$4\r\nPINGXY*1\r\n$4\r\nPING\r\n");
        assert_eq!(err, None);
        assert_eq!(cmds, vec![argv(&[b"PING"]), argv(&[b"PING"])]);
        // ... and one byte after each header's '\r'.
        assert_eq!(
            parse_whole(b"*1\rX$4\r\nPING\r\n").0,
            vec![argv(&[b"PING"])]
        );
        assert_eq!(
            parse_whole(b"*1\r\n$4\r!PING\r\n").0,
            vec![argv(&[b"PING"])]
        );
    }

    #[test]
    fn nul_before_line_end_stalls_like_strchr() {
        assert_eq!(parse_whole(b"*1\0\r\n$4\r\nPING\r\n"), (vec![], None));
        assert_eq!(parse_whole(b"PING\0\r\n"), (vec![], None));
        // After the header's line, payloads may hold NULs freely.
        assert_eq!(parse_whole(b"*1\r\n$1\r\n\0\r\n").0, vec![argv(&[b"\0"])]);
        // The stall ends in the 64 KiB error.
        let mut input = b"*1\0\r\n".to_vec();
        input.resize(PROTO_INLINE_MAX_SIZE + 1, b'x');
        assert_eq!(err_of(&input), ProtocolError::TooBigMultibulkCount);
    }

    #[test]
    fn inline_quoting_like_sdssplitargs() {
        let cases: &[(&[u8], &[&[u8]])] = &[
            (b"set \"a b\" 'c d'\r\n", &[b"set", b"a b", b"c d"]),
            (b"echo \"\\x41\"\r\n", &[b"echo", b"A"]),
            (b"echo \"\\x41\\x4a\\x4A\"\n", &[b"echo", b"AJJ"]),
            (b"echo \"\\x4g\"\n", &[b"echo", b"x4g"]),
            (b"echo \"\\xZZ\"\n", &[b"echo", b"xZZ"]),
            (b"echo \"a\\\\\"\n", &[b"echo", b"a\\"]),
            (b"echo 'it\\'s'\n", &[b"echo", b"it's"]),
            (b"echo 'a\\nb'\n", &[b"echo", b"a\\nb"]),
            (b"echo foo\"bar\"\n", &[b"echo", b"foobar"]),
            (
                b"echo \"\\q\\n\\r\\t\\b\\a\\\"\"\n",
                &[b"echo", b"q\n\r\t\x08\x07\""],
            ),
            (b"echo \"a\\\"b\"\n", &[b"echo", b"a\"b"]),
            (b"echo \"abc\"\t\n", &[b"echo", b"abc"]),
            (b"echo \"ab\"\x0b\n", &[b"echo", b"ab"]),
            (b"echo ab\x0c\n", &[b"echo", b"ab\x0c"]),
            (b"echo a\x0bb\n", &[b"echo", b"a\x0bb"]),
            (b"echo \x0ba\n", &[b"echo", b"a"]),
            (b"echo a\rb\r\n", &[b"echo", b"a", b"b"]),
            (b"echo \"\" ''\n", &[b"echo", b"", b""]),
            (b"echo \xffa\x80\n", &[b"echo", b"\xffa\x80"]),
            (b"  ping  \n", &[b"ping"]),
            (b"ping\n", &[b"ping"]),
        ];
        for (input, expected) in cases {
            let (cmds, err) = parse_whole(input);
            assert_eq!(err, None, "{input:?}");
            assert_eq!(cmds, vec![argv(expected)], "{input:?}");
        }
        assert_eq!(split_args(b"a\0b c"), Some(argv(&[b"a"])));
        assert_eq!(split_args(b""), Some(vec![]));
    }

    #[test]
    fn string2ll_matches_redis() {
        assert_eq!(parse_i64(b"0"), Some(0));
        assert_eq!(parse_i64(b"-1"), Some(-1));
        assert_eq!(parse_i64(b"9223372036854775807"), Some(i64::MAX));
        assert_eq!(parse_i64(b"-9223372036854775808"), Some(i64::MIN));
        for bad in [
            &b""[..],
            b"-",
            b"-0",
            b"00",
            b"01",
            b"+1",
            b"1a",
            b" 1",
            b"9223372036854775808",
        ] {
            assert_eq!(parse_i64(bad), None, "{bad:?}");
        }
        // 21 bytes is too long even when the value would fit.
        assert_eq!(parse_i64(b"-00000000000000000001"), None);
    }

    #[test]
    fn one_byte_at_a_time_matches_all_at_once() {
        let input: &[u8] = b"*3\r\n$3\r\nSET\r\n$3\r\nkey\r\n$5\r\nva\r\nl\r\n\
            PING\r\nset \"a b\" 'c d'\n*0\r\n\r\n*2\r\n$4\r\nECHO\r\n$0\r\n\r\n\
            *1\r\n$4\r\nPINGXY";
        let whole = parse_whole(input);
        assert_eq!(whole.1, None);
        assert_eq!(whole.0.len(), 5);
        assert_eq!(parse_chunked(&mut RequestParser::new(), input, &[1]), whole);
        assert_eq!(
            parse_chunked(&mut RequestParser::new(), input, &[2, 3, 5, 7]),
            whole
        );
        // Same for an input ending in an error.
        let mut bad = input.to_vec();
        bad.extend_from_slice(b"*1\r\n$x\r\n");
        let whole = parse_whole(&bad);
        assert_eq!(whole.1, Some(ProtocolError::InvalidBulkLength));
        assert_eq!(parse_chunked(&mut RequestParser::new(), &bad, &[1]), whole);
    }

    #[test]
    fn argv_capacity_is_not_taken_from_the_count() {
        let mut p = RequestParser::new();
        let mut buf = BytesMut::from(&b"*2147483647\r\n$1\r\na\r\n"[..]);
        assert_eq!(p.parse(&mut buf), Ok(None));
        assert!(p.argv.capacity() <= ARGV_PREALLOC_MAX);
        assert_eq!(p.argv.len(), 1);
    }

    // --- encoder -----------------------------------------------------------

    // 3.141 is the double DEBUG PROTOCOL sends, not an approximation of pi.
    #[allow(clippy::approx_constant)]
    #[test]
    fn encode_every_frame_in_both_versions() {
        let nested = Frame::Array(vec![
            Frame::Integer(0),
            Frame::Integer(1),
            Frame::Integer(2),
        ]);
        let map = Frame::Map(vec![
            (Frame::Integer(0), Frame::Boolean(false)),
            (Frame::Integer(1), Frame::Boolean(true)),
        ]);
        let cases: Vec<(Frame, &[u8], &[u8])> = vec![
            (Frame::OK, b"+OK\r\n", b"+OK\r\n"),
            (Frame::simple("a\r\nb"), b"+a  b\r\n", b"+a  b\r\n"),
            (Frame::error("ERR x"), b"-ERR x\r\n", b"-ERR x\r\n"),
            (Frame::Integer(-12345), b":-12345\r\n", b":-12345\r\n"),
            (
                Frame::bulk(&b"Hello World"[..]),
                b"$11\r\nHello World\r\n",
                b"$11\r\nHello World\r\n",
            ),
            (Frame::bulk(Bytes::new()), b"$0\r\n\r\n", b"$0\r\n\r\n"),
            (Frame::Null, b"$-1\r\n", b"_\r\n"),
            (Frame::NullArray, b"*-1\r\n", b"_\r\n"),
            (
                nested.clone(),
                b"*3\r\n:0\r\n:1\r\n:2\r\n",
                b"*3\r\n:0\r\n:1\r\n:2\r\n",
            ),
            (Frame::Array(vec![]), b"*0\r\n", b"*0\r\n"),
            (
                Frame::Set(vec![
                    Frame::Integer(0),
                    Frame::Integer(1),
                    Frame::Integer(2),
                ]),
                b"*3\r\n:0\r\n:1\r\n:2\r\n",
                b"~3\r\n:0\r\n:1\r\n:2\r\n",
            ),
            (
                map,
                b"*4\r\n:0\r\n:0\r\n:1\r\n:1\r\n",
                b"%2\r\n:0\r\n#f\r\n:1\r\n#t\r\n",
            ),
            (Frame::Double(3.141), b"$5\r\n3.141\r\n", b",3.141\r\n"),
            (Frame::Double(f64::INFINITY), b"$3\r\ninf\r\n", b",inf\r\n"),
            (
                Frame::Double(f64::NEG_INFINITY),
                b"$4\r\n-inf\r\n",
                b",-inf\r\n",
            ),
            (Frame::Double(f64::NAN), b"$3\r\nnan\r\n", b",nan\r\n"),
            (
                Frame::Double(0.1),
                b"$19\r\n0.10000000000000001\r\n",
                b",0.10000000000000001\r\n",
            ),
            (Frame::Boolean(true), b":1\r\n", b"#t\r\n"),
            (Frame::Boolean(false), b":0\r\n", b"#f\r\n"),
            (
                Frame::Push(vec![Frame::bulk(&b"message"[..]), Frame::Integer(42)]),
                b"*2\r\n$7\r\nmessage\r\n:42\r\n",
                b">2\r\n$7\r\nmessage\r\n:42\r\n",
            ),
            (
                Frame::BigNumber("1234567999999999999999999999999999999".into()),
                b"$37\r\n1234567999999999999999999999999999999\r\n",
                b"(1234567999999999999999999999999999999\r\n",
            ),
            (
                Frame::Verbatim {
                    format: *b"txt",
                    text: Bytes::from_static(b"This is a verbatim\nstring"),
                },
                b"$25\r\nThis is a verbatim\nstring\r\n",
                b"=29\r\ntxt:This is a verbatim\nstring\r\n",
            ),
        ];
        for (frame, resp2, resp3) in &cases {
            assert_eq!(encoded(frame, 2), *resp2, "{frame:?} RESP2");
            assert_eq!(encoded(frame, 3), *resp3, "{frame:?} RESP3");
        }
        // Nesting keeps the version all the way down.
        let outer = Frame::Array(vec![Frame::Null, Frame::Set(vec![Frame::Boolean(true)])]);
        assert_eq!(encoded(&outer, 2), b"*2\r\n$-1\r\n*1\r\n:1\r\n");
        assert_eq!(encoded(&outer, 3), b"*2\r\n_\r\n~1\r\n#t\r\n");
    }

    // 3.141 is the double DEBUG PROTOCOL sends, not an approximation of pi.
    #[allow(clippy::approx_constant)]
    #[test]
    fn doubles_format_like_redis_7_0() {
        // Values as Redis 7.0.15 replied to ZSCORE.
        let cases: &[(f64, &str)] = &[
            (0.1, "0.10000000000000001"),
            (1e20, "1e+20"),
            (123456789012345678.0, "1.2345678901234568e+17"),
            (1.5e-7, "1.4999999999999999e-07"),
            (0.0001, "0.0001"),
            (0.00001, "1.0000000000000001e-05"),
            (3.0, "3"),
            (3.141, "3.141"),
            (0.0, "0"),
            (-0.0, "-0"),
            (-2.5, "-2.5"),
            (1e16, "10000000000000000"),
            (1e17, "1e+17"),
            (1e100, "1e+100"),
            (f64::MAX, "1.7976931348623157e+308"),
            (f64::MIN_POSITIVE, "2.2250738585072014e-308"),
            (5e-324, "4.9406564584124654e-324"),
            (-f64::NAN, "-nan"),
        ];
        for (d, text) in cases {
            assert_eq!(format_double(*d), *text, "{d:e}");
        }
    }

    /// The engine once printed every NaN as `nan`; Redis 7.0.15 prints the sign glibc's `%.17g`
    /// gives it (`EVAL "return {double=0/0}" 0`, a negative NaN on x86, replies `$4 -nan` and
    /// `,-nan`), in both protocols.
    #[test]
    fn a_negative_nan_keeps_its_sign_in_both_versions() {
        let nan = Frame::Double(-f64::NAN);
        assert_eq!(encoded(&nan, 2), b"$4\r\n-nan\r\n");
        assert_eq!(encoded(&nan, 3), b",-nan\r\n");
        assert_eq!(encoded(&Frame::Double(f64::NAN), 2), b"$3\r\nnan\r\n");
    }

    // --- reply parser -------------------------------------------------------

    // 3.141 is the double DEBUG PROTOCOL sends, not an approximation of pi.
    #[allow(clippy::approx_constant)]
    #[test]
    fn reply_parser_reads_redis_debug_protocol_output() {
        // RESP3 replies of Redis 7.0.15's DEBUG PROTOCOL <type>.
        let attrib: &[u8] = b"|1\r\n$14\r\nkey-popularity\r\n*2\r\n$7\r\nkey:123\r\n:90\r\n\
            $39\r\nSome real reply following the attribute\r\n";
        assert_eq!(
            parse_reply(attrib),
            Ok(Some(Frame::bulk(
                &b"Some real reply following the attribute"[..]
            )))
        );
        assert_eq!(
            parse_reply(b"=29\r\ntxt:This is a verbatim\nstring\r\n"),
            Ok(Some(Frame::Verbatim {
                format: *b"txt",
                text: Bytes::from_static(b"This is a verbatim\nstring"),
            }))
        );
        assert_eq!(parse_reply(b",3.141\r\n"), Ok(Some(Frame::Double(3.141))));
        assert_eq!(
            parse_reply(b",inf\r\n"),
            Ok(Some(Frame::Double(f64::INFINITY)))
        );
        assert_eq!(
            parse_reply(b",-inf\r\n"),
            Ok(Some(Frame::Double(f64::NEG_INFINITY)))
        );
        assert!(matches!(parse_reply(b",nan\r\n"), Ok(Some(Frame::Double(d))) if d.is_nan()));
        assert_eq!(parse_reply(b"_\r\n"), Ok(Some(Frame::Null)));
        assert_eq!(parse_reply(b"$-1\r\n"), Ok(Some(Frame::Null)));
        assert_eq!(parse_reply(b"*-1\r\n"), Ok(Some(Frame::NullArray)));
        assert_eq!(
            parse_reply(b"!5\r\nERR x\r\n"),
            Ok(Some(Frame::error("ERR x")))
        );
        assert_eq!(
            parse_reply(b"%1\r\n:0\r\n#f\r\n"),
            Ok(Some(Frame::Map(vec![(
                Frame::Integer(0),
                Frame::Boolean(false)
            )])))
        );
        assert_eq!(
            parse_reply(b"(-12\r\n"),
            Ok(Some(Frame::BigNumber("-12".into())))
        );
    }

    #[test]
    fn reply_parser_partial_and_pipelined() {
        let input: &[u8] = b"*2\r\n$3\r\nfoo\r\n%1\r\n+a\r\n,1.5\r\n>1\r\n:7\r\n";
        let mut parser = ReplyParser::new();
        let mut buf = BytesMut::new();
        let mut frames = Vec::new();
        for &byte in input {
            buf.put_u8(byte);
            while let Some(f) = parser.parse(&mut buf).unwrap() {
                frames.push(f);
            }
        }
        assert!(buf.is_empty());
        assert_eq!(
            frames,
            vec![
                Frame::Array(vec![
                    Frame::bulk(&b"foo"[..]),
                    Frame::Map(vec![(Frame::simple("a"), Frame::Double(1.5))]),
                ]),
                Frame::Push(vec![Frame::Integer(7)]),
            ]
        );
    }

    #[test]
    fn reply_parser_rejects_bad_input() {
        assert_eq!(parse_reply(b"?x\r\n"), Err(ReplyError::UnknownType(b'?')));
        assert_eq!(
            parse_reply(b"$3\r\nfooXY"),
            Err(ReplyError::Malformed("bulk payload not followed by CRLF"))
        );
        for input in [
            &b":1x\r\n"[..],
            b"+a\nb",
            b"+a\rb",
            b"#x\r\n",
            b"$-2\r\n",
            b"$?\r\n",
            b"=3\r\ntxt\r\n",
            b"(1a\r\n",
        ] {
            assert!(
                matches!(parse_reply(input), Err(ReplyError::Malformed(_))),
                "{input:?}"
            );
        }

        let limits = ReplyLimits {
            max_depth: 3,
            max_bulk_len: 4,
            max_elements: 4,
            max_line_len: 8,
        };
        let parse =
            |input: &[u8]| ReplyParser::with_limits(limits).parse(&mut BytesMut::from(input));
        assert_eq!(
            parse(b"*1\r\n*1\r\n:1\r\n"),
            Ok(Some(Frame::Array(vec![Frame::Array(vec![
                Frame::Integer(1)
            ])])))
        );
        assert_eq!(parse(b"*1\r\n*1\r\n*1\r\n:1\r\n"), Err(ReplyError::TooDeep));
        assert_eq!(parse(b"$5\r\n"), Err(ReplyError::TooLarge));
        assert_eq!(parse(b"*5\r\n"), Err(ReplyError::TooLarge));
        assert_eq!(parse(b"%3\r\n"), Err(ReplyError::TooLarge));
        assert_eq!(parse(b"+123456789"), Err(ReplyError::TooLarge));
        assert_eq!(parse(b"+12345678"), Ok(None));
        // A huge declared count waits for its elements without reserving them.
        assert_eq!(parse_reply(b"*2000000000\r\n:1\r\n"), Ok(None));
        // Runs of attributes do not recurse.
        let mut many = b"|0\r\n".repeat(100_000);
        many.extend_from_slice(b":1\r\n");
        assert_eq!(parse_reply(&many), Ok(Some(Frame::Integer(1))));
    }

    /// Lengths, counts and integer replies are read by `string2ll`'s rules, as Redis writes them.
    #[test]
    fn reply_integers_are_canonical() {
        for input in [
            &b":01\r\n"[..],
            b":-0\r\n",
            b":+1\r\n",
            b":1 \r\n",
            b"$03\r\nfoo\r\n",
            b"*-0\r\n",
            b":9223372036854775808\r\n",
        ] {
            assert_eq!(
                parse_reply(input),
                Err(ReplyError::Malformed("invalid integer")),
                "{input:?}"
            );
        }
        assert_eq!(
            parse_reply(b":-9223372036854775808\r\n"),
            Ok(Some(Frame::Integer(i64::MIN)))
        );
        assert_eq!(parse_reply(b":0\r\n"), Ok(Some(Frame::Integer(0))));
    }

    #[test]
    fn reply_parser_skips_reparsing_while_a_bulk_is_short() {
        let mut parser = ReplyParser::new();
        let mut buf = BytesMut::from(&b"$10\r\n01234"[..]);
        assert_eq!(parser.parse(&mut buf), Ok(None));
        assert_eq!(parser.pending, Some((10, 17)));
        buf.extend_from_slice(b"56789\r");
        assert_eq!(parser.parse(&mut buf), Ok(None));
        buf.extend_from_slice(b"\n");
        assert_eq!(
            parser.parse(&mut buf),
            Ok(Some(Frame::bulk(&b"0123456789"[..])))
        );
        // A shorter (new) buffer is parsed afresh.
        assert_eq!(parser.parse(&mut BytesMut::from(&b"$10\r\n"[..])), Ok(None));
        assert_eq!(
            parser.parse(&mut BytesMut::from(&b":1\r\n"[..])),
            Ok(Some(Frame::Integer(1)))
        );
    }

    // --- property tests -----------------------------------------------------

    /// What `frame` becomes after `encode(version)` and parsing back.
    fn normalize(frame: &Frame, version: u8) -> Frame {
        let resp3 = version >= 3;
        let all = |items: &[Frame]| {
            items
                .iter()
                .map(|f| normalize(f, version))
                .collect::<Vec<_>>()
        };
        let line = |s: &str| s.replace(['\r', '\n'], " ");
        match frame {
            Frame::Simple(s) => Frame::Simple(line(s).into()),
            Frame::Error(s) => Frame::Error(line(s).into()),
            Frame::Integer(n) => Frame::Integer(*n),
            Frame::Bulk(data) => Frame::Bulk(data.clone()),
            Frame::Null => Frame::Null,
            Frame::NullArray if resp3 => Frame::Null,
            Frame::NullArray => Frame::NullArray,
            Frame::Array(items) => Frame::Array(all(items)),
            Frame::Set(items) if resp3 => Frame::Set(all(items)),
            Frame::Push(items) if resp3 => Frame::Push(all(items)),
            Frame::Set(items) | Frame::Push(items) => Frame::Array(all(items)),
            Frame::Map(pairs) if resp3 => Frame::Map(
                pairs
                    .iter()
                    .map(|(k, v)| (normalize(k, version), normalize(v, version)))
                    .collect(),
            ),
            Frame::Map(pairs) => Frame::Array(
                pairs
                    .iter()
                    .flat_map(|(k, v)| [normalize(k, version), normalize(v, version)])
                    .collect(),
            ),
            Frame::Double(d) if resp3 => Frame::Double(*d),
            Frame::Double(d) => Frame::Bulk(Bytes::from(format_double(*d))),
            Frame::Boolean(v) if resp3 => Frame::Boolean(*v),
            Frame::Boolean(v) => Frame::Integer(i64::from(*v)),
            Frame::BigNumber(s) if resp3 => Frame::BigNumber(s.clone()),
            Frame::BigNumber(s) => Frame::Bulk(Bytes::from(s.to_string())),
            Frame::Verbatim { format, text } if resp3 => Frame::Verbatim {
                format: *format,
                text: text.clone(),
            },
            Frame::Verbatim { text, .. } => Frame::Bulk(text.clone()),
        }
    }

    fn leaf_frame() -> impl Strategy<Value = Frame> {
        prop_oneof![
            any::<String>().prop_map(|s| Frame::Simple(s.into())),
            any::<String>().prop_map(|s| Frame::Error(s.into())),
            any::<i64>().prop_map(Frame::Integer),
            proptest::collection::vec(any::<u8>(), 0..40).prop_map(|v| Frame::Bulk(Bytes::from(v))),
            Just(Frame::Null),
            Just(Frame::NullArray),
            any::<f64>()
                .prop_filter("NaN never equals itself", |d| !d.is_nan())
                .prop_map(Frame::Double),
            any::<bool>().prop_map(Frame::Boolean),
            (
                any::<bool>(),
                1u32..10,
                proptest::collection::vec(0u8..10, 0..40)
            )
                .prop_map(|(neg, first, rest)| {
                    let mut s = String::new();
                    if neg {
                        s.push('-');
                    }
                    s.push(char::from(b'0' + first as u8));
                    s.extend(rest.iter().map(|d| char::from(b'0' + d)));
                    Frame::BigNumber(s.into())
                }),
            (
                any::<[u8; 3]>(),
                proptest::collection::vec(any::<u8>(), 0..40)
            )
                .prop_map(|(format, text)| Frame::Verbatim {
                    format,
                    text: Bytes::from(text)
                }),
        ]
    }

    fn any_frame() -> impl Strategy<Value = Frame> {
        leaf_frame().prop_recursive(4, 64, 6, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..6).prop_map(Frame::Array),
                proptest::collection::vec(inner.clone(), 0..6).prop_map(Frame::Set),
                proptest::collection::vec(inner.clone(), 0..6).prop_map(Frame::Push),
                proptest::collection::vec((inner.clone(), inner), 0..4).prop_map(Frame::Map),
            ]
        })
    }

    /// Elements plus payload bytes of a frame: never more than the bytes it
    /// was parsed from.
    fn frame_weight(frame: &Frame) -> usize {
        1 + match frame {
            // Characters, not bytes: a line that is not UTF-8 is decoded lossily, one U+FFFD
            // (three bytes) per bad byte, so its byte length can exceed the input's.
            Frame::Simple(s) | Frame::Error(s) | Frame::BigNumber(s) => s.chars().count(),
            Frame::Bulk(data) | Frame::Verbatim { text: data, .. } => data.len(),
            Frame::Array(items) | Frame::Set(items) | Frame::Push(items) => {
                items.iter().map(frame_weight).sum()
            }
            Frame::Map(pairs) => pairs
                .iter()
                .map(|(k, v)| frame_weight(k) + frame_weight(v))
                .sum(),
            Frame::Integer(_)
            | Frame::Null
            | Frame::NullArray
            | Frame::Double(_)
            | Frame::Boolean(_) => 0,
        }
    }

    /// Feeds `input` to a fresh reply parser in the given chunk sizes.
    fn replies_chunked(input: &[u8], chunks: &[usize]) -> (Vec<Frame>, Option<ReplyError>) {
        let mut parser = ReplyParser::new();
        feed_chunked(input, chunks, |buf| parser.parse(buf))
    }

    /// Byte strings made of protocol fragments, to reach deeper states than
    /// uniform random bytes do.
    fn protocol_soup() -> impl Strategy<Value = Vec<u8>> {
        let fragment = prop_oneof![
            Just(b"*".to_vec()),
            Just(b"$".to_vec()),
            Just(b"\r\n".to_vec()),
            Just(b"\r".to_vec()),
            Just(b"\n".to_vec()),
            Just(b"-".to_vec()),
            Just(b" ".to_vec()),
            Just(b"\"".to_vec()),
            Just(b"'".to_vec()),
            Just(b"\\".to_vec()),
            Just(b"\\x4".to_vec()),
            Just(b"%".to_vec()),
            Just(b"~".to_vec()),
            Just(b">".to_vec()),
            Just(b"|".to_vec()),
            Just(b"=".to_vec()),
            Just(b"_".to_vec()),
            Just(b",".to_vec()),
            Just(b"#t".to_vec()),
            Just(b"(".to_vec()),
            Just(b"!".to_vec()),
            Just(b"+".to_vec()),
            Just(b":".to_vec()),
            (0u32..20).prop_map(|n| n.to_string().into_bytes()),
            proptest::collection::vec(any::<u8>(), 0..4),
        ];
        proptest::collection::vec(fragment, 0..60).prop_map(|parts| parts.concat())
    }

    fn check_request_parser(input: &[u8], chunks: &[usize]) {
        let whole = parse_whole(input);
        let chunked = parse_chunked(&mut RequestParser::new(), input, chunks);
        assert_eq!(&chunked, &whole);
        let args: usize = whole.0.iter().map(Vec::len).sum();
        let bytes: usize = whole.0.iter().flatten().map(Bytes::len).sum();
        assert!(args <= input.len() && bytes <= input.len());
        assert!(whole.0.iter().all(|cmd| !cmd.is_empty()));
        // Unauthenticated parsing must not panic either.
        let mut p = RequestParser::new();
        p.set_authenticated(false);
        parse_chunked(&mut p, input, chunks);
    }

    fn check_reply_parser(input: &[u8], chunks: &[usize]) {
        let whole = replies_chunked(input, &[input.len().max(1)]);
        let chunked = replies_chunked(input, chunks);
        // NaN aside, chunking must not change the outcome.
        assert_eq!(format!("{chunked:?}"), format!("{whole:?}"));
        let weight: usize = whole.0.iter().map(frame_weight).sum();
        assert!(weight <= input.len());
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(1024))]

        #[test]
        fn roundtrip_encode_parse(frames in proptest::collection::vec(any_frame(), 1..4), version in 2u8..=3) {
            let mut buf = BytesMut::new();
            for frame in &frames {
                encode(frame, version, &mut buf);
            }
            let total = buf.len();
            let mut parser = ReplyParser::new();
            for frame in &frames {
                prop_assert_eq!(parser.parse(&mut buf), Ok(Some(normalize(frame, version))));
            }
            prop_assert!(buf.is_empty());
            prop_assert!(total > 0);
        }

        #[test]
        fn double_text_round_trips(d in any::<f64>()) {
            let text = format_double(d);
            let back: f64 = text.parse().unwrap();
            if d.is_nan() {
                prop_assert!(back.is_nan());
            } else {
                prop_assert_eq!(back.to_bits(), d.to_bits());
            }
        }

        #[test]
        fn arbitrary_bytes_never_panic(
            input in proptest::collection::vec(any::<u8>(), 0..512),
            chunks in proptest::collection::vec(1usize..64, 1..16),
        ) {
            check_request_parser(&input, &chunks);
            check_reply_parser(&input, &chunks);
        }

        #[test]
        fn protocol_soup_never_panics(
            input in protocol_soup(),
            chunks in proptest::collection::vec(1usize..16, 1..16),
        ) {
            check_request_parser(&input, &chunks);
            check_reply_parser(&input, &chunks);
        }

        #[test]
        fn encoded_commands_parse_back(
            cmds in proptest::collection::vec(
                proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..20), 1..5),
                1..5,
            ),
            chunks in proptest::collection::vec(1usize..32, 1..8),
        ) {
            let mut input = Vec::new();
            for cmd in &cmds {
                input.extend_from_slice(format!("*{}\r\n", cmd.len()).as_bytes());
                for arg in cmd {
                    input.extend_from_slice(format!("${}\r\n", arg.len()).as_bytes());
                    input.extend_from_slice(arg);
                    input.extend_from_slice(b"\r\n");
                }
            }
            let expected: Vec<Vec<Bytes>> =
                cmds.iter().map(|c| c.iter().map(|a| Bytes::from(a.clone())).collect()).collect();
            prop_assert_eq!(parse_chunked(&mut RequestParser::new(), &input, &chunks), (expected, None));
        }
    }
}
