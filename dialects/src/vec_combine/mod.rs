//! User-defined operators of `vec.reduce` and `vec.scan` (issue 42, item 1):
//! the combiner-region form, beside the `kind` form of [`crate::vec`].
//!
//! ```text
//! %r = vec.reduce %v, %ne : vec<T> {
//! ^bb0(%a: T, %b: T):
//!   ...
//!   vec.yield %c : T
//! }
//! ```
//! (generic: `"vec.reduce"(%v, %ne) ({...}) : (vec<T>, T) -> T`; `vec.scan`
//! is the same with result `vec<T>`, inclusive.)
//!
//! Contract (Futhark's `reduce`/`scan`): the operator is associative and
//! `%ne` is its neutral element. The result is the fold in an order fixed
//! by the length alone ([`chunked`]: chunks folded from `ne`, then
//! combined left to right; a vector of at most [`chunked::GRAIN`] elements
//! is one chunk, the left fold `((ne ⊕ v0) ⊕ v1) ⊕ ...`), on every backend
//! and thread count, so a program that breaks the contract still gets one
//! deterministic answer. `T` is any scalar type or a struct (e.g. an argmin
//! over `struct<v: f64, i: index>`); the combiner may fault (its fault is
//! the op's, at the faulting op, the first in that order).
//!
//! Lowering (phase `gen`; for struct elements from `split-structs`, which
//! then splits the loops' values into fields): [`chunked::lower`], chunk
//! loops run by `scf.forall` on every core at the top level of host code,
//! sequential elsewhere. A map producer is computed at the chunk loops'
//! reads (`fuse`'s substitution). The GPU form is left for `gen`
//! generators with combiner regions.

pub mod chunked;
pub mod hist;

use smallvec::{smallvec, SmallVec};

use ir::interp::{Interp, RtValue, RunError};
use ir::{Builder, Context, OpId, OpState, Type, ValueId};

type Vals = SmallVec<[RtValue; 2]>;
type Repl = Option<SmallVec<[ValueId; 2]>>;

/// The attribute that marks the chunk loops (`scf.forall` or `scf.for`) a
/// combiner's reduce or scan, or a chunked histogram ([`hist`]), lowers to
/// (its value: the op's name). An `scf.forall` so marked at the top level of
/// host code writes each array element from one iteration only, which
/// `passes::gpu::chunks` relies on to run it in a kernel.
pub const SEQUENTIAL_ATTR: &str = "l0.left_fold";

/// Whether `op` (a `vec.reduce` or `vec.scan`) has a combiner region.
pub fn has_combiner(ctx: &Context, op: OpId) -> bool {
    !ctx.regions(op).is_empty()
}

/// Verifies the combiner form: no `kind`, a `vec<T>` input, an `ne` of
/// type `T`, result `result` (`T` or `vec<T>`), and a region of one block
/// `(T, T)` ending in `vec.yield` of one `T`.
pub fn verify(ctx: &Context, op: OpId, scan: bool) -> Result<(), String> {
    no_kind(ctx, op)?;
    let Some(t) = ctx.ty(ctx.operand(op, 0)).elem().cloned() else {
        return Err(format!(
            "operand #0 must be a vec, but got '{}'",
            ctx.ty(ctx.operand(op, 0))
        ));
    };
    if matches!(t, Type::Vec(_) | Type::Mat(_) | Type::Arr(_)) {
        return Err(format!(
            "a combiner's element type must be a scalar or a struct, but is '{t}'"
        ));
    }
    let ne = ctx.ty(ctx.operand(op, 1));
    if *ne != t {
        return Err(format!(
            "the neutral element must have the element type '{t}', but has '{ne}'"
        ));
    }
    let want = if scan {
        Type::vec(t.clone())
    } else {
        t.clone()
    };
    let got = ctx.ty(ctx.result(op, 0));
    if *got != want {
        return Err(format!("result must be '{want}', but is '{got}'"));
    }
    verify_region(ctx, op, &t)
}

/// An op with a combiner region must not have a `kind` too.
pub(crate) fn no_kind(ctx: &Context, op: OpId) -> Result<(), String> {
    match ctx.attr(op, "kind") {
        Some(_) => Err("takes either a 'kind' or a combiner region, not both".into()),
        None => Ok(()),
    }
}

/// The terminator of combiner region `r` when the region has the shape the
/// lowerings inline: two arguments and one yielded value.
pub(crate) fn combiner_terminator(ctx: &Context, r: ir::RegionId) -> Option<OpId> {
    let blk = ctx.region_block(r);
    let term = ctx.terminator(blk)?;
    (ctx.block_args(blk).len() == 2 && ctx.operands(term).len() == 1).then_some(term)
}

/// Checks the combiner region of `op`: one block `(T, T)` ending in
/// `vec.yield` of one `T`.
pub(crate) fn verify_region(ctx: &Context, op: OpId, t: &Type) -> Result<(), String> {
    let t = t.clone();
    let r = ctx.regions(op)[0];
    if ctx.region(r).blocks.len() != 1 {
        return Err("the combiner region must have exactly one block".into());
    }
    let b = ctx.region_block(r);
    let args = ctx.block_args(b);
    if args.len() != 2 || args.iter().any(|&a| *ctx.ty(a) != t) {
        let got: Vec<String> = args.iter().map(|&a| ctx.ty(a).to_string()).collect();
        return Err(format!(
            "the combiner must take two arguments of type '{t}', but takes ({})",
            got.join(", ")
        ));
    }
    let term = ctx.terminator(b).filter(|&y| ctx.is(y, "vec.yield"));
    let Some(term) = term else {
        return Err("the combiner region must end with 'vec.yield'".into());
    };
    let ys = ctx.operands(term);
    if ys.len() != 1 || *ctx.ty(ys[0]) != t {
        let got: Vec<String> = ys.iter().map(|&y| ctx.ty(y).to_string()).collect();
        return Err(format!(
            "the combiner must yield one '{t}', but yields ({})",
            got.join(", ")
        ));
    }
    Ok(())
}

/// Interprets the combiner form in the order of [`chunked`]: the partials
/// of the chunks from `a[1]`, their left fold (`reduce`), or their offsets
/// and each chunk's running values (`scan`), over the vector `a[0]`.
pub fn interp(it: &mut Interp, op: OpId, a: &[RtValue], scan: bool) -> Result<Vals, RunError> {
    let ctx = it.ctx;
    let v = crate::vec::as_vec(ctx, op, &a[0])?.clone();
    let r = ctx.regions(op)[0];
    let ne = a[1].clone();
    let n = v.len() as i64;
    let (_, nc) = chunked::chunking(n);
    let apply = |it: &mut Interp, acc: RtValue, x: RtValue| -> Result<RtValue, RunError> {
        it.run_region(r, &[acc, x])?
            .into_iter()
            .next()
            .ok_or_else(|| RunError::at(ctx, op, "the combiner yielded no value"))
    };
    let fold = |it: &mut Interp, c: i64, start: RtValue, out: Option<&mut Vec<RtValue>>| {
        let (lo, hi) = chunked::chunk_range(n, c);
        let mut acc = start;
        let mut out = out;
        for x in &v[lo as usize..hi as usize] {
            acc = apply(it, acc, x.clone())?;
            if let Some(o) = out.as_deref_mut() {
                o.push(acc.clone());
            }
        }
        Ok::<RtValue, RunError>(acc)
    };
    let count = if scan { nc - 1 } else { nc };
    let mut parts = Vec::with_capacity(count as usize);
    for c in 0..count {
        parts.push(fold(it, c, ne.clone(), None)?);
    }
    if !scan {
        let mut acc = parts[0].clone();
        for p in parts.into_iter().skip(1) {
            acc = apply(it, acc, p)?;
        }
        return Ok(smallvec![acc]);
    }
    let mut offs = vec![ne.clone(); nc as usize];
    if nc >= 2 {
        let mut acc = parts[0].clone();
        for k in 1..(nc - 1) as usize {
            offs[k] = acc.clone();
            acc = apply(it, acc, parts[k].clone())?;
        }
        offs[nc as usize - 1] = acc;
    }
    let mut out = Vec::with_capacity(v.len());
    for (c, off) in offs.into_iter().enumerate() {
        fold(it, c as i64, off, Some(&mut out))?;
    }
    Ok(smallvec![crate::vec::vec_value(out)])
}

/// Lowers the combiner form ([`chunked::lower`]); a scan's output arrays,
/// one per leaf field of `T`, become vectors, and a struct `T`'s field
/// vectors are zipped back into records by a `vec.map` (which
/// `split-structs` turns into the field vectors themselves). Runs at phase
/// `gen`, and from `split-structs` for struct values. `None` for a
/// malformed region.
pub fn lower(b: &mut Builder, st: &OpState, scan: bool) -> Repl {
    let (&v, &ne) = (st.operands.first()?, st.operands.get(1)?);
    let t = b.ctx.ty(v).elem()?.clone();
    let &r = st.regions.first()?;
    let (res, outs) = chunked::lower(b, v, ne, r, scan)?;
    if !scan {
        return Some(smallvec![res]);
    }
    let leaves = t.named_leaves();
    let vecs: Vec<ValueId> = outs.iter().map(|&o| crate::arr::to_vec(b, o)).collect();
    if t.as_struct().is_none() {
        return Some(smallvec![vecs[0]]);
    }
    // Records from their field vectors.
    let arg_types: Vec<Type> = leaves.iter().map(|(_, lt)| lt.clone()).collect();
    let t2 = t.clone();
    let body = b.build_region(&arg_types, |b, es| {
        let mut it = es.iter().copied();
        if let Some(s) = crate::structs::build_fields(b, &t2, &mut |_, _| it.next()) {
            b.op("vec.yield", &[s], &[], vec![]);
        }
    });
    let zipped = b.op_with_regions("vec.map", &vecs, &[Type::vec(t)], vec![], &[body]);
    Some(smallvec![*zipped.first()?])
}

/// The leaf field of `c` at `path` (`.a.b`; empty: `c` itself), of type
/// `lt`, through `struct.get`s.
pub(crate) fn field_at(b: &mut Builder, c: ValueId, path: &str, lt: &Type) -> ValueId {
    let names: Vec<&str> = path.split('.').filter(|p| !p.is_empty()).collect();
    let mut cur = c;
    for (k, name) in names.iter().enumerate() {
        let ty = match b.ctx.ty(cur).as_struct() {
            Some(st) => st
                .fields
                .iter()
                .find(|(n, _)| n == name)
                .map_or(lt.clone(), |(_, t)| t.clone()),
            None => lt.clone(),
        };
        let ty = if k + 1 == names.len() { lt.clone() } else { ty };
        cur = b.op1(
            "struct.get",
            &[cur],
            ty,
            vec![("field".into(), ir::Attribute::Str(name.to_string()))],
        );
    }
    cur
}

/// Moves the combiner's ops (of region `r`, terminator `term`, as
/// [`combiner_terminator`] found it) to the insertion point with its
/// arguments replaced by `acc` and `x`; returns the yielded value.
pub(crate) fn inline_combiner(
    b: &mut Builder,
    r: ir::RegionId,
    term: OpId,
    acc: ValueId,
    x: ValueId,
) -> ValueId {
    let blk = b.ctx.region_block(r);
    let args = b.ctx.block_args(blk).to_vec();
    b.ctx.replace_all_uses(args[0], acc);
    b.ctx.replace_all_uses(args[1], x);
    let (dest, before) = b.insertion_point();
    for op in b.ctx.block_ops(blk) {
        if op != term {
            b.ctx.move_op(op, dest, before);
        }
    }
    b.ctx.operand(term, 0)
}
