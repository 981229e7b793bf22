//! Client requests as Redis 7.0 reads them: multibulk (`*`) and inline.
//!
//! This re-implements Redis 7.0's `processMultibulkBuffer` /
//! `processInlineBuffer` (`networking.c`) and `sdssplitargs` (`sds.c`) byte
//! for byte, including their quirks: the same limits, the same
//! `-ERR Protocol error: ...` texts, the same bytes accepted (Redis never
//! checks the `\n` after a `\r`, nor the `\r\n` after a bulk payload), and the
//! same incremental behaviour over partial input. A client, a fuzzer or a
//! telnet user sees the errors and the connection closes at the points where
//! Redis's would.

use super::number::parse_i64;
use super::{
    MAX_MULTIBULK_LEN, PREALLOC_MAX, PROTO_INLINE_MAX_SIZE, PROTO_MAX_BULK_LEN,
    UNAUTHENTICATED_MAX_BULK_LEN, UNAUTHENTICATED_MAX_MULTIBULK_LEN,
};
use bytes::{Buf, BufMut, Bytes, BytesMut};
use std::fmt;

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
        self.argv = Vec::with_capacity(count.min(PREALLOC_MAX));
        Ok(Header::Started)
    }

    /// The `$<len>\r\n<payload>\r\n` arguments (the loop of
    /// `processMultibulkBuffer`). What it has read leaves `buf` in one advance, whether or not
    /// the request is complete.
    fn read_bulks(&mut self, buf: &mut BytesMut) -> Result<Option<Vec<Bytes>>, ProtocolError> {
        let mut read = 0;
        let result = self.read_bulks_at(buf, &mut read);
        buf.advance(read);
        result
    }

    /// [`RequestParser::read_bulks`] from `buf[*read..]`, moving `*read` past what it uses.
    ///
    /// An argument of up to [`COPY_ARGUMENT_UP_TO`] bytes is copied out of the buffer into an
    /// allocation of its own, so that a value the engine keeps does not pin a whole read buffer
    /// (Redis copies every argument into its own object for the same reason); a longer one is
    /// split off the buffer without a copy.
    fn read_bulks_at(
        &mut self,
        buf: &mut BytesMut,
        read: &mut usize,
    ) -> Result<Option<Vec<Bytes>>, ProtocolError> {
        while self.multibulk_remaining > 0 {
            let len = match self.bulk_len {
                Some(len) => len,
                None => {
                    let rest = &buf[*read..];
                    let Some(cr) = c_strchr(rest, b'\r') else {
                        if rest.len() > PROTO_INLINE_MAX_SIZE {
                            return Err(ProtocolError::TooBigBulkCount);
                        }
                        return Ok(None);
                    };
                    if cr + 2 > rest.len() {
                        return Ok(None);
                    }
                    if rest[0] != b'$' {
                        // addReplyErrorFormat turns '\r' and '\n' into spaces.
                        let got = match rest[0] {
                            b'\r' | b'\n' => b' ',
                            other => other,
                        };
                        return Err(ProtocolError::ExpectedDollar(got));
                    }
                    let len = match parse_i64(&rest[1..cr]) {
                        Some(n) if n >= 0 && n <= self.max_bulk_len => n,
                        _ => return Err(ProtocolError::InvalidBulkLength),
                    };
                    if len > UNAUTHENTICATED_MAX_BULK_LEN && !self.authenticated {
                        return Err(ProtocolError::UnauthenticatedBulkLength);
                    }
                    *read += cr + 2;
                    let len = usize::try_from(len).map_err(|_| ProtocolError::InvalidBulkLength)?;
                    self.bulk_len = Some(len);
                    len
                }
            };
            // The payload plus two bytes Redis skips without looking at them.
            if buf.len() - *read < len.saturating_add(2) {
                return Ok(None);
            }
            let arg = if len <= COPY_ARGUMENT_UP_TO {
                let arg = Bytes::copy_from_slice(&buf[*read..*read + len]);
                *read += len + 2;
                arg
            } else {
                buf.advance(*read);
                *read = 2;
                buf.split_to(len).freeze()
            };
            self.argv.push(arg);
            self.bulk_len = None;
            self.multibulk_remaining -= 1;
        }
        Ok(Some(std::mem::take(&mut self.argv)))
    }
}

/// The longest argument copied out of the input buffer rather than split off it (see
/// [`RequestParser::read_bulks_at`]).
const COPY_ARGUMENT_UP_TO: usize = 64 * 1024;

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resp::tests::{parse_all, parse_chunked, parse_whole};
    use proptest::prelude::*;

    fn b(s: &[u8]) -> Bytes {
        Bytes::copy_from_slice(s)
    }

    fn argv(parts: &[&[u8]]) -> Vec<Bytes> {
        parts.iter().map(|p| b(p)).collect()
    }

    fn err_of(input: &[u8]) -> ProtocolError {
        parse_whole(input).1.expect("expected a protocol error")
    }

    fn unauth_err_of(input: &[u8]) -> Option<ProtocolError> {
        let mut p = RequestParser::new();
        p.set_authenticated(false);
        parse_all(&mut p, input).1
    }

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
        assert!(p.argv.capacity() <= PREALLOC_MAX);
        assert_eq!(p.argv.len(), 1);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(1024))]

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
