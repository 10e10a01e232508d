//! The run-time support that compiled code calls (registered into the JIT by
//! address; `runtime/l0rt.c` implements the same ABI for object files).
//!
//! Every buffer comes from the C allocator (`malloc`/`calloc`/`realloc`), so
//! a C caller frees returned vectors with `free` and the JIT host with
//! [`l0rt_free`] (nested vectors with [`l0rt_vec_drop`]). An `arr` is a
//! pointer to a [`ArrHeader`].

use std::cell::Cell;
use std::ffi::c_void;

pub mod gpu;
mod keys;
pub mod ledger;
mod nested;
mod parallel;
pub use keys::l0rt_find_or_insert_hashed;
pub use nested::{l0rt_arr_from_deep, l0rt_arr_new_arrs, l0rt_vec_clone, l0rt_vec_drop, VecDesc};
pub use parallel::{l0rt_forall_threads, l0rt_parallel_for, set_threads, threads, ChunkFn};

/// The heap header of an `arr<T>` (C layout: data at 0, len at 8, cap at
/// 16, and at 24 the hash index of a bucket's keys, null unless
/// [`l0rt_find_or_insert_hashed`] made one; compiled code reads only the
/// first three, and a header it builds on the stack has only those).
#[repr(C)]
pub struct ArrHeader {
    pub data: *mut u8,
    pub len: i64,
    pub cap: i64,
    pub index: *mut keys::KeyIndex,
}

// Every allocation goes through the call's ledger (`ledger`), so that a
// faulting call's leftovers can be freed.
use ledger::{c_calloc as calloc, c_free as free, c_malloc as malloc, c_realloc as realloc};

extern "C" {
    fn exp(x: f64) -> f64;
    fn log(x: f64) -> f64;
    fn pow(x: f64, y: f64) -> f64;
    fn fmod(x: f64, y: f64) -> f64;
    fn fmodf(x: f32, y: f32) -> f32;
    fn sin(x: f64) -> f64;
    fn cos(x: f64) -> f64;
    fn tanh(x: f64) -> f64;
    fn tanhf(x: f32) -> f32;
    fn erf(x: f64) -> f64;
    fn erff(x: f32) -> f32;
    fn round(x: f64) -> f64;
    fn roundf(x: f32) -> f32;
    // Cranelift's calls where the host lacks the instruction (SSE4.1, FMA).
    fn floor(x: f64) -> f64;
    fn floorf(x: f32) -> f32;
    fn ceil(x: f64) -> f64;
    fn ceilf(x: f32) -> f32;
    fn fma(x: f64, y: f64, z: f64) -> f64;
    fn fmaf(x: f32, y: f32, z: f32) -> f32;
    fn expf(x: f32) -> f32;
    fn logf(x: f32) -> f32;
    fn powf(x: f32, y: f32) -> f32;
    fn sinf(x: f32) -> f32;
    fn cosf(x: f32) -> f32;
    // glibc's, for a sine and a cosine of one operand (`crate::sincos`).
    fn sincos(x: f64, s: *mut f64, c: *mut f64);
    fn sincosf(x: f32, s: *mut f32, c: *mut f32);
}

thread_local! {
    static FAULT: Cell<Option<(i64, [i64; 3])>> = const { Cell::new(None) };
}

/// Records fault `id` with its payloads; the generated code then returns
/// status 1 up to the host.
pub extern "C" fn l0rt_fault(id: i64, a: i64, b: i64, c: i64) {
    FAULT.with(|f| f.set(Some((id, [a, b, c]))));
}

/// Records a fault taken from another thread on this one.
pub fn set_fault(f: (i64, [i64; 3])) {
    FAULT.with(|c| c.set(Some(f)));
}

/// Takes the last recorded fault of this thread.
pub fn take_fault() -> Option<(i64, [i64; 3])> {
    FAULT.with(|f| f.take())
}

/// The largest single allocation (bytes) the runtime makes: half the
/// machine's physical memory (at least 1 GiB). Linux overcommits, so a
/// larger `malloc` may succeed and the process be killed when the pages are
/// touched; refusing it turns that into the generated code's located
/// out-of-memory fault, as the interpreter's size limit does.
pub fn max_alloc_bytes() -> usize {
    static MAX: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *MAX.get_or_init(|| {
        extern "C" {
            fn sysconf(name: i32) -> i64;
        }
        // _SC_PHYS_PAGES = 85, _SC_PAGESIZE = 30 on Linux.
        let (pages, size) = unsafe { (sysconf(85), sysconf(30)) };
        let phys = if pages > 0 && size > 0 {
            (pages as u128 * size as u128).min(usize::MAX as u128) as usize
        } else {
            usize::MAX
        };
        (phys / 2).max(1 << 30)
    })
}

/// `malloc(max(bytes, 1))`; null when `bytes < 0`, above
/// [`max_alloc_bytes`], or out of memory.
pub extern "C" fn l0rt_alloc(bytes: i64) -> *mut u8 {
    match usize::try_from(bytes) {
        Ok(n) if n <= max_alloc_bytes() => unsafe { malloc(n.max(1)) as *mut u8 },
        _ => std::ptr::null_mut(),
    }
}

/// Frees a buffer from this runtime (null is ignored).
pub extern "C" fn l0rt_free(p: *mut u8) {
    if !p.is_null() {
        unsafe { free(p as *mut c_void) }
    }
}

/// A fresh copy of `bytes` bytes at `src`; null when out of memory.
///
/// # Safety
/// `src` must be readable for `bytes` bytes.
pub unsafe extern "C" fn l0rt_copy(src: *const u8, bytes: i64) -> *mut u8 {
    let p = l0rt_alloc(bytes);
    if !p.is_null() && bytes > 0 {
        std::ptr::copy_nonoverlapping(src, p, bytes as usize);
    }
    p
}

/// A new `arr` of `n` zeroed elements of `es` bytes; null when out of memory.
pub extern "C" fn l0rt_arr_new(n: i64, es: i64) -> *mut ArrHeader {
    arr_new(n, es, true)
}

/// A new `arr` of `n` elements of `es` bytes that are not initialised (for
/// `arr.alloc {uninit}`, whose every element is stored before it is read);
/// null when out of memory.
pub extern "C" fn l0rt_arr_new_uninit(n: i64, es: i64) -> *mut ArrHeader {
    arr_new(n, es, false)
}

/// The runtime function that allocates for `arr.alloc` op `op` (scalar
/// elements): without zeroing where it is marked `{uninit}`.
pub(crate) fn arr_new_fn(ctx: &ir::Context, op: ir::OpId) -> &'static str {
    if ctx.attr(op, dialects::arr::UNINIT).is_some() {
        "l0rt_arr_new_uninit"
    } else {
        "l0rt_arr_new"
    }
}

fn arr_new(n: i64, es: i64, zeroed: bool) -> *mut ArrHeader {
    let (Ok(n), Ok(es)) = (usize::try_from(n), usize::try_from(es)) else {
        return std::ptr::null_mut();
    };
    if n.checked_mul(es).is_none_or(|b| b > max_alloc_bytes()) {
        return std::ptr::null_mut();
    }
    unsafe {
        let data = if zeroed {
            calloc(n.max(1), es.max(1))
        } else {
            malloc(n.max(1) * es.max(1))
        } as *mut u8;
        if data.is_null() {
            return std::ptr::null_mut();
        }
        let h = malloc(std::mem::size_of::<ArrHeader>()) as *mut ArrHeader;
        if h.is_null() {
            free(data as *mut c_void);
            return h;
        }
        h.write(ArrHeader {
            data,
            len: n as i64,
            cap: n.max(1) as i64,
            index: std::ptr::null_mut(),
        });
        h
    }
}

/// A new `arr` holding a copy of `n` elements of `es` bytes at `src`.
///
/// # Safety
/// `src` must be readable for `n * es` bytes.
pub unsafe extern "C" fn l0rt_arr_from(src: *const u8, n: i64, es: i64) -> *mut ArrHeader {
    // Every element is copied over: no zeroing first.
    let h = l0rt_arr_new_uninit(n, es);
    if !h.is_null() && n > 0 {
        std::ptr::copy_nonoverlapping(src, (*h).data, (n * es) as usize);
    }
    h
}

/// An `arr` header around the `n` elements at `data`, the buffer of an
/// owned vector at its last use (`arr.from_vec` there moves instead of
/// copying: a loop of `vec.insert`s is O(1) per update). The array owns
/// `data` (and, for nested vectors, the element vectors) from now on; null
/// when out of memory.
///
/// # Safety
/// `data` must be a buffer of this runtime's allocator (or null with `n` 0)
/// that nothing else frees.
pub unsafe extern "C" fn l0rt_arr_adopt(data: *mut u8, n: i64) -> *mut ArrHeader {
    let h = malloc(std::mem::size_of::<ArrHeader>()) as *mut ArrHeader;
    if !h.is_null() {
        h.write(ArrHeader {
            data,
            len: n,
            cap: n,
            index: std::ptr::null_mut(),
        });
    }
    h
}

/// Makes room for one more element (doubling the capacity); 1 on success,
/// 0 when out of memory.
///
/// # Safety
/// `h` must be a live header from this runtime.
pub unsafe extern "C" fn l0rt_arr_grow(h: *mut ArrHeader, es: i64) -> i8 {
    let hdr = &mut *h;
    if hdr.len < hdr.cap {
        return 1;
    }
    let cap = (hdr.cap.max(4)).saturating_mul(2);
    let Some(bytes) = cap
        .checked_mul(es)
        .and_then(|b| usize::try_from(b).ok())
        .filter(|&b| b <= max_alloc_bytes())
    else {
        return 0;
    };
    let p = realloc(hdr.data as *mut c_void, bytes) as *mut u8;
    if p.is_null() {
        return 0;
    }
    hdr.data = p;
    hdr.cap = cap;
    1
}

/// Frees an `arr` and its data.
///
/// # Safety
/// `h` must be a live header from this runtime (or null).
pub unsafe extern "C" fn l0rt_arr_free(h: *mut ArrHeader) {
    if !h.is_null() {
        free((*h).data as *mut c_void);
        l0rt_arr_release(h);
    }
}

/// Frees an `arr` header (and its key index) but not its data, which a
/// vector took over (`arr.to_vec` of a last use).
///
/// # Safety
/// `h` must be a live header from this runtime (or null).
pub unsafe extern "C" fn l0rt_arr_release(h: *mut ArrHeader) {
    if !h.is_null() {
        keys::free_index((*h).index);
        free(h as *mut c_void);
    }
}

/// The position of the key whose low `es` bytes are those of `key` in the
/// `arr` `h`, appending it if absent; -1 when out of memory. Keys compare
/// by bit pattern, like the interpreter's run-time values.
///
/// # Safety
/// `h` must be a live header from this runtime with elements of `es` bytes.
pub unsafe extern "C" fn l0rt_find_or_insert(h: *mut ArrHeader, key: i64, es: i64) -> i64 {
    let es_u = es as usize;
    let kb = key.to_le_bytes();
    let hdr = &*h;
    for i in 0..hdr.len as usize {
        let e = std::slice::from_raw_parts(hdr.data.add(i * es_u), es_u);
        if e == &kb[..es_u] {
            return i as i64;
        }
    }
    if l0rt_arr_grow(h, es) == 0 {
        return -1;
    }
    let hdr = &mut *h;
    std::ptr::copy_nonoverlapping(kb.as_ptr(), hdr.data.add(hdr.len as usize * es_u), es_u);
    hdr.len += 1;
    hdr.len - 1
}

/// The C library function computing the one-operand float op `short`
/// (`arith.` name without the dialect) at `f64`, or with `f32` at `f32`:
/// `exp`/`expf`, ... Both native backends call these, like the interpreter
/// (`round` is C's, halves away from zero). `None` for another op.
pub(crate) fn libm_unary(short: &str, f32: bool) -> Option<&'static str> {
    const NAMES: [(&str, &str, &str); 7] = [
        ("exp", "exp", "expf"),
        ("log", "log", "logf"),
        ("sin", "sin", "sinf"),
        ("cos", "cos", "cosf"),
        ("round", "round", "roundf"),
        ("tanh", "tanh", "tanhf"),
        ("erf", "erf", "erff"),
    ];
    NAMES
        .iter()
        .find(|(op, _, _)| *op == short)
        .map(|&(_, d, f)| if f32 { f } else { d })
}

/// Every symbol compiled code may import, with its address.
pub fn symbols() -> Vec<(&'static str, *const u8)> {
    let mut s = vec![
        ("l0rt_fault", l0rt_fault as *const u8),
        ("l0rt_alloc", l0rt_alloc as *const u8),
        ("l0rt_free", l0rt_free as *const u8),
        ("l0rt_copy", l0rt_copy as *const u8),
        ("l0rt_arr_new", l0rt_arr_new as *const u8),
        ("l0rt_arr_new_uninit", l0rt_arr_new_uninit as *const u8),
        ("l0rt_arr_from", l0rt_arr_from as *const u8),
        ("l0rt_arr_adopt", l0rt_arr_adopt as *const u8),
        ("l0rt_arr_grow", l0rt_arr_grow as *const u8),
        ("l0rt_arr_free", l0rt_arr_free as *const u8),
        ("l0rt_find_or_insert", l0rt_find_or_insert as *const u8),
        (
            "l0rt_find_or_insert_hashed",
            l0rt_find_or_insert_hashed as *const u8,
        ),
        ("l0rt_arr_release", l0rt_arr_release as *const u8),
        ("l0rt_vec_drop", l0rt_vec_drop as *const u8),
        ("l0rt_vec_clone", l0rt_vec_clone as *const u8),
        ("l0rt_arr_from_deep", l0rt_arr_from_deep as *const u8),
        ("l0rt_arr_new_arrs", l0rt_arr_new_arrs as *const u8),
        ("l0rt_parallel_for", l0rt_parallel_for as *const u8),
        ("l0rt_forall_threads", l0rt_forall_threads as *const u8),
        ("exp", exp as *const u8),
        ("log", log as *const u8),
        ("pow", pow as *const u8),
        ("fmod", fmod as *const u8),
        ("fmodf", fmodf as *const u8),
        ("sin", sin as *const u8),
        ("cos", cos as *const u8),
        ("expf", expf as *const u8),
        ("logf", logf as *const u8),
        ("powf", powf as *const u8),
        ("sinf", sinf as *const u8),
        ("cosf", cosf as *const u8),
        ("sincos", sincos as *const u8),
        ("sincosf", sincosf as *const u8),
        ("tanh", tanh as *const u8),
        ("tanhf", tanhf as *const u8),
        ("erf", erf as *const u8),
        ("erff", erff as *const u8),
        ("round", round as *const u8),
        ("roundf", roundf as *const u8),
        ("floor", floor as *const u8),
        ("floorf", floorf as *const u8),
        ("ceil", ceil as *const u8),
        ("ceilf", ceilf as *const u8),
        ("fma", fma as *const u8),
        ("fmaf", fmaf as *const u8),
    ];
    s.extend(gpu::symbols());
    s
}

#[cfg(test)]
mod alloc_limit_tests {
    use super::*;

    #[test]
    fn allocations_beyond_the_limit_are_refused_not_overcommitted() {
        let max = max_alloc_bytes() as i64;
        assert!(max >= 1 << 30);
        assert!(l0rt_alloc(max + 1).is_null());
        assert!(l0rt_alloc(-1).is_null());
        assert!(l0rt_arr_new(max / 8 + 1, 8).is_null());
        let p = l0rt_alloc(64);
        assert!(!p.is_null());
        l0rt_free(p);
    }
}
