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
//! **Rows.** A collect of vectors, each the result of a collect loop at the
//! top of the body that only this collect's one unconditional emit reads
//! (a map of maps: `mat.to_rows`, `vec.transpose`), is a flatMap whose
//! iterations' elements are rows: in both kernels the inner loop's emits
//! are the outer collect's and the inner loop makes no vector; the
//! inclusive scan of the counts is the rows' ends, and `gpu.unpack_rows`
//! reads the nested vector back from the written entries and those ends.
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
    binop, captures_to_device, cmpi, dalloc, host_start, idx, kernel_captures, kernel_name,
    GpuOptions, HostStart, Shapes,
};

/// What a generator of a flatMap loop is in its kernels.
#[derive(Clone, Debug)]
enum Part {
    /// A collect: counted, scanned, written.
    Collect(Type),
    /// A collect of vectors of `T`, each made by the inner collect loop
    /// (of the body's top level) of the original loop: counted, scanned
    /// and written as a collect of `T`, and read back as rows.
    Rows(Type, OpId),
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
    /// Collect loops nested in the body that run in scratch slices
    /// ([`super::scratch`]), in both kernels.
    allocs: Vec<OpId>,
}

impl FlatPlan {
    /// How many nested collects run in scratch slices.
    pub(super) fn scratch_count(&self) -> u64 {
        self.allocs.len() as u64
    }
    fn collects(&self) -> Vec<Type> {
        self.parts
            .iter()
            .filter_map(|p| match p {
                Part::Collect(t) | Part::Rows(t, _) => Some(t.clone()),
                Part::Reduce(..) => None,
            })
            .collect()
    }
    fn reduces(&self) -> Vec<(Monoid, Type)> {
        self.parts
            .iter()
            .filter_map(|p| match p {
                Part::Reduce(m, t) => Some((*m, t.clone())),
                Part::Collect(_) | Part::Rows(..) => None,
            })
            .collect()
    }
}

/// How kernels run flatMap loop `l`, or why they do not.
pub(super) fn plan(ctx: &Context, l: OpId) -> Result<FlatPlan, String> {
    let gens =
        gen::try_generators(ctx, l).map_err(|_| "its generators are malformed".to_string())?;
    let mut parts = Vec::new();
    let handles = gen::handles(ctx, l);
    for (g, &h) in gens.iter().zip(handles) {
        parts.push(match g.kind {
            GenKind::Collect if super::scalar(&g.elem) => Part::Collect(g.elem.clone()),
            GenKind::Collect => match row_loop(ctx, l, h) {
                Some((t, inner)) => Part::Rows(t, inner),
                None => return Err("not a flatMap of scalars".into()),
            },
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
    let rows: Vec<OpId> = parts
        .iter()
        .filter_map(|p| match p {
            Part::Rows(_, inner) => Some(*inner),
            _ => None,
        })
        .collect();
    let mut captures = Vec::new();
    let allocs: Vec<OpId> = super::scratch::candidates(ctx, l)
        .into_iter()
        .filter(|c| !rows.contains(c))
        .collect();
    super::body_ok(ctx, l, l, &mut captures, &[], Some(&rows), &allocs)?;
    Ok(FlatPlan {
        parts,
        captures,
        allocs,
    })
}

/// The element type `T` and the inner loop of a collect of vectors `h` of
/// loop `l` whose rows kernels can write ([`Part::Rows`]): `h` has one
/// emit, at the top of the body, of the collect result of a `gen.loop` at
/// the top of the body whose generators are one collect of scalars `T` and
/// reduces a kernel thread runs (as in [`super::roles`]; fusion puts a
/// row's sum beside it), and that emit is the collect result's only use.
pub(super) fn row_loop(ctx: &Context, l: OpId, h: ValueId) -> Option<(Type, OpId)> {
    let body = gen::body(ctx, l);
    let e = gen::exact_emit(ctx, body, h)?;
    let v = *ctx.operands(e).get(1)?;
    let inner = ctx.def_op_named(v, gen::LOOP)?;
    if ctx.op(inner).parent != Some(body) || ctx.uses(v).len() != 1 {
        return None;
    }
    let gens = gen::try_generators(ctx, inner).ok()?;
    let inner_body = gen::body(ctx, inner);
    let mut elem = None;
    for (g, &gh) in gens.iter().zip(gen::handles(ctx, inner)) {
        match g.kind {
            GenKind::Collect if elem.is_none() && super::scalar(&g.elem) => {
                elem = Some(g.elem.clone());
            }
            GenKind::Reduce(m)
                if super::scalar(&g.elem)
                    && Monoid::supports(&g.elem)
                    && gen::emits_to(ctx, gh)
                        .iter()
                        .all(|&x| super::reduce_emit_ok(ctx, inner_body, x, m, &g.elem)) => {}
            _ => return None,
        }
    }
    let offs = gen::result_offsets(&gens);
    let at = gens.iter().position(|g| g.kind == GenKind::Collect)?;
    let elem = elem?;
    (ctx.result(inner, offs[at]) == v).then_some((elem, inner))
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
    let base = 1 + caps.len();
    let (incl, cur, outs, parts) = if write {
        (
            args[base..base + g].to_vec(),
            args[base + g..base + 2 * g].to_vec(),
            args[base + 2 * g..scratch_at].to_vec(),
            Vec::new(),
        )
    } else {
        (
            Vec::new(),
            args[base..base + g].to_vec(),
            Vec::new(),
            args[base + g..scratch_at].to_vec(),
        )
    };
    let mut b = Builder::at_end(ctx, kb);
    b.loc = b.ctx.loc(l);
    let t = prologue(&mut b);
    let zero = idx(&mut b, 0);
    let i = copy_per_index(&mut b, &t, args[0], &ops, &[iv], &mut map, |b, i| {
        // Each cursor starts where the iterations before end.
        for j in 0..g {
            let start = if write {
                super::kernel::row_start(b, incl[j], i)
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
    let gtid = t.gtid;
    let copies = super::scratch::copies(ctx, &p.allocs, &map);
    super::scratch::expand(ctx, &copies, &args[scratch_at..], gtid);
    // Each row's inner loop: its emits become the outer collect's, and it
    // makes no vector (the outer emit of it goes).
    for (pos, part) in p.parts.iter().enumerate() {
        if let Part::Rows(..) = part {
            rows_to_flat(ctx, k, handles[pos]);
        }
    }
    // The copied emits still name the loop's handles: a collect's becomes a
    // step of its cursor (and, when writing, a store at the cursor); a
    // reduce's folds into the iteration's slot (count kernel) or goes.
    let (mut nc, mut nr) = (0, 0);
    let which: Vec<(bool, usize)> = p
        .parts
        .iter()
        .map(|part| match part {
            Part::Collect(_) | Part::Rows(..) => {
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

/// A collect of vectors whose one emit (at the top of `l`'s body) emits a
/// vector made elsewhere (a row of a matrix or of a nested vector, or a
/// whole vector): the emit undone by [`undo_row_copies`].
pub(super) struct RowCopy {
    emit: OpId,
    old: ValueId,
    len: OpId,
    copy: OpId,
}

/// Makes each row that a collect of vectors of loop `l` emits at the top
/// of its body, and that no collect loop of the body makes, a collect loop
/// copying it (`gen.loop(len)` of `vec.get`s), so that [`row_loop`] sees
/// rows kernels can write. The copy is the row itself; if the loop does
/// not become kernels after all, [`undo_row_copies`] takes it back.
pub(super) fn row_copies(ctx: &mut Context, l: OpId) -> Vec<RowCopy> {
    let Ok(gens) = gen::try_generators(ctx, l) else {
        return Vec::new();
    };
    let body = gen::body(ctx, l);
    let handles = gen::handles(ctx, l).to_vec();
    let mut out = Vec::new();
    for (g, h) in gens.iter().zip(handles) {
        let Some(t) = super::nested_elem(&Type::vec(g.elem.clone())) else {
            continue;
        };
        if g.kind != GenKind::Collect {
            continue;
        }
        let Some(e) = gen::exact_emit(ctx, body, h) else {
            continue;
        };
        let old = ctx.operand(e, 1);
        if ctx.def_op_named(old, gen::LOOP).is_some() {
            continue;
        }
        // Built as they are (no folding, no reuse of equal ops): the undo
        // erases exactly these ops.
        let mut b = Builder::before(ctx, e);
        b.smart = false;
        let n = b.op1("vec.len", &[old], Type::Index, vec![]);
        let len = b.ctx.def_op(n).expect("just built");
        let copy = gen::build_loop(&mut b, n, &[], &[Generator::collect(t)], |b, j, hs| {
            let x = dialects::vec::get_in_bounds(b, old, j);
            gen::emit(b, hs[0], x);
        })[0];
        ctx.set_operand(e, 1, copy);
        let copy = ctx.def_op(copy).expect("a loop result");
        out.push(RowCopy {
            emit: e,
            old,
            len,
            copy,
        });
    }
    out
}

/// Takes back [`row_copies`].
pub(super) fn undo_row_copies(ctx: &mut Context, copies: Vec<RowCopy>) {
    for c in copies.into_iter().rev() {
        ctx.set_operand(c.emit, 1, c.old);
        ctx.erase_op(c.copy);
        ctx.erase_op(c.len);
    }
}

/// In kernel `k`, the copy of a row's inner loop, whose collect result the
/// one emit to outer collect handle `h` emits: the emit goes, the inner
/// loop's collect emits name `h`, and the loop is rebuilt without its
/// collect (its reduces stay).
fn rows_to_flat(ctx: &mut Context, k: OpId, h: ValueId) {
    let Some(e) = ctx
        .walk_nested(k)
        .into_iter()
        .find(|&op| ctx.is(op, gen::EMIT) && ctx.operand(op, 0) == h)
    else {
        return;
    };
    let v = ctx.operand(e, 1);
    ctx.erase_op(e);
    let Some(inner) = ctx.def_op_named(v, gen::LOOP) else {
        return;
    };
    let Some(view) = crate::fuse::loops::view(ctx, inner) else {
        return;
    };
    let (rows, rest): (Vec<_>, Vec<_>) = view.gens.into_iter().partition(|g| g.kind == "collect");
    for g in &rows {
        for e in gen::emits_to(ctx, g.handle) {
            ctx.set_operand(e, 0, h);
        }
    }
    let ops = crate::fuse::loops::body_ops(ctx, view.body);
    crate::fuse::loops::build_loop(ctx, inner, view.size, &rest, &[view.index], &ops);
    ctx.erase_op(inner);
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
    // The most elements each nested collect holds in any iteration.
    let sizes = (!p.allocs.is_empty()).then(|| super::scratch::max_sizes(&mut b, l, &p.allocs));
    let HostStart {
        zero,
        one,
        blk,
        grid,
    } = host_start(&mut b, n, opts);
    let mut dev = Vec::new();
    let mut args = vec![n];
    captures_to_device(&mut b, &caps, &mut dev, &mut args);
    // Both kernels run the nested collects in the same scratch slices.
    let mut scratch = Vec::new();
    if let Some((_, ms)) = &sizes {
        let threads = binop(&mut b, "arith.muli", grid, blk);
        super::scratch::host_buffers(&mut b, &p.allocs, ms, threads, &mut dev, &mut scratch);
    }
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
    count_args.extend(&scratch);
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
        let mut ends = Vec::new();
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
            ends.push(d);
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
        write_args.extend(&scratch);
        gpu::launch_func(&mut b, k_write, grid, blk, &write_args);
        let rows: Vec<bool> = p
            .parts
            .iter()
            .filter_map(|part| match part {
                Part::Collect(_) => Some(false),
                Part::Rows(..) => Some(true),
                Part::Reduce(..) => None,
            })
            .collect();
        collected = outs
            .iter()
            .zip(&totals)
            .zip(&elems)
            .zip(rows.iter().zip(&ends))
            .map(|(((&d, &m), t), (&row, &e))| {
                if row {
                    gpu::unpack_rows(&mut b, d, e)
                } else {
                    to_host(&mut b, d, m, t)
                }
            })
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
            Part::Collect(_) | Part::Rows(..) => ci.next().expect("a collect's result"),
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
    kernels + super::offload_bounds(ctx, f, sizes.map(|(mx, _)| mx), opts, seq)
}
