//! Helpers shared by the dialects' custom forms, verifiers and semantics.

use ir::interp::{RtValue, RunError};
use ir::printer::Printer;
use ir::{Attribute, Context, OpId, Type};

/// Prints ` %a, %b : T` (operands, then the type of the first operand) and
/// the attribute dictionary without `skip`.
pub fn print_operands_colon_type(p: &mut Printer, op: OpId, skip: &[&str]) -> std::fmt::Result {
    let ctx = p.ctx();
    p.w(" ");
    p.values(ctx.operands(op));
    p.attr_dict(op, skip);
    p.w(" : ");
    let t = match ctx.operands(op).first() {
        Some(&v) => ctx.ty(v).clone(),
        None => ctx.ty(ctx.result(op, 0)).clone(),
    };
    p.ty(&t);
    Ok(())
}

pub use ir::custom::parse_operands_colon_type;

/// The string attribute `name` of `op`.
pub fn str_attr<'a>(ctx: &'a Context, op: OpId, name: &str) -> Option<&'a str> {
    ctx.attr(op, name).and_then(|a| a.as_str())
}

/// The zero value of scalar type `ty` as a run-time value.
pub fn zero_value(ty: &Type) -> RtValue {
    match ty {
        Type::Struct(st) => RtValue::Struct(std::rc::Rc::new(
            st.fields.iter().map(|(_, t)| zero_value(t)).collect(),
        )),
        Type::I1 => RtValue::Bool(false),
        Type::F16 | Type::BF16 | Type::F32 => RtValue::F32(0.0),
        Type::F64 => RtValue::F64(0.0),
        _ => RtValue::Int(0),
    }
}

/// Converts a constant attribute to a run-time value.
pub fn attr_to_value(a: &Attribute) -> Option<RtValue> {
    Some(match a {
        Attribute::Int(v, Type::I1) => RtValue::Bool(*v != 0),
        Attribute::Int(v, _) => RtValue::Int(*v),
        Attribute::Bool(b) => RtValue::Bool(*b),
        Attribute::Float(v, Type::F16 | Type::BF16 | Type::F32) => RtValue::F32(*v as f32),
        Attribute::Float(v, _) => RtValue::F64(*v),
        _ => return None,
    })
}

/// Reads an `index` run-time value as a non-negative size, or faults.
pub fn as_size(ctx: &Context, op: OpId, v: &RtValue) -> Result<usize, RunError> {
    match v.as_int() {
        Some(n) if n >= 0 => Ok(n as usize),
        Some(n) => Err(RunError::at(ctx, op, format!("negative size {n}"))),
        None => Err(RunError::at(ctx, op, "expected an integer size")),
    }
}

/// The unit attribute `in_bounds`: an access the builder has proved in
/// bounds (`vec.get`, `arr.load`, `arr.store`), whose check code generators
/// omit.
pub fn in_bounds_attr() -> Vec<(String, Attribute)> {
    vec![("in_bounds".to_string(), Attribute::Unit)]
}

/// A pure op spec with `operands` operands and one result (the common shape
/// of the high-level value ops).
pub fn pure(name: &'static str, summary: &'static str, operands: usize) -> ir::spec::OpSpec {
    use ir::spec::{Arity, OpSpec, Traits};
    OpSpec::new(name, summary)
        .operands(Arity::Exactly(operands))
        .results(Arity::Exactly(1))
        .traits(Traits::PURE)
}

// ----- result-type inference for declarative custom forms ----------------------

/// Inferred result types (one for every op that uses these).
type Inferred = Option<smallvec::SmallVec<[Type; 2]>>;
/// Attributes as the inference hooks see them.
type Attrs = [(String, Attribute)];

/// The result is an `index`.
pub fn infer_index(_: &[Type], _: &Attrs) -> Inferred {
    Some(smallvec::smallvec![Type::Index])
}

/// The result has the first operand's type.
pub fn infer_same(ts: &[Type], _: &Attrs) -> Inferred {
    Some(smallvec::smallvec![ts.first()?.clone()])
}

/// The result is the element type of the first operand (a `vec`, `mat` or `arr`).
pub fn infer_elem(ts: &[Type], _: &Attrs) -> Inferred {
    Some(smallvec::smallvec![ts.first()?.elem()?.clone()])
}

/// The result is a `vec` of the first operand's element type.
pub fn infer_vec_of_elem(ts: &[Type], _: &Attrs) -> Inferred {
    Some(smallvec::smallvec![Type::vec(ts.first()?.elem()?.clone())])
}

/// The result is a `mat` of the first operand's element type.
pub fn infer_mat_of_elem(ts: &[Type], _: &Attrs) -> Inferred {
    Some(smallvec::smallvec![Type::mat(ts.first()?.elem()?.clone())])
}

/// The result is an `arr` of the first operand's element type.
pub fn infer_arr_of_elem(ts: &[Type], _: &Attrs) -> Inferred {
    Some(smallvec::smallvec![Type::arr(ts.first()?.elem()?.clone())])
}

/// The result is a `vec<index>`.
pub fn infer_vec_index(_: &[Type], _: &Attrs) -> Inferred {
    Some(smallvec::smallvec![Type::vec(Type::Index)])
}
