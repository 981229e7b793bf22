//! The argument cursor every command reads its arguments with.
//!
//! A command's arguments are read left to right, once, as Redis's own parsers read them, and the
//! order matters: it decides which error a bad call sees (an option's value is parsed before the
//! key is looked up in one command, after it in another). [`Args`] makes that order the order of
//! the code: a handler takes the key, then the options, then says it is done, and the error texts
//! of a missing or malformed argument come from here, worded as Redis words them, instead of
//! every handler indexing `argv` and choosing its own. The command table has checked the arity
//! before a handler runs, so the arguments it guarantees are read without a check that could
//! fail.
//!
//! The cursor borrows the request: reading an argument copies nothing, which keeps the path of
//! the lock's scripts free of allocations.

use super::long_double::{LongDouble, Parsed};
use super::{NOT_FLOAT, SYNTAX, int, is};
use crate::resp::Frame;
use bytes::Bytes;

/// The arguments of one command after its name, read front to back.
pub(crate) struct Args<'a> {
    argv: &'a [Bytes],
    at: usize,
}

impl<'a> Args<'a> {
    /// The arguments of `argv`, whose first element is the command's name.
    pub fn new(argv: &'a [Bytes]) -> Args<'a> {
        Args {
            argv,
            at: argv.len().min(1),
        }
    }

    /// The whole command as the client sent it, its name included.
    pub fn whole(&self) -> &'a [Bytes] {
        self.argv
    }

    /// The command's name as the client sent it, in its case.
    #[inline]
    pub fn name(&self) -> &'a [u8] {
        self.argv.first().map_or(&[], |n| &n[..])
    }

    /// How many arguments are left.
    #[inline]
    pub fn remaining(&self) -> usize {
        self.argv.len() - self.at
    }

    /// The next argument without taking it.
    #[inline]
    pub fn peek(&self) -> Option<&'a Bytes> {
        self.argv.get(self.at)
    }

    /// The next argument: `ERR syntax error` when there is none (an option missing its value).
    #[inline]
    pub fn next_bytes(&mut self) -> Result<&'a Bytes, Frame> {
        // A match, not `ok_or`: the error is built only when it is returned.
        match self.next() {
            Some(arg) => Ok(arg),
            None => Err(SYNTAX),
        }
    }

    /// The next argument as a 64-bit integer (`ERR value is not an integer or out of range`).
    #[inline]
    pub fn next_int(&mut self) -> Result<i64, Frame> {
        int(self.next_bytes()?)
    }

    /// The next argument as a 32-bit integer, as Redis's `getIntFromObjectOrReply` reads a
    /// database index: not an integer gives `ERR value is not an integer or out of range`, and
    /// an integer past 32 bits `ERR value is out of range, value must between -2147483648 and
    /// 2147483647`.
    pub fn next_i32(&mut self) -> Result<i32, Frame> {
        let value = self.next_int()?;
        i32::try_from(value).map_err(|_| {
            Frame::error("ERR value is out of range, value must between -2147483648 and 2147483647")
        })
    }

    /// The next argument as a `long double`, as `INCRBYFLOAT` reads its increment (`ERR value
    /// is not a valid float`).
    pub fn next_float(&mut self) -> Result<Parsed, Frame> {
        LongDouble::parse(self.next_bytes()?).ok_or(NOT_FLOAT)
    }

    /// Takes the next argument if it is `word` (any case): whether it was.
    pub fn eat(&mut self, word: &str) -> bool {
        let found = self.peek().is_some_and(|a| is(a, word));
        if found {
            self.at += 1;
        }
        found
    }

    /// Takes the next `n` arguments (as many as are left, if fewer).
    #[inline]
    pub fn take(&mut self, n: usize) -> &'a [Bytes] {
        let end = self.at.saturating_add(n).min(self.argv.len());
        let taken = &self.argv[self.at..end];
        self.at = end;
        taken
    }

    /// Takes every argument left.
    #[inline]
    pub fn rest(&mut self) -> &'a [Bytes] {
        self.take(usize::MAX)
    }

    /// The end of a command's arguments: `ERR syntax error` if any are left.
    pub fn finish(&self) -> Result<(), Frame> {
        if self.remaining() == 0 {
            Ok(())
        } else {
            Err(SYNTAX)
        }
    }
}

impl<'a> Iterator for Args<'a> {
    type Item = &'a Bytes;

    #[inline]
    fn next(&mut self) -> Option<&'a Bytes> {
        let arg = self.argv.get(self.at)?;
        self.at += 1;
        Some(arg)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.remaining(), Some(self.remaining()))
    }
}

impl ExactSizeIterator for Args<'_> {}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cmd::NOT_INTEGER;

    fn argv(words: &[&'static str]) -> Vec<Bytes> {
        words
            .iter()
            .map(|w| Bytes::from_static(w.as_bytes()))
            .collect()
    }

    #[test]
    fn the_cursor_reads_after_the_name_and_finishes_only_at_the_end() {
        let argv = argv(&["SET", "k", "v", "px", "100"]);
        let mut args = Args::new(&argv);
        assert_eq!(args.name(), b"SET");
        assert_eq!(&args.next_bytes().unwrap()[..], b"k");
        assert_eq!(args.remaining(), 3);
        assert_eq!(args.finish(), Err(SYNTAX));
        assert!(!args.eat("px"));
        args.next();
        assert!(args.eat("PX"));
        assert_eq!(args.next_int(), Ok(100));
        assert_eq!(args.finish(), Ok(()));
        assert_eq!(args.next_bytes(), Err(SYNTAX));
    }

    #[test]
    fn malformed_numbers_get_redis_s_errors() {
        let argv = argv(&["X", "1.5", "nan", "abc"]);
        let mut args = Args::new(&argv);
        assert_eq!(args.next_int(), Err(NOT_INTEGER));
        assert_eq!(args.next_float(), Err(NOT_FLOAT));
        assert_eq!(args.next_float(), Err(NOT_FLOAT));
        assert_eq!(args.rest().len(), 0);
    }
}
