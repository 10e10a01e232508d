//! FlatMaps in kernels (issue 41, item 3): a `gen.loop` whose generators
//! are collects and reduces of scalars, fed anywhere in its body, nested
//! loops included (a reduce's running value unread), so that each iteration emits a number of elements only the
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
//! A reduce's emits fold, in the count kernel, into a slot per iteration
//! (from the monoid's identity); a reduce loop over the slots, offloaded
//! as any reduce, combines them from the loop's init.
//!
//! The body is pure apart from its emits ([`super::body_ok`]), so the second
//! run emits exactly what the first counted; the stores still keep their
//! bounds checks. The elements come out in the order of the sequential
//! loop: by iteration, then in the order each iteration emits them.

use ir::{Builder, Context, OpId, Type, ValueId};

use dialects::gen::{self, GenKind, Generator, Monoid};
use dialects::{arr, gpu, scf};

use super::kernel::{
    copy_per_index, finish, loop_kernel, prologue, shaped_reads_to_arr, vec_reads_to_arr,
    LoopKernel,
};
use super::{
    binop, captures_to_device, cmpi, dalloc, host_start, idx, kernel_captures, kernel_name, select,
    GpuOptions, HostStart, Shapes,
};

/// What a generator of a flatMap loop is in its kernels.
#[derive(Clone, Debug)]
enum Part {
    /// A collect: counted, scanned, written.
    Collect(Type),
    /// A reduce: each iteration folds its emits into a slot of its own in
    /// the count kernel; a reduce loop over the slots (offloaded as any
    /// reduce) gives the result.
    Reduce(Monoid, Type),
}

/// A flatMap loop that kernels run.
pub(super) struct FlatPlan {
    /// The loop's generators, in order.
    parts: Vec<Part>,
    /// Values from outside the loop that its body reads.
    captures: Vec<ValueId>,
}

impl FlatPlan {
    fn collects(&self) -> Vec<Type> {
        self.parts
            .iter()
            .filter_map(|p| match p {
                Part::Collect(t) => Some(t.clone()),
                Part::Reduce(..) => None,
            })
            .collect()
    }
    fn reduces(&self) -> Vec<(Monoid, Type)> {
        self.parts
            .iter()
            .filter_map(|p| match p {
                Part::Reduce(m, t) => Some((*m, t.clone())),
                Part::Collect(_) => None,
            })
            .collect()
    }
}

/// How kernels run flatMap loop `l`, or why they do not.
pub(super) fn plan(ctx: &Context, l: OpId) -> Result<FlatPlan, String> {
    let gens =
        gen::try_generators(ctx, l).map_err(|_| "its generators are malformed".to_string())?;
    let mut parts = Vec::new();
    for g in &gens {
        parts.push(match g.kind {
            GenKind::Collect if super::scalar(&g.elem) => Part::Collect(g.elem.clone()),
            GenKind::Reduce(m)
                if super::scalar(&g.elem)
                    && Monoid::supports(&g.elem)
                    && gen::lower::exact_identity(m, &g.elem).is_some() =>
            {
                Part::Reduce(m, g.elem.clone())
            }
            _ => return Err("not a flatMap of scalars".into()),
        });
    }
    if parts.is_empty() || gen::running::reads_own_generators(ctx, l) {
        return Err("not a flatMap of scalars".into());
    }
    let mut captures = Vec::new();
    super::body_ok(ctx, l, l, &mut captures, &[], true)?;
    Ok(FlatPlan { parts, captures })
}

/// Builds the count kernel (`write` false: parameters `n, captures...,
/// cnt..., part...`, a count per collect and a slot array per reduce) or
/// the write kernel (`n, captures..., incl..., cur..., out...`, per
/// collect) of flatMap loop `l`.
#[allow(clippy::too_many_arguments)]
fn flat_kernel(
    ctx: &mut Context,
    f: OpId,
    l: OpId,
    name: &str,
    caps: &[ValueId],
    cap_types: &[Type],
    shapes: &Shapes,
    p: &FlatPlan,
    write: bool,
) {
    let elems = p.collects();
    let reduces = p.reduces();
    let g = elems.len();
    let mut params = vec![Type::Index];
    params.extend(cap_types.iter().cloned());
    let slots = if write { 2 * g } else { g };
    params.extend((0..slots).map(|_| Type::arr(Type::Index)));
    if write {
        params.extend(elems.iter().map(|t| Type::arr(t.clone())));
    } else {
        params.extend(reduces.iter().map(|(_, t)| Type::arr(t.clone())));
    }
    let LoopKernel {
        k,
        kb,
        args,
        ops,
        iv,
        handles,
        mut map,
    } = loop_kernel(ctx, f, l, name, &params, caps);
    let base = 1 + caps.len();
    let (incl, cur, outs, parts) = if write {
        (
            args[base..base + g].to_vec(),
            args[base + g..base + 2 * g].to_vec(),
            args[base + 2 * g..].to_vec(),
            Vec::new(),
        )
    } else {
        (
            Vec::new(),
            args[base..base + g].to_vec(),
            Vec::new(),
            args[base + g..].to_vec(),
        )
    };
    let mut b = Builder::at_end(ctx, kb);
    b.loc = b.ctx.loc(l);
    let t = prologue(&mut b);
    let (zero, one) = (idx(&mut b, 0), idx(&mut b, 1));
    let i = copy_per_index(&mut b, &t, args[0], &ops, &[iv], &mut map, |b, i| {
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
        // Each reduce's slot starts from the identity.
        for (&(m, ref ty), &slot) in reduces.iter().zip(&parts) {
            let id = gen::lower::exact_identity(m, ty).expect("checked monoid");
            let id = b.constant(id, ty);
            arr::store_in_bounds(b, slot, i, id);
        }
    });
    finish(&mut b);
    // The copied emits still name the loop's handles: a collect's becomes a
    // step of its cursor (and, when writing, a store at the cursor); a
    // reduce's folds into the iteration's slot (count kernel) or goes.
    let (mut nc, mut nr) = (0, 0);
    let which: Vec<(bool, usize)> = p
        .parts
        .iter()
        .map(|part| match part {
            Part::Collect(_) => {
                nc += 1;
                (true, nc - 1)
            }
            Part::Reduce(..) => {
                nr += 1;
                (false, nr - 1)
            }
        })
        .collect();
    let emits: Vec<(OpId, usize)> = ctx
        .walk_nested(k)
        .into_iter()
        .filter(|&op| ctx.is(op, gen::EMIT))
        .filter_map(|op| {
            let h = ctx.operand(op, 0);
            handles.iter().position(|&x| x == h).map(|j| (op, j))
        })
        .collect();
    for (e, pos) in emits {
        let x = ctx.operand(e, 1);
        let mut b = Builder::before(ctx, e);
        match which[pos] {
            (true, j) => {
                let p = arr::load_in_bounds(&mut b, cur[j], i);
                if write {
                    arr::store(&mut b, outs[j], p, x);
                }
                let c1 = idx(&mut b, 1);
                let next = binop(&mut b, "arith.addi", p, c1);
                arr::store_in_bounds(&mut b, cur[j], i, next);
            }
            (false, r) if !write => {
                let (m, ty) = &reduces[r];
                let old = arr::load_in_bounds(&mut b, parts[r], i);
                let op = m.combine_op(ty).expect("checked monoid");
                let new = binop(&mut b, op, old, x);
                arr::store_in_bounds(&mut b, parts[r], i, new);
            }
            (false, _) => {}
        }
        ctx.erase_op(e);
    }
    vec_reads_to_arr(ctx, k);
    shaped_reads_to_arr(ctx, k, shapes);
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
    let inits = gen::inits(ctx, l);
    let elems = p.collects();
    let reduces = p.reduces();
    let (caps, cap_types, shapes) = kernel_captures(ctx, l, &p.captures);
    let k_count = kernel_name(ctx, f, seq);
    flat_kernel(ctx, f, l, &k_count, &caps, &cap_types, &shapes, p, false);
    let k_write = (!elems.is_empty()).then(|| kernel_name(ctx, f, seq));
    if let Some(k) = &k_write {
        flat_kernel(ctx, f, l, k, &caps, &cap_types, &shapes, p, true);
    }

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
    let cur: Vec<ValueId> = elems
        .iter()
        .map(|_| dalloc(&mut b, &mut dev, n, Type::Index))
        .collect();
    let slots: Vec<ValueId> = reduces
        .iter()
        .map(|(_, t)| dalloc(&mut b, &mut dev, n, t.clone()))
        .collect();
    let mut count_args = args.clone();
    count_args.extend(&cur);
    count_args.extend(&slots);
    gpu::launch_func(&mut b, &k_count, grid, blk, &count_args);
    let to_host = |b: &mut Builder, d: ValueId, len: ValueId, t: &Type| {
        let h = arr::alloc(b, len, t.clone());
        gpu::memcpy(b, h, d);
        arr::to_vec(b, h)
    };
    // The reduces: a loop over the per-iteration slots, from the loop's
    // inits (offloaded below, as any reduce).
    let mut loops = Vec::new();
    let mut reduced = Vec::new();
    if !reduces.is_empty() {
        let vals: Vec<ValueId> = slots
            .iter()
            .zip(&reduces)
            .map(|(&d, (_, t))| to_host(&mut b, d, n, t))
            .collect();
        let gens: Vec<Generator> = reduces
            .iter()
            .map(|(m, t)| Generator::reduce(*m, t.clone()))
            .collect();
        let red_inits: Vec<ValueId> = p
            .parts
            .iter()
            .zip(&inits)
            .filter(|(part, _)| matches!(part, Part::Reduce(..)))
            .filter_map(|(_, i)| *i)
            .collect();
        let red_inits = if red_inits.len() == reduces.len() {
            red_inits
        } else {
            Vec::new()
        };
        reduced = gen::build_loop(&mut b, n, &red_inits, &gens, |b, i, hs| {
            for (&v, &h) in vals.iter().zip(hs) {
                let x = dialects::vec::get_in_bounds(b, v, i);
                gen::emit(b, h, x);
            }
        })
        .to_vec();
        loops.extend(b.ctx.def_op(reduced[0]));
    }
    let mut collected = Vec::new();
    if let Some(k_write) = &k_write {
        // The counts, scanned by the scan kernels (the loop is offloaded below).
        let counts: Vec<ValueId> = cur
            .iter()
            .map(|&d| to_host(&mut b, d, n, &Type::Index))
            .collect();
        let scans: Vec<Generator> = elems
            .iter()
            .map(|_| Generator::scan(Monoid::Add, Type::Index))
            .collect();
        let incl = gen::build_loop(&mut b, n, &[], &scans, |b, i, hs| {
            for (&c, &h) in counts.iter().zip(hs) {
                let x = dialects::vec::get_in_bounds(b, c, i);
                gen::emit(b, h, x);
            }
        });
        loops.extend(b.ctx.def_op(incl[0]));
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
        for _ in &elems {
            write_args.push(dalloc(&mut b, &mut dev, n, Type::Index));
        }
        let outs: Vec<ValueId> = elems
            .iter()
            .zip(&totals)
            .map(|(t, &m)| dalloc(&mut b, &mut dev, m, t.clone()))
            .collect();
        write_args.extend(&outs);
        gpu::launch_func(&mut b, k_write, grid, blk, &write_args);
        collected = outs
            .iter()
            .zip(&totals)
            .zip(&elems)
            .map(|((&d, &m), t)| to_host(&mut b, d, m, t))
            .collect();
    }
    for d in dev {
        gpu::dealloc(&mut b, d);
    }
    // The results in generator order.
    let (mut ci, mut ri) = (collected.into_iter(), reduced.into_iter());
    let results: Vec<ValueId> = p
        .parts
        .iter()
        .map(|part| match part {
            Part::Collect(_) => ci.next().expect("a collect's result"),
            Part::Reduce(..) => ri.next().expect("a reduce's result"),
        })
        .collect();
    ctx.replace_op(l, &results);
    let mut kernels = 1 + k_write.is_some() as u64;
    for s in loops {
        if let Ok(sp) = super::plan(ctx, s) {
            kernels += super::offload(ctx, f, s, &sp, opts, seq);
        }
    }
    kernels
}
