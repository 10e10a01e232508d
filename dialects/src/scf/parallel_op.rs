//! `scf.parallel`, `scf.reduce` and `scf.reduce.return` (MLIR 16's forms;
//! issue 45, item 5).
//!
//! ```text
//! %r = scf.parallel (%i, %j) = (%lb0, %lb1) to (%ub0, %ub1) step (%s0, %s1)
//!          init (%init) -> f32 {
//!   ...
//!   scf.reduce(%x) : f32 {
//!   ^bb0(%lhs: f32, %rhs: f32):
//!     %y = arith.addf %lhs, %rhs : f32
//!     scf.reduce.return %y : f32
//!   }
//!   scf.yield
//! }
//! ```
//! (generic: operands `lbs..., ubs..., steps..., inits...`, one body
//! argument per dimension; MLIR's `operand_segment_sizes` is accepted and
//! kept, the dimension count is the body's.)
//!
//! The body runs for every point of the iteration space: dimension `k` from
//! `lb_k` below `ub_k` by `step_k` (steps must be positive; a dimension with
//! `lb >= ub` runs nothing). Each `scf.reduce` directly in the body feeds the
//! result of its position: the result is `init` combined with every
//! iteration's value by the reduce's region, `(accumulator, value)`. MLIR
//! leaves the order open, assuming the operator associative and
//! commutative; L0 fixes it, so results are deterministic: the points in
//! lexicographic order (the last dimension fastest), the left fold from
//! `init`.
//!
//! Canonicalization: a dimension of constant bounds with no iteration makes
//! the op its inits; dimensions of exactly one iteration go (their index is
//! the lower bound), and with none left the body is inlined (MLIR's
//! patterns). Lowering (phase `gen`): a nest of `scf.for`s carrying the
//! accumulators, each `scf.reduce` replaced by its region applied to the
//! accumulator and the value.

use smallvec::SmallVec;

use ir::ast::SyntaxError;
use ir::clone::{clone_block_into, clone_op_into, ValueMap};
use ir::custom::{CustomParser, ParsedOp, ParsedRegion};
use ir::interp::{Interp, RtValue, RunError, Stop};
use ir::printer::Printer;
use ir::{BlockId, Builder, Context, OpId, OpState, RegionId, Type, ValueId};

use super::{
    constant_int, ensure_yield, expect_region_or_empty, region_at, single_block, terminator_named,
    types_of, Values,
};

/// `scf.parallel`.
pub const PARALLEL: &str = "scf.parallel";
/// `scf.reduce`.
pub const REDUCE: &str = "scf.reduce";
/// `scf.reduce.return`.
pub const REDUCE_RETURN: &str = "scf.reduce.return";

/// The dimension count of `op` (its body's arguments), when the operands
/// fit: `3 * d + results`.
fn dims(ctx: &Context, op: OpId) -> Option<usize> {
    let b = single_block(ctx, *ctx.regions(op).first()?)?;
    let d = ctx.block_args(b).len();
    (ctx.operands(op).len() == 3 * d + ctx.results(op).len()).then_some(d)
}

/// The `scf.reduce` ops directly in block `b`, in order.
fn reduces(ctx: &Context, b: BlockId) -> Vec<OpId> {
    ctx.block_ops(b)
        .into_iter()
        .filter(|&o| ctx.is(o, REDUCE))
        .collect()
}

pub(super) fn verify(ctx: &Context, op: OpId) -> Result<(), String> {
    let Some(b) = single_block(ctx, ctx.regions(op)[0]) else {
        return Err("body region must have exactly one block".into());
    };
    let d = ctx.block_args(b).len();
    if d == 0 {
        return Err("needs at least one dimension (body argument)".into());
    }
    let r = ctx.results(op).len();
    let n = ctx.operands(op).len();
    if n != 3 * d + r {
        return Err(format!(
            "expects {} operands ({d} lower bounds, upper bounds and steps, and {r} inits), but got {n}",
            3 * d + r
        ));
    }
    let idx = |v: &ValueId| *ctx.ty(*v) == Type::Index;
    if !ctx.operands(op)[..3 * d].iter().all(idx) || !ctx.block_args(b).iter().all(idx) {
        return Err("bounds, steps and the body's arguments must be of index type".into());
    }
    let inits = types_of(ctx, &ctx.operands(op)[3 * d..]);
    let results = types_of(ctx, ctx.results(op));
    if inits != results {
        return Err("the inits must have the result types".into());
    }
    if terminator_named(ctx, b, "scf.yield").is_none_or(|y| !ctx.operands(y).is_empty()) {
        return Err("body region must end with 'scf.yield' without operands".into());
    }
    let rs = reduces(ctx, b);
    if rs.len() != r {
        return Err(format!(
            "expects one 'scf.reduce' per result ({r}) directly in the body, but has {}",
            rs.len()
        ));
    }
    for (k, (&red, t)) in rs.iter().zip(&results).enumerate() {
        let got = ctx.ty(ctx.operand(red, 0));
        if got != t {
            return Err(format!(
                "'scf.reduce' #{k} reduces '{got}', but result #{k} is '{t}'"
            ));
        }
    }
    Ok(())
}

pub(super) fn verify_reduce(ctx: &Context, op: OpId) -> Result<(), String> {
    if !ctx.parent_op(op).is_some_and(|p| ctx.is(p, PARALLEL)) {
        return Err("expects parent op 'scf.parallel'".into());
    }
    let t = ctx.ty(ctx.operand(op, 0)).clone();
    let Some(b) = single_block(ctx, ctx.regions(op)[0]) else {
        return Err("the reduction region must have exactly one block".into());
    };
    if types_of(ctx, ctx.block_args(b)) != [t.clone(), t.clone()] {
        return Err(format!(
            "the reduction region must take two arguments of type '{t}'"
        ));
    }
    match terminator_named(ctx, b, REDUCE_RETURN) {
        Some(ret) if types_of(ctx, ctx.operands(ret)) == [t.clone()] => Ok(()),
        Some(_) => Err(format!("the reduction region must return one '{t}'")),
        None => Err("the reduction region must end with 'scf.reduce.return'".into()),
    }
}

pub(super) fn verify_reduce_return(ctx: &Context, op: OpId) -> Result<(), String> {
    if !ctx.parent_op(op).is_some_and(|p| ctx.is(p, REDUCE)) {
        return Err("expects parent op 'scf.reduce'".into());
    }
    Ok(())
}

/// Constant bounds of dimension `k`: `(lb, ub, step)`.
fn constant_dim(ctx: &Context, ops: &[ValueId], d: usize, k: usize) -> Option<(i64, i64, i64)> {
    Some((
        constant_int(ctx, ops[k])?,
        constant_int(ctx, ops[d + k])?,
        constant_int(ctx, ops[2 * d + k])?,
    ))
}

/// A dimension of constant bounds with no iteration: the results are the
/// inits.
pub(super) fn fold_zero_trip(b: &mut Builder, st: &OpState) -> Option<Values> {
    let body = single_block(b.ctx, *st.regions.first()?)?;
    let d = b.ctx.block_args(body).len();
    if st.operands.len() != 3 * d + st.result_types.len() {
        return None;
    }
    let empty = (0..d).any(|k| {
        let (lb, ub) = (
            constant_int(b.ctx, st.operands[k]),
            constant_int(b.ctx, st.operands[d + k]),
        );
        matches!((lb, ub), (Some(l), Some(u)) if u <= l)
    });
    empty.then(|| SmallVec::from_slice(&st.operands[3 * d..]))
}

/// Dimensions of exactly one iteration go (their index is the lower
/// bound); with none left the body runs once, inline, each reduce applied
/// to its init.
pub(super) fn remove_single_iterations(b: &mut Builder, st: &OpState) -> Option<Values> {
    let &region = st.regions.first()?;
    let body = single_block(b.ctx, region)?;
    let args = b.ctx.block_args(body).to_vec();
    let d = args.len();
    let ops = st.operands.clone();
    if ops.len() != 3 * d + st.result_types.len() {
        return None;
    }
    let single: Vec<bool> = (0..d)
        .map(|k| {
            constant_dim(b.ctx, &ops, d, k)
                .is_some_and(|(lb, ub, s)| s > 0 && lb < ub && ub - lb <= s)
        })
        .collect();
    if !single.contains(&true) {
        return None;
    }
    let inits: Vec<ValueId> = ops[3 * d..].to_vec();
    let keep: Vec<usize> = (0..d).filter(|&k| !single[k]).collect();
    let mut map = ValueMap::default();
    for k in 0..d {
        if single[k] {
            map.insert(args[k], ops[k]);
        }
    }
    if keep.is_empty() {
        // The body once: each reduce is its region on (init, value).
        let accs = clone_body(b, body, &mut map, &inits);
        return Some(SmallVec::from_vec(accs));
    }
    let mut operands: Vec<ValueId> = Vec::new();
    for part in 0..3 {
        operands.extend(keep.iter().map(|&k| ops[part * d + k]));
    }
    operands.extend_from_slice(&inits);
    let arg_types = vec![Type::Index; keep.len()];
    let new_region = b.build_region(&arg_types, |b, nargs| {
        for (&k, &a) in keep.iter().zip(nargs) {
            map.insert(args[k], a);
        }
        for op in b.ctx.block_ops(body) {
            clone_op_into(b, op, &mut map);
        }
    });
    Some(
        b.op_with_regions(
            PARALLEL,
            &operands,
            &st.result_types,
            st.attrs
                .iter()
                .filter(|(k, _)| k != SEGMENTS)
                .cloned()
                .collect(),
            &[new_region],
        ),
    )
}

/// Clones the ops of `body` but its terminator at the insertion point,
/// each `scf.reduce` #k replaced by its region applied to `accs[k]` and its
/// value; returns the new accumulators.
fn clone_body(
    b: &mut Builder,
    body: BlockId,
    map: &mut ValueMap,
    accs: &[ValueId],
) -> Vec<ValueId> {
    let mut accs = accs.to_vec();
    let mut k = 0;
    for op in b.ctx.block_ops(body) {
        if b.ctx.has_traits(op, ir::Traits::TERMINATOR) {
            continue;
        }
        if b.ctx.is(op, REDUCE) {
            let x = b.ctx.operand(op, 0);
            let x = map.get(&x).copied().unwrap_or(x);
            let r = b.ctx.regions(op)[0];
            accs[k] = apply(b, r, accs[k], x, map);
            k += 1;
            continue;
        }
        clone_op_into(b, op, map);
    }
    accs
}

/// Clones reduction region `r` at the insertion point with arguments
/// `(acc, x)`; returns the value it returns.
fn apply(b: &mut Builder, r: RegionId, acc: ValueId, x: ValueId, outer: &ValueMap) -> ValueId {
    let blk = b.ctx.region_block(r);
    let args = b.ctx.block_args(blk).to_vec();
    let mut map = outer.clone();
    map.insert(args[0], acc);
    map.insert(args[1], x);
    // The verifier guarantees the final `scf.reduce.return` of one value.
    clone_block_into(b, blk, &mut map)
        .first()
        .copied()
        .unwrap_or(acc)
}

/// The lowering (phase `gen`): a nest of `scf.for`s, the outermost for
/// dimension 0, carrying the accumulators.
pub(super) fn lower(b: &mut Builder, st: &OpState) -> Option<Values> {
    let &region = st.regions.first()?;
    let body = single_block(b.ctx, region)?;
    let args = b.ctx.block_args(body).to_vec();
    let d = args.len();
    let ops = st.operands.clone();
    if d == 0 || ops.len() != 3 * d + st.result_types.len() {
        return None;
    }
    let inits = ops[3 * d..].to_vec();
    let mut map = ValueMap::default();
    Some(SmallVec::from_vec(nest(
        b, &ops, d, 0, &args, body, &mut map, &inits,
    )))
}

#[allow(clippy::too_many_arguments)]
fn nest(
    b: &mut Builder,
    ops: &[ValueId],
    d: usize,
    k: usize,
    args: &[ValueId],
    body: BlockId,
    map: &mut ValueMap,
    accs: &[ValueId],
) -> Vec<ValueId> {
    super::build_for(
        b,
        ops[k],
        ops[d + k],
        ops[2 * d + k],
        accs,
        |b, iv, accs| {
            map.insert(args[k], iv);
            if k + 1 < d {
                nest(b, ops, d, k + 1, args, body, map, accs)
            } else {
                clone_body(b, body, map, accs)
            }
        },
    )
    .to_vec()
}

pub(super) fn interpret(
    it: &mut Interp,
    op: OpId,
    args: &[RtValue],
) -> Result<SmallVec<[RtValue; 2]>, RunError> {
    let ctx = it.ctx;
    let d = dims(ctx, op).ok_or_else(|| RunError::at(ctx, op, "malformed scf.parallel"))?;
    let int = |k: usize, what: &str| {
        args.get(k)
            .and_then(|x| x.as_int())
            .ok_or_else(|| RunError::at(ctx, op, format!("{what} is not an integer")))
    };
    let mut lbs = Vec::with_capacity(d);
    let mut ubs = Vec::with_capacity(d);
    let mut steps = Vec::with_capacity(d);
    for k in 0..d {
        lbs.push(int(k, "a lower bound")?);
        ubs.push(int(d + k, "an upper bound")?);
        steps.push(int(2 * d + k, "a step")?);
    }
    let mut accs: Vec<RtValue> = args[3 * d..].to_vec();
    if (0..d).any(|k| lbs[k] >= ubs[k]) {
        return Ok(SmallVec::from_vec(accs));
    }
    if let Some(s) = steps.iter().find(|&&s| s <= 0) {
        return Err(RunError::at(
            ctx,
            op,
            format!("step must be positive, but is {s}"),
        ));
    }
    let body = region_at(ctx, op, 0)?;
    let blk = ctx.region_block(body);
    let is_reduce = |o: OpId| ctx.is(o, REDUCE);
    let mut iv = lbs.clone();
    loop {
        let point: Vec<RtValue> = iv.iter().map(|&i| RtValue::Int(i)).collect();
        it.bind_args(blk, &point);
        let mut from = None;
        let mut k = 0;
        while let Stop::At(red) = it.run_until(blk, from, Some(&is_reduce))? {
            let x = it
                .get(ctx.operand(red, 0))
                .cloned()
                .ok_or_else(|| RunError::at(ctx, red, "the reduced value was not computed"))?;
            let r = region_at(ctx, red, 0)?;
            let acc = std::mem::replace(&mut accs[k], RtValue::Int(0));
            accs[k] = it
                .run_region(r, &[acc, x])?
                .into_iter()
                .next()
                .ok_or_else(|| RunError::at(ctx, red, "the reduction returned no value"))?;
            k += 1;
            from = ctx.op(red).next;
        }
        // The next point, the last dimension fastest.
        let mut j = d;
        loop {
            if j == 0 {
                return Ok(SmallVec::from_vec(accs));
            }
            j -= 1;
            match iv[j].checked_add(steps[j]) {
                Some(next) if next < ubs[j] => {
                    iv[j] = next;
                    break;
                }
                _ => iv[j] = lbs[j],
            }
        }
    }
}

/// `scf.reduce` outside a run of its `scf.parallel` does nothing.
pub(super) fn interpret_reduce(
    _: &mut Interp,
    _: OpId,
    _: &[RtValue],
) -> Result<SmallVec<[RtValue; 2]>, RunError> {
    Ok(SmallVec::new())
}

/// The generic form's attributes: MLIR's `operand_segment_sizes` (`array<i32:
/// d, d, d, inits>`), computed from the op, in place of any kept one.
pub(super) fn generic_attrs(ctx: &Context, op: OpId) -> Vec<(String, ir::Attribute)> {
    let mut attrs: Vec<(String, ir::Attribute)> = ctx
        .op(op)
        .attrs
        .iter()
        .filter(|(k, _)| k != SEGMENTS)
        .cloned()
        .collect();
    if let Some(d) = dims(ctx, op) {
        let r = ctx.results(op).len();
        attrs.push((
            SEGMENTS.to_string(),
            ir::Attribute::Keyword(format!("array<i32: {d}, {d}, {d}, {r}>")),
        ));
    }
    attrs
}

/// The inverse of [`generic_attrs`]: the attribute is kept as read (and
/// ignored: the body gives the dimension count).
pub(super) fn parse_generic_attrs(_: &str, _: &mut [(String, ir::Attribute)]) {}

/// MLIR's name of the operand groups' sizes.
const SEGMENTS: &str = "operand_segment_sizes";

fn print_list(p: &mut Printer, vals: &[ValueId], define: bool) {
    p.w("(");
    for (k, &v) in vals.iter().enumerate() {
        if k > 0 {
            p.w(", ");
        }
        if define {
            p.define_arg(v);
        }
        p.value(v);
    }
    p.w(")");
}

pub(super) fn print(p: &mut Printer, op: OpId) -> std::fmt::Result {
    let ctx = p.ctx();
    let (Some(d), Some(&r)) = (dims(ctx, op), ctx.regions(op).first()) else {
        p.w(" <<malformed scf.parallel>>");
        return Ok(());
    };
    let ops = ctx.operands(op).to_vec();
    let args = ctx.block_args(ctx.region_block(r)).to_vec();
    p.w(" ");
    print_list(p, &args, true);
    p.w(" = ");
    print_list(p, &ops[..d], false);
    p.w(" to ");
    print_list(p, &ops[d..2 * d], false);
    p.w(" step ");
    print_list(p, &ops[2 * d..3 * d], false);
    if ops.len() > 3 * d {
        p.w(" init ");
        print_list(p, &ops[3 * d..], false);
        p.w(" -> ");
        let tys = types_of(ctx, ctx.results(op));
        if tys.len() == 1 {
            p.types(&tys);
        } else {
            p.w("(");
            p.types(&tys);
            p.w(")");
        }
    }
    p.w(" ");
    p.region(r, false);
    p.attr_dict(op, &[SEGMENTS]);
    Ok(())
}

pub(super) fn parse(cp: &mut CustomParser) -> Result<ParsedOp, SyntaxError> {
    let mut inner = cp.expect_paren()?;
    let ivs = inner.value_list()?;
    inner.finish()?;
    cp.expect_punct("=")?;
    let mut lists = Vec::new();
    for kw in ["", "to", "step"] {
        if !kw.is_empty() {
            cp.expect_keyword(kw)?;
        }
        let mut inner = cp.expect_paren()?;
        let vs = inner.value_list()?;
        inner.finish()?;
        if vs.len() != ivs.len() {
            return Err(cp.error(format!(
                "expected {} values (one per dimension), found {}",
                ivs.len(),
                vs.len()
            )));
        }
        lists.push(vs);
    }
    let mut inits = Vec::new();
    let mut result_types = Vec::new();
    if cp.try_keyword("init") {
        let mut inner = cp.expect_paren()?;
        inits = inner.value_list()?;
        inner.finish()?;
        result_types = super::parse_result_types(cp)?;
        if result_types.len() != inits.len() {
            return Err(cp.error(format!(
                "expected {} result types (one per init), found {}",
                inits.len(),
                result_types.len()
            )));
        }
    }
    let mut region = expect_region_or_empty(cp)?;
    ensure_yield(&mut region);
    let mut attrs = Vec::new();
    cp.optional_attr_dict(&mut attrs);
    let mut operands: Vec<_> = lists
        .into_iter()
        .flatten()
        .map(|v| (v, Some(Type::Index)))
        .collect();
    operands.extend(
        inits
            .into_iter()
            .zip(result_types.iter().cloned().map(Some)),
    );
    let entry = ivs
        .into_iter()
        .map(|v| super::for_op::plain_arg(v, Type::Index))
        .collect::<Result<Vec<_>, _>>()?;
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

pub(super) fn print_reduce(p: &mut Printer, op: OpId) -> std::fmt::Result {
    let ctx = p.ctx();
    let Some(&r) = ctx.regions(op).first() else {
        p.w(" <<malformed scf.reduce>>");
        return Ok(());
    };
    let x = ctx.operand(op, 0);
    p.w("(");
    p.value(x);
    p.w(") : ");
    let t = ctx.ty(x).clone();
    p.types(&[t]);
    p.w(" ");
    p.region(r, true);
    p.attr_dict(op, &[]);
    Ok(())
}

pub(super) fn parse_reduce(cp: &mut CustomParser) -> Result<ParsedOp, SyntaxError> {
    let mut inner = cp.expect_paren()?;
    let x = inner.expect_value()?;
    inner.finish()?;
    cp.expect_punct(":")?;
    let t = cp.expect_type()?;
    let region = cp.expect_region()?;
    let mut attrs = Vec::new();
    cp.optional_attr_dict(&mut attrs);
    Ok(ParsedOp {
        successors: Vec::new(),
        operands: vec![(x, Some(t))],
        result_types: vec![],
        attrs,
        regions: vec![ParsedRegion {
            region,
            entry_args: None,
        }],
    })
}
