//! Kernels for loops whose results depend on index order across threads:
//! scans and filters (collects under `scf.if`), by the three-phase scan
//! (block-local scan, scan of the block sums, add-back; Merrill and
//! Garland's "reduce-then-scan" family, as in CUB and Futhark's
//! segmented scans) and, for a filter, flags + scan + scatter.
//!
//! Blocks take contiguous chunks of `[0, n)` (`C = ceil(n / G)` indices
//! per block) and threads contiguous sub-chunks of those (`ceil(C / B)`),
//! so that a thread's prefix is "everything before its sub-chunk":
//!
//! 1. **Main kernel** (`G` blocks): each thread evaluates the body on its
//!    sub-chunk, storing scan inputs at `sc[i]` and, for a filter, the value
//!    at `vals[i]` and a flag `flags[i] = 1`; reduces and dense collects
//!    are computed as in [`super::kernel`]. Each thread's total (scan fold,
//!    filter count) is scanned over the block in shared memory
//!    ([`block_scan`]); a second pass over the sub-chunk turns `sc[i]` into
//!    the block-local inclusive scan and `flags[i]` into the block-local
//!    position + 1 (0 when not kept); thread 0 stores the block's total.
//! 2. **Block-sum kernel** (1 block): the exclusive scan of the block totals,
//!    seeded with the scan's init (0 for a filter's count), and the grand
//!    total (a filter's output length, which the host reads to allocate the
//!    output).
//! 3. **Add-back kernel** (`G` blocks): `sc[i] = prefix[b] ⊕ sc[i]`; a kept
//!    element `i` goes to `out[prefix[b] + flags[i] - 1]`.

use ir::clone::clone_op_into;
use ir::spec::Traits;
use ir::{Builder, Context, OpId, Type, ValueId};

use dialects::gen::{self, Generator, Monoid};
use dialects::{arr, gpu, scf};

use super::kernel::{
    block_reduce, finish, loop_kernel, new_kernel, prologue, vec_reads_to_arr, LoopKernel, Thread,
};
use super::{binop, cmpi, idx, select, Role};

/// `min(a, b)` on indices.
fn min(b: &mut Builder, x: ValueId, y: ValueId) -> ValueId {
    binop(b, "arith.mini", x, y)
}

fn ceildiv(b: &mut Builder, x: ValueId, y: ValueId) -> ValueId {
    let one = idx(b, 1);
    let t = binop(b, "arith.addi", x, y);
    let t = binop(b, "arith.subi", t, one);
    binop(b, "arith.divsi", t, y)
}

/// The block's chunk `[lo_b, hi_b)` of `[0, n)` and the thread's sub-chunk
/// `[lo_t, hi_t)` of it.
pub(super) struct Chunk {
    pub lo_b: ValueId,
    pub hi_b: ValueId,
    pub lo_t: ValueId,
    pub hi_t: ValueId,
}

pub(super) fn chunk(b: &mut Builder, n: ValueId, t: &Thread) -> Chunk {
    let c = ceildiv(b, n, t.gdim);
    let lo = binop(b, "arith.muli", t.bid, c);
    let lo_b = min(b, lo, n);
    let hi = binop(b, "arith.addi", lo_b, c);
    let hi_b = min(b, hi, n);
    let p = ceildiv(b, c, t.bdim);
    let off = binop(b, "arith.muli", t.tid, p);
    let lo = binop(b, "arith.addi", lo_b, off);
    let lo_t = min(b, lo, hi_b);
    let hi = binop(b, "arith.addi", lo_t, p);
    let hi_t = min(b, hi, hi_b);
    Chunk {
        lo_b,
        hi_b,
        lo_t,
        hi_t,
    }
}

/// Slot `e` of iteration `i` of a filter `width` slots wide.
fn slot_of(b: &mut Builder, i: ValueId, width: i64, e: i64) -> ValueId {
    if width == 1 {
        return i;
    }
    let w = idx(b, width);
    let base = binop(b, "arith.muli", i, w);
    let e = idx(b, e);
    binop(b, "arith.addi", base, e)
}

/// The slots `[lo * width, hi * width)` of iterations `[lo, hi)`.
fn slots(b: &mut Builder, lo: ValueId, hi: ValueId, width: i64) -> (ValueId, ValueId) {
    (slot_of(b, lo, width, 0), slot_of(b, hi, width, 0))
}

pub(super) fn combine(b: &mut Builder, m: Monoid, ty: &Type, x: ValueId, y: ValueId) -> ValueId {
    binop(b, m.combine_op(ty).expect("checked monoid"), x, y)
}

pub(super) fn identity(b: &mut Builder, m: Monoid, ty: &Type) -> ValueId {
    let a = gen::lower::exact_identity(m, ty).expect("checked monoid");
    b.constant(a, ty)
}

/// An exclusive scan over the threads of the block of each `(value,
/// monoid, type)`: returns per value `(prefix of the threads before this
/// one, total of the block)`. Hillis-Steele in one workgroup buffer of
/// `block` elements per value; every step reads, waits, writes and waits.
pub(super) fn block_scan(
    b: &mut Builder,
    tid: ValueId,
    vals: &[(ValueId, Monoid, Type)],
    block: i64,
) -> Vec<(ValueId, ValueId)> {
    let mut bufs = Vec::new();
    for (v, _, ty) in vals {
        let sh = gpu::workgroup_alloc(b, block, ty.clone());
        arr::store(b, sh, tid, *v);
        bufs.push(sh);
    }
    gpu::barrier(b);
    let zero = idx(b, 0);
    let mut d = 1;
    while d < block {
        let dc = idx(b, d);
        let has = cmpi(b, "sge", tid, dc);
        let back = binop(b, "arith.subi", tid, dc);
        let at = select(b, has, back, zero);
        let mut news = Vec::new();
        for ((_, m, ty), &sh) in vals.iter().zip(&bufs) {
            let x = arr::load(b, sh, at);
            let id = identity(b, *m, ty);
            let x = select(b, has, x, id);
            let cur = arr::load(b, sh, tid);
            news.push(combine(b, *m, ty, x, cur));
        }
        gpu::barrier(b);
        for (&sh, v) in bufs.iter().zip(news) {
            arr::store(b, sh, tid, v);
        }
        gpu::barrier(b);
        d *= 2;
    }
    let one = idx(b, 1);
    let has = cmpi(b, "sge", tid, one);
    let back = binop(b, "arith.subi", tid, one);
    let at = select(b, has, back, zero);
    let last = idx(b, block - 1);
    let mut out = Vec::new();
    for ((_, m, ty), &sh) in vals.iter().zip(&bufs) {
        let x = arr::load(b, sh, at);
        let id = identity(b, *m, ty);
        let excl = select(b, has, x, id);
        let total = arr::load(b, sh, last);
        out.push((excl, total));
    }
    out
}

/// `scf.if tid == 0 { a[at] = v }`.
pub(super) fn store_by_thread0(b: &mut Builder, tid: ValueId, a: ValueId, at: ValueId, v: ValueId) {
    let zero = idx(b, 0);
    let t0 = cmpi(b, "eq", tid, zero);
    scf::build_if_then(b, t0, |b| {
        arr::store(b, a, at, v);
    });
}

/// The buffers of one generator in the main kernel.
#[derive(Clone, Copy)]
pub(super) enum Bufs {
    Collect {
        out: ValueId,
    },
    Filter {
        vals: ValueId,
        flags: ValueId,
        sums: ValueId,
    },
    Scan {
        sc: ValueId,
        sums: ValueId,
    },
    Reduce {
        parts: ValueId,
    },
}

/// The kernel parameter types of each role in the main kernel.
pub(super) fn main_params(roles: &[Role]) -> Vec<Type> {
    let mut out = Vec::new();
    for r in roles {
        match r {
            Role::Collect { elem, .. } | Role::Reduce { elem, .. } => {
                out.push(Type::arr(elem.clone()))
            }
            Role::Filter { elem, .. } => out.extend([
                Type::arr(elem.clone()),
                Type::arr(Type::Index),
                Type::arr(Type::Index),
            ]),
            Role::Scan { elem, .. } => {
                out.extend([Type::arr(elem.clone()), Type::arr(elem.clone())])
            }
        }
    }
    out
}

/// Builds the main kernel of an ordered loop `l`.
#[allow(clippy::too_many_arguments)]
pub(super) fn main_kernel(
    ctx: &mut Context,
    f: OpId,
    name: &str,
    l: OpId,
    roles: &[Role],
    captures: &[ValueId],
    cap_types: &[Type],
    allocs: &[OpId],
    block: i64,
) {
    let mut params = vec![Type::Index];
    params.extend(cap_types.iter().cloned());
    params.extend(main_params(roles));
    // The scratch slices of nested collects ([`super::scratch`]) last: a
    // thread runs its chunk's iterations one after another.
    let scratch_at = params.len();
    params.extend(super::scratch::kernel_params(ctx, allocs));
    let LoopKernel {
        k,
        kb,
        args,
        ops,
        iv,
        handles,
        mut map,
    } = loop_kernel(ctx, f, l, name, &params, captures);
    let mut next = 1 + captures.len();
    let mut bufs = Vec::new();
    for r in roles {
        let take = |next: &mut usize, n: usize| {
            let s = args[*next..*next + n].to_vec();
            *next += n;
            s
        };
        bufs.push(match r {
            Role::Collect { .. } => Bufs::Collect {
                out: take(&mut next, 1)[0],
            },
            Role::Filter { .. } => {
                let s = take(&mut next, 3);
                Bufs::Filter {
                    vals: s[0],
                    flags: s[1],
                    sums: s[2],
                }
            }
            Role::Scan { .. } => {
                let s = take(&mut next, 2);
                Bufs::Scan {
                    sc: s[0],
                    sums: s[1],
                }
            }
            Role::Reduce { .. } => Bufs::Reduce {
                parts: take(&mut next, 1)[0],
            },
        });
    }
    // Inner reduces: one per reduce generator, then one per scan (its thread total).
    let mut inner = Vec::new();
    let mut inner_of = vec![None; roles.len()];
    for (j, r) in roles.iter().enumerate() {
        if let Role::Reduce { m, elem } = r {
            inner_of[j] = Some(inner.len());
            inner.push(Generator::reduce(*m, elem.clone()));
        }
    }
    for (j, r) in roles.iter().enumerate() {
        if let Role::Scan { m, elem, .. } = r {
            inner_of[j] = Some(inner.len());
            inner.push(Generator::reduce(*m, elem.clone()));
        }
    }

    let mut b = Builder::at_end(ctx, kb);
    b.loc = b.ctx.loc(l);
    let t = prologue(&mut b);
    let ch = chunk(&mut b, args[0], &t);
    let cnt = binop(&mut b, "arith.subi", ch.hi_t, ch.lo_t);
    let mut index = None;
    let smart = b.smart;
    b.smart = smart && allocs.is_empty();
    let totals = gen::build_loop(&mut b, cnt, &[], &inner, |b, kv, hs| {
        let i = binop(b, "arith.addi", ch.lo_t, kv);
        index = Some(i);
        map.insert(iv, i);
        for (j, r) in roles.iter().enumerate() {
            if let (Role::Reduce { .. }, Some(s)) = (r, inner_of[j]) {
                map.insert(handles[j], hs[s]);
            }
        }
        for &op in &ops {
            if b.ctx.has_traits(op, Traits::TERMINATOR) {
                continue;
            }
            let role = roles.iter().position(|r| match r {
                Role::Collect { emit, .. } | Role::Scan { emit, .. } => *emit == op,
                _ => false,
            });
            if let Some(j) = role {
                let x = b.ctx.operand(op, 1);
                let x = map.get(&x).copied().unwrap_or(x);
                match bufs[j] {
                    Bufs::Collect { out } => arr::store_in_bounds(b, out, i, x),
                    Bufs::Scan { sc, .. } => {
                        arr::store_in_bounds(b, sc, i, x);
                        gen::emit(b, hs[inner_of[j].expect("scan total")], x);
                    }
                    _ => unreachable!("only dense emits are rewritten here"),
                }
                continue;
            }
            clone_op_into(b, op, &mut map);
        }
    });
    b.smart = smart;
    let i = index.expect("the loop body was built");
    // A filter's emits (cloned where they stood, still naming the original
    // handle) become the stores of their values and flags, emit `e` (in
    // program order) at slot `i * width + e`.
    for (j, r) in roles.iter().enumerate() {
        let (Role::Filter { width, .. }, Bufs::Filter { vals, flags, .. }) = (r, bufs[j]) else {
            continue;
        };
        let h = handles[j];
        let emits: Vec<OpId> = b
            .ctx
            .walk_nested(k)
            .into_iter()
            .filter(|&o| b.ctx.is(o, gen::EMIT) && b.ctx.operand(o, 0) == h)
            .collect();
        for (e_no, e) in emits.into_iter().enumerate() {
            let x = *b.ctx.operands(e).last().expect("emit value");
            let ip = b.insertion_point();
            b.set_before(e);
            let slot = slot_of(&mut b, i, *width, e_no as i64);
            arr::store_in_bounds(&mut b, vals, slot, x);
            let one = idx(&mut b, 1);
            arr::store_in_bounds(&mut b, flags, slot, one);
            b.restore(ip);
            b.ctx.erase_op(e);
        }
    }

    // Reduces: over the block, then a combine kernel (as for plain loops).
    let reds: Vec<(ValueId, Monoid, Type)> = roles
        .iter()
        .enumerate()
        .filter_map(|(j, r)| match r {
            Role::Reduce { m, elem } => Some((totals[inner_of[j]?], *m, elem.clone())),
            _ => None,
        })
        .collect();
    let parts: Vec<ValueId> = bufs
        .iter()
        .filter_map(|x| match x {
            Bufs::Reduce { parts } => Some(*parts),
            _ => None,
        })
        .collect();
    block_reduce(&mut b, &t, &reds, &parts, block);

    // Thread totals of the ordered generators, scanned over the block.
    let zero = idx(&mut b, 0);
    let one = idx(&mut b, 1);
    let mut ordered = Vec::new();
    for (j, r) in roles.iter().enumerate() {
        match (r, bufs[j]) {
            (Role::Scan { m, elem, .. }, _) => {
                ordered.push((
                    j,
                    totals[inner_of[j].expect("scan total")],
                    *m,
                    elem.clone(),
                ));
            }
            (Role::Filter { width, .. }, Bufs::Filter { flags, .. }) => {
                let (lo, hi) = slots(&mut b, ch.lo_t, ch.hi_t, *width);
                let n = scf::build_for(&mut b, lo, hi, one, &[zero], |b, i, acc| {
                    let fl = arr::load_in_bounds(b, flags, i);
                    vec![binop(b, "arith.addi", acc[0], fl)]
                });
                ordered.push((j, n[0], Monoid::Add, Type::Index));
            }
            _ => {}
        }
    }
    let vals: Vec<(ValueId, Monoid, Type)> = ordered
        .iter()
        .map(|(_, v, m, t)| (*v, *m, t.clone()))
        .collect();
    let scanned = block_scan(&mut b, t.tid, &vals, block);
    for ((j, _, m, ty), (excl, total)) in ordered.iter().zip(scanned) {
        match bufs[*j] {
            Bufs::Scan { sc, sums } => {
                let (m, ty) = (*m, ty.clone());
                scf::build_for(&mut b, ch.lo_t, ch.hi_t, one, &[excl], |b, i, acc| {
                    let x = arr::load_in_bounds(b, sc, i);
                    let y = combine(b, m, &ty, acc[0], x);
                    arr::store_in_bounds(b, sc, i, y);
                    vec![y]
                });
                store_by_thread0(&mut b, t.tid, sums, t.bid, total);
            }
            Bufs::Filter { flags, sums, .. } => {
                let Role::Filter { width, .. } = roles[*j] else {
                    unreachable!("filter buffers belong to a filter")
                };
                let (lo, hi) = slots(&mut b, ch.lo_t, ch.hi_t, width);
                scf::build_for(&mut b, lo, hi, one, &[excl], |b, i, acc| {
                    let fl = arr::load_in_bounds(b, flags, i);
                    let one = idx(b, 1);
                    let p1 = binop(b, "arith.addi", acc[0], one);
                    let w = binop(b, "arith.muli", fl, p1);
                    arr::store_in_bounds(b, flags, i, w);
                    vec![binop(b, "arith.addi", acc[0], fl)]
                });
                store_by_thread0(&mut b, t.tid, sums, t.bid, total);
            }
            _ => {}
        }
    }
    let _ = ch.lo_b;
    let _ = ch.hi_b;
    finish(&mut b);
    let copies = super::scratch::copies(ctx, allocs, &map);
    super::scratch::expand(ctx, &copies, &args[scratch_at..], t.gtid);
    vec_reads_to_arr(ctx, k);
}

/// One ordered generator as the block-sum and add-back kernels see it.
pub(super) struct Ordered {
    /// The scanned monoid and type: the scan's, or `add` on `index` (a
    /// filter's count).
    pub m: Monoid,
    pub ty: Type,
    /// A filter's element type and slots per iteration (`None` for a scan).
    pub filter: Option<(Type, i64)>,
}

/// Builds the block-sum kernel: `(g, [sums_j, prefix_j, total_j, init_j]...)`.
pub(super) fn sums_kernel(ctx: &mut Context, f: OpId, name: &str, ordered: &[Ordered], block: i64) {
    let mut params = vec![Type::Index];
    for o in ordered {
        let a = Type::arr(o.ty.clone());
        params.extend([a.clone(), a.clone(), a, o.ty.clone()]);
    }
    let (_, kb) = new_kernel(ctx, f, f, name, &params);
    let args = ctx.block_args(kb).to_vec();
    let mut b = Builder::at_end(ctx, kb);
    let t = prologue(&mut b);
    let ch = chunk(&mut b, args[0], &t);
    let one = idx(&mut b, 1);
    let mut tots = Vec::new();
    for (k, o) in ordered.iter().enumerate() {
        let sums = args[1 + 4 * k];
        let id = identity(&mut b, o.m, &o.ty);
        let (m, ty) = (o.m, o.ty.clone());
        let r = scf::build_for(&mut b, ch.lo_t, ch.hi_t, one, &[id], |b, i, acc| {
            let x = arr::load_in_bounds(b, sums, i);
            vec![combine(b, m, &ty, acc[0], x)]
        });
        tots.push((r[0], o.m, o.ty.clone()));
    }
    let scanned = block_scan(&mut b, t.tid, &tots, block);
    let zero = idx(&mut b, 0);
    for (k, (o, (excl, total))) in ordered.iter().zip(scanned).enumerate() {
        let (sums, pref, tot, init) = (
            args[1 + 4 * k],
            args[2 + 4 * k],
            args[3 + 4 * k],
            args[4 + 4 * k],
        );
        let (m, ty) = (o.m, o.ty.clone());
        let start = combine(&mut b, m, &ty, init, excl);
        scf::build_for(&mut b, ch.lo_t, ch.hi_t, one, &[start], |b, i, acc| {
            arr::store_in_bounds(b, pref, i, acc[0]);
            let x = arr::load_in_bounds(b, sums, i);
            vec![combine(b, m, &ty, acc[0], x)]
        });
        let all = combine(&mut b, m, &ty, init, total);
        store_by_thread0(&mut b, t.tid, tot, zero, all);
    }
    finish(&mut b);
}

/// Builds the add-back kernel: `(n, per generator: scan: sc, prefix;
/// filter: vals, flags, prefix, out)`.
pub(super) fn add_back_kernel(ctx: &mut Context, f: OpId, name: &str, ordered: &[Ordered]) {
    let mut params = vec![Type::Index];
    for o in ordered {
        match &o.filter {
            Some((e, _)) => {
                let a = Type::arr(e.clone());
                params.extend([a.clone(), Type::arr(Type::Index), Type::arr(Type::Index), a]);
            }
            None => {
                let a = Type::arr(o.ty.clone());
                params.extend([a.clone(), a]);
            }
        }
    }
    let (_, kb) = new_kernel(ctx, f, f, name, &params);
    let args = ctx.block_args(kb).to_vec();
    let mut b = Builder::at_end(ctx, kb);
    let t = prologue(&mut b);
    let ch = chunk(&mut b, args[0], &t);
    let start = binop(&mut b, "arith.addi", ch.lo_b, t.tid);
    let mut at = 1;
    let mut plan = Vec::new();
    for o in ordered {
        let n = if o.filter.is_some() { 4 } else { 2 };
        plan.push((o, args[at..at + n].to_vec()));
        at += n;
    }
    // Scans: the block's indices, strided over its threads.
    scf::build_for(&mut b, start, ch.hi_b, t.bdim, &[], |b, i, _| {
        for (o, a) in &plan {
            if o.filter.is_none() {
                let (sc, pref) = (a[0], a[1]);
                let p = arr::load(b, pref, t.bid);
                let x = arr::load_in_bounds(b, sc, i);
                let y = combine(b, o.m, &o.ty, p, x);
                arr::store_in_bounds(b, sc, i, y);
            }
        }
        vec![]
    });
    // Filters: the block's slots, strided over its threads.
    for (o, a) in &plan {
        let Some((_, width)) = o.filter else { continue };
        let (vals, flags, pref, out) = (a[0], a[1], a[2], a[3]);
        let (lo, hi) = slots(&mut b, ch.lo_b, ch.hi_b, width);
        let start = binop(&mut b, "arith.addi", lo, t.tid);
        scf::build_for(&mut b, start, hi, t.bdim, &[], |b, i, _| {
            let fl = arr::load_in_bounds(b, flags, i);
            let zero = idx(b, 0);
            let kept = cmpi(b, "ne", fl, zero);
            scf::build_if_then(b, kept, |b| {
                let p = arr::load(b, pref, t.bid);
                let one = idx(b, 1);
                let pos = binop(b, "arith.addi", p, fl);
                let pos = binop(b, "arith.subi", pos, one);
                let x = arr::load_in_bounds(b, vals, i);
                arr::store(b, out, pos, x);
            });
            vec![]
        });
    }
    finish(&mut b);
}
