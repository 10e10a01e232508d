//! Loops that allocate per iteration (issue 41, item 3): a nested collect
//! in the body of an offloaded loop, such as the inner `vec.map` of
//! `vec.map(x, n -> vec.get(vec.map(vec.iota(n), sq), k))`, runs in a
//! slice of one scratch buffer per collect instead of allocating in the
//! kernel thread.
//!
//! This is Futhark's memory expansion of kernel allocations (Henriksen et
//! al., PLDI 2017: an allocation inside a kernel is hoisted out of it and
//! expanded to one slice per thread, its size the largest any thread
//! needs):
//! - the host computes `m = max(0, max_i size(i))`, the most elements any
//!   iteration's collect holds, with a loop of `max` reduces over the
//!   collect's size expression ([`max_sizes`]; that loop becomes kernels in
//!   turn);
//! - it allocates `T * m` elements per collect on the device, `T` the
//!   threads of the grid (checked not to overflow);
//! - in the kernel, thread `gtid` owns elements `[gtid * m, gtid * m + m)`
//!   ([`expand`]): the collect's emits become stores there, its
//!   `vec.len` its size and its `vec.get` a load after the op's own bounds
//!   check.
//!
//! A slot per *thread*, not per iteration, is enough because the main
//! kernels run each iteration in one thread, and a thread's iterations one
//! after another (a grid-stride loop in [`super::kernel`] and in the count
//! and write kernels of [`super::flat`], a chunk in [`super::scan`]), and
//! a collect's vector is dead before the next
//! iteration starts (only `vec.get` and `vec.len` read it,
//! [`candidates`]). So memory is bounded by the threads, not by the
//! iterations. Kernels that run the body twice (a flatMap's count and
//! write kernels, [`super::flat`]; the totals and main kernels of a loop
//! reading a running fold, [`super::running`]) use the same slices in
//! both.
//!
//! A collect qualifies when its generators are collects of scalars, each
//! with one emit at the top of its body (element `j` at index `j`) and
//! read only by `vec.get` and `vec.len`, and reduces (fused with them,
//! which the thread computes as it computes a nested reduce), and its size is
//! computed at the top of the offloaded loop's body from the loop index
//! and values from outside by `arith` ops, reads of vectors and matrices,
//! and bounded loops and branches of such ops ([`hoistable`]), so that the
//! host can compute it for every index first (a copy of that computation
//! in the bound's loop, which may itself allocate and run in scratch).

use ir::clone::{clone_op_into, ValueMap};
use ir::spec::Traits;
use ir::{BlockId, Builder, Context, OpId, Type, ValueId};

use dialects::gen::{self, GenKind, Generator, Monoid};
use dialects::{arr, scf};

use super::{binop, cmpi, idx, scalar};

/// The collect loops nested in loop `l` that kernel threads can run in
/// scratch slices (see the module documentation), outermost first; none
/// of them is nested in another.
pub(super) fn candidates(ctx: &Context, l: OpId) -> Vec<OpId> {
    let body = gen::body(ctx, l);
    let mut out: Vec<OpId> = Vec::new();
    for c in ctx.walk_nested(l) {
        if c == l || !ctx.is(c, gen::LOOP) || !candidate(ctx, l, body, c) {
            continue;
        }
        if out.iter().any(|&o| ctx.is_ancestor(o, c)) {
            continue;
        }
        out.push(c);
    }
    out
}

fn candidate(ctx: &Context, l: OpId, body: BlockId, c: OpId) -> bool {
    let Ok(gens) = gen::try_generators(ctx, c) else {
        return false;
    };
    let cb = gen::body(ctx, c);
    let mut collects = 0;
    for ((g, &h), &r) in gens.iter().zip(gen::handles(ctx, c)).zip(ctx.results(c)) {
        let ok = match g.kind {
            GenKind::Collect => {
                collects += 1;
                scalar(&g.elem)
                    && ctx.uses(h).len() == 1
                    && gen::exact_emit(ctx, cb, h).is_some()
                    && ctx
                        .uses(r)
                        .iter()
                        .all(|u| u.index == 0 && matches!(ctx.op_name(u.op), "vec.get" | "vec.len"))
            }
            // A reduce fused with the collect stays a reduce of the loop.
            GenKind::Reduce(m) => {
                Monoid::supports(&g.elem)
                    && scalar(&g.elem)
                    && gen::emits_to(ctx, h)
                        .iter()
                        .all(|&e| super::reduce_emit_ok(ctx, cb, e, m, &g.elem))
            }
            _ => false,
        };
        if !ok {
            return false;
        }
    }
    collects > 0 && hoistable(ctx, l, body, gen::size(ctx, c), 64)
}

/// Whether `v` can be computed on the host for any index of loop `l`
/// (whose body is `body`): `l`'s index, a value from outside `l`, or the
/// result of an op at the top of `body` whose operands are such values, at
/// most `depth` ops deep. The op is an `arith` op, a read of a vector or
/// matrix (from outside, or made by such an op), or a bounded loop or
/// branch whose nested ops are all of that kind ([`slice_op`]): a
/// `gen.loop` of collects and reduces, an `scf.for`, an `scf.if` (the sum
/// of a row, a count, an inner size computed by a loop).
fn hoistable(ctx: &Context, l: OpId, body: BlockId, v: ValueId, depth: u32) -> bool {
    if v == gen::induction_var(ctx, l) || !ctx.value_block(v).is_some_and(|b| ctx.block_in_op(b, l))
    {
        return true;
    }
    if depth == 0 {
        return false;
    }
    if let Some(s) = dense_len(ctx, v) {
        return hoistable(ctx, l, body, s, depth - 1);
    }
    let Some(d) = ctx.def_op(v) else {
        return false;
    };
    if ctx.op(d).parent != Some(body) || !slice_op(ctx, d) {
        return false;
    }
    if ctx.regions(d).is_empty() && !(scalar(ctx.ty(v)) || ctx.op_name(d).starts_with("arith.")) {
        return false;
    }
    if !ctx.regions(d).is_empty() && !ctx.walk_nested(d).into_iter().all(|o| slice_op(ctx, o)) {
        return false;
    }
    free_values(ctx, d)
        .into_iter()
        .all(|x| hoistable(ctx, l, body, x, depth - 1))
}

/// Whether op `o` may be part of a size's slice ([`hoistable`]): it cannot
/// store, emit outside the slice, call, or run unboundedly. Emits are
/// checked by [`free_values`]: a handle from outside the op is a free
/// value, and no handle is hoistable.
fn slice_op(ctx: &Context, o: OpId) -> bool {
    let name = ctx.op_name(o);
    (name.starts_with("arith.") && !ctx.has_traits(o, Traits::TERMINATOR))
        || matches!(
            name,
            "vec.get"
                | "vec.len"
                | "mat.get"
                | "mat.rows"
                | "mat.cols"
                | "scf.if"
                | "scf.for"
                | "scf.yield"
                | "gen.emit"
                | "gen.end"
        )
        || (name == gen::LOOP
            && gen::try_generators(ctx, o).is_ok_and(|gs| {
                gs.iter()
                    .all(|g| matches!(g.kind, GenKind::Collect | GenKind::Reduce(_)))
            }))
}

/// The values op `d` and the ops nested in it read that are defined
/// outside `d`, each once, in order of first use.
fn free_values(ctx: &Context, d: OpId) -> Vec<ValueId> {
    let mut out: Vec<ValueId> = Vec::new();
    for o in std::iter::once(d).chain(ctx.walk_nested(d)) {
        for &x in ctx.operands(o) {
            let inside = o != d && ctx.value_block(x).is_some_and(|b| ctx.block_in_op(b, d));
            if !inside && !out.contains(&x) {
                out.push(x);
            }
        }
    }
    out
}

/// The size of loop `G` where `v` is `vec.len` of a dense collect result
/// of `G` (one emit at the top of its body): the vector's length.
fn dense_len(ctx: &Context, v: ValueId) -> Option<ValueId> {
    let d = ctx.def_op_named(v, "vec.len")?;
    let r = ctx.operand(d, 0);
    let g = ctx.def_op(r).filter(|&g| ctx.is(g, gen::LOOP))?;
    let k = ctx.results(g).iter().position(|&x| x == r)?;
    let gens = gen::try_generators(ctx, g).ok()?;
    if gens.len() != ctx.results(g).len() || gens[k].kind != GenKind::Collect {
        return None;
    }
    gen::exact_emit(ctx, gen::body(ctx, g), gen::handles(ctx, g)[k])?;
    Some(gen::size(ctx, g))
}

/// Clones the ops that compute `v` in loop `l`'s body (see [`hoistable`])
/// at `b`, with `map` sending `l`'s index to the new one; the clone of `v`.
fn clone_slice(b: &mut Builder, l: OpId, v: ValueId, map: &mut ValueMap) -> ValueId {
    if let Some(&m) = map.get(&v) {
        return m;
    }
    let inside = b
        .ctx
        .value_block(v)
        .is_some_and(|bl| b.ctx.block_in_op(bl, l));
    if let Some(s) = dense_len(b.ctx, v).filter(|_| inside) {
        let s = clone_slice(b, l, s, map);
        map.insert(v, s);
        return s;
    }
    let Some(d) = b.ctx.def_op(v).filter(|_| inside) else {
        return v;
    };
    for x in free_values(b.ctx, d) {
        clone_slice(b, l, x, map);
    }
    clone_op_into(b, d, map);
    map.get(&v).copied().unwrap_or(v)
}

/// Builds, at `b` (before loop `l`), a loop over `l`'s indices that
/// computes for each of `allocs` the largest size it has in any iteration,
/// and at least 0 (`max` reduces from 0). Returns the loop and its results,
/// one per collect loop of `allocs`.
pub(super) fn max_sizes(b: &mut Builder, l: OpId, allocs: &[OpId]) -> (OpId, Vec<ValueId>) {
    let n = gen::size(b.ctx, l);
    let iv = gen::induction_var(b.ctx, l);
    // One reduce per distinct size (through the lengths of collects).
    let mut sizes: Vec<ValueId> = Vec::new();
    let mut which = Vec::new();
    for &c in allocs {
        let mut s = gen::size(b.ctx, c);
        while let Some(t) = dense_len(b.ctx, s) {
            s = t;
        }
        which.push(sizes.iter().position(|&x| x == s).unwrap_or(sizes.len()));
        if !sizes.contains(&s) {
            sizes.push(s);
        }
    }
    let zero = idx(b, 0);
    let inits = vec![zero; sizes.len()];
    let gens = vec![Generator::reduce(Monoid::Max, Type::Index); sizes.len()];
    let res = gen::build_loop(b, n, &inits, &gens, |b, i, hs| {
        let mut map = ValueMap::new();
        map.insert(iv, i);
        for (&s, &h) in sizes.iter().zip(hs) {
            let s = clone_slice(b, l, s, &mut map);
            gen::emit(b, h, s);
        }
    });
    let lp = b.ctx.def_op(res[0]).expect("a loop result");
    (lp, which.into_iter().map(|k| res[k]).collect())
}

/// The collect generators of loop `c`, with their positions.
fn collects(ctx: &Context, c: OpId) -> Vec<(usize, Generator)> {
    gen::generators(ctx, c)
        .into_iter()
        .enumerate()
        .filter(|(_, g)| g.kind == GenKind::Collect)
        .collect()
}

/// The host side of the scratch buffers of `allocs` (each with its size
/// bound `m` from [`max_sizes`]) for a launch of `threads` threads: for
/// each collect loop, `m` and one device buffer of `threads * m` elements
/// per collect, pushed onto `args` (the kernel parameters of
/// [`kernel_params`]) and recorded in `dev`.
pub(super) fn host_buffers(
    b: &mut Builder,
    allocs: &[OpId],
    ms: &[ValueId],
    threads: ValueId,
    dev: &mut Vec<ValueId>,
    args: &mut Vec<ValueId>,
) {
    for (&c, &m) in allocs.iter().zip(ms) {
        let most = idx(b, i64::MAX);
        let most = binop(b, "arith.divsi", most, threads);
        let fits = cmpi(b, "sle", m, most);
        scf::build_assert(b, fits, "loop too large for the device");
        let len = binop(b, "arith.muli", threads, m);
        args.push(m);
        for (_, g) in collects(b.ctx, c) {
            // A slice is read only where its iteration stored it.
            args.push(super::dalloc_written(b, dev, len, g.elem));
        }
    }
}

/// The kernel parameter types of the scratch buffers of `allocs`: for each
/// collect loop, its size bound `m` and a buffer per collect.
pub(super) fn kernel_params(ctx: &Context, allocs: &[OpId]) -> Vec<Type> {
    let mut out = Vec::new();
    for &c in allocs {
        out.push(Type::Index);
        out.extend(collects(ctx, c).into_iter().map(|(_, g)| Type::arr(g.elem)));
    }
    out
}

/// The copies in a kernel of the collect loops `allocs`, found through
/// the value map of the copy (which was made verbatim).
pub(super) fn copies(ctx: &Context, allocs: &[OpId], map: &ValueMap) -> Vec<OpId> {
    allocs
        .iter()
        .map(|&c| {
            let r = ctx.result(c, 0);
            let r = map.get(&r).copied().unwrap_or(r);
            ctx.def_op(r).expect("a copied loop")
        })
        .collect()
}

/// In a kernel whose body holds `copies` (the clones of the collect loops
/// of [`candidates`], each with its size bound and buffers among
/// `params`, laid out as [`kernel_params`] gives them), rewrites each copy
/// to run in thread `gtid`'s slice of its buffers: the loop keeps its size
/// and its reduces but no collects, each collect's emit stores at
/// `gtid * m + j`, and the reads of its vectors become `n` (`vec.len`) and
/// loads after the op's bounds check (`vec.get`,
/// [`super::kernel::replace_row_reads`]).
pub(super) fn expand(ctx: &mut Context, copies: &[OpId], params: &[ValueId], gtid: ValueId) {
    let mut at = 0;
    for &c in copies {
        let m = params[at];
        let cols = collects(ctx, c);
        let bufs = params[at + 1..at + 1 + cols.len()].to_vec();
        at += 1 + cols.len();
        let gens = gen::generators(ctx, c);
        let kept: Vec<Generator> = gens
            .iter()
            .filter(|g| g.kind != GenKind::Collect)
            .cloned()
            .collect();
        let inits: Vec<ValueId> = gen::inits(ctx, c).into_iter().flatten().collect();
        let n = gen::size(ctx, c);
        let iv = gen::induction_var(ctx, c);
        let cb = gen::body(ctx, c);
        let handles = gen::handles(ctx, c).to_vec();
        // The emit of each collect, with its buffer.
        let stores: Vec<(OpId, ValueId)> = cols
            .iter()
            .zip(&bufs)
            .map(|((k, _), &buf)| {
                let e = gen::exact_emit(ctx, cb, handles[*k]).expect("a dense collect");
                (e, buf)
            })
            .collect();
        let ops: Vec<OpId> = ctx.iter_block(cb).collect();
        let mut b = Builder::before(ctx, c);
        b.smart = false;
        let base = binop(&mut b, "arith.muli", gtid, m);
        // The bound's loop computed `m` from a copy of the size's ops, so
        // the size is at most `m`; checked all the same, so that a copy
        // computing otherwise (a backend reassociating a float sum in one
        // kernel and not in the other) faults instead of writing into
        // another thread's slice.
        let fits = cmpi(&mut b, "sle", n, m);
        scf::build_assert(&mut b, fits, "nested collect larger than its scratch slice");
        let new = gen::build_loop(&mut b, n, &inits, &kept, |b, j, hs| {
            let mut map = ValueMap::new();
            map.insert(iv, j);
            let mut rest = hs.iter();
            for (g, &h) in gens.iter().zip(&handles) {
                if g.kind != GenKind::Collect {
                    map.insert(h, *rest.next().expect("a kept handle"));
                }
            }
            let slot = binop(b, "arith.addi", base, j);
            for &op in &ops {
                if b.ctx.has_traits(op, Traits::TERMINATOR) {
                    continue;
                }
                if let Some(&(_, buf)) = stores.iter().find(|(e, _)| *e == op) {
                    let x = b.ctx.operand(op, 1);
                    let x = map.get(&x).copied().unwrap_or(x);
                    arr::store(b, buf, slot, x);
                    continue;
                }
                clone_op_into(b, op, &mut map);
            }
        });
        let results = ctx.results(c).to_vec();
        let mut new_results = new.iter();
        let mut col_bufs = bufs.iter();
        for (g, &r) in gens.iter().zip(&results) {
            if g.kind != GenKind::Collect {
                let nr = *new_results.next().expect("a kept result");
                ctx.replace_all_uses(r, nr);
                continue;
            }
            let buf = *col_bufs.next().expect("a buffer");
            super::kernel::replace_row_reads(ctx, r, n, |b, q| {
                let at = binop(b, "arith.addi", base, q);
                arr::load_in_bounds(b, buf, at)
            });
        }
        ctx.erase_op(c);
    }
}
