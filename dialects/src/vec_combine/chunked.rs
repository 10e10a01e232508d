//! The fold order of a user-defined operator, and its lowering (issue 42,
//! items 1 and 10): chunks fixed by the length alone, each folded from the
//! neutral element, then combined left to right. The interpreter
//! ([`super::interp`]) and every lowering follow the same order, so results
//! (and the first fault) never depend on threads, placement or backend.
//!
//! For a vector `v` of length `n` and operator `⊕` with neutral `ne`:
//! - chunk size `cs = max(GRAIN, n / MAX_CHUNKS + 1)`, chunk count
//!   `nc = max(1, ceil(n / cs))`; chunk `c` covers `[c*cs, min(n, c*cs+cs))`;
//! - partial `P[c]` is the left fold of chunk `c` from `ne`;
//! - `reduce` is `((P[0] ⊕ P[1]) ⊕ P[2]) ⊕ ...`, so a vector of at most
//!   `GRAIN` elements gets exactly the left fold from `ne`;
//! - `scan` computes `P[0..nc-1)` first, then the offsets `off[0] = ne`,
//!   `off[1] = P[0]`, `off[c+1] = off[c] ⊕ P[c]`, then each chunk's
//!   inclusive left fold from its offset (chunk 0: the left fold from `ne`).
//!
//! Where the contract holds (associative, `ne` neutral) this is the left
//! fold. The faults come in that order too: the partials by chunk, then the
//! combination of partials, then (scan) the chunk folds.
//!
//! Lowering: the partials are a `gen.loop` over the chunks collecting each
//! chunk's fold ([`partials`], marked [`CHUNKS_ATTR`]), which the parallel
//! decomposition runs on every core and the GPU lowering as a kernel; their
//! fold is a short sequential loop. A scan's second pass over the chunks
//! stores into arrays, one per leaf field of `T`: an `scf.forall` at the
//! top level of host code (only `scf` control flow around it), else a
//! sequential `scf.for`. Elsewhere than the top level (in a loop body, a
//! `vec.map`, a kernel), a combiner that cannot fault skips the partials'
//! loop: one sequential chunk loop carries the combination of the partials
//! so far (reduce) or the next chunk's offset (scan, [`carried`]). The `⊕`s
//! are the same; only where the combiner can fault must the partials all
//! come first.
//!
//! A scan at the top level whose combiner cannot fault chooses at run time
//! by `scf.forall_threads`: on one thread the [`carried`] form (each element
//! read once, for the running value and the chunk's partial: two
//! independent chains in one loop), on several [`scan_paired`] (both
//! passes over pairs of chunks, two chains per loop). A linear recurrence
//! is latency-bound, so two chains per loop run in about the time of one.

use ir::clone::{clone_block_into, ValueMap};
use ir::{Builder, Context, OpId, RegionId, Type, ValueId};

use super::{combiner_terminator, SEQUENTIAL_ATTR};
use crate::arith::{build_binop, build_cmpi, const_int};
use crate::{arr, gen, scf, structs, vec};

/// The unit attribute of the `gen.loop` of a fold's partials: each
/// iteration folds a whole chunk, so the parallel decomposition
/// (`passes::parallel`) takes iterations one by one (grain 1).
pub const CHUNKS_ATTR: &str = "l0.chunks";

/// Fewest elements per chunk: vectors up to this length are one chunk.
pub const GRAIN: i64 = 4096;
/// Most chunks of one fold.
pub const MAX_CHUNKS: i64 = 256;

/// `(cs, nc)`: the chunk size and chunk count for length `n` (see the
/// module documentation). `n` must not be negative.
pub fn chunking(n: i64) -> (i64, i64) {
    let cs = GRAIN.max(n / MAX_CHUNKS + 1);
    let nc = (n / cs + i64::from(n % cs != 0)).max(1);
    (cs, nc)
}

/// `[lo, hi)` of chunk `c` for length `n`.
pub fn chunk_range(n: i64, c: i64) -> (i64, i64) {
    let (cs, _) = chunking(n);
    let lo = c * cs;
    (lo, n.min(lo + cs))
}

/// The combiner region of a `vec.reduce`/`vec.scan` being lowered.
struct Combiner {
    region: RegionId,
    term: OpId,
    /// The element type `T`.
    ty: Type,
}

impl Combiner {
    /// Clones the combiner at the insertion point with arguments `acc` and
    /// `x`; returns the yielded value.
    fn apply(&self, b: &mut Builder, acc: ValueId, x: ValueId) -> ValueId {
        apply_region(b, self.region, acc, x)
    }

    /// Whether no op of the combiner can fault: `arith` ops other than
    /// divisions and remainders, and record construction and access.
    fn fault_free(&self, ctx: &Context) -> bool {
        fault_free(ctx, self.region, self.term)
    }
}

/// Clones combiner region `r` at the insertion point with arguments `acc`
/// and `x`; returns the yielded value.
pub(super) fn apply_region(b: &mut Builder, r: RegionId, acc: ValueId, x: ValueId) -> ValueId {
    let blk = b.ctx.region_block(r);
    let args = b.ctx.block_args(blk).to_vec();
    let mut map = ValueMap::default();
    map.insert(args[0], acc);
    map.insert(args[1], x);
    clone_block_into(b, blk, &mut map)[0]
}

/// Whether no op of combiner region `r` (terminator `term`) can fault:
/// `arith` ops other than divisions and remainders, and record
/// construction and access.
pub(super) fn fault_free(ctx: &Context, r: RegionId, term: OpId) -> bool {
    let blk = ctx.region_block(r);
    ctx.block_ops(blk).into_iter().all(|op| {
        let name = ctx.op_name(op);
        op == term
            || (ctx.regions(op).is_empty()
                && ((name.starts_with("arith.") && !name.contains("div") && !name.contains("rem"))
                    || name == "struct.new"
                    || name == "struct.get"))
    })
}

/// Arrays of `T` values, one per leaf field.
struct Slots {
    arrs: Vec<ValueId>,
    leaves: Vec<(String, Type)>,
}

impl Slots {
    /// Zeroed arrays of `n` elements.
    fn alloc(b: &mut Builder, n: ValueId, ty: &Type) -> Slots {
        Slots::alloc_with(b, n, ty, arr::alloc)
    }
    /// Arrays of `n` elements that the lowering stores in full before
    /// anything reads them (a scan's outputs: the chunks cover `[0, n)`),
    /// so not cleared (`arr.alloc {uninit}`; the interpreter faults on a
    /// read of an element not stored, so a gap in the coverage shows in
    /// every test that runs it).
    fn alloc_overwritten(b: &mut Builder, n: ValueId, ty: &Type) -> Slots {
        Slots::alloc_with(b, n, ty, arr::alloc_overwritten)
    }
    /// One array per leaf field of `ty`, each made by `alloc(b, n, leaf)`.
    fn alloc_with(
        b: &mut Builder,
        n: ValueId,
        ty: &Type,
        alloc: fn(&mut Builder, ValueId, Type) -> ValueId,
    ) -> Slots {
        let leaves = ty.named_leaves();
        let arrs = leaves
            .iter()
            .map(|(_, lt)| alloc(b, n, lt.clone()))
            .collect();
        Slots { arrs, leaves }
    }
    fn store(&self, b: &mut Builder, i: ValueId, x: ValueId) {
        for ((path, lt), &a) in self.leaves.iter().zip(&self.arrs) {
            let f = super::field_at(b, x, path, lt);
            arr::store_in_bounds(b, a, i, f);
        }
    }
    fn load(&self, b: &mut Builder, i: ValueId, ty: &Type) -> ValueId {
        let mut arrs = self.arrs.iter();
        structs::build_fields(b, ty, &mut |b, _| {
            arrs.next().map(|&a| arr::load_in_bounds(b, a, i))
        })
        .expect("one array per leaf")
    }
}

/// The chunking as IR values.
pub(super) struct Chunks {
    pub(super) n: ValueId,
    pub(super) cs: ValueId,
    pub(super) nc: ValueId,
    pub(super) zero: ValueId,
    pub(super) one: ValueId,
}

impl Chunks {
    pub(super) fn build(b: &mut Builder, n: ValueId) -> Chunks {
        let ix = Type::Index;
        let zero = const_int(b, 0, &ix);
        let one = const_int(b, 1, &ix);
        let grain = const_int(b, GRAIN, &ix);
        let maxc = const_int(b, MAX_CHUNKS, &ix);
        let q = build_binop(b, "arith.divsi", n, maxc);
        let q1 = build_binop(b, "arith.addi", q, one);
        let cs = build_binop(b, "arith.maxi", grain, q1);
        let nc = build_binop(b, "arith.ceildivsi", n, cs);
        let nc = build_binop(b, "arith.maxi", nc, one);
        Chunks {
            n,
            cs,
            nc,
            zero,
            one,
        }
    }

    /// `[lo, hi)` of chunk `c`: `lo = c * cs` to `min(n, lo + cs)`, the
    /// form in which fusion's substitution recognizes a chunk loop.
    fn range(&self, b: &mut Builder, c: ValueId) -> (ValueId, ValueId) {
        let lo = build_binop(b, "arith.muli", c, self.cs);
        let end = build_binop(b, "arith.addi", lo, self.cs);
        let hi = build_binop(b, "arith.mini", self.n, end);
        (lo, hi)
    }

    /// The left fold of chunk `c` from `start`; `each(b, j, acc)` runs
    /// after each step (the scan's store).
    fn fold(
        &self,
        b: &mut Builder,
        v: ValueId,
        comb: &Combiner,
        c: ValueId,
        start: ValueId,
        each: &mut dyn FnMut(&mut Builder, ValueId, ValueId),
    ) -> ValueId {
        let (lo, hi) = self.range(b, c);
        let acc = scf::build_for(b, lo, hi, self.one, &[start], |b, j, accs| {
            let x = vec::get_in_bounds(b, v, j);
            let y = comb.apply(b, accs[0], x);
            each(b, j, y);
            vec![y]
        });
        acc[0]
    }

    /// Two left folds of chunk `c` in one loop, one from `start` (with
    /// `each` after each step, as in [`Chunks::fold`]) and one from `ne`:
    /// the chunk is read once for both. Their `⊕`s are the same as two
    /// separate folds; only the interleaving of two independent chains of
    /// pure ops differs (for a combiner that cannot fault). Returns both.
    #[allow(clippy::too_many_arguments)]
    fn fold_twice(
        &self,
        b: &mut Builder,
        v: ValueId,
        comb: &Combiner,
        c: ValueId,
        start: ValueId,
        ne: ValueId,
        each: &mut dyn FnMut(&mut Builder, ValueId, ValueId),
    ) -> (ValueId, ValueId) {
        let (lo, hi) = self.range(b, c);
        let accs = scf::build_for(b, lo, hi, self.one, &[start, ne], |b, j, accs| {
            let x = vec::get_in_bounds(b, v, j);
            let y = comb.apply(b, accs[0], x);
            each(b, j, y);
            let p = comb.apply(b, accs[1], x);
            vec![y, p]
        });
        (accs[0], accs[1])
    }

    /// The left folds of full chunks `c` (from `s0`) and `c + 1` (from
    /// `s1`) in one loop over chunk `c`'s indices `i`, reading `i` and
    /// `i + cs`; `each` after each step of either. The two chains are
    /// independent, so a core overlaps their latencies (unroll-and-jam of
    /// the chunk loop); each chain's `⊕`s are those of [`Chunks::fold`].
    /// For a combiner that cannot fault (the first fault of two interleaved
    /// chunks need not be the earlier chunk's).
    #[allow(clippy::too_many_arguments)]
    fn fold_pair(
        &self,
        b: &mut Builder,
        v: ValueId,
        comb: &Combiner,
        c: ValueId,
        s0: ValueId,
        s1: ValueId,
        each: &mut dyn FnMut(&mut Builder, ValueId, ValueId),
    ) -> (ValueId, ValueId) {
        // The chunk loop's own form ([`Chunks::range`]), which fusion
        // recognizes as disjoint per chunk.
        let (lo, hi) = self.range(b, c);
        let accs = scf::build_for(b, lo, hi, self.one, &[s0, s1], |b, i, accs| {
            let x0 = vec::get_in_bounds(b, v, i);
            let y0 = comb.apply(b, accs[0], x0);
            each(b, i, y0);
            let i1 = build_binop(b, "arith.addi", i, self.cs);
            let x1 = vec::get_in_bounds(b, v, i1);
            let y1 = comb.apply(b, accs[1], x1);
            each(b, i1, y1);
            vec![y0, y1]
        });
        (accs[0], accs[1])
    }

    /// Over chunks `[0, count)` two at a time (an `scf.forall` over the
    /// pairs, marked as [`chunk_loop`] marks it): `pair(b, c)` for chunks
    /// `c` and `c + 1` where chunk `c + 1` is full (so is `c`), else
    /// `single(b, c)` and, where there is one, `single(b, c + 1)`.
    fn pairs(
        &self,
        b: &mut Builder,
        count: ValueId,
        what: &str,
        pair: impl Fn(&mut Builder, ValueId),
        single: impl Fn(&mut Builder, ValueId),
    ) {
        let two = const_int(b, 2, &Type::Index);
        let npairs = build_binop(b, "arith.ceildivsi", count, two);
        chunk_loop(b, self, npairs, true, &[], what, |b, q, _| {
            let c = build_binop(b, "arith.muli", q, two);
            let c1 = build_binop(b, "arith.addi", c, self.one);
            let has = build_cmpi(b, "slt", c1, count);
            let c2 = build_binop(b, "arith.addi", c1, self.one);
            let end = build_binop(b, "arith.muli", c2, self.cs);
            let full = build_cmpi(b, "sle", end, self.n);
            let paired = build_binop(b, "arith.andi", has, full);
            scf::build_if(
                b,
                paired,
                &[],
                |b| {
                    pair(b, c);
                    Vec::new()
                },
                |b| {
                    single(b, c);
                    scf::build_if_then(b, has, |b| single(b, c1));
                    Vec::new()
                },
            );
            Vec::new()
        });
    }
}

/// Builds a loop over chunks `[0, count)`: an `scf.forall` when
/// `parallel`, else an `scf.for` carrying `carried`. `body(b, c, carried)`
/// returns the next carried values. Returns the final carried values.
pub(super) fn chunk_loop(
    b: &mut Builder,
    ch: &Chunks,
    count: ValueId,
    parallel: bool,
    carried: &[ValueId],
    what: &str,
    body: impl FnOnce(&mut Builder, ValueId, &[ValueId]) -> Vec<ValueId>,
) -> Vec<ValueId> {
    let attrs = vec![(
        SEQUENTIAL_ATTR.to_string(),
        ir::Attribute::Str(what.to_string()),
    )];
    if parallel {
        let region = b.build_region(&[Type::Index], |b, args| {
            body(b, args[0], &[]);
            scf::build_yield(b, &[]);
        });
        b.op_with_regions("scf.forall", &[count], &[], attrs, &[region]);
        return Vec::new();
    }
    let types: Vec<Type> = carried.iter().map(|&v| b.ctx.ty(v).clone()).collect();
    let mut arg_types = vec![Type::Index];
    arg_types.extend(types.iter().cloned());
    let region = b.build_region(&arg_types, |b, args| {
        let next = body(b, args[0], &args[1..]);
        scf::build_yield(b, &next);
    });
    let mut operands = vec![ch.zero, count, ch.one];
    operands.extend_from_slice(carried);
    b.op_with_regions("scf.for", &operands, &types, attrs, &[region])
        .to_vec()
}

/// Whether the insertion point is top-level host code: only `scf` control
/// flow between it and a function that is not a GPU kernel.
pub(super) fn top_level(b: &Builder) -> bool {
    let ctx = &*b.ctx;
    let mut p = ctx.block_parent_op(b.insertion_point().0);
    while let Some(q) = p {
        match ctx.op_name(q) {
            "scf.for" | "scf.while" | "scf.if" | "scf.execute_region" | "scf.index_switch" => {}
            "func.func" => return !crate::gpu::is_kernel(ctx, q),
            _ => return false,
        }
        p = ctx.parent_op(q);
    }
    false
}

/// Lowers `vec.reduce`/`vec.scan` (`scan`) of `v` from `ne` with combiner
/// region `r` (see the module documentation). Returns the result and, for a
/// scan, the output arrays (one per leaf field of `T`); `None` for a
/// malformed region.
pub(super) fn lower(
    b: &mut Builder,
    v: ValueId,
    ne: ValueId,
    r: RegionId,
    scan: bool,
) -> Option<(ValueId, Vec<ValueId>)> {
    let ty = b.ctx.ty(v).elem()?.clone();
    let term = combiner_terminator(b.ctx, r)?;
    let comb = Combiner {
        region: r,
        term,
        ty,
    };
    let n = vec::len(b, v);
    let ch = Chunks::build(b, n);
    let parallel = top_level(b);
    let what = if scan { "vec.scan" } else { "vec.reduce" };
    if !parallel && comb.fault_free(b.ctx) {
        let outs = scan.then(|| Slots::alloc_overwritten(b, ch.n, &comb.ty));
        return Some(carried(b, &ch, v, ne, &comb, outs.as_ref(), what));
    }
    if scan && comb.fault_free(b.ctx) {
        // One thread: one pass that reads each element once for two
        // interleaved folds ([`carried`]); several: two passes over chunks
        // on every core. The `⊕`s are the same, so are the results.
        let outs = Slots::alloc_overwritten(b, ch.n, &comb.ty);
        let threads = scf::forall_threads(b);
        let one = build_cmpi(b, "sle", threads, ch.one);
        scf::build_if(
            b,
            one,
            &[],
            |b| {
                carried(b, &ch, v, ne, &comb, Some(&outs), what);
                Vec::new()
            },
            |b| {
                scan_paired(b, &ch, v, ne, &comb, &outs, what);
                Vec::new()
            },
        );
        return Some((ne, outs.arrs));
    }
    Some(if scan {
        scan_by_partials(b, &ch, v, ne, &comb, parallel, what)
    } else {
        (reduce_by_partials(b, &ch, v, ne, &comb), Vec::new())
    })
}

/// The partials of chunks `[0, count)`: a `gen.loop` over the chunks whose
/// iterations each fold one chunk and emit the fold to a collect, marked
/// [`CHUNKS_ATTR`]. It runs where loops run: on every core (the parallel
/// decomposition takes each iteration as a unit), or as a GPU kernel with a
/// thread per chunk.
fn partials(
    b: &mut Builder,
    ch: &Chunks,
    v: ValueId,
    ne: ValueId,
    comb: &Combiner,
    count: ValueId,
) -> ValueId {
    let g = gen::Generator::collect(comb.ty.clone());
    let parts = gen::build_loop(b, count, &[], &[g], |b, c, hs| {
        let p = ch.fold(b, v, comb, c, ne, &mut |_, _, _| {});
        gen::emit(b, hs[0], p);
    })[0];
    if let Some(lp) = b.ctx.def_op(parts) {
        b.ctx.set_attr(lp, CHUNKS_ATTR, ir::Attribute::Unit);
    }
    parts
}

/// The reduce: the partials of all chunks, then their left fold.
fn reduce_by_partials(
    b: &mut Builder,
    ch: &Chunks,
    v: ValueId,
    ne: ValueId,
    comb: &Combiner,
) -> ValueId {
    let parts = partials(b, ch, v, ne, comb, ch.nc);
    let first = vec::get_in_bounds(b, parts, ch.zero);
    let acc = scf::build_for(b, ch.one, ch.nc, ch.one, &[first], |b, k, accs| {
        let p = vec::get_in_bounds(b, parts, k);
        vec![comb.apply(b, accs[0], p)]
    });
    acc[0]
}

/// The scan: the partials of all chunks but the last, their offsets, then
/// each chunk's fold from its offset into the output arrays.
fn scan_by_partials(
    b: &mut Builder,
    ch: &Chunks,
    v: ValueId,
    ne: ValueId,
    comb: &Combiner,
    parallel: bool,
    what: &str,
) -> (ValueId, Vec<ValueId>) {
    let ty = comb.ty.clone();
    let outs = Slots::alloc_overwritten(b, ch.n, &ty);
    let offs = Slots::alloc(b, ch.nc, &ty);
    let last = build_binop(b, "arith.subi", ch.nc, ch.one);
    let parts = partials(b, ch, v, ne, comb, last);
    let acc = offsets(b, ch, ne, comb, last, &offs, &|b, k| {
        vec::get_in_bounds(b, parts, k)
    });
    chunk_loop(b, ch, ch.nc, parallel, &[], what, |b, c, _| {
        let is_first = build_cmpi(b, "eq", c, ch.zero);
        let off = offs.load(b, c, &ty);
        let start = b.op1("arith.select", &[is_first, ne, off], ty.clone(), vec![]);
        ch.fold(b, v, comb, c, start, &mut |b, j, y| outs.store(b, j, y));
        Vec::new()
    });
    (acc, outs.arrs)
}

/// Stores the offsets of chunks `[1, last]` into `offs` from the partials
/// `part(b, k)` of chunks `[0, last)`: `off[1] = P[0]`, `off[k+1] = off[k]
/// ⊕ P[k]` (chunk 0's offset, `ne`, is not stored). Returns `off[last]`
/// (`ne` for one chunk).
fn offsets(
    b: &mut Builder,
    ch: &Chunks,
    ne: ValueId,
    comb: &Combiner,
    last: ValueId,
    offs: &Slots,
    part: &dyn Fn(&mut Builder, ValueId) -> ValueId,
) -> ValueId {
    let more = build_cmpi(b, "sgt", last, ch.zero);
    let first = scf::build_if(
        b,
        more,
        std::slice::from_ref(&comb.ty),
        |b| vec![part(b, ch.zero)],
        |_| vec![ne],
    )[0];
    let acc = scf::build_for(b, ch.one, last, ch.one, &[first], |b, k, accs| {
        offs.store(b, k, accs[0]);
        let p = part(b, k);
        vec![comb.apply(b, accs[0], p)]
    });
    offs.store(b, last, acc[0]);
    acc[0]
}

/// The scan at the top level for a combiner that cannot fault: as
/// [`scan_by_partials`], with both passes over the chunks two at a time
/// ([`Chunks::fold_pair`]), so that one core runs two independent chains
/// of `⊕`s at once in each pass (a linear recurrence is latency-bound). The
/// partials go to arrays from an `scf.forall` over the pairs; each chain
/// and the offsets' combination are the same `⊕`s as in the other forms.
fn scan_paired(
    b: &mut Builder,
    ch: &Chunks,
    v: ValueId,
    ne: ValueId,
    comb: &Combiner,
    outs: &Slots,
    what: &str,
) {
    let ty = comb.ty.clone();
    let offs = Slots::alloc(b, ch.nc, &ty);
    let last = build_binop(b, "arith.subi", ch.nc, ch.one);
    let parts = Slots::alloc(b, last, &ty);
    ch.pairs(
        b,
        last,
        what,
        |b, c| {
            let (p0, p1) = ch.fold_pair(b, v, comb, c, ne, ne, &mut |_, _, _| {});
            let c1 = build_binop(b, "arith.addi", c, ch.one);
            parts.store(b, c, p0);
            parts.store(b, c1, p1);
        },
        |b, c| {
            let p = ch.fold(b, v, comb, c, ne, &mut |_, _, _| {});
            parts.store(b, c, p);
        },
    );
    offsets(b, ch, ne, comb, last, &offs, &|b, k| parts.load(b, k, &ty));
    let start = |b: &mut Builder, c: ValueId| {
        let is_first = build_cmpi(b, "eq", c, ch.zero);
        let off = offs.load(b, c, &ty);
        b.op1("arith.select", &[is_first, ne, off], ty.clone(), vec![])
    };
    ch.pairs(
        b,
        ch.nc,
        what,
        |b, c| {
            let s0 = start(b, c);
            let c1 = build_binop(b, "arith.addi", c, ch.one);
            let s1 = offs.load(b, c1, &ty);
            ch.fold_pair(b, v, comb, c, s0, s1, &mut |b, j, y| outs.store(b, j, y));
        },
        |b, c| {
            let s0 = start(b, c);
            ch.fold(b, v, comb, c, s0, &mut |b, j, y| outs.store(b, j, y));
        },
    );
}

/// The sequential form for a combiner that cannot fault: the chunk loop
/// carries the combination of the partials so far (reduce) or the next
/// chunk's offset (scan). The `⊕`s are the same as in the array forms.
fn carried(
    b: &mut Builder,
    ch: &Chunks,
    v: ValueId,
    ne: ValueId,
    comb: &Combiner,
    outs: Option<&Slots>,
    what: &str,
) -> (ValueId, Vec<ValueId>) {
    let ty = comb.ty.clone();
    let res = chunk_loop(b, ch, ch.nc, false, &[ne], what, |b, c, accs| {
        let acc = accs[0];
        let is_first = build_cmpi(b, "eq", c, ch.zero);
        let Some(outs) = &outs else {
            let p = ch.fold(b, v, comb, c, ne, &mut |_, _, _| {});
            let both = comb.apply(b, acc, p);
            return vec![b.op1("arith.select", &[is_first, p, both], ty.clone(), vec![])];
        };
        // `acc` is this chunk's offset (ne for chunk 0). Before the last
        // chunk, the chunk's partial (its fold from `ne`, for the next
        // offset) comes from the same loop: the chunk is read once.
        let next = build_binop(b, "arith.addi", c, ch.one);
        let more = build_cmpi(b, "slt", next, ch.nc);
        scf::build_if(
            b,
            more,
            std::slice::from_ref(&ty),
            |b| {
                let store = &mut |b: &mut Builder, j, y| outs.store(b, j, y);
                let (_, p) = ch.fold_twice(b, v, comb, c, acc, ne, store);
                let both = comb.apply(b, acc, p);
                vec![b.op1("arith.select", &[is_first, p, both], ty.clone(), vec![])]
            },
            |b| {
                ch.fold(b, v, comb, c, acc, &mut |b, j, y| outs.store(b, j, y));
                vec![acc]
            },
        )
        .to_vec()
    });
    (res[0], outs.map_or_else(Vec::new, |o| o.arrs.clone()))
}
