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
//! Elements of `vec`/`mat`/`arr` must be scalars, stored densely with the
//! sizes of the scalar column above (`i1` is one byte).

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
        Type::I1 => types::I8,
        Type::I32 => types::I32,
        Type::I64 | Type::Index => types::I64,
        Type::F32 => types::F32,
        Type::F64 => types::F64,
        _ => return None,
    })
}

/// The Cranelift types representing a value of type `t`, or `None` when the
/// backend does not support `t` (nested containers, dialect types).
pub fn flatten(t: &Type) -> Option<Flat> {
    if let Some(s) = scalar(t) {
        return Some(smallvec![s]);
    }
    match t {
        Type::Vec(e) => scalar(e).map(|_| smallvec![PTR, types::I64]),
        Type::Mat(e) => scalar(e).map(|_| smallvec![PTR, types::I64, types::I64]),
        Type::Arr(e) => scalar(e).map(|_| smallvec![PTR]),
        _ => None,
    }
}

/// Whether values of `t` own a heap buffer that the function must release
/// (`vec` and `mat`; `arr` buffers are released by explicit `arr.free`).
pub fn is_buffer(t: &Type) -> bool {
    matches!(t, Type::Vec(_) | Type::Mat(_))
}

/// The element type of a `vec`/`mat`/`arr` type as a Cranelift type.
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
        types::I32 => "int32_t",
        types::I64 => "int64_t",
        types::F32 => "float",
        types::F64 => "double",
        _ => "void",
    }
}
