//! Redis's glob patterns, as `KEYS`, `SCAN MATCH`, `PSUBSCRIBE` and `PUBSUB CHANNELS` match them.
//!
//! One matcher for the keyspace and the pub/sub registry alike, so a pattern means the same
//! everywhere, as in Redis, where all of them call `stringmatchlen`.

/// Redis's `stringmatchlen`: glob-style matching with `*`, `?`, `[…]` (ranges, `^` negation) and
/// `\` escapes, as `KEYS`, `SCAN MATCH` and `PSUBSCRIBE` use it.
pub(crate) fn glob_match(pattern: &[u8], text: &[u8]) -> bool {
    fn rec(p: &[u8], s: &[u8], depth: usize) -> bool {
        if depth > 1000 {
            return false;
        }
        let (mut p, mut s) = (p, s);
        while let Some(&c) = p.first() {
            match c {
                b'*' => {
                    while p.len() > 1 && p[1] == b'*' {
                        p = &p[1..];
                    }
                    if p.len() == 1 {
                        return true;
                    }
                    for i in 0..=s.len() {
                        if rec(&p[1..], &s[i..], depth + 1) {
                            return true;
                        }
                    }
                    return false;
                }
                b'?' => {
                    if s.is_empty() {
                        return false;
                    }
                    s = &s[1..];
                }
                b'[' => {
                    let Some(&ch) = s.first() else { return false };
                    p = &p[1..];
                    let not = p.first() == Some(&b'^');
                    if not {
                        p = &p[1..];
                    }
                    let mut matched = false;
                    loop {
                        match p {
                            [b'\\', e, ..] => {
                                if *e == ch {
                                    matched = true;
                                }
                                p = &p[2..];
                            }
                            [b']', ..] => break,
                            [] => {
                                // Unterminated class: Redis treats the end as the class's end.
                                break;
                            }
                            [a, b'-', z, ..] if *z != b']' => {
                                let (lo, hi) = if a <= z { (*a, *z) } else { (*z, *a) };
                                if (lo..=hi).contains(&ch) {
                                    matched = true;
                                }
                                p = &p[3..];
                            }
                            [a, ..] => {
                                if *a == ch {
                                    matched = true;
                                }
                                p = &p[1..];
                            }
                        }
                    }
                    if not {
                        matched = !matched;
                    }
                    if !matched {
                        return false;
                    }
                    s = &s[1..];
                    if p.is_empty() {
                        return s.is_empty();
                    }
                }
                b'\\' if p.len() >= 2 => {
                    p = &p[1..];
                    if s.first() != Some(&p[0]) {
                        return false;
                    }
                    s = &s[1..];
                }
                _ => {
                    if s.first() != Some(&c) {
                        return false;
                    }
                    s = &s[1..];
                }
            }
            p = &p[1..];
        }
        s.is_empty()
    }
    rec(pattern, text, 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs_match_as_redis_does() {
        assert!(glob_match(b"*", b"anything"));
        assert!(glob_match(b"h?llo", b"hello"));
        assert!(glob_match(b"h[ae]llo", b"hallo"));
        assert!(!glob_match(b"h[^e]llo", b"hello"));
        assert!(glob_match(b"h[a-b]llo", b"hbllo"));
        assert!(glob_match(
            b"redisson_lock__channel:*",
            b"redisson_lock__channel:{x}"
        ));
        assert!(glob_match(b"a\\*b", b"a*b"));
        assert!(!glob_match(b"a\\*b", b"axb"));
        assert!(!glob_match(b"abc", b"abcd"));
    }
}
