//! The verifier: arity, `SameOperandsAndResultType`, terminators, SSA
//! dominance and scoping across regions (including isolation), then each
//! op's own verifier. Every problem becomes a diagnostic at the op.

use crate::context::{Context, OpId, ValueDef, ValueId};
use crate::diag::Diagnostic;
use crate::dominance::DominanceCache;
use crate::spec::Traits;

fn err(ctx: &Context, op: OpId, msg: impl std::fmt::Display) -> Diagnostic {
    Diagnostic::at_op(ctx, op, format!("'{}' op {msg}", ctx.op_name(op)))
}

/// Whether the definition of `v` dominates its use by `user`. On failure,
/// says why.
fn check_dominance(
    ctx: &Context,
    doms: &mut DominanceCache,
    v: ValueId,
    user: OpId,
) -> Result<(), &'static str> {
    let def_block = ctx
        .value_block(v)
        .ok_or("operand is not attached to the IR")?;
    if let ValueDef::Result(d, _) = ctx.value(v).def {
        if !ctx.alive(d) {
            return Err("operand was erased");
        }
    }
    let mut cur = user;
    loop {
        let Some(b) = ctx.op(cur).parent else {
            return Err("operand does not dominate this use");
        };
        if b == def_block {
            return match ctx.value(v).def {
                ValueDef::BlockArg(..) => Ok(()),
                ValueDef::Result(d, _) if d == cur => Err("operand is a result of the op itself"),
                ValueDef::Result(d, _) => {
                    if ctx.is_before_in_block(d, cur) {
                        Ok(())
                    } else {
                        Err("operand does not dominate this use")
                    }
                }
            };
        }
        // A block of the same region: the definition's block must dominate it.
        let region = ctx.block_region(b);
        if let Some(r) = region.filter(|&r| Some(r) == ctx.block_region(def_block)) {
            return if doms.dominates(ctx, r, def_block, b) {
                Ok(())
            } else {
                Err("operand does not dominate this use")
            };
        }
        let Some(parent) = ctx.block_parent_op(b) else {
            return Err("operand does not dominate this use");
        };
        if ctx.has_traits(parent, Traits::ISOLATED_FROM_ABOVE) {
            return Err("using value defined outside the region");
        }
        cur = parent;
    }
}

/// Verifies one op (not its nested ops); appends problems to `out`.
pub fn verify_op(ctx: &Context, op: OpId, out: &mut Vec<Diagnostic>) {
    check_op(ctx, &mut DominanceCache::default(), op, true, true, out)
}

/// [`verify_op`], with the dominance of operands checked only if `dominance`
/// and the equal types of a [`Traits::SAME_OPERANDS_AND_RESULT_TYPE`] op
/// only if `same_types`.
fn check_op(
    ctx: &Context,
    doms: &mut DominanceCache,
    op: OpId,
    dominance: bool,
    same_types: bool,
    out: &mut Vec<Diagnostic>,
) {
    let spec = ctx.spec(op);
    let nops = ctx.operands(op).len();
    let nres = ctx.results(op).len();
    let nreg = ctx.regions(op).len();
    if !spec.operands.allows(nops) {
        out.push(err(
            ctx,
            op,
            format!("expected {} operands, but found {nops}", spec.operands),
        ));
        return;
    }
    if !spec.results.allows(nres) {
        out.push(err(
            ctx,
            op,
            format!("expected {} results, but found {nres}", spec.results),
        ));
        return;
    }
    if !spec.regions.allows(nreg) {
        out.push(err(
            ctx,
            op,
            format!("expected {} regions, but found {nreg}", spec.regions),
        ));
        return;
    }
    let operands = if dominance { ctx.operands(op) } else { &[] };
    for (i, &v) in operands.iter().enumerate() {
        if let Err(why) = check_dominance(ctx, doms, v, op) {
            out.push(err(ctx, op, format!("operand #{i}: {why}")));
            return;
        }
    }
    if same_types
        && spec.traits.contains(Traits::SAME_OPERANDS_AND_RESULT_TYPE)
        && ctx.operand_and_result_types_differ(op)
    {
        out.push(err(
            ctx,
            op,
            "requires the same type for all operands and results",
        ));
        return;
    }
    if spec.traits.contains(Traits::TERMINATOR) {
        if let Some(b) = ctx.op(op).parent {
            if ctx.terminator(b) != Some(op) {
                out.push(err(
                    ctx,
                    op,
                    "must be the last operation in the parent block",
                ));
                return;
            }
        }
    }
    if let Err(msg) = check_blocks(ctx, op) {
        out.push(err(ctx, op, msg));
        return;
    }
    if let Err(msg) = check_successors(ctx, op) {
        out.push(err(ctx, op, msg));
        return;
    }
    if spec.traits.contains(Traits::REGIONS_NEED_TERMINATOR) {
        for &r in ctx.regions(op) {
            for &b in &ctx.region(r).blocks {
                let ok = ctx
                    .terminator(b)
                    .is_some_and(|t| ctx.has_traits(t, Traits::TERMINATOR));
                if !ok {
                    out.push(err(ctx, op, "region must end with a terminator operation"));
                    return;
                }
            }
        }
    }
    if let Some(f) = spec.verify {
        if let Err(msg) = f(ctx, op) {
            out.push(err(ctx, op, msg));
        }
    }
}

/// The shape of `op`'s regions: several blocks only where the op allows
/// them ([`crate::spec::OpSpec::multi_block`]), each ending in a
/// terminator, and no branch back to an entry block.
fn check_blocks(ctx: &Context, op: OpId) -> Result<(), String> {
    for (i, &r) in ctx.regions(op).iter().enumerate() {
        let blocks = &ctx.region(r).blocks;
        if blocks.len() <= 1 {
            continue;
        }
        if !ctx.spec(op).multi_block {
            return Err(format!(
                "expects region #{i} to have 0 or 1 blocks, but it has {}",
                blocks.len()
            ));
        }
        for &b in blocks {
            let ok = ctx
                .terminator(b)
                .is_some_and(|t| ctx.has_traits(t, Traits::TERMINATOR));
            if !ok {
                return Err(format!(
                    "region #{i}: every block of a region of several blocks must end with a terminator operation"
                ));
            }
        }
        if !ctx.predecessors(blocks[0]).is_empty() {
            return Err(format!(
                "region #{i}: the entry block may not have predecessors"
            ));
        }
    }
    Ok(())
}

/// A branch's successors: allowed by its spec, in its own region, and given
/// as many operands of the types their blocks' arguments have.
fn check_successors(ctx: &Context, op: OpId) -> Result<(), String> {
    let succs = ctx.successors(op);
    if succs.is_empty() {
        return Ok(());
    }
    if ctx.spec(op).successor_counts.is_none() || !ctx.has_traits(op, Traits::TERMINATOR) {
        return Err("takes no successors".into());
    }
    let forwarded: usize = succs.iter().map(|s| s.1 as usize).sum();
    if forwarded > ctx.operands(op).len() {
        return Err("forwards more operands than it has".into());
    }
    let region = ctx.op(op).parent.and_then(|b| ctx.block_region(b));
    for (i, &(b, _)) in succs.iter().enumerate() {
        if ctx.block_region(b).is_none() || ctx.block_region(b) != region {
            return Err(format!(
                "successor #{i}: branching to a block of another region"
            ));
        }
        let args = ctx.block_args(b);
        let given = ctx.successor_operands(op, i);
        if args.len() != given.len() {
            return Err(format!(
                "branch has {} operands for successor #{i}, but the target block has {}",
                given.len(),
                args.len()
            ));
        }
        for (k, (&a, &v)) in args.iter().zip(given).enumerate() {
            if ctx.ty(a) != ctx.ty(v) {
                return Err(format!(
                    "type mismatch for bb argument #{k} of successor #{i}: '{}' given, '{}' expected",
                    ctx.ty(v),
                    ctx.ty(a)
                ));
            }
        }
    }
    Ok(())
}

/// Verifies every op of the module; returns all problems found (an op whose
/// structure is broken is reported once and its own verifier is skipped).
pub fn verify(ctx: &Context) -> Result<(), Vec<Diagnostic>> {
    check_all(ctx, true, true)
}

/// [`verify`] for IR fresh from the parser ([`crate::build::parse`]), which
/// gives the same answer without checking that definitions dominate uses:
/// the builder resolves a name only to a value already defined in the block
/// being read or an enclosing one, looking no further out than the nearest
/// op isolated from above, and defines an op's results after its regions.
/// So every use it builds is dominated. The dominance walk reads the records
/// of each operand and its defining op, at random places in a large module:
/// about a tenth of the time to parse and verify one.
///
/// Nor does it compare the types of ops with
/// [`Traits::SAME_OPERANDS_AND_RESULT_TYPE`] when the context saw every such
/// op created with equal types (`Context::create_op` notes it, while the
/// operands' records are in the cache): no op has changed since.
pub fn verify_parsed(ctx: &Context) -> Result<(), Vec<Diagnostic>> {
    // Across the blocks of a region, the builder resolves a name to any
    // value defined further up the text: the blocks' dominance is checked.
    check_all(ctx, ctx.cfg_built, ctx.mixed_same_type_ops)
}

fn check_all(ctx: &Context, dominance: bool, same_types: bool) -> Result<(), Vec<Diagnostic>> {
    let mut out = Vec::new();
    let mut doms = DominanceCache::default();
    for op in ctx.walk_all() {
        check_op(ctx, &mut doms, op, dominance, same_types, &mut out);
    }
    if out.is_empty() {
        Ok(())
    } else {
        Err(out)
    }
}
