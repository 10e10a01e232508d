//! `scf.execute_region` (MLIR's): runs its region once, in place, and
//! returns what the region's `scf.yield` yields.
//!
//! `%r = scf.execute_region -> (i64) { ... scf.yield %x : i64 }` (no
//! results: `scf.execute_region { ... }`). The region's entry block has no
//! arguments. As in MLIR, the region may hold several blocks joined by `cf`
//! branches, each block ending in a branch or an `scf.yield`.
//! Its effects are those of its ops. Canonicalization inlines a region of
//! one block (MLIR's single-block inliner), and so does the lowering (phase
//! `gen`), so no later pass or backend sees it; `convert-scf-to-cf` moves
//! a region of several blocks into the function body; the interpreter runs
//! the region.

use smallvec::SmallVec;

use ir::ast::SyntaxError;
use ir::custom::{CustomParser, ParsedOp, ParsedRegion};
use ir::interp::{Interp, RtValue, RunError};
use ir::printer::Printer;
use ir::{Builder, Context, OpId, OpState};

use super::{
    ensure_yield, expect_region_or_empty, inline_region, parse_result_types, print_result_types,
    single_block, terminator_named, Values,
};

pub(super) fn verify(ctx: &Context, op: OpId) -> Result<(), String> {
    let r = ctx.regions(op)[0];
    let blocks = &ctx.region(r).blocks;
    if blocks.len() > 1 {
        if !ctx.block_args(blocks[0]).is_empty() {
            return Err("the region's entry block must have no arguments".into());
        }
        for &b in blocks {
            let ok = ctx
                .terminator(b)
                .is_some_and(|t| ctx.is(t, "scf.yield") || !ctx.successors(t).is_empty());
            if !ok {
                return Err(
                    "each block of the region must end with 'scf.yield' or a branch".into(),
                );
            }
        }
        return Ok(());
    }
    let Some(b) = single_block(ctx, r) else {
        return Err("the region must have exactly one block".into());
    };
    if !ctx.block_args(b).is_empty() {
        return Err("the region's block must have no arguments".into());
    }
    if terminator_named(ctx, b, "scf.yield").is_none() {
        return Err("the region must end with 'scf.yield'".into());
    }
    Ok(())
}

/// The region's ops, in place of the op (MLIR's `SingleBlockExecuteInliner`;
/// also the lowering).
pub(super) fn inline(b: &mut Builder, st: &OpState) -> Option<Values> {
    let &r = st.regions.first()?;
    inline_region(b, r, &[])
}

pub(super) fn interpret(
    it: &mut Interp,
    op: OpId,
    _args: &[RtValue],
) -> Result<SmallVec<[RtValue; 2]>, RunError> {
    // One block or several: run_region follows the branches.
    let r = it
        .ctx
        .regions(op)
        .first()
        .copied()
        .filter(|&r| !it.ctx.region(r).blocks.is_empty())
        .ok_or_else(|| RunError::at(it.ctx, op, "region #0 is missing or malformed"))?;
    it.run_region(r, &[])
}

pub(super) fn print(p: &mut Printer, op: OpId) -> std::fmt::Result {
    let ctx = p.ctx();
    let Some(&r) = ctx.regions(op).first() else {
        p.w(" <<malformed scf.execute_region>>");
        return Ok(());
    };
    print_result_types(p, op);
    p.w(" ");
    p.region(r, false);
    p.attr_dict(op, &[]);
    Ok(())
}

pub(super) fn parse(cp: &mut CustomParser) -> Result<ParsedOp, SyntaxError> {
    let result_types = parse_result_types(cp)?;
    let mut region = expect_region_or_empty(cp)?;
    if result_types.is_empty() {
        ensure_yield(&mut region);
    }
    let mut attrs = Vec::new();
    cp.optional_attr_dict(&mut attrs);
    Ok(ParsedOp {
        successors: Vec::new(),
        operands: vec![],
        result_types,
        attrs,
        regions: vec![ParsedRegion {
            region,
            entry_args: None,
        }],
    })
}
