//! Lowering `gen` to `gpu` (`lower{target=gpu}`): every top-level
//! `gen.loop` of a host function that a kernel can run becomes kernels and
//! their launches; the rest of the function (and every loop a kernel cannot
//! run) stays on the host and goes on to `arr` + `scf` as usual.
//!
//! A loop is offloaded when
//! - its generators are collects with one emit at the top of the body
//!   (dense: element `i` is written at index `i`) or with up to
//!   [`MAX_WIDTH`] emits each at the top or under `scf.if`s only (a filter,
//!   or a flatMap of a bounded number of elements per iteration: each emit
//!   has a slot per iteration, compacted in order); scans with one emit at
//!   the top of the body; and reduces (`add`,
//!   `mul`, `min`, `max`) whose emits are at the top of the body or alone
//!   under an `scf.if` there (if-converted by the `arr` lowering; a reduce
//!   emit under `scf.if`s whose branch computes the value moves out of them
//!   first, [`emits`], so that this holds);
//! - its body holds only `arith` and `scf` ops (run-time checks, `scf.assert`,
//!   included: a kernel faults as a checked read does), `vec.get`/`vec.len` of
//!   vectors of scalars defined outside the loop, nested `gen.loop`s of
//!   reduces of the same shape (they run sequentially in their thread),
//!   and nested collects that the thread keeps in a slice of a scratch
//!   buffer ([`scratch`]: loops that allocate per iteration);
//! - every value it reads from outside is a scalar or a vector of scalars.
//!
//! A loop whose body reads the running fold of its own reduces or scans
//! (`gen.running`) uses the kernels of [`running`]. The indexed update
//! loops of `vec.hist` and `vec.scatter` use the kernels of [`update`]
//! (atomics for integer histograms; a winner table for scatters), and a
//! flatMap of a computed number of elements those of [`flat`] (count,
//! scan, write). Bucket loops and float histograms stay on the host for
//! now.
//! Everything the loop computes shares its kernels: fused generators are
//! what fusion buys on a GPU. Loops with a scan or a filter use the
//! three-phase kernels of [`scan`]; the others, the kernels of [`kernel`].
//!
//! The host side of an offloaded loop of size `n` without scans or filters:
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

mod arrays;
mod buckets;
mod chunks;
mod emits;
mod flat;
mod kernel;
mod resident;
mod reuse;
mod running;
mod scan;
mod scratch;
mod split_scans;
mod update;

pub use buckets::group_buckets;
pub use resident::{forward_device_copies, hoist_invariant_copies, keep_on_device};
pub use reuse::reuse_device_copies;

use std::collections::{HashMap, HashSet};

use ir::{Builder, Context, OpId, Type, ValueId};

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
    /// The block sizes a kernel may have (threads; powers of two).
    pub const BLOCK: std::ops::RangeInclusive<i64> = 32..=1024;
    /// The grid sizes a launch may have (blocks).
    pub const GRID: std::ops::RangeInclusive<i64> = 1..=1 << 20;

    /// Checks the option values.
    pub fn check(&self) -> Result<(), String> {
        let b = self.block;
        if !Self::BLOCK.contains(&b) || b.count_ones() != 1 {
            return Err(format!(
                "block size {b} must be a power of two between 32 and 1024"
            ));
        }
        if !Self::GRID.contains(&self.max_grid) {
            return Err(format!(
                "max-grid {} must be between 1 and 2^20",
                self.max_grid
            ));
        }
        Ok(())
    }
}

impl GpuOptions {
    /// The most threads of one kernel launch (`block * max_grid`).
    pub fn launch_threads(&self) -> i64 {
        self.block * self.max_grid
    }
}

/// Replaces each `scf.forall_threads` by the most threads of a kernel
/// launch (`dialects::scf`'s `threads_op`: host code for the GPU runs its
/// top-level `scf.forall`s as kernels), so that lowerings that choose by
/// it keep their parallel form, which becomes kernels. Returns how many
/// were replaced.
pub fn launch_threads(ctx: &mut Context, opts: &GpuOptions) -> u64 {
    let mut n = 0;
    for op in ctx.walk_all() {
        if !ctx.alive(op) || !ctx.is(op, "scf.forall_threads") {
            continue;
        }
        let mut b = Builder::before(ctx, op);
        let t = arith::const_int(&mut b, opts.launch_threads(), &Type::Index);
        let r = ctx.result(op, 0);
        ctx.replace_all_uses(r, t);
        ctx.erase_op(op);
        n += 1;
    }
    n
}

/// How one generator of an offloaded loop is computed.
#[derive(Clone, Debug)]
enum Role {
    /// A dense collect; its one emit.
    Collect { emit: OpId, elem: Type },
    /// A reduce.
    Reduce { m: Monoid, elem: Type },
    /// A collect whose emits run at most once each per iteration (each at
    /// the top of the body or under `scf.if`s only), but not exactly one
    /// dense emit: a filter (one emit under an `scf.if`) or a flatMap of at
    /// most `width` elements per iteration. Iteration `i`'s emit number
    /// `j` (in program order, which is their order of execution) has slot
    /// `i * width + j`; the kept slots, compacted in order, are the result.
    Filter { elem: Type, width: i64 },
    /// A scan with one emit at the top of the body.
    Scan { emit: OpId, m: Monoid, elem: Type },
}

impl Role {
    /// Whether the generator's result depends on the order of indices
    /// across threads (a scan or a filter).
    fn ordered(&self) -> bool {
        matches!(self, Role::Filter { .. } | Role::Scan { .. })
    }
}

/// Whether every op between emit `e` and `l`'s body is an `scf.if` (so the
/// emit runs at most once per iteration).
fn under_ifs_only(ctx: &Context, l: OpId, e: OpId) -> bool {
    let mut p = ctx.parent_op(e);
    while let Some(q) = p {
        if q == l {
            return true;
        }
        if !ctx.is(q, "scf.if") {
            return false;
        }
        p = ctx.parent_op(q);
    }
    false
}

/// Most emits of one collect per iteration that a kernel compacts (each
/// takes a slot of the value and flag buffers per iteration).
const MAX_WIDTH: i64 = 16;

/// What an offloaded loop needs.
struct Plan {
    roles: Vec<Role>,
    /// The generators (by position) that the body reads with
    /// `gen.running`, and with them every scan of the loop: computed by
    /// [`running`]'s kernels. Empty for the other loops.
    running: Vec<usize>,
    /// Values from outside the loop that its body reads, in first-use order.
    captures: Vec<ValueId>,
    /// Collect loops nested in the body that run in scratch slices of
    /// device buffers ([`scratch`]).
    allocs: Vec<OpId>,
}

/// Outlines the offloadable loops of every host function into kernels, at
/// any depth of host code: loops inside `scf.for`/`scf.while`/`scf.if`
/// bodies (time-step loops) and inside loops left on the host (a kernel per
/// outer iteration) are offloaded where they stand. Returns `(kernels
/// built, loops left on the host, nested collects run in scratch slices)`;
/// the second counts every `gen.loop` at any depth of host code that no
/// kernel runs.
pub fn outline(ctx: &mut Context, opts: &GpuOptions) -> (u64, u64, u64) {
    // Callers before callees: a loop that calls a function inlines the
    // callee's loops before they become kernels of the callee's own (a
    // loop body holding launches would stay on the host).
    let funcs: Vec<OpId> = crate::inline::callers_first(ctx)
        .into_iter()
        .filter(|&f| !gpu::is_kernel(ctx, f))
        .collect();
    // Inlining a callee into a loop leaves every function as recursive as it
    // was: one call graph serves the whole walk.
    let mut w = Walk {
        opts,
        recursive: crate::inline::recursive_functions(ctx),
        seq: 0,
        kernels: 0,
        host: 0,
        scratch: 0,
    };
    for f in funcs {
        split_scans::split_all(ctx, f);
        w.seq = 0;
        let body = ctx.op_block(f, 0);
        w.block(ctx, f, body);
    }
    (w.kernels, w.host, w.scratch)
}

/// The state of [`outline`]'s walk over host code.
struct Walk<'a> {
    opts: &'a GpuOptions,
    /// The functions that calls in loop bodies are not inlined from.
    recursive: HashSet<OpId>,
    /// The next kernel number of the current function.
    seq: u32,
    kernels: u64,
    host: u64,
    /// Nested collects that kernels run in scratch slices ([`scratch`]).
    scratch: u64,
}

impl Walk<'_> {
    /// [`outline`] on the ops of `block` (host code of function `f`) and,
    /// recursively, on the regions of every op there that is not offloaded.
    fn block(&mut self, ctx: &mut Context, f: OpId, block: ir::BlockId) {
        // The ops as they stand: an offload inserts host ops before its loop
        // (none of them holds a loop) and replaces the loop.
        let ops: Vec<OpId> = ctx.iter_block(block).collect();
        for op in ops {
            self.op(ctx, f, op);
        }
    }

    /// [`Walk::block`] on one op of host code.
    fn op(&mut self, ctx: &mut Context, f: OpId, op: OpId) {
        if ctx.is(op, gen::LOOP) {
            if plan(ctx, op).is_err() {
                self.inline_calls(ctx, op);
                emits::hoist_reduce_emits(ctx, op);
            }
            let why = match plan(ctx, op) {
                Ok(p) => {
                    self.scratch += p.allocs.len() as u64;
                    self.kernels += offload(ctx, f, op, &p, self.opts, &mut self.seq);
                    return;
                }
                Err(why) => why,
            };
            let copies = flat::row_copies(ctx, op);
            let fp = flat::plan(ctx, op);
            if fp.is_err() {
                flat::undo_row_copies(ctx, copies);
            }
            match fp {
                Ok(p) => {
                    self.scratch += p.scratch_count();
                    self.kernels += flat::offload(ctx, f, op, &p, self.opts, &mut self.seq);
                    return;
                }
                // A flatMap's own reason says more than the plain loop's
                // "fed inside a nested loop".
                Err(fw) if why.contains("flatMap") && fw != "not a flatMap of scalars" => {
                    ir::remarks::emit(
                        "gpu",
                        ctx.loc(op),
                        format!("loop left on the host: {why}; as a flatMap: {fw}"),
                    )
                }
                Err(_) => {
                    ir::remarks::emit("gpu", ctx.loc(op), format!("loop left on the host: {why}"))
                }
            }
            self.host += 1;
        }
        if let Some(what) = ctx
            .attr(op, dialects::vec_combine::SEQUENTIAL_ATTR)
            .and_then(|a| a.as_str())
            .map(str::to_string)
        {
            let why = match chunks::plan(ctx, op) {
                Some(Ok(p)) => {
                    self.kernels += chunks::offload(ctx, f, op, &p, self.opts, &mut self.seq);
                    return;
                }
                Some(Err(why)) => why,
                None => "it carries the fold from chunk to chunk".into(),
            };
            ir::remarks::emit(
                "gpu",
                ctx.loc(op),
                format!(
                    "{}: a loop over its chunks left on the host ({why})",
                    chunk_loop_what(&what)
                ),
            );
            self.host += 1;
        }
        if update::plan(ctx, op).is_some_and(|p| p.is_err()) {
            self.inline_calls(ctx, op);
        }
        match update::plan(ctx, op) {
            Some(Ok(p)) => {
                self.kernels += update::offload(ctx, f, op, &p, self.opts, &mut self.seq);
                return;
            }
            Some(Err(why)) => {
                ir::remarks::emit(
                    "gpu",
                    ctx.loc(op),
                    format!("indexed update left on the host: {why}"),
                );
                self.host += 1;
            }
            None => {}
        }
        let blocks: Vec<ir::BlockId> = ctx
            .regions(op)
            .iter()
            .flat_map(|&r| ctx.region(r).blocks.clone())
            .collect();
        for b in blocks {
            self.block(ctx, f, b);
        }
        if ctx.is(op, "scf.forall") && holds_device_ops(ctx, op) {
            sequential(ctx, op);
        }
    }

    /// Inlines every call nested in loop `l` to a defined function that is
    /// not recursive (a kernel has no calls: "inline first", as Futhark and
    /// Accelerate do for device code); calls copied in by the inlining are
    /// inlined in turn.
    fn inline_calls(&self, ctx: &mut Context, l: OpId) {
        loop {
            let calls: Vec<(OpId, OpId)> = ctx
                .walk_nested(l)
                .into_iter()
                .filter(|&op| ctx.is(op, "func.call"))
                .filter_map(|c| {
                    let f = ctx.lookup_symbol(dialects::func::callee(ctx, c)?)?;
                    let defined = ctx.is(f, "func.func") && !dialects::func::is_declaration(ctx, f);
                    (defined && !self.recursive.contains(&f)).then_some((c, f))
                })
                .collect();
            if calls.is_empty() {
                return;
            }
            for (c, f) in calls {
                crate::inline::inline_call(ctx, c, f);
            }
        }
    }
}

/// Whether `op`'s regions hold `gpu` ops (launches, device allocations and
/// copies) after the walk offloaded loops of its body.
fn holds_device_ops(ctx: &Context, op: OpId) -> bool {
    ctx.walk_nested(op)
        .into_iter()
        .any(|o| o != op && ctx.op_name(o).starts_with("gpu."))
}

/// Replaces the `scf.forall` `l` of host code by an `scf.for` over the same
/// iterations, in order. A host `scf.forall` (the native
/// parallel decomposition, as `--pass=lower` leaves it before
/// `--target=nvptx` lowers the rest) runs its iterations on several
/// threads; once the walk put launches, device allocations or copies in its
/// body, they would use the one device context from several threads at
/// once. In order, the run is the one the
/// interpreter gives (which runs the iterations in order, and reports the
/// lowest-numbered faulting one, as the threads do).
fn sequential(ctx: &mut Context, l: OpId) {
    let n = ctx.operand(l, 0);
    let body = ctx.op_block(l, 0);
    let c = ctx.block_args(body)[0];
    let mut b = Builder::before(ctx, l);
    let zero = idx(&mut b, 0);
    let one = idx(&mut b, 1);
    dialects::scf::build_for(&mut b, zero, n, one, &[], |b, i, _| {
        let mut map = ir::clone::ValueMap::default();
        map.insert(c, i);
        ir::clone::clone_block_into(b, body, &mut map);
        vec![]
    });
    ctx.erase_op(l);
}

/// How a remark names the op of a chunk loop marked with `what`.
fn chunk_loop_what(what: &str) -> String {
    if what == "vec.hist" {
        format!("'{what}'")
    } else {
        format!("'{what}' with a combiner region")
    }
}

pub(crate) fn scalar(t: &Type) -> bool {
    matches!(
        t,
        Type::I1 | Type::I32 | Type::I64 | Type::Index | Type::F32 | Type::F64
    )
}

/// Whether emit `e` of a reduce with monoid `m` on `elem` (in a loop with
/// body `body`) is at the top of the body or if-convertible there
/// ([`gen::lower::if_convertible`]): the shapes whose accumulator the `arr`
/// lowering keeps in a register, so that the kernel allocates nothing.
fn reduce_emit_ok(ctx: &Context, body: ir::BlockId, e: OpId, m: Monoid, elem: &Type) -> bool {
    ctx.op(e).parent == Some(body)
        || (gen::lower::exact_identity(m, elem).is_some()
            && gen::lower::if_convertible(ctx, body, e).is_some())
}

/// The roles of `l`'s generators, or `None` when a kernel cannot compute one.
/// What each generator of `l` is in a kernel, or why `l` has none (an
/// optimization remark's text).
fn roles(ctx: &Context, l: OpId) -> Result<Vec<Role>, String> {
    let gens =
        gen::try_generators(ctx, l).map_err(|_| "its generators are malformed".to_string())?;
    let body = gen::body(ctx, l);
    let mut out = Vec::new();
    for (g, &h) in gens.iter().zip(gen::handles(ctx, l)) {
        if !scalar(&g.elem) {
            return Err(format!(
                "a generator's elements are '{}', not scalars (a kernel thread makes one scalar per element)",
                g.elem
            ));
        }
        let emits = gen::emits_to(ctx, h);
        match g.kind {
            GenKind::Collect => match emits.as_slice() {
                [e] if ctx.op(*e).parent == Some(body) => out.push(Role::Collect {
                    emit: *e,
                    elem: g.elem.clone(),
                }),
                es if !es.is_empty()
                    && es.len() as i64 <= MAX_WIDTH
                    && es.iter().all(|&e| under_ifs_only(ctx, l, e)) =>
                {
                    out.push(Role::Filter {
                        elem: g.elem.clone(),
                        width: es.len() as i64,
                    })
                }
                [] => return Err("a collect generator is never fed".into()),
                es if es.len() as i64 > MAX_WIDTH => {
                    return Err(format!(
                        "a collect generator is fed from {} places (at most {MAX_WIDTH} in a kernel)",
                        es.len()
                    ))
                }
                _ => {
                    return Err(
                        "a collect generator is fed inside a nested loop (a flatMap, whose output positions a kernel does not know)"
                            .into(),
                    )
                }
            },
            GenKind::Scan(m) if Monoid::supports(&g.elem) => {
                let [e] = emits.as_slice() else {
                    return Err("a scan generator is fed from several places or none".into());
                };
                if ctx.op(*e).parent != Some(body) {
                    return Err("a scan generator is fed under a condition or in a nested loop".into());
                }
                out.push(Role::Scan {
                    emit: *e,
                    m,
                    elem: g.elem.clone(),
                });
            }
            GenKind::Reduce(m) if Monoid::supports(&g.elem) => {
                if !emits
                    .iter()
                    .all(|&e| reduce_emit_ok(ctx, body, e, m, &g.elem))
                {
                    return Err("a reduce generator is fed where a kernel cannot combine it (in a nested loop with other effects)".into());
                }
                out.push(Role::Reduce {
                    m,
                    elem: g.elem.clone(),
                });
            }
            GenKind::Scan(_) | GenKind::Reduce(_) => {
                return Err(format!(
                    "no kernel combines '{}' with this generator's operator",
                    g.elem
                ))
            }
            _ => {
                return Err(
                    "it has a bucket generator of collects (kernels group only buckets of reduces by scalar keys)".into(),
                )
            }
        }
    }
    Ok(out)
}

/// Whether every op nested in `l` can run in a kernel thread (`Err`: the
/// first that cannot, and why), and the values from outside `l` that they
/// read. `own` holds arrays from outside that the body may load and store
/// (an indexed update's destination, [`update`]; a chunked scan's arrays,
/// [`chunks`]); they are not captures.
/// With `flat`, loops nested in `outer` may feed `outer`'s generators (a
/// flatMap, [`flat`]), and the loops `flat` holds may be collects (each
/// makes a row of a collect of vectors, [`flat::row_loop`]).
/// The collect loops of `allocs` ([`scratch`]) may be nested in it, and
/// their vectors read.
fn body_ok(
    ctx: &Context,
    outer: OpId,
    l: OpId,
    captures: &mut Vec<ValueId>,
    own: &[ValueId],
    flat: Option<&[OpId]>,
    allocs: &[OpId],
) -> Result<(), String> {
    let scratch_vec = |v: ValueId| ctx.def_op(v).is_some_and(|d| allocs.contains(&d));
    for op in ctx.walk_nested(l) {
        let name = ctx.op_name(op);
        let ok = name.starts_with("arith.")
            || (allocs.contains(&op))
            || (matches!(name, "vec.get" | "vec.len") && scratch_vec(ctx.operand(op, 0)))
            || (matches!(
                name,
                "arr.load" | "arr.store" | "gpu.atomic_rmw" | "gpu.atomic_cas"
            ) && own.contains(&ctx.operand(op, 0)))
            || matches!(
                name,
                "scf.if"
                    | "scf.for"
                    | "scf.while"
                    | "scf.yield"
                    | "scf.condition"
                    | "scf.assert"
                    | "gen.end"
            )
            || (matches!(
                name,
                "vec.get" | "vec.len" | "mat.get" | "mat.rows" | "mat.cols"
            ) && (!ctx
                .value_block(ctx.operand(op, 0))
                .is_some_and(|b| ctx.block_in_op(b, outer))
                || row_of_capture(ctx, outer, ctx.operand(op, 0))))
            || (name == "mat.row" && row_of_capture(ctx, outer, ctx.result(op, 0)))
            || (matches!(name, "gen.emit" | "gen.running")
                && gen::handle_owner(ctx, ctx.operand(op, 0))
                    .is_some_and(|o| o == l || ctx.is_ancestor(outer, o)))
            || (name == gen::LOOP
                && op != outer
                && (flat.is_some_and(|rows| rows.contains(&op))
                    || roles(ctx, op)
                        .is_ok_and(|r| r.iter().all(|x| matches!(x, Role::Reduce { .. })))));
        if !ok {
            return Err(if name == gen::LOOP {
                "its body holds a loop that is neither a reduction nor a collect that a thread keeps in scratch memory (a dense collect of scalars that only vec.get and vec.len read, its size computed at the top of the body without stores, calls or while loops)".into()
            } else if matches!(
                name,
                "vec.get" | "vec.len" | "mat.get" | "mat.rows" | "mat.cols"
            ) {
                format!("its body reads with '{name}' a value built inside the loop (a kernel thread does not allocate)")
            } else if matches!(name, "gen.emit" | "gen.running") {
                "its body feeds a generator of a loop around it".into()
            } else if name == "func.call" {
                "its body calls a function that could not be inlined (a recursive one)".into()
            } else {
                format!("its body holds '{name}', which no kernel runs")
            });
        }
        // Nested loops may only emit to their own handles.
        if name == "gen.emit" {
            let owner = gen::handle_owner(ctx, ctx.operand(op, 0));
            let mut p = ctx.parent_op(op);
            while let Some(q) = p {
                if ctx.is(q, gen::LOOP) {
                    if Some(q) != owner && !(flat.is_some() && owner == Some(outer)) {
                        return Err("a nested loop feeds a generator of an enclosing loop".into());
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
            if inside || captures.contains(&v) || own.contains(&v) {
                continue;
            }
            let t = ctx.ty(v);
            if !(scalar(t)
                || matches!(t, Type::Vec(e) | Type::Mat(e) if scalar(e))
                || nested_elem(t).is_some())
            {
                return Err(format!(
                    "its body reads a value of type '{t}' from outside (kernels take scalars, vectors and matrices of scalars, and vectors of vectors of scalars)"
                ));
            }
            captures.push(v);
        }
    }
    // A captured vector may only be read by vec.get / vec.len, a captured
    // matrix by mat.get / mat.rows / mat.cols (see [`kernel::mat_reads_to_arr`]),
    // and the rows of a captured nested vector only by vec.get / vec.len
    // ([`kernel::nest_reads_to_arr`]).
    let reads_only = captures.iter().all(|&v| {
        let rows_read =
            |op: OpId| !ctx.is(op, "vec.get") || row_of_capture(ctx, outer, ctx.result(op, 0));
        let reads: &[&str] = match ctx.ty(v) {
            Type::Vec(_) => &["vec.get", "vec.len"],
            Type::Mat(_) => &["mat.get", "mat.rows", "mat.cols", "mat.row"],
            _ => return true,
        };
        let nested = nested_elem(ctx.ty(v)).is_some();
        ctx.uses(v).iter().all(|u| {
            !ctx.block_in_op(ctx.op(u.op).parent.unwrap_or(ctx.top), outer)
                || (u.index == 0
                    && reads.contains(&ctx.op_name(u.op))
                    && (!nested || rows_read(u.op)))
        })
    });
    if reads_only {
        Ok(())
    } else {
        Err("its body uses a vector or matrix from outside other than by reading elements and sizes".into())
    }
}

/// Whether `v` is a row (or, `{transposed}`, a column) of a matrix from
/// outside `outer`, `mat.row %m, %i`, or a row of a nested vector from
/// outside, `vec.get %vs, %i`, that only `vec.get` and `vec.len` read: in
/// a kernel these become reads of the device buffer of the matrix's or the
/// rows' entries at computed indices ([`kernel::mat_reads_to_arr`],
/// [`kernel::nest_reads_to_arr`]), and no row is built.
fn row_of_capture(ctx: &Context, outer: OpId, v: ValueId) -> bool {
    let m = if let Some(row) = ctx.def_op_named(v, "mat.row") {
        ctx.operand(row, 0)
    } else if let Some(get) = ctx.def_op_named(v, "vec.get") {
        let vs = ctx.operand(get, 0);
        if nested_elem(ctx.ty(vs)).is_none() {
            return false;
        }
        vs
    } else {
        return false;
    };
    !ctx.value_block(m)
        .is_some_and(|b| ctx.block_in_op(b, outer))
        && ctx
            .uses(v)
            .iter()
            .all(|u| u.index == 0 && matches!(ctx.op_name(u.op), "vec.get" | "vec.len"))
}

/// How loop `l` becomes kernels, or why it stays on the host (the text of
/// a `--remarks=gpu` remark).
fn plan(ctx: &Context, l: OpId) -> Result<Plan, String> {
    let roles = roles(ctx, l)?;
    let own = arrays::own_arrays(ctx, l)?;
    let mut captures = Vec::new();
    let allocs = scratch::candidates(ctx, l);
    body_ok(ctx, l, l, &mut captures, &own, None, &allocs)?;
    let running = running::generators(ctx, l, &roles).ok_or_else(|| {
        "its body reads a scan's running value in a way the scan kernels do not provide".to_string()
    })?;
    if !running.is_empty() && own.iter().any(|&a| arrays::loads_and_stores(ctx, l, a)) {
        return Err("its body loads and stores one array, and its scan is read back (the running kernels run the body twice)".into());
    }
    // The arrays are captured: device buffers in the kernels.
    captures.extend(own);
    Ok(Plan {
        roles,
        running,
        captures,
        allocs,
    })
}

/// A fresh kernel name `<f>_k<seq>`. A quoted host name (`@"a b"`) gives
/// its characters that PTX identifiers lack as `_`: a kernel's name is a
/// PTX symbol.
fn kernel_name(ctx: &Context, f: OpId, seq: &mut u32) -> String {
    let base: String = dialects::func::func_name(ctx, f)
        .unwrap_or("f")
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '_' | '$') {
                c
            } else {
                '_'
            }
        })
        .collect();
    let base = if base.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_') {
        base
    } else {
        format!("f{base}")
    };
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

use dialects::arith::build_binop as binop;

use dialects::arith::build_cmpi as cmpi;

fn select(b: &mut Builder, c: ValueId, x: ValueId, y: ValueId) -> ValueId {
    let t = b.ctx.ty(x).clone();
    b.op1("arith.select", &[c, x, y], t, vec![])
}

/// `gpu.alloc(len) : arr<elem>`, recorded in `dev` for the final deallocs.
fn dalloc(b: &mut Builder, dev: &mut Vec<ValueId>, len: ValueId, elem: Type) -> ValueId {
    let d = gpu::alloc(b, len, elem);
    dev.push(d);
    d
}

/// [`dalloc`] of a buffer the kernels write in full before anything reads
/// it (`{uninit}`: not cleared on the device).
fn dalloc_written(b: &mut Builder, dev: &mut Vec<ValueId>, len: ValueId, elem: Type) -> ValueId {
    let d = gpu::alloc_uninit(b, len, elem);
    dev.push(d);
    d
}

/// Device buffers of one generator on the host.
struct HostBufs {
    /// Collect / filter values / scan values (length `n`), or reduce partials.
    main: Option<ValueId>,
    /// Filter flags.
    flags: Option<ValueId>,
    /// Block sums, their exclusive scan and the total (scan and filter).
    sums: Option<(ValueId, ValueId, ValueId)>,
    /// A reduce's result (length 1).
    res: Option<ValueId>,
}

/// Where the captures that take several kernel parameters stand among
/// the kernel arguments of [`kernel_captures`] (the position of the first).
#[derive(Default)]
pub(super) struct Shapes {
    /// Matrices: their row-major entries, rows and columns.
    pub mats: Vec<usize>,
    /// Nested vectors (`vec<vec<T>>` of scalars): their entries and row
    /// ends (`gpu.pack_rows`).
    pub nests: Vec<usize>,
}

/// The kernel arguments standing for `p`'s captures, their kernel
/// parameter types, and the positions of the captures that take several
/// parameters: a captured vector becomes a device buffer; a captured
/// matrix, its row-major entries in a device buffer followed by its rows
/// and columns (three kernel parameters); a captured nested vector, its
/// entries and its row ends in two device buffers (it stands twice in the
/// arguments; [`captures_to_device`] packs it once, and the kernel body's
/// value map sends it to the row ends, whose `arr.len` is its length).
fn kernel_captures(
    ctx: &mut Context,
    l: OpId,
    captures: &[ValueId],
) -> (Vec<ValueId>, Vec<Type>, Shapes) {
    let mut caps = Vec::new();
    let mut cap_types = Vec::new();
    let mut shapes = Shapes::default();
    for &v in captures {
        match ctx.ty(v).clone() {
            Type::Vec(e) => {
                if let Some(s) = nested_elem(ctx.ty(v)) {
                    shapes.nests.push(caps.len());
                    caps.extend([v, v]);
                    cap_types.extend([Type::arr(s), Type::arr(Type::Index)]);
                    continue;
                }
                caps.push(v);
                cap_types.push(Type::arr((*e).clone()));
            }
            Type::Mat(e) => {
                let mut b = Builder::before(ctx, l);
                let r = b.op1("mat.rows", &[v], Type::Index, vec![]);
                let c = b.op1("mat.cols", &[v], Type::Index, vec![]);
                shapes.mats.push(caps.len());
                caps.extend([v, r, c]);
                cap_types.extend([Type::arr((*e).clone()), Type::Index, Type::Index]);
            }
            t => {
                caps.push(v);
                cap_types.push(t);
            }
        }
    }
    (caps, cap_types, shapes)
}

/// `T` when `t` is `vec<vec<T>>` with `T` a scalar (a nested vector a
/// kernel reads through `gpu.pack_rows`'s buffers).
pub(super) fn nested_elem(t: &Type) -> Option<Type> {
    match t {
        Type::Vec(r) => match &**r {
            Type::Vec(e) if scalar(e) => Some((**e).clone()),
            _ => None,
        },
        _ => None,
    }
}

/// The host's first values for an offloaded loop of size `n`.
struct HostStart {
    zero: ValueId,
    one: ValueId,
    /// The block size.
    blk: ValueId,
    /// `min(max(ceildiv(n, B), 1), max_grid)` blocks.
    grid: ValueId,
}

/// Checks `n >= 0` and computes the launch shape.
fn host_start(b: &mut Builder, n: ValueId, opts: &GpuOptions) -> HostStart {
    let zero = idx(b, 0);
    let nonneg = cmpi(b, "sge", n, zero);
    scf::build_assert(b, nonneg, "negative loop size");
    let blk = idx(b, opts.block);
    let one = idx(b, 1);
    let bm1 = idx(b, opts.block - 1);
    let t = binop(b, "arith.addi", n, bm1);
    let want = binop(b, "arith.divsi", t, blk);
    let want = binop(b, "arith.maxi", want, one);
    let cap = idx(b, opts.max_grid);
    let grid = binop(b, "arith.mini", want, cap);
    HostStart {
        zero,
        one,
        blk,
        grid,
    }
}

/// Pushes the launch argument of each capture ([`kernel_captures`]) onto
/// `args`: vectors and matrices copied into fresh device buffers (recorded
/// in `dev`), nested vectors packed into two (`gpu.pack_rows`), scalars as
/// they are.
fn captures_to_device(
    b: &mut Builder,
    caps: &[ValueId],
    dev: &mut Vec<ValueId>,
    args: &mut Vec<ValueId>,
) {
    for (c, &v) in caps.iter().enumerate() {
        match b.ctx.ty(v).clone() {
            Type::Vec(_) if nested_elem(b.ctx.ty(v)).is_some() => {
                // The second of its two arguments was pushed with the first.
                if c > 0 && caps[c - 1] == v {
                    continue;
                }
                let (d, e) = gpu::pack_rows(b, v);
                dev.extend([d, e]);
                args.extend([d, e]);
            }
            Type::Vec(e) => {
                let len = b.op1("vec.len", &[v], Type::Index, vec![]);
                let d = dalloc(b, dev, len, (*e).clone());
                gpu::memcpy(b, d, v);
                args.push(d);
            }
            Type::Mat(e) => {
                let len = binop(b, "arith.muli", caps[c + 1], caps[c + 2]);
                let d = dalloc(b, dev, len, (*e).clone());
                gpu::memcpy(b, d, v);
                args.push(d);
            }
            Type::Arr(e) => {
                let len = arr::len(b, v);
                let d = dalloc(b, dev, len, (*e).clone());
                gpu::memcpy(b, d, v);
                args.push(d);
            }
            _ => args.push(v),
        }
    }
}

fn offload(ctx: &mut Context, f: OpId, l: OpId, p: &Plan, opts: &GpuOptions, seq: &mut u32) -> u64 {
    if !p.running.is_empty() {
        return running::offload(ctx, f, l, p, opts, seq);
    }
    let n = gen::size(ctx, l);
    let inits = gen::inits(ctx, l);
    let ordered = p.roles.iter().any(Role::ordered);
    let reduces: Vec<(Monoid, Type)> = p
        .roles
        .iter()
        .filter_map(|r| match r {
            Role::Reduce { m, elem } => Some((*m, elem.clone())),
            _ => None,
        })
        .collect();
    let ords: Vec<scan::Ordered> = p
        .roles
        .iter()
        .filter_map(|r| match r {
            Role::Scan { m, elem, .. } => Some(scan::Ordered {
                m: *m,
                ty: elem.clone(),
                filter: None,
            }),
            Role::Filter { elem, width } => Some(scan::Ordered {
                m: Monoid::Add,
                ty: Type::Index,
                filter: Some((elem.clone(), *width)),
            }),
            _ => None,
        })
        .collect();
    let k_main = kernel_name(ctx, f, seq);
    let k_comb = (!reduces.is_empty()).then(|| kernel_name(ctx, f, seq));
    let k_sums = ordered.then(|| kernel_name(ctx, f, seq));
    let k_back = ordered.then(|| kernel_name(ctx, f, seq));

    let (caps, cap_types, shapes) = kernel_captures(ctx, l, &p.captures);
    // Kernels first (they only need types).
    if ordered {
        scan::main_kernel(
            ctx, f, &k_main, l, &p.roles, &caps, &cap_types, &p.allocs, opts.block,
        );
    } else {
        kernel::main_kernel(
            ctx, f, &k_main, l, &p.roles, &caps, &cap_types, &p.allocs, opts.block,
        );
    }
    if let Some(k) = ctx.lookup_symbol(&k_main) {
        kernel::shaped_reads_to_arr(ctx, k, &shapes);
    }
    if let Some(k) = &k_comb {
        kernel::combine_kernel(ctx, f, k, &reduces, opts.block);
    }
    if let (Some(ks), Some(ka)) = (&k_sums, &k_back) {
        scan::sums_kernel(ctx, f, ks, &ords, opts.block);
        scan::add_back_kernel(ctx, f, ka, &ords);
    }

    // The host side.
    let mut b = Builder::before(ctx, l);
    // The most elements each nested collect holds in any iteration.
    let sizes = (!p.allocs.is_empty()).then(|| scratch::max_sizes(&mut b, l, &p.allocs));
    let HostStart {
        zero,
        one,
        blk,
        grid,
    } = host_start(&mut b, n, opts);
    let mut dev: Vec<ValueId> = Vec::new();
    let mut args = vec![n];
    captures_to_device(&mut b, &caps, &mut dev, &mut args);
    let args_of_caps = args[1..].to_vec();
    let mut hb = Vec::new();
    for r in &p.roles {
        let mut h = HostBufs {
            main: None,
            flags: None,
            sums: None,
            res: None,
        };
        let sums = |b: &mut Builder, dev: &mut Vec<ValueId>, ty: Type| {
            (
                dalloc(b, dev, grid, ty.clone()),
                dalloc(b, dev, grid, ty.clone()),
                dalloc(b, dev, one, ty),
            )
        };
        // Every iteration stores its collect or scan element, every block
        // its partial, and the combine kernel the result.
        match r {
            Role::Collect { elem, .. } => {
                h.main = Some(dalloc_written(&mut b, &mut dev, n, elem.clone()))
            }
            Role::Reduce { elem, .. } => {
                h.main = Some(dalloc_written(&mut b, &mut dev, grid, elem.clone()));
                h.res = Some(dalloc_written(&mut b, &mut dev, one, elem.clone()));
            }
            Role::Filter { elem, width } => {
                // One slot per emit and iteration; the slot count must not
                // wrap (the kernels' slot indices are unchecked).
                let slots = if *width == 1 {
                    n
                } else {
                    let most = idx(&mut b, i64::MAX / width);
                    let fits = cmpi(&mut b, "sle", n, most);
                    scf::build_assert(&mut b, fits, "loop too large for the device");
                    let w = idx(&mut b, *width);
                    binop(&mut b, "arith.muli", n, w)
                };
                h.main = Some(dalloc(&mut b, &mut dev, slots, elem.clone()));
                h.flags = Some(dalloc(&mut b, &mut dev, slots, Type::Index));
                h.sums = Some(sums(&mut b, &mut dev, Type::Index));
            }
            Role::Scan { elem, .. } => {
                h.main = Some(dalloc_written(&mut b, &mut dev, n, elem.clone()));
                h.sums = Some(sums(&mut b, &mut dev, elem.clone()));
            }
        }
        hb.push(h);
    }
    // Main kernel arguments: role order for ordered loops; collects, then
    // reduce partials otherwise (see the kernels' parameter lists).
    if ordered {
        for (r, h) in p.roles.iter().zip(&hb) {
            args.push(h.main.expect("main buffer"));
            match r {
                Role::Filter { .. } => {
                    args.push(h.flags.expect("flags"));
                    args.push(h.sums.expect("sums").0);
                }
                Role::Scan { .. } => args.push(h.sums.expect("sums").0),
                _ => {}
            }
        }
    } else {
        for (r, h) in p.roles.iter().zip(&hb) {
            if let Role::Collect { .. } = r {
                args.push(h.main.expect("out"));
            }
        }
        for (r, h) in p.roles.iter().zip(&hb) {
            if let Role::Reduce { .. } = r {
                args.push(h.main.expect("partials"));
            }
        }
    }
    if let Some((_, ms)) = &sizes {
        let threads = binop(&mut b, "arith.muli", grid, blk);
        scratch::host_buffers(&mut b, &p.allocs, ms, threads, &mut dev, &mut args);
    }
    gpu::launch_func(&mut b, &k_main, grid, blk, &args);
    if let Some(k) = &k_comb {
        let mut a = vec![grid];
        let reds: Vec<&HostBufs> = p
            .roles
            .iter()
            .zip(&hb)
            .filter(|(r, _)| matches!(r, Role::Reduce { .. }))
            .map(|(_, h)| h)
            .collect();
        a.extend(reds.iter().map(|h| h.main.expect("partials")));
        a.extend(reds.iter().map(|h| h.res.expect("result")));
        gpu::launch_func(&mut b, k, one, blk, &a);
    }
    // A filter's output buffer and length, by generator.
    let mut kept: HashMap<usize, (ValueId, ValueId)> = HashMap::new();
    if let (Some(ks), Some(ka)) = (&k_sums, &k_back) {
        let mut a = vec![grid];
        for (j, r) in p.roles.iter().enumerate() {
            let (s, pre, tot) = match hb[j].sums {
                Some(x) => x,
                None => continue,
            };
            let init = match r {
                Role::Scan { m, elem, .. } => match inits.get(j).copied().flatten() {
                    Some(i) => i,
                    None => {
                        let id = gen::lower::exact_identity(*m, elem).expect("checked monoid");
                        b.constant(id, elem)
                    }
                },
                _ => zero,
            };
            a.extend([s, pre, tot, init]);
        }
        gpu::launch_func(&mut b, ks, one, blk, &a);
        let mut a = vec![n];
        for (j, r) in p.roles.iter().enumerate() {
            let h = &hb[j];
            match r {
                Role::Scan { .. } => a.extend([h.main.expect("sc"), h.sums.expect("sums").1]),
                Role::Filter { elem, .. } => {
                    let (_, pre, tot) = h.sums.expect("sums");
                    let c = arr::alloc(&mut b, one, Type::Index);
                    gpu::memcpy(&mut b, c, tot);
                    let count = arr::load(&mut b, c, zero);
                    arr::free(&mut b, c);
                    let out = dalloc_written(&mut b, &mut dev, count, elem.clone());
                    kept.insert(j, (out, count));
                    a.extend([h.main.expect("vals"), h.flags.expect("flags"), pre, out]);
                }
                _ => {}
            }
        }
        gpu::launch_func(&mut b, ka, grid, blk, &a);
    }
    // Copy the results back.
    let mut results = Vec::new();
    let back = |b: &mut Builder, d: ValueId, len: ValueId, elem: &Type| {
        let h = arr::alloc(b, len, elem.clone());
        gpu::memcpy(b, h, d);
        arr::to_vec(b, h)
    };
    for (j, role) in p.roles.iter().enumerate() {
        let h = &hb[j];
        match role {
            Role::Collect { elem, .. } | Role::Scan { elem, .. } => {
                results.push(back(&mut b, h.main.expect("out"), n, elem));
            }
            Role::Filter { elem, .. } => {
                let (out, count) = kept[&j];
                results.push(back(&mut b, out, count, elem));
            }
            Role::Reduce { m, elem } => {
                let hh = arr::alloc(&mut b, one, elem.clone());
                gpu::memcpy(&mut b, hh, h.res.expect("result"));
                let v = arr::load(&mut b, hh, zero);
                arr::free(&mut b, hh);
                let v = match inits.get(j).copied().flatten() {
                    Some(i) => binop(&mut b, m.combine_op(elem).expect("checked monoid"), i, v),
                    None => v,
                };
                results.push(v);
            }
        }
    }
    arrays::copy_back_stored(&mut b, l, &caps, &args_of_caps);
    for d in dev {
        gpu::dealloc(&mut b, d);
    }
    ctx.replace_op(l, &results);
    let kernels = 1 + k_comb.is_some() as u64 + 2 * ordered as u64;
    kernels + offload_bounds(ctx, f, sizes.map(|(mx, _)| mx), opts, seq)
}

/// Offloads the loop of scratch size bounds ([`scratch::max_sizes`]) that
/// the offload of a loop built before it, if any: its body is part of that
/// loop's, which kernels run, so it becomes kernels in turn (or stays on
/// the host with a remark). Returns the kernels built.
fn offload_bounds(
    ctx: &mut Context,
    f: OpId,
    bounds: Option<OpId>,
    opts: &GpuOptions,
    seq: &mut u32,
) -> u64 {
    let Some(mx) = bounds else {
        return 0;
    };
    match plan(ctx, mx) {
        Ok(q) => offload(ctx, f, mx, &q, opts, seq),
        Err(why) => {
            ir::remarks::emit("gpu", ctx.loc(mx), format!("loop left on the host: {why}"));
            0
        }
    }
}
