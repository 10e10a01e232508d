//! The GPU runtime of compiled host code (issue 41): compiled code calls
//! `l0rt_gpu_alloc`, `l0rt_gpu_memcpy`, `l0rt_gpu_dealloc` and
//! `l0rt_gpu_launch` for the `gpu` dialect's host ops (the one translation
//! of them is [`crate::gpu_host`]), and these go to the [`GpuDevice`] the
//! host installed for the call ([`with_device`]): the CUDA driver, or a
//! simulation that runs the kernels in the gpu-level interpreter. Without
//! a device the ops fault with a located error.
//!
//! # Buffers
//! A device buffer is an `arr` header (`ArrHeader`, the host's layout)
//! whose `data` is the device address and whose `len` is its element
//! count, so `arr.len` works on it in host code as on any `arr`. The
//! runtime keeps the set of live device headers of the thread: a header
//! not in it is a host `arr`, which is how `gpu.memcpy` tells its
//! direction, and a header released by `gpu.dealloc` stays allocated (data
//! null, length 0) until the call ends, so a later use is a clean error
//! and never a use after free. When the host's call ends ([`end_call`]),
//! every device buffer still live (a faulting call skips its deallocs) is
//! freed.
//!
//! # Errors
//! A runtime function that fails records a [`GpuError`] and returns its
//! failure value; the compiled code then faults at the op, and the host
//! replaces the fault site's message with the recorded one
//! ([`take_error`]). Messages are the interpreter's, word for word.

pub mod bytes;
pub mod resident;

use std::cell::{Cell, RefCell};

use rustc_hash::FxHashSet;

use super::{ArrHeader, VecDesc};
use ir::{Loc, Type};

/// Threads per block at most (CUDA's limit, as `dialects::gpu::MAX_BLOCK`).
pub const MAX_BLOCK: i64 = 1024;
/// Blocks per grid at most (CUDA's x-dimension limit).
pub const MAX_GRID: i64 = (1 << 31) - 1;

/// A failure of a device operation.
#[derive(Clone, Debug)]
pub struct GpuError {
    /// Where it happened when that is not the op itself (a faulting op
    /// inside a simulated kernel): the message is then complete.
    pub loc: Option<Loc>,
    /// Without `loc`, the message after `'<op>' op `.
    pub message: String,
}

impl From<String> for GpuError {
    fn from(message: String) -> Self {
        GpuError { loc: None, message }
    }
}

/// One argument of a launch, as the device receives it.
#[derive(Copy, Clone, Debug)]
pub enum KernelArg {
    /// A device buffer: its address and element count.
    Buffer { addr: u64, len: i64 },
    /// A scalar: its bits in the low bytes of the word (little-endian, as
    /// compiled code stores it: `i1` a byte 0/1, `f32` its 4 bytes).
    Scalar(u64),
}

/// A device behind compiled host code: byte-addressed memory and the
/// program's kernels, numbered in module order (`kernels`).
pub trait GpuDevice {
    /// The parameter types of kernel `k` (`None` when there is no such
    /// kernel).
    fn kernel_params(&self, k: usize) -> Option<&[Type]>;
    /// The name of kernel `k`.
    fn kernel_name(&self, k: usize) -> &str;
    /// `bytes` zeroed bytes of device memory (`bytes` may be 0); their address.
    fn alloc(&self, bytes: usize) -> Result<u64, String>;
    /// [`GpuDevice::alloc`] for a buffer whose bytes are all written before
    /// anything reads them (`gpu.alloc {uninit}`): a device may skip the
    /// clearing, whose cost is a pass over the memory.
    fn alloc_uninit(&self, bytes: usize) -> Result<u64, String> {
        self.alloc(bytes)
    }
    /// Releases memory from [`GpuDevice::alloc`].
    fn free(&self, addr: u64);
    /// Copies host bytes to the device.
    fn copy_in(&self, dst: u64, src: &[u8]) -> Result<(), String>;
    /// Copies device bytes to the host.
    fn copy_out(&self, dst: &mut [u8], src: u64) -> Result<(), String>;
    /// Copies `bytes` bytes between device buffers.
    fn copy_within(&self, dst: u64, src: u64, bytes: usize) -> Result<(), String>;
    /// Runs kernel `k` on `grid` blocks of `block` threads (both checked
    /// against the limits) and waits for it.
    fn launch(&self, k: usize, grid: u32, block: u32, args: &[KernelArg]) -> Result<(), GpuError>;
}

/// The kernels of a module in the order the host code numbers them: the
/// `func.func`s marked `gpu.kernel`, in module order.
pub fn kernels(ctx: &ir::Context) -> Vec<(ir::OpId, String)> {
    ctx.iter_block(ctx.top)
        .filter(|&f| dialects::gpu::is_kernel(ctx, f))
        .filter_map(|f| Some((f, dialects::func::func_name(ctx, f)?.to_string())))
        .collect()
}

#[derive(Default)]
struct State {
    /// The headers of the live device buffers, by address.
    live: FxHashSet<usize>,
    /// Headers released by `gpu.dealloc`, freed when the call ends.
    released: FxHashSet<usize>,
    /// Live headers whose device memory [`resident`] keeps (not theirs to
    /// free).
    borrowed: FxHashSet<usize>,
}

thread_local! {
    static DEVICE: Cell<Option<&'static dyn GpuDevice>> = const { Cell::new(None) };
    static STATE: RefCell<State> = RefCell::new(State::default());
    static ERROR: RefCell<Option<GpuError>> = const { RefCell::new(None) };
}

/// Runs `f` with `device` behind the runtime functions on this thread,
/// then frees what `f`'s calls left on it ([`end_call`]); the previous
/// device, if any, comes back afterwards, also when `f` panics. Without a
/// device no buffer can be allocated, so only calls under `with_device`
/// have anything to free.
pub fn with_device<R>(device: &dyn GpuDevice, f: impl FnOnce() -> R) -> R {
    struct Restore(Option<&'static dyn GpuDevice>);
    impl Drop for Restore {
        fn drop(&mut self) {
            end_call();
            DEVICE.with(|d| d.set(self.0));
        }
    }
    // SAFETY: the reference is only reachable through `DEVICE` while `f`
    // runs; `Restore` takes it out again before `device` can go away.
    let d: &'static dyn GpuDevice =
        unsafe { std::mem::transmute::<&dyn GpuDevice, &'static dyn GpuDevice>(device) };
    let _restore = Restore(DEVICE.with(|c| c.replace(Some(d))));
    f()
}

/// Takes the error the last failing runtime function recorded.
pub fn take_error() -> Option<GpuError> {
    ERROR.with(|e| e.borrow_mut().take())
}

/// Ends a call of compiled code: frees the device buffers still live and
/// the released headers (a no-op when the call made none).
pub fn end_call() {
    let st = STATE.with(|s| std::mem::take(&mut *s.borrow_mut()));
    if st.live.is_empty() && st.released.is_empty() {
        return;
    }
    let dev = DEVICE.with(|d| d.get());
    for h in st.live {
        let hdr = h as *mut ArrHeader;
        // SAFETY: live headers were made by `l0rt_gpu_alloc` (a Box).
        let b = unsafe { Box::from_raw(hdr) };
        if let (Some(d), false) = (dev, st.borrowed.contains(&h)) {
            d.free(b.data as u64);
        }
    }
    for h in st.released {
        // SAFETY: as above; released headers hold no device memory.
        drop(unsafe { Box::from_raw(h as *mut ArrHeader) });
    }
}

fn fail(e: impl Into<GpuError>) {
    ERROR.with(|c| *c.borrow_mut() = Some(e.into()));
}

fn device() -> Result<&'static dyn GpuDevice, String> {
    DEVICE.with(|d| d.get()).ok_or_else(|| {
        "no GPU device for compiled host code on this thread (run with --target=nvptx, or --device=sim)"
            .to_string()
    })
}

/// Whether `h` is a live device buffer's header.
fn is_live(h: *mut ArrHeader) -> bool {
    STATE.with(|s| s.borrow().live.contains(&(h as usize)))
}

/// Why `h`, used as a device buffer, is not one.
fn not_live(h: *mut ArrHeader, otherwise: impl FnOnce() -> String) -> String {
    if STATE.with(|s| s.borrow().released.contains(&(h as usize))) {
        "use of a released device buffer".to_string()
    } else {
        otherwise()
    }
}

/// `gpu.alloc(n)` of elements of `elem` bytes (`uninit` non-zero:
/// `{uninit}`, not cleared): a device buffer's header, or null after
/// recording the error.
pub extern "C" fn l0rt_gpu_alloc(n: i64, elem: i64, uninit: i64) -> *mut ArrHeader {
    match alloc(n, elem, uninit != 0) {
        Ok(h) => h,
        Err(e) => {
            fail(e);
            std::ptr::null_mut()
        }
    }
}

fn alloc(n: i64, elem: i64, uninit: bool) -> Result<*mut ArrHeader, String> {
    let d = device()?;
    if n < 0 {
        return Err(format!("negative size {n}"));
    }
    if n as u64 > dialects::arr::MAX_ALLOC as u64 {
        return Err(format!("allocation of {n} elements is too large"));
    }
    let bytes = (n as usize)
        .checked_mul(elem.max(1) as usize)
        .ok_or_else(|| format!("cannot allocate {n} elements"))?;
    let addr = if uninit {
        d.alloc_uninit(bytes)?
    } else {
        d.alloc(bytes)?
    };
    let h = Box::into_raw(Box::new(ArrHeader {
        data: addr as *mut u8,
        len: n,
        cap: n,
        index: std::ptr::null_mut(),
    }));
    STATE.with(|s| s.borrow_mut().live.insert(h as usize));
    Ok(h)
}

/// # Safety
/// Called by compiled code with valid headers and buffers of the lengths
/// they state (this holds for all four runtime functions).
///
/// `gpu.memcpy(dst, src)` with `dst` an `arr` header and `src` either an
/// `arr` header (`src_hdr`, non-null) or the data and element count of a
/// `vec` or `mat`; elements of `elem` bytes. 0 on success, 1 after
/// recording the error.
pub unsafe extern "C" fn l0rt_gpu_memcpy(
    dst: *mut ArrHeader,
    src_hdr: *mut ArrHeader,
    src_data: *const u8,
    src_len: i64,
    elem: i64,
    read_only: i64,
) -> i8 {
    match memcpy(
        dst,
        src_hdr,
        src_data,
        src_len,
        elem.max(1) as usize,
        read_only != 0,
    ) {
        Ok(()) => 0,
        Err(e) => {
            fail(e);
            1
        }
    }
}

fn memcpy(
    dst: *mut ArrHeader,
    src_hdr: *mut ArrHeader,
    src_data: *const u8,
    src_len: i64,
    elem: usize,
    read_only: bool,
) -> Result<(), String> {
    // SAFETY: compiled code passes valid headers (host or device).
    let (d_data, d_len) = unsafe { ((*dst).data, (*dst).len) };
    let (s_data, s_len) = if src_hdr.is_null() {
        (src_data, src_len)
    } else {
        // SAFETY: as above.
        unsafe { ((*src_hdr).data as *const u8, (*src_hdr).len) }
    };
    if d_len != s_len {
        return Err(format!(
            "size mismatch: copying {s_len} elements into a buffer of {d_len}"
        ));
    }
    let bytes = d_len.max(0) as usize * elem;
    let d_dev = is_live(dst);
    let s_dev = !src_hdr.is_null() && is_live(src_hdr);
    if bytes == 0 {
        return Ok(());
    }
    match (d_dev, s_dev) {
        (true, false) => {
            let d = device()?;
            // `--resident`: the kept copy of an argument's bytes, lent to
            // a destination that no kernel writes and that is not
            // borrowing already (its own buffer is given back).
            let borrowing = STATE.with(|st| st.borrow().borrowed.contains(&(dst as usize)));
            if read_only && !borrowing {
                if let Some(addr) = resident::copy_of(d, s_data, bytes)? {
                    d.free(d_data as u64);
                    // SAFETY: a live device header.
                    unsafe { (*dst).data = addr as *mut u8 };
                    STATE.with(|st| st.borrow_mut().borrowed.insert(dst as usize));
                    return Ok(());
                }
            }
            // SAFETY: a host buffer of `s_len` elements of `elem` bytes.
            let src = unsafe { std::slice::from_raw_parts(s_data, bytes) };
            d.copy_in(d_data as u64, src)
        }
        (false, true) => {
            // SAFETY: a host buffer of `d_len` elements of `elem` bytes.
            let out = unsafe { std::slice::from_raw_parts_mut(d_data, bytes) };
            device()?.copy_out(out, s_data as u64)
        }
        (true, true) if std::ptr::eq(d_data, s_data) => Ok(()),
        (true, true) => device()?.copy_within(d_data as u64, s_data as u64, bytes),
        // Host to host, as the interpreter allows.
        // SAFETY: two host buffers of `bytes` bytes (maybe the same one).
        (false, false) => unsafe {
            std::ptr::copy(s_data, d_data, bytes);
            Ok(())
        },
    }
}

/// `gpu.pack_rows(vs)`'s first result: a device buffer holding the
/// entries of the `n` rows at `rows` (vector descriptors of elements of
/// `elem` bytes) one row after another; null after recording the error.
///
/// # Safety
/// `rows` holds `n` valid descriptors (it may be null when `n` is 0).
pub unsafe extern "C" fn l0rt_gpu_pack_rows(
    rows: *const VecDesc,
    n: i64,
    elem: i64,
) -> *mut ArrHeader {
    let elem = elem.max(1) as usize;
    let rows = row_slice(rows, n);
    let mut bytes = Vec::new();
    for r in rows {
        let len = r.len.max(0) as usize * elem;
        if len > 0 {
            // SAFETY: a row of `len` bytes (compiled code's own vector).
            bytes.extend_from_slice(std::slice::from_raw_parts(r.data, len));
        }
    }
    to_device(&bytes, elem)
}

/// `gpu.pack_rows(vs)`'s second result: a device buffer of the `n` row
/// ends (`ends[i]`, the number of entries in rows `0..=i`); null after
/// recording the error.
///
/// # Safety
/// As for [`l0rt_gpu_pack_rows`].
pub unsafe extern "C" fn l0rt_gpu_row_ends(rows: *const VecDesc, n: i64) -> *mut ArrHeader {
    let mut total = 0i64;
    let mut bytes = Vec::with_capacity(n.max(0) as usize * 8);
    for r in row_slice(rows, n) {
        total += r.len.max(0);
        bytes.extend_from_slice(&total.to_le_bytes());
    }
    to_device(&bytes, 8)
}

/// `gpu.unpack_rows(data, ends)`: a fresh host `vec<vec<T>>`'s buffer of
/// row descriptors (`arr.len(ends)` of them, each row a fresh buffer of
/// elements of `elem` bytes) copied from device buffers `data` and `ends`;
/// null after recording the error (nothing leaks).
///
/// # Safety
/// `data` and `ends` are headers compiled code holds.
pub unsafe extern "C" fn l0rt_gpu_unpack_rows(
    data: *mut ArrHeader,
    ends: *mut ArrHeader,
    elem: i64,
) -> *mut VecDesc {
    match unpack_rows(data, ends, elem.max(1) as usize) {
        Ok(p) => p,
        Err(e) => {
            fail(e);
            std::ptr::null_mut()
        }
    }
}

/// The number of rows `gpu.unpack_rows` makes of row ends `ends` (the
/// buffer's length).
///
/// # Safety
/// `ends` is a header compiled code holds.
pub unsafe extern "C" fn l0rt_gpu_rows(ends: *mut ArrHeader) -> i64 {
    (*ends).len.max(0)
}

/// The bytes of device (or host) buffer `h` of elements of `elem` bytes.
///
/// # Safety
/// As for [`l0rt_gpu_unpack_rows`].
unsafe fn host_bytes(h: *mut ArrHeader, elem: usize) -> Result<Vec<u8>, String> {
    let (data, len) = ((*h).data, (*h).len.max(0) as usize);
    let mut out = vec![0u8; len * elem];
    if out.is_empty() {
        return Ok(out);
    }
    if is_live(h) {
        device()?.copy_out(&mut out, data as u64)?;
    } else if STATE.with(|s| s.borrow().released.contains(&(h as usize))) {
        return Err("use of a released device buffer".into());
    } else {
        std::ptr::copy_nonoverlapping(data, out.as_mut_ptr(), out.len());
    }
    Ok(out)
}

/// [`l0rt_gpu_unpack_rows`].
///
/// # Safety
/// As for [`l0rt_gpu_unpack_rows`].
unsafe fn unpack_rows(
    data: *mut ArrHeader,
    ends: *mut ArrHeader,
    elem: usize,
) -> Result<*mut VecDesc, String> {
    let bytes = host_bytes(data, elem)?;
    let ends: Vec<i64> = host_bytes(ends, 8)?
        .chunks_exact(8)
        .map(|c| i64::from_le_bytes(c.try_into().expect("8 bytes")))
        .collect();
    let total = (bytes.len() / elem) as i64;
    let mut start = 0i64;
    for &end in &ends {
        if end < start || end > total {
            return Err(format!(
                "row ends out of order: {end} after {start}, with {total} entries"
            ));
        }
        start = end;
    }
    if start != total {
        return Err(format!(
            "the rows end at {start}, not at the {total} entries"
        ));
    }
    let rows = super::l0rt_alloc(16 * ends.len() as i64) as *mut VecDesc;
    if rows.is_null() {
        return Err("out of memory".into());
    }
    let mut start = 0usize;
    for (k, &end) in ends.iter().enumerate() {
        let end = end as usize;
        let n = (end - start) * elem;
        let p = super::l0rt_copy(bytes[start * elem..].as_ptr(), n as i64);
        if p.is_null() {
            super::l0rt_vec_drop(rows as *mut u8, k as i64, 1);
            return Err("out of memory".into());
        }
        rows.add(k).write_unaligned(VecDesc {
            data: p,
            len: (end - start) as i64,
        });
        start = end;
    }
    Ok(rows)
}

/// The `n` descriptors at `rows` (none when `n <= 0`).
///
/// # Safety
/// As for [`l0rt_gpu_pack_rows`].
unsafe fn row_slice<'a>(rows: *const VecDesc, n: i64) -> &'a [VecDesc] {
    if n <= 0 || rows.is_null() {
        &[]
    } else {
        std::slice::from_raw_parts(rows, n as usize)
    }
}

/// A fresh device buffer holding `bytes` (elements of `elem` bytes), or null
/// after recording the error.
fn to_device(bytes: &[u8], elem: usize) -> *mut ArrHeader {
    let n = (bytes.len() / elem) as i64;
    let put = || -> Result<*mut ArrHeader, String> {
        let h = alloc(n, elem as i64, true)?;
        if !bytes.is_empty() {
            // SAFETY: a live device header of `n` elements.
            let data = unsafe { (*h).data };
            device()?.copy_in(data as u64, bytes)?;
        }
        Ok(h)
    };
    match put() {
        Ok(h) => h,
        Err(e) => {
            fail(e);
            std::ptr::null_mut()
        }
    }
}

/// `gpu.dealloc(a)`: 0, or 1 after recording the error.
///
/// # Safety
/// `h` is a header compiled code holds (as for [`l0rt_gpu_memcpy`]).
pub unsafe extern "C" fn l0rt_gpu_dealloc(h: *mut ArrHeader) -> i8 {
    if !STATE.with(|s| s.borrow_mut().live.remove(&(h as usize))) {
        fail(not_live(h, || "not a device buffer".to_string()));
        return 1;
    }
    // SAFETY: a live device header (made by `l0rt_gpu_alloc`).
    let addr = unsafe { std::mem::replace(&mut (*h).data, std::ptr::null_mut()) };
    unsafe {
        (*h).len = 0;
        (*h).cap = 0;
    }
    let borrowed = STATE.with(|s| {
        let mut s = s.borrow_mut();
        s.released.insert(h as usize);
        s.borrowed.remove(&(h as usize))
    });
    if let (Ok(d), false) = (device(), borrowed) {
        d.free(addr as u64);
    }
    0
}

/// `gpu.launch_func` of kernel `k` (module order) on `grid` blocks of
/// `block` threads, with `n` arguments in 8-byte slots at `args` (an
/// `arr` as its header, a scalar in the slot's low bytes). 0, or 1 after
/// recording the error.
///
/// # Safety
/// `args` holds `n` slots, each `arr` one a header compiled code holds.
pub unsafe extern "C" fn l0rt_gpu_launch(
    k: i64,
    grid: i64,
    block: i64,
    args: *const u64,
    n: i64,
) -> i8 {
    match launch(k, grid, block, args, n) {
        Ok(()) => 0,
        Err(e) => {
            fail(e);
            1
        }
    }
}

fn launch(k: i64, grid: i64, block: i64, args: *const u64, n: i64) -> Result<(), GpuError> {
    for v in [grid, block] {
        if v < 0 {
            return Err(format!("negative size {v}").into());
        }
    }
    if !(1..=MAX_BLOCK).contains(&block) {
        return Err(format!("block size {block} is not between 1 and {MAX_BLOCK}").into());
    }
    if !(1..=MAX_GRID).contains(&grid) {
        return Err(format!("grid size {grid} is not between 1 and {MAX_GRID}").into());
    }
    let d = device()?;
    let params = d
        .kernel_params(k as usize)
        .ok_or_else(|| format!("no kernel number {k}"))?;
    if params.len() != n as usize {
        return Err("argument count does not match the kernel"
            .to_string()
            .into());
    }
    // SAFETY: compiled code passes `n` slots.
    let words = unsafe { std::slice::from_raw_parts(args, n as usize) };
    let mut kargs = Vec::with_capacity(words.len());
    for (t, &w) in params.iter().zip(words) {
        kargs.push(match t {
            Type::Arr(_) => {
                let h = w as *mut ArrHeader;
                if !is_live(h) {
                    return Err(not_live(h, || {
                        format!(
                            "an argument of kernel '@{}' is not a device buffer",
                            d.kernel_name(k as usize)
                        )
                    })
                    .into());
                }
                // SAFETY: a live device header.
                let (addr, len) = unsafe { ((*h).data as u64, (*h).len) };
                KernelArg::Buffer { addr, len }
            }
            _ => KernelArg::Scalar(w),
        });
    }
    d.launch(k as usize, grid as u32, block as u32, &kargs)
}

/// The runtime functions by name, for the JIT's symbol table.
pub fn symbols() -> [(&'static str, *const u8); 8] {
    [
        ("l0rt_gpu_unpack_rows", l0rt_gpu_unpack_rows as *const u8),
        ("l0rt_gpu_rows", l0rt_gpu_rows as *const u8),
        ("l0rt_gpu_pack_rows", l0rt_gpu_pack_rows as *const u8),
        ("l0rt_gpu_row_ends", l0rt_gpu_row_ends as *const u8),
        ("l0rt_gpu_alloc", l0rt_gpu_alloc as *const u8),
        ("l0rt_gpu_memcpy", l0rt_gpu_memcpy as *const u8),
        ("l0rt_gpu_dealloc", l0rt_gpu_dealloc as *const u8),
        ("l0rt_gpu_launch", l0rt_gpu_launch as *const u8),
    ]
}

/// Reads the scalar of type `t` from a launch slot (its low bytes).
pub fn scalar_of(t: &Type, w: u64) -> ir::interp::RtValue {
    bytes::decode_one(&w.to_le_bytes()[..bytes::elem_size(t)], t)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rustc_hash::FxHashMap;
    use std::cell::RefCell;

    /// A device of byte vectors that records what it was asked to do.
    #[derive(Default)]
    struct Fake {
        mem: RefCell<FxHashMap<u64, Vec<u8>>>,
        next: Cell<u64>,
        freed: Cell<usize>,
        launched: RefCell<Vec<(usize, u32, u32, usize)>>,
        params: Vec<Type>,
    }

    impl GpuDevice for Fake {
        fn kernel_params(&self, k: usize) -> Option<&[Type]> {
            (k == 0).then_some(&self.params[..])
        }
        fn kernel_name(&self, _: usize) -> &str {
            "k"
        }
        fn alloc(&self, bytes: usize) -> Result<u64, String> {
            let a = self.next.get() + 4096;
            self.next.set(a);
            self.mem.borrow_mut().insert(a, vec![0; bytes]);
            Ok(a)
        }
        fn free(&self, addr: u64) {
            assert!(self.mem.borrow_mut().remove(&addr).is_some(), "double free");
            self.freed.set(self.freed.get() + 1);
        }
        fn copy_in(&self, dst: u64, src: &[u8]) -> Result<(), String> {
            self.mem.borrow_mut().get_mut(&dst).unwrap()[..src.len()].copy_from_slice(src);
            Ok(())
        }
        fn copy_out(&self, dst: &mut [u8], src: u64) -> Result<(), String> {
            dst.copy_from_slice(&self.mem.borrow()[&src][..dst.len()]);
            Ok(())
        }
        fn copy_within(&self, dst: u64, src: u64, bytes: usize) -> Result<(), String> {
            let s = self.mem.borrow()[&src][..bytes].to_vec();
            self.copy_in(dst, &s)
        }
        fn launch(&self, k: usize, g: u32, b: u32, args: &[KernelArg]) -> Result<(), GpuError> {
            self.launched.borrow_mut().push((k, g, b, args.len()));
            Ok(())
        }
    }

    fn host(xs: &[f64]) -> ArrHeader {
        let data = Box::leak(xs.to_vec().into_boxed_slice());
        ArrHeader {
            data: data.as_mut_ptr() as *mut u8,
            len: xs.len() as i64,
            cap: xs.len() as i64,
            index: std::ptr::null_mut(),
        }
    }

    fn values(h: &ArrHeader) -> Vec<f64> {
        // SAFETY: a host header of `len` f64s.
        unsafe { std::slice::from_raw_parts(h.data as *const f64, h.len as usize).to_vec() }
    }

    #[test]
    fn round_trip_and_everything_freed_at_the_end() {
        let dev = Fake {
            params: vec![Type::arr(Type::F64), Type::I64],
            ..Fake::default()
        };
        let mut src = host(&[1.0, 2.5, -3.0]);
        let mut dst = host(&[0.0; 3]);
        with_device(&dev, || unsafe {
            let d = l0rt_gpu_alloc(3, 8, 0);
            assert!(!d.is_null());
            let e = l0rt_gpu_alloc(3, 8, 0);
            assert_eq!(l0rt_gpu_memcpy(d, &mut src, std::ptr::null(), 0, 8, 0), 0);
            assert_eq!(l0rt_gpu_memcpy(e, d, std::ptr::null(), 0, 8, 0), 0);
            let slots = [e as u64, 7u64];
            assert_eq!(l0rt_gpu_launch(0, 2, 32, slots.as_ptr(), 2), 0);
            assert_eq!(l0rt_gpu_memcpy(&mut dst, e, std::ptr::null(), 0, 8, 0), 0);
            assert_eq!(l0rt_gpu_dealloc(d), 0);
            // `e` is left for the end of the call.
        });
        assert_eq!(values(&dst), vec![1.0, 2.5, -3.0]);
        assert_eq!(*dev.launched.borrow(), vec![(0, 2, 32, 2)]);
        assert_eq!(
            dev.freed.get(),
            2,
            "the dealloc'd buffer and the leftover one"
        );
        assert!(dev.mem.borrow().is_empty());
    }

    #[test]
    fn rows_packed_and_unpacked() {
        let dev = Fake::default();
        let rows: Vec<Vec<f64>> = vec![vec![1.0, 2.0], vec![], vec![3.5]];
        let descs: Vec<VecDesc> = rows
            .iter()
            .map(|r| VecDesc {
                data: r.as_ptr() as *mut u8,
                len: r.len() as i64,
            })
            .collect();
        with_device(&dev, || unsafe {
            let d = l0rt_gpu_pack_rows(descs.as_ptr(), 3, 8);
            let e = l0rt_gpu_row_ends(descs.as_ptr(), 3);
            assert!(!d.is_null() && !e.is_null());
            assert_eq!(((*d).len, (*e).len), (3, 3));
            let mut ends = [0u8; 24];
            dev.copy_out(&mut ends, (*e).data as u64).unwrap();
            let ends: Vec<i64> = ends
                .chunks(8)
                .map(|c| i64::from_le_bytes(c.try_into().unwrap()))
                .collect();
            assert_eq!(ends, vec![2, 2, 3]);
            let back = l0rt_gpu_unpack_rows(d, e, 8);
            assert!(!back.is_null());
            assert_eq!(l0rt_gpu_rows(e), 3);
            let got: Vec<Vec<f64>> = (0..3)
                .map(|k| {
                    let r = back.add(k).read_unaligned();
                    std::slice::from_raw_parts(r.data as *const f64, r.len as usize).to_vec()
                })
                .collect();
            assert_eq!(got, rows);
            crate::runtime::l0rt_vec_drop(back as *mut u8, 3, 1);
            // Ends past the entries are a fault with the interpreter's words.
            let mut bad = host(&[0.0]);
            (*bad.data.cast::<i64>()) = 4;
            assert!(l0rt_gpu_unpack_rows(d, &mut bad, 8).is_null());
            assert_eq!(
                take_error().unwrap().message,
                "row ends out of order: 4 after 0, with 3 entries"
            );
        });
        assert!(dev.mem.borrow().is_empty(), "both buffers freed at the end");
    }

    #[test]
    fn faults_record_the_interpreters_messages() {
        let dev = Fake {
            params: vec![Type::arr(Type::F64)],
            ..Fake::default()
        };
        let mut short = host(&[1.0]);
        with_device(&dev, || unsafe {
            assert!(l0rt_gpu_alloc(-1, 8, 0).is_null());
            assert_eq!(take_error().unwrap().message, "negative size -1");
            let d = l0rt_gpu_alloc(2, 8, 0);
            assert_eq!(l0rt_gpu_memcpy(d, &mut short, std::ptr::null(), 0, 8, 0), 1);
            assert_eq!(
                take_error().unwrap().message,
                "size mismatch: copying 1 elements into a buffer of 2"
            );
            // A host buffer is no kernel argument.
            let slots = [&mut short as *mut ArrHeader as u64];
            assert_eq!(l0rt_gpu_launch(0, 1, 32, slots.as_ptr(), 1), 1);
            assert_eq!(
                take_error().unwrap().message,
                "an argument of kernel '@k' is not a device buffer"
            );
            assert_eq!(l0rt_gpu_launch(0, 1, 2000, slots.as_ptr(), 1), 1);
            assert_eq!(
                take_error().unwrap().message,
                "block size 2000 is not between 1 and 1024"
            );
            // A released buffer: empty, no longer a kernel argument, not
            // freed twice.
            assert_eq!(l0rt_gpu_dealloc(d), 0);
            assert_eq!((*d).len, 0);
            let slots = [d as u64];
            assert_eq!(l0rt_gpu_launch(0, 1, 32, slots.as_ptr(), 1), 1);
            assert_eq!(
                take_error().unwrap().message,
                "use of a released device buffer"
            );
            assert_eq!(l0rt_gpu_dealloc(d), 1);
        });
        assert_eq!(dev.freed.get(), 1);
        assert!(dev.launched.borrow().is_empty());
    }

    #[test]
    fn no_device_is_an_error_not_a_crash() {
        assert!(l0rt_gpu_alloc(1, 8, 0).is_null());
        assert!(take_error().unwrap().message.contains("no GPU device"));
    }
}
