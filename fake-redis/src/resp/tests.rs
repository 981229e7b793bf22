//! What the request parser, the encoder and the reply parser promise together, and the harness
//! their own tests share: feeding bytes in chunks and collecting what a parser yields.

use super::*;
use crate::resp::Frame;
use bytes::{Bytes, BytesMut};
use proptest::prelude::*;

/// Pushes to `out` whatever `parse` yields from `buf` until it wants more bytes or fails.
pub(super) fn drain<T, E>(
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
pub(super) fn feed_chunked<T, E>(
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

/// Everything one parser yields from `input` given at once: the commands,
/// then the error if any (else `None` with the bytes left over).
pub(super) fn parse_all(
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

pub(super) fn parse_whole(input: &[u8]) -> (Vec<Vec<Bytes>>, Option<ProtocolError>) {
    parse_all(&mut RequestParser::new(), input)
}

/// Feeds `input` to `parser` in the given chunk sizes (cycled), draining
/// commands after each chunk.
pub(super) fn parse_chunked(
    parser: &mut RequestParser,
    input: &[u8],
    chunks: &[usize],
) -> (Vec<Vec<Bytes>>, Option<ProtocolError>) {
    feed_chunked(input, chunks, |buf| parser.parse(buf))
}

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
        // The parser reads an error that is not UTF-8 lossily.
        Frame::ErrorBytes(b) => Frame::Error(line(&String::from_utf8_lossy(b)).into()),
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
        Frame::DoubleText(t) if resp3 => Frame::Double(t.parse().expect("a printed double")),
        Frame::DoubleText(t) => Frame::Bulk(Bytes::from(t.to_string())),
        Frame::Boolean(v) if resp3 => Frame::Boolean(*v),
        Frame::Boolean(v) => Frame::Integer(i64::from(*v)),
        Frame::BigNumber(s) if resp3 => Frame::BigNumber(s.clone()),
        Frame::BigNumber(s) => Frame::Bulk(Bytes::from(s.to_string())),
        Frame::Verbatim { format, text } if resp3 => Frame::Verbatim {
            format: *format,
            text: text.clone(),
        },
        Frame::Verbatim { text, .. } => Frame::Bulk(text.clone()),
        // Attributes in a row read back as one.
        Frame::Attribute { attributes, value } if resp3 => {
            let mut pairs: Vec<(Frame, Frame)> = attributes
                .iter()
                .map(|(k, v)| (normalize(k, version), normalize(v, version)))
                .collect();
            let value = match normalize(value, version) {
                Frame::Attribute { attributes, value } => {
                    pairs.extend(attributes);
                    value
                }
                other => Box::new(other),
            };
            Frame::Attribute {
                attributes: pairs,
                value,
            }
        }
        Frame::Attribute { value, .. } => normalize(value, version),
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
            proptest::collection::vec((inner.clone(), inner.clone()), 0..4).prop_map(Frame::Map),
            (
                proptest::collection::vec((inner.clone(), inner.clone()), 0..3),
                inner
            )
                .prop_map(|(attributes, value)| Frame::Attribute {
                    attributes,
                    value: Box::new(value),
                }),
        ]
    })
}

/// Elements plus payload bytes of a frame: never more than the bytes it
/// was parsed from.
fn frame_weight(frame: &Frame) -> usize {
    1 + match frame {
        // Characters, not bytes: a line that is not UTF-8 is decoded lossily, one U+FFFD
        // (three bytes) per bad byte, so its byte length can exceed the input's.
        Frame::Simple(s) | Frame::Error(s) | Frame::BigNumber(s) | Frame::DoubleText(s) => {
            s.chars().count()
        }
        Frame::Bulk(data) | Frame::ErrorBytes(data) | Frame::Verbatim { text: data, .. } => {
            data.len()
        }
        Frame::Array(items) | Frame::Set(items) | Frame::Push(items) => {
            items.iter().map(frame_weight).sum()
        }
        Frame::Map(pairs) => pairs
            .iter()
            .map(|(k, v)| frame_weight(k) + frame_weight(v))
            .sum(),
        Frame::Attribute { attributes, value } => {
            frame_weight(value)
                + attributes
                    .iter()
                    .map(|(k, v)| frame_weight(k) + frame_weight(v))
                    .sum::<usize>()
        }
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
}

/// Arguments past the copy limit are split off the input rather than copied; either way a
/// request reads the same whole or in chunks, and the bytes after it stay for the next.
#[test]
fn long_and_short_arguments_read_the_same_whole_or_in_chunks() {
    let long = vec![b'x'; 70 * 1024];
    let mut input = b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n".to_vec();
    input.extend_from_slice(format!("${}\r\n", long.len()).as_bytes());
    input.extend_from_slice(&long);
    input.extend_from_slice(b"\r\n*2\r\n$3\r\nGET\r\n$1\r\nk\r\n");
    let expected = vec![
        vec![
            Bytes::from_static(b"SET"),
            Bytes::from_static(b"k"),
            Bytes::from(long.clone()),
        ],
        vec![Bytes::from_static(b"GET"), Bytes::from_static(b"k")],
    ];
    assert_eq!(parse_whole(&input), (expected.clone(), None));
    for chunks in [&[1000][..], &[7, 65536, 3], &[1]] {
        let chunked = parse_chunked(&mut RequestParser::new(), &input, chunks);
        assert_eq!(chunked, (expected.clone(), None), "chunks {chunks:?}");
    }
}
