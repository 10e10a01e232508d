//! `scf.if`.

use smallvec::{smallvec, SmallVec};

use ir::ast::SyntaxError;
use ir::custom::{CustomParser, ParsedOp, ParsedRegion};
use ir::interp::{Interp, RtValue, RunError};
use ir::printer::Printer;
use ir::{Builder, Context, OpId, OpState, Type};

use super::{
    check_yield_region, constant_int, ensure_yield, expect_region_or_empty, inline_region,
    is_empty_yield_region, parse_result_types, print_result_types, region_at, region_is_pure,
    single_block, yield_of, Values,
};

pub(super) fn verify(ctx: &Context, op: OpId) -> Result<(), String> {
    let c = ctx.ty(ctx.operand(op, 0));
    if *c != Type::I1 {
        return Err(format!(
            "operand #0 (the condition) must be i1, but got '{c}'"
        ));
    }
    for (i, &r) in ctx.regions(op).iter().enumerate() {
        let what = if i == 0 {
            "'then' region"
        } else {
            "'else' region"
        };
        check_yield_region(ctx, r, what)?;
    }
    Ok(())
}

/// The two yields, when both regions have the expected shape and yield one
/// value per result.
fn yields(ctx: &Context, st: &OpState) -> Option<(OpId, OpId)> {
    if st.operands.len() != 1 || st.regions.len() != 2 {
        return None;
    }
    let (_, t) = yield_of(ctx, st.regions[0])?;
    let (_, e) = yield_of(ctx, st.regions[1])?;
    let n = st.result_types.len();
    (ctx.operands(t).len() == n && ctx.operands(e).len() == n).then_some((t, e))
}

/// Constant condition: inline the taken branch.
pub(super) fn fold_constant_condition(b: &mut Builder, st: &OpState) -> Option<Values> {
    yields(b.ctx, st)?;
    let c = constant_int(b.ctx, st.operands[0])?;
    let taken = st.regions[if c != 0 { 0 } else { 1 }];
    inline_region(b, taken, &[])
}

/// A condition already decided by an enclosing `scf.if` on the same value:
/// inside its then-branch the condition holds, inside its else-branch it
/// does not, so the taken branch is inlined (a guard nested in the same
/// guard, as code motion's guarded hoisting makes them, disappears).
pub(super) fn fold_known_condition(b: &mut Builder, st: &OpState) -> Option<Values> {
    yields(b.ctx, st)?;
    let c = st.operands[0];
    let (mut blk, _) = b.insertion_point();
    loop {
        let p = b.ctx.block_parent_op(blk)?;
        if b.ctx.has_traits(p, ir::Traits::ISOLATED_FROM_ABOVE) {
            return None;
        }
        if b.ctx.is(p, "scf.if") && b.ctx.operand(p, 0) == c {
            let then_r = b.ctx.regions(p)[0];
            let in_then = b.ctx.region(then_r).blocks.contains(&blk);
            let taken = st.regions[if in_then { 0 } else { 1 }];
            return inline_region(b, taken, &[]);
        }
        blk = b.ctx.op(p).parent?;
    }
}

/// MLIR's trivial if to select: when both branches only yield values
/// defined outside them, the results are `arith.select`s of the
/// condition (no branch, nothing evaluated that was not already).
pub(super) fn to_select(b: &mut Builder, st: &OpState) -> Option<Values> {
    if st.result_types.is_empty() {
        return None;
    }
    let (ty, ey) = yields(b.ctx, st)?;
    let ctx = &*b.ctx;
    let only_yield = |r| single_block(ctx, r).is_some_and(|blk| ctx.block_ops(blk).len() == 1);
    if !only_yield(st.regions[0]) || !only_yield(st.regions[1]) {
        return None;
    }
    let tv: Values = SmallVec::from_slice(ctx.operands(ty));
    let ev: Values = SmallVec::from_slice(ctx.operands(ey));
    let c = st.operands[0];
    let mut out = Values::new();
    for ((&t, &e), rty) in tv.iter().zip(&ev).zip(&st.result_types) {
        out.push(if t == e {
            t
        } else {
            b.op1("arith.select", &[c, t, e], rty.clone(), vec![])
        });
    }
    Some(out)
}

/// Results yielded as the same value by both branches are that value; in
/// canonicalize, unused results are dropped; result-less ifs with pure
/// branches disappear.
pub(super) fn simplify_results(b: &mut Builder, st: &OpState) -> Option<Values> {
    let (ty, ey) = yields(b.ctx, st)?;
    let ctx = &*b.ctx;
    let tv: Values = SmallVec::from_slice(ctx.operands(ty));
    let ev: Values = SmallVec::from_slice(ctx.operands(ey));
    let n = st.result_types.len();
    let same: Vec<bool> = (0..n).map(|i| tv[i] == ev[i]).collect();
    let unused: Vec<bool> = (0..n)
        .map(|i| st.existing.is_some_and(|op| ctx.unused(ctx.result(op, i))))
        .collect();
    let keep: Vec<bool> = (0..n).map(|i| !same[i] && !unused[i]).collect();
    let pure = region_is_pure(ctx, st.regions[0]) && region_is_pure(ctx, st.regions[1]);
    if n == 0 {
        return pure.then(SmallVec::new);
    }
    if keep.iter().all(|&k| k) {
        return None;
    }
    if pure && !keep.iter().any(|&k| k) {
        // Every result is a shared value or unused: the op is not needed.
        return Some(tv);
    }
    // Rebuild with the kept results only, moving the branches' ops over.
    let mut new_regions: SmallVec<[_; 2]> = SmallVec::new();
    for (&r, y) in st.regions.iter().zip([ty, ey]) {
        let old = single_block(b.ctx, r)?;
        let (nr, nb) = b.ctx.new_region_with_block(&[]);
        b.ctx.splice_block(old, nb, None);
        let kept: Values = b
            .ctx
            .operands(y)
            .iter()
            .zip(&keep)
            .filter(|(_, &k)| k)
            .map(|(&v, _)| v)
            .collect();
        b.ctx.set_operands(y, &kept);
        new_regions.push(nr);
    }
    let mut nst = st.clone();
    nst.existing = None;
    nst.regions = new_regions;
    nst.result_types = st
        .result_types
        .iter()
        .zip(&keep)
        .filter(|(_, &k)| k)
        .map(|(t, _)| t.clone())
        .collect();
    let new_results = b.create(nst);
    let mut it = new_results.into_iter();
    let mut out: Values = smallvec![];
    for i in 0..n {
        // An unused dropped result needs some replacement; nothing reads it.
        out.push(if keep[i] { it.next()? } else { tv[i] });
    }
    Some(out)
}

pub(super) fn interpret(
    it: &mut Interp,
    op: OpId,
    args: &[RtValue],
) -> Result<SmallVec<[RtValue; 2]>, RunError> {
    let ctx = it.ctx;
    let c = args
        .first()
        .and_then(|a| a.as_bool())
        .ok_or_else(|| RunError::at(ctx, op, "condition is not a boolean"))?;
    let r = region_at(ctx, op, if c { 0 } else { 1 })?;
    it.run_region(r, &[])
}

pub(super) fn print(p: &mut Printer, op: OpId) -> std::fmt::Result {
    let ctx = p.ctx();
    let (Some(&c), [then_r, else_r]) = (ctx.operands(op).first(), ctx.regions(op)) else {
        p.w(" <<malformed scf.if>>");
        return Ok(());
    };
    let (then_r, else_r) = (*then_r, *else_r);
    p.w(" ");
    p.value(c);
    print_result_types(p, op);
    p.w(" ");
    p.region(then_r, false);
    let ctx = p.ctx();
    if !(ctx.results(op).is_empty() && is_empty_yield_region(ctx, else_r)) {
        p.w(" else ");
        p.region(else_r, false);
    }
    p.attr_dict(op, &[]);
    Ok(())
}

pub(super) fn parse(cp: &mut CustomParser) -> Result<ParsedOp, SyntaxError> {
    let c = cp.expect_value()?;
    let result_types = parse_result_types(cp)?;
    let mut then_r = expect_region_or_empty(cp)?;
    let mut else_r = if cp.try_keyword("else") {
        expect_region_or_empty(cp)?
    } else {
        ir::ast::AstRegion::new(vec![], cp.loc())
    };
    if result_types.is_empty() {
        ensure_yield(&mut then_r);
        ensure_yield(&mut else_r);
    }
    let mut attrs = Vec::new();
    cp.optional_attr_dict(&mut attrs);
    Ok(ParsedOp {
        successors: Vec::new(),
        operands: vec![(c, None)],
        result_types,
        attrs,
        regions: vec![
            ParsedRegion {
                region: then_r,
                entry_args: None,
            },
            ParsedRegion {
                region: else_r,
                entry_args: None,
            },
        ],
    })
}
