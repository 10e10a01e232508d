//! Host-side conversion between [`RtValue`]s and the flattened machine
//! representation ([`crate::abi`]): arguments become 8-byte words (scalars
//! in the low bytes) plus element buffers (a nested vector argument is a
//! buffer of `{data, len}` descriptors pointing into one buffer per inner
//! vector); results are read from the out-struct and returned buffers
//! (inner ones included) are freed.

use std::any::Any;
use std::rc::Rc;

use ir::interp::{MatValue, RtValue};
use ir::Type;

use crate::abi::{self, Layout};
use crate::runtime;

/// The word of scalar `v` of type `t`.
fn scalar_word(v: &RtValue, t: &Type) -> Option<u64> {
    Some(match (t, v) {
        (Type::I1, RtValue::Bool(b)) => *b as u64,
        (Type::I0, RtValue::Int(_)) => 0,
        (
            Type::I8 | Type::I16 | Type::I32 | Type::I64 | Type::Index | Type::Int(_),
            RtValue::Int(i),
        ) => *i as u64,
        (Type::F16 | Type::BF16 | Type::F32, RtValue::F32(x)) => x.to_bits() as u64,
        (Type::F64, RtValue::F64(x)) => x.to_bits(),
        _ => return None,
    })
}

/// Dense element bytes of `items` of scalar type `t`, in an 8-byte aligned buffer.
fn elems(items: &[RtValue], t: &Type) -> Option<Vec<u64>> {
    let es = abi::scalar(t)?.bytes() as usize;
    let mut buf = vec![0u64; (items.len() * es).div_ceil(8).max(1)];
    let bytes =
        unsafe { std::slice::from_raw_parts_mut(buf.as_mut_ptr() as *mut u8, items.len() * es) };
    for (k, x) in items.iter().enumerate() {
        let w = scalar_word(x, t)?.to_le_bytes();
        bytes[k * es..(k + 1) * es].copy_from_slice(&w[..es]);
    }
    Some(buf)
}

/// An argument of a compiled function: a run-time value, which is
/// converted element by element, or an array whose bytes already have the
/// ABI's layout, which is passed as it is.
pub enum Arg {
    Value(RtValue),
    Raw(RawArray),
}

/// A vector (`rows == None`) or row-major matrix whose elements already lie
/// in memory as the ABI lays them out (dense, little-endian, the size of
/// [`abi::scalar`] of `elem`, `i1` as a byte 0 or 1), such as the data of
/// a mapped `.npy` file: compiled code reads it in place, with no copy and
/// no conversion. Compiled code never writes or frees an argument.
pub struct RawArray {
    /// The element type; it must equal the parameter's.
    pub elem: Type,
    /// The first element, aligned to the element's size (may dangle when
    /// `len` is 0).
    pub data: *const u8,
    /// Number of elements (`rows * cols` for a matrix).
    pub len: usize,
    /// `Some((rows, cols))` for a matrix.
    pub shape: Option<(usize, usize)>,
    /// Keeps the memory behind `data` alive while a prepared call holds it.
    pub keep: Rc<dyn Any>,
}

/// Appends the words of the raw array `a` for a parameter of type `t`,
/// keeping its memory alive in `keep`.
pub fn marshal_raw(
    a: &RawArray,
    t: &Type,
    words: &mut Vec<u64>,
    keep: &mut Vec<Rc<dyn Any>>,
) -> Result<(), String> {
    let bytes = abi::scalar(&a.elem).map(|c| c.bytes() as usize);
    let fits = bytes.is_some_and(|b| (a.data as usize).is_multiple_of(b) || a.len == 0)
        && !matches!(a.elem, Type::F16 | Type::BF16);
    match (t, a.shape) {
        (Type::Vec(e), None) if **e == a.elem && fits => {
            words.extend([a.data as u64, a.len as u64]);
        }
        (Type::Mat(e), Some((r, c))) if **e == a.elem && fits && r * c == a.len => {
            words.extend([a.data as u64, r as u64, c as u64]);
        }
        _ => {
            let shape = match a.shape {
                None => format!("vec<{}>", a.elem),
                Some(_) => format!("mat<{}>", a.elem),
            };
            return Err(format!(
                "expected a value of type '{t}', got a '{shape}' array"
            ));
        }
    }
    keep.push(a.keep.clone());
    Ok(())
}

/// Appends the words of argument `v` of type `t` to `words`, keeping element
/// buffers alive in `bufs`. `Err` names what does not match.
pub fn marshal(
    v: &RtValue,
    t: &Type,
    words: &mut Vec<u64>,
    bufs: &mut Vec<Vec<u64>>,
) -> Result<(), String> {
    let bad = || format!("expected a value of type '{t}', got {v}");
    match (t, v) {
        (Type::Vec(e), RtValue::Vec(items)) if matches!(**e, Type::Vec(_)) => {
            // Descriptors {data, len} of the inner vectors, two words each.
            let mut desc = Vec::with_capacity(2 * items.len().max(1));
            for x in items.iter() {
                marshal(x, e, &mut desc, bufs)?;
            }
            desc.resize(desc.len().max(1), 0);
            words.extend([desc.as_ptr() as u64, items.len() as u64]);
            bufs.push(desc);
        }
        (Type::Vec(e), RtValue::Vec(items)) => {
            let b = elems(items, e).ok_or_else(bad)?;
            words.extend([b.as_ptr() as u64, items.len() as u64]);
            bufs.push(b);
        }
        (Type::Mat(e), RtValue::Mat(m)) => {
            let b = elems(&m.data, e).ok_or_else(bad)?;
            words.extend([b.as_ptr() as u64, m.rows as u64, m.cols as u64]);
            bufs.push(b);
        }
        (Type::Arr(_), _) => {
            return Err(format!(
                "'{t}' arguments are passed only to prepared calls ([`prepare_arr`])"
            ))
        }
        _ => words.push(scalar_word(v, t).ok_or_else(bad)?),
    }
    Ok(())
}

/// An `arr<T>` argument of scalars (a lowered memref's allocation, issue
/// 45): compiled code may write and free an array, so each call gets a
/// fresh header holding a copy of these bytes ([`ArrArg::make`]), and the
/// argument's word is patched with it.
pub struct ArrArg {
    /// The argument's word in the call's word list.
    pub word: usize,
    /// The elements, dense in the ABI's layout.
    bytes: Vec<u64>,
    /// Number of elements and bytes per element.
    n: i64,
    es: i64,
}

impl ArrArg {
    /// A fresh runtime array holding the argument's elements (recorded in
    /// the call's ledger when made inside one); null when out of memory.
    pub fn make(&self) -> *mut runtime::ArrHeader {
        // SAFETY: `bytes` holds `n * es` bytes.
        unsafe { runtime::l0rt_arr_from(self.bytes.as_ptr() as *const u8, self.n, self.es) }
    }
}

/// Prepares the `arr<T>` argument `v` (elements of scalar type `T`) as
/// word number `word`, which is appended as a placeholder. Elements the
/// interpreter holds as undefined (never stored) are passed as zero bytes.
pub fn prepare_arr(
    v: &RtValue,
    t: &Type,
    word: usize,
    words: &mut Vec<u64>,
) -> Result<ArrArg, String> {
    let (Type::Arr(e), RtValue::Arr(items)) = (t, v) else {
        return Err(format!("expected a value of type '{t}', got {v}"));
    };
    let Some(es) = abi::scalar(e).map(|c| c.bytes() as i64) else {
        return Err(format!(
            "'{t}' arguments are not supported by the native backends (only arrays of scalars)"
        ));
    };
    let zero = dialects::arr::zero_of(e);
    let items: Vec<RtValue> = items
        .borrow()
        .iter()
        .map(|x| match x {
            RtValue::Opaque(_) => zero.clone(),
            x => x.clone(),
        })
        .collect();
    let bytes =
        elems(&items, e).ok_or_else(|| format!("expected a value of type '{t}', got {v}"))?;
    words.push(0);
    Ok(ArrArg {
        word,
        bytes,
        n: items.len() as i64,
        es,
    })
}

/// The `arr` headers a call's results point to, resolved to run-time
/// arrays: results naming one header share one array (a memref result that
/// is a view of another, or of an argument), read once after the call.
pub struct ArrResults<'a> {
    /// Whether a header is still allocated after the call (one the call
    /// freed reads as an empty array: the interpreter's freed memref).
    pub live: &'a dyn Fn(*mut u8) -> bool,
    /// Headers read so far.
    seen: Vec<(usize, RtValue)>,
}

impl<'a> ArrResults<'a> {
    pub fn new(live: &'a dyn Fn(*mut u8) -> bool) -> ArrResults<'a> {
        ArrResults {
            live,
            seen: Vec::new(),
        }
    }

    /// The headers the results named.
    pub fn headers(&self) -> impl Iterator<Item = *mut runtime::ArrHeader> + '_ {
        self.seen.iter().map(|(h, _)| *h as *mut runtime::ArrHeader)
    }

    /// The array behind header `h` of elements `e`.
    ///
    /// # Safety
    /// `h` must be a header from this runtime that is live where `live`
    /// says so.
    unsafe fn read(&mut self, h: *mut runtime::ArrHeader, e: &Type) -> RtValue {
        if let Some((_, v)) = self.seen.iter().find(|(p, _)| *p == h as usize) {
            return v.clone();
        }
        let items = if !h.is_null() && (self.live)(h as *mut u8) {
            let es = abi::scalar(e).map_or(8, |c| c.bytes() as usize);
            let (data, len) = ((*h).data, (*h).len.max(0) as usize);
            (0..len).map(|k| read_scalar(data.add(k * es), e)).collect()
        } else {
            Vec::new()
        };
        let v = RtValue::Arr(Rc::new(std::cell::RefCell::new(items)));
        self.seen.push((h as usize, v.clone()));
        v
    }
}

/// Reads scalar `t` at `p`.
///
/// # Safety
/// `p` must be readable for the scalar's size.
unsafe fn read_scalar(p: *const u8, t: &Type) -> RtValue {
    match t {
        Type::I0 => RtValue::Int(0),
        Type::I1 => RtValue::Bool(p.read() != 0),
        Type::I8 => RtValue::Int((p as *const i8).read() as i64),
        Type::I16 => RtValue::Int((p as *const i16).read_unaligned() as i64),
        // Sign-extended from the width in its container already.
        Type::Int(w) => RtValue::Int(match abi::container(*w as u32).bytes() {
            1 => (p as *const i8).read() as i64,
            2 => (p as *const i16).read_unaligned() as i64,
            4 => (p as *const i32).read_unaligned() as i64,
            _ => (p as *const i64).read_unaligned(),
        }),
        Type::I32 => RtValue::Int((p as *const i32).read_unaligned() as i64),
        Type::F16 | Type::BF16 | Type::F32 => RtValue::F32((p as *const f32).read_unaligned()),
        Type::F64 => RtValue::F64((p as *const f64).read_unaligned()),
        _ => RtValue::Int((p as *const i64).read_unaligned()),
    }
}

/// Reads `n` elements of `t` at `p`, then frees `p`; element vectors (16-byte
/// descriptors, [`runtime::VecDesc`]) are read and freed recursively.
unsafe fn take_elems(p: *mut u8, n: usize, t: &Type) -> Vec<RtValue> {
    let out = match t {
        Type::Vec(e) => (0..n)
            .map(|k| {
                let d = (p as *const runtime::VecDesc).add(k).read_unaligned();
                RtValue::Vec(Rc::new(take_elems(d.data, d.len as usize, e)))
            })
            .collect(),
        _ => {
            let es = abi::scalar(t).map(|c| c.bytes() as usize).unwrap_or(8);
            (0..n).map(|k| read_scalar(p.add(k * es), t)).collect()
        }
    };
    runtime::l0rt_free(p);
    out
}

/// A vector (`shape == None`) or row-major matrix result of compiled code,
/// as the buffer it returned: `len` elements of scalar type `elem` in the
/// ABI's layout (see [`RawArray`]). It owns the buffer and frees it when
/// dropped; [`OwnedArray::bytes`] hands it to a writer with no conversion.
pub struct OwnedArray {
    pub elem: Type,
    data: *mut u8,
    pub len: usize,
    pub shape: Option<(usize, usize)>,
}

impl OwnedArray {
    /// The elements' bytes (`len` times the element's ABI size).
    pub fn bytes(&self) -> &[u8] {
        let es = abi::scalar(&self.elem).map_or(8, |c| c.bytes() as usize);
        if self.len == 0 {
            return &[];
        }
        // SAFETY: the buffer holds `len` elements and lives as long as self.
        unsafe { std::slice::from_raw_parts(self.data, self.len * es) }
    }

    /// The array as a run-time value (decoded element by element; the
    /// buffer is freed by [`take_elems`], not by `Drop`).
    pub fn into_value(self) -> RtValue {
        let a = std::mem::ManuallyDrop::new(self);
        // SAFETY: `len` elements of `elem` lie at `data`, owned by `a`.
        let data = unsafe { take_elems(a.data, a.len, &a.elem) };
        match a.shape {
            Some((rows, cols)) => RtValue::Mat(Rc::new(MatValue { rows, cols, data })),
            None => RtValue::Vec(Rc::new(data)),
        }
    }
}

impl Drop for OwnedArray {
    fn drop(&mut self) {
        // Compiled code returned this buffer to its caller, who owns it.
        runtime::l0rt_free(self.data)
    }
}

/// A result of compiled code: a run-time value, or (where asked for) a
/// vector or matrix of scalars kept as the buffer it came in.
pub enum Out {
    Value(RtValue),
    Raw(OwnedArray),
}

impl Out {
    /// The result as a run-time value.
    pub fn into_value(self) -> RtValue {
        match self {
            Out::Value(v) => v,
            Out::Raw(a) => a.into_value(),
        }
    }
}

/// Converts the results in the out-struct `out` (laid out as `layout`) to
/// run-time values, freeing returned buffers (the caller owns them); with
/// `raw`, vectors and matrices of scalars stay their buffers
/// ([`Out::Raw`]).
///
/// `arr<T>` results (of scalars) are resolved through `arrs`, which the
/// caller frees afterwards.
///
/// # Safety
/// `out` must hold results written by a successful call.
pub unsafe fn unmarshal_out(
    out: *const u8,
    layout: &Layout,
    types: &[Type],
    raw: bool,
    arrs: &mut ArrResults<'_>,
) -> Vec<Out> {
    let mut k = 0;
    let mut res = Vec::with_capacity(types.len());
    let field = |k: usize| out.add(layout.offsets[k] as usize);
    for t in types {
        if let (true, Type::Vec(e) | Type::Mat(e)) = (raw, t) {
            if abi::scalar(e).is_some() {
                let p = (field(k) as *const *mut u8).read_unaligned();
                let a = (field(k + 1) as *const i64).read_unaligned() as usize;
                let (len, shape, words) = match t {
                    Type::Mat(_) => {
                        let c = (field(k + 2) as *const i64).read_unaligned() as usize;
                        (a * c, Some((a, c)), 3)
                    }
                    _ => (a, None, 2),
                };
                res.push(Out::Raw(OwnedArray {
                    elem: (**e).clone(),
                    data: p,
                    len,
                    shape,
                }));
                k += words;
                continue;
            }
        }
        res.push(Out::Value(match t {
            Type::Vec(e) => {
                let p = (field(k) as *const *mut u8).read_unaligned();
                let n = (field(k + 1) as *const i64).read_unaligned() as usize;
                k += 2;
                RtValue::Vec(Rc::new(take_elems(p, n, e)))
            }
            Type::Arr(e) => {
                let h = (field(k) as *const *mut runtime::ArrHeader).read_unaligned();
                k += 1;
                arrs.read(h, e)
            }
            Type::Mat(e) => {
                let p = (field(k) as *const *mut u8).read_unaligned();
                let rows = (field(k + 1) as *const i64).read_unaligned() as usize;
                let cols = (field(k + 2) as *const i64).read_unaligned() as usize;
                let data = take_elems(p, rows * cols, e);
                k += 3;
                RtValue::Mat(Rc::new(MatValue { rows, cols, data }))
            }
            _ => {
                k += 1;
                read_scalar(field(k - 1), t)
            }
        }));
    }
    res
}
