//! `gen.running`: the running fold of a reduce or scan generator.
//!
//! ```text
//! %r = gen.running %h : !gen.scan<f64>
//! "gen.running"(%h) : (!gen.reduce<i64>) -> i64
//! ```
//!
//! Inside the body of the `gen.loop` that owns handle `%h` (of a reduce or
//! scan generator with element type `T`), `%r : T` is the generator's
//! accumulator at that point: the init (or identity) folded with every value
//! emitted to `%h` so far, in index order, including this iteration's emits
//! that come before it. Right after a scan's emit it is the entry that emit
//! appended, which is how `fuse` gives a consumer of a scan the element it
//! reads (issue 9, item 3) without materializing the scan.
//!
//! Reading the accumulator makes the iterations of its loop depend on each
//! other, so a loop whose body reads `gen.running` of its own generators
//! stays sequential (no parallel chunks, no GPU kernel). It is an effect on
//! the generator (it reads it): it keeps its place among the emits.

use smallvec::{smallvec, SmallVec};

use ir::interp::{Interp, RtValue, RunError};
use ir::spec::{Arity, OpSpec, Registry, Traits};
use ir::types::TypeParam;
use ir::{Attribute, Builder, Context, OpId, Type, ValueId};

use super::{handle_owner, GenData};

/// `gen.running`.
pub const RUNNING: &str = "gen.running";

/// The element type of a reduce or scan handle type.
fn folded_type(ty: &Type) -> Option<&Type> {
    match ty {
        Type::Dialect(d) if d.dialect == "gen" && matches!(d.name.as_str(), "reduce" | "scan") => {
            match d.params.as_slice() {
                [TypeParam::Type(t)] => Some(t),
                _ => None,
            }
        }
        _ => None,
    }
}

/// Builds `gen.running(h)` at the builder's insertion point.
pub fn running(b: &mut Builder, h: ValueId) -> ValueId {
    let t = folded_type(b.ctx.ty(h))
        .cloned()
        .expect("gen.running of a reduce or scan handle");
    b.op1(RUNNING, &[h], t, vec![])
}

/// The `gen.running` ops that read `handle`.
pub fn reads_of(ctx: &Context, handle: ValueId) -> Vec<OpId> {
    ctx.uses(handle)
        .iter()
        .filter(|u| ctx.is(u.op, RUNNING))
        .map(|u| u.op)
        .collect()
}

/// Whether the body of loop `op` reads the running fold of one of `op`'s
/// own generators (then its iterations run in order).
pub fn reads_own_generators(ctx: &Context, op: OpId) -> bool {
    super::handles(ctx, op)
        .iter()
        .any(|&h| !reads_of(ctx, h).is_empty())
}

fn infer(ts: &[Type], _: &[(String, Attribute)]) -> Option<SmallVec<[Type; 2]>> {
    Some(smallvec![folded_type(ts.first()?)?.clone()])
}

fn verify(ctx: &Context, op: OpId) -> Result<(), String> {
    let h = ctx.operand(op, 0);
    let ty = ctx.ty(h);
    let Some(t) = folded_type(ty) else {
        return Err(format!(
            "operand #0 must be a reduce or scan handle (!gen.reduce<T> or !gen.scan<T>), got '{ty}'"
        ));
    };
    let outside = || "handle must be a block argument of an enclosing 'gen.loop'".to_string();
    let owner = handle_owner(ctx, h).ok_or_else(outside)?;
    if !ctx.is_ancestor(owner, op) {
        return Err(outside());
    }
    let r = ctx.ty(ctx.result(op, 0));
    if r != t {
        return Err(format!(
            "result has type '{r}', but the handle '{ty}' folds '{t}'"
        ));
    }
    Ok(())
}

fn interp(it: &mut Interp, op: OpId, args: &[RtValue]) -> Result<SmallVec<[RtValue; 2]>, RunError> {
    let ctx = it.ctx;
    let st = super::gen_state(ctx, op, &args[0])?
        .try_borrow()
        .map_err(|_| RunError::at(ctx, op, "generator is busy"))?;
    match &st.data {
        GenData::Reduce(acc) | GenData::Scan(acc, _) => Ok(smallvec![acc.clone()]),
        _ => Err(RunError::at(ctx, op, "not a reduce or scan generator")),
    }
}

/// Registers `gen.running`.
pub fn register(r: &mut Registry) {
    r.register(
        OpSpec::new(RUNNING, "the running fold of a reduce or scan generator")
            .operands(Arity::Exactly(1))
            .results(Arity::Exactly(1))
            .traits(Traits::READS)
            .assembly_format("operands attr-dict : type(first)")
            .infer(infer)
            .verify(verify)
            .interpret(interp),
    );
}
