//! A hash index over the keys of a bucket (`arr.find_or_insert` on an
//! `arr` that nothing else writes): open addressing with linear probing,
//! each slot a key's position + 1 (0 is empty), keys compared against the
//! array's data. A lookup is expected O(1) instead of a scan of every key
//! so far (a groupBy over 1000 keys was 1000 compares per element).
//!
//! The index hangs off the header ([`ArrHeader::index`]); it covers
//! `count` keys and is rebuilt from the data whenever the array's length
//! differs (an `arr.push` past it). Codegen calls
//! [`l0rt_find_or_insert_hashed`] only for an array that no op but
//! `arr.find_or_insert` writes (`crate::ownership::keys_only`), since a
//! store into a key would leave the index stale. `runtime/l0rt.c`
//! implements the same.

use std::ffi::c_void;

use super::{calloc, free, l0rt_arr_grow, ArrHeader};

/// The index of a key array (C layout, allocated with `malloc`).
#[repr(C)]
pub struct KeyIndex {
    /// Keys indexed (the array's length when last updated).
    count: i64,
    /// Slots minus one (a power of two minus one).
    mask: i64,
    /// `mask + 1` slots, each a position + 1 or 0.
    slots: *mut i64,
}

/// The low `es` bytes of `bits`.
fn low(bits: u64, es: usize) -> u64 {
    if es >= 8 {
        bits
    } else {
        bits & ((1u64 << (8 * es)) - 1)
    }
}

/// A 64-bit mix (Fibonacci hashing of the key's bits).
fn hash(bits: u64) -> u64 {
    let h = bits.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    h ^ (h >> 29)
}

/// The key at position `i` of the data (low `es` bytes, little endian).
unsafe fn key_at(data: *const u8, i: usize, es: usize) -> u64 {
    let mut b = [0u8; 8];
    std::ptr::copy_nonoverlapping(data.add(i * es), b.as_mut_ptr(), es.min(8));
    u64::from_le_bytes(b)
}

/// Frees an index (null is fine).
///
/// # Safety
/// `ix` must come from this module, or be null.
pub unsafe fn free_index(ix: *mut KeyIndex) {
    if !ix.is_null() {
        free((*ix).slots as *mut c_void);
        free(ix as *mut c_void);
    }
}

/// Places position `i` (key `bits`) in the first empty slot of its probe.
unsafe fn place(ix: &mut KeyIndex, bits: u64, i: i64) {
    let mut p = (hash(bits) as i64) & ix.mask;
    while *ix.slots.add(p as usize) != 0 {
        p = (p + 1) & ix.mask;
    }
    *ix.slots.add(p as usize) = i + 1;
}

/// (Re)builds the index of `h` for its current length with room to grow;
/// false when out of memory (the old index, if any, is kept).
unsafe fn rebuild(h: &mut ArrHeader, es: usize) -> bool {
    let n = h.len.max(0);
    let mut slots = 16i64;
    while slots < n.saturating_mul(2) + 2 {
        slots = slots.saturating_mul(2);
    }
    let mem = calloc(slots as usize, 8) as *mut i64;
    if mem.is_null() {
        return false;
    }
    if h.index.is_null() {
        let ix = super::malloc(std::mem::size_of::<KeyIndex>()) as *mut KeyIndex;
        if ix.is_null() {
            free(mem as *mut c_void);
            return false;
        }
        ix.write(KeyIndex {
            count: 0,
            mask: 0,
            slots: std::ptr::null_mut(),
        });
        h.index = ix;
    }
    let ix = &mut *h.index;
    free(ix.slots as *mut c_void);
    ix.slots = mem;
    ix.mask = slots - 1;
    ix.count = n;
    for i in 0..n {
        place(ix, key_at(h.data, i as usize, es), i);
    }
    true
}

/// [`super::l0rt_find_or_insert`] through a hash index: the position of
/// the key whose low `es` bytes are those of `key`, appended if absent;
/// -1 when out of memory.
///
/// # Safety
/// `h` must be a live header from this runtime with elements of `es`
/// bytes, written by nothing but this function since its index exists.
pub unsafe extern "C" fn l0rt_find_or_insert_hashed(h: *mut ArrHeader, key: i64, es: i64) -> i64 {
    let es_u = es as usize;
    let bits = low(key as u64, es_u);
    let hdr = &mut *h;
    let stale = hdr.index.is_null() || (*hdr.index).count != hdr.len;
    if stale && !rebuild(hdr, es_u) {
        return -1;
    }
    let ix = &mut *hdr.index;
    let mut p = (hash(bits) as i64) & ix.mask;
    loop {
        let s = *ix.slots.add(p as usize);
        if s == 0 {
            break;
        }
        if key_at(hdr.data, (s - 1) as usize, es_u) == bits {
            return s - 1;
        }
        p = (p + 1) & ix.mask;
    }
    if l0rt_arr_grow(h, es) == 0 {
        return -1;
    }
    let hdr = &mut *h;
    let kb = bits.to_le_bytes();
    std::ptr::copy_nonoverlapping(kb.as_ptr(), hdr.data.add(hdr.len as usize * es_u), es_u);
    let i = hdr.len;
    hdr.len += 1;
    // At most half full: past that, rebuild larger (indexing the new key).
    if hdr.len * 2 > (*hdr.index).mask + 1 {
        return if rebuild(hdr, es_u) { i } else { -1 };
    }
    let ix = &mut *hdr.index;
    place(ix, bits, i);
    ix.count = hdr.len;
    i
}
