//! `scf.index_switch` (MLIR's): runs the region of the case equal to an
//! `index` operand, or the default region.
//!
//! Regions: the default first, then one per entry of the `cases` attribute
//! (distinct `i64`s), each a single block without arguments ending in
//! `scf.yield` of the op's result types. MLIR's custom form:
//!
//! ```text
//! %r = scf.index_switch %x -> f64
//! case 2 {
//!   scf.yield %a : f64
//! }
//! default {
//!   scf.yield %b : f64
//! }
//! ```
//!
//! The generic form writes `cases` as MLIR's `array<i64: 2>`. A constant
//! operand inlines the chosen region (MLIR's `FoldConstantCase`); `lower`
//! turns the op into a chain of `scf.if`s comparing the operand with each
//! case in order (its `gen` phase), which is what the backends compile.

use smallvec::SmallVec;

use ir::ast::{AstItemKind, AstRegion, SyntaxError};
use ir::custom::{CustomParser, ParsedOp, ParsedRegion};
use ir::interp::{Interp, RtValue, RunError};
use ir::printer::Printer;
use ir::{Attribute, Builder, Context, OpId, OpState, Type, ValueId};

use super::{
    build_if, check_yield_region, constant_int, ensure_yield, expect_region_or_empty,
    inline_region, parse_result_types, region_at, Values,
};

/// The case values of `cases` (an array of integers), or `None` when the
/// attribute is missing or malformed.
fn cases_of(a: Option<&Attribute>) -> Option<Vec<i64>> {
    match a? {
        Attribute::Array(items) => items.iter().map(|x| x.as_int()).collect(),
        _ => None,
    }
}

fn cases(ctx: &Context, op: OpId) -> Option<Vec<i64>> {
    cases_of(ctx.attr(op, "cases"))
}

pub(super) fn verify(ctx: &Context, op: OpId) -> Result<(), String> {
    let x = ctx.ty(ctx.operand(op, 0));
    if *x != Type::Index {
        return Err(format!(
            "operand #0 (the switch value) must be index, but got '{x}'"
        ));
    }
    let Some(cs) = cases(ctx, op) else {
        return Err("expects a 'cases' attribute: an array of integers".into());
    };
    let mut seen = cs.clone();
    seen.sort_unstable();
    if let Some(w) = seen.windows(2).find(|w| w[0] == w[1]) {
        return Err(format!("has duplicate case value: {}", w[0]));
    }
    let n = ctx.regions(op).len();
    if n != cs.len() + 1 {
        return Err(format!(
            "has {} case regions but {} case values",
            n.saturating_sub(1),
            cs.len()
        ));
    }
    for (i, &r) in ctx.regions(op).iter().enumerate() {
        let what = if i == 0 {
            "the default region".to_string()
        } else {
            format!("the region of case {}", cs[i - 1])
        };
        check_yield_region(ctx, r, &what)?;
    }
    Ok(())
}

/// The index of the region that runs for switch value `x`: 0 (default) or
/// 1 + the position of the matching case.
/// Which region (successor, for `cf.switch`) value `x` picks among cases
/// `cs`: 0 for the default, `k + 1` for case `k`.
pub(crate) fn chosen(cs: &[i64], x: i64) -> usize {
    cs.iter().position(|&c| c == x).map_or(0, |k| k + 1)
}

/// A constant operand: the chosen region's ops move before the op, and its
/// results are the values that region yields (MLIR's `FoldConstantCase`).
pub(super) fn fold_constant(b: &mut Builder, st: &OpState) -> Option<Values> {
    let cs = cases_of(st.attr("cases"))?;
    if st.regions.len() != cs.len() + 1 {
        return None;
    }
    let x = constant_int(b.ctx, st.operands[0])?;
    let r = st.regions[chosen(&cs, x)];
    let vals = inline_region(b, r, &[])?;
    (vals.len() == st.result_types.len()).then_some(vals)
}

/// `lower` (phase `gen`): `if x == c1 {..} else if x == c2 {..} else {default}`.
pub(super) fn lower_to_ifs(b: &mut Builder, st: &OpState) -> Option<Values> {
    let cs = cases_of(st.attr("cases"))?;
    if st.regions.len() != cs.len() + 1 {
        return None;
    }
    Some(chain(b, st.operands[0], &cs, &st.regions, &st.result_types))
}

/// The `scf.if` chain for cases `cs` (their regions are `regions[1..]`, the
/// default `regions[0]`).
fn chain(
    b: &mut Builder,
    x: ValueId,
    cs: &[i64],
    regions: &[ir::RegionId],
    types: &[Type],
) -> Values {
    let inline = |b: &mut Builder, r| inline_region(b, r, &[]).unwrap_or_default().to_vec();
    let Some((&c, rest)) = cs.split_first() else {
        return SmallVec::from_vec(inline(b, regions[0]));
    };
    let k = crate::arith::const_int(b, c, &Type::Index);
    let eq = b.op1(
        "arith.cmpi",
        &[x, k],
        Type::I1,
        vec![("predicate".into(), Attribute::Str("eq".into()))],
    );
    let taken = regions[regions.len() - cs.len()];
    build_if(
        b,
        eq,
        types,
        |b| inline(b, taken),
        |b| chain(b, x, rest, regions, types).to_vec(),
    )
}

pub(super) fn interpret(
    it: &mut Interp,
    op: OpId,
    args: &[RtValue],
) -> Result<SmallVec<[RtValue; 2]>, RunError> {
    let ctx = it.ctx;
    let x = args
        .first()
        .and_then(|a| a.as_int())
        .ok_or_else(|| RunError::at(ctx, op, "the switch value is not an index"))?;
    let cs = cases(ctx, op).ok_or_else(|| RunError::at(ctx, op, "malformed 'cases'"))?;
    let r = region_at(ctx, op, chosen(&cs, x))?;
    it.run_region(r, &[])
}

/// The generic form's `cases`: MLIR's dense array `array<i64: ...>`.
pub(super) fn generic_attrs(ctx: &Context, op: OpId) -> Vec<(String, Attribute)> {
    ctx.op(op)
        .attrs
        .iter()
        .map(|(k, v)| match (k.as_str(), cases_of(Some(v))) {
            ("cases", Some(cs)) => {
                let list: Vec<String> = cs.iter().map(|c| c.to_string()).collect();
                let text = if list.is_empty() {
                    "array<i64>".to_string()
                } else {
                    format!("array<i64: {}>", list.join(", "))
                };
                (k.clone(), Attribute::Keyword(text))
            }
            _ => (k.clone(), v.clone()),
        })
        .collect()
}

/// The inverse of [`generic_attrs`]: `array<i64: ...>` is read as an array
/// of `i64` already, so nothing changes.
pub(super) fn parse_generic_attrs(_: &str, _: &mut [(String, Attribute)]) {}

pub(super) fn print(p: &mut Printer, op: OpId) -> std::fmt::Result {
    let ctx = p.ctx();
    let (Some(&x), Some(cs)) = (ctx.operands(op).first(), cases(ctx, op)) else {
        p.w(" <<malformed scf.index_switch>>");
        return Ok(());
    };
    let regions = ctx.regions(op).to_vec();
    if regions.len() != cs.len() + 1 {
        p.w(" <<malformed scf.index_switch>>");
        return Ok(());
    }
    p.w(" ");
    p.value(x);
    p.attr_dict(op, &["cases"]);
    let rts: Vec<Type> = ctx.results(op).iter().map(|&v| ctx.ty(v).clone()).collect();
    if !rts.is_empty() {
        p.w(" -> ");
        p.types(&rts);
    }
    for (c, &r) in cs.iter().zip(&regions[1..]) {
        p.newline();
        p.w(&format!("case {c} "));
        p.region(r, false);
    }
    p.newline();
    p.w("default ");
    p.region(regions[0], false);
    Ok(())
}

pub(super) fn parse(cp: &mut CustomParser) -> Result<ParsedOp, SyntaxError> {
    let x = cp.expect_value()?;
    let mut attrs = Vec::new();
    cp.optional_attr_dict(&mut attrs);
    let result_types = parse_result_types(cp)?;
    let mut cases = Vec::new();
    let mut regions: Vec<AstRegion> = Vec::new();
    while cp.try_keyword("case") {
        let value = match cp.peek().map(|i| &i.kind) {
            Some(AstItemKind::Int(v)) => {
                i64::try_from(*v).map_err(|_| cp.error("case value does not fit in 64 bits"))?
            }
            _ => return Err(cp.error("expected an integer case value after 'case'")),
        };
        cp.next_item();
        cases.push(Attribute::Int(value, Type::I64));
        regions.push(expect_region_or_empty(cp)?);
    }
    if !cp.try_keyword("default") {
        return Err(cp.error("expected 'case' or 'default'"));
    }
    regions.insert(0, expect_region_or_empty(cp)?);
    if result_types.is_empty() {
        for r in &mut regions {
            ensure_yield(r);
        }
    }
    attrs.push(("cases".to_string(), Attribute::Array(cases)));
    Ok(ParsedOp {
        successors: Vec::new(),
        operands: vec![(x, None)],
        result_types,
        attrs,
        regions: regions
            .into_iter()
            .map(|region| ParsedRegion {
                region,
                entry_args: None,
            })
            .collect(),
    })
}
