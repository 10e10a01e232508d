//! Fusion through an index function (issue 9, item 1, for vectors): a map
//! producer whose output is only read as `vec.get(out, j)`, with `j` an
//! injective affine function of a consumer loop's index (`i + k`,
//! `n - 1 - i`, `2 * i`, ...; the consumer a `gen.loop` or an `scf.for` of
//! constant non-zero step), is computed at the read instead of
//! materialized: the producer's body is cloned there with its index
//! replaced by `j`, and the producer goes. The read may sit under `scf.if`s
//! in the consumer's body (a read at `i - m` guarded by `i >= m`). An injective index reads each
//! producer element at most once per consumer loop, so no work is
//! duplicated (reads at `i / 2`, or inside a sequential loop, are refused).
//! A consumer loop reads once, except a chunk loop whose runs take chunks
//! `k >= 2` apart, which may read at `i` and at `i + cs` (its chunk and the
//! next: [`lane`]), as the paired chunk loops of a user-defined scan do.
//!
//! Only fault-free bodies qualify: pure speculatable ops, loops that have no
//! effect and cannot fault (`code_motion::harmless_loop`), and reads
//! `vec.get(v, idx)` at the producer's own index, of which the first reads
//! the vector whose length is the producer's size. That read comes first in
//! the clone, so a read out of bounds faults as the original read of the
//! producer's output did (same index, same length). The cost model: a body
//! of at most [`MAX_BODY`] ops without loops is cheap and may be cloned at
//! several reads; a heavier one (an inner loop, or more ops) only where the
//! producer has a single read, so each element is still computed at most
//! once (issue 44, item 2: an expensive producer read at `i - 1`).
//!
//! Also through a reshape: `mat.from(out, r, c)` read only entry by entry
//! in a loop nest over its rows and columns ([`entry_reads`]) is computed
//! at flat index `i * c + j`, and `mat.from`'s shape check stays behind as
//! an `scf.assert` ([`assert_shape`]). So is one read at `(k / c, k % c)`
//! by a loop over `r * c` (a flattened reshape, [`flat_entry`]): at `k`;
//! and one at `(k % r, k / r)` (the flatten of its transpose): at
//! `(k % r) * c + k / r`.

use ir::clone::{clone_op_into, ValueMap};
use ir::pass::PassStats;
use ir::{Builder, Context, OpId, ValueId};

use super::loops::{body_ops, emitted_value, exact_emit, view, LoopView};
use super::reshape::{assert_shape, flat_entry, FlatRead};

/// The most ops a producer body may have to be cloned at its reads.
const MAX_BODY: usize = 12;

/// The loop whose index is block argument `v`, if any: a `gen.loop`, or
/// an `scf.for` with a constant non-zero step (whose iterations see
/// distinct indices, as the sequential loops of a user-defined reduce or
/// scan do).
pub(super) fn loop_of_index(ctx: &Context, v: ValueId) -> Option<OpId> {
    match ctx.value(v).def {
        ir::context::ValueDef::BlockArg(b, 0) => ctx.block_parent_op(b).filter(|&l| {
            ctx.is(l, "gen.loop")
                || (ctx.is(l, "scf.for") && ctx.try_operand(l, 2).is_some_and(|s| nonzero(ctx, s)))
        }),
        _ => None,
    }
}

/// Whether `v` is a non-zero integer constant.
fn nonzero(ctx: &Context, v: ValueId) -> bool {
    crate::code_motion::constant(ctx, v).is_some_and(|c| c != 0)
}

/// Whether `v` is defined outside loop `lp`.
fn outside(ctx: &Context, v: ValueId, lp: OpId) -> bool {
    ctx.value_block(v).is_some_and(|b| !ctx.block_in_op(b, lp))
}

/// The consumer loop `j` is an injective affine function of the index of:
/// `j` is that index, or `addi`/`subi` of it and a constant or a value
/// defined outside the loop, or `muli` of it and a non-zero constant.
fn injective_index(ctx: &Context, j: ValueId) -> Option<OpId> {
    if let Some(l) = loop_of_index(ctx, j) {
        return Some(l);
    }
    let d = ctx.def_op(j)?;
    let (x, y) = match ctx.op_name(d) {
        "arith.addi" | "arith.subi" | "arith.muli" => (ctx.operand(d, 0), ctx.operand(d, 1)),
        _ => return None,
    };
    for (inner, other) in [(x, y), (y, x)] {
        let Some(l) = injective_index(ctx, inner) else {
            continue;
        };
        let ok = if ctx.is(d, "arith.muli") {
            nonzero(ctx, other)
        } else {
            // A constant is the same in every iteration wherever it stands
            // (canonicalize may sink it into the branch that reads).
            outside(ctx, other, l) || crate::code_motion::constant(ctx, other).is_some()
        };
        if ok {
            return Some(l);
        }
    }
    None
}

/// Whether `op` stands in block `body`, or under `scf.if`s only there (a
/// branch runs at most once per iteration, so a read in it is still at
/// most one read per iteration: a map read at `i - m` under `i >= m`).
fn under_ifs_only(ctx: &Context, op: OpId, body: ir::BlockId) -> bool {
    let mut cur = op;
    loop {
        let Some(b) = ctx.op(cur).parent else {
            return false;
        };
        if b == body {
            return true;
        }
        match ctx.block_parent_op(b) {
            Some(p) if ctx.is(p, "scf.if") => cur = p,
            _ => return false,
        }
    }
}

/// Whether consumer loop `l` reads each index at most once per run of
/// producer `p`: no loop stands between `l` and the block that holds `p`,
/// except a chunk loop of which `l` runs over one chunk ([`chunk_of`]).
fn runs_once(ctx: &Context, l: OpId, p: OpId) -> bool {
    let Some(home) = ctx.op(p).parent else {
        return false;
    };
    let mut cur = l;
    loop {
        let Some(b) = ctx.op(cur).parent else {
            return false;
        };
        if b == home {
            return true;
        }
        let Some(parent) = ctx.block_parent_op(b) else {
            return false;
        };
        if !ctx.is(parent, "scf.if") && chunk_of(ctx, l, parent).is_none() {
            return false;
        }
        cur = parent;
    }
}

/// Whether `scf.for` `l` runs over one chunk of the index of loop `cl` (a
/// `gen.loop`, an `scf.forall`, or an `scf.for` of constant positive step), so that its
/// runs see disjoint indices: `l` runs from `lo = c * cs` to
/// `min(x, lo + cs)` by a positive constant step, where `c` is `cl`'s index
/// `q`, or `k * q` or `k * q + r` for constants `k > 0` and `r` (one
/// chunk of the `k` an iteration takes, as the paired chunk loops do), and
/// `cs` a positive constant or `max(positive constant, y)` (the chunk loops
/// of a user-defined reduce or scan, `dialects::vec_combine`). Returns
/// `cs` and `k` (1 for `c = q`).
fn chunk_of(ctx: &Context, l: OpId, cl: OpId) -> Option<Chunk> {
    let positive = |v: ValueId| crate::code_motion::constant(ctx, v).is_some_and(|k| k > 0);
    let stepped = ctx.is(cl, "scf.forall")
        || ctx.is(cl, "gen.loop")
        || (ctx.is(cl, "scf.for") && ctx.try_operand(cl, 2).is_some_and(positive));
    if !stepped || !ctx.is(l, "scf.for") || !ctx.try_operand(l, 2).is_some_and(positive) {
        return None;
    }
    let q = ctx.block_args(ctx.op_block(cl, 0))[0];
    let two = |v: ValueId, name: &str| {
        ctx.def_op_named(v, name)
            .map(|d| (ctx.operand(d, 0), ctx.operand(d, 1)))
    };
    let constant = |v: ValueId| crate::code_motion::constant(ctx, v);
    // `k * q` with `k > 0` constant, or `q` itself (`k = 1`): `Some(k)`.
    let scaled = |v: ValueId| {
        if v == q {
            return Some(1);
        }
        let (x, y) = two(v, "arith.muli")?;
        match (x == q, y == q) {
            (true, _) => constant(y).filter(|&k| k > 0),
            (_, true) => constant(x).filter(|&k| k > 0),
            _ => None,
        }
    };
    // `scaled` or `scaled + r` with `r` constant.
    let chunk = |v: ValueId| {
        scaled(v).or_else(|| {
            let (x, y) = two(v, "arith.addi")?;
            match (constant(x), constant(y)) {
                (_, Some(_)) => scaled(x),
                (Some(_), _) => scaled(y),
                _ => None,
            }
        })
    };
    let lo = ctx.operand(l, 0);
    let (cs, k) = two(lo, "arith.muli").and_then(|(x, y)| match (chunk(x), chunk(y)) {
        (Some(k), _) => Some((y, k)),
        (_, Some(k)) => Some((x, k)),
        _ => None,
    })?;
    let cs_positive =
        positive(cs) || two(cs, "arith.maxi").is_some_and(|(x, y)| positive(x) || positive(y));
    let end = |v: ValueId| {
        two(v, "arith.addi").is_some_and(|(x, y)| (x, y) == (lo, cs) || (x, y) == (cs, lo))
    };
    let bounded = two(ctx.operand(l, 1), "arith.mini").is_some_and(|(x, y)| end(x) || end(y));
    (cs_positive && bounded).then_some(Chunk { cs, k })
}

/// What [`chunk_of`] proves of a loop over one chunk: its runs see the
/// indices of chunk `c = k * q + r` of size `cs` (at most), so chunks
/// `c + 1`, ..., `c + k - 1` belong to no other run.
struct Chunk {
    cs: ValueId,
    k: i64,
}

/// The lane of a read at index `j` in chunk loop `l`: 0 for `l`'s own
/// index `i`, 1 for `i + cs` (the next chunk, as the paired chunk loops of
/// a user-defined scan read it), where `l` runs over one chunk of `cs` and
/// its runs take chunks `k >= 2` apart, so each lane reads elements no
/// other run and no other lane reads. `None` for any other read.
fn lane(ctx: &Context, l: OpId, j: ValueId) -> Option<i64> {
    let i = ctx.block_args(ctx.op_block(l, 0))[0];
    if j == i {
        return Some(0);
    }
    let d = ctx.def_op_named(j, "arith.addi")?;
    let (x, y) = (ctx.operand(d, 0), ctx.operand(d, 1));
    let off = match (x == i, y == i) {
        (true, _) => y,
        (_, true) => x,
        _ => return None,
    };
    // The chunk loop around `l`, through `scf.if`s.
    let mut parent = ctx.block_parent_op(ctx.op(l).parent?)?;
    while ctx.is(parent, "scf.if") {
        parent = ctx.block_parent_op(ctx.op(parent).parent?)?;
    }
    let c = chunk_of(ctx, l, parent)?;
    (c.cs == off && c.k >= 2).then_some(1)
}

/// The body ops of producer `a` to clone, first read first, and whether
/// the body is heavy (more than [`MAX_BODY`] ops, or loops in it), if it
/// qualifies (see the module documentation).
fn cheap_body(ctx: &Context, a: &LoopView) -> Option<(Vec<OpId>, bool)> {
    if a.gens.len() != 1 || a.gens[0].kind != "collect" {
        return None;
    }
    let emit = exact_emit(ctx, a.body, a.gens[0].handle)?;
    let ops: Vec<OpId> = body_ops(ctx, a.body)
        .into_iter()
        .filter(|&o| o != emit)
        .collect();
    let mut heavy = ops.len() > MAX_BODY;
    // The size is vec.len(x): the read of x at the index is the bounds check.
    let x = ctx
        .def_op_named(a.size, "vec.len")
        .map(|l| ctx.operand(l, 0))?;
    let mut first = None;
    for &o in &ops {
        // A loop that has no effect and cannot fault (a dot product with
        // another vector, read at its own index) may be recomputed.
        if crate::code_motion::harmless_loop(ctx, o) {
            heavy = true;
            continue;
        }
        if !ctx.regions(o).is_empty() || !ctx.has_traits(o, ir::Traits::PURE) {
            return None;
        }
        if ctx.is(o, "vec.get") {
            if ctx.operand(o, 1) != a.index {
                return None;
            }
            if first.is_none() {
                if ctx.operand(o, 0) != x {
                    return None;
                }
                first = Some(o);
            }
        } else if !crate::code_motion::speculatable(ctx, o) {
            return None;
        }
    }
    let first = first?;
    let mut ordered = vec![first];
    ordered.extend(ops.into_iter().filter(|&o| o != first));
    Some((ordered, heavy))
}

/// A read of a producer's output that substitution replaces with a clone
/// of the producer's body.
struct Read {
    /// The `vec.get` or `mat.get` op.
    op: OpId,
    /// The producer index it reads: `Flat(j)`, or entry `(i, j)` of
    /// `mat.from(out, r, c)`, flat index `i * c + j`.
    at: At,
}

enum At {
    Flat(ValueId),
    Entry {
        i: ValueId,
        j: ValueId,
        cols: ValueId,
    },
}

/// The body block of loop `l`.
fn body(ctx: &Context, l: OpId) -> ir::BlockId {
    ctx.op_block(l, 0)
}

/// The loop (a `gen.loop` of size exactly `n`) whose index is `v`.
fn loop_over(ctx: &Context, v: ValueId, n: ValueId) -> Option<OpId> {
    loop_of_index(ctx, v).filter(|&l| ctx.operand(l, 0) == n)
}

/// The reads of matrix `mat.from(out, r, c)` (op `from`) for substitution
/// (issue 9, item 1, through a reshape): every use of the matrix is a
/// `mat.get` (either orientation) of entry `(i, j)`, where `i` is the index
/// of a loop over `r` and `j` of a loop over `c` (so both always in range),
/// the read stands directly in the body of one of the two loops (the inner
/// one, at most one read per inner loop), the inner loop directly in the
/// outer one, and the outer loop runs at most once per run of `producer`.
/// So each entry, and each producer element, is read at most once per run
/// of the consumer nest.
fn entry_reads(
    ctx: &Context,
    from: OpId,
    producer: OpId,
    inner_loops: &mut Vec<OpId>,
) -> Option<Vec<Read>> {
    let (m, r, c) = (
        ctx.result(from, 0),
        ctx.operand(from, 1),
        ctx.operand(from, 2),
    );
    let mut reads = Vec::new();
    for u in ctx.uses(m) {
        let g = u.op;
        if !ctx.is(g, "mat.get") || u.index != 0 {
            return None;
        }
        if let Some((read, l)) = flat_entry(ctx, g, r, c) {
            // Entry `(k / c, k % c)`, flat index `k`, or `(k % r, k / r)`,
            // read by a loop over `r * c` (as `mat.flatten` of the matrix
            // or of its transpose lowers): one read per loop.
            let direct = under_ifs_only(ctx, g, body(ctx, l));
            if !direct || inner_loops.contains(&l) || l == producer || !runs_once(ctx, l, producer)
            {
                return None;
            }
            inner_loops.push(l);
            let at = match read {
                FlatRead::Flat(k) => At::Flat(k),
                FlatRead::Entry { i, j } => At::Entry { i, j, cols: c },
            };
            reads.push(Read { op: g, at });
            continue;
        }
        let (i, j) = dialects::mat::get_entry(ctx, g);
        let (li, lj) = (loop_over(ctx, i, r)?, loop_over(ctx, j, c)?);
        let parent = ctx.op(g).parent?;
        let (inner, outer) = if parent == body(ctx, lj) {
            (lj, li)
        } else if parent == body(ctx, li) {
            (li, lj)
        } else {
            return None;
        };
        let nested = ctx.op(inner).parent == Some(body(ctx, outer));
        if !nested || inner_loops.contains(&inner) || !runs_once(ctx, outer, producer) {
            return None;
        }
        inner_loops.push(inner);
        reads.push(Read {
            op: g,
            at: At::Entry { i, j, cols: c },
        });
    }
    Some(reads)
}

/// Substitutes qualifying map producers into their reads; returns how many
/// producers went.
pub fn substitute_maps(ctx: &mut Context, stats: &mut PassStats) -> u64 {
    let mut gone = 0;
    for op in ctx.walk_all() {
        if !ctx.alive(op) {
            continue;
        }
        let Some(a) = view(ctx, op) else { continue };
        let Some((ops, heavy)) = cheap_body(ctx, &a) else {
            continue;
        };
        let out = a.gens[0].results[0];
        let uses: Vec<OpId> = ctx.uses(out).iter().map(|u| u.op).collect();
        // Every use a read at an injective index of a loop of its own, one
        // read per consumer loop, directly in that loop's body; or a
        // reshape (`mat.from`) read entry by entry ([`entry_reads`]).
        let mut consumers = Vec::new();
        let mut reads = Vec::new();
        let mut reshapes = Vec::new();
        let mut lanes: Vec<(OpId, i64)> = Vec::new();
        let ok = uses.iter().all(|&u| {
            if ctx.is(u, "mat.from") && ctx.operand(u, 0) == out {
                let Some(rs) = entry_reads(ctx, u, op, &mut consumers) else {
                    return false;
                };
                reads.extend(rs);
                reshapes.push(u);
                return true;
            }
            if !ctx.is(u, "vec.get") || ctx.operand(u, 0) != out {
                return false;
            }
            let Some(l) = injective_index(ctx, ctx.operand(u, 1)) else {
                return false;
            };
            let direct = under_ifs_only(ctx, u, ctx.op_block(l, 0));
            // One read per consumer loop, or one per lane of a chunk loop.
            let lane = lane(ctx, l, ctx.operand(u, 1));
            let fresh = match lane {
                // Earlier reads of `l` all had other lanes.
                Some(k) => {
                    let laned = lanes.iter().filter(|&&(m, _)| m == l).count();
                    let all = consumers.iter().filter(|&&m| m == l).count();
                    laned == all && !lanes.contains(&(l, k))
                }
                None => !consumers.contains(&l),
            };
            if let Some(k) = lane {
                lanes.push((l, k));
            }
            consumers.push(l);
            reads.push(Read {
                op: u,
                at: At::Flat(ctx.operand(u, 1)),
            });
            direct && fresh && l != op && runs_once(ctx, l, op)
        });
        // The cost model: a heavy body is computed at most once per
        // element, so only for a single read (each element then costs what
        // the producer's iteration cost, and the vector is never built).
        if !ok || uses.is_empty() || (heavy && (reads.len() != 1 || !reshapes.is_empty())) {
            continue;
        }
        let e = exact_emit(ctx, a.body, a.gens[0].handle).unwrap();
        let value = emitted_value(ctx, e);
        for read in reads {
            let u = read.op;
            let mut b = Builder::before(ctx, u);
            b.smart = false;
            let j = match read.at {
                At::Flat(j) => j,
                At::Entry { i, j, cols } => {
                    let row = b.op1("arith.muli", &[i, cols], ir::Type::Index, vec![]);
                    b.op1("arith.addi", &[row, j], ir::Type::Index, vec![])
                }
            };
            // A read proved in bounds of `out` is in bounds of `x` (the
            // producer's size is `vec.len(x)`, see `cheap_body`), so the
            // clone of the first read, of `x` at the same index, keeps it.
            let proved = matches!(read.at, At::Flat(_)) && b.ctx.attr(u, "in_bounds").is_some();
            let mut map = ValueMap::default();
            map.insert(a.index, j);
            for (k, &o) in ops.iter().enumerate() {
                let rs = clone_op_into(&mut b, o, &mut map);
                if k == 0 && proved {
                    if let Some(g) = rs.first().and_then(|&r| b.ctx.def_op(r)) {
                        b.ctx.set_attr(g, "in_bounds", ir::Attribute::Unit);
                    }
                }
            }
            let x = map.get(&value).copied().unwrap_or(value);
            let r = ctx.result(u, 0);
            ctx.replace_all_uses(r, x);
            ctx.erase_op(u);
            stats.add("substituted-reads", 1);
        }
        for from in reshapes {
            assert_shape(ctx, from, a.size);
            ctx.erase_op(from);
        }
        ctx.erase_op(op);
        gone += 1;
    }
    gone
}
