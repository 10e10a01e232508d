//! Kernels for loops that read the running fold of their own generators
//! (`gen.running`: a scan's consumer fused into the scan's loop, an
//! exclusive prefix, a position among the kept elements), by
//! *reduce-then-rerun*: the fold a thread starts from depends on every
//! index before its sub-chunk, so the emitted values are folded first and
//! the body runs again from the right starting values.
//!
//! Let `R` be the generators the body reads with `gen.running` and every
//! scan of the loop (all reduces or scans). The values emitted to `R` must
//! not depend on a running value ([`independent`]): they are what the
//! first kernel computes without knowing any. Blocks and threads take
//! contiguous chunks of `[0, n)` as in [`super::scan`].
//!
//! 1. **Totals kernel** (`G` blocks): each thread runs the body over its
//!    sub-chunk keeping only the emits to `R` (a per-thread fold each), the
//!    thread folds are scanned over the block ([`scan::block_scan`]): each
//!    thread stores its exclusive prefix in the block at `tpre[b * B + t]`,
//!    thread 0 the block's total at `sums[b]`.
//! 2. **Block-sum kernel** ([`scan::sums_kernel`]): `pref[b] = init ⊕
//!    sums[0] ⊕ ... ⊕ sums[b - 1]` and the total `init ⊕ all`.
//! 3. **Main kernel** (`G` blocks): each thread runs the whole body over its
//!    sub-chunk as a `gen.loop` whose reduces for `R` start at `pref[b] ⊕
//!    tpre[b * B + t]`, so that `gen.running` in the body reads the fold of
//!    every earlier emit, as in the sequential loop. Dense collects store
//!    at `i`, a scan stores its running value after the iteration at `i`,
//!    and reduces outside `R` are combined as in [`super::kernel`] (with its
//!    combine kernel). A reduce in `R` is the block-sum kernel's total.
//!
//! Nested collects of the body ([`super::scratch`]) run in the same
//! scratch slices in the totals and main kernels: a thread runs its
//! sub-chunk's iterations one after another in each.
//!
//! Results are those of the sequential loop for integers; float folds
//! associate differently (as every GPU reduction here does), and are the
//! same for a given block size and grid.

use std::collections::HashSet;

use ir::clone::clone_op_into;
use ir::spec::Traits;
use ir::{Builder, Context, OpId, Type, ValueId};

use dialects::gen::{self, Generator, Monoid};
use dialects::{arr, gpu};

use super::kernel::{
    block_reduce, combine_kernel, finish, loop_kernel, prologue, shaped_reads_to_arr,
    vec_reads_to_arr, LoopKernel,
};
use super::scan::{block_scan, chunk, combine, identity, store_by_thread0, sums_kernel, Ordered};
use super::{
    binop, captures_to_device, dalloc, host_start, kernel_captures, kernel_name, GpuOptions,
    HostStart, Plan, Role,
};

/// The generators [`super::Plan::running`] holds for loop `l` with
/// `roles`: empty when the body reads no running fold of `l`'s own
/// generators, `None` when it does but these kernels cannot run it (a
/// filter beside it, or an emitted value that depends on a running value).
pub(super) fn generators(ctx: &Context, l: OpId, roles: &[Role]) -> Option<Vec<usize>> {
    let handles = gen::handles(ctx, l);
    let read = |j: usize| !gen::running::reads_of(ctx, handles[j]).is_empty();
    if !(0..roles.len()).any(read) {
        return Some(Vec::new());
    }
    let mut r = Vec::new();
    for (j, role) in roles.iter().enumerate() {
        match role {
            Role::Filter { .. } => return None,
            Role::Scan { .. } => r.push(j),
            Role::Reduce { .. } if read(j) => r.push(j),
            _ => {}
        }
    }
    let hs: Vec<ValueId> = r.iter().map(|&j| handles[j]).collect();
    independent(ctx, l, &hs).then_some(r)
}

/// Whether every emit to `hs` in `l`'s body emits a value, under
/// conditions, that no `gen.running` of `hs` reaches: the values flowing
/// from a running read (through operands, and out of every op whose
/// regions hold such a flow) are found to a fixpoint.
fn independent(ctx: &Context, l: OpId, hs: &[ValueId]) -> bool {
    let ops = ctx.walk_nested(l);
    let mut tainted: HashSet<ValueId> = HashSet::new();
    loop {
        let mut changed = false;
        for &op in &ops {
            let reads = ctx.is(op, gen::RUNNING) && hs.contains(&ctx.operand(op, 0));
            let flows = reads
                || ctx.operands(op).iter().any(|v| tainted.contains(v))
                || ctx
                    .walk_nested(op)
                    .iter()
                    .any(|&o| ctx.operands(o).iter().any(|v| tainted.contains(v)));
            if !flows {
                continue;
            }
            let mut out: Vec<ValueId> = ctx.results(op).to_vec();
            for &r in ctx.regions(op) {
                for &b in &ctx.region(r).blocks {
                    out.extend(ctx.block_args(b).iter().copied());
                }
            }
            for v in out {
                changed |= tainted.insert(v);
            }
        }
        if !changed {
            break;
        }
    }
    ops.iter()
        .filter(|&&op| ctx.is(op, gen::EMIT) && hs.contains(&ctx.operand(op, 0)))
        .all(|&e| {
            let mut p = Some(e);
            while let Some(q) = p.filter(|&q| q != l) {
                if ctx.operands(q)[if q == e { 1 } else { 0 }..]
                    .iter()
                    .any(|v| tainted.contains(v))
                {
                    return false;
                }
                p = ctx.parent_op(q);
            }
            true
        })
}

/// The monoid and element type of role `r` (a reduce or scan).
fn fold_of(r: &Role) -> (Monoid, Type) {
    match r {
        Role::Reduce { m, elem } | Role::Scan { m, elem, .. } => (*m, elem.clone()),
        _ => unreachable!("running generators are reduces and scans"),
    }
}

/// Builds the totals kernel `(n, captures..., [tpre_r, sums_r]...)`.
#[allow(clippy::too_many_arguments)]
fn totals_kernel(
    ctx: &mut Context,
    f: OpId,
    name: &str,
    l: OpId,
    p: &Plan,
    caps: &[ValueId],
    cap_types: &[Type],
    block: i64,
) -> OpId {
    let folds: Vec<(Monoid, Type)> = p.running.iter().map(|&j| fold_of(&p.roles[j])).collect();
    let mut params = vec![Type::Index];
    params.extend(cap_types.iter().cloned());
    for (_, t) in &folds {
        params.extend([Type::arr(t.clone()), Type::arr(t.clone())]);
    }
    // The scratch slices of nested collects last.
    let scratch_at = params.len();
    params.extend(super::scratch::kernel_params(ctx, &p.allocs));
    let LoopKernel {
        k,
        kb,
        args,
        ops,
        iv,
        handles,
        mut map,
    } = loop_kernel(ctx, f, l, name, &params, caps);
    let inner: Vec<Generator> = folds
        .iter()
        .map(|(m, t)| Generator::reduce(*m, t.clone()))
        .collect();
    let mut b = Builder::at_end(ctx, kb);
    b.loc = b.ctx.loc(l);
    let t = prologue(&mut b);
    let ch = chunk(&mut b, args[0], &t);
    let cnt = binop(&mut b, "arith.subi", ch.hi_t, ch.lo_t);
    let totals = gen::build_loop(&mut b, cnt, &[], &inner, |b, kv, hs| {
        let i = binop(b, "arith.addi", ch.lo_t, kv);
        map.insert(iv, i);
        for (&j, &h) in p.running.iter().zip(hs) {
            map.insert(handles[j], h);
        }
        for &op in &ops {
            if !b.ctx.has_traits(op, Traits::TERMINATOR) {
                clone_op_into(b, op, &mut map);
            }
        }
    });
    // Only the folds of `R` count here: the other emits (still naming the
    // loop's own handles) go.
    let others: Vec<OpId> = b
        .ctx
        .walk_nested(k)
        .into_iter()
        .filter(|&o| b.ctx.is(o, gen::EMIT) && handles.contains(&b.ctx.operand(o, 0)))
        .collect();
    for o in others {
        b.ctx.erase_op(o);
    }
    // Stores into the loop's arrays run in the main kernel only.
    super::arrays::erase_stores(b.ctx, k, &args[1..1 + caps.len()]);
    let vals: Vec<(ValueId, Monoid, Type)> = totals
        .iter()
        .zip(&folds)
        .map(|(&v, (m, ty))| (v, *m, ty.clone()))
        .collect();
    let scanned = block_scan(&mut b, t.tid, &vals, block);
    let base = binop(&mut b, "arith.muli", t.bid, t.bdim);
    let slot = binop(&mut b, "arith.addi", base, t.tid);
    for (r, (excl, total)) in scanned.into_iter().enumerate() {
        let (tpre, sums) = (args[1 + caps.len() + 2 * r], args[2 + caps.len() + 2 * r]);
        arr::store_in_bounds(&mut b, tpre, slot, excl);
        store_by_thread0(&mut b, t.tid, sums, t.bid, total);
    }
    let gtid = t.gtid;
    finish(&mut b);
    let copies = super::scratch::copies(ctx, &p.allocs, &map);
    super::scratch::expand(ctx, &copies, &args[scratch_at..], gtid);
    vec_reads_to_arr(ctx, k);
    k
}

/// The main kernel's buffers of one generator.
#[derive(Clone, Copy)]
enum Bufs {
    Collect {
        out: ValueId,
    },
    Reduce {
        parts: ValueId,
    },
    Running {
        tpre: ValueId,
        pref: ValueId,
        sc: Option<ValueId>,
    },
}

/// The main kernel's parameters of each role, in role order: a collect
/// its output; a reduce outside `R` its partials; one in `R` its thread
/// and block prefixes, and a scan its output after them.
fn main_params(p: &Plan) -> Vec<Type> {
    let mut out = Vec::new();
    for (j, r) in p.roles.iter().enumerate() {
        match r {
            Role::Collect { elem, .. } => out.push(Type::arr(elem.clone())),
            Role::Reduce { elem, .. } if !p.running.contains(&j) => {
                out.push(Type::arr(elem.clone()))
            }
            Role::Reduce { elem, .. } => {
                out.extend([Type::arr(elem.clone()), Type::arr(elem.clone())])
            }
            Role::Scan { elem, .. } => out.extend([
                Type::arr(elem.clone()),
                Type::arr(elem.clone()),
                Type::arr(elem.clone()),
            ]),
            Role::Filter { .. } => unreachable!("no filter beside a running read"),
        }
    }
    out
}

/// Builds the main kernel `(n, captures..., per role: main_params)`.
#[allow(clippy::too_many_arguments)]
fn main_kernel(
    ctx: &mut Context,
    f: OpId,
    name: &str,
    l: OpId,
    p: &Plan,
    caps: &[ValueId],
    cap_types: &[Type],
    block: i64,
) -> OpId {
    let mut params = vec![Type::Index];
    params.extend(cap_types.iter().cloned());
    params.extend(main_params(p));
    let scratch_at = params.len();
    params.extend(super::scratch::kernel_params(ctx, &p.allocs));
    let LoopKernel {
        k,
        kb,
        args,
        ops,
        iv,
        handles,
        mut map,
    } = loop_kernel(ctx, f, l, name, &params, caps);
    let mut next = 1 + caps.len();
    let mut bufs = Vec::new();
    for (j, r) in p.roles.iter().enumerate() {
        let mut take = || {
            next += 1;
            args[next - 1]
        };
        bufs.push(match r {
            Role::Collect { .. } => Bufs::Collect { out: take() },
            Role::Reduce { .. } if !p.running.contains(&j) => Bufs::Reduce { parts: take() },
            Role::Reduce { .. } => Bufs::Running {
                tpre: take(),
                pref: take(),
                sc: None,
            },
            _ => Bufs::Running {
                tpre: take(),
                pref: take(),
                sc: Some(take()),
            },
        });
    }
    // The inner generators: `R` first (each with its starting fold), then
    // the other reduces.
    let order: Vec<usize> = p
        .running
        .iter()
        .copied()
        .chain((0..p.roles.len()).filter(|j| matches!(bufs[*j], Bufs::Reduce { .. })))
        .collect();
    let inner: Vec<Generator> = order
        .iter()
        .map(|&j| {
            let (m, t) = fold_of(&p.roles[j]);
            Generator::reduce(m, t)
        })
        .collect();

    let mut b = Builder::at_end(ctx, kb);
    b.loc = b.ctx.loc(l);
    let t = prologue(&mut b);
    let ch = chunk(&mut b, args[0], &t);
    let base = binop(&mut b, "arith.muli", t.bid, t.bdim);
    let slot = binop(&mut b, "arith.addi", base, t.tid);
    let mut starts = Vec::new();
    for &j in &p.running {
        let Bufs::Running { tpre, pref, .. } = bufs[j] else {
            unreachable!("a running generator's buffers")
        };
        let (m, ty) = fold_of(&p.roles[j]);
        let before_block = arr::load(&mut b, pref, t.bid);
        let before_thread = arr::load_in_bounds(&mut b, tpre, slot);
        starts.push(combine(&mut b, m, &ty, before_block, before_thread));
    }
    // A loop takes an init for every reduce or none: the others start at
    // their identity.
    for &j in &order[p.running.len()..] {
        let (m, ty) = fold_of(&p.roles[j]);
        starts.push(identity(&mut b, m, &ty));
    }
    let cnt = binop(&mut b, "arith.subi", ch.hi_t, ch.lo_t);
    let partial = gen::build_loop(&mut b, cnt, &starts, &inner, |b, kv, hs| {
        let i = binop(b, "arith.addi", ch.lo_t, kv);
        map.insert(iv, i);
        for (&j, &h) in order.iter().zip(hs) {
            map.insert(handles[j], h);
        }
        for &op in &ops {
            if b.ctx.has_traits(op, Traits::TERMINATOR) {
                continue;
            }
            let dense = p.roles.iter().zip(&bufs).find_map(|(r, bf)| match (r, bf) {
                (Role::Collect { emit, .. }, Bufs::Collect { out }) if *emit == op => Some(*out),
                _ => None,
            });
            if let Some(out) = dense {
                let x = b.ctx.operand(op, 1);
                let x = map.get(&x).copied().unwrap_or(x);
                arr::store_in_bounds(b, out, i, x);
                continue;
            }
            clone_op_into(b, op, &mut map);
        }
        // A scan's element: its fold after the iteration.
        for (&j, &h) in order.iter().zip(hs) {
            if let Bufs::Running { sc: Some(sc), .. } = bufs[j] {
                let x = gen::running::running(b, h);
                arr::store_in_bounds(b, sc, i, x);
            }
        }
    });
    let n_run = p.running.len();
    let reds: Vec<(ValueId, Monoid, Type)> = order[n_run..]
        .iter()
        .zip(&partial[n_run..])
        .map(|(&j, &v)| {
            let (m, ty) = fold_of(&p.roles[j]);
            (v, m, ty)
        })
        .collect();
    let parts: Vec<ValueId> = order[n_run..]
        .iter()
        .map(|&j| match bufs[j] {
            Bufs::Reduce { parts } => parts,
            _ => unreachable!("a reduce's partials"),
        })
        .collect();
    block_reduce(&mut b, &t, &reds, &parts, block);
    let gtid = t.gtid;
    finish(&mut b);
    let copies = super::scratch::copies(ctx, &p.allocs, &map);
    super::scratch::expand(ctx, &copies, &args[scratch_at..], gtid);
    vec_reads_to_arr(ctx, k);
    k
}

/// Offloads loop `l` (in host function `f`) whose plan has running
/// generators; returns the kernels built.
pub(super) fn offload(
    ctx: &mut Context,
    f: OpId,
    l: OpId,
    p: &Plan,
    opts: &GpuOptions,
    seq: &mut u32,
) -> u64 {
    let n = gen::size(ctx, l);
    let inits = gen::inits(ctx, l);
    let others: Vec<usize> = (0..p.roles.len())
        .filter(|&j| matches!(p.roles[j], Role::Reduce { .. }) && !p.running.contains(&j))
        .collect();
    let k_tot = kernel_name(ctx, f, seq);
    let k_sums = kernel_name(ctx, f, seq);
    let k_main = kernel_name(ctx, f, seq);
    let k_comb = (!others.is_empty()).then(|| kernel_name(ctx, f, seq));
    let (caps, cap_types, shapes) = kernel_captures(ctx, l, &p.captures);
    let kt = totals_kernel(ctx, f, &k_tot, l, p, &caps, &cap_types, opts.block);
    shaped_reads_to_arr(ctx, kt, &shapes);
    let folds: Vec<(Monoid, Type)> = p.running.iter().map(|&j| fold_of(&p.roles[j])).collect();
    let ords: Vec<Ordered> = folds
        .iter()
        .map(|(m, ty)| Ordered {
            m: *m,
            ty: ty.clone(),
            filter: None,
        })
        .collect();
    sums_kernel(ctx, f, &k_sums, &ords, opts.block);
    let km = main_kernel(ctx, f, &k_main, l, p, &caps, &cap_types, opts.block);
    shaped_reads_to_arr(ctx, km, &shapes);
    let other_folds: Vec<(Monoid, Type)> = others.iter().map(|&j| fold_of(&p.roles[j])).collect();
    if let Some(k) = &k_comb {
        combine_kernel(ctx, f, k, &other_folds, opts.block);
    }

    // The host side.
    let mut b = Builder::before(ctx, l);
    // The most elements each nested collect holds in any iteration.
    let sizes = (!p.allocs.is_empty()).then(|| super::scratch::max_sizes(&mut b, l, &p.allocs));
    let HostStart {
        zero,
        one,
        blk,
        grid,
    } = host_start(&mut b, n, opts);
    let mut dev: Vec<ValueId> = Vec::new();
    let mut cap_args = Vec::new();
    captures_to_device(&mut b, &caps, &mut dev, &mut cap_args);
    let threads = binop(&mut b, "arith.muli", grid, blk);
    // Both kernels run the nested collects in the same scratch slices.
    let mut scratch = Vec::new();
    if let Some((_, ms)) = &sizes {
        super::scratch::host_buffers(&mut b, &p.allocs, ms, threads, &mut dev, &mut scratch);
    }
    // Per running generator: thread prefixes, block sums, block prefixes,
    // total.
    let mut run_bufs = Vec::new();
    for (_, ty) in &folds {
        run_bufs.push((
            dalloc(&mut b, &mut dev, threads, ty.clone()),
            dalloc(&mut b, &mut dev, grid, ty.clone()),
            dalloc(&mut b, &mut dev, grid, ty.clone()),
            dalloc(&mut b, &mut dev, one, ty.clone()),
        ));
    }
    let mut a = vec![n];
    a.extend(&cap_args);
    for &(tpre, sums, _, _) in &run_bufs {
        a.extend([tpre, sums]);
    }
    a.extend(&scratch);
    gpu::launch_func(&mut b, &k_tot, grid, blk, &a);
    let mut a = vec![grid];
    for (r, &j) in p.running.iter().enumerate() {
        let (_, sums, pref, tot) = run_bufs[r];
        let init = match inits.get(j).copied().flatten() {
            Some(i) => i,
            None => {
                let (m, ty) = &folds[r];
                let id = gen::lower::exact_identity(*m, ty).expect("checked monoid");
                b.constant(id, ty)
            }
        };
        a.extend([sums, pref, tot, init]);
    }
    gpu::launch_func(&mut b, &k_sums, one, blk, &a);
    // The main kernel.
    let mut a = vec![n];
    a.extend(&cap_args);
    let mut outs = vec![None; p.roles.len()];
    for (j, r) in p.roles.iter().enumerate() {
        let run = p.running.iter().position(|&x| x == j);
        match (r, run) {
            (Role::Collect { elem, .. }, _) => {
                let o = dalloc(&mut b, &mut dev, n, elem.clone());
                outs[j] = Some(o);
                a.push(o);
            }
            (Role::Reduce { elem, .. }, None) => {
                let o = dalloc(&mut b, &mut dev, grid, elem.clone());
                outs[j] = Some(o);
                a.push(o);
            }
            (Role::Reduce { .. }, Some(r)) => {
                let (tpre, _, pref, tot) = run_bufs[r];
                outs[j] = Some(tot);
                a.extend([tpre, pref]);
            }
            (Role::Scan { elem, .. }, Some(r)) => {
                let (tpre, _, pref, _) = run_bufs[r];
                let o = dalloc(&mut b, &mut dev, n, elem.clone());
                outs[j] = Some(o);
                a.extend([tpre, pref, o]);
            }
            _ => unreachable!("roles of a running plan"),
        }
    }
    a.extend(&scratch);
    gpu::launch_func(&mut b, &k_main, grid, blk, &a);
    let mut other_res = Vec::new();
    if let Some(k) = &k_comb {
        let mut a = vec![grid];
        a.extend(others.iter().map(|&j| outs[j].expect("partials")));
        for (_, ty) in &other_folds {
            let r = dalloc(&mut b, &mut dev, one, ty.clone());
            other_res.push(r);
        }
        a.extend(&other_res);
        gpu::launch_func(&mut b, k, one, blk, &a);
    }
    // Copy the results back.
    let mut results = Vec::new();
    let scalar_back = |b: &mut Builder, d: ValueId, ty: &Type| {
        let h = arr::alloc(b, one, ty.clone());
        gpu::memcpy(b, h, d);
        let v = arr::load(b, h, zero);
        arr::free(b, h);
        v
    };
    for (j, r) in p.roles.iter().enumerate() {
        let d = outs[j].expect("an output");
        match r {
            Role::Collect { elem, .. } | Role::Scan { elem, .. } => {
                let h = arr::alloc(&mut b, n, elem.clone());
                gpu::memcpy(&mut b, h, d);
                results.push(arr::to_vec(&mut b, h));
            }
            Role::Reduce { m, elem } => match others.iter().position(|&x| x == j) {
                // Its total includes the init already.
                None => results.push(scalar_back(&mut b, d, elem)),
                Some(o) => {
                    let v = scalar_back(&mut b, other_res[o], elem);
                    let v = match inits.get(j).copied().flatten() {
                        Some(i) => binop(&mut b, m.combine_op(elem).expect("checked monoid"), i, v),
                        None => v,
                    };
                    results.push(v);
                }
            },
            Role::Filter { .. } => unreachable!("no filter beside a running read"),
        }
    }
    super::arrays::copy_back_stored(&mut b, l, &caps, &cap_args);
    for d in dev {
        gpu::dealloc(&mut b, d);
    }
    ctx.replace_op(l, &results);
    let bounds = sizes.map(|(mx, _)| mx);
    3 + k_comb.is_some() as u64 + super::offload_bounds(ctx, f, bounds, opts, seq)
}
