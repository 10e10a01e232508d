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
    /// True for `i0`, `i1`, `i8`, `i16`, `i32`, `i64`, `index`.
    pub fn is_integer(&self) -> bool {
        matches!(
            self,
            Type::I0 | Type::I1 | Type::I8 | Type::I16 | Type::I32 | Type::I64 | Type::Index
        )
    }
    /// True for `f32`, `f64`.
    pub fn is_float(&self) -> bool {
        matches!(self, Type::F32 | Type::F64)
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
            Type::I32 => f.write_str("i32"),
            Type::I64 => f.write_str("i64"),
            Type::Index => f.write_str("index"),
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
