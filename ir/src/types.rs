//! IR types (IR-SPEC §2).
//!
//! Scalars are plain enum variants; composite types share their element type
//! through an `Rc`, so cloning a type never allocates.

use std::fmt;
use std::rc::Rc;

use crate::attributes::Attribute;

/// A type of an SSA value.
///
/// `vec<T>`, `mat<T>` and `arr<T>` are builtin because the spec lists them as
/// core types; every other dialect type (`!gen.collect<f64>`) is a
/// [`Type::Dialect`], so the core never names a dialect.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub enum Type {
    /// MLIR's zero-width integer: its only value is 0.
    I0,
    /// 1-bit boolean.
    I1,
    /// 8-bit two's-complement integer (wrapping).
    I8,
    /// 16-bit two's-complement integer (wrapping).
    I16,
    /// 32-bit two's-complement integer (wrapping).
    I32,
    /// 64-bit two's-complement integer (wrapping).
    I64,
    /// The loop index type: a 64-bit integer.
    Index,
    /// A two's-complement integer of another width from 2 to 63 bits
    /// (MLIR's `i4`, `i48`, ...): never 8, 16 or 32, which have variants of
    /// their own (build it with [`Type::int`]).
    Int(u8),
    /// IEEE-754 binary16 (`half`): 11 significant bits, largest finite
    /// value 65504. Arithmetic rounds every result to it (ties to even).
    F16,
    /// bfloat16: `f32`'s exponent range with 8 significant bits. Arithmetic
    /// rounds every result to it (ties to even).
    BF16,
    /// IEEE-754 binary32.
    F32,
    /// IEEE-754 binary64.
    F64,
    /// Immutable 1-D value array.
    Vec(Rc<Type>),
    /// Immutable dense 2-D row-major value array.
    Mat(Rc<Type>),
    /// Mutable 1-D buffer with a length.
    Arr(Rc<Type>),
    /// A mutable variable holding one `T` (LMS's `Var`; the `var` dialect).
    Var(Rc<Type>),
    /// A record `struct<name: T, ...>` of named fields (LMS's structs; the
    /// `struct` dialect). It has at least one field, and names are distinct.
    Struct(Rc<StructType>),
    /// A function type `(inputs) -> (results)`, used by `func.func`.
    Function(Rc<FunctionType>),
    /// A dialect type `!dialect.name<params>`.
    Dialect(Rc<DialectType>),
    /// MLIR's `memref<4x?xf32>`, `memref<?x?xf32, strided<[?, 1], offset: ?>>`:
    /// a view of mutable memory with a shape and a layout (the `memref`
    /// dialect, issue 45).
    MemRef(Rc<MemRefType>),
}

/// `memref<d0 x d1 x ... x T, layout>`: the sizes (`None`: dynamic, `?`),
/// the scalar element type, and the layout (`None`: the identity, row-major
/// layout).
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub struct MemRefType {
    pub shape: Vec<Option<u64>>,
    pub elem: Type,
    pub layout: Option<StridedLayout>,
}

/// MLIR's `strided<[s0, s1, ...], offset: o>`: element `(i0, i1, ...)` of
/// the view is element `o + i0*s0 + i1*s1 + ...` of its allocation. `None`
/// stands for a dynamic value (`?`).
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub struct StridedLayout {
    pub strides: Vec<Option<i64>>,
    pub offset: Option<i64>,
}

impl MemRefType {
    /// The number of dimensions.
    pub fn rank(&self) -> usize {
        self.shape.len()
    }
    /// The strides and offset of the layout. The identity layout has the
    /// row-major strides (each the product of the sizes after it, dynamic
    /// once one of those is dynamic) and offset 0.
    pub fn strides_and_offset(&self) -> (Vec<Option<i64>>, Option<i64>) {
        if let Some(l) = &self.layout {
            return (l.strides.clone(), l.offset);
        }
        let mut strides = vec![Some(1i64); self.shape.len()];
        let mut acc = Some(1i64);
        for (k, d) in self.shape.iter().enumerate().rev() {
            strides[k] = acc;
            acc = match (acc, d) {
                (Some(a), Some(d)) => i64::try_from(*d).ok().and_then(|d| a.checked_mul(d)),
                _ => None,
            };
        }
        (strides, Some(0))
    }
    /// The number of dynamic sizes (the operands an allocation takes).
    pub fn num_dynamic(&self) -> usize {
        self.shape.iter().filter(|d| d.is_none()).count()
    }
}

impl fmt::Display for MemRefType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("memref<")?;
        for d in &self.shape {
            match d {
                Some(d) => write!(f, "{d}x")?,
                None => f.write_str("?x")?,
            }
        }
        write!(f, "{}", self.elem)?;
        if let Some(l) = &self.layout {
            let show = |v: &Option<i64>| v.map_or("?".to_string(), |v| v.to_string());
            let strides: Vec<String> = l.strides.iter().map(show).collect();
            write!(f, ", strided<[{}]", strides.join(", "))?;
            if l.offset != Some(0) {
                write!(f, ", offset: {}", show(&l.offset))?;
            }
            f.write_str(">")?;
        }
        f.write_str(">")
    }
}

/// `(inputs) -> (results)`.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub struct FunctionType {
    pub inputs: Vec<Type>,
    pub results: Vec<Type>,
}

/// The fields of `struct<name: T, ...>`, in declaration order.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub struct StructType {
    pub fields: Vec<(String, Type)>,
}

impl StructType {
    /// The position and type of field `name`.
    pub fn field(&self, name: &str) -> Option<(usize, &Type)> {
        self.fields
            .iter()
            .enumerate()
            .find(|(_, (n, _))| n == name)
            .map(|(i, (_, t))| (i, t))
    }
}

/// `!dialect.name<p0, p1, ...>`; parameters are types or attributes.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub struct DialectType {
    pub dialect: String,
    pub name: String,
    pub params: Vec<TypeParam>,
}

/// A parameter of a dialect type.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub enum TypeParam {
    Type(Type),
    Attr(Attribute),
}

impl Type {
    /// `vec<elem>`.
    pub fn vec(elem: Type) -> Type {
        Type::Vec(Rc::new(elem))
    }
    /// `mat<elem>`.
    pub fn mat(elem: Type) -> Type {
        Type::Mat(Rc::new(elem))
    }
    /// `arr<elem>`.
    pub fn arr(elem: Type) -> Type {
        Type::Arr(Rc::new(elem))
    }
    /// `var<elem>`.
    pub fn var(elem: Type) -> Type {
        Type::Var(Rc::new(elem))
    }
    /// `memref<shape x elem, layout>`.
    pub fn memref(shape: Vec<Option<u64>>, elem: Type, layout: Option<StridedLayout>) -> Type {
        Type::MemRef(Rc::new(MemRefType {
            shape,
            elem,
            layout,
        }))
    }
    /// The memref type record, if this is a `memref`.
    pub fn as_memref(&self) -> Option<&MemRefType> {
        match self {
            Type::MemRef(m) => Some(m),
            _ => None,
        }
    }
    /// `struct<name: T, ...>` (the caller keeps names distinct and the list
    /// non-empty; the parsers and the verifier check both).
    pub fn structure(fields: Vec<(String, Type)>) -> Type {
        Type::Struct(Rc::new(StructType { fields }))
    }
    /// The fields of a struct type.
    pub fn as_struct(&self) -> Option<&StructType> {
        match self {
            Type::Struct(s) => Some(s),
            _ => None,
        }
    }
    /// True if a struct type occurs anywhere in this type.
    pub fn contains_struct(&self) -> bool {
        match self {
            Type::Struct(_) => true,
            Type::Vec(t) | Type::Mat(t) | Type::Arr(t) | Type::Var(t) => t.contains_struct(),
            Type::Function(f) => f.inputs.iter().chain(&f.results).any(Type::contains_struct),
            Type::Dialect(d) => d.params.iter().any(|p| match p {
                TypeParam::Type(t) => t.contains_struct(),
                TypeParam::Attr(_) => false,
            }),
            _ => false,
        }
    }
    /// The types a value of this type is passed as at a function boundary
    /// and printed as by `--run` (IR-SPEC §3 `struct`; issue 12): a struct is
    /// its fields, in order, each flattened again; `vec<struct<f: T, ...>>`
    /// is struct-of-arrays, one `vec<T>` per (flattened) field. Every other
    /// type is itself.
    pub fn leaves(&self) -> Vec<Type> {
        self.named_leaves().into_iter().map(|(_, t)| t).collect()
    }
    /// [`Type::leaves`], each with the path of fields that leads to it
    /// (`.re`, `.pos.x`; empty for a type that is its own leaf). `var<T>`
    /// distributes over the fields like `vec<T>` (a variable of records is
    /// a record of variables).
    pub fn named_leaves(&self) -> Vec<(String, Type)> {
        match self {
            Type::Struct(s) => s
                .fields
                .iter()
                .flat_map(|(n, t)| {
                    t.named_leaves()
                        .into_iter()
                        .map(move |(p, l)| (format!(".{n}{p}"), l))
                })
                .collect(),
            Type::Vec(e) if e.contains_struct() => e
                .named_leaves()
                .into_iter()
                .map(|(p, l)| (p, Type::vec(l)))
                .collect(),
            Type::Var(e) if e.contains_struct() => e
                .named_leaves()
                .into_iter()
                .map(|(p, l)| (p, Type::var(l)))
                .collect(),
            t => vec![(String::new(), t.clone())],
        }
    }
    /// `(inputs) -> (results)`.
    pub fn function(inputs: Vec<Type>, results: Vec<Type>) -> Type {
        Type::Function(Rc::new(FunctionType { inputs, results }))
    }
    /// `!dialect.name<params>`.
    pub fn dialect(dialect: &str, name: &str, params: Vec<TypeParam>) -> Type {
        Type::Dialect(Rc::new(DialectType {
            dialect: dialect.to_string(),
            name: name.to_string(),
            params,
        }))
    }
    /// The integer type `iW` of width `w` (0 to 64 bits; `None` for a
    /// wider one), in its one canonical form.
    pub fn int(w: u32) -> Option<Type> {
        Some(match w {
            0 => Type::I0,
            1 => Type::I1,
            8 => Type::I8,
            16 => Type::I16,
            32 => Type::I32,
            64 => Type::I64,
            2..=63 => Type::Int(w as u8),
            _ => return None,
        })
    }
    /// True for `i0`, `i1`, `i8`, `i16`, `i32`, `i64`, the other widths
    /// up to 64 bits, and `index`.
    pub fn is_integer(&self) -> bool {
        matches!(
            self,
            Type::I0
                | Type::I1
                | Type::I8
                | Type::I16
                | Type::I32
                | Type::I64
                | Type::Index
                | Type::Int(_)
        )
    }
    /// True for `f16`, `bf16`, `f32`, `f64`.
    pub fn is_float(&self) -> bool {
        matches!(self, Type::F16 | Type::BF16 | Type::F32 | Type::F64)
    }
    /// True for the 16-bit floats `f16` and `bf16`, which the interpreter
    /// and the native backends hold as `f32` values rounded to the type.
    pub fn is_half(&self) -> bool {
        matches!(self, Type::F16 | Type::BF16)
    }
    /// Bit width of a float type.
    pub fn float_width(&self) -> Option<u32> {
        match self {
            Type::F16 | Type::BF16 => Some(16),
            Type::F32 => Some(32),
            Type::F64 => Some(64),
            _ => None,
        }
    }
    /// True for integer and float scalars.
    pub fn is_scalar(&self) -> bool {
        self.is_integer() || self.is_float()
    }
    /// Bit width of an integer type (`index` is 64).
    pub fn int_width(&self) -> Option<u32> {
        match self {
            Type::I0 => Some(0),
            Type::I1 => Some(1),
            Type::I8 => Some(8),
            Type::I16 => Some(16),
            Type::Int(w) => Some(*w as u32),
            Type::I32 => Some(32),
            Type::I64 | Type::Index => Some(64),
            _ => None,
        }
    }
    /// Element type of `vec<T>`, `mat<T>`, `arr<T>` or `var<T>`.
    pub fn elem(&self) -> Option<&Type> {
        match self {
            Type::Vec(t) | Type::Mat(t) | Type::Arr(t) | Type::Var(t) => Some(t),
            _ => None,
        }
    }
    /// The dialect type record if this is `!dialect.name<...>` with that name.
    pub fn as_dialect(&self, dialect: &str, name: &str) -> Option<&DialectType> {
        match self {
            Type::Dialect(d) if d.dialect == dialect && d.name == name => Some(d),
            _ => None,
        }
    }
}

impl fmt::Display for Type {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Type::I0 => f.write_str("i0"),
            Type::I1 => f.write_str("i1"),
            Type::I8 => f.write_str("i8"),
            Type::I16 => f.write_str("i16"),
            Type::Int(w) => write!(f, "i{w}"),
            Type::I32 => f.write_str("i32"),
            Type::I64 => f.write_str("i64"),
            Type::Index => f.write_str("index"),
            Type::F16 => f.write_str("f16"),
            Type::BF16 => f.write_str("bf16"),
            Type::F32 => f.write_str("f32"),
            Type::F64 => f.write_str("f64"),
            Type::Vec(t) => write!(f, "vec<{t}>"),
            Type::Mat(t) => write!(f, "mat<{t}>"),
            Type::Arr(t) => write!(f, "arr<{t}>"),
            Type::Var(t) => write!(f, "var<{t}>"),
            Type::Struct(s) => {
                f.write_str("struct<")?;
                for (i, (n, t)) in s.fields.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{n}: {t}")?;
                }
                f.write_str(">")
            }
            Type::Function(ft) => {
                f.write_str("(")?;
                write_list(f, &ft.inputs)?;
                f.write_str(") -> ")?;
                if ft.results.len() == 1 && !matches!(ft.results[0], Type::Function(_)) {
                    write!(f, "{}", ft.results[0])
                } else {
                    f.write_str("(")?;
                    write_list(f, &ft.results)?;
                    f.write_str(")")
                }
            }
            Type::MemRef(m) => write!(f, "{m}"),
            Type::Dialect(d) => {
                write!(f, "!{}.{}", d.dialect, d.name)?;
                if !d.params.is_empty() {
                    f.write_str("<")?;
                    for (i, p) in d.params.iter().enumerate() {
                        if i > 0 {
                            f.write_str(", ")?;
                        }
                        match p {
                            TypeParam::Type(t) => write!(f, "{t}")?,
                            TypeParam::Attr(a) => write!(f, "{a}")?,
                        }
                    }
                    f.write_str(">")?;
                }
                Ok(())
            }
        }
    }
}

/// Writes `a, b, c`.
pub fn write_list<T: fmt::Display>(f: &mut fmt::Formatter<'_>, items: &[T]) -> fmt::Result {
    for (i, t) in items.iter().enumerate() {
        if i > 0 {
            f.write_str(", ")?;
        }
        write!(f, "{t}")?;
    }
    Ok(())
}

/// `@name` for a symbol name, quoted (`@"a b"`, with MLIR's string escapes)
/// when `name` is not a bare identifier.
pub fn symbol_ref(name: &str) -> String {
    if is_symbol_name(name) {
        format!("@{name}")
    } else {
        format!("@\"{}\"", crate::attributes::escape_str(name))
    }
}

/// Whether `s` may name a symbol at all: MLIR's quoted form `@"..."`
/// allows any text but the empty one; L0 also rejects NUL, which no object
/// file's symbol table can hold.
pub fn is_valid_symbol(s: &str) -> bool {
    !s.is_empty() && !s.contains('\0')
}

/// Whether `s` is a bare symbol name (`@name` without quotes): a letter or
/// `_`, then letters, digits, `_`, `$` or `.`.
pub fn is_symbol_name(s: &str) -> bool {
    let mut bytes = s.bytes();
    bytes
        .next()
        .is_some_and(|b| b.is_ascii_alphabetic() || b == b'_')
        && bytes.all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'$' | b'.'))
}

/// Rounds `v` to the nearest value of float type `ty` (ties to even, past the
/// largest finite value to infinity), widened back to `f64` exactly. A NaN
/// keeps its sign and the payload bits the type has, with the quiet bit set
/// (as a hardware conversion does). `f64` and non-float types leave `v`
/// unchanged. `f16` and `bf16` round straight from `f64`, never through
/// `f32` (rounding twice can be off by one unit in the last place).
pub fn round_float(v: f64, ty: &Type) -> f64 {
    match ty {
        Type::F16 => round_binary(v, 10, -14, 15),
        Type::BF16 => round_binary(v, 7, -126, 127),
        Type::F32 => v as f32 as f64,
        _ => v,
    }
}

/// Rounds `v` to a binary format with `p` fraction bits and normal
/// exponents `emin..=emax` (with subnormals), on the integer significand:
/// `|v| = m * 2^e` exactly, the format's quantum at `|v|` is
/// `2^(max(floor(log2 |v|), emin) - p)`, and `m` is shifted to it with
/// round-half-to-even on the bits shifted out.
fn round_binary(v: f64, p: u32, emin: i32, emax: i32) -> f64 {
    const FRAC: u64 = (1 << 52) - 1;
    let bits = v.to_bits();
    if v.is_nan() {
        return f64::from_bits((bits & !((1u64 << (52 - p)) - 1)) | 1 << 51);
    }
    if v.is_infinite() || v == 0.0 {
        return v;
    }
    let biased = ((bits >> 52) & 0x7FF) as i32;
    let (m, e) = if biased == 0 {
        (bits & FRAC, -1074)
    } else {
        ((bits & FRAC) | 1 << 52, biased - 1075)
    };
    let log2 = 63 - m.leading_zeros() as i32 + e;
    let q = log2.max(emin) - p as i32;
    let r = if e >= q {
        v.abs()
    } else {
        let shift = (q - e) as u32;
        let n = if shift > 54 {
            // |v| < 2^(q - 1): rounds to zero.
            0
        } else {
            let n = m >> shift;
            let rest = m & ((1u64 << shift) - 1);
            let half = 1u64 << (shift - 1);
            n + u64::from(rest > half || (rest == half && n & 1 == 1))
        };
        n as f64 * 2f64.powi(q)
    };
    let max = (2.0 - 2f64.powi(-(p as i32))) * 2f64.powi(emax);
    let r = if r > max { f64::INFINITY } else { r };
    r.copysign(v)
}

/// The value of the 16-bit pattern `h` of `f16` or `bf16` as the `f32` that
/// holds it, exactly: a signaling NaN stays signaling (no arithmetic, so
/// nothing quiets it), and [`half_to_bits`] gives `h` back.
pub fn half_from_bits(h: u16, ty: &Type) -> f32 {
    let h = h as u32;
    if *ty == Type::BF16 {
        return f32::from_bits(h << 16);
    }
    let sign = (h & 0x8000) << 16;
    let exp = (h >> 10) & 0x1F;
    let frac = h & 0x3FF;
    let bits = match exp {
        // Subnormal (or zero): frac * 2^-24, exact in f32.
        0 => (frac as f32 * 2f32.powi(-24)).to_bits(),
        0x1F => 0x7F80_0000 | frac << 13,
        _ => (exp + 112) << 23 | frac << 13,
    };
    f32::from_bits(sign | bits)
}

/// The 16-bit pattern of `x`, a value of `f16` or `bf16` held in an `f32`
/// (a value that is not exact in the type loses its low bits).
pub fn half_to_bits(x: f32, ty: &Type) -> u16 {
    let b = x.to_bits();
    if *ty == Type::BF16 {
        return (b >> 16) as u16;
    }
    let sign = (b >> 16) & 0x8000;
    let a = b & 0x7FFF_FFFF;
    let h = if a >= 0x7F80_0000 {
        0x7C00 | ((a >> 13) & 0x3FF)
    } else if a < 0x3880_0000 {
        // Below 2^-14: a subnormal, frac = |x| * 2^24.
        (f32::from_bits(a) * 2f32.powi(24)) as u32
    } else {
        (a >> 13) - (112 << 10)
    };
    (sign | h) as u16
}

/// The IEEE bit pattern of `v` (a value of float type `ty`) in the type's
/// width: 16, 32 or 64 bits, zero-extended.
pub fn float_to_bits(v: f64, ty: &Type) -> u64 {
    match ty {
        Type::F16 | Type::BF16 => half_to_bits(round_float(v, ty) as f32, ty) as u64,
        Type::F32 => (v as f32).to_bits() as u64,
        _ => v.to_bits(),
    }
}

/// The value of the bit pattern `bits` of float type `ty` (the low 16, 32
/// or 64 bits are read), widened to `f64` (which quiets a signaling NaN).
pub fn float_from_bits(bits: u64, ty: &Type) -> f64 {
    match ty {
        Type::F16 | Type::BF16 => half_from_bits(bits as u16, ty) as f64,
        Type::F32 => f32::from_bits(bits as u32) as f64,
        _ => f64::from_bits(bits),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every `f32` bit pattern class (a cheap LCG over all 2^32 patterns
    /// plus the edges) rounds to `f16`/`bf16` as the `half` crate's
    /// conversions from `f32` do (those round once, so they are exact
    /// references for `f32` inputs).
    #[test]
    fn rounding_from_f32_matches_half() {
        let mut x: u32 = 0x1234_5678;
        let edges = [
            0u32,
            0x8000_0000,
            0x3380_0000,
            0x3300_0000,
            0x3300_0001,
            0x387F_FFFF,
            0x3880_0000,
            0x477F_E000,
            0x477F_EFFF,
            0x477F_F000,
            0x7F7F_FFFF,
            0x7F80_0000,
            0x7FC0_0001,
            0xFF80_0001,
            0x0000_0001,
            0x3F80_1000,
            0x3F80_3000,
            0x3F80_8000,
            0x3F81_8000,
        ];
        for i in 0..2_000_000u32 {
            x = x.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            let b = if (i as usize) < edges.len() {
                edges[i as usize]
            } else {
                x
            };
            let f = f32::from_bits(b);
            let want16 = half::f16::from_f32(f).to_f32();
            let got16 = round_float(f as f64, &Type::F16) as f32;
            assert_eq!(got16.to_bits(), want16.to_bits(), "f16 of {b:#010x}");
            let want = half::bf16::from_f32(f).to_f32();
            let got = round_float(f as f64, &Type::BF16) as f32;
            assert_eq!(got.to_bits(), want.to_bits(), "bf16 of {b:#010x}");
        }
    }

    /// From `f64` the rounding is direct: `1 + 2^-11 + 2^-40` is above the
    /// halfway point between two `f16`s, though through `f32` it would be
    /// a tie (and round down to even).
    #[test]
    fn rounding_from_f64_is_direct() {
        let v = 1.0 + 2f64.powi(-11) + 2f64.powi(-40);
        assert_eq!(round_float(v, &Type::F16), 1.0 + 2f64.powi(-10));
        let v = 1.0 + 2f64.powi(-8) + 2f64.powi(-40);
        assert_eq!(round_float(v, &Type::BF16), 1.0 + 2f64.powi(-7));
        assert_eq!(round_float(65519.99, &Type::F16), 65504.0);
        assert_eq!(round_float(65520.0, &Type::F16), f64::INFINITY);
        assert_eq!(round_float(-1e300, &Type::BF16), f64::NEG_INFINITY);
        assert_eq!(round_float(2f64.powi(-25), &Type::F16), 0.0);
        assert_eq!(
            round_float(2f64.powi(-25) * 1.5, &Type::F16),
            2f64.powi(-24)
        );
        assert_eq!(round_float(1e-300, &Type::F16).to_bits(), 0);
        assert_eq!(
            round_float(-1e-300, &Type::F16).to_bits(),
            (-0.0f64).to_bits()
        );
    }

    /// Every 16-bit pattern: the same value as the `half` crate's (NaNs
    /// aside, which it quiets), already rounded, and its bits back exactly.
    #[test]
    fn bits_round_trip() {
        for h in 0..=u16::MAX {
            for ty in [Type::F16, Type::BF16] {
                let x = half_from_bits(h, &ty);
                let want = if ty == Type::F16 {
                    half::f16::from_bits(h).to_f32()
                } else {
                    half::bf16::from_bits(h).to_f32()
                };
                if x.is_nan() {
                    assert!(want.is_nan());
                } else {
                    assert_eq!(x.to_bits(), want.to_bits(), "{ty} {h:#06x}");
                    assert_eq!(round_float(x as f64, &ty), x as f64, "{ty} {h:#06x}");
                    assert_eq!(float_to_bits(x as f64, &ty), h as u64, "{ty} {h:#06x}");
                }
                assert_eq!(half_to_bits(x, &ty), h, "{ty} {h:#06x}");
            }
        }
    }
}
