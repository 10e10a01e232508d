//! The `ub` dialect (MLIR's): `ub.poison`, a value whose use is undefined
//! behaviour.
//!
//! ```text
//! %p = ub.poison : i32                                  // custom form
//! %p = "ub.poison"() {value = #ub.poison} : () -> i32   // generic (MLIR 17's)
//! ```
//!
//! The result is a scalar (an integer, `index` or a float). L0 gives the op
//! the meaning of its deferred faults (`ir::poison`, after LLVM's poison
//! values): it is a pure op that faults when it runs, with the message
//! `ub.poison was executed`. So
//!
//! - the interpreter faults at the op, located, and in its deferred-fault
//!   mode (`--defer-faults`) yields poison, which stops the run only where
//!   it reaches a result, a branch condition, a bound or an index;
//! - the native backends and the GPU kernels fault at the op too: `lower`'s
//!   first phase makes it `scf.assert false` and a zero of its type, so every
//!   backend compiles the same two ops;
//! - a pass may erase it where its result is unused (IR-SPEC §3: a pure op's
//!   fault goes with it).
//!
//! Folds (MLIR's, from `constFoldBinaryOp` and `SelectOp::fold`): a pure
//! `arith`/`math` op with a poison operand is poison, and `arith.select`
//! with a poison arm is its other arm. A program whose result depends on
//! poison has no defined result, so these folds, which may pick a value
//! where the unfolded program faults, are refinements, as in MLIR and LLVM.

use smallvec::{smallvec, SmallVec};

use ir::interp::{Interp, RtValue, RunError};
use ir::spec::{Arity, OpSpec, OpState, Registry, Traits};
use ir::{Builder, Context, OpId, Type, ValueId};

/// The fault of a `ub.poison` that runs.
pub const MESSAGE: &str = "ub.poison was executed: the program's behaviour is undefined";

/// Builds `ub.poison : ty`.
pub fn poison(b: &mut Builder, ty: Type) -> ValueId {
    b.op1("ub.poison", &[], ty, vec![])
}

/// Whether `v` is the result of a `ub.poison`.
pub fn is_poison(ctx: &Context, v: ValueId) -> bool {
    ctx.def_op_named(v, "ub.poison").is_some()
}

fn verify(ctx: &Context, op: OpId) -> Result<(), String> {
    let t = ctx.ty(ctx.result(op, 0));
    if !t.is_scalar() {
        return Err(format!(
            "result must be a scalar (an integer, index or float), but got '{t}'"
        ));
    }
    match ctx.attr(op, "value") {
        None => Ok(()),
        Some(a) if a.to_string() == "#ub.poison" => Ok(()),
        Some(a) => Err(format!("attribute 'value' must be #ub.poison, but got {a}")),
    }
}

fn interpret(it: &mut Interp, op: OpId, _: &[RtValue]) -> Result<SmallVec<[RtValue; 2]>, RunError> {
    Err(RunError {
        loc: it.ctx.loc(op),
        message: MESSAGE.into(),
    })
}

/// `lower`'s first phase: `scf.assert false` (the fault, at the op's
/// location) and a zero of the type, which every backend compiles.
fn lower(b: &mut Builder, st: &OpState) -> Option<SmallVec<[ValueId; 2]>> {
    let ty = st.result_types.first()?.clone();
    if !ty.is_scalar() {
        return None;
    }
    let f = b.constant(ir::Attribute::Bool(false), &Type::I1);
    b.op(
        "scf.assert",
        &[f],
        &[],
        vec![("msg".into(), ir::Attribute::Str(MESSAGE.into()))],
    );
    Some(smallvec![b.constant(crate::vec::zero_attr(&ty), &ty)])
}

/// A pure `arith`/`math` op with a poison operand is poison (at the
/// location of the operand's `ub.poison`, so the fault does not move).
fn propagate(b: &mut Builder, st: &OpState) -> Option<SmallVec<[ValueId; 2]>> {
    let ty = match st.result_types.as_slice() {
        [t] if t.is_scalar() => t.clone(),
        _ => return None,
    };
    let src = st
        .operands
        .iter()
        .find_map(|&v| b.ctx.def_op_named(v, "ub.poison"))?;
    // The new poison faults where the one it replaces did.
    let loc = std::mem::replace(&mut b.loc, b.ctx.loc(src));
    let p = poison(b, ty);
    b.loc = loc;
    Some(smallvec![p])
}

/// `arith.select %c, %p, %x` is `%x` and `arith.select %c, %x, %p` is `%x`
/// where `%p` is poison.
fn select_arm(b: &mut Builder, st: &OpState) -> Option<SmallVec<[ValueId; 2]>> {
    let &[_, t, f] = st.operands.as_slice() else {
        return None;
    };
    if is_poison(b.ctx, t) {
        Some(smallvec![f])
    } else if is_poison(b.ctx, f) {
        Some(smallvec![t])
    } else {
        None
    }
}

/// Registers `ub.poison`, and its folds on the pure `arith` and `math` ops
/// registered before it.
pub fn register(r: &mut Registry) {
    r.register(
        OpSpec::new(
            "ub.poison",
            "a value whose use is undefined behaviour (faults where it runs)",
        )
        .operands(Arity::Exactly(0))
        .results(Arity::Exactly(1))
        .traits(Traits::PURE)
        .assembly_format("attr-dict : type(results)")
        .verify(verify)
        .interpret(interpret)
        .lowering("gen", lower),
    );
    let names: Vec<&'static str> = r
        .specs()
        .iter()
        .filter(|s| s.name.starts_with("arith.") || s.name.starts_with("math."))
        .filter(|s| s.traits.contains(Traits::PURE) && s.regions == Arity::Exactly(0))
        .filter(|s| s.name != "arith.constant")
        .map(|s| s.name)
        .collect();
    for name in names {
        let spec = r.spec_mut(name).expect("registered");
        if name == "arith.select" {
            spec.rewrites.push(select_arm);
        } else {
            spec.rewrites.push(propagate);
        }
    }
}
