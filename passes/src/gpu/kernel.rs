//! The kernels of an offloaded loop (see [`super`]).
//!
//! **Main kernel** `@f_kN(n, captures..., outs..., parts...)`: thread `t`
//! of block `b` handles the indices `i = b * B + t + k * stride` (`stride`
//! = threads in the grid; a grid-stride loop), as a per-thread `gen.loop`
//! over `k` whose body is the original body with `i` substituted, each
//! dense collect's emit a store `outs_j[i] = x` and each reduce a reduce
//! of that per-thread loop (the `arr` lowering then gives it an
//! accumulator). Then each reduce's per-thread partial is combined over the
//! block ([`block_reduce`]) and thread 0 writes the block's partial to
//! `parts_j[b]`.
//!
//! **Combine kernel** `@f_kN+1(g, parts..., results...)`: one block reduces
//! the `g` partials of every reduce the same way and writes `results_j[0]`.

use ir::clone::{clone_op_into, ValueMap};
use ir::spec::Traits;
use ir::{Attribute, BlockId, Builder, Context, OpId, Type, ValueId};

use dialects::gen::{self, Generator, Monoid};
use dialects::{arith, arr, gpu, scf};

use super::{binop, cmpi, idx, select, Role, Shapes};

/// Creates an empty kernel `@name(params)` just before host function `f`;
/// returns its op and body block.
pub(super) fn new_kernel(
    ctx: &mut Context,
    f: OpId,
    loc_of: OpId,
    name: &str,
    params: &[Type],
) -> (OpId, BlockId) {
    let kind = ctx.registry().expect_kind("func.func");
    let (region, block) = ctx.new_region_with_block(params);
    let attrs = vec![
        ("sym_name".to_string(), Attribute::Str(name.to_string())),
        (
            "function_type".to_string(),
            Attribute::Type(Type::function(params.to_vec(), vec![])),
        ),
        (gpu::KERNEL_ATTR.to_string(), Attribute::Unit),
    ];
    let loc = ctx.loc(loc_of);
    let k = ctx.create_op(kind, &[], &[], attrs, &[region], loc);
    let top = ctx.top;
    ctx.insert_op(k, top, Some(f));
    (k, block)
}

/// A kernel that runs the body of loop `l`: the kernel op and its body
/// block, its parameters, the loop body's ops, induction variable and
/// handles, and a value map that already sends each capture to its
/// parameter (parameter `1 + c` for capture `c`, after the size).
pub(super) struct LoopKernel {
    pub k: OpId,
    pub kb: BlockId,
    pub args: Vec<ValueId>,
    pub ops: Vec<OpId>,
    pub iv: ValueId,
    pub handles: Vec<ValueId>,
    pub map: ValueMap,
}

/// Creates kernel `@name(params)` before host function `f` for the body
/// of loop `l`, whose `captures` are parameters `1..`.
pub(super) fn loop_kernel(
    ctx: &mut Context,
    f: OpId,
    l: OpId,
    name: &str,
    params: &[Type],
    captures: &[ValueId],
) -> LoopKernel {
    let (k, kb) = new_kernel(ctx, f, l, name, params);
    let args = ctx.block_args(kb).to_vec();
    let mut map = ValueMap::new();
    for (c, &v) in captures.iter().enumerate() {
        map.insert(v, args[1 + c]);
    }
    LoopKernel {
        k,
        kb,
        args,
        ops: ctx.block_ops(gen::body(ctx, l)),
        iv: gen::induction_var(ctx, l),
        handles: gen::handles(ctx, l).to_vec(),
        map,
    }
}

/// The thread's coordinates.
pub(super) struct Thread {
    pub tid: ValueId,
    pub bid: ValueId,
    /// `bid * block_dim + tid`.
    pub gtid: ValueId,
    /// `block_dim * grid_dim`.
    pub stride: ValueId,
    pub bdim: ValueId,
    pub gdim: ValueId,
}

pub(super) fn prologue(b: &mut Builder) -> Thread {
    let tid = gpu::thread_id(b);
    let bid = gpu::block_id(b);
    let bdim = gpu::block_dim(b);
    let gdim = gpu::grid_dim(b);
    let base = binop(b, "arith.muli", bid, bdim);
    let gtid = binop(b, "arith.addi", base, tid);
    let stride = binop(b, "arith.muli", bdim, gdim);
    Thread {
        tid,
        bid,
        gtid,
        stride,
        bdim,
        gdim,
    }
}

/// How many of `[0, n)` the grid-stride loop gives the thread:
/// `gtid < n ? (n - gtid - 1) / stride + 1 : 0`.
fn per_thread_count(b: &mut Builder, n: ValueId, t: &Thread) -> ValueId {
    let one = idx(b, 1);
    let zero = idx(b, 0);
    let rest = binop(b, "arith.subi", n, t.gtid);
    let rest = binop(b, "arith.subi", rest, one);
    let q = binop(b, "arith.divsi", rest, t.stride);
    let q = binop(b, "arith.addi", q, one);
    let has = cmpi(b, "slt", t.gtid, n);
    select(b, has, q, zero)
}

/// In a kernel body being built with `b` (after [`prologue`] gave `t`): a
/// grid-stride `scf.for` over `[0, n)` that, for each index `i`, runs
/// `start(b, i)`, then copies `ops` (terminators skipped) with every value
/// of `ivs` mapped to `i`. The copy is verbatim (no folding), so that a
/// caller finds each copied op where it stood and can rewrite it. Returns
/// `i`, for rewrites inside the loop.
pub(super) fn copy_per_index(
    b: &mut Builder,
    t: &Thread,
    n: ValueId,
    ops: &[OpId],
    ivs: &[ValueId],
    map: &mut ValueMap,
    start: impl FnOnce(&mut Builder, ValueId),
) -> ValueId {
    let cnt = per_thread_count(b, n, t);
    let (zero, one) = (idx(b, 0), idx(b, 1));
    let mut at = None;
    scf::build_for(b, zero, cnt, one, &[], |b, kv, _| {
        let i = global_index(b, t, kv);
        at = Some(i);
        start(b, i);
        for &iv in ivs {
            map.insert(iv, i);
        }
        let smart = std::mem::replace(&mut b.smart, false);
        for &op in ops {
            if !b.ctx.has_traits(op, Traits::TERMINATOR) {
                clone_op_into(b, op, map);
            }
        }
        b.smart = smart;
        vec![]
    });
    at.expect("loop body built")
}

/// `i = gtid + k * stride`.
fn global_index(b: &mut Builder, t: &Thread, k: ValueId) -> ValueId {
    let off = binop(b, "arith.muli", k, t.stride);
    binop(b, "arith.addi", t.gtid, off)
}

fn i32c(b: &mut Builder, v: i64) -> ValueId {
    arith::const_int(b, v, &Type::I32)
}

/// Combines `v` over lanes `[lane, lane + 2 * first)` of each warp with a
/// tree of `gpu.shuffle down` (offsets `first, first / 2, ..., 1`); lane 0
/// of each warp ends with the warp's value.
fn warp_reduce(b: &mut Builder, mut v: ValueId, m: Monoid, ty: &Type, first: i64) -> ValueId {
    let op = m.combine_op(ty).expect("checked monoid");
    let width = i32c(b, gpu::WARP);
    let mut off = first;
    while off >= 1 {
        let o = i32c(b, off);
        let (s, _) = gpu::shuffle(b, "down", v, o, width);
        v = binop(b, op, v, s);
        off /= 2;
    }
    v
}

/// Reduces each `(value, monoid, type)` over the block and has thread 0
/// store the block's value at `dsts[j][block_id]`: a warp tree, one
/// workgroup slot per warp, one barrier, and a warp tree over the slots
/// (every warp computes it; only thread 0 stores).
pub(super) fn block_reduce(
    b: &mut Builder,
    t: &Thread,
    vals: &[(ValueId, Monoid, Type)],
    dsts: &[ValueId],
    block: i64,
) {
    if vals.is_empty() {
        return;
    }
    let warps = block / gpu::WARP;
    let c32 = idx(b, gpu::WARP);
    let lane = binop(b, "arith.remsi", t.tid, c32);
    let warp = binop(b, "arith.divsi", t.tid, c32);
    let zero = idx(b, 0);
    let lane0 = cmpi(b, "eq", lane, zero);
    let mut slots = Vec::new();
    for (v, m, ty) in vals {
        let w = warp_reduce(b, *v, *m, ty, gpu::WARP / 2);
        let sh = gpu::workgroup_alloc(b, warps, ty.clone());
        scf::build_if_then(b, lane0, |b| {
            arr::store(b, sh, warp, w);
        });
        slots.push(sh);
    }
    gpu::barrier(b);
    let nw = idx(b, warps);
    let has = cmpi(b, "slt", lane, nw);
    let at = select(b, has, lane, zero);
    let thread0 = cmpi(b, "eq", t.tid, zero);
    for ((_, m, ty), (&sh, &dst)) in vals.iter().zip(slots.iter().zip(dsts)) {
        let x = arr::load(b, sh, at);
        let id = gen::lower::exact_identity(*m, ty).expect("checked monoid");
        let id = b.constant(id, ty);
        let x = select(b, has, x, id);
        let w = warp_reduce(b, x, *m, ty, warps / 2);
        let bid = t.bid;
        scf::build_if_then(b, thread0, |b| {
            arr::store(b, dst, bid, w);
        });
    }
}

pub(super) fn finish(b: &mut Builder) {
    let st = b.state("func.return", &[], &[], vec![]);
    b.create_raw(st);
}

/// Rewrites the `vec.get`/`vec.len` of kernel `k` whose vector became a
/// device buffer into `arr.load`/`arr.len` (keeping `in_bounds`). A
/// `vec.get` of a row of a nested vector (its result a vector) is left to
/// [`nest_reads_to_arr`]; the nested vector's `vec.len` becomes the
/// `arr.len` of its row ends, its number of rows.
pub(super) fn vec_reads_to_arr(ctx: &mut Context, k: OpId) {
    for op in ctx.walk_nested(k) {
        let name = ctx.op_name(op);
        if !(name == "vec.get" || name == "vec.len") {
            continue;
        }
        let Type::Arr(e) = ctx.ty(ctx.operand(op, 0)) else {
            continue;
        };
        if !(name == "vec.len" || (name == "vec.get" && **e == *ctx.ty(ctx.result(op, 0)))) {
            continue;
        }
        let ops = ctx.operands(op).to_vec();
        let attrs = ctx.op(op).attrs.to_vec();
        let t = ctx.ty(ctx.result(op, 0)).clone();
        let mut b = Builder::before(ctx, op);
        let new = if name == "vec.get" {
            b.op1("arr.load", &ops, t, attrs)
        } else {
            arr::len(&mut b, ops[0])
        };
        ctx.replace_op(op, &[new]);
    }
}

/// Rewrites the reads of kernel `k`'s captures that became several
/// parameters ([`super::kernel_captures`]): matrices
/// ([`mat_reads_to_arr`]) and nested vectors ([`nest_reads_to_arr`]).
pub(super) fn shaped_reads_to_arr(ctx: &mut Context, k: OpId, shapes: &Shapes) {
    mat_reads_to_arr(ctx, k, &shapes.mats);
    nest_reads_to_arr(ctx, k, &shapes.nests);
}

/// Rewrites the row reads of kernel `k` whose nested vectors became two
/// parameters each (the device buffers of `gpu.pack_rows`: the rows'
/// entries and the row ends; `nests` holds the positions of the first among
/// the captures). The body's value map sent each nested vector to its row
/// ends, so `%r = vec.get %ends, %i` (a vector) is a row: `%i` is checked
/// against the number of rows as the op checks it (unless marked
/// `in_bounds`), the row spans `ends[i - 1]` (0 for the first) to
/// `ends[i]`, `vec.len %r` becomes its length and `vec.get %r, %j` a load of
/// the entries at `start + j` after a check of `j` against that length
/// (unless marked `in_bounds`). The planner made sure nothing else reads a
/// row (`super::row_of_capture`).
pub(super) fn nest_reads_to_arr(ctx: &mut Context, k: OpId, nests: &[usize]) {
    let params = ctx.block_args(ctx.op_block(k, 0)).to_vec();
    for op in ctx.walk_nested(k) {
        if !ctx.alive(op) || !ctx.is(op, "vec.get") {
            continue;
        }
        let ends = ctx.operand(op, 0);
        let Some(&c) = nests.iter().find(|&&c| params[2 + c] == ends) else {
            continue;
        };
        let data = params[1 + c];
        let i = ctx.operand(op, 1);
        let mut b = Builder::before(ctx, op);
        if b.ctx.attr(op, "in_bounds").is_none() {
            let n = arr::len(&mut b, ends);
            let ok = cmpi(&mut b, "ult", i, n);
            dialects::scf::build_assert(&mut b, ok, "index out of bounds in vec.get");
        }
        let end = arr::load_in_bounds(&mut b, ends, i);
        let start = row_start(&mut b, ends, i);
        let len = binop(&mut b, "arith.subi", end, start);
        replace_row_reads(ctx, ctx.result(op, 0), len, |b, j| {
            let at = binop(b, "arith.addi", start, j);
            arr::load_in_bounds(b, data, at)
        });
        ctx.erase_op(op);
    }
}

/// Where row `i` of a packed nested vector starts in its entries: `ends[i -
/// 1]`, or 0 for the first row (`ends` holds the row ends, `i` is in range).
pub(super) fn row_start(b: &mut Builder, ends: ValueId, i: ValueId) -> ValueId {
    let (zero, one) = (idx(b, 0), idx(b, 1));
    let at = binop(b, "arith.maxi", i, one);
    let at = binop(b, "arith.subi", at, one);
    let prev = arr::load_in_bounds(b, ends, at);
    let first = cmpi(b, "eq", i, zero);
    select(b, first, zero, prev)
}

/// Replaces the reads of a row `row` of `len` entries that is never built
/// (the caller made sure only `vec.len` and `vec.get` read it): `vec.len`
/// becomes `len`, and `vec.get %row, %j` becomes `load(b, j)` after a check
/// of `j` against `len` (unless the read is marked `in_bounds`).
pub(super) fn replace_row_reads(
    ctx: &mut Context,
    row: ValueId,
    len: ValueId,
    load: impl Fn(&mut Builder, ValueId) -> ValueId,
) {
    let reads: Vec<OpId> = ctx.uses(row).iter().map(|u| u.op).collect();
    for r in reads {
        let new = if ctx.is(r, "vec.len") {
            len
        } else {
            let j = ctx.operand(r, 1);
            let checked = ctx.attr(r, "in_bounds").is_none();
            let mut b = Builder::before(ctx, r);
            if checked {
                let ok = cmpi(&mut b, "ult", j, len);
                dialects::scf::build_assert(&mut b, ok, "index out of bounds in vec.get");
            }
            load(&mut b, j)
        };
        ctx.replace_op(r, &[new]);
    }
}

/// Rewrites the matrix reads of kernel `k` whose matrix became three
/// parameters (its row-major entries in a device buffer, its rows, its
/// columns; `mats` holds the positions of the first among the captures):
/// `mat.rows`/`mat.cols` become those parameters, and `mat.get` (plain or
/// `{transposed}`) a load at `row * cols + col` after the same bounds
/// checks as the op itself (kept unless the op is marked `in_bounds`).
pub(super) fn mat_reads_to_arr(ctx: &mut Context, k: OpId, mats: &[usize]) {
    let params = ctx.block_args(ctx.op_block(k, 0)).to_vec();
    for op in ctx.walk_nested(k) {
        if !ctx.alive(op) {
            continue;
        }
        let name = ctx.op_name(op);
        if !matches!(name, "mat.get" | "mat.rows" | "mat.cols" | "mat.row") {
            continue;
        }
        let m = ctx.operand(op, 0);
        let Some(&c) = mats.iter().find(|&&c| params[1 + c] == m) else {
            continue;
        };
        let (rows, cols) = (params[2 + c], params[3 + c]);
        if name == "mat.row" {
            row_reads_to_arr(ctx, op, rows, cols);
            continue;
        }
        let new = match name {
            "mat.rows" => rows,
            "mat.cols" => cols,
            _ => {
                let t = dialects::mat::get_is_transposed(ctx, op);
                let checked = ctx.attr(op, "in_bounds").is_none();
                let (i, j) = (ctx.operand(op, 1), ctx.operand(op, 2));
                let ty = ctx.ty(ctx.result(op, 0)).clone();
                let mut b = Builder::before(ctx, op);
                // Entry (i, j) of transpose(m) is entry (j, i) of m.
                let (lr, lc) = if t { (cols, rows) } else { (rows, cols) };
                if checked {
                    let ok = cmpi(&mut b, "ult", i, lr);
                    dialects::scf::build_assert(&mut b, ok, "row index out of bounds in mat.get");
                    let ok = cmpi(&mut b, "ult", j, lc);
                    dialects::scf::build_assert(
                        &mut b,
                        ok,
                        "column index out of bounds in mat.get",
                    );
                }
                let (r, cc) = if t { (j, i) } else { (i, j) };
                let row = binop(&mut b, "arith.muli", r, cols);
                let at = binop(&mut b, "arith.addi", row, cc);
                let x = arr::load_in_bounds(&mut b, m, at);
                debug_assert_eq!(b.ctx.ty(x), &ty);
                x
            }
        };
        ctx.replace_op(op, &[new]);
    }
}

/// Rewrites `%r = mat.row %m, %i` (plain or `{transposed}`) of a matrix
/// that became a device buffer with `rows` and `cols` (see
/// [`mat_reads_to_arr`]): the row index is checked as the op checks it
/// (unless it is marked `in_bounds`), `vec.len %r` becomes the row's length
/// and `vec.get %r, %k` a load at `i * cols + k` (`k * cols + i` for a
/// column) after a check of `k` against that length (unless marked
/// `in_bounds`). The caller made sure nothing else reads `%r`
/// (`super::row_of_capture`).
fn row_reads_to_arr(ctx: &mut Context, op: OpId, rows: ValueId, cols: ValueId) {
    let t = dialects::mat::row_is_transposed(ctx, op);
    let (m, i) = (ctx.operand(op, 0), ctx.operand(op, 1));
    let (lr, len) = if t { (cols, rows) } else { (rows, cols) };
    if ctx.attr(op, "in_bounds").is_none() {
        let mut b = Builder::before(ctx, op);
        let ok = cmpi(&mut b, "ult", i, lr);
        dialects::scf::build_assert(&mut b, ok, "row index out of bounds in mat.row");
    }
    replace_row_reads(ctx, ctx.result(op, 0), len, |b, k| {
        let (r0, c0) = if t { (k, i) } else { (i, k) };
        let base = binop(b, "arith.muli", r0, cols);
        let at = binop(b, "arith.addi", base, c0);
        arr::load_in_bounds(b, m, at)
    });
    ctx.erase_op(op);
}

/// Builds the main kernel of loop `l` (in host function `f`).
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
    for r in roles {
        if let Role::Collect { elem, .. } = r {
            params.push(Type::arr(elem.clone()));
        }
    }
    let mut inner = Vec::new();
    for r in roles {
        if let Role::Reduce { m, elem } = r {
            params.push(Type::arr(elem.clone()));
            inner.push(Generator::reduce(*m, elem.clone()));
        }
    }
    // The scratch slices of nested collects ([`super::scratch`]) last.
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
    // Collect outputs, by emit op.
    let mut next = 1 + captures.len();
    let mut stores = Vec::new();
    for r in roles {
        if let Role::Collect { emit, .. } = r {
            stores.push((*emit, args[next]));
            next += 1;
        }
    }
    let parts = args[next..scratch_at].to_vec();
    let reduce_handles: Vec<ValueId> = roles
        .iter()
        .zip(&handles)
        .filter(|(r, _)| matches!(r, Role::Reduce { .. }))
        .map(|(_, &h)| h)
        .collect();

    let mut b = Builder::at_end(ctx, kb);
    b.loc = b.ctx.loc(l);
    let t = prologue(&mut b);
    let cnt = per_thread_count(&mut b, args[0], &t);
    // Nested collects are copied verbatim, to be found and expanded.
    let smart = b.smart;
    b.smart = smart && allocs.is_empty();
    let partial = gen::build_loop(&mut b, cnt, &[], &inner, |b, kv, hs| {
        let i = global_index(b, &t, kv);
        map.insert(iv, i);
        for (&h, &nh) in reduce_handles.iter().zip(hs) {
            map.insert(h, nh);
        }
        for &op in &ops {
            if b.ctx.has_traits(op, Traits::TERMINATOR) {
                continue;
            }
            if let Some(&(_, out)) = stores.iter().find(|(e, _)| *e == op) {
                let x = b.ctx.operand(op, 1);
                let x = map.get(&x).copied().unwrap_or(x);
                arr::store_in_bounds(b, out, i, x);
                continue;
            }
            clone_op_into(b, op, &mut map);
        }
    });
    b.smart = smart;
    let gtid = t.gtid;
    let vals: Vec<(ValueId, Monoid, Type)> = partial
        .iter()
        .zip(&inner)
        .map(|(&v, g)| (v, g.monoid().expect("reduce"), g.elem.clone()))
        .collect();
    block_reduce(&mut b, &t, &vals, &parts, block);
    finish(&mut b);
    let copies = super::scratch::copies(ctx, allocs, &map);
    super::scratch::expand(ctx, &copies, &args[scratch_at..], gtid);
    vec_reads_to_arr(ctx, k);
}

/// Builds the kernel that combines the per-block partials of `reduces`.
pub(super) fn combine_kernel(
    ctx: &mut Context,
    f: OpId,
    name: &str,
    reduces: &[(Monoid, Type)],
    block: i64,
) {
    let mut params = vec![Type::Index];
    params.extend(reduces.iter().map(|(_, t)| Type::arr(t.clone())));
    params.extend(reduces.iter().map(|(_, t)| Type::arr(t.clone())));
    let (_, kb) = new_kernel(ctx, f, f, name, &params);
    let args = ctx.block_args(kb).to_vec();
    let r = reduces.len();
    let (parts, results) = (args[1..1 + r].to_vec(), args[1 + r..].to_vec());
    let gens: Vec<Generator> = reduces
        .iter()
        .map(|(m, t)| Generator::reduce(*m, t.clone()))
        .collect();
    let mut b = Builder::at_end(ctx, kb);
    let t = prologue(&mut b);
    let cnt = per_thread_count(&mut b, args[0], &t);
    let partial = gen::build_loop(&mut b, cnt, &[], &gens, |b, kv, hs| {
        let i = global_index(b, &t, kv);
        for (&p, &h) in parts.iter().zip(hs) {
            let x = arr::load_in_bounds(b, p, i);
            gen::emit(b, h, x);
        }
    });
    let vals: Vec<(ValueId, Monoid, Type)> = partial
        .iter()
        .zip(reduces)
        .map(|(&v, (m, ty))| (v, *m, ty.clone()))
        .collect();
    block_reduce(&mut b, &t, &vals, &results, block);
    finish(&mut b);
}
