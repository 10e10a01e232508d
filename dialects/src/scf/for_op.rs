//! `scf.for`.

use smallvec::{smallvec, SmallVec};

use ir::ast::{AstArg, SyntaxError};
use ir::custom::{CustomParser, ParsedOp, ParsedRegion};
use ir::interp::{Interp, RtValue, RunError};
use ir::printer::Printer;
use ir::{Builder, Context, OpId, OpState, Type, ValueId};

use super::{
    constant_int, ensure_yield, expect_region_or_empty, fmt_types, inline_region,
    parse_result_types, region_at, region_is_pure, single_block, terminator_named, types_of,
    yield_of, Values,
};

pub(super) fn verify(ctx: &Context, op: OpId) -> Result<(), String> {
    let operands = ctx.operands(op);
    for (i, what) in ["lower bound", "upper bound", "step"].iter().enumerate() {
        let t = ctx.ty(operands[i]);
        if *t != Type::Index {
            return Err(format!(
                "{what} (operand #{i}) must be of index type, but got '{t}' (a loop over an integer type, `: {t}`, needs its bounds, step and variable all '{t}')"
            ));
        }
    }
    let init_types = types_of(ctx, &operands[3..]);
    let result_types = types_of(ctx, ctx.results(op));
    if init_types != result_types {
        return Err(format!(
            "iter_args types {} must match the result types {}",
            fmt_types(&init_types),
            fmt_types(&result_types)
        ));
    }
    let Some(b) = single_block(ctx, ctx.regions(op)[0]) else {
        return Err("body region must have exactly one block".into());
    };
    let args = types_of(ctx, ctx.block_args(b));
    if args.first() != Some(&Type::Index) {
        return Err(
            "the body's first argument (the induction variable) must be of index type".into(),
        );
    }
    if args[1..] != init_types[..] {
        return Err(format!(
            "body block arguments {} must be the induction variable and one argument per iter_arg of types {}",
            fmt_types(&args),
            fmt_types(&init_types)
        ));
    }
    if terminator_named(ctx, b, "scf.yield").is_none() {
        return Err("body region must end with 'scf.yield'".into());
    }
    Ok(())
}

/// The body's yield, when the op has the expected shape.
fn body_yield(ctx: &Context, st: &OpState) -> Option<OpId> {
    let n = st.result_types.len();
    if st.operands.len() != 3 + n || st.regions.len() != 1 {
        return None;
    }
    let (b, y) = yield_of(ctx, st.regions[0])?;
    (ctx.block_args(b).len() == 1 + n && ctx.operands(y).len() == n).then_some(y)
}

/// Constant `lb >= ub`: the loop runs zero times; results are the inits.
pub(super) fn fold_zero_trip(b: &mut Builder, st: &OpState) -> Option<Values> {
    if st.operands.len() != 3 + st.result_types.len() {
        return None;
    }
    let lb = constant_int(b.ctx, st.operands[0])?;
    let ub = constant_int(b.ctx, st.operands[1])?;
    (lb >= ub).then(|| SmallVec::from_slice(&st.operands[3..]))
}

/// Constant bounds and step with exactly one iteration: inline the body.
pub(super) fn inline_single_iteration(b: &mut Builder, st: &OpState) -> Option<Values> {
    body_yield(b.ctx, st)?;
    let lb = constant_int(b.ctx, st.operands[0])?;
    let ub = constant_int(b.ctx, st.operands[1])?;
    let step = constant_int(b.ctx, st.operands[2])?;
    if step <= 0 || lb >= ub || (ub as i128 - lb as i128) > step as i128 {
        return None;
    }
    let mut args: Values = smallvec![st.operands[0]];
    args.extend_from_slice(&st.operands[3..]);
    inline_region(b, st.regions[0], &args)
}

/// Whether `a` and `b` are the same value or equal constants.
fn same_value(ctx: &Context, a: ValueId, b: ValueId) -> bool {
    if a == b {
        return true;
    }
    let constant = |v: ValueId| {
        let op = ctx.def_op(v)?;
        if !ctx.alive(op) || !ctx.has_traits(op, ir::Traits::CONSTANT_LIKE) {
            return None;
        }
        Some((ctx.attr(op, "value")?, ctx.ty(v)))
    };
    matches!((constant(a), constant(b)), (Some(x), Some(y)) if x == y)
}

/// Whether iter_arg `i` (block argument `arg`) of the loop `op` is dead: its
/// result is unused, and its value flows only through pure ops of the body
/// block into its own slot of the yield `y`, so nothing the loop does or
/// returns depends on it (a split record's unread field carried by a loop).
fn dead_carried(ctx: &Context, op: OpId, blk: ir::BlockId, y: OpId, i: usize) -> bool {
    if !ctx.unused(ctx.result(op, i)) {
        return false;
    }
    let mut work = vec![ctx.block_args(blk)[i + 1]];
    let mut seen = std::collections::HashSet::new();
    while let Some(v) = work.pop() {
        for u in ctx.uses(v) {
            if u.op == y {
                if u.index as usize != i {
                    return false;
                }
                continue;
            }
            let pure = ctx.op(u.op).parent == Some(blk)
                && ctx.regions(u.op).is_empty()
                && ctx.spec(u.op).is_pure();
            if !pure {
                return false;
            }
            if seen.insert(u.op) {
                work.extend_from_slice(ctx.results(u.op));
            }
        }
    }
    true
}

/// Iter_args whose yielded value is their own block argument or their init
/// (or a constant equal to it) never change: they are removed and their
/// result is the init. An iter_arg the body never reads, yielded a value
/// defined outside a loop that runs at least once, is removed with that
/// value as its result. Dead iter_args ([`dead_carried`]) are removed too
/// (their unused result is then the init).
pub(super) fn remove_invariant_iter_args(b: &mut Builder, st: &OpState) -> Option<Values> {
    let y = body_yield(b.ctx, st)?;
    let blk = single_block(b.ctx, st.regions[0])?;
    let n = st.result_types.len();
    let inits: Values = SmallVec::from_slice(&st.operands[3..]);
    let old_args: Values = SmallVec::from_slice(b.ctx.block_args(blk));
    let yielded: Values = SmallVec::from_slice(b.ctx.operands(y));
    // A loop that runs at least once and yields a value from outside it for
    // an iter_arg its body never reads ends with that value (MLIR's
    // loop-invariant yields).
    let runs = runs_at_least_once(b.ctx, st);
    let outer_yield = |i: usize| {
        runs && b.ctx.unused(old_args[i + 1])
            && !b.ctx.value_block(yielded[i]).is_some_and(|vb| {
                b.ctx.region(st.regions[0]).blocks.contains(&vb)
                    || st.existing.is_some_and(|op| b.ctx.block_in_op(vb, op))
            })
    };
    let result_of: Values = (0..n)
        .map(|i| if outer_yield(i) { yielded[i] } else { inits[i] })
        .collect();
    let keep: Vec<bool> = (0..n)
        .map(|i| {
            yielded[i] != old_args[i + 1]
                && !same_value(b.ctx, yielded[i], inits[i])
                && !outer_yield(i)
                && !st
                    .existing
                    .is_some_and(|op| dead_carried(b.ctx, op, blk, y, i))
        })
        .collect();
    if keep.iter().all(|&k| k) {
        return None;
    }
    let kept_types: Vec<Type> = (0..n)
        .filter(|&i| keep[i])
        .map(|i| st.result_types[i].clone())
        .collect();
    let mut arg_types = vec![Type::Index];
    arg_types.extend(kept_types.iter().cloned());
    let (nr, nb) = b.ctx.new_region_with_block(&arg_types);
    let new_args: Values = SmallVec::from_slice(b.ctx.block_args(nb));
    b.ctx
        .replace_uses_where(old_args[0], new_args[0], |_, _| true);
    let mut k = 1;
    for i in 0..n {
        let to = if keep[i] {
            k += 1;
            new_args[k - 1]
        } else {
            inits[i]
        };
        b.ctx.replace_uses_where(old_args[i + 1], to, |_, _| true);
        if keep[i] {
            b.ctx.copy_name(old_args[i + 1], to);
        }
    }
    b.ctx.copy_name(old_args[0], new_args[0]);
    b.ctx.splice_block(blk, nb, None);
    let kept_yield: Values = (0..n)
        .filter(|&i| keep[i])
        .map(|i| b.ctx.operand(y, i))
        .collect();
    b.ctx.set_operands(y, &kept_yield);
    let mut nst = st.clone();
    nst.existing = None;
    nst.regions = smallvec![nr];
    nst.result_types = kept_types.into();
    nst.operands = SmallVec::from_slice(&st.operands[..3]);
    nst.operands
        .extend((0..n).filter(|&i| keep[i]).map(|i| inits[i]));
    let new_results = b.create(nst);
    let mut it = new_results.into_iter();
    let mut out: Values = smallvec![];
    for i in 0..n {
        out.push(if keep[i] { it.next()? } else { result_of[i] });
    }
    Some(out)
}

/// Whether the loop's bounds and step are constants with `lb < ub` and
/// `step > 0`.
fn runs_at_least_once(ctx: &Context, st: &OpState) -> bool {
    let c = |k: usize| st.operands.get(k).and_then(|&v| constant_int(ctx, v));
    matches!((c(0), c(1), c(2)), (Some(lb), Some(ub), Some(step)) if lb < ub && step > 0)
}

/// A result-less loop whose body has no effects does nothing.
pub(super) fn remove_dead(b: &mut Builder, st: &OpState) -> Option<Values> {
    (st.result_types.is_empty() && st.regions.len() == 1 && region_is_pure(b.ctx, st.regions[0]))
        .then(SmallVec::new)
}

fn index_arg(ctx: &Context, op: OpId, v: Option<&RtValue>, what: &str) -> Result<i64, RunError> {
    v.and_then(|x| x.as_int())
        .ok_or_else(|| RunError::at(ctx, op, format!("{what} is not an integer")))
}

pub(super) fn interpret(
    it: &mut Interp,
    op: OpId,
    args: &[RtValue],
) -> Result<SmallVec<[RtValue; 2]>, RunError> {
    let ctx = it.ctx;
    let lb = index_arg(ctx, op, args.first(), "lower bound")?;
    let ub = index_arg(ctx, op, args.get(1), "upper bound")?;
    let step = index_arg(ctx, op, args.get(2), "step")?;
    let mut accs: SmallVec<[RtValue; 2]> = args.iter().skip(3).cloned().collect();
    if lb >= ub {
        return Ok(accs);
    }
    if step <= 0 {
        return Err(RunError::at(
            ctx,
            op,
            format!("step must be positive, but is {step}"),
        ));
    }
    let body = region_at(ctx, op, 0)?;
    let mut argv: Vec<RtValue> = Vec::with_capacity(args.len() - 2);
    let mut i = lb;
    loop {
        argv.clear();
        argv.push(RtValue::Int(i));
        argv.extend(accs.drain(..));
        accs = it.run_region(body, &argv)?;
        match i.checked_add(step) {
            Some(next) if next < ub => i = next,
            _ => return Ok(accs),
        }
    }
}

pub(super) fn print(p: &mut Printer, op: OpId) -> std::fmt::Result {
    let ctx = p.ctx();
    let operands = ctx.operands(op).to_vec();
    let blk = ctx.regions(op).first().and_then(|&r| single_block(ctx, r));
    let (Some(blk), true) = (blk, operands.len() >= 3) else {
        p.w(" <<malformed scf.for>>");
        return Ok(());
    };
    let args = ctx.block_args(blk).to_vec();
    if args.len() != operands.len() - 2 {
        p.w(" <<malformed scf.for>>");
        return Ok(());
    }
    p.w(" ");
    p.define_arg(args[0]);
    p.value(args[0]);
    p.w(" = ");
    p.value(operands[0]);
    p.w(" to ");
    p.value(operands[1]);
    p.w(" step ");
    p.value(operands[2]);
    if operands.len() > 3 {
        p.w(" iter_args(");
        for (k, (&a, &init)) in args[1..].iter().zip(&operands[3..]).enumerate() {
            if k > 0 {
                p.w(", ");
            }
            p.define_arg(a);
            p.value(a);
            p.w(" = ");
            p.value(init);
        }
        p.w(") -> (");
        let tys = types_of(ctx, ctx.results(op));
        p.types(&tys);
        p.w(")");
    }
    p.w(" ");
    p.region(ctx.regions(op)[0], false);
    p.attr_dict(op, &[]);
    Ok(())
}

pub(super) fn plain_arg(v: ir::ast::AstValueRef, ty: Type) -> Result<AstArg, SyntaxError> {
    if v.index.is_some() {
        return Err(SyntaxError {
            offset: v.loc,
            message: "expected a plain value name (without '#')".into(),
        });
    }
    Ok(AstArg {
        name: v.name,
        ty,
        loc: v.loc,
    })
}

pub(super) fn parse(cp: &mut CustomParser) -> Result<ParsedOp, SyntaxError> {
    let iv = cp.expect_value()?;
    cp.expect_punct("=")?;
    let lb = cp.expect_value()?;
    cp.expect_keyword("to")?;
    let ub = cp.expect_value()?;
    cp.expect_keyword("step")?;
    let step = cp.expect_value()?;
    let iv_type = if cp.try_punct(":") {
        cp.expect_type()?
    } else {
        Type::Index
    };
    let mut accs = Vec::new();
    let mut inits = Vec::new();
    if cp.try_keyword("iter_args") {
        let mut inner = cp.expect_paren()?;
        if !inner.at_end() {
            loop {
                accs.push(inner.expect_value()?);
                inner.expect_punct("=")?;
                inits.push(inner.expect_value()?);
                if !inner.try_punct(",") {
                    break;
                }
            }
        }
        inner.finish()?;
    }
    let result_types = parse_result_types(cp)?;
    // MLIR writes the induction variable's type after the results.
    let iv_type = if iv_type == Type::Index && cp.try_punct(":") {
        cp.expect_type()?
    } else {
        iv_type
    };
    if result_types.len() != accs.len() {
        return Err(cp.error(format!(
            "expected {} result types (one per iter_arg), found {}",
            accs.len(),
            result_types.len()
        )));
    }
    let mut region = expect_region_or_empty(cp)?;
    if result_types.is_empty() {
        ensure_yield(&mut region);
    }
    let mut attrs = Vec::new();
    cp.optional_attr_dict(&mut attrs);
    let mut entry = vec![plain_arg(iv, iv_type.clone())?];
    for (a, t) in accs.into_iter().zip(&result_types) {
        entry.push(plain_arg(a, t.clone())?);
    }
    let mut operands = vec![(lb, None), (ub, None), (step, None)];
    operands.extend(
        inits
            .into_iter()
            .zip(result_types.iter().cloned().map(Some)),
    );
    Ok(ParsedOp {
        successors: Vec::new(),
        operands,
        result_types,
        attrs,
        regions: vec![ParsedRegion {
            region,
            entry_args: Some(entry),
        }],
    })
}

/// MLIR's loop over an integer type (`scf.for %i = %lb to %ub step %s :
/// i32`, or the generic form with an `i32` induction variable) as the
/// index loop L0 holds ([`ir::spec::DesugarFn`]): the bounds and the step
/// are `arith.index_cast` to `index` (sign-extended, as MLIR compares them
/// signed) and the body reads `arith.index_cast %i : index to i32`. The
/// iterations are the same, except that the index loop stops where MLIR's
/// would wrap the induction variable past the type's largest value. A loop
/// whose bounds, step and variable do not share one integer type is left to
/// the verifier.
pub(super) fn desugar(ctx: &mut Context, op: OpId) {
    let ops = ctx.operands(op).to_vec();
    let Some(iv) = (ops.len() >= 3).then(|| induction_var(ctx, op)).flatten() else {
        return;
    };
    let t = ctx.ty(iv).clone();
    if t == Type::Index || !t.is_integer() || ops[..3].iter().any(|&v| *ctx.ty(v) != t) {
        return;
    }
    let mut b = Builder::before(ctx, op);
    let casts: Vec<ValueId> = ops[..3]
        .iter()
        .map(|&v| b.op1("arith.index_cast", &[v], Type::Index, vec![]))
        .collect();
    for (i, c) in casts.into_iter().enumerate() {
        ctx.set_operand(op, i, c);
    }
    ctx.set_type(iv, Type::Index);
    let Some(body) = single_block(ctx, ctx.regions(op)[0]) else {
        return;
    };
    let mut b = match ctx.block(body).first {
        Some(first) => Builder::before(ctx, first),
        None => Builder::at_end(ctx, body),
    };
    let narrow = b.op1("arith.index_cast", &[iv], t, vec![]);
    let cast = ctx.def_op(narrow);
    let uses: Vec<(OpId, u32)> = ctx
        .uses(iv)
        .iter()
        .filter(|u| Some(u.op) != cast)
        .map(|u| (u.op, u.index))
        .collect();
    for (o, i) in uses {
        ctx.set_operand(o, i as usize, narrow);
    }
}

/// The loop's induction variable (the body's first argument).
pub fn induction_var(ctx: &Context, op: OpId) -> Option<ValueId> {
    let b = single_block(ctx, *ctx.regions(op).first()?)?;
    ctx.block_args(b).first().copied()
}
