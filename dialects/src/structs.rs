//! The `struct` dialect: LMS's records (IR-SPEC §3 `struct`; POPL'13
//! "Optimizing data structures in high-level programs", section 3.2).
//!
//! | op | custom form | meaning |
//! |---|---|---|
//! | `struct.new(x1, ..., xn) -> struct<f1: T1, ...>` | `%s = struct.new %a, %b : struct<re: f64, im: f64>` | a record of the operands, one per field in order |
//! | `struct.get(s) {field = "f"} -> T` | `%x = struct.get %s["re"] : struct<re: f64, im: f64>` | field `f` of `s` |
//!
//! Both are pure. A struct type has at least one field and its names are
//! distinct (the parsers check this); fields may have any type, `vec`
//! included, and `vec<struct<...>>` is a vector of records.
//!
//! Construction-time rewrites (folds, so they also run in `canonicalize`):
//! `struct.get(struct.new(x1, ..., xn)) {field = fi}` is `xi`, and
//! `struct.new(struct.get(s) {f1}, ..., struct.get(s) {fn})`, reading every
//! field of `s` in order into a struct of `s`'s type, is `s`.
//!
//! At run time a struct is `RtValue::Struct` (the field values in order).
//! No backend compiles a struct: the `split-structs` pass (also run by
//! `lower`) replaces every struct value by its fields and every vector of
//! structs by one vector per field (`passes/src/split_structs.rs`).

use smallvec::{smallvec, SmallVec};

use ir::interp::{Interp, RtValue, RunError};
use ir::spec::{Arity, FoldResult, OpSpec, OpState, Registry, Traits};
use ir::{Attribute, Context, OpId, Type};

type Res = Result<SmallVec<[RtValue; 2]>, RunError>;

/// `struct.new`.
pub const NEW: &str = "struct.new";
/// `struct.get`.
pub const GET: &str = "struct.get";

/// The `field` attribute of a `struct.get`.
pub fn field_name(attrs: &[(String, Attribute)]) -> Option<&str> {
    attrs
        .iter()
        .find(|(k, _)| k == "field")
        .and_then(|(_, a)| a.as_str())
}

/// The position and type of the field a `struct.get` of a `ty` value reads.
fn field_of<'t>(ty: &'t Type, attrs: &[(String, Attribute)]) -> Result<(usize, &'t Type), String> {
    let Some(st) = ty.as_struct() else {
        return Err(format!("operand must be a struct, but got '{ty}'"));
    };
    let Some(name) = field_name(attrs) else {
        return Err("requires a string attribute 'field'".into());
    };
    st.field(name)
        .ok_or_else(|| format!("'{ty}' has no field '{name}'"))
}

fn verify_new(ctx: &Context, op: OpId) -> Result<(), String> {
    let r = ctx.ty(ctx.result(op, 0));
    let Some(st) = r.as_struct() else {
        return Err(format!("result must be a struct, but got '{r}'"));
    };
    let xs = ctx.operands(op);
    if xs.len() != st.fields.len() {
        return Err(format!(
            "'{r}' has {} field(s), but {} operand(s) given",
            st.fields.len(),
            xs.len()
        ));
    }
    for (k, ((name, t), &x)) in st.fields.iter().zip(xs).enumerate() {
        if ctx.ty(x) != t {
            return Err(format!(
                "operand #{k} has type '{}', but field '{name}' is '{t}'",
                ctx.ty(x)
            ));
        }
    }
    Ok(())
}

fn verify_get(ctx: &Context, op: OpId) -> Result<(), String> {
    let s = ctx.ty(ctx.operand(op, 0));
    let (_, t) = field_of(s, &ctx.op(op).attrs)?;
    let r = ctx.ty(ctx.result(op, 0));
    if r != t {
        return Err(format!("result must be '{t}', but got '{r}'"));
    }
    Ok(())
}

fn interp_new(_: &mut Interp, _: OpId, args: &[RtValue]) -> Res {
    Ok(smallvec![RtValue::Struct(std::rc::Rc::new(args.to_vec()))])
}

fn interp_get(it: &mut Interp, op: OpId, args: &[RtValue]) -> Res {
    let ctx = it.ctx;
    let s = ctx.ty(ctx.operand(op, 0));
    let (k, _) = field_of(s, &ctx.op(op).attrs).map_err(|m| RunError::at(ctx, op, m))?;
    match &args[0] {
        RtValue::Struct(xs) if k < xs.len() => Ok(smallvec![xs[k].clone()]),
        _ => Err(RunError::at(ctx, op, "expected a struct value")),
    }
}

/// `get(new(x1, ..., xn)) {fi}` is `xi`.
fn fold_get(ctx: &Context, st: &OpState) -> Option<SmallVec<[FoldResult; 1]>> {
    let s = *st.operands.first()?;
    let d = ctx.def_op_named(s, NEW)?;
    let (k, _) = field_of(ctx.ty(s), &st.attrs).ok()?;
    let x = *ctx.operands(d).get(k)?;
    (Some(ctx.ty(x)) == st.result_types.first()).then(|| smallvec![FoldResult::Value(x)])
}

/// `new(get(s) {f1}, ..., get(s) {fn})` of every field of `s` in order is `s`.
fn fold_new(ctx: &Context, st: &OpState) -> Option<SmallVec<[FoldResult; 1]>> {
    let ty = st.result_types.first()?;
    let fields = &ty.as_struct()?.fields;
    let mut source = None;
    if st.operands.len() != fields.len() {
        return None;
    }
    for (&x, (name, _)) in st.operands.iter().zip(fields) {
        let g = ctx.def_op_named(x, GET)?;
        if field_name(&ctx.op(g).attrs) != Some(name.as_str()) {
            return None;
        }
        let s = ctx.operand(g, 0);
        if *source.get_or_insert(s) != s {
            return None;
        }
    }
    let s = source?;
    (ctx.ty(s) == ty).then(|| smallvec![FoldResult::Value(s)])
}

fn infer_get(ts: &[Type], attrs: &[(String, Attribute)]) -> Option<SmallVec<[Type; 2]>> {
    let (_, t) = field_of(ts.first()?, attrs).ok()?;
    Some(smallvec![t.clone()])
}

/// Builds the value of struct type `ty` (or of any type) that has
/// `leaf(t)` at every non-struct field: used for the zero or identity of
/// a struct-valued reduction.
pub fn build_fields(
    b: &mut ir::Builder,
    ty: &Type,
    leaf: &mut dyn FnMut(&mut ir::Builder, &Type) -> Option<ir::ValueId>,
) -> Option<ir::ValueId> {
    match ty.as_struct() {
        Some(st) => {
            let xs = st
                .fields
                .iter()
                .map(|(_, t)| build_fields(b, t, leaf))
                .collect::<Option<Vec<_>>>()?;
            Some(b.op1(NEW, &xs, ty.clone(), vec![]))
        }
        None => leaf(b, ty),
    }
}

/// Registers `struct.new` and `struct.get`.
pub fn register(r: &mut Registry) {
    r.register(
        OpSpec::new(NEW, "a record of its operands, one per field")
            .operands(Arity::AtLeast(1))
            .results(Arity::Exactly(1))
            .traits(Traits::PURE)
            .poison(ir::poison::PoisonRule::Carries)
            .assembly_format("operands attr-dict : type(results)")
            .verify(verify_new)
            .fold(fold_new)
            .interpret(interp_new),
    );
    r.register(
        OpSpec::new(GET, "one field of a record")
            .operands(Arity::Exactly(1))
            .results(Arity::Exactly(1))
            .traits(Traits::PURE)
            .assembly_format("operands [ $field ] attr-dict : type(operands)")
            .infer(infer_get)
            .verify(verify_get)
            .fold(fold_get)
            .interpret(interp_get),
    );
}
