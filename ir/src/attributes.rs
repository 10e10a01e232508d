//! Attributes (IR-SPEC §1): compile-time constants attached to operations.

use std::fmt;
use std::hash::{Hash, Hasher};

use crate::types::Type;

/// An attribute value.
///
/// Floats compare and hash by bit pattern, so `NaN` attributes are equal to
/// themselves and `-0.0` differs from `0.0` (what hash-consing needs).
#[derive(Clone, Debug)]
pub enum Attribute {
    /// `42 : i64` (the value is stored sign-extended; `i1` uses 0/1).
    Int(i64, Type),
    /// `2.5 : f64` or `0x7FF8000000000000 : f64`. `f32` values are stored widened.
    Float(f64, Type),
    /// `true` / `false`.
    Bool(bool),
    /// `"text"`.
    Str(String),
    /// `@name`.
    SymbolRef(String),
    /// A type used as an attribute (`type = f64`).
    Type(Type),
    /// `[a, b]`.
    Array(Vec<Attribute>),
    /// A bare keyword, used as a dialect-attribute parameter (`add` in `#gen.reduce<add>`).
    Keyword(String),
    /// A dialect attribute `#dialect.name` or `#dialect.name<params>`.
    Dialect(Box<DialectAttr>),
    /// The unit attribute (a present key without a value).
    Unit,
    /// A dictionary `{name = value, flag}` used as a value, as MLIR's
    /// `arg_attrs = [{llvm.noalias}, {}]` (entries in source order; a unit
    /// value prints as the bare name).
    Dict(Vec<(String, Attribute)>),
}

/// `#dialect.name<params>`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct DialectAttr {
    pub dialect: String,
    pub name: String,
    pub params: Vec<Attribute>,
}

impl Attribute {
    /// Integer attribute of type `ty` (truncated and sign-extended to the width of `ty`).
    pub fn int(value: i64, ty: Type) -> Attribute {
        Attribute::Int(wrap_int(value, &ty), ty)
    }
    /// Float attribute of type `ty` (rounded to `ty`: see
    /// [`crate::types::round_float`]).
    pub fn float(value: f64, ty: Type) -> Attribute {
        Attribute::Float(crate::types::round_float(value, &ty), ty)
    }
    /// `#dialect.name<params>`.
    pub fn dialect(dialect: &str, name: &str, params: Vec<Attribute>) -> Attribute {
        Attribute::Dialect(Box::new(DialectAttr {
            dialect: dialect.to_string(),
            name: name.to_string(),
            params,
        }))
    }
    /// The integer value, if this is an integer or bool attribute.
    pub fn as_int(&self) -> Option<i64> {
        match self {
            Attribute::Int(v, _) => Some(*v),
            Attribute::Bool(b) => Some(*b as i64),
            _ => None,
        }
    }
    /// The float value, if this is a float attribute.
    pub fn as_float(&self) -> Option<f64> {
        match self {
            Attribute::Float(v, _) => Some(*v),
            _ => None,
        }
    }
    /// The string, if this is a string attribute.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Attribute::Str(s) | Attribute::Keyword(s) => Some(s),
            _ => None,
        }
    }
    /// The symbol name, if this is `@name`.
    pub fn as_symbol(&self) -> Option<&str> {
        match self {
            Attribute::SymbolRef(s) => Some(s),
            _ => None,
        }
    }
    /// The dialect attribute record, if this is `#dialect.name<...>`.
    pub fn as_dialect(&self) -> Option<&DialectAttr> {
        match self {
            Attribute::Dialect(d) => Some(d),
            _ => None,
        }
    }
    /// The type of a typed (integer or float) attribute.
    pub fn value_type(&self) -> Option<&Type> {
        match self {
            Attribute::Int(_, t) | Attribute::Float(_, t) => Some(t),
            _ => None,
        }
    }
}

/// Truncates `v` to the bit width of integer type `ty` and sign-extends it back
/// (`i1` keeps 0 or 1). Non-integer types leave `v` unchanged.
pub fn wrap_int(v: i64, ty: &Type) -> i64 {
    match ty.int_width() {
        Some(0) => 0,
        Some(1) => v & 1,
        Some(w) if w < 64 => (v << (64 - w)) >> (64 - w),
        _ => v,
    }
}

impl PartialEq for Attribute {
    fn eq(&self, other: &Self) -> bool {
        use Attribute::*;
        match (self, other) {
            // `true : i1` prints as `true` and parses back as a Bool: the same constant.
            (Int(a, crate::types::Type::I1), Bool(b))
            | (Bool(b), Int(a, crate::types::Type::I1)) => (*a != 0) == *b,
            (Int(a, t), Int(b, u)) => a == b && t == u,
            (Float(a, t), Float(b, u)) => a.to_bits() == b.to_bits() && t == u,
            (Bool(a), Bool(b)) => a == b,
            (Str(a), Str(b)) => a == b,
            (SymbolRef(a), SymbolRef(b)) => a == b,
            (Type(a), Type(b)) => a == b,
            (Array(a), Array(b)) => a == b,
            (Keyword(a), Keyword(b)) => a == b,
            (Dialect(a), Dialect(b)) => a == b,
            (Unit, Unit) => true,
            (Dict(a), Dict(b)) => a == b,
            _ => false,
        }
    }
}
impl Eq for Attribute {}

impl Hash for Attribute {
    fn hash<H: Hasher>(&self, state: &mut H) {
        if let Attribute::Int(v, Type::I1) = self {
            // Hash like the equal Bool.
            return Attribute::Bool(*v != 0).hash(state);
        }
        std::mem::discriminant(self).hash(state);
        match self {
            Attribute::Int(v, t) => {
                v.hash(state);
                t.hash(state)
            }
            Attribute::Float(v, t) => {
                v.to_bits().hash(state);
                t.hash(state)
            }
            Attribute::Bool(b) => b.hash(state),
            Attribute::Str(s) | Attribute::SymbolRef(s) | Attribute::Keyword(s) => s.hash(state),
            Attribute::Type(t) => t.hash(state),
            Attribute::Array(a) => a.hash(state),
            Attribute::Dialect(d) => d.hash(state),
            Attribute::Unit => {}
            Attribute::Dict(d) => d.hash(state),
        }
    }
}

/// Formats a float so that it parses back to the same bits: the shortest
/// round-trip decimal when that is exact, otherwise (NaN, infinities) the hex
/// bit pattern MLIR uses.
pub fn format_float(v: f64, ty: &Type) -> String {
    if v.is_finite() {
        // A 16-bit float's value is an `f32`, whose shortest form
        // identifies it among the (fewer) 16-bit values too.
        let s = if matches!(ty, Type::F16 | Type::BF16 | Type::F32) {
            format!("{:?}", v as f32)
        } else {
            format!("{v:?}")
        };
        // `{:?}` gives `1.0`, `1e-7`, `-0.0`: always re-parses to the same
        // value. MLIR's float literals need a `.`: `1e-7` prints `1.0e-7`.
        match s.find('e') {
            Some(e) if !s[..e].contains('.') => format!("{}.0{}", &s[..e], &s[e..]),
            _ => s,
        }
    } else if ty.is_half() {
        format!("0x{:04X}", crate::types::float_to_bits(v, ty))
    } else if *ty == Type::F32 {
        format!("0x{:08X}", (v as f32).to_bits())
    } else {
        format!("0x{:016X}", v.to_bits())
    }
}

impl fmt::Display for Attribute {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Attribute::Int(v, t) => {
                if *t == Type::I1 {
                    write!(f, "{}", *v != 0)
                } else {
                    write!(f, "{v} : {t}")
                }
            }
            Attribute::Float(v, t) => write!(f, "{} : {t}", format_float(*v, t)),
            Attribute::Bool(b) => write!(f, "{b}"),
            Attribute::Str(s) => write!(f, "\"{}\"", escape_str(s)),
            Attribute::SymbolRef(s) => f.write_str(&crate::types::symbol_ref(s)),
            Attribute::Type(t) => write!(f, "{t}"),
            Attribute::Array(items) => {
                f.write_str("[")?;
                crate::types::write_list(f, items)?;
                f.write_str("]")
            }
            Attribute::Keyword(k) => f.write_str(k),
            Attribute::Dialect(d) => {
                write!(f, "#{}.{}", d.dialect, d.name)?;
                if !d.params.is_empty() {
                    f.write_str("<")?;
                    crate::types::write_list(f, &d.params)?;
                    f.write_str(">")?;
                }
                Ok(())
            }
            Attribute::Unit => f.write_str("unit"),
            Attribute::Dict(entries) => {
                f.write_str("{")?;
                for (i, (k, v)) in entries.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    f.write_str(k)?;
                    if *v != Attribute::Unit {
                        write!(f, " = {v}")?;
                    }
                }
                f.write_str("}")
            }
        }
    }
}

/// Escapes `"` and `\` and non-printable characters for a string literal.
pub fn escape_str(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\{:02X}", c as u32)),
            c => out.push(c),
        }
    }
    out
}
