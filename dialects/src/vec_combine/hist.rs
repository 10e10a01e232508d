//! The fold order of `vec.hist` and its chunked lowering (issue 41, item 3:
//! deterministic histograms in kernels; issue 42: `reduce_by_index`).
//!
//! A histogram's operator `⊕` is associative by contract (Futhark's
//! `reduce_by_index`), so its updates may be grouped; the grouping is fixed
//! by the lengths alone, so every backend, thread count and device gets the
//! same answer, and where the contract holds it is the left fold of each
//! bin. For `m` updates `(is[j], vs[j])` into `n` bins of `dest`:
//! - chunks as a combiner's fold ([`super::chunked::chunking`]`(m)`), but
//!   at most `max(1, TABLE_BUDGET / n)` of them ([`hist_chunking`]), so the
//!   partial tables below hold at most [`TABLE_BUDGET`] elements;
//! - chunk 0 folds its updates into `dest`'s bins left to right;
//! - chunk `c >= 1` folds its updates into row `c - 1` of a private table
//!   of `n` values: a `kind` starts the row at its exact identity (`-0.0`
//!   for a float sum: `id ⊕ x` is `x` bit for bit); a combiner region has
//!   none, so a row of flags marks the bins the chunk saw, a bin's first
//!   update is stored as is and later ones are `⊕`-ed onto it;
//! - then each bin folds its rows (where flagged) in row order:
//!   `dest[b] ⊕ row0[b] ⊕ row1[b] ⊕ ...`.
//!
//! The chunk loop and the combination are loops whose iterations are
//! independent (a chunk writes only its own row, or `dest` for chunk 0; a
//! bin only its own element): `scf.forall` at the top level of host code,
//! which runs on every core and as a GPU kernel with a thread per chunk
//! and then per bin (`passes::gpu::chunks`), sequential `scf.for`
//! elsewhere. Up to `GRAIN` updates are one chunk: the left fold exactly.
//!
//! Which histograms are chunked ([`HistOp::chunked`]): those whose `⊕` no
//! hardware atomic computes exactly and which cannot fault: float
//! operators, integer multiplication, and combiner regions other than one
//! integer `add`/`min`/`max`. Those stay one left fold
//! ([`crate::vec_scatter`]'s loop), which `passes::gpu::update` runs with
//! atomics; a combiner that can fault stays a left fold too, so that its
//! first fault is the left fold's.

use smallvec::smallvec;

use ir::interp::{Interp, RtValue, RunError};
use ir::{Builder, Context, OpId, RegionId, Type, ValueId};

use super::chunked::{apply_region, chunk_loop, chunking, fault_free, top_level, Chunks};
use crate::arith::{build_binop, build_cmpi, const_int};
use crate::vec::BinOp;
use crate::{arr, scf, vec};

type Vals = smallvec::SmallVec<[RtValue; 2]>;

/// Most elements of a histogram's partial tables (all rows together).
pub const TABLE_BUDGET: i64 = 1 << 20;

/// `(cs, nc)`: the chunk size and chunk count of `m` updates into `n`
/// bins (see the module documentation). `m` must not be negative.
pub fn hist_chunking(m: i64, n: i64) -> (i64, i64) {
    let (cs, nc) = chunking(m);
    let cap = (TABLE_BUDGET / n.max(1)).max(1);
    if nc <= cap {
        return (cs, nc);
    }
    let cs = (m + cap - 1) / cap;
    (cs, ((m + cs - 1) / cs).max(1))
}

/// A histogram's operator `⊕`.
pub enum HistOp {
    /// A `kind` on elements of this type.
    Kind(BinOp, Type),
    /// A combiner region and its terminator.
    Region(RegionId, OpId),
}

impl HistOp {
    /// The operator of `vec.hist` op `op`; `None` when malformed.
    pub fn of(ctx: &Context, op: OpId) -> Option<HistOp> {
        if let Some(&r) = ctx.regions(op).first() {
            return Some(HistOp::Region(r, super::combiner_terminator(ctx, r)?));
        }
        let k = BinOp::from_kind_attr(ctx.attr(op, "kind")?)?;
        let t = ctx.ty(ctx.operand(op, 0)).elem()?.clone();
        Some(HistOp::Kind(k, t))
    }

    /// Whether the histogram is chunked (see the module documentation).
    pub fn chunked(&self, ctx: &Context) -> bool {
        match self {
            HistOp::Kind(BinOp::Sub, _) => false,
            HistOp::Kind(k, t) => crate::gpu::exact_atomic(k.arith_op(t), t).is_none(),
            HistOp::Region(r, term) => fault_free(ctx, *r, *term) && !one_atomic(ctx, *r, *term),
        }
    }

    /// `acc ⊕ x` at the insertion point (the region is cloned).
    fn build(&self, b: &mut Builder, acc: ValueId, x: ValueId) -> ValueId {
        match self {
            HistOp::Kind(k, t) => b.op1(k.arith_op(t), &[acc, x], t.clone(), vec![]),
            HistOp::Region(r, _) => apply_region(b, *r, acc, x),
        }
    }

    /// An exact identity of a `kind` (`-0.0` for a float sum), as a
    /// constant at the insertion point; `None` for a combiner region.
    fn exact_identity(&self, b: &mut Builder) -> Option<ValueId> {
        let HistOp::Kind(k, t) = self else {
            return None;
        };
        let m = crate::gen::Monoid::from_name(k.name())?;
        let id = crate::gen::lower::exact_identity(m, t)?;
        Some(b.constant(id, t))
    }

    /// `acc ⊕ x` in the interpreter.
    fn run(
        &self,
        it: &mut Interp,
        op: OpId,
        acc: &RtValue,
        x: &RtValue,
    ) -> Result<RtValue, RunError> {
        match self {
            HistOp::Kind(k, t) => crate::vec::binop(it.ctx, op, *k, t, acc, x),
            HistOp::Region(r, _) => it
                .run_region(*r, &[acc.clone(), x.clone()])?
                .into_iter()
                .next()
                .ok_or_else(|| RunError::at(it.ctx, op, "the combiner yielded no value")),
        }
    }
}

/// Whether combiner region `r` is one integer op that a hardware atomic
/// computes exactly, applied to its two arguments.
fn one_atomic(ctx: &Context, r: RegionId, term: OpId) -> bool {
    let blk = ctx.region_block(r);
    let args = ctx.block_args(blk).to_vec();
    let [op, t] = ctx.block_ops(blk)[..] else {
        return false;
    };
    let ops = ctx.operands(op);
    let mut sorted = ops.to_vec();
    sorted.sort();
    let mut want = args.clone();
    want.sort();
    t == term
        && ctx.results(op).len() == 1
        && ctx.operands(term) == [ctx.result(op, 0)]
        && sorted == want
        && crate::gpu::exact_atomic(ctx.op_name(op), ctx.ty(ctx.result(op, 0))).is_some()
}

/// Interprets `vec.hist` op `op` with operator `hop` on operands `a`
/// (`dest`, `is`, `vs`): the left fold of each bin, or the chunked order
/// where [`HistOp::chunked`]. Indices outside `[0, n)` are skipped.
///
/// # Errors
/// A size mismatch of `is` and `vs`, and the combiner's faults.
pub fn interp(it: &mut Interp, op: OpId, a: &[RtValue], hop: &HistOp) -> Result<Vals, RunError> {
    let ctx = it.ctx;
    let (mut out, is, vs) = crate::vec_scatter::update_operands(ctx, op, a, "vec.hist")?;
    let n = out.len();
    let m = is.len();
    let (cs, nc) = if hop.chunked(ctx) {
        let (cs, nc) = hist_chunking(m as i64, n as i64);
        (cs as usize, nc as usize)
    } else {
        (m.max(1), 1)
    };
    let mut rows: Vec<Option<RtValue>> = vec![None; (nc - 1) * n];
    for c in 0..nc {
        let range = c * cs..m.min(c * cs + cs);
        for (i, x) in is[range.clone()].iter().zip(&vs[range]) {
            let Some(k) = crate::vec_scatter::update_index(ctx, op, i, n)? else {
                continue;
            };
            if c == 0 {
                out[k] = hop.run(it, op, &out[k], x)?;
                continue;
            }
            let slot = (c - 1) * n + k;
            rows[slot] = Some(match &rows[slot] {
                Some(p) => hop.run(it, op, p, x)?,
                None => x.clone(),
            });
        }
    }
    for (slot, p) in rows.iter().enumerate() {
        if let Some(p) = p {
            let k = slot % n;
            out[k] = hop.run(it, op, &out[k], p)?;
        }
    }
    Ok(smallvec![vec::vec_value(out)])
}

/// Lowers a chunked histogram (see the module documentation): `m` updates
/// from `is` and `vs` into array `a` of `n` bins, which holds `dest`.
#[allow(clippy::too_many_arguments)]
pub fn lower(
    b: &mut Builder,
    hop: &HistOp,
    t: &Type,
    is: ValueId,
    vs: ValueId,
    m: ValueId,
    a: ValueId,
    n: ValueId,
) {
    let ch = Chunks::build(b, m);
    let (zero, one) = (ch.zero, ch.one);
    let budget = const_int(b, TABLE_BUDGET, &Type::Index);
    let n1 = build_binop(b, "arith.maxi", n, one);
    let cap = build_binop(b, "arith.divsi", budget, n1);
    let cap = build_binop(b, "arith.maxi", cap, one);
    let over = build_cmpi(b, "sgt", ch.nc, cap);
    let capped = build_binop(b, "arith.ceildivsi", m, cap);
    let cs = b.op1("arith.select", &[over, capped, ch.cs], Type::Index, vec![]);
    let nc = build_binop(b, "arith.ceildivsi", m, cs);
    let nc = build_binop(b, "arith.maxi", nc, one);
    let ch = Chunks { cs, nc, ..ch };
    let rows = build_binop(b, "arith.subi", nc, one);
    let size = build_binop(b, "arith.muli", rows, n);
    let part = arr::alloc(b, size, t.clone());
    // With an exact identity a row starts as identities and needs no flags
    // (`id ⊕ x == x` bit for bit); a combiner region keeps flags instead.
    let id = hop.exact_identity(b);
    let seen = id.is_none().then(|| arr::alloc(b, size, Type::I1));
    let parallel = top_level(b);
    // The updates of chunk `c` from `lo` to `hi`, `update(b, i, x)` each.
    let updates =
        |b: &mut Builder, lo, hi, update: &mut dyn FnMut(&mut Builder, ValueId, ValueId)| {
            scf::build_for(b, lo, hi, one, &[], |b, j, _| {
                let i = vec::get_in_bounds(b, is, j);
                let ok = crate::arith::build_in_range(b, i, n);
                scf::build_if_then(b, ok, |b| {
                    let x = vec::get_in_bounds(b, vs, j);
                    update(b, i, x);
                });
                vec![]
            });
        };
    chunk_loop(b, &ch, nc, parallel, &[], "vec.hist", |b, c, _| {
        let lo = build_binop(b, "arith.muli", c, cs);
        let end = build_binop(b, "arith.addi", lo, cs);
        let hi = build_binop(b, "arith.mini", m, end);
        let first = build_cmpi(b, "eq", c, zero);
        scf::build_if(
            b,
            first,
            &[],
            |b| {
                updates(b, lo, hi, &mut |b, i, x| {
                    let old = arr::load_in_bounds(b, a, i);
                    let y = hop.build(b, old, x);
                    arr::store_in_bounds(b, a, i, y);
                });
                vec![]
            },
            |b| {
                let r = build_binop(b, "arith.subi", c, one);
                let base = build_binop(b, "arith.muli", r, n);
                if let Some(id) = id {
                    scf::build_for(b, zero, n, one, &[], |b, k, _| {
                        let k = build_binop(b, "arith.addi", base, k);
                        arr::store_in_bounds(b, part, k, id);
                        vec![]
                    });
                }
                updates(b, lo, hi, &mut |b, i, x| {
                    let k = build_binop(b, "arith.addi", base, i);
                    let p = arr::load_in_bounds(b, part, k);
                    let y = hop.build(b, p, x);
                    let Some(seen) = seen else {
                        arr::store_in_bounds(b, part, k, y);
                        return;
                    };
                    let s = arr::load_in_bounds(b, seen, k);
                    let y = b.op1("arith.select", &[s, y, x], t.clone(), vec![]);
                    arr::store_in_bounds(b, part, k, y);
                    let yes = const_int(b, 1, &Type::I1);
                    arr::store_in_bounds(b, seen, k, yes);
                });
                vec![]
            },
        );
        Vec::new()
    });
    let any = build_cmpi(b, "sgt", rows, zero);
    let bins = b.op1("arith.select", &[any, n, zero], Type::Index, vec![]);
    chunk_loop(b, &ch, bins, parallel, &[], "vec.hist", |b, bin, _| {
        let start = arr::load_in_bounds(b, a, bin);
        let acc = scf::build_for(b, zero, rows, one, &[start], |b, r, accs| {
            let k = build_binop(b, "arith.muli", r, n);
            let k = build_binop(b, "arith.addi", k, bin);
            let p = arr::load_in_bounds(b, part, k);
            let y = hop.build(b, accs[0], p);
            let Some(seen) = seen else {
                return vec![y];
            };
            let s = arr::load_in_bounds(b, seen, k);
            vec![b.op1("arith.select", &[s, y, accs[0]], t.clone(), vec![])]
        });
        arr::store_in_bounds(b, a, bin, acc[0]);
        Vec::new()
    });
}
