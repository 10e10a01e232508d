//! The value representation and the C layout of result structs.
//!
//! | L0 type | Cranelift values |
//! |---|---|
//! | `i1` | `i8` holding 0 or 1 |
//! | `i32` | `i32` |
//! | `i64`, `index` | `i64` |
//! | `f32`, `f64` | `f32`, `f64` |
//! | `vec<T>` | `(data: ptr, len: i64)` |
//! | `mat<T>` | `(data: ptr, rows: i64, cols: i64)`, row-major |
//! | `arr<T>` | `hdr: ptr` to a heap header `{data: ptr, len: i64, cap: i64}` |
//!
//! Elements are stored densely ([`Elem`]): scalars with the sizes of the
//! column above (`i1` is one byte); `vec` elements as 16-byte descriptors
//! `{data: ptr, len: i64}` (so `vec<vec<T>>` is `(data, len)` where `data`
//! points to `len` descriptors, recursively for deeper nesting); `arr`
//! elements of an `arr` as 8-byte header pointers. Supported element types:
//! of `vec`, scalars and supported `vec`s; of `arr`, scalars, supported
//! `vec`s and supported `arr`s; of `mat`, scalars only.
//!
//! Ownership of nested elements: a `vec` owns its element vectors (freeing
//! or copying a `vec<vec<T>>` frees or copies them too, see
//! [`own_depth`]); an `arr<vec<T>>` owns its element vectors; an
//! `arr<arr<T>>` only refers to its element arrays (each is freed or
//! converted by its own `arr.free` / `arr.to_vec`).

use cranelift_codegen::ir::types;
use cranelift_codegen::ir::Type as CType;
use smallvec::{smallvec, SmallVec};

use ir::Type;

/// The pointer type (only 64-bit hosts are supported).
pub const PTR: CType = types::I64;

/// Flattened Cranelift types of one L0 value.
pub type Flat = SmallVec<[CType; 3]>;

/// Byte offsets of the `arr` header fields.
pub const HDR_DATA: i32 = 0;
pub const HDR_LEN: i32 = 8;
pub const HDR_CAP: i32 = 16;

/// The Cranelift type of a scalar L0 type.
pub fn scalar(t: &Type) -> Option<CType> {
    Some(match t {
        // `i0` is carried in a byte that always holds 0.
        Type::I0 | Type::I1 | Type::I8 => types::I8,
        Type::I16 => types::I16,
        Type::I32 => types::I32,
        Type::I64 | Type::Index => types::I64,
        // Another width: the smallest machine integer that holds it, kept
        // sign-extended from the width (as the interpreter keeps it).
        Type::Int(w) => container(*w as u32),
        // A 16-bit float is the `f32` of its value (see `crate::half`).
        Type::F16 | Type::BF16 | Type::F32 => types::F32,
        Type::F64 => types::F64,
        _ => return None,
    })
}

/// The machine integer that carries an `iW` of width `w` (2 to 63 bits).
pub fn container(w: u32) -> CType {
    match w {
        0..=8 => types::I8,
        9..=16 => types::I16,
        17..=32 => types::I32,
        _ => types::I64,
    }
}

/// Whether `t` may be an element of a `vec` (a scalar or a supported `vec`).
fn vec_elem_ok(t: &Type) -> bool {
    match t {
        Type::Vec(e) => vec_elem_ok(e),
        t => scalar(t).is_some(),
    }
}

/// Whether `t` may be an element of an `arr` (a scalar, a supported `vec`
/// or a supported `arr`).
fn arr_elem_ok(t: &Type) -> bool {
    match t {
        Type::Arr(e) => arr_elem_ok(e),
        t => vec_elem_ok(t),
    }
}

/// The Cranelift types representing a value of type `t`, or `None` when the
/// backend does not support `t` (matrices of non-scalars, vectors of
/// arrays or matrices, dialect types).
pub fn flatten(t: &Type) -> Option<Flat> {
    if let Some(s) = scalar(t) {
        return Some(smallvec![s]);
    }
    match t {
        Type::Vec(e) if vec_elem_ok(e) => Some(smallvec![PTR, types::I64]),
        Type::Mat(e) => scalar(e).map(|_| smallvec![PTR, types::I64, types::I64]),
        Type::Arr(e) if arr_elem_ok(e) => Some(smallvec![PTR]),
        _ => None,
    }
}

/// How one element of a `vec`/`mat`/`arr` is stored: its size in bytes and
/// its flattened parts with their byte offsets.
#[derive(Clone, Debug)]
pub struct Elem {
    pub size: u32,
    pub parts: SmallVec<[(CType, i32); 2]>,
}

/// The element layout of a `vec`/`mat`/`arr` type (`None` when unsupported).
pub fn elem_layout(t: &Type) -> Option<Elem> {
    let e = t.elem()?;
    if let Some(s) = scalar(e) {
        return Some(Elem {
            size: s.bytes(),
            parts: smallvec![(s, 0)],
        });
    }
    match e {
        Type::Vec(_) => Some(Elem {
            size: 16,
            parts: smallvec![(PTR, 0), (types::I64, 8)],
        }),
        Type::Arr(_) => Some(Elem {
            size: 8,
            parts: smallvec![(PTR, 0)],
        }),
        _ => None,
    }
}

/// How many levels of owned element vectors a buffer of type `t` (`vec`,
/// `mat` or `arr`) has below its own data: 0 for scalar (or `arr`)
/// elements, 1 for `vec<vec<T>>` and `arr<vec<T>>`, and so on. Freeing or
/// copying the buffer frees or copies that many levels.
pub fn own_depth(t: &Type) -> i64 {
    let mut d = 0;
    let mut e = t.elem();
    while let Some(Type::Vec(inner)) = e {
        d += 1;
        e = Some(inner);
    }
    d
}

/// The size in bytes of the innermost non-`vec` elements of buffer type `t`
/// (below [`own_depth`] levels of vectors).
pub fn leaf_size(t: &Type) -> u32 {
    let mut e = t.elem();
    while let Some(Type::Vec(inner)) = e {
        e = Some(inner);
    }
    match e {
        Some(Type::Arr(_)) => 8,
        Some(s) => scalar(s).map(|c| c.bytes()).unwrap_or(1),
        None => 1,
    }
}

/// Whether values of `t` own a heap buffer that the function must release
/// (`vec` and `mat`; `arr` buffers are released by explicit `arr.free`).
pub fn is_buffer(t: &Type) -> bool {
    matches!(t, Type::Vec(_) | Type::Mat(_))
}

/// The element type of a `vec`/`mat`/`arr` type as a Cranelift type, when
/// it is a scalar.
pub fn elem(t: &Type) -> Option<CType> {
    t.elem().and_then(scalar)
}

/// A C struct of the given fields, in order, with natural alignment.
#[derive(Clone, Debug, Default)]
pub struct Layout {
    pub fields: Vec<CType>,
    pub offsets: Vec<u32>,
    pub size: u32,
    pub align: u32,
}

/// The C layout of a struct with `fields` in order.
pub fn layout(fields: &[CType]) -> Layout {
    let (mut off, mut align) = (0u32, 1u32);
    let mut offsets = Vec::with_capacity(fields.len());
    for f in fields {
        let s = f.bytes();
        off = off.div_ceil(s) * s;
        offsets.push(off);
        off += s;
        align = align.max(s);
    }
    Layout {
        fields: fields.to_vec(),
        offsets,
        size: off.div_ceil(align) * align,
        align,
    }
}

/// The C spelling of a Cranelift type, for documentation and headers.
pub fn c_name(t: CType) -> &'static str {
    match t {
        types::I8 => "int8_t",
        types::I16 => "int16_t",
        types::I32 => "int32_t",
        types::I64 => "int64_t",
        types::F32 => "float",
        types::F64 => "double",
        _ => "void",
    }
}
