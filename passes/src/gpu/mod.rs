//! Lowering `gen` to `gpu` (`lower{target=gpu}`): every top-level
//! `gen.loop` of a host function that a kernel can run becomes kernels and
//! their launches; the rest of the function (and every loop a kernel cannot
//! run) stays on the host and goes on to `arr` + `scf` as usual.
//!
//! A loop is offloaded when
//! - its generators are collects with one emit at the top of the body
//!   (dense: element `i` is written at index `i`) and reduces (`add`, `mul`,
//!   `min`, `max`) whose emits are at the top of the body or alone under an
//!   `scf.if` there (if-converted by the `arr` lowering);
//! - its body holds only `arith` and `scf` ops, `vec.get`/`vec.len` of
//!   vectors of scalars defined outside the loop, and nested `gen.loop`s of
//!   reduces of the same shape (they run sequentially in their thread);
//! - every value it reads from outside is a scalar or a vector of scalars.
//!
//! Scan, filtered or nested collects (flatMap) and bucket loops stay on the
//! host for now (a filter needs the flags-scan-scatter pipeline, which is
//! not built yet). Everything the loop computes shares one kernel: fused
//! generators are what fusion buys on a GPU.
//!
//! The host side of an offloaded loop of size `n` (kernels in
//! [`kernel`]):
//! ```text
//! g = min(max(ceildiv(n, B), 1), max_grid)           // blocks
//! d_v = gpu.alloc(len v); gpu.memcpy(d_v, v)         // each vector read
//! out_j = gpu.alloc(n)                               // each collect
//! part_j = gpu.alloc(g); res_j = gpu.alloc(1)        // each reduce
//! gpu.launch_func(g, B, n, captures..., outs..., parts...) {kernel = @f_kN}
//! gpu.launch_func(1, B, g, parts..., results...) {kernel = @f_kN+1}  // reduces only
//! copy back; reduce results are init ⊕ res_j[0]; gpu.dealloc everything
//! ```
//! Reductions are deterministic for a given block size `B` and grid: no
//! atomics, fixed trees (issue 7; the tree follows the standard CUDA
//! reduction: per-thread partials, warp shuffles, shared memory across
//! warps, then a second kernel over the per-block partials).

mod kernel;

use std::collections::HashMap;

use ir::{Attribute, Builder, Context, OpId, Type, ValueId};

use dialects::gen::{self, GenKind, Monoid};
use dialects::{arith, arr, gpu, scf};

/// Options of the GPU lowering.
#[derive(Clone, Copy, Debug)]
pub struct GpuOptions {
    /// Threads per block: a multiple of 32 and a power of two, at most 1024.
    pub block: i64,
    /// Most blocks of a launch (also the most partials the second reduce
    /// kernel combines).
    pub max_grid: i64,
}

impl Default for GpuOptions {
    fn default() -> Self {
        GpuOptions {
            block: 256,
            max_grid: 1024,
        }
    }
}

impl GpuOptions {
    /// Checks the option values.
    pub fn check(&self) -> Result<(), String> {
        let b = self.block;
        if !(32..=1024).contains(&b) || b.count_ones() != 1 {
            return Err(format!(
                "block size {b} must be a power of two between 32 and 1024"
            ));
        }
        if !(1..=1 << 20).contains(&self.max_grid) {
            return Err(format!(
                "max-grid {} must be between 1 and 2^20",
                self.max_grid
            ));
        }
        Ok(())
    }
}

/// How one generator of an offloaded loop is computed.
#[derive(Clone, Debug)]
enum Role {
    /// A dense collect; its one emit.
    Collect { emit: OpId, elem: Type },
    /// A reduce.
    Reduce { m: Monoid, elem: Type },
}

/// What an offloaded loop needs.
struct Plan {
    roles: Vec<Role>,
    /// Values from outside the loop that its body reads, in first-use order.
    captures: Vec<ValueId>,
}

/// Outlines the offloadable top-level loops of every host function into
/// kernels. Returns `(kernels built, loops left on the host)`.
pub fn outline(ctx: &mut Context, opts: &GpuOptions) -> (u64, u64) {
    let funcs: Vec<OpId> = ctx
        .iter_block(ctx.top)
        .filter(|&f| ctx.is(f, "func.func") && !gpu::is_kernel(ctx, f))
        .collect();
    let (mut kernels, mut host) = (0, 0);
    for f in funcs {
        let body = ctx.op_block(f, 0);
        let loops: Vec<OpId> = ctx
            .iter_block(body)
            .filter(|&o| ctx.is(o, gen::LOOP))
            .collect();
        let mut seq = 0;
        for l in loops {
            match plan(ctx, l) {
                Some(p) => kernels += offload(ctx, f, l, &p, opts, &mut seq),
                None => host += 1,
            }
        }
    }
    (kernels, host)
}

fn scalar(t: &Type) -> bool {
    matches!(
        t,
        Type::I1 | Type::I32 | Type::I64 | Type::Index | Type::F32 | Type::F64
    )
}

/// Whether emit `e` (to a reduce handle of loop `l`) is at the top of `l`'s
/// body, or alone in the then-branch of an `scf.if` there (no else work,
/// the value computed outside the `scf.if`): the shapes whose accumulator
/// the `arr` lowering keeps in a register.
fn reduce_emit_ok(ctx: &Context, l: OpId, e: OpId) -> bool {
    let body = gen::body(ctx, l);
    let Some(blk) = ctx.op(e).parent else {
        return false;
    };
    if blk == body {
        return true;
    }
    let Some(ifop) = ctx.block_parent_op(blk) else {
        return false;
    };
    let x = *ctx.operands(e).last().unwrap_or(&ctx.operand(e, 0));
    ctx.is(ifop, "scf.if")
        && ctx.op(ifop).parent == Some(body)
        && ctx.results(ifop).is_empty()
        && ctx.region_block(ctx.regions(ifop)[0]) == blk
        && ctx.block_ops(blk).len() == 2
        && ctx.regions(ifop).get(1).is_none_or(|&r| {
            ctx.region(r)
                .blocks
                .iter()
                .all(|&b| ctx.block_ops(b).len() <= 1)
        })
        && !ctx
            .value_block(x)
            .is_some_and(|vb| ctx.block_in_op(vb, ifop))
        && gen::generators(ctx, l)
            .iter()
            .zip(gen::handles(ctx, l))
            .any(|(g, &h)| {
                h == ctx.operand(e, 0)
                    && g.monoid()
                        .is_some_and(|m| gen::lower::exact_identity(m, &g.elem).is_some())
            })
}

/// The roles of `l`'s generators, or `None` when a kernel cannot compute one.
fn roles(ctx: &Context, l: OpId) -> Option<Vec<Role>> {
    let gens = gen::try_generators(ctx, l).ok()?;
    let body = gen::body(ctx, l);
    let mut out = Vec::new();
    for (g, &h) in gens.iter().zip(gen::handles(ctx, l)) {
        if !scalar(&g.elem) {
            return None;
        }
        let emits = gen::emits_to(ctx, h);
        match g.kind {
            GenKind::Collect => {
                let [e] = emits.as_slice() else { return None };
                if ctx.op(*e).parent != Some(body) {
                    return None;
                }
                out.push(Role::Collect {
                    emit: *e,
                    elem: g.elem.clone(),
                });
            }
            GenKind::Reduce(m) if Monoid::supports(&g.elem) => {
                if !emits.iter().all(|&e| reduce_emit_ok(ctx, l, e)) {
                    return None;
                }
                out.push(Role::Reduce {
                    m,
                    elem: g.elem.clone(),
                });
            }
            _ => return None,
        }
    }
    Some(out)
}

/// Whether every op nested in `l` can run in a kernel thread, and the
/// values from outside `l` that they read.
fn body_ok(ctx: &Context, outer: OpId, l: OpId, captures: &mut Vec<ValueId>) -> bool {
    for op in ctx.walk_nested(l) {
        let name = ctx.op_name(op);
        let ok = name.starts_with("arith.")
            || matches!(
                name,
                "scf.if" | "scf.for" | "scf.while" | "scf.yield" | "scf.condition" | "gen.end"
            )
            || ((name == "vec.get" || name == "vec.len")
                && !ctx
                    .value_block(ctx.operand(op, 0))
                    .is_some_and(|b| ctx.block_in_op(b, outer)))
            || (name == "gen.emit"
                && gen::handle_owner(ctx, ctx.operand(op, 0))
                    .is_some_and(|o| o == l || ctx.is_ancestor(outer, o)))
            || (name == gen::LOOP
                && op != outer
                && roles(ctx, op)
                    .is_some_and(|r| r.iter().all(|x| matches!(x, Role::Reduce { .. }))));
        if !ok {
            return false;
        }
        // Nested loops may only emit to their own handles.
        if name == "gen.emit" {
            let owner = gen::handle_owner(ctx, ctx.operand(op, 0));
            let mut p = ctx.parent_op(op);
            while let Some(q) = p {
                if ctx.is(q, gen::LOOP) {
                    if Some(q) != owner {
                        return false;
                    }
                    break;
                }
                p = ctx.parent_op(q);
            }
        }
        for &v in ctx.operands(op) {
            let inside = ctx
                .value_block(v)
                .is_some_and(|b| ctx.block_in_op(b, outer));
            if inside || captures.contains(&v) {
                continue;
            }
            let t = ctx.ty(v);
            if !(scalar(t) || matches!(t, Type::Vec(e) if scalar(e))) {
                return false;
            }
            captures.push(v);
        }
    }
    // A captured vector may only be read by vec.get / vec.len.
    captures.iter().all(|&v| {
        !matches!(ctx.ty(v), Type::Vec(_))
            || ctx.uses(v).iter().all(|u| {
                !ctx.block_in_op(ctx.op(u.op).parent.unwrap_or(ctx.top), outer)
                    || (u.index == 0 && (ctx.is(u.op, "vec.get") || ctx.is(u.op, "vec.len")))
            })
    })
}

fn plan(ctx: &Context, l: OpId) -> Option<Plan> {
    let roles = roles(ctx, l)?;
    let mut captures = Vec::new();
    if !body_ok(ctx, l, l, &mut captures) {
        return None;
    }
    Some(Plan { roles, captures })
}

/// A fresh kernel name `<f>_k<seq>`.
fn kernel_name(ctx: &Context, f: OpId, seq: &mut u32) -> String {
    let base = dialects::func::func_name(ctx, f).unwrap_or("f").to_string();
    loop {
        let name = format!("{base}_k{seq}");
        *seq += 1;
        if ctx.lookup_symbol(&name).is_none() {
            return name;
        }
    }
}

fn idx(b: &mut Builder, v: i64) -> ValueId {
    arith::const_int(b, v, &Type::Index)
}

fn binop(b: &mut Builder, name: &str, x: ValueId, y: ValueId) -> ValueId {
    let t = b.ctx.ty(x).clone();
    b.op1(name, &[x, y], t, vec![])
}

fn cmpi(b: &mut Builder, pred: &str, x: ValueId, y: ValueId) -> ValueId {
    b.op1(
        "arith.cmpi",
        &[x, y],
        Type::I1,
        vec![("predicate".to_string(), Attribute::Str(pred.to_string()))],
    )
}

fn select(b: &mut Builder, c: ValueId, x: ValueId, y: ValueId) -> ValueId {
    let t = b.ctx.ty(x).clone();
    b.op1("arith.select", &[c, x, y], t, vec![])
}

/// Replaces loop `l` by kernels and their launches; returns the kernels built.
fn offload(ctx: &mut Context, f: OpId, l: OpId, p: &Plan, opts: &GpuOptions, seq: &mut u32) -> u64 {
    let n = gen::size(ctx, l);
    let inits = gen::inits(ctx, l);
    let k0 = kernel_name(ctx, f, seq);
    let reduces: Vec<(Monoid, Type)> = p
        .roles
        .iter()
        .filter_map(|r| match r {
            Role::Reduce { m, elem } => Some((*m, elem.clone())),
            _ => None,
        })
        .collect();
    let k1 = (!reduces.is_empty()).then(|| kernel_name(ctx, f, seq));

    // Kernels first (they only need types).
    let cap_types: Vec<Type> = p
        .captures
        .iter()
        .map(|&v| match ctx.ty(v) {
            Type::Vec(e) => Type::arr((**e).clone()),
            t => t.clone(),
        })
        .collect();
    kernel::main_kernel(
        ctx,
        f,
        &k0,
        l,
        &p.roles,
        &p.captures,
        &cap_types,
        opts.block,
    );
    if let Some(k1) = &k1 {
        kernel::combine_kernel(ctx, f, k1, &reduces, opts.block);
    }

    // The host side.
    let mut b = Builder::before(ctx, l);
    let zero = idx(&mut b, 0);
    let nonneg = cmpi(&mut b, "sge", n, zero);
    scf::build_assert(&mut b, nonneg, "negative loop size");
    let blk = idx(&mut b, opts.block);
    let one = idx(&mut b, 1);
    let bm1 = idx(&mut b, opts.block - 1);
    let t = binop(&mut b, "arith.addi", n, bm1);
    let want = binop(&mut b, "arith.divsi", t, blk);
    let want = binop(&mut b, "arith.maxi", want, one);
    let cap = idx(&mut b, opts.max_grid);
    let grid = binop(&mut b, "arith.mini", want, cap);

    let mut dev: Vec<ValueId> = Vec::new();
    let mut args = vec![n];
    for &v in &p.captures {
        if let Type::Vec(e) = b.ctx.ty(v).clone() {
            let len = b.op1("vec.len", &[v], Type::Index, vec![]);
            let d = gpu::alloc(&mut b, len, (*e).clone());
            gpu::memcpy(&mut b, d, v);
            dev.push(d);
            args.push(d);
        } else {
            args.push(v);
        }
    }
    let mut outs = HashMap::new();
    let mut parts = Vec::new();
    let mut res = Vec::new();
    for (j, r) in p.roles.iter().enumerate() {
        if let Role::Collect { elem, .. } = r {
            let d = gpu::alloc(&mut b, n, elem.clone());
            outs.insert(j, d);
            dev.push(d);
            args.push(d);
        }
    }
    for (_, elem) in &reduces {
        let d = gpu::alloc(&mut b, grid, elem.clone());
        parts.push(d);
        dev.push(d);
        args.push(d);
    }
    gpu::launch_func(&mut b, &k0, grid, blk, &args);
    if let Some(k1) = &k1 {
        for (_, elem) in &reduces {
            let d = gpu::alloc(&mut b, one, elem.clone());
            res.push(d);
            dev.push(d);
        }
        let mut a = vec![grid];
        a.extend(&parts);
        a.extend(&res);
        gpu::launch_func(&mut b, k1, one, blk, &a);
    }
    let mut results = Vec::new();
    let mut r = 0;
    for (j, role) in p.roles.iter().enumerate() {
        match role {
            Role::Collect { elem, .. } => {
                let h = arr::alloc(&mut b, n, elem.clone());
                gpu::memcpy(&mut b, h, outs[&j]);
                results.push(arr::to_vec(&mut b, h));
            }
            Role::Reduce { m, elem } => {
                let h = arr::alloc(&mut b, one, elem.clone());
                gpu::memcpy(&mut b, h, res[r]);
                let v = arr::load(&mut b, h, zero);
                arr::free(&mut b, h);
                r += 1;
                let init = inits.get(j).copied().flatten();
                let v = match init {
                    Some(i) => {
                        let op = m.combine_op(elem).expect("checked monoid");
                        binop(&mut b, op, i, v)
                    }
                    None => v,
                };
                results.push(v);
            }
        }
    }
    for d in dev {
        gpu::dealloc(&mut b, d);
    }
    ctx.replace_op(l, &results);
    1 + k1.is_some() as u64
}
