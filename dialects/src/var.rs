//! The `var` dialect: LMS's mutable variables (IR-SPEC §3 `var`).
//!
//! | op | custom form | effect |
//! |---|---|---|
//! | `var.new(init) -> var<T>` | `%v = var.new %x : f64` | allocates a variable holding `init` |
//! | `var.get(v) -> T` | `%x = var.get %v : var<f64>` | reads `v` |
//! | `var.set(v, x)` | `var.set %v, %x : var<f64>` | writes `v` |
//!
//! `T` is any type but another `var`. None of the ops is pure: a `get`
//! orders against the `set`s of the same variable, and passes that know
//! nothing of variables keep the ops in place. At run time a `var<T>` is a
//! one-element buffer (`RtValue::Arr`), so a variable captured by a region
//! (a loop body, a branch) is shared with it, as in LMS. There are no
//! faults.
//!
//! Lowering (the `lower` pass, in `passes/src/mem2reg.rs`): `mem2reg` first
//! promotes every variable whose address does not escape to SSA values
//! (`scf.if` results, `scf.for` iter_args); at the `arr` phase the variables
//! left become one-element `arr` buffers (`var.new` an `arr.alloc` of 1 and
//! a store, `get`/`set` an in-bounds load/store at 0), which the native
//! backends compile.

use std::cell::RefCell;
use std::rc::Rc;

use smallvec::{smallvec, SmallVec};

use ir::interp::{Interp, RtValue, RunError};
use ir::spec::{Arity, OpSpec, Registry, Traits};
use ir::{Attribute, Context, OpId, Type};

type Res = Result<SmallVec<[RtValue; 2]>, RunError>;

/// The value type of variable `t` (`var<T>` -> `T`).
fn held(t: &Type) -> Option<&Type> {
    match t {
        Type::Var(e) => Some(e),
        _ => None,
    }
}

fn verify_new(ctx: &Context, op: OpId) -> Result<(), String> {
    let x = ctx.ty(ctx.operand(op, 0));
    if matches!(x, Type::Var(_)) {
        return Err("a variable cannot hold a variable".into());
    }
    let r = ctx.ty(ctx.result(op, 0));
    if held(r) != Some(x) {
        return Err(format!("result must be 'var<{x}>', but got '{r}'"));
    }
    Ok(())
}

fn verify_get(ctx: &Context, op: OpId) -> Result<(), String> {
    let v = ctx.ty(ctx.operand(op, 0));
    let Some(t) = held(v) else {
        return Err(format!("operand must be a var, but got '{v}'"));
    };
    let r = ctx.ty(ctx.result(op, 0));
    if r != t {
        return Err(format!("result must be '{t}', but got '{r}'"));
    }
    Ok(())
}

fn verify_set(ctx: &Context, op: OpId) -> Result<(), String> {
    let v = ctx.ty(ctx.operand(op, 0));
    let Some(t) = held(v) else {
        return Err(format!("operand #0 must be a var, but got '{v}'"));
    };
    let x = ctx.ty(ctx.operand(op, 1));
    if x != t {
        return Err(format!("the value must have type '{t}', but got '{x}'"));
    }
    // Iterations of a data-parallel body are independent (IR-SPEC §3
    // `gen`): none may write a variable that outlives the iteration.
    let var = ctx.operand(op, 0);
    let home = match ctx.value(var).def {
        ir::context::ValueDef::Result(d, _) => ctx.op(d).parent,
        ir::context::ValueDef::BlockArg(b, _) => Some(b),
    };
    let mut cur = ctx.parent_op(op);
    while let Some(p) = cur {
        if home.is_some_and(|h| ctx.block_in_op(h, p)) {
            break;
        }
        let name = ctx.op_name(p);
        if PARALLEL.contains(&name) {
            return Err(format!(
                "writes a variable defined outside the '{name}' body, whose iterations are independent"
            ));
        }
        cur = ctx.parent_op(p);
    }
    Ok(())
}

/// Ops whose bodies run as independent (data-parallel) iterations.
const PARALLEL: &[&str] = &["gen.loop", "vec.map", "vec.filter", "scf.forall"];

fn cell<'a>(
    ctx: &Context,
    op: OpId,
    v: &'a RtValue,
) -> Result<&'a Rc<RefCell<Vec<RtValue>>>, RunError> {
    match v {
        RtValue::Arr(c) => Ok(c),
        _ => Err(RunError::at(ctx, op, "expected a variable")),
    }
}

fn interp_new(_: &mut Interp, _: OpId, args: &[RtValue]) -> Res {
    Ok(smallvec![RtValue::Arr(Rc::new(RefCell::new(vec![args
        [0]
    .clone()])))])
}

fn interp_get(it: &mut Interp, op: OpId, args: &[RtValue]) -> Res {
    let c = cell(it.ctx, op, &args[0])?.borrow();
    match c.first() {
        Some(x) => Ok(smallvec![x.clone()]),
        None => Err(RunError::at(it.ctx, op, "expected a variable")),
    }
}

fn interp_set(it: &mut Interp, op: OpId, args: &[RtValue]) -> Res {
    let c = cell(it.ctx, op, &args[0])?;
    let mut c = c
        .try_borrow_mut()
        .map_err(|_| RunError::at(it.ctx, op, "variable is already borrowed"))?;
    match c.first_mut() {
        Some(slot) => *slot = args[1].clone(),
        None => return Err(RunError::at(it.ctx, op, "expected a variable")),
    }
    Ok(smallvec![])
}

fn infer_var(ts: &[Type], _: &[(String, Attribute)]) -> Option<SmallVec<[Type; 2]>> {
    Some(smallvec![Type::var(ts.first()?.clone())])
}

/// Registers `var.new`, `var.get`, `var.set`.
pub fn register(r: &mut Registry) {
    let one = Arity::Exactly(1);
    r.register(
        OpSpec::new("var.new", "a new mutable variable holding a value")
            .operands(one)
            .results(one)
            .traits(Traits::ALLOCATES)
            .assembly_format("operands attr-dict : type(operands)")
            .infer(infer_var)
            .verify(verify_new)
            .interpret(interp_new),
    );
    r.register(
        OpSpec::new("var.get", "the value a variable holds")
            .operands(one)
            .results(one)
            .traits(Traits::READS)
            .assembly_format("operands attr-dict : type(operands)")
            .infer(crate::util::infer_elem)
            .verify(verify_get)
            .interpret(interp_get),
    );
    r.register(
        OpSpec::new("var.set", "replaces the value a variable holds")
            .operands(Arity::Exactly(2))
            .traits(Traits::WRITES)
            .assembly_format("operands attr-dict : type(first)")
            .verify(verify_set)
            .interpret(interp_set),
    );
}
