//! The text an IR was parsed from, kept for diagnostics.
//!
//! A large input file is read through a read-only memory map rather than
//! copied onto the heap, and the parser gives the pages it has read back to
//! the operating system as it goes ([`SourceText::release_before`]): the text
//! of a 10^6-op file (about 64 MiB) then costs no lasting resident memory,
//! which matters for issue 14's memory budget. Pages that are read again
//! (a diagnostic's source line) are faulted back in from the page cache.

use std::cell::Cell;
use std::fmt;
use std::fs::File;
use std::ops::Deref;

/// Inputs below this size (4 MiB) are read onto the heap: mapping them saves
/// nothing.
pub const MAP_THRESHOLD: usize = 1 << 22;
/// Pages are given back in steps of at least this many bytes.
const RELEASE_STEP: usize = 1 << 22;

/// The text of a [`Source`](crate::Source): owned, or a read-only memory
/// map of the input file. Dereferences to the whole text as `&str`.
///
/// A mapped file must not change while the context lives (as for any tool
/// that maps its input, e.g. `ripgrep`); its UTF-8 is checked once, when
/// it is mapped.
pub struct SourceText {
    inner: Inner,
}

enum Inner {
    Owned(String),
    Mapped {
        map: memmap2::Mmap,
        /// Bytes before this offset have been given back (page-aligned).
        released: Cell<usize>,
    },
}

impl SourceText {
    /// Reads `file`: mapped when it is at least 4 MiB, otherwise read onto
    /// the heap.
    ///
    /// Errors: an I/O error, or `Ok(Err((off, bytes)))` when the text is not
    /// UTF-8 (`off` = the length of the valid prefix; `bytes` holds at least
    /// that prefix).
    pub fn read_file(mut file: File) -> std::io::Result<Result<SourceText, (usize, Vec<u8>)>> {
        let len = file.metadata()?.len() as usize;
        if len < MAP_THRESHOLD {
            let mut bytes = Vec::with_capacity(len);
            std::io::Read::read_to_end(&mut file, &mut bytes)?;
            return Ok(SourceText::from_bytes(bytes));
        }
        // SAFETY: the map is read-only and lives as long as the text; the
        // file is documented to stay unchanged while L0 runs.
        let map = unsafe { memmap2::Mmap::map(&file)? };
        let text = SourceText {
            inner: Inner::Mapped {
                map,
                released: Cell::new(0),
            },
        };
        if let Err(e) = std::str::from_utf8(text.bytes()) {
            let off = e.valid_up_to();
            return Ok(Err((off, text.bytes()[..off].to_vec())));
        }
        Ok(Ok(text))
    }

    /// An owned text from `bytes`, or the length of their valid UTF-8 prefix
    /// and the bytes.
    pub fn from_bytes(bytes: Vec<u8>) -> Result<SourceText, (usize, Vec<u8>)> {
        match String::from_utf8(bytes) {
            Ok(s) => Ok(s.into()),
            Err(e) => Err((e.utf8_error().valid_up_to(), e.into_bytes())),
        }
    }

    /// The whole text.
    pub fn as_str(&self) -> &str {
        self
    }

    fn bytes(&self) -> &[u8] {
        match &self.inner {
            Inner::Owned(s) => s.as_bytes(),
            Inner::Mapped { map, .. } => map,
        }
    }

    /// Tells the operating system that the bytes before `offset` are not
    /// needed soon, so their pages stop counting as resident memory (a
    /// mapped text only, in steps of 4 MiB; reading them again is correct,
    /// only slower). The parser calls this as it moves through the text.
    pub fn release_before(&self, offset: usize) {
        if let Inner::Mapped { map, released } = &self.inner {
            let page = 4096;
            let upto = offset.min(map.len()) / page * page;
            let from = released.get();
            if upto >= from + RELEASE_STEP || (upto > from && offset >= map.len()) {
                // DontNeed on a read-only shared file map only drops the
                // page table entries: later reads see the file's bytes
                // again, so no reference into the text is invalidated.
                // SAFETY: see above; the map is never written.
                let _ = unsafe {
                    map.unchecked_advise_range(
                        memmap2::UncheckedAdvice::DontNeed,
                        from,
                        upto - from,
                    )
                };
                released.set(upto);
            }
        }
    }
}

impl Deref for SourceText {
    type Target = str;
    fn deref(&self) -> &str {
        match &self.inner {
            Inner::Owned(s) => s,
            // SAFETY: checked to be UTF-8 in `read_file`, and the file does
            // not change (see the type's documentation).
            Inner::Mapped { map, .. } => unsafe { std::str::from_utf8_unchecked(map) },
        }
    }
}

impl From<String> for SourceText {
    fn from(s: String) -> SourceText {
        SourceText {
            inner: Inner::Owned(s),
        }
    }
}

impl From<&str> for SourceText {
    fn from(s: &str) -> SourceText {
        s.to_string().into()
    }
}

impl Clone for SourceText {
    /// A copy of the text onto the heap.
    fn clone(&self) -> SourceText {
        self.to_string().into()
    }
}

impl fmt::Debug for SourceText {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        match &self.inner {
            Inner::Owned(_) => write!(f, "SourceText::Owned({} bytes)", self.len()),
            Inner::Mapped { .. } => write!(f, "SourceText::Mapped({} bytes)", self.len()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn file_with(bytes: &[u8]) -> File {
        let path =
            std::env::temp_dir().join(format!("l0-source-{}-{}", std::process::id(), bytes.len()));
        std::fs::File::create(&path)
            .unwrap()
            .write_all(bytes)
            .unwrap();
        let f = File::open(&path).unwrap();
        let _ = std::fs::remove_file(&path);
        f
    }

    #[test]
    fn mapped_text_reads_back_after_release() {
        // Multi-byte characters straddle the 4 MiB release steps.
        let unit = "ab\u{e9}\u{1F600}";
        let text: String = unit.repeat((3 * MAP_THRESHOLD) / unit.len() + 7);
        let t = SourceText::read_file(file_with(text.as_bytes()))
            .unwrap()
            .unwrap();
        assert!(matches!(t.inner, Inner::Mapped { .. }));
        t.release_before(t.len());
        assert_eq!(&*t, text.as_str());
    }

    #[test]
    fn invalid_utf8_reports_the_valid_prefix() {
        let mut bytes = vec![b'a'; MAP_THRESHOLD + 5];
        bytes[MAP_THRESHOLD + 1] = 0xff;
        let err = SourceText::read_file(file_with(&bytes))
            .unwrap()
            .err()
            .unwrap();
        assert_eq!(err.0, MAP_THRESHOLD + 1);
        let small = SourceText::read_file(file_with(b"ok\xffno"))
            .unwrap()
            .err()
            .unwrap();
        assert_eq!(small.0, 2);
    }
}
