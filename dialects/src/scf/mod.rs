//! The `scf` dialect (structured control flow, MLIR semantics): `scf.if`,
//! `scf.for`, `scf.while`, their terminators `scf.yield` / `scf.condition`,
//! and `scf.assert` (LEVELS.md).
//!
//! # Structure
//! - `scf.if(%c) ({then}, {else}) -> results`: `%c: i1`; always two regions,
//!   each a single block without arguments ending in `scf.yield` whose
//!   operand types are the op's result types. An "absent" else is a block
//!   holding just `scf.yield`.
//! - `scf.for(%lb, %ub, %step, %init...) ({^bb0(%i: index, %acc...): ...
//!   scf.yield %next...})`: bounds are `index`; one iter_arg per init, whose
//!   type is the init's, the block argument's, the result's and the yielded
//!   value's. Runs `i = lb, lb+step, ...` while `i < ub`; the results are
//!   the final accumulators (the inits when the loop runs zero times).
//! - `scf.while(%init...) ({^bb0(%a...): ... scf.condition(%c) %v...},
//!   {^bb0(%x...): ... scf.yield %next...})`: the `before` region takes the
//!   current values (types of the operands) and ends in `scf.condition`; when
//!   `%c` is false the loop ends with results `%v...`, otherwise `%v...` go to
//!   the `after` region, whose `scf.yield` gives the next values.
//! - `scf.forall(%n) ({^bb0(%c: index): ... scf.yield})`: a parallel loop
//!   (no results): the body runs once for each `c` in `[0, n)`, the
//!   iterations independent, each writing only memory the others do not
//!   touch (`forall_op`).
//! - `scf.parallel (%i...) = (lbs) to (ubs) step (steps) init (inits)`
//!   with `scf.reduce(%x) : T {^bb0(%a: T, %b: T): ... scf.reduce.return}`
//!   in its body: MLIR's parallel loop nest with reductions, folded in
//!   lexicographic order (`parallel_op`).
//! - `scf.assert(%c) {msg = "..."}`: an effect; a run-time fault with `msg`
//!   at the op's location when `%c` is false.
//!
//! `scf.if`, `scf.for`, `scf.forall` and `scf.while` are `RECURSIVELY_PURE`: they are pure
//! (dead when unused) exactly when everything in their regions is.
//!
//! # Run-time semantics
//! A `scf.for` whose step is not positive faults ("step must be positive")
//! when the loop would run at least once (`lb < ub`); a loop with `lb >= ub`
//! runs zero times whatever its step, so folding zero-trip loops never hides
//! a fault. The induction variable never wraps: the loop stops when
//! `i + step` overflows.
//!
//! # Folds and rewrites (at construction time and in canonicalize)
//! - `scf.forall` with a constant count: none or one iteration is no loop;
//!   a pure body is removed.
//! - `scf.if` with a constant condition: the taken region's ops are inlined
//!   before the op and its results are the yielded values. So is a
//!   condition an enclosing `scf.if` on the same value already decided
//!   (true in its then-branch, false in its else-branch).
//! - `scf.if` results yielded as the same value by both branches are that
//!   value; in canonicalize, unused results are dropped too. The op is
//!   rebuilt with the remaining results, or removed when none remain and its
//!   regions are pure. A result-less `scf.if` with pure regions is removed.
//! - `scf.for` with constant `lb >= ub`: results are the inits, no loop.
//!   Constant bounds with exactly one iteration: the body is inlined.
//!   Iter_args whose yielded value is the block argument itself, the init,
//!   or a constant equal to the init are removed (their result is the
//!   init). A result-less `scf.for` with a pure body is removed.
//! - `scf.assert` of the constant `true` is removed.
//!
//! # Custom forms (MLIR's)
//! ```text
//! %r = scf.if %c -> (f64) { ... scf.yield %a : f64 } else { ... scf.yield %b : f64 }
//! scf.if %c { ... }                                   // else omitted: it only yields
//! %r = scf.for %i = %lb to %ub step %s iter_args(%acc = %init) -> (f64) { ... }
//! scf.for %i = %lb to %ub step %s { ... }
//! %r = scf.while (%a = %init) : (i64) -> i64 { ... scf.condition(%c) %a : i64 }
//!      do { ^bb0(%x: i64): ... scf.yield %n : i64 }
//! scf.yield %a, %b : f64, i64
//! scf.forall (%c) in (%n) { ... }
//! scf.assert %c, "message"
//! ```
//! In the `scf.if` / result-less `scf.for` forms a region without a final
//! `scf.yield` gets an empty one (MLIR's implicit terminator); the printer
//! always writes it.

mod execute_region_op;
mod for_op;
mod forall_op;
mod if_op;
pub mod parallel_op;
pub use threads_op::build as forall_threads;
pub(crate) mod switch_op;
pub(crate) mod terminators;
mod threads_op;
mod while_op;

pub use for_op::induction_var;

use smallvec::SmallVec;

use ir::ast::{AstBlock, AstOp, AstOpBody, AstRegion};
use ir::custom::CustomParser;
use ir::rewrite::is_side_effect_free;
use ir::spec::{Arity, OpSpec, Registry, Traits};
use ir::{Attribute, BlockId, Builder, Context, OpId, RegionId, Type, ValueId};

type Values = SmallVec<[ValueId; 2]>;

// ----- shared helpers -----------------------------------------------------------

/// The integer value of `v` when it is defined by a constant-like op.
pub fn constant_int(ctx: &Context, v: ValueId) -> Option<i64> {
    let op = ctx.def_op(v)?;
    if !ctx.alive(op) || !ctx.has_traits(op, Traits::CONSTANT_LIKE) {
        return None;
    }
    ctx.attr(op, "value")?.as_int()
}

/// The only block of `r`, if it has exactly one.
fn single_block(ctx: &Context, r: RegionId) -> Option<BlockId> {
    match ctx.region(r).blocks.as_slice() {
        [b] => Some(*b),
        _ => None,
    }
}

/// The terminator of `b` if it is an op named `name`.
fn terminator_named(ctx: &Context, b: BlockId, name: &str) -> Option<OpId> {
    ctx.terminator(b).filter(|&t| ctx.is(t, name))
}

/// The single block of `r` and its `scf.yield`, when `r` has that shape.
fn yield_of(ctx: &Context, r: RegionId) -> Option<(BlockId, OpId)> {
    let b = single_block(ctx, r)?;
    Some((b, terminator_named(ctx, b, "scf.yield")?))
}

/// Checks that region `r` is one block without arguments ending in
/// `scf.yield`; the message names the region as `what` (`'then' region`).
fn check_yield_region(ctx: &Context, r: RegionId, what: &str) -> Result<(), String> {
    let Some(b) = single_block(ctx, r) else {
        return Err(format!("{what} must have exactly one block"));
    };
    if !ctx.block_args(b).is_empty() {
        return Err(format!("{what} must not have block arguments"));
    }
    if terminator_named(ctx, b, "scf.yield").is_none() {
        return Err(format!("{what} must end with 'scf.yield'"));
    }
    Ok(())
}

/// Whether every op of region `r` (at any depth) is free of effects.
fn region_is_pure(ctx: &Context, r: RegionId) -> bool {
    ctx.region(r).blocks.iter().all(|&b| {
        ctx.iter_block(b).all(|op| {
            let t = ctx.spec(op).traits;
            is_side_effect_free(ctx, op)
                || (t.contains(Traits::TERMINATOR)
                    && !t.intersects(Traits::READS | Traits::WRITES | Traits::ALLOCATES)
                    && ctx.regions(op).is_empty())
        })
    })
}

/// Whether the single block of `r` holds only an `scf.yield` without operands.
fn is_empty_yield_region(ctx: &Context, r: RegionId) -> bool {
    match yield_of(ctx, r) {
        Some((b, y)) => ctx.block(b).first == Some(y) && ctx.operands(y).is_empty(),
        None => false,
    }
}

/// Inlines the single block of `r` at the builder's insertion point: block
/// argument `k` is replaced by `args[k]`, every op but the final `scf.yield`
/// moves out, and the yielded values are returned. `None` (and nothing
/// changed) when `r` does not have that shape or `args` has the wrong length.
fn inline_region(b: &mut Builder, r: RegionId, args: &[ValueId]) -> Option<Values> {
    let (blk, y) = yield_of(b.ctx, r)?;
    if b.ctx.block_args(blk).len() != args.len() {
        return None;
    }
    let block_args = b.ctx.block_args(blk).to_vec();
    for (&a, &v) in block_args.iter().zip(args) {
        b.ctx.replace_uses_where(a, v, |_, _| true);
    }
    let (dest, before) = b.insertion_point();
    for op in b.ctx.block_ops(blk) {
        if op != y {
            b.ctx.move_op(op, dest, before);
        }
    }
    Some(SmallVec::from_slice(b.ctx.operands(y)))
}

/// Region `i` of `op`, or a run-time fault for a malformed op.
fn region_at(ctx: &Context, op: OpId, i: usize) -> Result<RegionId, ir::RunError> {
    ctx.regions(op)
        .get(i)
        .copied()
        .filter(|&r| single_block(ctx, r).is_some())
        .ok_or_else(|| ir::RunError::at(ctx, op, format!("region #{i} is missing or malformed")))
}

/// Types of `vals`.
fn types_of(ctx: &Context, vals: &[ValueId]) -> Vec<Type> {
    vals.iter().map(|&v| ctx.ty(v).clone()).collect()
}

/// `(A, B)` for messages.
fn fmt_types(ts: &[Type]) -> String {
    let parts: Vec<String> = ts.iter().map(|t| t.to_string()).collect();
    format!("({})", parts.join(", "))
}

/// Prints ` -> (T, ...)` when `op` has results (custom forms).
fn print_result_types(p: &mut ir::printer::Printer, op: OpId) {
    let ctx = p.ctx();
    let rts = types_of(ctx, ctx.results(op));
    if !rts.is_empty() {
        p.w(" -> (");
        p.types(&rts);
        p.w(")");
    }
}

/// An optional `-> T` or `-> (T, ...)` result list (empty without `->`).
fn parse_result_types(cp: &mut CustomParser) -> Result<Vec<Type>, ir::ast::SyntaxError> {
    if cp.try_punct("->") {
        // `-> T`, `-> (T, U)`, or MLIR's bare list `-> T, U`
        // (`scf.index_switch`).
        let mut out = cp.type_list()?;
        if out.len() == 1 {
            while cp.try_punct(",") {
                out.push(cp.expect_type()?);
            }
        }
        Ok(out)
    } else {
        Ok(vec![])
    }
}

/// Appends an `scf.yield` without operands to the last block of `region`
/// unless it already ends in one (MLIR's implicit terminator).
fn ensure_yield(region: &mut AstRegion) {
    if region.lazy_end.is_some() {
        // Not read yet: the IR builder appends the yield when it builds it.
        region.implicit_terminator = Some("scf.yield");
        return;
    }
    let loc = region.loc;
    // Several blocks (a multi-block scf.execute_region) write their own
    // terminators, as in MLIR.
    if region.blocks.len() > 1 {
        return;
    }
    let has_yield = region
        .blocks
        .last()
        .and_then(|b| b.ops.last())
        .is_some_and(|o| o.name == "scf.yield");
    if has_yield {
        return;
    }
    // Copies the region only when it has to change.
    let blocks = std::rc::Rc::make_mut(&mut region.blocks);
    if blocks.is_empty() {
        blocks.push(AstBlock {
            label: None,
            args: vec![],
            ops: vec![],
            loc,
        });
    }
    let block = blocks.last_mut().unwrap();
    if block.ops.last().map(|o| o.name.as_str()) != Some("scf.yield") {
        let at = block.ops.last().map(|o| o.loc).unwrap_or(loc);
        block.ops.push(AstOp {
            results: vec![],
            name: "scf.yield".to_string(),
            loc: at,
            body: AstOpBody::Custom(vec![]),
        });
    }
}

/// A region `{ ... }`; an empty `{}` (which the grammar reads as an empty
/// attribute dictionary) is an empty region.
fn expect_region_or_empty(cp: &mut CustomParser) -> Result<AstRegion, ir::ast::SyntaxError> {
    let loc = cp.loc();
    if let Some(r) = cp.try_region() {
        return Ok(r);
    }
    match cp.peek().map(|i| &i.kind) {
        Some(ir::ast::AstItemKind::AttrDict(d)) if d.is_empty() => {
            cp.next_item();
            Ok(AstRegion::new(vec![], loc))
        }
        _ => Err(cp.error("expected a region '{ ... }'")),
    }
}

// ----- builders -----------------------------------------------------------------

/// Builds `scf.yield vals` at the insertion point (never folded or shared).
pub fn build_yield(b: &mut Builder, vals: &[ValueId]) -> OpId {
    let st = b.state("scf.yield", vals, &[], vec![]);
    b.create_raw(st)
}

/// Builds a detached single-block region with arguments `arg_types` whose
/// body is filled by `body`; the values it returns are yielded.
fn yield_region(
    b: &mut Builder,
    arg_types: &[Type],
    body: impl FnOnce(&mut Builder, &[ValueId]) -> Vec<ValueId>,
) -> RegionId {
    b.build_region(arg_types, |b, args| {
        let vals = body(b, args);
        build_yield(b, &vals);
    })
}

/// Smart-builds `scf.if %cond -> (result_types)`; each closure fills its
/// branch and returns the values it yields. Returns the op's results (or
/// what a fold replaced them with).
pub fn build_if(
    b: &mut Builder,
    cond: ValueId,
    result_types: &[Type],
    then_body: impl FnOnce(&mut Builder) -> Vec<ValueId>,
    else_body: impl FnOnce(&mut Builder) -> Vec<ValueId>,
) -> Values {
    let t = yield_region(b, &[], |b, _| then_body(b));
    let e = yield_region(b, &[], |b, _| else_body(b));
    b.op_with_regions("scf.if", &[cond], result_types, vec![], &[t, e])
}

/// Smart-builds `scf.if %cond { then() } else { }` without results.
pub fn build_if_then(b: &mut Builder, cond: ValueId, then: impl FnOnce(&mut Builder)) {
    build_if(
        b,
        cond,
        &[],
        |b| {
            then(b);
            vec![]
        },
        |_| vec![],
    );
}

/// Smart-builds `scf.for %i = lb to ub step step iter_args(inits)`; `body`
/// receives the induction variable and the accumulators and returns the
/// next accumulators. Returns the final accumulators.
pub fn build_for(
    b: &mut Builder,
    lb: ValueId,
    ub: ValueId,
    step: ValueId,
    inits: &[ValueId],
    body: impl FnOnce(&mut Builder, ValueId, &[ValueId]) -> Vec<ValueId>,
) -> Values {
    let acc_types = types_of(b.ctx, inits);
    let mut arg_types = vec![Type::Index];
    arg_types.extend(acc_types.iter().cloned());
    let r = yield_region(b, &arg_types, |b, args| body(b, args[0], &args[1..]));
    let mut operands = vec![lb, ub, step];
    operands.extend_from_slice(inits);
    b.op_with_regions("scf.for", &operands, &acc_types, vec![], &[r])
}

/// Smart-builds `scf.while (inits) -> (result_types)`: `before` receives the
/// current values and returns `(condition, forwarded values)`; `after`
/// receives the forwarded values and returns the next values.
pub fn build_while(
    b: &mut Builder,
    inits: &[ValueId],
    result_types: &[Type],
    before: impl FnOnce(&mut Builder, &[ValueId]) -> (ValueId, Vec<ValueId>),
    after: impl FnOnce(&mut Builder, &[ValueId]) -> Vec<ValueId>,
) -> Values {
    let init_types = types_of(b.ctx, inits);
    let r0 = b.build_region(&init_types, |b, args| {
        let (c, vals) = before(b, args);
        let mut ops = vec![c];
        ops.extend(vals);
        let st = b.state("scf.condition", &ops, &[], vec![]);
        b.create_raw(st);
    });
    let r1 = yield_region(b, result_types, after);
    b.op_with_regions("scf.while", inits, result_types, vec![], &[r0, r1])
}

/// Smart-builds `scf.assert %cond, "msg"` (nothing when `cond` is the constant true).
pub fn build_assert(b: &mut Builder, cond: ValueId, msg: &str) {
    b.op(
        "scf.assert",
        &[cond],
        &[],
        vec![("msg".to_string(), Attribute::Str(msg.to_string()))],
    );
}

// ----- registration -------------------------------------------------------------

/// Registers `scf.if`, `scf.index_switch`, `scf.for`, `scf.forall`, `scf.while`, `scf.yield`, `scf.condition`, `scf.assert`.
pub fn register(r: &mut Registry) {
    r.register(
        OpSpec::new(
            "scf.if",
            "if-then-else with results yielded by the taken branch",
        )
        .operands(Arity::Exactly(1))
        .results(Arity::AtLeast(0))
        .regions(Arity::Exactly(2))
        .traits(Traits::RECURSIVELY_PURE | Traits::REGIONS_NEED_TERMINATOR)
        .verify(if_op::verify)
        .empty_region_terminator("scf.yield")
        .rewrite(if_op::fold_constant_condition)
        .rewrite(if_op::fold_known_condition)
        .rewrite(if_op::simplify_results)
        .rewrite(if_op::to_select)
        .interpret(if_op::interpret)
        .custom_form(if_op::print, if_op::parse),
    );
    r.register(
        OpSpec::new(
            "scf.for",
            "counted loop with loop-carried values (iter_args)",
        )
        .operands(Arity::AtLeast(3))
        .results(Arity::AtLeast(0))
        .regions(Arity::Exactly(1))
        .traits(Traits::RECURSIVELY_PURE | Traits::REGIONS_NEED_TERMINATOR)
        .verify(for_op::verify)
        .desugar(for_op::desugar)
        .rewrite(for_op::fold_zero_trip)
        .rewrite(for_op::inline_single_iteration)
        .rewrite(for_op::remove_invariant_iter_args)
        .rewrite(for_op::remove_dead)
        .interpret(for_op::interpret)
        .custom_form(for_op::print, for_op::parse),
    );
    r.register(
        OpSpec::new(
            "scf.execute_region",
            "runs its region once, in place, and returns what it yields",
        )
        .operands(Arity::Exactly(0))
        .results(Arity::AtLeast(0))
        .regions(Arity::Exactly(1))
        .multi_block()
        .traits(Traits::RECURSIVELY_PURE | Traits::REGIONS_NEED_TERMINATOR)
        .verify(execute_region_op::verify)
        .rewrite(execute_region_op::inline)
        .lowering("gen", execute_region_op::inline)
        .interpret(execute_region_op::interpret)
        .custom_form(execute_region_op::print, execute_region_op::parse),
    );
    r.register(
        OpSpec::new(
            "scf.forall",
            "parallel loop: the body runs once per iteration in [0, n), in any order",
        )
        .operands(Arity::Exactly(1))
        .regions(Arity::Exactly(1))
        .traits(Traits::RECURSIVELY_PURE | Traits::REGIONS_NEED_TERMINATOR)
        .verify(forall_op::verify)
        .rewrite(forall_op::fold_zero_trip)
        .rewrite(forall_op::inline_single_iteration)
        .rewrite(forall_op::remove_dead)
        .interpret(forall_op::interpret)
        .custom_form(forall_op::print, forall_op::parse),
    );
    r.register(
        OpSpec::new(
            "scf.forall_threads",
            "how many threads an scf.forall started here may use (1 in the interpreter)",
        )
        .operands(Arity::Exactly(0))
        .results(Arity::Exactly(1))
        .traits(Traits::PURE)
        .assembly_format("attr-dict : type(results)")
        .verify(threads_op::verify)
        .interpret(threads_op::interpret),
    );
    r.register(
        OpSpec::new(
            "scf.index_switch",
            "runs the region of the case equal to an index, or the default region",
        )
        .operands(Arity::Exactly(1))
        .results(Arity::AtLeast(0))
        .regions(Arity::AtLeast(1))
        .traits(Traits::RECURSIVELY_PURE | Traits::REGIONS_NEED_TERMINATOR)
        .verify(switch_op::verify)
        .rewrite(switch_op::fold_constant)
        .lowering("gen", switch_op::lower_to_ifs)
        .interpret(switch_op::interpret)
        .generic_attrs(switch_op::generic_attrs, switch_op::parse_generic_attrs)
        .custom_form(switch_op::print, switch_op::parse),
    );
    r.register(
        OpSpec::new(
            "scf.while",
            "general loop: 'before' region tests, 'after' region steps",
        )
        .operands(Arity::AtLeast(0))
        .results(Arity::AtLeast(0))
        .regions(Arity::Exactly(2))
        .traits(Traits::RECURSIVELY_PURE | Traits::REGIONS_NEED_TERMINATOR)
        .verify(while_op::verify)
        .interpret(while_op::interpret)
        .custom_form(while_op::print, while_op::parse),
    );
    r.register(
        OpSpec::new(
            "scf.parallel",
            "a loop nest whose iterations are independent, with reductions (MLIR's)",
        )
        .operands(Arity::AtLeast(3))
        .results(Arity::AtLeast(0))
        .regions(Arity::Exactly(1))
        .traits(Traits::RECURSIVELY_PURE | Traits::REGIONS_NEED_TERMINATOR)
        .verify(parallel_op::verify)
        .rewrite(parallel_op::fold_zero_trip)
        .rewrite(parallel_op::remove_single_iterations)
        .lowering("gen", parallel_op::lower)
        .interpret(parallel_op::interpret)
        .generic_attrs(parallel_op::generic_attrs, parallel_op::parse_generic_attrs)
        .custom_form(parallel_op::print, parallel_op::parse),
    );
    r.register(
        OpSpec::new(
            "scf.reduce",
            "feeds a value to the reduction of its scf.parallel (by its position)",
        )
        .operands(Arity::Exactly(1))
        .regions(Arity::Exactly(1))
        // Not pure: it has no result, but its value feeds the parallel's.
        .traits(Traits::REGIONS_NEED_TERMINATOR)
        .verify(parallel_op::verify_reduce)
        .interpret(parallel_op::interpret_reduce)
        .custom_form(parallel_op::print_reduce, parallel_op::parse_reduce),
    );
    r.register(
        OpSpec::new("scf.reduce.return", "ends the region of scf.reduce")
            .operands(Arity::Exactly(1))
            .traits(Traits::TERMINATOR | Traits::PURE)
            .verify(parallel_op::verify_reduce_return)
            .interpret(crate::func::interp_terminator)
            .custom_form(crate::func::print_terminator, crate::func::parse_terminator),
    );
    r.register(
        OpSpec::new(
            "scf.yield",
            "ends an scf region, yielding values to the parent op",
        )
        .operands(Arity::AtLeast(0))
        .traits(Traits::TERMINATOR | Traits::PURE)
        .verify(terminators::verify_yield)
        .interpret(crate::func::interp_terminator)
        .custom_form(crate::func::print_terminator, crate::func::parse_terminator),
    );
    r.register(
        OpSpec::new("scf.condition", "ends the 'before' region of scf.while")
            .operands(Arity::AtLeast(1))
            .traits(Traits::TERMINATOR | Traits::PURE)
            .verify(terminators::verify_condition)
            .interpret(crate::func::interp_terminator)
            .custom_form(terminators::print_condition, terminators::parse_condition),
    );
    r.register(
        OpSpec::new(
            "scf.assert",
            "run-time check: faults with 'msg' when the condition is false",
        )
        .operands(Arity::Exactly(1))
        .traits(Traits::READS | Traits::WRITES)
        .verify(terminators::verify_assert)
        .rewrite(terminators::fold_assert)
        .interpret(terminators::interpret_assert)
        .custom_form(terminators::print_assert, terminators::parse_assert),
    );
}
