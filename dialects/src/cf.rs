//! The `cf` dialect: unstructured control flow between the blocks of a
//! region (MLIR's `cf`), for function bodies and `scf.execute_region`s of
//! several blocks.
//!
//! | op | custom form | meaning |
//! |---|---|---|
//! | `cf.br` | `cf.br ^bb1(%a, %b : i64, f64)` | go to `^bb1`, binding its arguments |
//! | `cf.cond_br` | `cf.cond_br %c, ^bb1(%a : i64), ^bb2` | go to the first successor if `%c`, else to the second |
//! | `cf.assert` | `cf.assert %c, "message"` | a located fault with `message` unless `%c`: `scf.assert` under MLIR's name, one implementation (compiled natively too) |
//!
//! A successor's operands are the branch's last operands (the IR's
//! [`ir::context::OpData::successors`]). In the generic form a conditional
//! branch says how many go to each successor with MLIR's
//! `operand_segment_sizes = array<i32: 1, n, m>`.
//!
//! Canonicalization (MLIR's patterns of the same names, in
//! `passes::canonicalize`'s region simplification and here): a
//! `cf.cond_br` on a constant becomes a `cf.br`, as does one whose two
//! successors are the same block (operands that differ, scalars, are
//! forwarded through `arith.select`); `cf.assert` of `true` is erased.

use smallvec::SmallVec;

use ir::ast::SyntaxError;
use ir::custom::{CustomParser, ParsedOp};
use ir::interp::{Interp, RtValue, RunError};
use ir::printer::Printer;
use ir::spec::{Arity, OpSpec, Registry, Traits};
use ir::{Attribute, Builder, Context, OpId, OpState, Type, ValueId};

use crate::scf::constant_int;
use crate::scf::terminators;

/// The value of `v` where it is a constant `i1`.
fn const_bool(ctx: &Context, v: ValueId) -> Option<bool> {
    constant_int(ctx, v).map(|c| c != 0)
}

/// MLIR's names for the segment sizes of a conditional branch's operands.
pub(crate) const SEGMENTS: [&str; 2] = ["operand_segment_sizes", "operandSegmentSizes"];

fn parse_br(cp: &mut CustomParser) -> Result<ParsedOp, SyntaxError> {
    let mut p = ParsedOp::default();
    cp.successor(&mut p)?;
    cp.optional_attr_dict(&mut p.attrs);
    Ok(p)
}

fn print_br(p: &mut Printer, op: OpId) -> std::fmt::Result {
    if p.ctx().successors(op).len() != 1 {
        p.w(" <<malformed cf.br>>");
        return Ok(());
    }
    p.w(" ");
    p.successor(op, 0);
    p.attr_dict(op, &[]);
    Ok(())
}

/// A branch's generic form: every operand goes to its one successor.
fn br_counts(_: &mut Vec<(String, Attribute)>, n: usize, succs: usize) -> Result<Vec<u32>, String> {
    if succs != 1 {
        return Err(format!("'cf.br' takes one successor, {succs} given"));
    }
    Ok(vec![n as u32])
}

fn interp_br(
    it: &mut Interp,
    _: OpId,
    args: &[RtValue],
) -> Result<SmallVec<[RtValue; 2]>, RunError> {
    it.branch_to(0);
    Ok(args.iter().cloned().collect())
}

fn verify_br(ctx: &Context, op: OpId) -> Result<(), String> {
    if ctx.successors(op).len() != 1 {
        return Err(format!(
            "expects one successor, but has {}",
            ctx.successors(op).len()
        ));
    }
    if ctx.num_own_operands(op) != 0 {
        return Err("forwards every operand to its successor".into());
    }
    Ok(())
}

fn parse_cond_br(cp: &mut CustomParser) -> Result<ParsedOp, SyntaxError> {
    let mut p = ParsedOp::default();
    let c = cp.expect_value()?;
    p.operands.push((c, Some(Type::I1)));
    cp.expect_punct(",")?;
    cp.successor(&mut p)?;
    cp.expect_punct(",")?;
    cp.successor(&mut p)?;
    cp.optional_attr_dict(&mut p.attrs);
    Ok(p)
}

fn print_cond_br(p: &mut Printer, op: OpId) -> std::fmt::Result {
    let ctx = p.ctx();
    if ctx.successors(op).len() != 2 || ctx.num_own_operands(op) != 1 {
        p.w(" <<malformed cf.cond_br>>");
        return Ok(());
    }
    p.w(" ");
    p.value(ctx.operand(op, 0));
    p.w(", ");
    p.successor(op, 0);
    p.w(", ");
    p.successor(op, 1);
    p.attr_dict(op, &[]);
    Ok(())
}

/// The segment sizes `[own, first successor's, second's]` of a generic
/// conditional branch (MLIR's attribute), which the IR keeps as its
/// successors' counts instead.
fn cond_br_counts(
    attrs: &mut Vec<(String, Attribute)>,
    n: usize,
    succs: usize,
) -> Result<Vec<u32>, String> {
    if succs != 2 {
        return Err(format!("'cf.cond_br' takes two successors, {succs} given"));
    }
    let pos = attrs
        .iter()
        .position(|(k, _)| SEGMENTS.contains(&k.as_str()));
    let Some(pos) = pos else {
        // Without forwarded operands the sizes are implied.
        return if n == 1 {
            Ok(vec![0, 0])
        } else {
            Err("'cf.cond_br' with successor operands needs 'operand_segment_sizes'".into())
        };
    };
    let (_, a) = attrs.remove(pos);
    let sizes: Option<Vec<i64>> = match &a {
        Attribute::Array(items) => items.iter().map(|i| i.as_int()).collect(),
        _ => None,
    };
    match sizes.as_deref() {
        Some(&[1, t, e]) if t >= 0 && e >= 0 && 1 + t as i128 + e as i128 == n as i128 => {
            Ok(vec![t as u32, e as u32])
        }
        _ => Err(format!(
            "'operand_segment_sizes' must be 'array<i32: 1, n, m>' summing to the {n} operands"
        )),
    }
}

/// The generic form's `operand_segment_sizes`, which MLIR 16 requires.
fn cond_br_generic_attrs(ctx: &Context, op: OpId) -> Vec<(String, Attribute)> {
    let mut attrs = ctx.op(op).attrs.to_vec();
    let sizes: Vec<String> = std::iter::once(ctx.num_own_operands(op) as u32)
        .chain(ctx.successors(op).iter().map(|s| s.1))
        .map(|n| n.to_string())
        .collect();
    attrs.push((
        "operand_segment_sizes".into(),
        Attribute::Keyword(format!("array<i32: {}>", sizes.join(", "))),
    ));
    attrs
}

fn verify_cond_br(ctx: &Context, op: OpId) -> Result<(), String> {
    if ctx.successors(op).len() != 2 {
        return Err(format!(
            "expects two successors, but has {}",
            ctx.successors(op).len()
        ));
    }
    if ctx.num_own_operands(op) != 1 {
        return Err("expects one condition operand before the successor operands".into());
    }
    if *ctx.ty(ctx.operand(op, 0)) != Type::I1 {
        return Err("condition must be of type 'i1'".into());
    }
    Ok(())
}

fn interp_cond_br(
    it: &mut Interp,
    op: OpId,
    args: &[RtValue],
) -> Result<SmallVec<[RtValue; 2]>, RunError> {
    let ctx = it.ctx;
    let c = args
        .first()
        .and_then(|a| a.as_bool())
        .ok_or_else(|| RunError::at(ctx, op, "condition is not a boolean"))?;
    let first = ctx.successors(op)[0].1 as usize;
    let rest = &args[1..];
    let (i, vals) = if c {
        (0, &rest[..first])
    } else {
        (1, &rest[first..])
    };
    it.branch_to(i);
    Ok(vals.iter().cloned().collect())
}

/// `cf.cond_br` on a constant, or to the same block both ways: a `cf.br`
/// (MLIR's `SimplifyConstCondBranchPred` and
/// `SimplifyCondBranchIdenticalSuccessors`). Where the two ways forward
/// different scalars to the same block, the branch forwards
/// `arith.select(cond, a, b)` instead.
fn simplify_cond_br(b: &mut Builder, st: &OpState) -> Option<SmallVec<[ValueId; 2]>> {
    let op = st.existing?;
    let ctx = &*b.ctx;
    if st.successors.len() != 2 || ctx.num_own_operands(op) != 1 {
        return None;
    }
    let cond = st.operands[0];
    let (target, args) = match const_bool(ctx, cond) {
        Some(c) => {
            let which = if c { 0 } else { 1 };
            (
                st.successors[which].0,
                ctx.successor_operands(op, which).to_vec(),
            )
        }
        None => {
            if st.successors[0].0 != st.successors[1].0 {
                return None;
            }
            let (xs, ys) = (ctx.successor_operands(op, 0), ctx.successor_operands(op, 1));
            // Operands that differ must be scalars (what arith.select takes).
            if xs.len() != ys.len()
                || xs
                    .iter()
                    .zip(ys)
                    .any(|(x, y)| x != y && !ctx.ty(*x).is_scalar())
            {
                return None;
            }
            let pairs: Vec<(ValueId, ValueId)> =
                xs.iter().copied().zip(ys.iter().copied()).collect();
            let args = pairs
                .into_iter()
                .map(|(x, y)| {
                    if x == y {
                        x
                    } else {
                        let ty = b.ctx.ty(x).clone();
                        b.op1("arith.select", &[cond, x, y], ty, vec![])
                    }
                })
                .collect();
            (st.successors[0].0, args)
        }
    };
    let mut br = b.state("cf.br", &args, &[], Vec::new());
    br.successors.push((target, args.len() as u32));
    b.create_raw(br);
    Some(SmallVec::new())
}

pub fn register(r: &mut Registry) {
    r.register(
        OpSpec::new(
            "cf.br",
            "an unconditional branch to a block of the same region",
        )
        .operands(Arity::AtLeast(0))
        .traits(Traits::TERMINATOR | Traits::PURE)
        .successor_counts(br_counts)
        .verify(verify_br)
        .interpret(interp_br)
        .custom_form(print_br, parse_br),
    );
    r.register(
        OpSpec::new(
            "cf.cond_br",
            "a branch to one of two blocks of the same region, chosen by an i1",
        )
        .operands(Arity::AtLeast(1))
        .traits(Traits::TERMINATOR | Traits::PURE)
        .successor_counts(cond_br_counts)
        .generic_attrs(cond_br_generic_attrs, |_, _| {})
        .verify(verify_cond_br)
        .interpret(interp_cond_br)
        .rewrite(simplify_cond_br)
        .custom_form(print_cond_br, parse_cond_br),
    );
    r.register(
        OpSpec::new(
            "cf.assert",
            "a located fault with a message unless the operand is true (MLIR's spelling of scf.assert)",
        )
        .operands(Arity::Exactly(1))
        .traits(Traits::READS | Traits::WRITES)
        .verify(terminators::verify_assert)
        .interpret(terminators::interpret_assert)
        .rewrite(terminators::fold_assert)
        .custom_form(terminators::print_assert, terminators::parse_assert),
    );
}
