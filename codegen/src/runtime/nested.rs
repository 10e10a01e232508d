//! Run-time support for nested containers (`vec<vec<T>>`, `arr<vec<T>>`,
//! `arr<arr<T>>`; [`crate::abi`]): deep copies and frees of buffers whose
//! elements are vector descriptors, and arrays of fresh arrays.
//!
//! `depth` is [`crate::abi::own_depth`]: the number of levels of owned
//! element vectors below a buffer; `es` is the size of the innermost
//! elements. Element vectors may have a null `data` when their `len` is 0
//! (zero-initialised `arr<vec<T>>` elements).

use super::{l0rt_alloc, l0rt_arr_free, l0rt_arr_new, l0rt_copy, l0rt_free, ArrHeader};

/// One element of a `vec<vec<T>>` or `arr<vec<T>>` (C layout, 16 bytes).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct VecDesc {
    pub data: *mut u8,
    pub len: i64,
}

/// Frees the element vectors of the `n` elements at `data` (`depth` levels
/// deep), then `data` itself (null is ignored).
///
/// # Safety
/// `data` must be a buffer from this runtime holding `n` elements that own
/// `depth` levels of vectors (or null).
pub unsafe extern "C" fn l0rt_vec_drop(data: *mut u8, n: i64, depth: i64) {
    if depth > 0 && !data.is_null() {
        let d = data as *const VecDesc;
        for k in 0..n.max(0) as usize {
            let e = d.add(k).read_unaligned();
            l0rt_vec_drop(e.data, e.len, depth - 1);
        }
    }
    l0rt_free(data);
}

/// A deep copy of the `n` elements at `src` (`depth` levels of vectors above
/// elements of `es` bytes); null when out of memory (nothing leaks).
///
/// # Safety
/// `src` must hold `n` such elements (it may be null when `n` is 0).
pub unsafe extern "C" fn l0rt_vec_clone(src: *const u8, n: i64, es: i64, depth: i64) -> *mut u8 {
    if depth <= 0 {
        return match n.checked_mul(es) {
            Some(bytes) => l0rt_copy(src, bytes),
            None => std::ptr::null_mut(),
        };
    }
    let Some(bytes) = n.checked_mul(16) else {
        return std::ptr::null_mut();
    };
    let p = l0rt_alloc(bytes) as *mut VecDesc;
    if p.is_null() {
        return std::ptr::null_mut();
    }
    let s = src as *const VecDesc;
    for k in 0..n.max(0) as usize {
        let e = s.add(k).read_unaligned();
        let c = l0rt_vec_clone(e.data, e.len, es, depth - 1);
        if c.is_null() {
            l0rt_vec_drop(p as *mut u8, k as i64, depth);
            return std::ptr::null_mut();
        }
        p.add(k).write_unaligned(VecDesc {
            data: c,
            len: e.len,
        });
    }
    p as *mut u8
}

/// A new `arr` holding a deep copy of the `n` elements at `src` (see
/// [`l0rt_vec_clone`]); null when out of memory.
///
/// # Safety
/// As for [`l0rt_vec_clone`].
pub unsafe extern "C" fn l0rt_arr_from_deep(
    src: *const u8,
    n: i64,
    es: i64,
    depth: i64,
) -> *mut ArrHeader {
    let data = l0rt_vec_clone(src, n, es, depth);
    if data.is_null() {
        return std::ptr::null_mut();
    }
    let h = l0rt_alloc(std::mem::size_of::<ArrHeader>() as i64) as *mut ArrHeader;
    if h.is_null() {
        l0rt_vec_drop(data, n, depth);
        return h;
    }
    // The copy holds exactly `n` elements (`cap` 0 when empty: the first
    // push reallocates).
    h.write(ArrHeader {
        data,
        len: n,
        cap: n,
        index: std::ptr::null_mut(),
    });
    h
}

/// A new `arr<arr<T>>` of `n` fresh empty arrays with elements of `es`
/// bytes (the interpreter's zero value of an `arr` element); null when out
/// of memory (nothing leaks).
pub extern "C" fn l0rt_arr_new_arrs(n: i64, es: i64) -> *mut ArrHeader {
    let h = l0rt_arr_new(n, 8);
    if h.is_null() {
        return h;
    }
    unsafe {
        let slots = (*h).data as *mut *mut ArrHeader;
        for k in 0..n.max(0) as usize {
            let a = l0rt_arr_new(0, es);
            if a.is_null() {
                for j in 0..k {
                    l0rt_arr_free(slots.add(j).read());
                }
                l0rt_arr_free(h);
                return std::ptr::null_mut();
            }
            slots.add(k).write(a);
        }
    }
    h
}
