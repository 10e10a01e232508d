//! Proves reads in bounds: a `vec.get(v, i)` whose index `i` is the
//! induction variable of an enclosing `gen.loop` whose size is `vec.len(v)`
//! (the same SSA value, or a length equated with it by a dominating
//! `scf.assert(arith.cmpi eq ...)`) can never fault, and gets the unit
//! attribute `in_bounds`. Code generators may then omit the bounds check
//! (L0's certificates for bounds checks, Henriksen 2014, play this role).
//! Transformations that clone a read to indices inside the same range
//! (e.g. `split-reductions`) keep the attribute.

use std::collections::HashMap;

use ir::{Attribute, Context, OpId, ValueId};

/// Length values known equal, from `scf.assert(arith.cmpi eq, a, b)` ops in
/// the module body's functions (an assert faults before anything after it runs).
fn equal_lengths(ctx: &Context) -> HashMap<ValueId, ValueId> {
    let mut rep: HashMap<ValueId, ValueId> = HashMap::new();
    fn find(rep: &HashMap<ValueId, ValueId>, mut v: ValueId) -> ValueId {
        while let Some(&p) = rep.get(&v) {
            if p == v {
                break;
            }
            v = p;
        }
        v
    }
    for op in ctx.walk_all() {
        if !ctx.is(op, "scf.assert") {
            continue;
        }
        let c = ctx.operand(op, 0);
        let Some(cmp) = ctx.def_op_named(c, "arith.cmpi") else {
            continue;
        };
        if ctx.attr(cmp, "predicate").and_then(|a| a.as_str()) != Some("eq") {
            continue;
        }
        let (a, b) = (
            find(&rep, ctx.operand(cmp, 0)),
            find(&rep, ctx.operand(cmp, 1)),
        );
        if a != b {
            rep.insert(a, b);
        }
    }
    let keys: Vec<ValueId> = rep.keys().copied().collect();
    keys.into_iter().map(|k| (k, find(&rep, k))).collect()
}

/// Marks provably in-bounds `vec.get` ops; returns how many were marked.
pub fn mark_in_bounds(ctx: &mut Context) -> u64 {
    let eq = equal_lengths(ctx);
    let canon = |v: ValueId| eq.get(&v).copied().unwrap_or(v);
    let mut marks: Vec<OpId> = Vec::new();
    for op in ctx.walk_all() {
        if !ctx.is(op, "vec.get") || ctx.attr(op, "in_bounds").is_some() {
            continue;
        }
        let (v, i) = (ctx.operand(op, 0), ctx.operand(op, 1));
        // Is `i` the induction variable of an enclosing gen.loop?
        let Some(b) = ctx.value_block(i) else {
            continue;
        };
        let Some(l) = ctx.block_parent_op(b) else {
            continue;
        };
        if !ctx.is(l, "gen.loop") || ctx.block_args(b).first() != Some(&i) {
            continue;
        }
        let size = ctx.operand(l, 0);
        let len_of_v = ctx
            .def_op_named(size, "vec.len")
            .is_some_and(|len| ctx.operand(len, 0) == v);
        let same_len = || {
            ctx.uses(v)
                .iter()
                .any(|u| ctx.is(u.op, "vec.len") && canon(ctx.result(u.op, 0)) == canon(size))
        };
        if len_of_v || same_len() {
            marks.push(op);
        }
    }
    for &op in &marks {
        ctx.set_attr(op, "in_bounds", Attribute::Unit);
    }
    marks.len() as u64
}
