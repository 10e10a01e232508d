//! Value names, interned per context (issue 14: 4 bytes a value instead of
//! a 16-byte pointer to a separate heap string).
//!
//! Names are only printing hints (the source's `%name`), so the table never
//! forgets one: a renamed value leaves its old name behind, and copying a
//! name to another value copies its 4-byte [`Name`].

use std::num::NonZeroU32;

/// A name in its context's [`Names`]; `Option<Name>` is 4 bytes.
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug)]
pub struct Name(NonZeroU32);

/// The hash of a name's text, as the parser's scope tables and the printer's
/// name tables use it.
///
/// A name that ends in a number (`%v1234`, MLIR's `%1234`, `%arg3`) hashes
/// to the number plus a hash of the rest, so `%v1234` and `%v1235` land in
/// neighbouring buckets: generated IR names its values in order, and a use
/// mostly reads a value defined shortly before it, whose bucket is then
/// still in the cache (in a table of 10^6 names, a random bucket is a
/// cache miss). The top 7 bits, which hashbrown keeps as the tag compared
/// within a probe group, come from a multiplicative hash of the number so
/// that neighbours differ there. Any other name: FxHash of its text.
pub(crate) fn name_hash(s: &str) -> u64 {
    name_hash_key(s).0
}

/// [`name_hash`] of `s`, and its short key: for a name of at most one ASCII
/// character followed by a number below 2^24 written without leading zeros
/// (`%v1234`, MLIR's `%1234`, `%x7`), `0x8000_0000 | char << 24 | number`,
/// which no other name shares; for any other name 0 (no key). The parser's
/// scope tables compare keys where they exist, so a lookup does not read the
/// name's text (at a random place in a large module, a cache miss).
pub(crate) fn name_hash_key(s: &str) -> (u64, u32) {
    use std::hash::{Hash, Hasher};
    let b = s.as_bytes();
    let digits = b.iter().rev().take_while(|c| c.is_ascii_digit()).count();
    let mut h = rustc_hash::FxHasher::default();
    if digits == 0 || digits > 18 {
        s.hash(&mut h);
        return (h.finish(), 0);
    }
    let (prefix, number) = b.split_at(b.len() - digits);
    let n = number
        .iter()
        .fold(0u64, |n, &d| n * 10 + u64::from(d - b'0'));
    prefix.hash(&mut h);
    const TAG: u64 = 0x7f << 57;
    let tag = n.wrapping_mul(0x9e37_79b9_7f4a_7c15) & TAG;
    let hash = tag | (n.wrapping_add(h.finish()) & !TAG);
    let canonical = digits == 1 || number[0] != b'0';
    let key = match prefix {
        [] if canonical && n < 1 << 24 => 0x8000_0000 | n as u32,
        [c] if canonical && *c < 0x80 && n < 1 << 24 => {
            0x8000_0000 | u32::from(*c) << 24 | n as u32
        }
        _ => 0,
    };
    (hash, key)
}

impl Name {
    /// The name's 32-bit id (never 0).
    pub(crate) fn raw(self) -> u32 {
        self.0.get()
    }
    /// The name with id `raw`, if not 0.
    pub(crate) fn from_raw(raw: u32) -> Option<Name> {
        NonZeroU32::new(raw).map(Name)
    }
}

/// The names of one context, all in one string: each name is its length
/// followed by its text, and a [`Name`] is the offset of its length plus
/// one. The length is written in ASCII digits of 6 bits, lowest first, 0x40
/// marking that another follows (one byte below 64), so the buffer stays
/// UTF-8 and a name is read without validation. Reading a name touches one
/// place in memory, which matters to the parser: it compares names on every
/// use of a value.
///
/// Limit: 4 GiB of names (as [`crate::Loc`] limits a source to 4 GiB); a
/// name past it reads as the empty name.
#[derive(Clone, Debug, Default)]
pub struct Names {
    text: String,
}

impl Names {
    /// Stores `s` and returns its name (no deduplication: most names are
    /// distinct, and a copy is made by copying the [`Name`]).
    pub fn intern(&mut self, s: &str) -> Name {
        let at = self.text.len();
        let mut n = s.len();
        loop {
            let digit = (n & 0x3f) as u8;
            n >>= 6;
            if n == 0 {
                self.text.push(digit as char);
                break;
            }
            self.text.push((digit | 0x40) as char);
        }
        self.text.push_str(s);
        let id = u32::try_from(at + 1).unwrap_or(0);
        Name(NonZeroU32::new(id).unwrap_or(NonZeroU32::MAX))
    }

    /// The text of `n`.
    pub fn get(&self, n: Name) -> &str {
        let bytes = self.text.as_bytes();
        let mut at = n.0.get() as usize - 1;
        let (mut len, mut shift) = (0usize, 0);
        while let Some(&b) = bytes.get(at) {
            at += 1;
            len |= ((b & 0x3f) as usize) << shift;
            shift += 6;
            if b & 0x40 == 0 || shift > 30 {
                break;
            }
        }
        self.text.get(at..at.saturating_add(len)).unwrap_or("")
    }

    /// Reserves room for names of about `bytes` bytes in all.
    pub fn reserve(&mut self, bytes: usize) {
        self.text.reserve(bytes);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_keys_are_exact() {
        let key = |s: &str| name_hash_key(s).1;
        let keyed = [
            "0",
            "1",
            "16777215",
            "v0",
            "v1",
            "v10",
            "x1",
            "_5",
            "v16777215",
        ];
        for (i, a) in keyed.iter().enumerate() {
            assert_ne!(key(a), 0, "{a}");
            assert_eq!(name_hash_key(a).0, name_hash(a));
            for b in &keyed[i + 1..] {
                assert_ne!(key(a), key(b), "{a} {b}");
            }
        }
        for s in ["", "v", "v01", "00", "arg3", "v16777216", "é1", "ab"] {
            assert_eq!(key(s), 0, "{s}");
        }
    }

    #[test]
    fn names_read_back() {
        let mut t = Names::default();
        let a = t.intern("x");
        let e = t.intern("");
        let b = t.intern("long_name#1");
        let long = "y".repeat(300);
        let l = t.intern(&long);
        let c = t.intern("\u{e9}t\u{e9}");
        assert_eq!((t.get(a), t.get(e), t.get(b)), ("x", "", "long_name#1"));
        assert_eq!((t.get(l), t.get(c)), (long.as_str(), "\u{e9}t\u{e9}"));
        assert_eq!(std::mem::size_of::<Option<Name>>(), 4);
    }

    #[test]
    fn numbered_names_hash_to_neighbouring_buckets() {
        let low = |s: &str| name_hash(s) & ((1 << 57) - 1);
        let tag = |s: &str| name_hash(s) >> 57;
        // Neighbours: consecutive low bits, different tags.
        assert_eq!(low("v1235"), low("v1234") + 1);
        assert_eq!(low("1001"), low("1000") + 1);
        assert_ne!(tag("v1234"), tag("v1235"));
        // Another prefix is elsewhere; the same text hashes the same.
        assert_ne!(low("x1234"), low("v1234"));
        assert_eq!(name_hash("arg3"), name_hash("arg3"));
        // Names without a trailing number, or with too long a one, hash
        // their text.
        assert_ne!(name_hash("a"), name_hash("b"));
        assert_ne!(
            name_hash("n1234567890123456789"),
            name_hash("n1234567890123456788")
        );
    }
}
