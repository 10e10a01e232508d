//! The `gpu` dialect: kernels, their launches and device memory (IR-SPEC §3
//! "gpu"; the names and meanings of MLIR's `gpu` dialect).
//!
//! A *kernel* is a `func.func` with the unit attribute `gpu.kernel` and no
//! results. Inside kernels:
//!
//! | op | operands -> results | meaning |
//! |---|---|---|
//! | `gpu.thread_id/block_id/block_dim/grid_dim {dimension}` | `-> index` | the thread's position; `"y"`/`"z"` are 0 (ids) or 1 (dims): launches are 1-D |
//! | `gpu.barrier` | | every thread of the block waits |
//! | `gpu.shuffle(x, offset, width) {mode}` | `T, i32, i32 -> T, i1` | `down`: lane `l + offset`, `xor`: lane `l ^ offset`, `idx`: lane `offset`, within segments of `width` lanes of a warp of 32; the `i1` says whether that lane exists (else `x` itself comes back) |
//! | `gpu.workgroup_alloc {size}` | `-> arr<T>` | one zeroed buffer of `size` elements per block (shared memory) |
//! | `gpu.atomic_rmw(a, i, x) {kind}` | `arr<T>, index, T -> T` | `a[i] = kind(a[i], x)` atomically, returns the old value (`add`, `min`, `max`) |
//! | `gpu.atomic_cas(a, i, cmp, x)` | `arr<T>, index, T, T -> T` | atomically: `old = a[i]`; `a[i] = x` where `old == cmp`; returns `old` (integer `T`: `i32`, `i64`, `index`; LLVM's `cmpxchg`) |
//!
//! On the host:
//!
//! | op | operands -> results | meaning |
//! |---|---|---|
//! | `gpu.launch_func(grid, block, args...) {kernel = @k}` | `index, index, ... ->` | runs `@k` on `grid` blocks of `block` threads |
//! | `gpu.alloc(n)` | `index -> arr<T>` | a zeroed device buffer (`{uninit}`: undefined until stored) |
//! | `gpu.memcpy(dst, src)` | `arr<T>, arr<T> \| vec<T> \| mat<T> ->` | copies all of `src` (a matrix: its row-major entries) into `dst` (equal lengths) |
//! | `gpu.dealloc(a)` | `arr<T> ->` | releases a device buffer |
//! | `gpu.unpack_rows(data, ends)` | `arr<T>, arr<index> -> vec<vec<T>>` | the nested vector whose rows are `data[ends[i-1]..ends[i]]` (from 0 for the first), read back from device buffers: `gpu.pack_rows`'s inverse; faults unless the ends never decrease and the last is `len(data)` (0 without rows) |
//! | `gpu.pack_rows(vs)` | `vec<vec<T>> -> arr<T>, arr<index>` | two fresh device buffers: the entries of `vs`'s rows one row after another, and the row ends (`ends[i]` is the number of entries in rows `0..=i`, so row `i` is `data[ends[i-1]..ends[i]]`, from 0 for the first, and `arr.len(ends)` is the number of rows) |
//!
//! **Where barriers stand.** `gpu.barrier`, `gpu.shuffle` and
//! `gpu.workgroup_alloc` must sit directly in the kernel's body, not under
//! `scf.if`/`scf.for` or any other region, so that every thread of a block
//! reaches the same barriers and shuffles in the same order (no divergent
//! control flow around them). The verifier enforces it; the interpreter
//! ([`sim`]) relies on it to run the threads of a block in lockstep, and the
//! `gen` → `gpu` lowering only ever builds kernels of that shape.
//!
//! At run time (interpreter) device buffers are `arr` values; host and
//! device memory are not told apart.

pub mod sim;

use ir::spec::{Arity, OpSpec, Registry, Traits};
use ir::{Attribute, Builder, Context, OpId, Type, ValueId};

use crate::func::{func_name, function_type};

/// The unit attribute that marks a `func.func` as a kernel.
pub const KERNEL_ATTR: &str = "gpu.kernel";
/// Threads per warp.
pub const WARP: i64 = 32;
/// The largest block `gpu.launch_func` accepts (CUDA's limit).
pub const MAX_BLOCK: i64 = 1024;

/// Whether `f` is a `func.func` marked `gpu.kernel`.
pub fn is_kernel(ctx: &Context, f: OpId) -> bool {
    ctx.is(f, "func.func") && ctx.attr(f, KERNEL_ATTR).is_some()
}

/// The kernel function enclosing `op`, if any.
pub fn enclosing_kernel(ctx: &Context, op: OpId) -> Option<OpId> {
    let mut cur = ctx.parent_op(op);
    while let Some(p) = cur {
        if ctx.is(p, "func.func") {
            return is_kernel(ctx, p).then_some(p);
        }
        cur = ctx.parent_op(p);
    }
    None
}

/// Whether launch `launch` only reads its operand `index` (a device buffer):
/// the kernel's parameter is used by `arr.load` and `arr.len` alone, so no
/// thread writes it. `false` when the kernel cannot be found.
pub fn launch_only_reads(ctx: &Context, launch: OpId, index: usize) -> bool {
    let Some(k) = ctx
        .attr(launch, "kernel")
        .and_then(|a| a.as_symbol())
        .and_then(|n| ctx.lookup_symbol(n))
        .filter(|&k| is_kernel(ctx, k))
    else {
        return false;
    };
    // Operands 0 and 1 are the grid and the block.
    let Some(&p) = index
        .checked_sub(2)
        .and_then(|i| ctx.block_args(ctx.op_block(k, 0)).get(i))
    else {
        return false;
    };
    ctx.uses(p)
        .iter()
        .all(|u| (ctx.is(u.op, "arr.load") && u.index == 0) || ctx.is(u.op, "arr.len"))
}

// ----- builders --------------------------------------------------------------------

fn dim_attr(d: &str) -> Vec<(String, Attribute)> {
    vec![("dimension".to_string(), Attribute::Str(d.to_string()))]
}
/// `gpu.thread_id x`.
pub fn thread_id(b: &mut Builder) -> ValueId {
    b.op1("gpu.thread_id", &[], Type::Index, dim_attr("x"))
}
/// `gpu.block_id x`.
pub fn block_id(b: &mut Builder) -> ValueId {
    b.op1("gpu.block_id", &[], Type::Index, dim_attr("x"))
}
/// `gpu.block_dim x`.
pub fn block_dim(b: &mut Builder) -> ValueId {
    b.op1("gpu.block_dim", &[], Type::Index, dim_attr("x"))
}
/// `gpu.grid_dim x`.
pub fn grid_dim(b: &mut Builder) -> ValueId {
    b.op1("gpu.grid_dim", &[], Type::Index, dim_attr("x"))
}
/// `gpu.barrier`.
pub fn barrier(b: &mut Builder) {
    let st = b.state("gpu.barrier", &[], &[], vec![]);
    b.create_raw(st);
}
/// `gpu.shuffle(x, offset, width) {mode}`: `(value, valid)`; `offset` and
/// `width` are `i32`.
pub fn shuffle(
    b: &mut Builder,
    mode: &str,
    x: ValueId,
    offset: ValueId,
    width: ValueId,
) -> (ValueId, ValueId) {
    let t = b.ctx.ty(x).clone();
    let st = b.state(
        "gpu.shuffle",
        &[x, offset, width],
        &[t, Type::I1],
        vec![("mode".to_string(), Attribute::Str(mode.to_string()))],
    );
    let op = b.create_raw(st);
    (b.ctx.result(op, 0), b.ctx.result(op, 1))
}
/// `gpu.workgroup_alloc {size} : arr<elem>`.
pub fn workgroup_alloc(b: &mut Builder, size: i64, elem: Type) -> ValueId {
    let st = b.state(
        "gpu.workgroup_alloc",
        &[],
        &[Type::arr(elem)],
        vec![("size".to_string(), Attribute::int(size, Type::I64))],
    );
    let op = b.create_raw(st);
    b.ctx.result(op, 0)
}
/// `gpu.launch_func(grid, block, args...) {kernel = @name}`.
pub fn launch_func(b: &mut Builder, kernel: &str, grid: ValueId, block: ValueId, args: &[ValueId]) {
    let mut ops = vec![grid, block];
    ops.extend_from_slice(args);
    let st = b.state(
        "gpu.launch_func",
        &ops,
        &[],
        vec![(
            "kernel".to_string(),
            Attribute::SymbolRef(kernel.to_string()),
        )],
    );
    b.create_raw(st);
}
/// `gpu.alloc(n) : arr<elem>`.
pub fn alloc(b: &mut Builder, n: ValueId, elem: Type) -> ValueId {
    let st = b.state("gpu.alloc", &[n], &[Type::arr(elem)], vec![]);
    let op = b.create_raw(st);
    b.ctx.result(op, 0)
}
/// `gpu.alloc(n) {uninit} : arr<elem>`, for a buffer whose every element
/// kernels store before anything reads it: the device does not clear it
/// (the simulation faults on a read of an element never stored).
pub fn alloc_uninit(b: &mut Builder, n: ValueId, elem: Type) -> ValueId {
    let attrs = vec![(crate::arr::UNINIT.to_string(), ir::Attribute::Unit)];
    let st = b.state("gpu.alloc", &[n], &[Type::arr(elem)], attrs);
    let op = b.create_raw(st);
    b.ctx.result(op, 0)
}
/// Whether `gpu.alloc` op `op` leaves its elements undefined (`{uninit}`).
pub fn alloc_is_uninit(ctx: &Context, op: OpId) -> bool {
    ctx.attr(op, crate::arr::UNINIT).is_some()
}
/// `gpu.memcpy(dst, src)`.
pub fn memcpy(b: &mut Builder, dst: ValueId, src: ValueId) {
    let st = b.state("gpu.memcpy", &[dst, src], &[], vec![]);
    b.create_raw(st);
}
/// `gpu.pack_rows(vs)`: `(data, ends)`, the device buffers of the entries
/// of nested vector `vs : vec<vec<T>>` (`T` a scalar) and of its row ends.
pub fn pack_rows(b: &mut Builder, vs: ValueId) -> (ValueId, ValueId) {
    let elem = match b.ctx.ty(vs) {
        Type::Vec(r) => r.elem().cloned().unwrap_or(Type::I64),
        _ => Type::I64,
    };
    let st = b.state(
        "gpu.pack_rows",
        &[vs],
        &[Type::arr(elem), Type::arr(Type::Index)],
        vec![],
    );
    let op = b.create_raw(st);
    (b.ctx.result(op, 0), b.ctx.result(op, 1))
}
/// `gpu.unpack_rows(data, ends) : vec<vec<T>>` (see [`pack_rows`]).
pub fn unpack_rows(b: &mut Builder, data: ValueId, ends: ValueId) -> ValueId {
    let elem = b.ctx.ty(data).elem().cloned().unwrap_or(Type::I64);
    b.op1(
        "gpu.unpack_rows",
        &[data, ends],
        Type::vec(Type::vec(elem)),
        vec![],
    )
}
/// `gpu.dealloc(a)`.
pub fn dealloc(b: &mut Builder, a: ValueId) {
    let st = b.state("gpu.dealloc", &[a], &[], vec![]);
    b.create_raw(st);
}

// ----- verifiers -------------------------------------------------------------------

fn in_kernel(ctx: &Context, op: OpId) -> Result<OpId, String> {
    enclosing_kernel(ctx, op).ok_or_else(|| "must be nested in a 'gpu.kernel' function".to_string())
}

/// In a kernel and directly in its body (no divergent control flow around).
fn at_kernel_top(ctx: &Context, op: OpId) -> Result<(), String> {
    let k = in_kernel(ctx, op)?;
    if ctx.parent_op(op) != Some(k) {
        return Err(format!(
            "must stand directly in the kernel's body, not under '{}' (divergent control flow)",
            ctx.parent_op(op).map(|p| ctx.op_name(p)).unwrap_or("?")
        ));
    }
    Ok(())
}

fn verify_id(ctx: &Context, op: OpId) -> Result<(), String> {
    in_kernel(ctx, op)?;
    match ctx.attr(op, "dimension").and_then(|a| a.as_str()) {
        Some("x" | "y" | "z") => {}
        _ => return Err("needs attribute 'dimension' = \"x\", \"y\" or \"z\"".into()),
    }
    if *ctx.ty(ctx.result(op, 0)) != Type::Index {
        return Err("result must be 'index'".into());
    }
    Ok(())
}

fn verify_barrier(ctx: &Context, op: OpId) -> Result<(), String> {
    at_kernel_top(ctx, op)
}

fn verify_shuffle(ctx: &Context, op: OpId) -> Result<(), String> {
    at_kernel_top(ctx, op)?;
    match ctx.attr(op, "mode").and_then(|a| a.as_str()) {
        Some("down" | "xor" | "idx") => {}
        _ => return Err("needs attribute 'mode' = \"down\", \"xor\" or \"idx\"".into()),
    }
    let t = ctx.ty(ctx.operand(op, 0));
    if !t.is_scalar() {
        return Err(format!("shuffled value must be a scalar, got '{t}'"));
    }
    for i in [1, 2] {
        if *ctx.ty(ctx.operand(op, i)) != Type::I32 {
            return Err(format!("operand #{i} must be 'i32'"));
        }
    }
    if ctx.ty(ctx.result(op, 0)) != t || *ctx.ty(ctx.result(op, 1)) != Type::I1 {
        return Err(format!("results must be '{t}' and 'i1'"));
    }
    Ok(())
}

fn arr_elem(ctx: &Context, v: ValueId, what: &str) -> Result<Type, String> {
    match ctx.ty(v) {
        Type::Arr(t) if t.is_scalar() => Ok((**t).clone()),
        t => Err(format!("{what} must be an 'arr' of scalars, got '{t}'")),
    }
}

fn verify_workgroup_alloc(ctx: &Context, op: OpId) -> Result<(), String> {
    at_kernel_top(ctx, op)?;
    match ctx.attr(op, "size").and_then(|a| a.as_int()) {
        Some(n) if (0..=1 << 16).contains(&n) => {}
        _ => return Err("needs attribute 'size' between 0 and 65536".into()),
    }
    arr_elem(ctx, ctx.result(op, 0), "result").map(|_| ())
}

/// The `gpu.atomic_rmw` kind that computes the `arith` op `name` on `t`
/// exactly in every order of the updates (`"add"`, `"min"`, `"max"`), if
/// any: integer addition (wrapping), minimum and maximum on `i32`, `i64`
/// and `index`, which are associative and commutative exactly. A float
/// addition is not (its result depends on the order), and no atomic
/// multiplies.
pub fn exact_atomic(name: &str, t: &Type) -> Option<&'static str> {
    if !matches!(t, Type::I32 | Type::I64 | Type::Index) {
        return None;
    }
    match name {
        "arith.addi" => Some("add"),
        "arith.mini" | "arith.minsi" => Some("min"),
        "arith.maxi" | "arith.maxsi" => Some("max"),
        _ => None,
    }
}

fn verify_atomic(ctx: &Context, op: OpId) -> Result<(), String> {
    let t = arr_elem(ctx, ctx.operand(op, 0), "operand #0")?;
    if *ctx.ty(ctx.operand(op, 1)) != Type::Index {
        return Err("operand #1 must be 'index'".into());
    }
    if *ctx.ty(ctx.operand(op, 2)) != t || *ctx.ty(ctx.result(op, 0)) != t {
        return Err(format!("value and result must be '{t}'"));
    }
    // The element types a hardware atomic computes exactly: not `i1`, and
    // not the types the backends carry in a wider register (`f16`, `bf16`,
    // integers of other widths), whose results need rounding or extending.
    let atomic = matches!(
        t,
        Type::I8 | Type::I16 | Type::I32 | Type::I64 | Type::Index | Type::F32 | Type::F64
    );
    match ctx.attr(op, "kind").and_then(|a| a.as_str()) {
        Some("add" | "min" | "max") if atomic => Ok(()),
        _ => Err(
            "needs attribute 'kind' = \"add\", \"min\" or \"max\" on i8, i16, i32, i64, index, f32 or f64"
                .into(),
        ),
    }
}

fn verify_cas(ctx: &Context, op: OpId) -> Result<(), String> {
    let t = arr_elem(ctx, ctx.operand(op, 0), "operand #0")?;
    if *ctx.ty(ctx.operand(op, 1)) != Type::Index {
        return Err("operand #1 must be 'index'".into());
    }
    if !matches!(t, Type::I32 | Type::I64 | Type::Index) {
        return Err(format!(
            "compares and swaps 'i32', 'i64' or 'index' elements, not '{t}'"
        ));
    }
    for v in [ctx.operand(op, 2), ctx.operand(op, 3), ctx.result(op, 0)] {
        if *ctx.ty(v) != t {
            return Err(format!("compared, new and old values must be '{t}'"));
        }
    }
    Ok(())
}

fn not_in_kernel(ctx: &Context, op: OpId) -> Result<(), String> {
    if enclosing_kernel(ctx, op).is_some() {
        return Err("is a host op and cannot stand in a kernel".into());
    }
    Ok(())
}

fn verify_launch(ctx: &Context, op: OpId) -> Result<(), String> {
    not_in_kernel(ctx, op)?;
    for i in [0, 1] {
        if *ctx.ty(ctx.operand(op, i)) != Type::Index {
            return Err(format!("operand #{i} (grid, block) must be 'index'"));
        }
    }
    let Some(name) = ctx.attr(op, "kernel").and_then(|a| a.as_symbol()) else {
        return Err("needs attribute 'kernel' = @name".into());
    };
    let Some(k) = ctx.lookup_symbol(name) else {
        return Err(format!("kernel '@{name}' is not defined"));
    };
    if !is_kernel(ctx, k) {
        return Err(format!("'@{name}' is not marked 'gpu.kernel'"));
    }
    let Some((ins, outs)) = function_type(ctx, k) else {
        return Err(format!("'@{name}' has no function type"));
    };
    if !outs.is_empty() {
        return Err(format!("kernel '@{name}' must not return values"));
    }
    let args = &ctx.operands(op)[2..];
    if args.len() != ins.len() {
        return Err(format!(
            "kernel '@{name}' takes {} arguments, got {}",
            ins.len(),
            args.len()
        ));
    }
    for (i, (&a, t)) in args.iter().zip(ins).enumerate() {
        if ctx.ty(a) != t {
            return Err(format!(
                "argument {i} has type '{}', kernel '@{name}' expects '{t}'",
                ctx.ty(a)
            ));
        }
        if !(t.is_scalar() || matches!(t, Type::Arr(e) if e.is_scalar())) {
            return Err(format!(
                "kernel argument {i} must be a scalar or an 'arr' of scalars"
            ));
        }
    }
    Ok(())
}

fn verify_alloc(ctx: &Context, op: OpId) -> Result<(), String> {
    not_in_kernel(ctx, op)?;
    if *ctx.ty(ctx.operand(op, 0)) != Type::Index {
        return Err("operand #0 must be 'index'".into());
    }
    arr_elem(ctx, ctx.result(op, 0), "result").map(|_| ())
}

fn verify_memcpy(ctx: &Context, op: OpId) -> Result<(), String> {
    not_in_kernel(ctx, op)?;
    let t = arr_elem(ctx, ctx.operand(op, 0), "destination")?;
    match ctx.ty(ctx.operand(op, 1)) {
        Type::Arr(s) | Type::Vec(s) | Type::Mat(s) if **s == t => Ok(()),
        s => Err(format!(
            "source must be 'arr<{t}>', 'vec<{t}>' or 'mat<{t}>', got '{s}'"
        )),
    }
}

fn verify_pack_rows(ctx: &Context, op: OpId) -> Result<(), String> {
    not_in_kernel(ctx, op)?;
    let t = match ctx.ty(ctx.operand(op, 0)) {
        Type::Vec(r) => match &**r {
            Type::Vec(e) if e.is_scalar() => (**e).clone(),
            _ => {
                return Err(format!(
                    "operand must be a 'vec<vec<T>>' of scalars, got '{}'",
                    ctx.ty(ctx.operand(op, 0))
                ))
            }
        },
        t => {
            return Err(format!(
                "operand must be a 'vec<vec<T>>' of scalars, got '{t}'"
            ))
        }
    };
    let d = arr_elem(ctx, ctx.result(op, 0), "result #0")?;
    if d != t {
        return Err(format!("result #0 must be 'arr<{t}>', got 'arr<{d}>'"));
    }
    if *ctx.ty(ctx.result(op, 1)) != Type::arr(Type::Index) {
        return Err(format!(
            "result #1 must be 'arr<index>', got '{}'",
            ctx.ty(ctx.result(op, 1))
        ));
    }
    Ok(())
}

fn verify_unpack_rows(ctx: &Context, op: OpId) -> Result<(), String> {
    not_in_kernel(ctx, op)?;
    let t = arr_elem(ctx, ctx.operand(op, 0), "operand #0")?;
    if *ctx.ty(ctx.operand(op, 1)) != Type::arr(Type::Index) {
        return Err(format!(
            "operand #1 must be 'arr<index>', got '{}'",
            ctx.ty(ctx.operand(op, 1))
        ));
    }
    let want = Type::vec(Type::vec(t));
    if *ctx.ty(ctx.result(op, 0)) != want {
        return Err(format!(
            "result must be '{want}', got '{}'",
            ctx.ty(ctx.result(op, 0))
        ));
    }
    Ok(())
}

fn verify_dealloc(ctx: &Context, op: OpId) -> Result<(), String> {
    not_in_kernel(ctx, op)?;
    arr_elem(ctx, ctx.operand(op, 0), "operand #0").map(|_| ())
}

/// Checks a kernel function: no results (called from `func.func`'s checks
/// through [`verify_kernel_func`]).
pub fn verify_kernel_func(ctx: &Context, f: OpId) -> Result<(), String> {
    if let Some((ins, outs)) = function_type(ctx, f) {
        if !outs.is_empty() {
            return Err(format!(
                "kernel '@{}' must not return values",
                func_name(ctx, f).unwrap_or("?")
            ));
        }
        for t in ins {
            if !(t.is_scalar() || matches!(t, Type::Arr(e) if e.is_scalar())) {
                return Err(format!(
                    "kernel parameters must be scalars or 'arr's of scalars, got '{t}'"
                ));
            }
        }
    }
    Ok(())
}

/// Registers the `gpu` ops.
pub fn register(r: &mut Registry) {
    let effect = Traits::READS | Traits::WRITES;
    for (name, summary) in [
        ("gpu.thread_id", "the thread's index in its block"),
        ("gpu.block_id", "the block's index in the grid"),
        ("gpu.block_dim", "threads per block"),
        ("gpu.grid_dim", "blocks in the grid"),
    ] {
        r.register(
            OpSpec::new(name, summary)
                .results(Arity::Exactly(1))
                .traits(Traits::PURE)
                .assembly_format("$dimension attr-dict")
                .infer(crate::util::infer_index)
                .verify(verify_id)
                .interpret(sim::interp_id),
        );
    }
    r.register(
        OpSpec::new(
            "gpu.barrier",
            "waits until every thread of the block arrives",
        )
        .traits(effect)
        .assembly_format("attr-dict")
        .verify(verify_barrier)
        .interpret(sim::interp_sync),
    );
    r.register(
        OpSpec::new("gpu.shuffle", "reads a value of another lane of the warp")
            .operands(Arity::Exactly(3))
            .results(Arity::Exactly(2))
            .traits(effect)
            .assembly_format("$mode operands attr-dict : type(first)")
            .infer(infer_shuffle)
            .verify(verify_shuffle)
            .interpret(sim::interp_sync),
    );
    r.register(
        OpSpec::new(
            "gpu.workgroup_alloc",
            "a buffer shared by the threads of a block",
        )
        .results(Arity::Exactly(1))
        .traits(Traits::ALLOCATES)
        .assembly_format("attr-dict : type(results)")
        .verify(verify_workgroup_alloc)
        .interpret(sim::interp_workgroup_alloc),
    );
    r.register(
        OpSpec::new("gpu.atomic_rmw", "atomic read-modify-write of one element")
            .operands(Arity::Exactly(3))
            .results(Arity::Exactly(1))
            .traits(effect)
            .assembly_format("$kind operands attr-dict : type(first)")
            .infer(crate::util::infer_elem)
            .verify(verify_atomic)
            .interpret(sim::interp_atomic),
    );
    r.register(
        OpSpec::new("gpu.atomic_cas", "atomic compare-and-swap of one element")
            .operands(Arity::Exactly(4))
            .results(Arity::Exactly(1))
            .traits(effect)
            .assembly_format("operands attr-dict : type(first)")
            .infer(crate::util::infer_elem)
            .verify(verify_cas)
            .interpret(sim::interp_cas),
    );
    r.register(
        OpSpec::new(
            "gpu.launch_func",
            "runs a kernel on a grid of thread blocks",
        )
        .operands(Arity::AtLeast(2))
        .traits(effect)
        .assembly_format("$kernel operands attr-dict : type(operands)")
        .verify(verify_launch)
        .interpret(sim::interp_launch),
    );
    r.register(
        OpSpec::new("gpu.alloc", "allocates a zeroed device buffer")
            .operands(Arity::Exactly(1))
            .results(Arity::Exactly(1))
            .traits(Traits::ALLOCATES)
            .assembly_format("operands attr-dict : type(results)")
            .verify(verify_alloc)
            .interpret(sim::interp_alloc),
    );
    r.register(
        OpSpec::new(
            "gpu.memcpy",
            "copies a buffer or vector into a buffer of equal length",
        )
        .operands(Arity::Exactly(2))
        .traits(effect)
        .assembly_format("operands attr-dict : type(operands)")
        .verify(verify_memcpy)
        .interpret(sim::interp_memcpy),
    );
    r.register(
        OpSpec::new(
            "gpu.pack_rows",
            "copies a nested vector into device buffers of its entries and row ends",
        )
        .operands(Arity::Exactly(1))
        .results(Arity::Exactly(2))
        .traits(Traits::ALLOCATES)
        .assembly_format("operands attr-dict : type(operands) -> type(results)")
        .verify(verify_pack_rows)
        .interpret(sim::interp_pack_rows),
    );
    r.register(
        OpSpec::new(
            "gpu.unpack_rows",
            "reads a nested vector back from device buffers of its entries and row ends",
        )
        .operands(Arity::Exactly(2))
        .results(Arity::Exactly(1))
        .traits(Traits::READS | Traits::ALLOCATES)
        .assembly_format("operands attr-dict : type(operands) -> type(results)")
        .verify(verify_unpack_rows)
        .interpret(sim::interp_unpack_rows),
    );
    r.register(
        OpSpec::new("gpu.dealloc", "releases a device buffer")
            .operands(Arity::Exactly(1))
            .traits(Traits::WRITES)
            .assembly_format("operands attr-dict : type(operands)")
            .verify(verify_dealloc)
            .interpret(sim::interp_dealloc),
    );
}

/// `gpu.shuffle`'s results: the value's type and the `i1` validity flag.
fn infer_shuffle(
    ts: &[Type],
    _: &[(String, ir::Attribute)],
) -> Option<smallvec::SmallVec<[Type; 2]>> {
    Some(smallvec::smallvec![ts.first()?.clone(), Type::I1])
}

/// The values that a `gpu.shuffle` in `mode` gives lane `lane` of a warp
/// whose lanes `0..present` exist: `(source lane, valid)`.
pub fn shuffle_source(mode: &str, lane: i64, offset: i64, width: i64, present: i64) -> (i64, bool) {
    let width = width.clamp(1, WARP);
    let base = lane - lane % width;
    let src = match mode {
        "down" => lane + offset,
        "xor" => lane ^ offset,
        _ => base + offset,
    };
    let ok = offset >= 0 && src >= base && src < base + width && src < present;
    if ok {
        (src, true)
    } else {
        (lane, false)
    }
}
