//! `split-reductions`: reduce loops get several accumulators. A `gen.loop`
//! whose generators are all reductions (emitted anywhere in its body: at
//! the top, under an `scf.if`, or from an inner loop) is rewritten into a main loop over `size / f` iterations
//! whose body holds `f` copies of the original body (indices `f*k + j`),
//! each emitting to its own copy of every reduce generator, plus a remainder
//! loop over the last `size % f` indices; the partial results are combined
//! with the monoid's op. The extra accumulators start at the monoid's exact
//! identity (`-0.0` for a float sum: `+0.0` would turn a sum of `-0.0`s
//! into `+0.0`). Reductions are associative by declaration (IR-SPEC
//! §3, as in L0 and Futhark), so this reassociation is allowed; it gives the
//! code generator independent dependency chains to overlap.

use ir::clone::{clone_block_into, ValueMap};
use ir::pass::{Pass, PassInfo, PassOptions, PassStats};
use ir::{Attribute, Builder, Context, Diagnostic, OpId, Type, ValueId};

use dialects::gen::lower::exact_identity;
use dialects::gen::{self, GenKind, Generator};

/// The pass.
pub struct SplitReductions {
    /// Accumulators per reduction (1 disables the pass).
    pub factor: usize,
}

impl Pass for SplitReductions {
    fn name(&self) -> &'static str {
        "split-reductions"
    }
    fn run(&mut self, ctx: &mut Context, stats: &mut PassStats) -> Result<(), Diagnostic> {
        stats.add("split", split_reductions(ctx, self.factor));
        Ok(())
    }
}

/// Whether `op` is a loop this transformation applies to.
fn eligible(ctx: &Context, op: OpId) -> Option<Vec<Generator>> {
    if !ctx.is(op, "gen.loop") {
        return None;
    }
    let gens = gen::try_generators(ctx, op).ok()?;
    if gens.is_empty() || !gens.iter().all(|g| matches!(g.kind, GenKind::Reduce(_))) {
        return None;
    }
    // Scalar monoids only: a reduction of records has no identity constant
    // (split-structs gives each field its own generator first).
    if !gens.iter().all(|g| {
        g.monoid()
            .is_some_and(|m| exact_identity(m, &g.elem).is_some())
    }) {
        return None;
    }
    // Everything else in the body must be free of effects (no emits to
    // outer handles, no memory operations), so copies can be reordered.
    // Emits may stand anywhere in the body (under an `scf.if`, in an inner
    // loop, as a flatMap's): each copy emits to its own accumulators in the
    // order the original did.
    for o in ctx.walk_nested(op) {
        if ctx.is(o, "gen.emit") || ctx.is(o, "gen.end") {
            let local = |h: ValueId| ctx.value_block(h).is_some_and(|b| ctx.block_in_op(b, op));
            if ctx.is(o, "gen.emit") && !local(ctx.operand(o, 0)) {
                return None;
            }
            continue;
        }
        // Structured ops (an inner loop, an `scf.if`) are judged by what
        // they hold, which this walk visits too.
        let structured = matches!(ctx.op_name(o), "gen.loop" | "scf.if" | "scf.for");
        if !structured
            && !ir::rewrite::is_side_effect_free(ctx, o)
            && !ctx.has_traits(o, ir::Traits::TERMINATOR)
        {
            return None;
        }
    }
    Some(gens)
}

fn index_const(b: &mut Builder, v: i64) -> ValueId {
    b.constant(Attribute::int(v, Type::Index), &Type::Index)
}

/// Clones the body of `op` at the builder's insertion point with the index
/// replaced by `idx` and handle `h` of generator `g` replaced by `handles[g]`.
fn clone_body(b: &mut Builder, op: OpId, idx: ValueId, handles: &[ValueId]) {
    let body = gen::body(b.ctx, op);
    let mut map = ValueMap::new();
    map.insert(gen::induction_var(b.ctx, op), idx);
    for (&h, &n) in gen::handles(b.ctx, op).to_vec().iter().zip(handles) {
        map.insert(h, n);
    }
    clone_block_into(b, body, &mut map);
}

fn split_one(ctx: &mut Context, op: OpId, gens: &[Generator], f: usize) {
    let size = gen::size(ctx, op);
    let inits = gen::inits(ctx, op);
    let mut b = Builder::before(ctx, op);
    let cf = index_const(&mut b, f as i64);
    let nq = b.op1("arith.divsi", &[size, cf], Type::Index, vec![]);
    let nmain = b.op1("arith.muli", &[nq, cf], Type::Index, vec![]);
    let rem = b.op1("arith.remsi", &[size, cf], Type::Index, vec![]);
    // Main loop: f copies of every generator; copy 0 starts at the init,
    // or where a reduce without one starts (the monoid's identity: `+0.0`
    // for a float sum, so that an empty sum stays `+0.0`).
    let mut main_gens = Vec::new();
    let mut main_inits = Vec::new();
    for j in 0..f {
        for (g, init) in gens.iter().zip(&inits) {
            main_gens.push(g.clone());
            let m = g.monoid().unwrap();
            let id = exact_identity(m, &g.elem).expect("reduce identity");
            let v = match (j, init) {
                (0, Some(i)) => *i,
                (0, None) => {
                    let start = m.identity(&g.elem).expect("reduce identity");
                    b.constant(start, &g.elem)
                }
                _ => b.constant(id, &g.elem),
            };
            main_inits.push(v);
        }
    }
    let ng = gens.len();
    let mains = gen::build_loop(&mut b, nq, &main_inits, &main_gens, |b, k, hs| {
        let base = b.op1("arith.muli", &[k, cf], Type::Index, vec![]);
        for j in 0..f {
            let cj = index_const(b, j as i64);
            let idx = b.op1("arith.addi", &[base, cj], Type::Index, vec![]);
            clone_body(b, op, idx, &hs[j * ng..(j + 1) * ng]);
        }
    });
    // Remainder loop over [nmain, size), starting from the identities.
    let rem_inits: Vec<ValueId> = gens
        .iter()
        .map(|g| {
            let id = exact_identity(g.monoid().unwrap(), &g.elem).unwrap();
            b.constant(id, &g.elem)
        })
        .collect();
    let rests = gen::build_loop(&mut b, rem, &rem_inits, gens, |b, r, hs| {
        let idx = b.op1("arith.addi", &[nmain, r], Type::Index, vec![]);
        clone_body(b, op, idx, hs);
    });
    let mut finals = Vec::new();
    for (gi, g) in gens.iter().enumerate() {
        let comb = g.monoid().unwrap().combine_op(&g.elem).unwrap();
        // Pairwise tree over the partial results, then the remainder.
        let mut parts: Vec<ValueId> = (0..f).map(|j| mains[j * ng + gi]).collect();
        while parts.len() > 1 {
            let mut next = Vec::new();
            for pair in parts.chunks(2) {
                next.push(match pair {
                    [a, c] => b.op1(comb, &[*a, *c], g.elem.clone(), vec![]),
                    [a] => *a,
                    _ => unreachable!(),
                });
            }
            parts = next;
        }
        finals.push(b.op1(comb, &[parts[0], rests[gi]], g.elem.clone(), vec![]));
    }
    ctx.replace_op(op, &finals);
}

/// Accumulators per reduction of a loop with `reductions` of them: `factor`
/// for one, fewer for several (at least 2), so that all of them stay in
/// registers. Several reductions are independent chains already, and on
/// x86-64's 16 vector registers 8 accumulators with the temporaries of a
/// `maxf` spilled: the fused sum-and-max of `benches/fusion_rules.sh` ran
/// in 10.9 ms with 2x4 accumulators and 9.2 ms with 2x2 (Cranelift).
/// A loop with at least `2 * factor` reductions (a jammed block of column
/// sums, [`crate::jam`]) is not split: its chains are independent already,
/// and Cranelift pairs neighbouring columns into lanes. 2048x2048 column
/// sums on Cranelift, one thread: 4.0-5.8 ms with 2 accumulators per
/// column, 1.8-2.0 ms with one.
fn loop_factor(factor: usize, reductions: usize) -> usize {
    if reductions >= 2 * factor {
        return 1;
    }
    (factor / reductions.max(1)).max(2).min(factor)
}

/// Splits every eligible reduce loop into `factor` accumulators; returns how
/// many loops were split.
pub fn split_reductions(ctx: &mut Context, factor: usize) -> u64 {
    if factor <= 1 {
        return 0;
    }
    let mut n = 0;
    for op in ctx.walk_all() {
        if !ctx.alive(op) {
            continue;
        }
        // Only the outermost of nested eligible loops: a split loop's
        // copies are not split again. A reduction inside another kind of
        // loop (a dot product per entry of a collect) is split.
        if ctx
            .parent_op(op)
            .is_some_and(|p| ctx.is(p, "gen.loop") && eligible(ctx, p).is_some())
        {
            continue;
        }
        if let Some(gens) = eligible(ctx, op) {
            let f = loop_factor(factor, gens.len());
            if f > 1 {
                split_one(ctx, op, &gens, f);
                n += 1;
            }
        }
    }
    n
}

fn create(opts: &PassOptions) -> Result<Box<dyn Pass>, String> {
    opts.check_known("split-reductions", &["factor"])?;
    Ok(Box::new(SplitReductions {
        factor: opts.get_usize_in("factor", 4, 0, crate::lower::MAX_SPLIT)?,
    }))
}

/// Registration record.
pub fn info() -> PassInfo {
    PassInfo {
        name: "split-reductions",
        description: "give reduce loops several accumulators (reassociation of declared-associative reductions)",
        options: &[("factor", "accumulators per reduction (default 4)")],
        create,
    }
}
