//! FlatMaps in kernels (issue 41, item 3): a `gen.loop` whose generators
//! are all collects of scalars, fed anywhere in its body, nested loops
//! included, so that each iteration emits a number of elements only the
//! iteration itself knows (`vec.flatten`'s loop, a filter with an inner
//! loop, more than [`super::MAX_WIDTH`] emits).
//!
//! Two passes over the iterations, as Futhark's and Thrust's stream
//! compaction do when the output size is unknown:
//! 1. **count** kernel: iteration `i` runs the body with each emit to
//!    collect `g` replaced by `cnt_g[i] += 1` (a slot of its own, so there
//!    is no race);
//! 2. the inclusive scan of each `cnt_g` (the scan kernels of
//!    [`super::scan`], through an ordinary `gen.loop` of scans that this
//!    module builds and offloads): iteration `i` starts writing at
//!    `incl_g[i - 1]` (0 for the first), and `incl_g[n - 1]` elements are
//!    emitted in all;
//! 3. **write** kernel: iteration `i` runs the body again, each emit
//!    storing its value at the iteration's cursor (`cur_g[i]`) and
//!    advancing it.
//!
//! The body is pure apart from its emits ([`super::body_ok`]), so the second
//! run emits exactly what the first counted; the stores still keep their
//! bounds checks. The elements come out in the order of the sequential
//! loop: by iteration, then in the order each iteration emits them.

use ir::clone::{clone_op_into, ValueMap};
use ir::spec::Traits;
use ir::{Builder, Context, OpId, Type, ValueId};

use dialects::gen::{self, GenKind, Generator, Monoid};
use dialects::{arr, gpu, scf};

use super::kernel::{
    finish, global_index, mat_reads_to_arr, new_kernel, per_thread_count, prologue,
    vec_reads_to_arr,
};
use super::{
    binop, captures_to_device, cmpi, dalloc, host_start, idx, kernel_captures, kernel_name, select,
    GpuOptions, HostStart,
};

/// A flatMap loop that kernels run.
pub(super) struct FlatPlan {
    /// The element type of each collect.
    elems: Vec<Type>,
    /// Values from outside the loop that its body reads.
    captures: Vec<ValueId>,
}

/// How kernels run flatMap loop `l`, or why they do not.
pub(super) fn plan(ctx: &Context, l: OpId) -> Result<FlatPlan, String> {
    let gens =
        gen::try_generators(ctx, l).map_err(|_| "its generators are malformed".to_string())?;
    let collects = gens
        .iter()
        .all(|g| matches!(g.kind, GenKind::Collect) && super::scalar(&g.elem));
    if gens.is_empty() || !collects {
        return Err("not a flatMap of scalars".into());
    }
    let mut captures = Vec::new();
    super::body_ok(ctx, l, l, &mut captures, None, true)?;
    Ok(FlatPlan {
        elems: gens.into_iter().map(|g| g.elem).collect(),
        captures,
    })
}

/// Builds the count kernel (`write` false: parameters `n, captures...,
/// cnt...`) or the write kernel (`n, captures..., incl..., cur...,
/// out...`) of flatMap loop `l`.
#[allow(clippy::too_many_arguments)]
fn flat_kernel(
    ctx: &mut Context,
    f: OpId,
    l: OpId,
    name: &str,
    caps: &[ValueId],
    cap_types: &[Type],
    mats: &[usize],
    elems: &[Type],
    write: bool,
) {
    let g = elems.len();
    let mut params = vec![Type::Index];
    params.extend(cap_types.iter().cloned());
    let slots = if write { 2 * g } else { g };
    params.extend((0..slots).map(|_| Type::arr(Type::Index)));
    if write {
        params.extend(elems.iter().map(|t| Type::arr(t.clone())));
    }
    let (k, kb) = new_kernel(ctx, f, l, name, &params);
    let args = ctx.block_args(kb).to_vec();
    let base = 1 + caps.len();
    let (incl, cur, outs) = if write {
        (
            args[base..base + g].to_vec(),
            args[base + g..base + 2 * g].to_vec(),
            args[base + 2 * g..].to_vec(),
        )
    } else {
        (Vec::new(), args[base..base + g].to_vec(), Vec::new())
    };
    let mut map = ValueMap::new();
    for (c, &v) in caps.iter().enumerate() {
        map.insert(v, args[1 + c]);
    }
    let ops = ctx.block_ops(gen::body(ctx, l));
    let iv = gen::induction_var(ctx, l);
    let handles = gen::handles(ctx, l).to_vec();
    let mut b = Builder::at_end(ctx, kb);
    b.loc = b.ctx.loc(l);
    let t = prologue(&mut b);
    let cnt = per_thread_count(&mut b, args[0], &t);
    let (zero, one) = (idx(&mut b, 0), idx(&mut b, 1));
    let mut at = None;
    scf::build_for(&mut b, zero, cnt, one, &[], |b, kv, _| {
        let i = global_index(b, &t, kv);
        map.insert(iv, i);
        at = Some(i);
        // Each cursor starts where the iterations before end.
        for j in 0..g {
            let start = if write {
                let first = cmpi(b, "eq", i, zero);
                let prev = binop(b, "arith.maxi", i, one);
                let prev = binop(b, "arith.subi", prev, one);
                let end = arr::load_in_bounds(b, incl[j], prev);
                select(b, first, zero, end)
            } else {
                zero
            };
            arr::store_in_bounds(b, cur[j], i, start);
        }
        let smart = std::mem::replace(&mut b.smart, false);
        for &op in &ops {
            if !b.ctx.has_traits(op, Traits::TERMINATOR) {
                clone_op_into(b, op, &mut map);
            }
        }
        b.smart = smart;
        vec![]
    });
    finish(&mut b);
    let i = at.expect("loop body built");
    // The copied emits still name the loop's handles: each becomes a step
    // of its cursor (and, when writing, a store at the cursor).
    let emits: Vec<(OpId, usize)> = ctx
        .walk_nested(k)
        .into_iter()
        .filter(|&op| ctx.is(op, gen::EMIT))
        .filter_map(|op| {
            let h = ctx.operand(op, 0);
            handles.iter().position(|&x| x == h).map(|j| (op, j))
        })
        .collect();
    for (e, j) in emits {
        let x = ctx.operand(e, 1);
        let mut b = Builder::before(ctx, e);
        let p = arr::load_in_bounds(&mut b, cur[j], i);
        if write {
            arr::store(&mut b, outs[j], p, x);
        }
        let c1 = idx(&mut b, 1);
        let next = binop(&mut b, "arith.addi", p, c1);
        arr::store_in_bounds(&mut b, cur[j], i, next);
        ctx.erase_op(e);
    }
    vec_reads_to_arr(ctx, k);
    mat_reads_to_arr(ctx, k, mats);
}

/// Replaces flatMap loop `l` (in host function `f`) by its kernels and
/// launches; returns the kernels built.
pub(super) fn offload(
    ctx: &mut Context,
    f: OpId,
    l: OpId,
    p: &FlatPlan,
    opts: &GpuOptions,
    seq: &mut u32,
) -> u64 {
    let n = gen::size(ctx, l);
    let (caps, cap_types, mats) = kernel_captures(ctx, l, &p.captures);
    let (k_count, k_write) = (kernel_name(ctx, f, seq), kernel_name(ctx, f, seq));
    flat_kernel(
        ctx, f, l, &k_count, &caps, &cap_types, &mats, &p.elems, false,
    );
    flat_kernel(
        ctx, f, l, &k_write, &caps, &cap_types, &mats, &p.elems, true,
    );

    let mut b = Builder::before(ctx, l);
    let HostStart {
        zero,
        one,
        blk,
        grid,
    } = host_start(&mut b, n, opts);
    let mut dev = Vec::new();
    let mut args = vec![n];
    captures_to_device(&mut b, &caps, &mut dev, &mut args);
    let cur: Vec<ValueId> = p
        .elems
        .iter()
        .map(|_| dalloc(&mut b, &mut dev, n, Type::Index))
        .collect();
    let mut count_args = args.clone();
    count_args.extend(&cur);
    gpu::launch_func(&mut b, &k_count, grid, blk, &count_args);
    // The counts, scanned by the scan kernels (the loop is offloaded below).
    let counts: Vec<ValueId> = cur
        .iter()
        .map(|&d| {
            let h = arr::alloc(&mut b, n, Type::Index);
            gpu::memcpy(&mut b, h, d);
            arr::to_vec(&mut b, h)
        })
        .collect();
    let scans: Vec<Generator> = p
        .elems
        .iter()
        .map(|_| Generator::scan(Monoid::Add, Type::Index))
        .collect();
    let incl = gen::build_loop(&mut b, n, &[], &scans, |b, i, hs| {
        for (&c, &h) in counts.iter().zip(hs) {
            let x = b.op1(
                "vec.get",
                &[c, i],
                Type::Index,
                dialects::util::in_bounds_attr(),
            );
            gen::emit(b, h, x);
        }
    });
    let scan_loop = b.ctx.def_op(incl[0]);
    let empty = cmpi(&mut b, "eq", n, zero);
    let last = binop(&mut b, "arith.maxi", n, one);
    let last = binop(&mut b, "arith.subi", last, one);
    let mut write_args = args;
    let mut totals = Vec::new();
    for &v in incl.iter() {
        let total = scf::build_if(
            &mut b,
            empty,
            &[Type::Index],
            |_| vec![zero],
            |b| vec![b.op1("vec.get", &[v, last], Type::Index, vec![])],
        )[0];
        // Sized by `vec.len`, so that the copy is forwarded
        // ([`super::forward_device_copies`]): the scan's device result
        // goes straight to the write kernel.
        let len = b.op1("vec.len", &[v], Type::Index, vec![]);
        let d = dalloc(&mut b, &mut dev, len, Type::Index);
        gpu::memcpy(&mut b, d, v);
        write_args.push(d);
        totals.push(total);
    }
    // Fresh cursors: the counts only ever being read lets their copy to
    // the scan kernels be forwarded too.
    for _ in &p.elems {
        write_args.push(dalloc(&mut b, &mut dev, n, Type::Index));
    }
    let outs: Vec<ValueId> = p
        .elems
        .iter()
        .zip(&totals)
        .map(|(t, &m)| dalloc(&mut b, &mut dev, m, t.clone()))
        .collect();
    write_args.extend(&outs);
    gpu::launch_func(&mut b, &k_write, grid, blk, &write_args);
    let results: Vec<ValueId> = outs
        .iter()
        .zip(&totals)
        .zip(&p.elems)
        .map(|((&d, &m), t)| {
            let h = arr::alloc(&mut b, m, t.clone());
            gpu::memcpy(&mut b, h, d);
            arr::to_vec(&mut b, h)
        })
        .collect();
    for d in dev {
        gpu::dealloc(&mut b, d);
    }
    ctx.replace_op(l, &results);
    let mut kernels = 2;
    if let Some(s) = scan_loop {
        if let Ok(sp) = super::plan(ctx, s) {
            kernels += super::offload(ctx, f, s, &sp, opts, seq);
        }
    }
    kernels
}
