//! The `memref` dialect: MLIR's strided views of mutable memory, the
//! MLIR-spelled face of the `arr` level (issue 45, item 4).
//!
//! | op | custom form | effect |
//! |---|---|---|
//! | `memref.alloc` | `memref.alloc(%d0, ...) : memref<?x4xf32>` | allocates; one operand per `?` size |
//! | `memref.alloca` | as `alloc` | allocates (freed with the function's frame) |
//! | `memref.dealloc` | `memref.dealloc %m : memref<4xf32>` | frees the allocation |
//! | `memref.load` | `memref.load %m[%i, %j] : memref<?x?xf32>` | reads one element |
//! | `memref.store` | `memref.store %x, %m[%i, %j] : memref<?x?xf32>` | writes one element |
//! | `memref.atomic_rmw` | `memref.atomic_rmw addf %x, %m[%i] : (f32, memref<?xf32>) -> f32` | combines one element with `%x`, returns the old value ([`atomic`]) |
//! | `memref.dim` | `memref.dim %m, %c : memref<?xf32>` | size of dimension `%c` |
//! | `memref.realloc` | `memref.realloc %m(%n) : memref<?xf32> to memref<?xf32>` | a new allocation with the old elements, the old one freed ([`realloc`]) |
//! | `memref.cast` | `memref.cast %m : memref<4xf32> to memref<?xf32>` | the same view, other static information |
//! | `memref.subview` | `memref.subview %m[o0, o1] [s0, s1] [t0, t1] : T to U` | a strided window of `%m` |
//! | `memref.copy` | `memref.copy %a, %b : T to U` | copies every element of `%a` into `%b` |
//! | `memref.reinterpret_cast` | `memref.reinterpret_cast %m to offset: [o], sizes: [..], strides: [..] : T to U` | a view of `%m`'s allocation ([`reinterpret`]) |
//! | `memref.rank` | `memref.rank %m : T` | the number of dimensions |
//! | `memref.collapse_shape` | `memref.collapse_shape %m [[0, 1], [2]] : T into U` | merges groups of dimensions ([`collapse`]) |
//! | `memref.expand_shape` | `memref.expand_shape %m [[0, 1], [2]] : T into U` | splits dimensions into groups ([`expand`]) |
//! | `memref.extract_strided_metadata` | `memref.extract_strided_metadata %m : T -> memref<E>, index, ...` | the allocation, offset, sizes and strides ([`metadata`]) |
//!
//! **Types.** `memref<d0 x ... x T, layout>` ([`ir::MemRefType`]): ranks 0
//! and up, static sizes or `?`, scalar elements, and either the identity
//! (row-major) layout or `strided<[s0, ...], offset: o>` with static or
//! dynamic (`?`) strides and offset. Element `(i0, i1, ...)` of a view is
//! element `o + i0*s0 + i1*s1 + ...` of its allocation.
//!
//! **Semantics** are MLIR's, and so is what is undefined: an index out of
//! bounds, a read of an element never stored (`alloc` does not
//! initialise), a use after `dealloc`, a `cast` or `subview` whose static
//! sizes, strides or offset differ from the run-time view, a `subview`
//! reaching outside its source. The interpreter faults on each, with the
//! op's location. Passes may assume none happens: an unused `load` or
//! `dim` is erased ([`ir::Traits::DEAD_IF_UNUSED`]), as MLIR erases ops
//! that only read.
//!
//! **Effects** are per allocation, as for `arr` ([`crate::alias`]): `alloc`
//! and `alloca` make fresh allocations, `cast` and `subview` alias their
//! source. `dim`, `cast` and `subview` touch no memory, but they are not
//! pure: they fault where their static information is wrong, so they are
//! neither moved nor merged, only erased when unused.
//!
//! **Canonicalization** (MLIR's): `dim` of a static size, of an
//! allocation's size operand, of a `subview`'s size or through a `cast`;
//! an allocation that is only stored into and freed is erased with its
//! users; constant allocation sizes become static (then a `cast` back);
//! identity casts and cast chains fold; a `cast` from a more static type
//! folds into its consumers; constant `subview` operands become static and
//! the result type is inferred again ([`subview`]); a `copy` onto itself
//! or of no elements is erased; `collapse_shape` and `expand_shape` pairs
//! by the same groups fold where the types prove neither faults
//! ([`expand`]).
//!
//! The native backends take `memref` after `lower`, which rewrites it onto
//! `arr` (`passes::memref_to_arr`).

pub mod atomic;
mod canon;
pub mod collapse;
pub mod expand;
mod forms;
mod interp;
pub mod metadata;
pub mod realloc;
pub mod reinterpret;
pub mod subview;

use ir::spec::{Arity, OpSpec, Registry, Traits};
use ir::{Context, MemRefType, OpId, Type};

/// The ops whose result is a view of their first operand's allocation
/// (and that neither read nor write it).
pub const VIEWS: [&str; 5] = [
    "memref.cast",
    "memref.subview",
    "memref.reinterpret_cast",
    "memref.collapse_shape",
    "memref.expand_shape",
];

/// Whether op `name` makes a view of its first operand ([`VIEWS`]).
pub fn is_view(name: &str) -> bool {
    VIEWS.contains(&name)
}

/// MLIR's marker of a dynamic entry in `static_offsets`, `static_sizes`
/// and `static_strides` (`ShapedType::kDynamic`).
pub const DYNAMIC: i64 = i64::MIN;

/// The memref type of operand `i` of `op`.
pub fn operand_memref(ctx: &Context, op: OpId, i: usize) -> Result<&MemRefType, String> {
    let v = *ctx
        .operands(op)
        .get(i)
        .ok_or_else(|| format!("expects an operand #{i}"))?;
    ctx.ty(v)
        .as_memref()
        .ok_or_else(|| format!("operand #{i} must be a memref, got '{}'", ctx.ty(v)))
}

/// Checks that the result type of view op `op` agrees with the type `how`
/// ("inferred", "stated") from its operands ([`cast_compatible`]).
fn check_result_agrees(ctx: &Context, op: OpId, want: MemRefType, how: &str) -> Result<(), String> {
    let res = result_memref(ctx, op)?;
    if cast_compatible(&want, res) {
        return Ok(());
    }
    Err(format!(
        "result type '{}' does not agree with the {how} '{}'",
        ctx.ty(ctx.result(op, 0)),
        Type::MemRef(std::rc::Rc::new(want))
    ))
}

fn result_memref(ctx: &Context, op: OpId) -> Result<&MemRefType, String> {
    let r = *ctx
        .results(op)
        .first()
        .ok_or_else(|| "expects one result".to_string())?;
    ctx.ty(r)
        .as_memref()
        .ok_or_else(|| format!("result must be a memref, got '{}'", ctx.ty(r)))
}

fn expect_indices(ctx: &Context, op: OpId, from: usize) -> Result<(), String> {
    for (k, &v) in ctx.operands(op).iter().enumerate().skip(from) {
        if *ctx.ty(v) != Type::Index {
            return Err(format!("operand #{k} must be 'index', got '{}'", ctx.ty(v)));
        }
    }
    Ok(())
}

fn verify_alloc(ctx: &Context, op: OpId) -> Result<(), String> {
    let m = result_memref(ctx, op)?;
    let n = ctx.operands(op).len();
    if n != m.num_dynamic() {
        return Err(format!(
            "expects {} size operands (one per '?' of '{}'), got {n}",
            m.num_dynamic(),
            ctx.ty(ctx.result(op, 0))
        ));
    }
    if let Some(l) = &m.layout {
        if l.offset.is_none() || l.strides.iter().any(|s| s.is_none()) {
            return Err("an allocated layout needs static strides and offset".into());
        }
        if l.offset.is_some_and(|o| o < 0) || l.strides.iter().any(|s| s.is_some_and(|s| s < 0)) {
            return Err("an allocated layout needs non-negative strides and offset".into());
        }
    }
    expect_indices(ctx, op, 0)
}

fn verify_access(ctx: &Context, op: OpId, base: usize) -> Result<(), String> {
    let m = operand_memref(ctx, op, base)?;
    let idx = ctx.operands(op).len() - base - 1;
    if idx != m.rank() {
        return Err(format!(
            "expects {} indices (the memref's rank), got {idx}",
            m.rank()
        ));
    }
    expect_indices(ctx, op, base + 1)
}

fn verify_load(ctx: &Context, op: OpId) -> Result<(), String> {
    verify_access(ctx, op, 0)?;
    let m = operand_memref(ctx, op, 0)?;
    let r = ctx.ty(ctx.result(op, 0));
    if *r != m.elem {
        return Err(format!(
            "result type '{r}' must be the element type '{}'",
            m.elem
        ));
    }
    Ok(())
}

fn verify_store(ctx: &Context, op: OpId) -> Result<(), String> {
    if ctx.operands(op).len() < 2 {
        return Err("expects a value and a memref".into());
    }
    verify_access(ctx, op, 1)?;
    let m = operand_memref(ctx, op, 1)?;
    let t = ctx.ty(ctx.operand(op, 0));
    if *t != m.elem {
        return Err(format!(
            "stored value has type '{t}', expected the element type '{}'",
            m.elem
        ));
    }
    Ok(())
}

fn verify_dealloc(ctx: &Context, op: OpId) -> Result<(), String> {
    operand_memref(ctx, op, 0).map(|_| ())
}

fn verify_dim(ctx: &Context, op: OpId) -> Result<(), String> {
    operand_memref(ctx, op, 0)?;
    expect_indices(ctx, op, 1)?;
    if *ctx.ty(ctx.result(op, 0)) != Type::Index {
        return Err("result must be 'index'".into());
    }
    Ok(())
}

/// Whether a view of type `a` may be a view of type `b`: equal element
/// types and ranks, and no static size, stride or offset that differs.
pub fn cast_compatible(a: &MemRefType, b: &MemRefType) -> bool {
    fn agree<T: PartialEq>(x: &Option<T>, y: &Option<T>) -> bool {
        match (x, y) {
            (Some(x), Some(y)) => x == y,
            _ => true,
        }
    }
    let (sa, oa) = a.strides_and_offset();
    let (sb, ob) = b.strides_and_offset();
    a.elem == b.elem
        && a.rank() == b.rank()
        && a.shape.iter().zip(&b.shape).all(|(x, y)| agree(x, y))
        && sa.iter().zip(&sb).all(|(x, y)| agree(x, y))
        && agree(&oa, &ob)
}

fn verify_cast(ctx: &Context, op: OpId) -> Result<(), String> {
    let a = operand_memref(ctx, op, 0)?;
    let b = result_memref(ctx, op)?;
    if !cast_compatible(a, b) {
        return Err(format!(
            "'{}' and '{}' are not cast compatible",
            ctx.ty(ctx.operand(op, 0)),
            ctx.ty(ctx.result(op, 0))
        ));
    }
    Ok(())
}

fn verify_copy(ctx: &Context, op: OpId) -> Result<(), String> {
    let a = operand_memref(ctx, op, 0)?;
    let b = operand_memref(ctx, op, 1)?;
    if a.elem != b.elem || a.rank() != b.rank() {
        return Err(format!(
            "source '{}' and target '{}' need one element type and rank",
            ctx.ty(ctx.operand(op, 0)),
            ctx.ty(ctx.operand(op, 1))
        ));
    }
    Ok(())
}

/// Registers the ops.
pub fn register(r: &mut Registry) {
    for (name, what) in [
        (
            "memref.alloc",
            "allocates a memref (elements undefined until stored)",
        ),
        (
            "memref.alloca",
            "allocates a memref in the function's frame",
        ),
    ] {
        r.register(
            OpSpec::new(name, what)
                .operands(Arity::AtLeast(0))
                .results(Arity::Exactly(1))
                .traits(Traits::ALLOCATES)
                .verify(verify_alloc)
                .interpret(interp::alloc)
                .rewrite(canon::dead_alloc)
                .rewrite(canon::constant_alloc_sizes)
                .generic_attrs(forms::alloc_generic_attrs, |_, _| {})
                .custom_form(forms::print_alloc, forms::parse_alloc),
        );
    }
    r.register(
        OpSpec::new("memref.dealloc", "frees an allocation")
            .operands(Arity::Exactly(1))
            .traits(Traits::WRITES)
            .verify(verify_dealloc)
            .interpret(interp::dealloc)
            .rewrite(canon::through_cast)
            .custom_form(forms::print_dealloc, forms::parse_dealloc),
    );
    r.register(
        OpSpec::new("memref.load", "reads one element of a memref")
            .operands(Arity::AtLeast(1))
            .results(Arity::Exactly(1))
            .traits(Traits::READS | Traits::DEAD_IF_UNUSED)
            .verify(verify_load)
            .interpret(interp::load)
            .rewrite(canon::through_cast)
            .custom_form(forms::print_load, forms::parse_load),
    );
    r.register(
        OpSpec::new("memref.store", "writes one element of a memref")
            .operands(Arity::AtLeast(2))
            .traits(Traits::WRITES)
            .verify(verify_store)
            .interpret(interp::store)
            .rewrite(canon::through_cast)
            .custom_form(forms::print_store, forms::parse_store),
    );
    r.register(
        OpSpec::new(
            atomic::NAME,
            "combines one element of a memref with a value, returning the old element",
        )
        .operands(Arity::AtLeast(2))
        .results(Arity::Exactly(1))
        .traits(Traits::READS | Traits::WRITES)
        .verify(atomic::verify)
        .interpret(atomic::interp)
        .rewrite(canon::through_cast)
        .custom_form(atomic::print, atomic::parse),
    );
    r.register(
        OpSpec::new(
            realloc::NAME,
            "a new rank-1 allocation holding the source's elements; frees the source",
        )
        .operands(Arity::AtLeast(1))
        .results(Arity::Exactly(1))
        .traits(Traits::READS | Traits::WRITES)
        .verify(realloc::verify)
        .interpret(realloc::interp)
        .rewrite(canon::dead_alloc)
        .custom_form(realloc::print, realloc::parse),
    );
    r.register(
        OpSpec::new("memref.dim", "the size of one dimension of a memref")
            .operands(Arity::Exactly(2))
            .results(Arity::Exactly(1))
            .traits(Traits::DEAD_IF_UNUSED)
            .verify(verify_dim)
            .interpret(interp::dim)
            .fold(canon::fold_dim)
            .rewrite(canon::dim_of_definition)
            .custom_form(forms::print_dim, forms::parse_dim),
    );
    r.register(
        OpSpec::new("memref.cast", "the same view with other static information")
            .operands(Arity::Exactly(1))
            .results(Arity::Exactly(1))
            .traits(Traits::DEAD_IF_UNUSED)
            .verify(verify_cast)
            .interpret(interp::cast)
            .fold(canon::fold_cast)
            .rewrite(canon::through_cast)
            .rewrite(canon::dead_alloc_of_view)
            .custom_form(forms::print_cast, forms::parse_cast),
    );
    r.register(
        OpSpec::new(
            "memref.copy",
            "copies every element of a memref into another",
        )
        .operands(Arity::Exactly(2))
        .traits(Traits::READS | Traits::WRITES)
        .verify(verify_copy)
        .interpret(interp::copy)
        .rewrite(canon::erase_noop_copy)
        .rewrite(canon::through_cast)
        .custom_form(forms::print_copy, forms::parse_copy),
    );
    subview::register(r);
    reinterpret::register(r);
    collapse::register(r);
    expand::register(r);
    metadata::register(r);
}
