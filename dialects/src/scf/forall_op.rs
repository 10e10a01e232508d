//! `scf.forall`: a parallel loop over chunks (MLIR's `scf.forall` without
//! shared outputs).
//!
//! `scf.forall (%c) in (%n) { ... scf.yield }` runs its body once for each
//! `c` in `[0, n)`. The iterations are independent: each may read anything
//! in scope and write only memory no other iteration touches (its slice of
//! an array, its own slot of a partial-results array), so they may run in
//! any order or at once. The op has no results; a negative `n` runs nothing.
//!
//! The interpreter runs the iterations in order and stops at the first
//! fault. The native backends compile the body as a function of `c` and run
//! the iterations on a pool of threads; a fault is reported as the one of the
//! lowest-numbered faulting iteration, so a run reports the same fault for
//! every thread count. The parallel decomposition of `gen.loop`
//! (`passes::parallel`, issue 8) is what builds it.

use smallvec::SmallVec;

use ir::ast::SyntaxError;
use ir::custom::{CustomParser, ParsedOp, ParsedRegion};
use ir::interp::{Interp, RtValue, RunError};
use ir::printer::Printer;
use ir::{Builder, Context, OpId, OpState, Type};

use super::{
    constant_int, ensure_yield, expect_region_or_empty, inline_region, region_at, region_is_pure,
    single_block, terminator_named, types_of, Values,
};

pub(super) fn verify(ctx: &Context, op: OpId) -> Result<(), String> {
    let t = ctx.ty(ctx.operand(op, 0));
    if *t != Type::Index {
        return Err(format!(
            "the iteration count (operand #0) must be of index type, but got '{t}'"
        ));
    }
    let Some(b) = single_block(ctx, ctx.regions(op)[0]) else {
        return Err("body region must have exactly one block".into());
    };
    if types_of(ctx, ctx.block_args(b)) != [Type::Index] {
        return Err(
            "the body must have exactly one argument (the iteration), of index type".into(),
        );
    }
    if terminator_named(ctx, b, "scf.yield").is_none() {
        return Err("body region must end with 'scf.yield'".into());
    }
    Ok(())
}

/// Constant `n <= 0`: nothing runs.
pub(super) fn fold_zero_trip(b: &mut Builder, st: &OpState) -> Option<Values> {
    (constant_int(b.ctx, *st.operands.first()?)? <= 0).then(SmallVec::new)
}

/// Constant `n == 1`: the body runs once, inline, with `c = 0`.
pub(super) fn inline_single_iteration(b: &mut Builder, st: &OpState) -> Option<Values> {
    if constant_int(b.ctx, *st.operands.first()?)? != 1 || st.regions.len() != 1 {
        return None;
    }
    let zero = b.op1(
        "arith.constant",
        &[],
        Type::Index,
        vec![("value".to_string(), ir::Attribute::int(0, Type::Index))],
    );
    inline_region(b, st.regions[0], &[zero])
}

/// A body without effects does nothing.
pub(super) fn remove_dead(b: &mut Builder, st: &OpState) -> Option<Values> {
    (st.regions.len() == 1 && region_is_pure(b.ctx, st.regions[0])).then(SmallVec::new)
}

pub(super) fn interpret(
    it: &mut Interp,
    op: OpId,
    args: &[RtValue],
) -> Result<SmallVec<[RtValue; 2]>, RunError> {
    let ctx = it.ctx;
    let n = args
        .first()
        .and_then(|x| x.as_int())
        .ok_or_else(|| RunError::at(ctx, op, "iteration count is not an integer"))?;
    let body = region_at(ctx, op, 0)?;
    for c in 0..n.max(0) {
        it.run_region(body, &[RtValue::Int(c)])?;
    }
    Ok(SmallVec::new())
}

pub(super) fn print(p: &mut Printer, op: OpId) -> std::fmt::Result {
    let ctx = p.ctx();
    let blk = ctx.regions(op).first().and_then(|&r| single_block(ctx, r));
    let Some(blk) = blk.filter(|&b| ctx.block_args(b).len() == 1) else {
        p.w(" <<malformed scf.forall>>");
        return Ok(());
    };
    let c = ctx.block_args(blk)[0];
    let n = ctx.operand(op, 0);
    p.w(" (");
    p.define_arg(c);
    p.value(c);
    p.w(") in (");
    p.value(n);
    p.w(") ");
    p.region(ctx.regions(op)[0], false);
    p.attr_dict(op, &[]);
    Ok(())
}

pub(super) fn parse(cp: &mut CustomParser) -> Result<ParsedOp, SyntaxError> {
    let mut inner = cp.expect_paren()?;
    let c = inner.expect_value()?;
    inner.finish()?;
    cp.expect_keyword("in")?;
    let mut inner = cp.expect_paren()?;
    let n = inner.expect_value()?;
    inner.finish()?;
    let mut region = expect_region_or_empty(cp)?;
    ensure_yield(&mut region);
    let mut attrs = Vec::new();
    cp.optional_attr_dict(&mut attrs);
    Ok(ParsedOp {
        successors: Vec::new(),
        operands: vec![(n, Some(Type::Index))],
        result_types: vec![],
        attrs,
        regions: vec![ParsedRegion {
            region,
            entry_args: Some(vec![super::for_op::plain_arg(c, Type::Index)?]),
        }],
    })
}
