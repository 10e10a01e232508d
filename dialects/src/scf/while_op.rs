//! `scf.while`.

use smallvec::SmallVec;

use ir::ast::{AstArg, SyntaxError};
use ir::custom::{CustomParser, ParsedOp, ParsedRegion};
use ir::interp::{Interp, RtValue, RunError};
use ir::printer::Printer;
use ir::{Context, OpId};

use super::{
    expect_region_or_empty, fmt_types, region_at, single_block, terminator_named, types_of,
};

pub(super) fn verify(ctx: &Context, op: OpId) -> Result<(), String> {
    let init_types = types_of(ctx, ctx.operands(op));
    let result_types = types_of(ctx, ctx.results(op));
    let regions = ctx.regions(op);
    let Some(before) = single_block(ctx, regions[0]) else {
        return Err("'before' region must have exactly one block".into());
    };
    let Some(after) = single_block(ctx, regions[1]) else {
        return Err("'after' region must have exactly one block".into());
    };
    let before_args = types_of(ctx, ctx.block_args(before));
    if before_args != init_types {
        return Err(format!(
            "'before' region arguments {} must match the operand types {}",
            fmt_types(&before_args),
            fmt_types(&init_types)
        ));
    }
    if terminator_named(ctx, before, "scf.condition").is_none() {
        return Err("'before' region must end with 'scf.condition'".into());
    }
    let after_args = types_of(ctx, ctx.block_args(after));
    if after_args != result_types {
        return Err(format!(
            "'after' region arguments {} must match the result types {}",
            fmt_types(&after_args),
            fmt_types(&result_types)
        ));
    }
    if terminator_named(ctx, after, "scf.yield").is_none() {
        return Err("'after' region must end with 'scf.yield'".into());
    }
    Ok(())
}

pub(super) fn interpret(
    it: &mut Interp,
    op: OpId,
    args: &[RtValue],
) -> Result<SmallVec<[RtValue; 2]>, RunError> {
    let ctx = it.ctx;
    let (before, after) = (region_at(ctx, op, 0)?, region_at(ctx, op, 1)?);
    let mut cur: SmallVec<[RtValue; 2]> = args.iter().cloned().collect();
    loop {
        let r = it.run_region(before, &cur)?;
        let c = r
            .first()
            .and_then(|v| v.as_bool())
            .ok_or_else(|| RunError::at(ctx, op, "'before' region did not produce a condition"))?;
        if !c {
            return Ok(r[1..].iter().cloned().collect());
        }
        cur = it.run_region(after, &r[1..])?;
    }
}

pub(super) fn print(p: &mut Printer, op: OpId) -> std::fmt::Result {
    let ctx = p.ctx();
    let operands = ctx.operands(op).to_vec();
    let regions = ctx.regions(op).to_vec();
    let before = regions.first().and_then(|&r| single_block(ctx, r));
    let (Some(before), 2) = (before, regions.len()) else {
        p.w(" <<malformed scf.while>>");
        return Ok(());
    };
    let args = ctx.block_args(before).to_vec();
    if args.len() != operands.len() {
        p.w(" <<malformed scf.while>>");
        return Ok(());
    }
    p.w(" (");
    for (k, (&a, &init)) in args.iter().zip(&operands).enumerate() {
        if k > 0 {
            p.w(", ");
        }
        p.define_arg(a);
        p.value(a);
        p.w(" = ");
        p.value(init);
    }
    p.w(") : (");
    p.types(&types_of(ctx, &operands));
    p.w(") -> ");
    p.type_list(&types_of(ctx, ctx.results(op)));
    p.w(" ");
    p.region(regions[0], false);
    p.w(" do ");
    p.region(regions[1], true);
    p.attr_dict(op, &[]);
    Ok(())
}

pub(super) fn parse(cp: &mut CustomParser) -> Result<ParsedOp, SyntaxError> {
    let mut inner = cp.expect_paren()?;
    let mut names = Vec::new();
    let mut inits = Vec::new();
    if !inner.at_end() {
        loop {
            let a = inner.expect_value()?;
            if a.index.is_some() {
                return Err(SyntaxError {
                    offset: a.loc,
                    message: "expected a plain value name (without '#')".into(),
                });
            }
            names.push(a);
            inner.expect_punct("=")?;
            inits.push(inner.expect_value()?);
            if !inner.try_punct(",") {
                break;
            }
        }
    }
    inner.finish()?;
    cp.expect_punct(":")?;
    let mut tin = cp.expect_paren()?;
    let mut in_types = Vec::new();
    if !tin.at_end() {
        in_types.push(tin.expect_type()?);
        while tin.try_punct(",") {
            in_types.push(tin.expect_type()?);
        }
    }
    tin.finish()?;
    cp.expect_punct("->")?;
    let result_types = cp.type_list()?;
    if in_types.len() != inits.len() {
        return Err(cp.error(format!(
            "expected {} operand types, found {}",
            inits.len(),
            in_types.len()
        )));
    }
    let before = expect_region_or_empty(cp)?;
    cp.expect_keyword("do")?;
    let after = expect_region_or_empty(cp)?;
    let mut attrs = Vec::new();
    cp.optional_attr_dict(&mut attrs);
    let entry: Vec<AstArg> = names
        .into_iter()
        .zip(&in_types)
        .map(|(v, t)| AstArg {
            name: v.name,
            ty: t.clone(),
            loc: v.loc,
        })
        .collect();
    Ok(ParsedOp {
        successors: Vec::new(),
        operands: inits
            .into_iter()
            .zip(in_types.into_iter().map(Some))
            .collect(),
        result_types,
        attrs,
        regions: vec![
            ParsedRegion {
                region: before,
                entry_args: Some(entry),
            },
            ParsedRegion {
                region: after,
                entry_args: None,
            },
        ],
    })
}
