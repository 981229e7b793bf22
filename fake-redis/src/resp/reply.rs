//! Replies read back into frames: the client side of the wire, for tests and
//! test clients of the fake (or of a real Redis).
//!
//! Replies parse into [`Frame`], the engine's reply and the type the encoder
//! writes, not into a type of their own: it holds everything a RESP2 or RESP3
//! reply carries that a client acts on, big numbers and verbatim strings
//! included. What it does not keep is spelling: a RESP3 null and a blob error
//! read as [`Frame::Null`] and [`Frame::Error`], and a run of attributes reads
//! as one (see [`ReplyParser`]). So a frame encoded and parsed back is the
//! frame as the client's protocol version shows it.
//!
//! Integers (lengths, counts, `:` replies) follow Redis's `string2ll`, as the
//! request parser's do: Redis never writes a leading zero, a `+` or `-0`.

use super::number::parse_i64;
use super::{PREALLOC_MAX, PROTO_MAX_BULK_LEN};
use crate::resp::Frame;
use bytes::{Buf, Bytes, BytesMut};
use std::borrow::Cow;
use std::fmt;

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
/// becomes [`Frame::Error`], and attributes (`|`) become a
/// [`Frame::Attribute`] around the reply they annotate (a run of them, one
/// with all their pairs). Simple strings and errors that
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
        // Attributes are read in a loop, not by recursion, so that a run of
        // them cannot exhaust the stack; their pairs are gathered into one.
        let mut attributes: Option<Vec<(Frame, Frame)>> = None;
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
                    let gathered = attributes.as_ref().map_or(0, Vec::len);
                    let more = usize::try_from(len).unwrap_or(0);
                    if gathered.saturating_add(more).saturating_mul(2) > self.limits.max_elements {
                        return Err(ReplyError::TooLarge.into());
                    }
                    let pairs = self.pairs(len, depth)?;
                    attributes.get_or_insert_with(Vec::new).extend(pairs);
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
            return Ok(match attributes {
                Some(attributes) => Frame::Attribute {
                    attributes,
                    value: Box::new(frame),
                },
                None => frame,
            });
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
        len.min((self.buf.len() - self.pos) / 3).min(PREALLOC_MAX)
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

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::BufMut;

    fn parse_reply(input: &[u8]) -> Result<Option<Frame>, ReplyError> {
        ReplyParser::new().parse(&mut BytesMut::from(input))
    }

    // 3.141 is the double DEBUG PROTOCOL sends, not an approximation of pi.
    #[allow(clippy::approx_constant)]
    #[test]
    fn reply_parser_reads_redis_debug_protocol_output() {
        // RESP3 replies of Redis 7.0.15's DEBUG PROTOCOL <type>.
        let attrib: &[u8] = b"|1\r\n$14\r\nkey-popularity\r\n*2\r\n$7\r\nkey:123\r\n:90\r\n\
            $39\r\nSome real reply following the attribute\r\n";
        assert_eq!(
            parse_reply(attrib),
            Ok(Some(Frame::Attribute {
                attributes: vec![(
                    Frame::bulk(&b"key-popularity"[..]),
                    Frame::Array(vec![Frame::bulk(&b"key:123"[..]), Frame::Integer(90)]),
                )],
                value: Box::new(Frame::bulk(&b"Some real reply following the attribute"[..])),
            }))
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
        assert_eq!(
            parse_reply(b":-9223372036854775808\r\n"),
            Ok(Some(Frame::Integer(i64::MIN)))
        );
        assert_eq!(parse_reply(b":0\r\n"), Ok(Some(Frame::Integer(0))));
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
            // Lengths, counts and integers follow `string2ll`, as Redis writes them.
            b":01\r\n",
            b":-0\r\n",
            b":+1\r\n",
            b":1 \r\n",
            b"$03\r\nfoo\r\n",
            b"*-0\r\n",
            b":9223372036854775808\r\n",
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
        // Runs of attributes do not recurse, and read as one.
        let mut many = b"|0\r\n".repeat(100_000);
        many.extend_from_slice(b"|1\r\n:2\r\n:3\r\n:1\r\n");
        assert_eq!(
            parse_reply(&many),
            Ok(Some(Frame::Attribute {
                attributes: vec![(Frame::Integer(2), Frame::Integer(3))],
                value: Box::new(Frame::Integer(1)),
            }))
        );
        // Their pairs together count against the element limit.
        assert_eq!(
            parse(b"|1\r\n:1\r\n:1\r\n|2\r\n"),
            Err(ReplyError::TooLarge)
        );
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
}
