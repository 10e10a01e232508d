//! Device residency across host loop iterations (issue 41), and the two
//! rewrites beside it that keep data on the device ([`forward_device_copies`],
//! [`hoist_invariant_copies`]). A vector that an
//! `scf.for` carries from one iteration to the next, and that only kernels
//! read, stays in device memory. Without this, every iteration of a time-step
//! loop (a stencil, n-body) copies its state to the device, runs its kernels,
//! and copies the new state back.
//!
//! The shape [`super::offload`] leaves in the loop body, for an iteration
//! argument `%t: vec<T>` yielded as `%t2`:
//! ```text
//! %n  = vec.len %t                        // any number of these
//! %d  = gpu.alloc %m; gpu.memcpy %d, %t   // one or more copies in ...
//! ... launches reading %d ...; gpu.dealloc %d
//! %o  = gpu.alloc %k; launches writing %o
//! %h  = arr.alloc %k; gpu.memcpy %h, %o; %t2 = arr.to_vec %h   // ... one copy out
//! gpu.dealloc %o; scf.yield %t2
//! ```
//! becomes a loop that carries the device buffer and its length:
//! ```text
//! %d0 = gpu.alloc (vec.len %x); gpu.memcpy %d0, %x
//! %r, %rn = scf.for ... iter_args(%dt = %d0, %nt = len) {
//!   ... launches reading %dt, writing %o ...
//!   gpu.dealloc %dt; scf.yield %o, %k
//! }
//! %h = arr.alloc %rn; gpu.memcpy %h, %r; %res = arr.to_vec %h; gpu.dealloc %r
//! ```
//! An `scf.while` is rewritten the same way when the vector is at the same
//! position of its inits, both regions' arguments, the values its condition
//! forwards (itself), its yield and its results: both regions then take the
//! buffer and its length, and the body frees the buffer it got.
//!
//! Only this exact shape is rewritten: every use of `%t` is a `vec.len` or the
//! source of a copy into a fresh device buffer that launches only read (their
//! kernels load from it and nothing else: checked, as gpu-level IR may be
//! written by hand) and one `gpu.dealloc` frees, and `%t2` is used by the
//! yield alone. So the carried buffer holds `%t`'s elements for the whole
//! iteration, however many copies of `%t` it stands for.

use ir::{Builder, Context, OpId, Type, ValueId};

/// Rewrites every `scf.for` of host function bodies whose carried vectors
/// qualify (innermost loops first, so nested time loops chain); returns the
/// number of iteration arguments moved to the device.
pub fn keep_on_device(ctx: &mut Context) -> u64 {
    let loops: Vec<OpId> = ctx
        .walk_all()
        .into_iter()
        .filter(|&op| {
            (ctx.is(op, "scf.for") || ctx.is(op, "scf.while"))
                && dialects::gpu::enclosing_kernel(ctx, op).is_none()
        })
        .collect();
    let mut moved = 0;
    // walk_all is a pre-order: reversed, inner loops come before outer ones.
    for f in loops.into_iter().rev() {
        let mut f = f;
        if ctx.is(f, "scf.while") {
            while let Some((k, plan)) = find_while(ctx, f) {
                f = rewrite_while(ctx, f, k, plan);
                moved += 1;
            }
            continue;
        }
        while let Some((k, plan)) = find(ctx, f) {
            f = rewrite(ctx, f, k, plan);
            moved += 1;
        }
    }
    moved
}

/// The ops of one qualifying iteration argument.
struct Carried {
    /// `vec.len %t` ops.
    lens: Vec<OpId>,
    /// `(gpu.alloc, gpu.memcpy, gpu.dealloc)` of each copy of `%t` in.
    copies_in: Vec<(OpId, OpId, OpId)>,
    /// The device buffer whose copy becomes `%t2`, its `gpu.alloc` and
    /// `gpu.dealloc`.
    out: (ValueId, OpId, OpId),
    /// The host buffer's `arr.alloc` (its size is `%t2`'s length), the copy
    /// out and the `arr.to_vec`.
    back: (OpId, OpId, OpId),
}

pub(super) fn top(ctx: &Context, op: OpId, body: ir::BlockId) -> bool {
    ctx.op(op).parent == Some(body)
}

/// The op named `name` at the top of `body` that defines `v`.
pub(super) fn def_at_top(ctx: &Context, v: ValueId, name: &str, body: ir::BlockId) -> Option<OpId> {
    ctx.def_op(v)
        .filter(|&o| ctx.is(o, name) && top(ctx, o, body))
}

/// Whether `size` is `vec.len %v`.
pub(super) fn is_len_of(ctx: &Context, size: ValueId, v: ValueId) -> bool {
    ctx.def_op_named(size, "vec.len")
        .is_some_and(|l| ctx.operand(l, 0) == v)
}

/// The host copy that makes vector `v` at the top of `body`:
/// `%h = arr.alloc`, `gpu.memcpy %h, %o`, `%v = arr.to_vec %h`, and nothing
/// else uses `%h`. Returns `(arr.alloc, gpu.memcpy, arr.to_vec)` and `%o`.
fn host_copy(
    ctx: &Context,
    v: ValueId,
    body: ir::BlockId,
) -> Option<((OpId, OpId, OpId), ValueId)> {
    let to_vec = def_at_top(ctx, v, "arr.to_vec", body)?;
    let h = ctx.operand(to_vec, 0);
    let h_alloc = def_at_top(ctx, h, "arr.alloc", body)?;
    let hu = ctx.uses(h);
    if hu.len() != 2 {
        return None;
    }
    let copy_out = hu
        .iter()
        .find(|u| u.op != to_vec)
        .filter(|u| ctx.is(u.op, "gpu.memcpy") && u.index == 0 && top(ctx, u.op, body))?
        .op;
    Some(((h_alloc, copy_out, to_vec), ctx.operand(copy_out, 1)))
}

/// The single `gpu.dealloc` of device buffer `d` at the top of `body`, when
/// every other use of `d` is a launch operand (one whose kernel only reads
/// it, when `read_only`) or one of `allowed` (op, operand index) pairs.
pub(super) fn only_launched(
    ctx: &Context,
    d: ValueId,
    body: ir::BlockId,
    allowed: &[(OpId, usize)],
    read_only: bool,
) -> Option<OpId> {
    let mut dealloc = None;
    for u in ctx.uses(d) {
        let i = u.index as usize;
        if allowed.contains(&(u.op, i)) {
            continue;
        }
        match ctx.op_name(u.op) {
            "gpu.launch_func"
                if i >= 2 && (!read_only || dialects::gpu::launch_only_reads(ctx, u.op, i)) => {}
            "gpu.dealloc" if top(ctx, u.op, body) && dealloc.is_none() => dealloc = Some(u.op),
            _ => return None,
        }
    }
    dealloc
}

/// The `vec.len`s and copies into fresh read-only device buffers that are
/// all the uses of carried vector `t` at the top of `body`, besides the
/// operand `also` (the `scf.condition` that forwards it, for a while loop);
/// `None` when some other use exists or there is no copy.
#[allow(clippy::type_complexity)]
fn reads_of(
    ctx: &Context,
    t: ValueId,
    body: ir::BlockId,
    also: Option<(OpId, usize)>,
) -> Option<(Vec<OpId>, Vec<(OpId, OpId, OpId)>)> {
    if !matches!(ctx.ty(t), Type::Vec(e) if super::scalar(e)) {
        return None;
    }
    let (mut lens, mut copies) = (vec![], vec![]);
    for u in ctx.uses(t) {
        if also == Some((u.op, u.index as usize)) {
            continue;
        }
        if !top(ctx, u.op, body) {
            return None;
        }
        match ctx.op_name(u.op) {
            "vec.len" => lens.push(u.op),
            "gpu.memcpy" if u.index == 1 => {
                let d = ctx.operand(u.op, 0);
                let a = def_at_top(ctx, d, "gpu.alloc", body)?;
                let free = only_launched(ctx, d, body, &[(u.op, 0)], true)?;
                copies.push((a, u.op, free));
            }
            _ => return None,
        }
    }
    (!copies.is_empty()).then_some((lens, copies))
}

/// The chain that makes yield operand `k` of `body`: a host copy of a device
/// buffer that nothing else reads (`out`, `back` of [`Carried`]).
#[allow(clippy::type_complexity)]
fn yielded(
    ctx: &Context,
    yield_op: OpId,
    k: usize,
    body: ir::BlockId,
) -> Option<((ValueId, OpId, OpId), (OpId, OpId, OpId))> {
    let t2 = *ctx.operands(yield_op).get(k)?;
    if ctx.uses(t2).len() != 1 {
        return None;
    }
    let (back, o) = host_copy(ctx, t2, body)?;
    let (_, copy_out, _) = back;
    let o_alloc = def_at_top(ctx, o, "gpu.alloc", body)?;
    let o_free = only_launched(ctx, o, body, &[(copy_out, 1)], false)?;
    Some(((o, o_alloc, o_free), back))
}

/// The first iteration argument of `f` that qualifies: its index among the
/// carried values, and its ops.
fn find(ctx: &Context, f: OpId) -> Option<(usize, Carried)> {
    let body = ctx.op_block(f, 0);
    let args = ctx.block_args(body).to_vec();
    let yield_op = ctx.terminator(body)?;
    (0..args.len() - 1).find_map(|k| {
        let (lens, copies_in) = reads_of(ctx, args[k + 1], body, None)?;
        let (out, back) = yielded(ctx, yield_op, k, body)?;
        Some((
            k,
            Carried {
                lens,
                copies_in,
                out,
                back,
            },
        ))
    })
}

/// Replaces the reads of carried vector `t` (found by [`reads_of`]) by reads
/// of the device buffer `dt` and the length `nt`.
fn rewrite_reads(
    ctx: &mut Context,
    lens: &[OpId],
    copies_in: &[(OpId, OpId, OpId)],
    dt: ValueId,
    nt: ValueId,
) {
    for &l in lens {
        let r = ctx.result(l, 0);
        ctx.replace_all_uses(r, nt);
        ctx.erase_op(l);
    }
    for &(a, copy, free) in copies_in {
        ctx.erase_op(copy);
        ctx.erase_op(free);
        let d = ctx.result(a, 0);
        ctx.replace_all_uses(d, dt);
        ctx.erase_op(a);
    }
}

/// Makes yield operand `k` the device buffer of [`yielded`]'s chain (no copy
/// out, no free) and appends its length; frees `dt`, the buffer carried in,
/// before the yield.
fn rewrite_yield(
    ctx: &mut Context,
    yield_op: OpId,
    k: usize,
    out: (ValueId, OpId, OpId),
    back: (OpId, OpId, OpId),
    dt: ValueId,
) {
    let (o, _, o_free) = out;
    let (h_alloc, copy_out, to_vec) = back;
    let mut yv = ctx.operands(yield_op).to_vec();
    yv[k] = o;
    yv.push(ctx.operand(h_alloc, 0));
    ctx.set_operands(yield_op, &yv);
    ctx.erase_op(to_vec);
    ctx.erase_op(copy_out);
    ctx.erase_op(h_alloc);
    ctx.erase_op(o_free);
    let mut b = Builder::before(ctx, yield_op);
    b.smart = false;
    dialects::gpu::dealloc(&mut b, dt);
}

/// A new block for a loop region of arguments `types` holding the ops of
/// `old` (whose arguments, but the `k`th, become the new ones).
fn move_body(
    ctx: &mut Context,
    old: ir::BlockId,
    types: &[Type],
    k: usize,
) -> (ir::RegionId, Vec<ValueId>) {
    let old_args = ctx.block_args(old).to_vec();
    let (region, nb) = ctx.new_region_with_block(types);
    let new_args = ctx.block_args(nb).to_vec();
    ctx.splice_block(old, nb, None);
    for (i, &a) in old_args.iter().enumerate() {
        if i != k {
            ctx.replace_all_uses(a, new_args[i]);
        }
    }
    (region, new_args)
}

/// The copy of the initial value `x` on the device, before `l`: `(buffer, length)`.
fn copy_in_before(ctx: &mut Context, l: OpId, x: ValueId) -> (ValueId, ValueId) {
    let elem = ctx.ty(x).elem().cloned().expect("a vector");
    let mut b = Builder::before(ctx, l);
    b.smart = false;
    let n0 = b.op1("vec.len", &[x], Type::Index, vec![]);
    let d0 = dialects::gpu::alloc(&mut b, n0, elem);
    dialects::gpu::memcpy(&mut b, d0, x);
    (d0, n0)
}

/// After the new loop `nl` (results `rs`, the length last): result `k` back
/// on the host, and the old loop `l`'s results replaced.
fn copy_out_after(ctx: &mut Context, l: OpId, nl: OpId, k: usize, elem: Type) {
    let rs = ctx.results(nl).to_vec();
    let next = ctx
        .op(nl)
        .next
        .expect("a loop is followed by its block's terminator");
    let mut b = Builder::before(ctx, next);
    b.smart = false;
    let h = dialects::arr::alloc(&mut b, rs[rs.len() - 1], elem);
    dialects::gpu::memcpy(&mut b, h, rs[k]);
    let v = dialects::arr::to_vec(&mut b, h);
    dialects::gpu::dealloc(&mut b, rs[k]);
    let old_results = ctx.results(l).to_vec();
    for (i, &r) in old_results.iter().enumerate() {
        ctx.replace_all_uses(r, if i == k { v } else { rs[i] });
    }
    ctx.erase_op(l);
}

/// The ops of carried value `k` of an `scf.while`.
struct WhileCarried {
    before: (Vec<OpId>, Vec<(OpId, OpId, OpId)>),
    after: (Vec<OpId>, Vec<(OpId, OpId, OpId)>),
    out: (ValueId, OpId, OpId),
    back: (OpId, OpId, OpId),
}

/// The first carried vector of `scf.while` `w` that qualifies: the same
/// value at position `k` of the inits, the `before` arguments, the values
/// the condition forwards, the `after` arguments, the yield and the results;
/// read only as [`reads_of`] allows in both regions (and forwarded as
/// itself by the condition), and yielded as [`yielded`] makes it.
fn find_while(ctx: &Context, w: OpId) -> Option<(usize, WhileCarried)> {
    let (bb, ab) = (ctx.op_block(w, 0), ctx.op_block(w, 1));
    let (bargs, aargs) = (ctx.block_args(bb).to_vec(), ctx.block_args(ab).to_vec());
    let cond = ctx.terminator(bb).filter(|&c| ctx.is(c, "scf.condition"))?;
    let yield_op = ctx.terminator(ab)?;
    let fwd = &ctx.operands(cond)[1..];
    if fwd.len() != bargs.len() || aargs.len() != bargs.len() || ctx.results(w).len() != bargs.len()
    {
        return None;
    }
    (0..bargs.len()).find_map(|k| {
        if fwd[k] != bargs[k] || ctx.ty(aargs[k]) != ctx.ty(bargs[k]) {
            return None;
        }
        let before = reads_of(ctx, bargs[k], bb, Some((cond, k + 1)))?;
        let after = reads_of(ctx, aargs[k], ab, None)?;
        let (out, back) = yielded(ctx, yield_op, k, ab)?;
        Some((
            k,
            WhileCarried {
                before,
                after,
                out,
                back,
            },
        ))
    })
}

/// Rewrites carried value `k` of `scf.while` `w`: both regions take the
/// device buffer and its length, the condition forwards them, the `after`
/// region frees the buffer it got and yields the new one; returns the new
/// loop.
fn rewrite_while(ctx: &mut Context, w: OpId, k: usize, c: WhileCarried) -> OpId {
    let (bb, ab) = (ctx.op_block(w, 0), ctx.op_block(w, 1));
    let x = ctx.operand(w, k);
    let elem = ctx.ty(x).elem().cloned().expect("a vector");
    let dty = Type::arr(elem.clone());
    let (d0, n0) = copy_in_before(ctx, w, x);
    let mut operands = ctx.operands(w).to_vec();
    operands[k] = d0;
    operands.push(n0);
    let mut types: Vec<Type> = ctx.results(w).iter().map(|&r| ctx.ty(r).clone()).collect();
    types[k] = dty;
    types.push(Type::Index);
    let cond = ctx.terminator(bb).expect("checked condition");
    let yield_op = ctx.terminator(ab).expect("checked yield");
    let (rb, bargs) = move_body(ctx, bb, &types, k);
    let (dtb, ntb) = (bargs[k], *bargs.last().expect("length"));
    rewrite_reads(ctx, &c.before.0, &c.before.1, dtb, ntb);
    let mut cv = ctx.operands(cond).to_vec();
    cv[k + 1] = dtb;
    cv.push(ntb);
    ctx.set_operands(cond, &cv);
    let (ra, aargs) = move_body(ctx, ab, &types, k);
    let (dta, nta) = (aargs[k], *aargs.last().expect("length"));
    rewrite_reads(ctx, &c.after.0, &c.after.1, dta, nta);
    rewrite_yield(ctx, yield_op, k, c.out, c.back, dta);
    let mut b = Builder::before(ctx, w);
    b.smart = false;
    let attrs = b.ctx.op(w).attrs.clone();
    let rs = b.op_with_regions(
        "scf.while",
        &operands,
        &types,
        attrs.into_iter().collect(),
        &[rb, ra],
    );
    let nw = b.ctx.def_op(rs[0]).expect("new loop");
    copy_out_after(ctx, w, nw, k, elem);
    nw
}

/// Rewrites carried value `k` of `f` as described in the module docs;
/// returns the new loop.
fn rewrite(ctx: &mut Context, f: OpId, k: usize, c: Carried) -> OpId {
    let body = ctx.op_block(f, 0);
    let yield_op = ctx.terminator(body).expect("checked terminator");
    let x = ctx.operand(f, 3 + k);
    let elem = ctx.ty(x).elem().cloned().expect("vector");
    let (d0, n0) = copy_in_before(ctx, f, x);
    // The new loop: value k is the device buffer, the length is appended.
    let mut operands = ctx.operands(f).to_vec();
    operands[3 + k] = d0;
    operands.push(n0);
    let mut result_types: Vec<Type> = ctx.results(f).iter().map(|&r| ctx.ty(r).clone()).collect();
    result_types[k] = Type::arr(elem.clone());
    result_types.push(Type::Index);
    let mut arg_types = vec![Type::Index];
    arg_types.extend(result_types.iter().cloned());
    let (region, new_args) = move_body(ctx, body, &arg_types, k + 1);
    let (dt, nt) = (new_args[k + 1], *new_args.last().expect("length arg"));
    rewrite_reads(ctx, &c.lens, &c.copies_in, dt, nt);
    // Read after rewrite_reads: the length may have been a `vec.len %t`.
    rewrite_yield(ctx, yield_op, k, c.out, c.back, dt);
    let mut b = Builder::before(ctx, f);
    b.smart = false;
    let attrs = b.ctx.op(f).attrs.clone();
    let rs = b.op_with_regions(
        "scf.for",
        &operands,
        &result_types,
        attrs.into_iter().collect(),
        &[region],
    );
    let nf = b.ctx.def_op(rs[0]).expect("new loop");
    copy_out_after(ctx, f, nf, k, elem);
    nf
}

/// Forwards kernel results to the kernels that read them next, in device
/// memory: where a device buffer `%o` is copied to the host (`%h`, then
/// `%v = arr.to_vec %h`) and `%v` is copied into a fresh device buffer `%d`
/// of its length in the same block, `%d` becomes `%o` (freed at `%d`'s
/// `gpu.dealloc` instead of its own). Conditions, all checked: every op
/// involved is in one block; launches reading `%d` only read it, and
/// launches using `%o` after the copy out only read it (the kernels
/// load from the parameter and nothing else); `%d`'s size is `vec.len %v`.
/// The same holds for a matrix `mat.from %v, %r, %c` copied into a buffer
/// of `%r * %c` entries (a transposed copy that a kernel made, read by the
/// next kernel). When `%v` has no other use left, the host copy goes too.
/// Returns the copies removed (statistic `gpu-forwarded-copies`).
pub fn forward_device_copies(ctx: &mut Context) -> u64 {
    let copies: Vec<OpId> = ctx
        .walk_all()
        .into_iter()
        .filter(|&op| ctx.is(op, "gpu.memcpy"))
        .collect();
    let mut n = 0;
    for c in copies {
        if ctx.alive(c) && forward(ctx, c) {
            n += 1;
        }
    }
    n
}

/// [`forward_device_copies`] for one `gpu.memcpy %d, %v`.
fn forward(ctx: &mut Context, copy_in: OpId) -> bool {
    let Some(block) = ctx.op(copy_in).parent else {
        return false;
    };
    let (d, src) = (ctx.operand(copy_in, 0), ctx.operand(copy_in, 1));
    // A matrix `%m = mat.from %v, %r, %c` made of such a vector (a
    // transposed copy that a kernel built): its entries are %v's.
    let from = ctx
        .def_op_named(src, "mat.from")
        .filter(|&m| top(ctx, m, block));
    let v = from.map_or(src, |m| ctx.operand(m, 0));
    // %v = arr.to_vec %h; %h = arr.alloc; gpu.memcpy %h, %o.
    let Some(((h_alloc, copy_out, to_vec), o)) = host_copy(ctx, v, block) else {
        return false;
    };
    // %o must be a device buffer: a host `arr` copied out of (as the
    // interpreter allows) would reach the launches in place of %d.
    if !matches!(ctx.ty(o), Type::Arr(_)) || ctx.def_op_named(o, "gpu.alloc").is_none() {
        return false;
    }
    // %d: a fresh buffer of %v's length, read by launches, freed once.
    let Some(d_alloc) = def_at_top(ctx, d, "gpu.alloc", block) else {
        return false;
    };
    // Its size: %v's length, or for a matrix `%r * %c`. The matrix's own
    // shape check (`%r * %c` is %v's length) must hold by construction:
    // the host copy %h was allocated with `%r * %c` elements too. Else
    // the check, which the forwarding would leave without a use, could
    // fault and must stay.
    let size = ctx.operand(d_alloc, 0);
    let product_of = |x: ValueId, m: OpId| {
        let (r, c) = (ctx.operand(m, 1), ctx.operand(m, 2));
        ctx.def_op_named(x, "arith.muli").is_some_and(|p| {
            let xs = ctx.operands(p);
            (xs[0], xs[1]) == (r, c) || (xs[0], xs[1]) == (c, r)
        })
    };
    let sized = match from {
        None => is_len_of(ctx, size, v),
        Some(m) => {
            product_of(ctx.operand(h_alloc, 0), m)
                && (product_of(size, m) || size == ctx.operand(h_alloc, 0))
        }
    };
    if !sized {
        return false;
    }
    let d_uses = ctx.uses(d);
    if d_uses.iter().any(|u| !top(ctx, u.op, block)) {
        return false;
    }
    let Some(d_free) = only_launched(ctx, d, block, &[(copy_in, 0)], true) else {
        return false;
    };
    // %o: written by launches before the copy out, only read after it,
    // freed in this block; the device-to-device copy is not the shape.
    let mut o_frees = Vec::new();
    for u in ctx.uses(o) {
        if !top(ctx, u.op, block) {
            return false;
        }
        match ctx.op_name(u.op) {
            "gpu.memcpy" if u.op == copy_out => {}
            "gpu.dealloc" => o_frees.push(u.op),
            "gpu.launch_func" => {
                let i = u.index as usize;
                if ctx.is_before_in_block(copy_out, u.op)
                    && !dialects::gpu::launch_only_reads(ctx, u.op, i)
                {
                    return false;
                }
            }
            _ => return false,
        }
    }
    // The last free of %o stays; %d's free becomes %o's, whichever is later.
    let mut frees = o_frees;
    frees.push(d_free);
    let last = frees
        .iter()
        .copied()
        .reduce(|a, b| if ctx.is_before_in_block(a, b) { b } else { a })
        .expect("at least d's free");
    ctx.erase_op(copy_in);
    ctx.replace_all_uses(d, o);
    ctx.erase_op(d_alloc);
    for f in frees {
        if f != last {
            ctx.erase_op(f);
        }
    }
    // The matrix, when nothing else reads it; then the host copy, when
    // nothing else reads it (vec.len ops of %v first: the one that sized
    // %d may now be unused).
    if let Some(m) = from {
        if ctx.uses(src).is_empty() {
            ctx.erase_op(m);
        }
    }
    let len_uses: Vec<OpId> = ctx
        .uses(v)
        .iter()
        .map(|u| u.op)
        .filter(|&u| ctx.is(u, "vec.len") && ctx.uses(ctx.result(u, 0)).is_empty())
        .collect();
    for l in len_uses {
        ctx.erase_op(l);
    }
    if ctx.uses(v).is_empty() {
        ctx.erase_op(to_vec);
        ctx.erase_op(copy_out);
        ctx.erase_op(h_alloc);
    }
    true
}

/// Hoists copies of loop-invariant vectors out of host loops: where the
/// body of an `scf.for` or a `gen.loop` of host code copies a vector defined
/// outside the loop into a fresh device buffer (`%d = gpu.alloc`,
/// `gpu.memcpy %d, %v`) that launches only read (checked as for residency)
/// and one `gpu.dealloc` at the top of the body frees, the allocation and
/// the copy move before the loop and the free after it: one copy in all,
/// not one per iteration (an input that every time step reads). A size
/// computed in the body must be `vec.len %v` (recomputed before the loop)
/// or defined outside it. Loops are visited innermost first and the rule
/// repeats, so a copy leaves every loop it is invariant in. Returns the
/// copies hoisted (statistic `gpu-hoisted-copies`).
pub fn hoist_invariant_copies(ctx: &mut Context) -> u64 {
    let mut n = 0;
    loop {
        let moves: Vec<OpId> = ctx
            .walk_all()
            .into_iter()
            .rev()
            .filter(|&op| ctx.is(op, "gpu.memcpy") || ctx.is(op, "gpu.pack_rows"))
            .collect();
        let mut changed = false;
        for c in moves {
            let hoisted = ctx.alive(c)
                && if ctx.is(c, "gpu.memcpy") {
                    hoist(ctx, c)
                } else {
                    hoist_pack(ctx, c)
                };
            if hoisted {
                n += 1;
                changed = true;
            }
        }
        if !changed {
            return n;
        }
    }
}

/// The host loop (`scf.for`, or a `gen.loop` of host code) whose body is
/// the block that holds `op`.
fn host_loop_of(ctx: &Context, op: OpId) -> Option<(ir::BlockId, OpId)> {
    let body = ctx.op(op).parent?;
    let l = ctx.block_parent_op(body)?;
    if !(ctx.is(l, "scf.for") || ctx.is(l, dialects::gen::LOOP)) || ctx.op_block(l, 0) != body {
        return None;
    }
    if dialects::gpu::enclosing_kernel(ctx, l).is_some() {
        return None;
    }
    Some((body, l))
}

/// [`hoist_invariant_copies`] for one `gpu.pack_rows %v` of a nested vector
/// defined outside its loop, both of whose buffers launches only read and
/// one `gpu.dealloc` each at the top of the body frees: the packing moves
/// before the loop and the frees after it.
fn hoist_pack(ctx: &mut Context, pack: OpId) -> bool {
    let Some((body, l)) = host_loop_of(ctx, pack) else {
        return false;
    };
    let v = ctx.operand(pack, 0);
    if ctx.value_block(v).is_some_and(|b| ctx.block_in_op(b, l)) {
        return false;
    }
    let mut frees = Vec::new();
    for k in 0..2 {
        let d = ctx.result(pack, k);
        if ctx.uses(d).iter().any(|u| !top(ctx, u.op, body)) {
            return false;
        }
        match only_launched(ctx, d, body, &[], true) {
            Some(f) => frees.push(f),
            None => return false,
        }
    }
    let outer = ctx.op(l).parent.expect("a loop in a block");
    ctx.move_op(pack, outer, Some(l));
    for f in frees {
        let after = ctx.op(l).next;
        ctx.move_op(f, outer, after);
    }
    true
}

/// [`hoist_invariant_copies`] for one `gpu.memcpy %d, %v`.
fn hoist(ctx: &mut Context, copy: OpId) -> bool {
    let Some(body) = ctx.op(copy).parent else {
        return false;
    };
    let Some(l) = ctx.block_parent_op(body) else {
        return false;
    };
    if !(ctx.is(l, "scf.for") || ctx.is(l, dialects::gen::LOOP)) || ctx.op_block(l, 0) != body {
        return false;
    }
    if dialects::gpu::enclosing_kernel(ctx, l).is_some() {
        return false;
    }
    let (d, v) = (ctx.operand(copy, 0), ctx.operand(copy, 1));
    // Only values are invariant: a host array may change inside the loop.
    if !matches!(ctx.ty(v), Type::Vec(_) | Type::Mat(_)) {
        return false;
    }
    let outside =
        |ctx: &Context, x: ValueId| !ctx.value_block(x).is_some_and(|b| ctx.block_in_op(b, l));
    if !outside(ctx, v) {
        return false;
    }
    let Some(alloc) = def_at_top(ctx, d, "gpu.alloc", body) else {
        return false;
    };
    let size = ctx.operand(alloc, 0);
    if !outside(ctx, size) && !is_len_of(ctx, size, v) {
        return false;
    }
    if ctx.uses(d).iter().any(|u| !top(ctx, u.op, body)) {
        return false;
    }
    let Some(free) = only_launched(ctx, d, body, &[(copy, 0)], true) else {
        return false;
    };
    let outer = ctx.op(l).parent.expect("a loop in a block");
    if !outside(ctx, size) {
        // The size is `vec.len %v`: computed again before the loop.
        let mut b = Builder::before(ctx, l);
        b.smart = false;
        let n = b.op1("vec.len", &[v], Type::Index, vec![]);
        ctx.set_operand(alloc, 0, n);
    }
    ctx.move_op(alloc, outer, Some(l));
    ctx.move_op(copy, outer, Some(l));
    let after = ctx.op(l).next;
    ctx.move_op(free, outer, after);
    true
}
