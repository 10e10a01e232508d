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

/// The names of one context: all their text in one buffer, and where each
/// ends. Name `k` (1-based) is `text[ends[k - 2]..ends[k - 1]]`.
///
/// Limits: 4 GiB of name text and 2^32 - 1 names (as [`crate::Loc`] limits
/// a source to 4 GiB).
#[derive(Clone, Debug, Default)]
pub struct Names {
    text: String,
    ends: Vec<u32>,
}

impl Names {
    /// Stores `s` and returns its name (no deduplication: most names are
    /// distinct, and a copy is made by copying the [`Name`]).
    pub fn intern(&mut self, s: &str) -> Name {
        self.text.push_str(s);
        self.ends
            .push(u32::try_from(self.text.len()).unwrap_or(u32::MAX));
        // `ends` has at least one entry now, so the id is at least 1.
        Name(NonZeroU32::new(self.ends.len() as u32).unwrap_or(NonZeroU32::MIN))
    }

    /// The text of `n`.
    pub fn get(&self, n: Name) -> &str {
        let k = n.0.get() as usize - 1;
        let start = if k == 0 { 0 } else { self.ends[k - 1] as usize };
        let end = self.ends[k] as usize;
        self.text.get(start..end).unwrap_or("")
    }

    /// Reserves room for about `names` names of `bytes` bytes in all.
    pub fn reserve(&mut self, names: usize, bytes: usize) {
        self.ends.reserve(names);
        self.text.reserve(bytes);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_read_back() {
        let mut t = Names::default();
        let a = t.intern("x");
        let e = t.intern("");
        let b = t.intern("long_name#1");
        assert_eq!((t.get(a), t.get(e), t.get(b)), ("x", "", "long_name#1"));
        assert_eq!(std::mem::size_of::<Option<Name>>(), 4);
    }
}
