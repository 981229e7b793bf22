//! Redis's glob patterns, as `KEYS`, `SCAN MATCH`, `HSCAN`/`SSCAN`/`ZSCAN MATCH`, `PSUBSCRIBE` and
//! `PUBSUB CHANNELS` match them.
//!
//! One matcher for the keyspace and the pub/sub registry alike, so a pattern means the same
//! everywhere, as in Redis, where all of them call `stringmatchlen`. It follows Redis 7.0's rules
//! byte for byte, the odd ones included: a class like `[a-]` is the range from `a` to `]`,
//! reversed ranges are swapped, bytes compare as C's signed `char` in a range, and an
//! unterminated class ends with the pattern. It also keeps Redis's two guards against abusive
//! patterns, so any client's pattern costs time in proportion to pattern × text rather than
//! exponential in its stars: recursion stops at a nesting of 1000, and once the rest of a pattern
//! after a `*` matched nowhere in the text, no earlier `*` tries a longer match (the rest would
//! have to match even later, where it was just shown not to).

/// Redis's `stringmatchlen` (case-sensitive): glob-style matching with `*`, `?`, `[…]` (ranges,
/// `^` negation, `\` escapes) and `\` escapes.
pub(crate) fn glob_match(pattern: &[u8], text: &[u8]) -> bool {
    let mut steps = 0;
    glob_match_counting(pattern, text, &mut steps)
}

/// [`glob_match`], adding to `steps` one for every pattern position it examines: the work done,
/// which Redis's guards bound.
pub(crate) fn glob_match_counting(pattern: &[u8], text: &[u8], steps: &mut u64) -> bool {
    let mut skip_longer = false;
    Matcher {
        pattern,
        steps,
        skip_longer: &mut skip_longer,
    }
    .matches(0, text, 0)
}

/// How deep `*` may recurse before a match gives up (and fails), as in Redis.
const MAX_NESTING: usize = 1000;

struct Matcher<'a> {
    pattern: &'a [u8],
    steps: &'a mut u64,
    /// Redis's `skipLongerMatches`, shared by every level of one match.
    skip_longer: &'a mut bool,
}

impl Matcher<'_> {
    /// The pattern byte at `i`; past the end it is the NUL that ends a Redis string.
    fn at(&self, i: usize) -> u8 {
        self.pattern.get(i).copied().unwrap_or(0)
    }

    /// Whether the pattern from `p` on matches all of `s`.
    fn matches(&mut self, mut p: usize, mut s: &[u8], nesting: usize) -> bool {
        if nesting > MAX_NESTING {
            return false;
        }
        let len = self.pattern.len();
        while p < len && !s.is_empty() {
            *self.steps += 1;
            match self.pattern[p] {
                b'*' => {
                    while p + 1 < len && self.pattern[p + 1] == b'*' {
                        p += 1;
                    }
                    if p + 1 == len {
                        return true;
                    }
                    while !s.is_empty() {
                        if self.matches(p + 1, s, nesting + 1) {
                            return true;
                        }
                        if *self.skip_longer {
                            return false;
                        }
                        s = &s[1..];
                    }
                    *self.skip_longer = true;
                    return false;
                }
                b'?' => s = &s[1..],
                b'[' => {
                    p += 1;
                    let negate = self.at(p) == b'^';
                    if negate {
                        p += 1;
                    }
                    let c = s[0];
                    let mut matched = false;
                    loop {
                        *self.steps += 1;
                        if self.at(p) == b'\\' && len - p >= 2 {
                            p += 1;
                            matched |= self.pattern[p] == c;
                        } else if self.at(p) == b']' {
                            break;
                        } else if p >= len {
                            // Unterminated: the class ends with the pattern.
                            p -= 1;
                            break;
                        } else if len - p >= 3 && self.pattern[p + 1] == b'-' {
                            // C's `char` is signed: a byte of 0x80 or more sorts below ASCII.
                            let (mut lo, mut hi) =
                                (self.pattern[p] as i8, self.pattern[p + 2] as i8);
                            if lo > hi {
                                std::mem::swap(&mut lo, &mut hi);
                            }
                            p += 2;
                            matched |= (lo..=hi).contains(&(c as i8));
                        } else {
                            matched |= self.pattern[p] == c;
                        }
                        p += 1;
                    }
                    if matched == negate {
                        return false;
                    }
                    s = &s[1..];
                }
                b'\\' if len - p >= 2 => {
                    p += 1;
                    if self.pattern[p] != s[0] {
                        return false;
                    }
                    s = &s[1..];
                }
                literal => {
                    if literal != s[0] {
                        return false;
                    }
                    s = &s[1..];
                }
            }
            p += 1;
            if s.is_empty() {
                while p < len && self.pattern[p] == b'*' {
                    p += 1;
                }
                break;
            }
        }
        p >= len && s.is_empty()
    }
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

    #[test]
    fn classes_follow_redis_s_odd_rules() {
        // `[a-]` is the range from `]` to `a` (swapped), so it holds `^` and `]` but not `-`.
        for c in [b"^", b"]", b"a", b"_"] {
            assert!(glob_match(b"[a-]", c), "{c:?}");
        }
        assert!(!glob_match(b"[a-]", b"-"));
        assert!(glob_match(b"[z-a]", b"m"));
        assert!(glob_match(b"[\\]]", b"]"));
        assert!(glob_match(b"[^", b"x"));
        assert!(!glob_match(b"[", b"x"));
        assert!(glob_match(b"[ab", b"b"));
        // Signed `char`: 0xff is below `a`, so `[a-\xff]` spans 0xff..=a.
        assert!(!glob_match(b"[a-\xff]", b"b"));
        assert!(glob_match(b"[a-\xff]", b"A"));
        assert!(glob_match(b"a\\", b"a\\"));
        assert!(glob_match(b"a*", b"a"));
        assert!(glob_match(b"a**", b"a"));
        assert!(!glob_match(b"a?", b"a"));
    }

    /// The work a pattern may cost: a few steps per (pattern byte, text byte) pair.
    fn bound(pattern: &[u8], text: &[u8]) -> u64 {
        4 * (pattern.len() as u64 + 1) * (text.len() as u64 + 1)
    }

    #[test]
    fn nested_stars_cost_pattern_times_text_not_exponential() {
        // Redis's keyspace test "pattern matching long nested loops".
        let text = [b'a'; 40];
        let pattern = b"a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*b";
        let mut steps = 0;
        assert!(!glob_match_counting(pattern, &text, &mut steps));
        assert!(steps <= bound(pattern, &text), "{steps} steps");
        // "... very long nested loops": the nesting guard gives up.
        let text = vec![b'a'; 50_000];
        let pattern = b"*?".repeat(50_000);
        let mut steps = 0;
        assert!(!glob_match_counting(&pattern, &text, &mut steps));
        assert!(steps <= 4 * 50_000, "{steps} steps");
    }

    #[test]
    fn every_pattern_of_redis_s_keyspace_unit_is_cheap_on_a_long_key() {
        let patterns: [&[u8]; 6] = [
            b"foo*",
            b"*",
            b"{a}*",
            b"*{b}*",
            b"a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*b",
            b"*?*?*?*?*?*?*?*?*?*?*?*?*?*?*?*?*?*?*?*?x",
        ];
        let texts = [vec![b'a'; 2_000], b"{a}".repeat(667), b"{b}".repeat(667)];
        for pattern in patterns {
            for text in &texts {
                let mut steps = 0;
                glob_match_counting(pattern, text, &mut steps);
                assert!(
                    steps <= bound(pattern, text),
                    "{:?}: {steps} steps",
                    String::from_utf8_lossy(pattern)
                );
            }
        }
    }
}
