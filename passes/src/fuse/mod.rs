//! `fuse`: loop fusion at the generator level (IR-SPEC §4).
//!
//! Every `vec`/`mat` op is first viewed as the `gen.loop` it stands for (the
//! `gen` lowering phase). Then, per block, pairs of loops `A` (earlier) and
//! `B` are merged into one loop, following Delite's rules (Rompf et al.,
//! "Loop fusion" figure in the Delite compiler chapter):
//! - *horizontal*: `B` does not read `A`, and their sizes are provably equal;
//! - *vertical*: `B` reads `A`'s collect outputs only as `vec.get(out, i_B)`
//!   (its own index). With an exact producer (one unconditional emit per
//!   index) `B`'s body follows `A`'s body and each read becomes the emitted
//!   value; with a filtering producer (the emit sits under `scf.if` or in a
//!   nested loop) `B`'s body is placed right after the emit, inside its
//!   context, so `B`'s generators see exactly the emitted elements.
//!   An output of `A` still used elsewhere stays a generator of the fused
//!   loop ("diagonal" fusion), so the producer's work is never duplicated.
//!
//! Merging pairs repeatedly fuses a producer into several consumers without
//! duplicating work: the first merge keeps the producer's output alive, the
//! second consumes it, and the now-unused generator is removed (the effect of
//! L0's T2 graph reduction, Henriksen 2014, ch. 5). Refused: reads at another
//! index or of the whole vector, sizes not provably equal, two loops that
//! emit to the same enclosing handle (a flatMap's emits are ordered), dependencies
//! through ops between the loops, effects between them, and consumers in
//! other blocks (e.g. inside a sequential `scf.for`, which would redo the
//! producer each iteration) — except trivial producers (`iota`/`fill`-like
//! loops), whose reads are substituted anywhere. Afterwards CSE and
//! canonicalization run inside the fused bodies.

mod bucket;
pub(crate) mod loops;
mod reshape;
mod sizes;
mod substitute;

use std::collections::{HashMap, HashSet};

use ir::pass::{Pass, PassInfo, PassOptions, PassStats};
use ir::{Attribute, BlockId, Context, Diagnostic, OpId, ValueId};

use crate::alias::{Aliases, Effects};
use crate::lower::{lower_phase, simplify};
use loops::{body_ops, emits, emitted_value, exact_emit, view, LoopView};
use sizes::SizeFacts;

/// The pass.
pub struct Fuse {
    /// Which merges it may make.
    pub rules: Rules,
    /// At most this many merges (Futhark's `--fuse=N`); `usize::MAX` for
    /// no limit. Running out is reported as the statistic `fuel-exhausted`.
    pub fuel: usize,
}

impl Default for Fuse {
    fn default() -> Fuse {
        Fuse {
            rules: Rules {
                vertical: true,
                horizontal: true,
                scans: true,
                native: true,
            },
            fuel: usize::MAX,
        }
    }
}

impl Fuse {
    /// Fusion for the `gpu` level (`fuse{target=gpu}`): no scan consumers
    /// fused into their scan. Such a loop reads the running fold
    /// (`gen.running`) and must run sequentially, so no kernel can run it;
    /// apart, the scan and its consumer each become kernels.
    pub fn for_gpu() -> Fuse {
        let mut f = Fuse::default();
        f.rules.scans = false;
        f.rules.native = false;
        f
    }
}

impl Pass for Fuse {
    fn name(&self) -> &'static str {
        "fuse"
    }
    fn run(&mut self, ctx: &mut Context, stats: &mut PassStats) -> Result<(), Diagnostic> {
        fuse(ctx, self.rules, self.fuel, stats);
        Ok(())
    }
}

/// Which merges `fuse` may make.
#[derive(Clone, Copy, Debug)]
pub struct Rules {
    /// Producers into consumers.
    pub vertical: bool,
    /// Siblings of equal size.
    pub horizontal: bool,
    /// Consumers of scans into the scan (through `gen.running`).
    pub scans: bool,
    /// The loops run on the CPU (`target=native`): `mat.mul` becomes the
    /// register-blocked form of [`dialects::mat_blocked`] before the view
    /// as loops; a GPU kernel keeps one thread per entry.
    pub native: bool,
}

/// Runs fusion on the whole module.
///
/// Every merge removes a loop, so this terminates; `fuel` bounds the
/// number of merges all the same (a debugging aid, as Futhark's
/// `--fuse=N`: bisect a miscompile to the merge that causes it).
pub fn fuse(ctx: &mut Context, rules: Rules, mut fuel: usize, stats: &mut PassStats) {
    let vertical = rules.vertical;
    // High-level rewrites (e.g. transpose of transpose) before the view as loops.
    simplify(ctx, stats);
    if rules.native {
        stats.add(
            "blocked-products",
            dialects::mat_blocked::block_products(ctx),
        );
    }
    lower_phase(ctx, "gen", stats);
    normalize_lens(ctx);
    substitute_trivial(ctx, stats);
    simplify(ctx, stats);
    // Loops that compute the same value in every iteration of the loop
    // around them leave it first (a sum over an invariant vector inside a
    // map), so that they run once and can fuse with their new siblings.
    let (h, g) = crate::code_motion::hoist_counted(ctx);
    stats.add("hoisted", h);
    stats.add("hoisted-guarded", g);
    'fixpoint: loop {
        let mut changed = false;
        for b in all_blocks(ctx) {
            loop {
                if fuel == 0 {
                    stats.add("fuel-exhausted", 1);
                    break 'fixpoint;
                }
                if !fuse_block(ctx, b, rules, stats) {
                    break;
                }
                fuel -= 1;
                changed = true;
                normalize_lens(ctx);
            }
        }
        // Producers left that are read only at injective indices are
        // computed at their reads; their consumers may fuse further.
        // Reads through a flattened reshape become reads of its vector,
        // which its producer may fuse with.
        if !changed && (!vertical || reshape_and_substitute(ctx, stats) == 0) {
            break;
        }
    }
    if ir::remarks::enabled("fuse") {
        remark_unfused(ctx, rules, fuel == 0);
    }
    simplify(ctx, stats);
    remove_dead_generators(ctx, stats);
    simplify(ctx, stats);
}

/// The rewrites that let fusion go on when no merge is left: reads
/// through flattened reshapes ([`reshape::read_through`]), producers
/// computed at their reads ([`substitute::substitute_maps`]), and
/// histogram reduces fused into their buckets. Returns how many there were.
fn reshape_and_substitute(ctx: &mut Context, stats: &mut PassStats) -> u64 {
    let reshaped = reshape::read_through(ctx, stats);
    if reshaped > 0 {
        normalize_lens(ctx);
    }
    reshaped + substitute::substitute_maps(ctx, stats) + bucket::fuse_bucket_reduces(ctx, stats)
}

/// Remarks (`--remarks=fuse`) for every producer loop whose output a loop
/// still reads after fusion: located at the producer, with the reason and
/// a note at the consumer.
fn remark_unfused(ctx: &Context, rules: Rules, out_of_fuel: bool) {
    for a in ctx.walk_all() {
        if !loops::is_loop(ctx, a) {
            continue;
        }
        let Some(block) = ctx.op(a).parent else {
            continue;
        };
        let mut seen = HashSet::new();
        for &r in ctx.results(a) {
            // The ops that read `r`: directly, or through a reshape
            // (`mat.from(r, rows, cols)`, read entry by entry).
            let mut readers = Vec::new();
            for u in ctx.uses(r) {
                if ctx.is(u.op, "mat.from") && u.index == 0 {
                    let m = ctx.result(u.op, 0);
                    readers.extend(ctx.uses(m).iter().map(|w| (w.op, true)));
                } else {
                    readers.push((u.op, false));
                }
            }
            for (user, reshaped) in readers {
                let Some(top) = ancestor_in(ctx, user, block) else {
                    continue;
                };
                // The loop that consumes: `top` itself, or a loop nested in
                // a region `top` holds.
                let inner = std::iter::successors(Some(user), |&o| ctx.parent_op(o))
                    .take_while(|&o| o != top)
                    .find(|&o| loops::is_loop(ctx, o));
                let (consumer, why) = if reshaped && (inner.is_some() || loops::is_loop(ctx, top)) {
                    let why = "the consumer reads it through a reshape ('mat.from'); a producer is computed at such reads only when it is a cheap map read once per entry, at a flat index k of a loop over rows * cols ((k / cols, k % cols) or (k % rows, k / rows)) or at (i, j) of a loop nest over the rows and the columns, outside any sequential loop".to_string();
                    (inner.unwrap_or(top), why)
                } else if loops::is_loop(ctx, top) {
                    let why = match plan_merge(ctx, a, top, rules) {
                        Err(why) => why,
                        Ok(_) if out_of_fuel => "fusion ran out of fuel (fuse{fuel=N})".into(),
                        Ok(_) => continue,
                    };
                    (top, why)
                } else if let Some(inner) = inner {
                    let why = format!(
                        "the consumer is inside '{}', a region fusion does not enter (fusing would redo the producer there each time); only a cheap map read at proved indices is recomputed at its reads",
                        ctx.op_name(top)
                    );
                    (inner, why)
                } else {
                    continue;
                };
                if seen.insert(consumer) {
                    ir::remarks::emit_with_note(
                        "fuse",
                        ctx.loc(a),
                        format!("loop not fused into its consumer: {why}"),
                        ctx.loc(consumer),
                        "the consumer",
                    );
                }
            }
        }
    }
}

fn all_blocks(ctx: &Context) -> Vec<BlockId> {
    let mut out = vec![ctx.top];
    for op in ctx.walk_all() {
        for &r in ctx.regions(op) {
            out.extend(ctx.region(r).blocks.iter().copied());
        }
    }
    out
}

/// The loop and generator index defining `v`, if `v` is a loop result.
fn producer_of(ctx: &Context, v: ValueId) -> Option<(LoopView, usize)> {
    let op = ctx.def_op_named(v, "gen.loop")?;
    let lv = view(ctx, op)?;
    let k = lv.gens.iter().position(|g| g.results.contains(&v))?;
    Some((lv, k))
}

/// `vec.len(out)` of an exact collect or scan becomes the loop's size.
fn normalize_lens(ctx: &mut Context) {
    for op in ctx.walk_all() {
        if !ctx.alive(op) || !ctx.is(op, "vec.len") {
            continue;
        }
        let v = ctx.operand(op, 0);
        let Some((lv, k)) = producer_of(ctx, v) else {
            continue;
        };
        let kind = lv.gens[k].kind.as_str();
        if matches!(kind, "collect" | "scan")
            && exact_emit(ctx, lv.body, lv.gens[k].handle).is_some()
        {
            let r = ctx.result(op, 0);
            ctx.replace_all_uses(r, lv.size);
            ctx.erase_op(op);
        }
    }
}

/// Loops whose only work is emitting their index or a loop-invariant value
/// (what `vec.iota` and `vec.fill` become): reads `vec.get(out, j)` anywhere
/// become `j` or the value, so such producers fuse even into consumers in
/// other blocks at no cost. Only reads whose index is provably inside the
/// output ([`read_in_range`]): any other read keeps its bounds check, and
/// with it the producer.
fn substitute_trivial(ctx: &mut Context, stats: &mut PassStats) {
    for op in ctx.walk_all() {
        if !ctx.alive(op) {
            continue;
        }
        let Some(lv) = view(ctx, op) else { continue };
        if lv.gens.len() != 1 || lv.gens[0].kind != "collect" {
            continue;
        }
        let ops = body_ops(ctx, lv.body);
        let [e] = ops.as_slice() else { continue };
        if exact_emit(ctx, lv.body, lv.gens[0].handle) != Some(*e) {
            continue;
        }
        let x = emitted_value(ctx, *e);
        let is_index = x == lv.index;
        let invariant = ctx.value_block(x).is_some_and(|b| !ctx.block_in_op(b, op)) && !is_index;
        if !is_index && !invariant {
            continue;
        }
        let out = lv.gens[0].results[0];
        for u in ctx.uses(out).to_vec() {
            if ctx.is(u.op, "vec.get") && u.index == 0 && read_in_range(ctx, u.op, lv.size) {
                let j = ctx.operand(u.op, 1);
                let r = ctx.result(u.op, 0);
                ctx.replace_all_uses(r, if is_index { j } else { x });
                ctx.erase_op(u.op);
                stats.add("substituted-reads", 1);
            }
        }
    }
}

/// Whether the index of `read` (a `vec.get` of the output of a loop of
/// `size` iterations that emits once per iteration) is provably in
/// `[0, size)`: marked `in_bounds`, or the induction variable of a loop over
/// `size` (or a length known to equal it), or constants
/// ([`dialects::vec::index_in_range`]).
fn read_in_range(ctx: &Context, read: OpId, size: ValueId) -> bool {
    use dialects::vec::{index_in_range, size_key, LenKey};
    let j = ctx.operand(read, 1);
    ctx.attr(read, "in_bounds").is_some()
        || index_in_range(ctx, j, size_key(ctx, size))
        || index_in_range(ctx, j, LenKey::Vec(ctx.operand(read, 0)))
}

/// The ancestor of `op` (or `op` itself) that sits directly in `block`.
fn ancestor_in(ctx: &Context, mut op: OpId, block: BlockId) -> Option<OpId> {
    loop {
        let p = ctx.op(op).parent?;
        if p == block {
            return Some(op);
        }
        op = ctx.block_parent_op(p)?;
    }
}

/// Whether `op` or an op nested in it uses a value in `defs` (by defining op).
fn uses_any(ctx: &Context, op: OpId, defs: &HashSet<OpId>) -> bool {
    std::iter::once(op).chain(ctx.walk_nested(op)).any(|o| {
        ctx.operands(o)
            .iter()
            .any(|&v| ctx.def_op(v).is_some_and(|d| defs.contains(&d)))
    })
}

/// How `B`'s body reads `A`.
enum Mode {
    Horizontal,
    /// Exact producer: reads and `vec.len`s to replace.
    Aligned(Vec<(OpId, usize)>),
    /// Filtering producer: the emit `B`'s body goes after, its generator,
    /// and the reads.
    Filter(OpId, usize, Vec<OpId>),
}

/// The handles of enclosing loops that `l` (or a loop nested in it) emits to
/// or reads the running fold of.
fn outer_handles(ctx: &Context, l: OpId) -> HashSet<ValueId> {
    ctx.walk_nested(l)
        .into_iter()
        .filter(|&o| ctx.is(o, dialects::gen::EMIT) || ctx.is(o, dialects::gen::RUNNING))
        .map(|o| ctx.operand(o, 0))
        .filter(|&h| !dialects::gen::handle_owner(ctx, h).is_some_and(|o| ctx.is_ancestor(l, o)))
        .collect()
}

/// Whether collect or scan generators `j` and `k` of `a` always hold as
/// many elements: each has one emit, and both emits sit in one block.
fn same_count(ctx: &Context, a: &LoopView, j: usize, k: usize) -> bool {
    let ordered = |g: &loops::Gen| matches!(g.kind.as_str(), "collect" | "scan");
    if !ordered(&a.gens[j]) || !ordered(&a.gens[k]) {
        return false;
    }
    let (ej, ek) = (emits(ctx, a.gens[j].handle), emits(ctx, a.gens[k].handle));
    matches!((&ej[..], &ek[..]), ([x], [y]) if ctx.op(*x).parent == ctx.op(*y).parent)
}

/// How `b` merges into `a`, or why it cannot (the reason is an
/// optimization remark's text, [`remark_unfused`]).
fn classify(ctx: &Context, a: &LoopView, b: &LoopView, scans: bool) -> Result<Mode, String> {
    let facts = SizeFacts::before(ctx, b.op);
    // Emits of both loops to one enclosing handle are ordered effects: all
    // of A's come before all of B's, and fusing would interleave them.
    let outer_a = outer_handles(ctx, a.op);
    if !outer_a.is_empty() && !outer_a.is_disjoint(&outer_handles(ctx, b.op)) {
        return Err(
            "both loops emit to one generator of an enclosing loop, whose elements are ordered"
                .into(),
        );
    }
    // B's own operands (size, inits) must not be A's results.
    // B runs over the length of output k, or of another collect of A that
    // emits exactly as often (one emit each, in the same block): the
    // length `vec.len(map(filter(x)))` is rewritten to `vec.len(filter(x))`
    // before the loops exist, and a struct's field vectors share the first
    // one's length.
    let size_from_filter = |k: usize| -> bool {
        ctx.def_op_named(b.size, "vec.len").is_some_and(|l| {
            let v = ctx.operand(l, 0);
            a.gens
                .iter()
                .enumerate()
                .any(|(j, g)| g.results[0] == v && (j == k || same_count(ctx, a, j, k)))
        })
    };
    for &v in &ctx.operands(b.op)[1..] {
        if ctx.def_op(v) == Some(a.op) {
            return Err("the consumer's initial value is a result of the producer".into());
        }
    }
    if ctx.def_op(b.size) == Some(a.op) {
        return Err("the consumer's size is a result of the producer".into());
    }
    let mut reads: Vec<(OpId, usize)> = Vec::new();
    for op in ctx.walk_nested(b.op) {
        for &v in ctx.operands(op) {
            if ctx.def_op(v) != Some(a.op) {
                continue;
            }
            let Some(k) = a.gens.iter().position(|g| g.results.contains(&v)) else {
                return Err(
                    "the consumer uses a result of the producer that no generator makes".into(),
                );
            };
            match a.gens[k].kind.as_str() {
                "collect" => {}
                "scan" if scans => {}
                "scan" => return Err("the consumer reads a scan, and scan fusion is off (fuse{scans=false})".into()),
                kind => {
                    return Err(format!(
                        "the consumer uses the producer's {kind} result, known only after the producer's last iteration"
                    ))
                }
            }
            let aligned_get =
                ctx.is(op, "vec.get") && ctx.operand(op, 0) == v && ctx.operand(op, 1) == b.index;
            if !aligned_get {
                return Err(if ctx.is(op, "vec.get") && ctx.operand(op, 0) == v {
                    "the consumer reads the producer's output at an index other than its own".into()
                } else {
                    format!(
                        "the consumer uses the producer's whole output (in '{}'), not one element per iteration",
                        ctx.op_name(op)
                    )
                });
            }
            reads.push((op, k));
        }
    }
    let unequal = || "the sizes of the two loops are not proved equal".to_string();
    if reads.is_empty() {
        return facts
            .equal(ctx, a.size, b.size)
            .then_some(Mode::Horizontal)
            .ok_or_else(unequal);
    }
    let ks: HashSet<usize> = reads.iter().map(|&(_, k)| k).collect();
    let all_exact = ks
        .iter()
        .all(|&k| exact_emit(ctx, a.body, a.gens[k].handle).is_some());
    if all_exact {
        let same = facts.equal(ctx, a.size, b.size) || ks.iter().any(|&k| size_from_filter(k));
        return same.then_some(Mode::Aligned(reads)).ok_or_else(unequal);
    }
    // A filtering producer: one output, consumed over its own length, with
    // B's index used for nothing but those reads, and a single emit site.
    if ks.len() != 1 {
        return Err("the consumer reads several outputs of a filtering producer".into());
    }
    let k = *ks.iter().next().unwrap();
    if !size_from_filter(k) {
        return Err("the consumer does not run over the length of the filtered output".into());
    }
    if ctx.uses(b.index).len() != reads.len() {
        return Err("the consumer uses its index for more than reading the filtered output".into());
    }
    let [e] = emits(ctx, a.gens[k].handle)[..] else {
        return Err("the filtering producer emits that output from several places".into());
    };
    Ok(Mode::Filter(
        e,
        k,
        reads.into_iter().map(|(o, _)| o).collect(),
    ))
}

/// Memory ops between two loops that fusion may reorder with them: they
/// cannot fault and name what they touch (variables, buffer lengths).
fn movable_access(ctx: &Context, op: OpId) -> bool {
    matches!(
        ctx.op_name(op),
        "var.get" | "var.set" | "var.new" | "arr.len"
    )
}

/// A generator loop between two loops that fusion may reorder with them
/// (issue 44, item 2: loops separated by an independent loop fuse across
/// it, as the thesis's T2 reduction on the dependence graph allows): it
/// ends (no `scf.while`, call or branch in it), emits only to its own
/// generators and nested loops' (so no ordered sequence of an enclosing
/// handle interleaves differently), and names the memory it touches
/// (checked to commute by [`accesses_commute`]). Its faults may come after
/// `B`'s once `B` moves above it, as any pure op's may (IR-SPEC §3).
fn movable_loop(ctx: &Context, op: OpId) -> bool {
    ctx.is(op, dialects::gen::LOOP)
        && outer_handles(ctx, op).is_empty()
        && ctx.walk_nested(op).into_iter().all(|o| {
            let name = ctx.op_name(o);
            !matches!(
                name,
                "scf.while"
                    | "func.call"
                    | "func.call_indirect"
                    | "cf.br"
                    | "cf.cond_br"
                    | "cf.switch"
            )
        })
        && {
            let e = Effects::of(ctx, op);
            !e.unknown_read && !e.unknown_write
        }
}

/// An emit between two loops (to a handle of an enclosing loop, so that
/// no value depends on it) that `b` may move above: `b` emits nothing to
/// the same handle, whose emits are an ordered sequence. Emits to other
/// handles build other results, so their relative order is invisible, and
/// an emit cannot fault (issue 9, item 4: inner loops with an emit between
/// them fuse).
fn movable_emit(ctx: &Context, op: OpId, b: OpId) -> bool {
    ctx.is(op, dialects::gen::EMIT) && !outer_handles(ctx, b).contains(&ctx.operand(op, 0))
}

/// Whether the memory ops `between` two loops commute with both loops and
/// with each other (fusion moves `B` above those it does not depend on,
/// and those `B` depends on above `A`): no write of one may touch what
/// another reads or writes, per allocation.
fn accesses_commute(ctx: &Context, a: OpId, b: OpId, between: &[OpId]) -> bool {
    let aliases = Aliases::compute(ctx);
    let (ea, eb) = (Effects::of(ctx, a), Effects::of(ctx, b));
    let es: Vec<Effects> = between.iter().map(|&o| Effects::of(ctx, o)).collect();
    es.iter().enumerate().all(|(k, e)| {
        !e.conflicts(&ea, &aliases)
            && !e.conflicts(&eb, &aliases)
            && es[k + 1..].iter().all(|f| !e.conflicts(f, &aliases))
    })
}

/// Whether the bodies of loops `a` and `b` touch memory in a way that
/// fusing would reorder: fusion interleaves their iterations, so neither may
/// write an allocation the other reads or writes (effects per allocation,
/// issue 13).
fn bodies_conflict(ctx: &Context, a: OpId, b: OpId) -> bool {
    let (ea, eb) = (Effects::of(ctx, a), Effects::of(ctx, b));
    if ea.is_empty() || eb.is_empty() {
        return false;
    }
    ea.conflicts(&eb, &Aliases::compute(ctx))
}

/// A merge that [`plan_merge`] found legal.
struct Merge {
    a: LoopView,
    b: LoopView,
    mode: Mode,
    /// The ops between the loops, and those of them `b` depends on.
    between: Vec<OpId>,
    d_b: HashSet<OpId>,
}

/// Tries to merge loop `b_op` into the earlier loop `a_op` of the same block.
fn try_merge(
    ctx: &mut Context,
    a_op: OpId,
    b_op: OpId,
    rules: Rules,
    stats: &mut PassStats,
) -> bool {
    match plan_merge(ctx, a_op, b_op, rules) {
        Ok(m) => {
            apply_merge(ctx, m, stats);
            true
        }
        Err(_) => false,
    }
}

/// Whether loop `b_op` may merge into the earlier loop `a_op` of the same
/// block, and how; `Err` says why not. Changes nothing.
fn plan_merge(ctx: &Context, a_op: OpId, b_op: OpId, rules: Rules) -> Result<Merge, String> {
    let (Some(a), Some(b)) = (view(ctx, a_op), view(ctx, b_op)) else {
        return Err("one of the loops is not a generator loop fusion reads".into());
    };
    if !loops::inits_mergeable(ctx, &a.gens, &b.gens) {
        return Err("some of their reductions have initial values and others lack an identity to start from".into());
    }
    let mode = classify(ctx, &a, &b, rules.scans)?;
    match mode {
        Mode::Horizontal if !rules.horizontal => {
            return Err("horizontal fusion is off (fuse{horizontal=false})".into())
        }
        Mode::Aligned(_) | Mode::Filter(..) if !rules.vertical => {
            return Err("vertical fusion is off (fuse{vertical=false})".into())
        }
        _ => {}
    }
    if bodies_conflict(ctx, a_op, b_op) {
        return Err("one loop writes memory that the other reads or writes".into());
    }
    let block = ctx.op(a_op).parent.unwrap();
    // Ops between A and B.
    let mut between = Vec::new();
    let mut cur = ctx.op(a_op).next;
    while let Some(op) = cur {
        if op == b_op {
            break;
        }
        between.push(op);
        cur = ctx.op(op).next;
    }
    // D_A: ops between that depend on A.
    let mut d_a: HashSet<OpId> = HashSet::from([a_op]);
    for &op in &between {
        if uses_any(ctx, op, &d_a) {
            d_a.insert(op);
        }
    }
    // D_B: ops between that B depends on (asserts are kept before B too).
    // With a filtering producer B's size (the filter's length) is replaced
    // by A's size, so that use does not count.
    let filter = matches!(mode, Mode::Filter(..));
    let mut d_b: HashSet<OpId> = HashSet::from([b_op]);
    for &op in between.iter().rev() {
        let needed = ctx.is(op, "scf.assert")
            || ctx.results(op).iter().any(|&r| {
                ctx.uses(r).iter().any(|u| {
                    let b_size = u.op == b_op && u.index == 0;
                    !(filter && b_size)
                        && ancestor_in(ctx, u.op, block).is_some_and(|x| d_b.contains(&x))
                })
            });
        if needed {
            d_b.insert(op);
        }
    }
    let mut touching: Vec<OpId> = Vec::new();
    for &op in &between {
        let pure = ir::rewrite::is_side_effect_free(ctx, op);
        if !pure && !ctx.is(op, "scf.assert") && !movable_emit(ctx, op, b_op) {
            if !movable_access(ctx, op) && !movable_loop(ctx, op) {
                return Err(format!(
                    "'{}' between the loops has effects that fusion may not reorder",
                    ctx.op_name(op)
                ));
            }
            touching.push(op);
        }
        if d_a.contains(&op) && d_b.contains(&op) {
            return Err(format!(
                "the consumer needs '{}', which needs a result of the producer (the producer must finish first)",
                ctx.op_name(op)
            ));
        }
    }
    if !touching.is_empty() && !accesses_commute(ctx, a_op, b_op, &touching) {
        return Err("memory accesses between the loops conflict with the loops".into());
    }
    Ok(Merge {
        a,
        b,
        mode,
        between,
        d_b,
    })
}

/// Carries out merge `m`.
fn apply_merge(ctx: &mut Context, m: Merge, stats: &mut PassStats) {
    let Merge {
        a,
        b,
        mode,
        between,
        d_b,
    } = m;
    let (a_op, b_op) = (a.op, b.op);
    let block = ctx.op(a_op).parent.unwrap();
    // Hoist B's dependencies above A, in order.
    for &op in &between {
        if d_b.contains(&op) {
            ctx.move_op(op, block, Some(a_op));
        }
    }
    match &mode {
        Mode::Horizontal => {
            stats.add("fused-horizontal", 1);
            let b_ops = body_ops(ctx, b.body);
            append_body(ctx, &a, &b_ops);
        }
        Mode::Aligned(reads) => {
            stats.add("fused-vertical", 1);
            let mut at_emit = HashMap::new();
            for &(get, k) in reads {
                let e = exact_emit(ctx, a.body, a.gens[k].handle).unwrap();
                let x = element_at(ctx, &a.gens[k], e, &mut at_emit);
                let r = ctx.result(get, 0);
                ctx.replace_all_uses(r, x);
                ctx.erase_op(get);
            }
            let b_ops = body_ops(ctx, b.body);
            append_body(ctx, &a, &b_ops);
        }
        Mode::Filter(e, k, reads) => {
            stats.add("fused-filter", 1);
            // B's body goes before the op that followed the emit, so after
            // a scan's `gen.running` too.
            let eb = ctx.op(*e).parent.unwrap();
            let after = ctx.op(*e).next;
            let x = element_at(ctx, &a.gens[*k], *e, &mut HashMap::new());
            for &get in reads {
                let r = ctx.result(get, 0);
                ctx.replace_all_uses(r, x);
                ctx.erase_op(get);
            }
            for op in body_ops(ctx, b.body) {
                ctx.move_op(op, eb, after);
            }
        }
    }
    let mut gens = a.gens.clone();
    gens.extend(b.gens.iter().cloned());
    let ops = body_ops(ctx, a.body);
    loops::build_loop(ctx, a_op, a.size, &gens, &[a.index, b.index], &ops);
    ctx.erase_op(a_op);
    ctx.erase_op(b_op);
}

/// The element that emit `e` of generator `g` adds to `g`'s vector: the
/// emitted value of a collect, or for a scan the running fold right after
/// the emit (a `gen.running` placed after it, one per emit, cached in
/// `made`).
fn element_at(
    ctx: &mut Context,
    g: &loops::Gen,
    e: OpId,
    made: &mut HashMap<OpId, ValueId>,
) -> ValueId {
    if g.kind != "scan" {
        return emitted_value(ctx, e);
    }
    if let Some(&r) = made.get(&e) {
        return r;
    }
    let next = ctx.op(e).next.expect("an emit is never a terminator");
    let mut b = ir::Builder::before(ctx, next);
    let r = dialects::gen::running::running(&mut b, g.handle);
    made.insert(e, r);
    r
}

fn append_body(ctx: &mut Context, a: &LoopView, b_ops: &[OpId]) {
    let end = ctx.terminator(a.body);
    for &op in b_ops {
        ctx.move_op(op, a.body, end);
    }
}

fn fuse_block(ctx: &mut Context, block: BlockId, rules: Rules, stats: &mut PassStats) -> bool {
    let loops: Vec<OpId> = ctx
        .iter_block(block)
        .filter(|&op| loops::is_loop(ctx, op))
        .collect();
    for bi in 1..loops.len() {
        for ai in (0..bi).rev() {
            if try_merge(ctx, loops[ai], loops[bi], rules, stats) {
                return true;
            }
        }
    }
    false
}

/// Drops generators whose results are unused (erasing their emits), and
/// loops left with no generators, no emits to outer handles and no writes
/// to memory.
pub fn remove_dead_generators(ctx: &mut Context, stats: &mut PassStats) {
    remove_dead_generators_tracked(ctx, stats, &mut HashMap::new());
}

/// [`remove_dead_generators`], recording in `moved` each result of a
/// rebuilt loop and the result of the new loop that replaced it.
pub fn remove_dead_generators_tracked(
    ctx: &mut Context,
    stats: &mut PassStats,
    moved: &mut HashMap<ValueId, ValueId>,
) {
    for op in ctx.walk_all() {
        if !ctx.alive(op) {
            continue;
        }
        let Some(lv) = view(ctx, op) else { continue };
        // A scan whose vector is unused but whose running fold is read
        // becomes a reduce (same accumulator, no vector).
        let mut lv = lv;
        let read: Vec<bool> = lv
            .gens
            .iter()
            .map(|g| !dialects::gen::running::reads_of(ctx, g.handle).is_empty())
            .collect();
        for (k, &read_k) in read.iter().enumerate() {
            if lv.gens[k].kind == "scan" && read_k && ctx.unused(lv.gens[k].results[0]) {
                scan_to_reduce(ctx, &mut lv, k);
                stats.add("scans-to-reduces", 1);
            }
        }
        let dead: Vec<bool> = lv
            .gens
            .iter()
            .zip(&read)
            .map(|(g, &read)| !read && g.results.iter().all(|&r| ctx.unused(r)))
            .collect();
        if !dead.iter().any(|&d| d) {
            continue;
        }
        for (g, &d) in lv.gens.iter().zip(&dead) {
            if d {
                for e in emits(ctx, g.handle) {
                    ctx.erase_op(e);
                }
                stats.add("dead-generators", 1);
            }
        }
        let live: Vec<loops::Gen> = lv
            .gens
            .iter()
            .zip(&dead)
            .filter(|(_, &d)| !d)
            .map(|(g, _)| g.clone())
            .collect();
        let has_emits = ctx
            .walk_nested(op)
            .into_iter()
            .any(|o| ctx.is(o, "gen.emit"));
        // A loop whose body writes memory stays, with no generators.
        let e = Effects::of(ctx, op);
        if live.is_empty() && !has_emits && e.writes.is_empty() && !e.unknown_write {
            ctx.erase_op(op);
            continue;
        }
        let ops = body_ops(ctx, lv.body);
        let new = loops::build_loop(ctx, op, lv.size, &live, &[lv.index], &ops);
        let old_results = live.iter().flat_map(|g| g.results.iter().copied());
        for (k, r) in old_results.enumerate() {
            moved.insert(r, ctx.result(new, k));
        }
        ctx.erase_op(op);
    }
}

/// Turns scan generator `k` of loop `lv` into a reduce with the same
/// monoid and init, in place: its handle becomes `!gen.reduce<T>` and its
/// (unused) result a `T`.
fn scan_to_reduce(ctx: &mut Context, lv: &mut LoopView, k: usize) {
    use dialects::gen::{GenKind, Monoid};
    let g = &mut lv.gens[k];
    let Ok(GenKind::Scan(m)) = GenKind::from_attr(&g.attr) else {
        return;
    };
    let m: Monoid = m;
    let Some(t) = ctx.ty(g.results[0]).elem().cloned() else {
        return;
    };
    g.attr = GenKind::Reduce(m).attr();
    g.kind = "reduce".to_string();
    ctx.set_type(g.handle, dialects::gen::reduce_type(t.clone()));
    ctx.set_type(g.results[0], t);
    let attrs = Attribute::Array(lv.gens.iter().map(|g| g.attr.clone()).collect());
    ctx.set_attr(lv.op, "gens", attrs);
}

fn create(opts: &PassOptions) -> Result<Box<dyn Pass>, String> {
    opts.check_known(
        "fuse",
        &["vertical", "horizontal", "scans", "fuel", "target"],
    )?;
    let gpu = match opts.get("target").unwrap_or("native") {
        "native" => false,
        "gpu" => true,
        t => return Err(format!("unknown target '{t}' (expected native or gpu)")),
    };
    Ok(Box::new(Fuse {
        rules: Rules {
            vertical: opts.get_bool("vertical", true)?,
            horizontal: opts.get_bool("horizontal", true)?,
            scans: opts.get_bool("scans", !gpu)?,
            native: !gpu,
        },
        fuel: opts.get_usize("fuel", usize::MAX)?,
    }))
}

/// Registration record.
pub fn info() -> PassInfo {
    PassInfo {
        name: "fuse",
        description:
            "view vec/mat ops as generator loops and fuse them (vertical, horizontal, filters)",
        options: &[
            ("vertical", "fuse producers into consumers (default true)"),
            (
                "horizontal",
                "fuse sibling loops of equal size (default true)",
            ),
            (
                "scans",
                "fuse consumers of a scan into it; the fused loop is sequential (default true)",
            ),
            (
                "target",
                "native or gpu: with gpu, only merges a kernel can run (scans defaults to false)",
            ),
            (
                "fuel",
                "at most this many merges (default: no limit; statistic fuel-exhausted)",
            ),
        ],
        create,
    }
}
