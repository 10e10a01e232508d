//! `scf.yield`, `scf.condition` and `scf.assert`.

use smallvec::SmallVec;

use ir::ast::{AstItemKind, SyntaxError};
use ir::custom::{CustomParser, ParsedOp};
use ir::interp::{Interp, RtValue, RunError};
use ir::printer::Printer;
use ir::{Attribute, Builder, Context, OpId, OpState, Type};

use super::{constant_int, fmt_types, types_of, Values};

/// The op owning the region that contains `op`, and that region's index.
fn parent_and_region(ctx: &Context, op: OpId) -> Option<(OpId, usize)> {
    let b = ctx.op(op).parent?;
    let r = ctx.block(b).parent?;
    let p = ctx.region_parent(r)?;
    let i = ctx.regions(p).iter().position(|&x| x == r)?;
    Some((p, i))
}

fn check_types(what: &str, got: &[Type], want: &[Type], parent: &str) -> Result<(), String> {
    if got == want {
        return Ok(());
    }
    Err(format!(
        "{what} types {} must match {} of the parent '{parent}'",
        fmt_types(got),
        fmt_types(want)
    ))
}

pub(super) fn verify_yield(ctx: &Context, op: OpId) -> Result<(), String> {
    let Some((p, region)) = parent_and_region(ctx, op) else {
        return Err(
            "expects parent op to be one of 'scf.if, scf.index_switch, scf.for, scf.forall, scf.parallel, scf.while, scf.execute_region'".into(),
        );
    };
    let got = types_of(ctx, ctx.operands(op));
    match ctx.op_name(p) {
        "scf.if" => check_types(
            "operand",
            &got,
            &types_of(ctx, ctx.results(p)),
            "scf.if result types",
        ),
        "scf.execute_region" => check_types(
            "operand",
            &got,
            &types_of(ctx, ctx.results(p)),
            "scf.execute_region result types",
        ),
        "scf.index_switch" => check_types(
            "operand",
            &got,
            &types_of(ctx, ctx.results(p)),
            "scf.index_switch result types",
        ),
        "scf.for" | "scf.forall" => check_types(
            "operand",
            &got,
            &types_of(ctx, ctx.results(p)),
            if ctx.is(p, "scf.for") {
                "scf.for result types"
            } else {
                "scf.forall result types"
            },
        ),
        "scf.parallel" => check_types("operand", &got, &[], "scf.parallel (no values)"),
        "scf.while" if region == 1 => check_types(
            "operand",
            &got,
            &types_of(ctx, ctx.operands(p)),
            "scf.while operand types",
        ),
        "scf.while" => {
            Err("the 'before' region of 'scf.while' must end with 'scf.condition'".into())
        }
        other => Err(format!(
            "expects parent op to be one of 'scf.if, scf.index_switch, scf.for, scf.forall, scf.parallel, scf.while, scf.execute_region', but got '{other}'"
        )),
    }
}

pub(super) fn verify_condition(ctx: &Context, op: OpId) -> Result<(), String> {
    let Some((p, 0)) = parent_and_region(ctx, op).filter(|&(p, _)| ctx.is(p, "scf.while")) else {
        return Err("expects parent op 'scf.while' (its 'before' region)".into());
    };
    let c = ctx.ty(ctx.operand(op, 0));
    if *c != Type::I1 {
        return Err(format!(
            "operand #0 (the condition) must be i1, but got '{c}'"
        ));
    }
    let got = types_of(ctx, &ctx.operands(op)[1..]);
    check_types(
        "forwarded value",
        &got,
        &types_of(ctx, ctx.results(p)),
        "scf.while result types",
    )
}

pub(super) fn print_condition(p: &mut Printer, op: OpId) -> std::fmt::Result {
    let ops = p.ctx().operands(op).to_vec();
    let Some((&c, rest)) = ops.split_first() else {
        p.w(" <<malformed scf.condition>>");
        return Ok(());
    };
    p.w("(");
    p.value(c);
    p.w(")");
    let rest = rest.to_vec();
    crate::func::print_values_attrs_types(p, op, &rest, &[]);
    Ok(())
}

pub(super) fn parse_condition(cp: &mut CustomParser) -> Result<ParsedOp, SyntaxError> {
    let mut inner = cp.expect_paren()?;
    let c = inner.expect_value()?;
    inner.finish()?;
    let mut rest = crate::func::parse_terminator(cp)?;
    rest.operands.insert(0, (c, None));
    Ok(rest)
}

const DEFAULT_MSG: &str = "assertion failed";

pub(crate) fn verify_assert(ctx: &Context, op: OpId) -> Result<(), String> {
    let c = ctx.ty(ctx.operand(op, 0));
    if *c != Type::I1 {
        return Err(format!(
            "operand #0 (the condition) must be i1, but got '{c}'"
        ));
    }
    match ctx.attr(op, "msg") {
        None | Some(Attribute::Str(_)) => Ok(()),
        Some(_) => Err("attribute 'msg' must be a string".into()),
    }
}

/// `scf.assert true` checks nothing, and neither does an assert of a
/// condition that an earlier assert already checked on every path to it
/// (one in the same block before it, or before an op enclosing it): the
/// condition is one SSA value, so if that assert passed, this one passes,
/// and if it faulted, this one never runs. Fused loops repeat their
/// producers' size checks this way.
pub(crate) fn fold_assert(b: &mut Builder, st: &OpState) -> Option<Values> {
    let c = *st.operands.first()?;
    if let Some(op) = st.existing {
        if checked_before(b.ctx, op, c) {
            return Some(SmallVec::new());
        }
    }
    let c = constant_int(b.ctx, c)?;
    (c != 0).then(SmallVec::new)
}

/// Whether another `scf.assert` of `c` runs before `op` on every path to
/// it: it lies in the block of `op` or of an op enclosing `op`, before that
/// op ([`ir::builder::dominates_point`]).
fn checked_before(ctx: &Context, op: OpId, c: ir::ValueId) -> bool {
    let Some(blk) = ctx.op(op).parent else {
        return false;
    };
    ctx.uses(c).iter().any(|u| {
        u.op != op
            && u.index == 0
            && ctx.op_name(u.op) == "scf.assert"
            && ir::builder::dominates_point(ctx, u.op, blk, Some(op))
    })
}

pub(crate) fn interpret_assert(
    it: &mut Interp,
    op: OpId,
    args: &[RtValue],
) -> Result<SmallVec<[RtValue; 2]>, RunError> {
    let ctx = it.ctx;
    match args.first().and_then(|a| a.as_bool()) {
        Some(true) => Ok(SmallVec::new()),
        Some(false) => Err(RunError {
            loc: ctx.loc(op),
            message: ctx
                .attr(op, "msg")
                .and_then(|a| a.as_str())
                .unwrap_or(DEFAULT_MSG)
                .to_string(),
        }),
        None => Err(RunError::at(ctx, op, "condition is not a boolean")),
    }
}

pub(crate) fn print_assert(p: &mut Printer, op: OpId) -> std::fmt::Result {
    let ctx = p.ctx();
    let Some(&c) = ctx.operands(op).first() else {
        p.w(" <<malformed scf.assert>>");
        return Ok(());
    };
    p.w(" ");
    p.value(c);
    let mut skip: &[&str] = &[];
    if let Some(msg @ Attribute::Str(_)) = ctx.attr(op, "msg") {
        p.w(", ");
        p.attr(msg);
        skip = &["msg"];
    }
    p.attr_dict(op, skip);
    Ok(())
}

pub(crate) fn parse_assert(cp: &mut CustomParser) -> Result<ParsedOp, SyntaxError> {
    let c = cp.expect_value()?;
    let mut attrs = Vec::new();
    if cp.try_punct(",") {
        match cp.expect_literal()? {
            (AstItemKind::Str(s), _) => attrs.push(("msg".to_string(), Attribute::Str(s))),
            (_, at) => {
                return Err(SyntaxError {
                    offset: at,
                    message: "expected a string message".into(),
                })
            }
        }
    }
    cp.optional_attr_dict(&mut attrs);
    Ok(ParsedOp {
        operands: vec![(c, None)],
        attrs,
        ..Default::default()
    })
}
