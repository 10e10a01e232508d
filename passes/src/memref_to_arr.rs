//! Lowering `memref` onto `arr` (issue 45, item 4: "make `arr` their
//! lowering"), run first by `lower`, so that both native backends and the
//! GPU host path compile memref programs.
//!
//! Each memref value becomes a *descriptor* of SSA values: the allocation
//! (an `arr<T>`), the offset, and one size and one stride per dimension
//! (`index`). Then:
//! - `alloc`/`alloca` compute row-major strides (or take the static layout)
//!   and allocate `arr.alloc {uninit}` of the extent the layout addresses;
//! - `load`/`store` check each index against its size (`scf.assert`) and
//!   access element `offset + sum(i_k * stride_k)` (whose own check is the
//!   buffer's length);
//! - `cast` and `subview` check every static size, stride and offset their
//!   result type states, as the interpreter does (folds remove the checks
//!   that constants prove), and `subview` checks its window lies inside the
//!   source;
//! - `dim` is the size, `dealloc` is `arr.free`, and `copy` is two loop
//!   nests through a temporary (the views may overlap).
//!
//! A function's memref parameters and results, and a call's operands and
//! results, are descriptors too: the signature lists each memref as its
//! descriptor's values (a 1:N conversion, [`convert_signature`]), so a
//! callee's stores reach the caller's buffer. Otherwise memref values must
//! stay inside one function's straight data flow: a memref block argument
//! of a region, a region result, or a declared function with memrefs in
//! its signature is refused with a located error; the interpreter runs
//! such programs.

use std::collections::HashMap;

use ir::{Attribute, Builder, Context, Diagnostic, MemRefType, OpId, Type, ValueId};

use dialects::arith::fold::constant_int;
use dialects::arith::{build_binop, build_cmpi, const_int};
use dialects::memref::subview::{mixed, Mixed};
use dialects::scf::build_assert;

/// The fault of an allocation whose extent does not fit in `index`.
const ALLOC_TOO_LARGE: &str = "memref.alloc of a size too large";

/// A memref as SSA values.
#[derive(Clone)]
struct Desc {
    buf: ValueId,
    offset: ValueId,
    sizes: Vec<ValueId>,
    strides: Vec<ValueId>,
}

fn is_memref_op(ctx: &Context, op: OpId) -> bool {
    ctx.op_name(op).starts_with("memref.")
}

/// Whether the memref values of the module can all be lowered; the first
/// that cannot, as an error.
fn check(ctx: &Context) -> Result<(), Diagnostic> {
    for op in ctx.walk_all() {
        // Calls, returns and function arguments carry descriptors
        // ([`convert_signature`], [`lower_memrefs`]).
        let memref_op = is_memref_op(ctx, op) || crosses_calls(ctx, op);
        if ctx.is(op, "func.func")
            && dialects::func::is_declaration(ctx, op)
            && has_memref_signature(ctx, op)
        {
            return Err(Diagnostic::at_op(
                ctx,
                op,
                "a declared function with memref arguments or results is not lowered to 'arr' (its callers' descriptors have no agreed layout)",
            ));
        }
        for &v in ctx.operands(op) {
            if ctx.ty(v).as_memref().is_some() && !memref_op {
                return Err(Diagnostic::at_op(
                    ctx,
                    op,
                    format!(
                        "'{}' takes a memref: memref values that leave memref ops other than through calls and returns (branches, region results) are not lowered to 'arr' yet (the interpreter runs them)",
                        ctx.op_name(op)
                    ),
                ));
            }
        }
        for (k, &r) in ctx.regions(op).iter().enumerate() {
            for (j, &b) in ctx.region(r).blocks.iter().enumerate() {
                let entry_of_func = ctx.is(op, "func.func") && k == 0 && j == 0;
                if !entry_of_func
                    && ctx
                        .block_args(b)
                        .iter()
                        .any(|&a| ctx.ty(a).as_memref().is_some())
                {
                    return Err(Diagnostic::at_op(
                        ctx,
                        op,
                        "memref block arguments (other than a function's) are not lowered to 'arr' yet (the interpreter runs them)",
                    ));
                }
            }
        }
        if !memref_op
            && ctx
                .results(op)
                .iter()
                .any(|&r| ctx.ty(r).as_memref().is_some())
        {
            return Err(Diagnostic::at_op(
                ctx,
                op,
                format!(
                    "'{}' returns a memref: only memref ops' and calls' memrefs are lowered to 'arr' yet (the interpreter runs the program)",
                    ctx.op_name(op)
                ),
            ));
        }
    }
    Ok(())
}

/// Whether `op` is a call or return, whose memref operands and results
/// become descriptors.
fn crosses_calls(ctx: &Context, op: OpId) -> bool {
    ctx.is(op, "func.call") || ctx.is(op, "func.return")
}

/// Whether function `f` (or any op with a function type) has memrefs in
/// its signature.
pub fn has_memref_signature(ctx: &Context, f: OpId) -> bool {
    dialects::func::function_type(ctx, f)
        .is_some_and(|(ins, outs)| ins.iter().chain(outs).any(|t| t.as_memref().is_some()))
}

/// The types of a memref's descriptor (`arr<T>`, the offset, a size and a
/// stride per dimension), or `t` itself for any other type. This is the
/// calling convention of lowered functions: each memref parameter and
/// result is these values, in this order (`--run` passes and reads them so).
pub fn descriptor_types(t: &Type) -> Vec<Type> {
    match t.as_memref() {
        Some(m) => {
            let mut out = vec![Type::arr(m.elem.clone()), Type::Index];
            out.extend(std::iter::repeat_n(Type::Index, 2 * m.shape.len()));
            out
        }
        None => vec![t.clone()],
    }
}

/// The descriptor made of `parts` (as [`descriptor_types`] orders them)
/// for a memref of rank `rank`.
fn desc_of(parts: &[ValueId], rank: usize) -> Desc {
    Desc {
        buf: parts[0],
        offset: parts[1],
        sizes: parts[2..2 + rank].to_vec(),
        strides: parts[2 + rank..2 + 2 * rank].to_vec(),
    }
}

/// Binds each of `old` (arguments or results before the conversion) to
/// its run of `new` (as [`descriptor_types`] lays them out): a memref to
/// the descriptor in `descs`, any other value by replacing its uses.
/// Returns the memrefs bound, with their types.
fn bind_parts(
    ctx: &mut Context,
    old: &[ValueId],
    new: &[ValueId],
    descs: &mut HashMap<ValueId, Desc>,
) -> Vec<(ValueId, MemRefType)> {
    let mut at = 0;
    let mut bound = Vec::new();
    for &v in old {
        let t = ctx.ty(v).clone();
        let n = descriptor_types(&t).len();
        match t.as_memref() {
            Some(m) => {
                descs.insert(v, desc_of(&new[at..at + n], m.shape.len()));
                bound.push((v, m.clone()));
            }
            None => ctx.replace_all_uses(v, new[at]),
        }
        at += n;
    }
    bound
}

/// The values standing for `vs` after lowering: a memref's descriptor
/// parts, any other value itself.
fn flatten_values(
    ctx: &Context,
    op: OpId,
    descs: &HashMap<ValueId, Desc>,
    vs: &[ValueId],
) -> Result<Vec<ValueId>, Diagnostic> {
    let mut out = Vec::new();
    for &v in vs {
        if ctx.ty(v).as_memref().is_none() {
            out.push(v);
            continue;
        }
        let d = descs.get(&v).ok_or_else(|| {
            Diagnostic::at_op(
                ctx,
                op,
                "memref operand defined after its use (not lowered)",
            )
        })?;
        out.push(d.buf);
        out.push(d.offset);
        out.extend(&d.sizes);
        out.extend(&d.strides);
    }
    Ok(out)
}

/// A function's memref parameters and results become descriptors (a 1:N
/// signature conversion, as MLIR's memref-to-LLVM lowering does): the
/// function type lists each memref as its descriptor's types, and each
/// memref argument of the body is bound in `descs` to new arguments (a
/// static size or stride of its type is checked and used as a constant,
/// [`check_static`]).
fn convert_signature(ctx: &mut Context, f: OpId, descs: &mut HashMap<ValueId, Desc>) {
    let Some((ins, outs)) =
        dialects::func::function_type(ctx, f).map(|(i, o)| (i.to_vec(), o.to_vec()))
    else {
        return;
    };
    let flat = |ts: &[Type]| -> Vec<Type> { ts.iter().flat_map(descriptor_types).collect() };
    for (key, ts) in [
        (dialects::func::ARG_ATTRS, &ins),
        (dialects::func::RES_ATTRS, &outs),
    ] {
        if let Some(ds) = dialects::func::signature_attrs(ctx, f, key) {
            let out: Vec<Attribute> = ds
                .into_iter()
                .zip(ts.iter())
                .flat_map(|(d, t)| std::iter::repeat_n(d, descriptor_types(t).len()))
                .collect();
            ctx.set_attr(f, key, Attribute::Array(out));
        }
    }
    ctx.set_attr(
        f,
        "function_type",
        Attribute::Type(Type::function(flat(&ins), flat(&outs))),
    );
    let entry = ctx.op_block(f, 0);
    let old = ctx.block_args(entry).to_vec();
    let new = ctx.replace_block_args(entry, &flat(&ins));
    let checks = bind_parts(ctx, &old, &new, descs);
    // The static facts of each memref parameter's type, at the top of the body.
    let first = ctx.iter_block(entry).next();
    for (a, m) in checks {
        let mut b = match first {
            Some(op) => Builder::before(ctx, op),
            None => Builder::at_end(ctx, entry),
        };
        let d = descs.get_mut(&a).expect("bound above");
        check_static(&mut b, d, &m);
    }
}

fn cst(b: &mut Builder, v: i64) -> ValueId {
    const_int(b, v, &Type::Index)
}

/// An entry of a subview's or reinterpret_cast's lists as an `index` value.
fn mixed_value(b: &mut Builder, m: &Mixed) -> ValueId {
    match m {
        Mixed::Static(v) => cst(b, *v),
        Mixed::Dynamic(v) => *v,
    }
}

/// The memref type of a verified op's one result.
fn result_type(ctx: &Context, op: OpId) -> MemRefType {
    ctx.ty(ctx.result(op, 0))
        .as_memref()
        .cloned()
        .expect("verified")
}

fn add(b: &mut Builder, x: ValueId, y: ValueId) -> ValueId {
    build_binop(b, "arith.addi", x, y)
}

fn mul(b: &mut Builder, x: ValueId, y: ValueId) -> ValueId {
    build_binop(b, "arith.muli", x, y)
}

/// Overflow of the `index` (64-bit) arithmetic of view extents, collected
/// as one `i1` so that a check fails where the exact value would not fit
/// (the interpreter computes extents exactly and faults there).
struct Overflow(ValueId);

impl Overflow {
    fn new(b: &mut Builder) -> Overflow {
        let f = b.constant(Attribute::Bool(false), &Type::I1);
        Overflow(f)
    }
    fn or(&mut self, b: &mut Builder, c: ValueId) {
        self.0 = build_binop(b, "arith.ori", self.0, c);
    }
    /// `x * y` for `y >= 0`, recording whether `x > MAX / y` (a negative
    /// `x`, as `size - 1` of an empty dimension, never counts).
    fn mul(&mut self, b: &mut Builder, x: ValueId, y: ValueId) -> ValueId {
        // A factor 1, or two constants whose product fits, cannot overflow.
        let (cx, cy) = (constant_int(b.ctx, x), constant_int(b.ctx, y));
        let fits = match (cx, cy) {
            (Some(1), _) | (_, Some(1)) => true,
            (Some(p), Some(q)) => p.checked_mul(q).is_some(),
            _ => false,
        };
        if fits {
            return mul(b, x, y);
        }
        let one = cst(b, 1);
        let zero = cst(b, 0);
        let max = cst(b, i64::MAX);
        let d = build_binop(b, "arith.maxsi", y, one);
        let q = build_binop(b, "arith.divsi", max, d);
        let big = build_cmpi(b, "sgt", x, q);
        let nz = build_cmpi(b, "ne", y, zero);
        let o = build_binop(b, "arith.andi", big, nz);
        self.or(b, o);
        mul(b, x, y)
    }
    /// `x + y` for `y >= 0`, recording whether `x > MAX - y`.
    fn add(&mut self, b: &mut Builder, x: ValueId, y: ValueId) -> ValueId {
        let (cx, cy) = (constant_int(b.ctx, x), constant_int(b.ctx, y));
        if matches!((cx, cy), (Some(0), _) | (_, Some(0)))
            || matches!((cx, cy), (Some(p), Some(q)) if p.checked_add(q).is_some())
        {
            return add(b, x, y);
        }
        let max = cst(b, i64::MAX);
        let room = build_binop(b, "arith.subi", max, y);
        let o = build_cmpi(b, "sgt", x, room);
        self.or(b, o);
        add(b, x, y)
    }
    /// Nothing overflowed.
    fn fits(&self, b: &mut Builder) -> ValueId {
        let t = b.constant(Attribute::Bool(true), &Type::I1);
        build_binop(b, "arith.xori", self.0, t)
    }
    /// `ok` and nothing overflowed.
    fn and_fits(&self, b: &mut Builder, ok: ValueId) -> ValueId {
        let fits = self.fits(b);
        build_binop(b, "arith.andi", ok, fits)
    }
}

/// Checks every static size, stride and offset of `t` against `d` (as the
/// interpreter's `check_static`: a stride only where the size exceeds 1).
fn check_static(b: &mut Builder, d: &mut Desc, t: &MemRefType) {
    let (strides, offset) = t.strides_and_offset();
    for (k, n) in t.shape.iter().enumerate() {
        if let Some(n) = n {
            let c = cst(b, *n as i64);
            let ok = build_cmpi(b, "eq", d.sizes[k], c);
            build_assert(b, ok, "memref size differs from its static type");
            d.sizes[k] = c;
        }
    }
    for (k, s) in strides.iter().enumerate() {
        if let Some(s) = s {
            let c = cst(b, *s);
            let same = build_cmpi(b, "eq", d.strides[k], c);
            let one = cst(b, 1);
            let small = build_cmpi(b, "sle", d.sizes[k], one);
            let ok = build_binop(b, "arith.ori", same, small);
            build_assert(b, ok, "memref stride differs from its static type");
        }
    }
    if let Some(o) = offset {
        let c = cst(b, o);
        let ok = build_cmpi(b, "eq", d.offset, c);
        build_assert(b, ok, "memref offset differs from its static type");
        d.offset = c;
    }
}

/// `memref.realloc` of source `d` (`dialects::memref::realloc`): faults
/// unless the source is its whole allocation and the new size is not
/// negative, then a fresh buffer, the first `min(old, new)` elements
/// copied, and the source's buffer freed.
fn realloc(b: &mut Builder, op: OpId, d: &Desc, size: Option<ValueId>) -> Desc {
    let zero = cst(b, 0);
    let one = cst(b, 1);
    let old = d.sizes[0];
    // Whole: offset 0, unit stride (or at most one element), and the
    // buffer's length is the size.
    let len = dialects::arr::len(b, d.buf);
    let at0 = build_cmpi(b, "eq", d.offset, zero);
    let fills = build_cmpi(b, "eq", len, old);
    let unit = build_cmpi(b, "eq", d.strides[0], one);
    let short = build_cmpi(b, "sle", old, one);
    let unit = build_binop(b, "arith.ori", unit, short);
    let whole = build_binop(b, "arith.andi", at0, fills);
    let whole = build_binop(b, "arith.andi", whole, unit);
    build_assert(b, whole, dialects::memref::realloc::NOT_WHOLE);
    let t = result_type(b.ctx, op);
    let n = match (t.shape[0], size) {
        (Some(n), _) => cst(b, n as i64),
        (None, Some(v)) => {
            let ok = build_cmpi(b, "sge", v, zero);
            build_assert(b, ok, "memref.realloc of a negative size");
            v
        }
        (None, None) => zero,
    };
    let buf = dialects::arr::alloc(b, n, t.elem);
    let k = build_binop(b, "arith.mini", old, n);
    dialects::scf::build_for(b, zero, k, one, &[], |b, i, _| {
        // The old allocation's undefined elements stay undefined.
        let x = dialects::arr::load_copy_in_bounds(b, d.buf, i);
        dialects::arr::store_in_bounds(b, buf, i, x);
        vec![]
    });
    dialects::arr::free(b, d.buf);
    Desc {
        buf,
        offset: zero,
        sizes: vec![n],
        strides: vec![one],
    }
}

fn alloc(b: &mut Builder, op: OpId) -> Desc {
    let ctx = &*b.ctx;
    let t = result_type(ctx, op);
    let dynamic = ctx.operands(op).to_vec();
    let mut dyn_iter = dynamic.into_iter();
    let zero = cst(b, 0);
    let mut sizes = Vec::new();
    for d in &t.shape {
        let n = match d {
            Some(n) => cst(b, *n as i64),
            None => {
                let v = dyn_iter.next().expect("verified");
                let ok = build_cmpi(b, "sge", v, zero);
                build_assert(b, ok, "memref.alloc of a negative size");
                v
            }
        };
        sizes.push(n);
    }
    let (strides, offset, extent) = match &t.layout {
        None => {
            let mut strides = vec![zero; sizes.len()];
            let mut acc = cst(b, 1);
            let mut ovf = Overflow::new(b);
            for k in (0..sizes.len()).rev() {
                strides[k] = acc;
                acc = ovf.mul(b, acc, sizes[k]);
            }
            let fits = ovf.fits(b);
            build_assert(b, fits, ALLOC_TOO_LARGE);
            (strides, zero, acc)
        }
        Some(l) => {
            let strides: Vec<ValueId> = l.strides.iter().map(|s| cst(b, s.unwrap_or(0))).collect();
            let offset = cst(b, l.offset.unwrap_or(0));
            let one = cst(b, 1);
            let mut ovf = Overflow::new(b);
            let mut extent = ovf.add(b, offset, one);
            let mut empty = build_cmpi(b, "eq", one, zero);
            for k in 0..sizes.len() {
                let last = build_binop(b, "arith.subi", sizes[k], one);
                let reach = ovf.mul(b, last, strides[k]);
                extent = ovf.add(b, extent, reach);
                let z = build_cmpi(b, "eq", sizes[k], zero);
                empty = build_binop(b, "arith.ori", empty, z);
            }
            let fits = ovf.fits(b);
            let ok = build_binop(b, "arith.ori", fits, empty);
            build_assert(b, ok, ALLOC_TOO_LARGE);
            let extent = b.op1("arith.select", &[empty, zero, extent], Type::Index, vec![]);
            (strides, offset, extent)
        }
    };
    let buf = b.op1(
        "arr.alloc",
        &[extent],
        Type::arr(t.elem.clone()),
        vec![(dialects::arr::UNINIT.to_string(), Attribute::Unit)],
    );
    Desc {
        buf,
        offset,
        sizes,
        strides,
    }
}

/// The element position of `idx` in `d`, each index checked.
fn position(b: &mut Builder, d: &Desc, idx: &[ValueId]) -> ValueId {
    let mut pos = d.offset;
    for (k, &i) in idx.iter().enumerate() {
        let ok = build_cmpi(b, "ult", i, d.sizes[k]);
        build_assert(b, ok, "memref index out of bounds");
        let p = mul(b, i, d.strides[k]);
        pos = add(b, pos, p);
    }
    pos
}

fn subview(b: &mut Builder, op: OpId, src: &Desc) -> Desc {
    let ctx = &*b.ctx;
    let parts = mixed(ctx, op).expect("verified");
    let t = result_type(ctx, op);
    let zero = cst(b, 0);
    let one = cst(b, 1);
    let mut d = Desc {
        buf: src.buf,
        offset: src.offset,
        sizes: Vec::new(),
        strides: Vec::new(),
    };
    let [offs, sizes, steps] = &parts;
    for (k, ((po, pn), ps)) in offs.iter().zip(sizes).zip(steps).enumerate() {
        let o = mixed_value(b, po);
        let n = mixed_value(b, pn);
        let s = mixed_value(b, ps);
        for v in [o, n, s] {
            let ok = build_cmpi(b, "sge", v, zero);
            build_assert(
                b,
                ok,
                "memref.subview with a negative offset, size or stride",
            );
        }
        // n > 0 implies o + (n - 1) * s < size, computed without
        // overflow.
        let mut ovf = Overflow::new(b);
        let last = build_binop(b, "arith.subi", n, one);
        let reach = ovf.mul(b, last, s);
        let end = ovf.add(b, o, reach);
        let inside = build_cmpi(b, "slt", end, src.sizes[k]);
        let inside = ovf.and_fits(b, inside);
        let empty = build_cmpi(b, "eq", n, zero);
        let ok = build_binop(b, "arith.ori", inside, empty);
        build_assert(b, ok, "memref.subview reaches outside its source");
        let off = mul(b, o, src.strides[k]);
        d.offset = add(b, d.offset, off);
        d.sizes.push(n);
        let st = mul(b, s, src.strides[k]);
        d.strides.push(st);
    }
    // A rank-reducing subview leaves out its dimensions of size 1.
    let drop = dialects::memref::subview::drop_mask(b.ctx, op).expect("verified");
    let keep = |k: &usize| !drop[*k];
    d.sizes = (0..drop.len()).filter(keep).map(|k| d.sizes[k]).collect();
    d.strides = (0..drop.len()).filter(keep).map(|k| d.strides[k]).collect();
    check_static(b, &mut d, &t);
    d
}

/// `memref.reinterpret_cast`: the view of `src`'s buffer with the op's
/// offset, sizes and strides, checked non-negative and, where no size is
/// 0, inside the buffer.
fn reinterpret(b: &mut Builder, op: OpId, src: &Desc) -> Desc {
    let ctx = &*b.ctx;
    let parts = mixed(ctx, op).expect("verified");
    let t = result_type(ctx, op);
    let zero = cst(b, 0);
    let one = cst(b, 1);
    let [offs, sizes, steps] = &parts;
    let offset = mixed_value(b, &offs[0]);
    let mut d = Desc {
        buf: src.buf,
        offset,
        sizes: sizes.iter().map(|m| mixed_value(b, m)).collect(),
        strides: steps.iter().map(|m| mixed_value(b, m)).collect(),
    };
    for &v in std::iter::once(&d.offset).chain(&d.sizes).chain(&d.strides) {
        let ok = build_cmpi(b, "sge", v, zero);
        build_assert(
            b,
            ok,
            "memref.reinterpret_cast with a negative offset, size or stride",
        );
    }
    // Empty, or its last element inside the buffer.
    let mut last = d.offset;
    let mut empty = build_cmpi(b, "ne", zero, zero);
    let mut ovf = Overflow::new(b);
    for (&n, &s) in d.sizes.iter().zip(&d.strides) {
        let m = build_binop(b, "arith.subi", n, one);
        let reach = ovf.mul(b, m, s);
        last = ovf.add(b, last, reach);
        let e = build_cmpi(b, "eq", n, zero);
        empty = build_binop(b, "arith.ori", empty, e);
    }
    let len = dialects::arr::len(b, d.buf);
    let inside = build_cmpi(b, "slt", last, len);
    let inside = ovf.and_fits(b, inside);
    let ok = build_binop(b, "arith.ori", inside, empty);
    build_assert(
        b,
        ok,
        "memref.reinterpret_cast reaches outside its allocation",
    );
    check_static(b, &mut d, &t);
    d
}

/// `memref.collapse_shape` ([`dialects::memref::collapse`]): each group's
/// size is the product of its sizes and its stride that of its last
/// dimension of size other than 1 (its first if all are 1); each group of
/// a non-empty view is checked contiguous.
fn collapse(b: &mut Builder, op: OpId, src: &Desc) -> Desc {
    let groups = dialects::memref::collapse::groups(b.ctx, op).expect("verified");
    let t = result_type(b.ctx, op);
    let zero = cst(b, 0);
    let one = cst(b, 1);
    let mut d = Desc {
        buf: src.buf,
        offset: src.offset,
        sizes: Vec::new(),
        strides: Vec::new(),
    };
    let mut empty = build_cmpi(b, "ne", zero, zero);
    for &n in &src.sizes {
        let e = build_cmpi(b, "eq", n, zero);
        empty = build_binop(b, "arith.ori", empty, e);
    }
    for g in &groups {
        // The stride of the last dimension of size other than 1.
        let mut base = src.strides[g[0]];
        for &k in &g[1..] {
            let unit = build_cmpi(b, "eq", src.sizes[k], one);
            base = b.op1(
                "arith.select",
                &[unit, base, src.strides[k]],
                Type::Index,
                vec![],
            );
        }
        // Contiguous: each dimension of size other than 1 has the stride
        // base * (the sizes after it); or the view is empty.
        let mut ok = build_cmpi(b, "eq", zero, zero);
        let mut after = one;
        for &k in g.iter().rev() {
            let want = mul(b, base, after);
            let same = build_cmpi(b, "eq", src.strides[k], want);
            let unit = build_cmpi(b, "eq", src.sizes[k], one);
            let fine = build_binop(b, "arith.ori", same, unit);
            ok = build_binop(b, "arith.andi", ok, fine);
            after = mul(b, after, src.sizes[k]);
        }
        let ok = build_binop(b, "arith.ori", ok, empty);
        build_assert(
            b,
            ok,
            "memref.collapse_shape of a group that is not contiguous",
        );
        d.sizes.push(after);
        d.strides.push(base);
    }
    check_static(b, &mut d, &t);
    d
}

/// `memref.expand_shape` ([`dialects::memref::expand`]): each group's
/// sizes are the given ones (`output_shape`) or the type's, with the one
/// dynamic size inferred by division (checked exact); they are checked to
/// multiply to the source dimension's size without overflow. The last
/// dimension of a group takes the source's stride, each other one the
/// next one's times its size.
fn expand(b: &mut Builder, op: OpId, src: &Desc) -> Desc {
    let groups = dialects::memref::collapse::groups(b.ctx, op).expect("verified");
    let given = dialects::memref::expand::output_shape(b.ctx, op).expect("verified");
    let t = result_type(b.ctx, op);
    let zero = cst(b, 0);
    let one = cst(b, 1);
    let mut d = Desc {
        buf: src.buf,
        offset: src.offset,
        sizes: vec![one; t.rank()],
        strides: vec![one; t.rank()],
    };
    for (r, g) in groups.iter().enumerate() {
        let n = src.sizes[r];
        let mut ok = build_cmpi(b, "eq", zero, zero);
        let mut product = one;
        let mut sizes = Vec::new();
        for &k in g {
            let s = match (&given, t.shape[k]) {
                (Some(list), _) => {
                    let s = mixed_value(b, &list[k]);
                    let fine = build_cmpi(b, "sge", s, zero);
                    ok = build_binop(b, "arith.andi", ok, fine);
                    s
                }
                (None, Some(c)) => cst(b, c as i64),
                (None, None) => {
                    // Verified: the group's other sizes are static, with a
                    // product other than 0.
                    let rest: u64 = g.iter().filter_map(|&e| t.shape[e]).product();
                    let rest = cst(b, rest as i64);
                    let rem = build_binop(b, "arith.remui", n, rest);
                    let exact = build_cmpi(b, "eq", rem, zero);
                    build_assert(
                        b,
                        exact,
                        "memref.expand_shape whose static sizes do not divide the source's size",
                    );
                    build_binop(b, "arith.divui", n, rest)
                }
            };
            // No overflow: (product * s) / s == product where s != 0.
            let next = mul(b, product, s);
            let is_zero = build_cmpi(b, "eq", s, zero);
            let divisor = b.op1("arith.select", &[is_zero, one, s], Type::Index, vec![]);
            let back = build_binop(b, "arith.divui", next, divisor);
            let same = build_cmpi(b, "eq", back, product);
            let fine = build_binop(b, "arith.ori", same, is_zero);
            ok = build_binop(b, "arith.andi", ok, fine);
            product = next;
            sizes.push(s);
        }
        let whole = build_cmpi(b, "eq", product, n);
        let ok = build_binop(b, "arith.andi", ok, whole);
        build_assert(
            b,
            ok,
            "memref.expand_shape whose sizes do not multiply to the source's size",
        );
        let mut stride = src.strides[r];
        for (i, &k) in g.iter().enumerate().rev() {
            d.sizes[k] = sizes[i];
            d.strides[k] = stride;
            stride = mul(b, stride, sizes[i]);
        }
    }
    check_static(b, &mut d, &t);
    d
}

fn dim(b: &mut Builder, d: &Desc, c: ValueId) -> ValueId {
    if let Some(k) = dialects::arith::fold::constant_int(b.ctx, c) {
        if let Some(&n) = usize::try_from(k).ok().and_then(|k| d.sizes.get(k)) {
            return n;
        }
    }
    let rank = cst(b, d.sizes.len() as i64);
    let ok = build_cmpi(b, "ult", c, rank);
    build_assert(b, ok, "memref.dim of a dimension out of range");
    let mut out = cst(b, 0);
    for (k, &n) in d.sizes.iter().enumerate() {
        let kk = cst(b, k as i64);
        let is = build_cmpi(b, "eq", c, kk);
        out = b.op1("arith.select", &[is, n, out], Type::Index, vec![]);
    }
    out
}

/// Runs `body` at every index of `sizes` (row-major nest of `scf.for`).
fn nest(
    b: &mut Builder,
    sizes: &[ValueId],
    idx: &mut Vec<ValueId>,
    body: &mut dyn FnMut(&mut Builder, &[ValueId]),
) {
    if idx.len() == sizes.len() {
        body(b, idx);
        return;
    }
    let zero = cst(b, 0);
    let one = cst(b, 1);
    let n = sizes[idx.len()];
    dialects::scf::build_for(b, zero, n, one, &[], |b, i, _| {
        idx.push(i);
        nest(b, sizes, idx, body);
        idx.pop();
        vec![]
    });
}

fn copy(b: &mut Builder, src: &Desc, dst: &Desc, elem: &Type) {
    for (&x, &y) in src.sizes.iter().zip(&dst.sizes) {
        let ok = build_cmpi(b, "eq", x, y);
        build_assert(b, ok, "memref.copy between memrefs of different sizes");
    }
    let mut total = cst(b, 1);
    for &n in &src.sizes {
        total = mul(b, total, n);
    }
    let tmp = b.op1(
        "arr.alloc",
        &[total],
        Type::arr(elem.clone()),
        vec![(dialects::arr::UNINIT.to_string(), Attribute::Unit)],
    );
    // The flat position of an index in the temporary.
    let flat = |b: &mut Builder, idx: &[ValueId], sizes: &[ValueId]| {
        let mut p = cst(b, 0);
        for (k, &i) in idx.iter().enumerate() {
            p = mul(b, p, sizes[k]);
            p = add(b, p, i);
        }
        p
    };
    let sizes = src.sizes.clone();
    nest(b, &sizes, &mut Vec::new(), &mut |b, idx| {
        let p = position(b, src, idx);
        let x = dialects::arr::load(b, src.buf, p);
        let f = flat(b, idx, &sizes);
        dialects::arr::store(b, tmp, f, x);
    });
    nest(b, &sizes, &mut Vec::new(), &mut |b, idx| {
        let f = flat(b, idx, &sizes);
        let x = dialects::arr::load(b, tmp, f);
        let p = position(b, dst, idx);
        dialects::arr::store(b, dst.buf, p, x);
    });
    dialects::arr::free(b, tmp);
}

/// Lowers every memref op of the module onto `arr`; returns how many.
pub fn lower_memrefs(ctx: &mut Context) -> Result<u64, Diagnostic> {
    let touches = |ctx: &Context, o: OpId| {
        ctx.operands(o)
            .iter()
            .chain(ctx.results(o))
            .any(|&v| ctx.ty(v).as_memref().is_some())
    };
    let ops: Vec<OpId> = ctx
        .walk_all()
        .into_iter()
        .filter(|&o| is_memref_op(ctx, o) || (crosses_calls(ctx, o) && touches(ctx, o)))
        .collect();
    // Functions at any depth (nested modules included).
    let funcs: Vec<OpId> = ctx
        .walk_all()
        .into_iter()
        .filter(|&f| ctx.is(f, "func.func") && has_memref_signature(ctx, f))
        .collect();
    if ops.is_empty() && funcs.is_empty() {
        return Ok(0);
    }
    check(ctx)?;
    let mut descs: HashMap<ValueId, Desc> = HashMap::new();
    for f in funcs {
        convert_signature(ctx, f, &mut descs);
    }
    let get = |descs: &HashMap<ValueId, Desc>, ctx: &Context, op: OpId, v: ValueId| {
        descs.get(&v).cloned().ok_or_else(|| {
            Diagnostic::at_op(
                ctx,
                op,
                "memref operand defined after its use (not lowered)",
            )
        })
    };
    for &op in &ops {
        let name = ctx.op_name(op).to_string();
        let operands = ctx.operands(op).to_vec();
        let mut b = Builder::before(ctx, op);
        b.smart = true;
        match name.as_str() {
            "memref.alloc" | "memref.alloca" => {
                let d = alloc(&mut b, op);
                let r = b.ctx.result(op, 0);
                descs.insert(r, d);
            }
            "memref.load" => {
                let d = get(&descs, b.ctx, op, operands[0])?;
                let p = position(&mut b, &d, &operands[1..]);
                let x = dialects::arr::load(&mut b, d.buf, p);
                let r = b.ctx.result(op, 0);
                b.ctx.replace_all_uses(r, x);
            }
            "memref.store" => {
                let d = get(&descs, b.ctx, op, operands[1])?;
                let p = position(&mut b, &d, &operands[2..]);
                dialects::arr::store(&mut b, d.buf, p, operands[0]);
            }
            "memref.realloc" => {
                let d = get(&descs, b.ctx, op, operands[0])?;
                let nd = realloc(&mut b, op, &d, operands.get(1).copied());
                let r = b.ctx.result(op, 0);
                descs.insert(r, nd);
            }
            "memref.atomic_rmw" => {
                // One thread runs it (module doc of
                // `dialects::memref::atomic`): read, combine, write.
                let d = get(&descs, b.ctx, op, operands[1])?;
                let p = position(&mut b, &d, &operands[2..]);
                let old = dialects::arr::load(&mut b, d.buf, p);
                let new = match dialects::memref::atomic::kind(b.ctx, op) {
                    Some(&(_, Some(name), _, _)) => {
                        let t = b.ctx.ty(old).clone();
                        b.op1(name, &[old, operands[0]], t, vec![])
                    }
                    _ => operands[0],
                };
                dialects::arr::store(&mut b, d.buf, p, new);
                let r = b.ctx.result(op, 0);
                b.ctx.replace_all_uses(r, old);
            }
            "memref.dim" => {
                let d = get(&descs, b.ctx, op, operands[0])?;
                let n = dim(&mut b, &d, operands[1]);
                let r = b.ctx.result(op, 0);
                b.ctx.replace_all_uses(r, n);
            }
            "memref.dealloc" => {
                let d = get(&descs, b.ctx, op, operands[0])?;
                dialects::arr::free(&mut b, d.buf);
            }
            "memref.cast" => {
                let mut d = get(&descs, b.ctx, op, operands[0])?;
                let r = b.ctx.result(op, 0);
                let t = b.ctx.ty(r).as_memref().cloned().expect("verified");
                check_static(&mut b, &mut d, &t);
                descs.insert(r, d);
            }
            name @ ("memref.subview"
            | "memref.reinterpret_cast"
            | "memref.collapse_shape"
            | "memref.expand_shape") => {
                let src = get(&descs, b.ctx, op, operands[0])?;
                let view = match name {
                    "memref.subview" => subview,
                    "memref.reinterpret_cast" => reinterpret,
                    "memref.collapse_shape" => collapse,
                    _ => expand,
                };
                let d = view(&mut b, op, &src);
                let r = b.ctx.result(op, 0);
                descs.insert(r, d);
            }
            "memref.extract_strided_metadata" => {
                let d = get(&descs, b.ctx, op, operands[0])?;
                let zero = cst(&mut b, 0);
                let rs = b.ctx.results(op).to_vec();
                descs.insert(
                    rs[0],
                    Desc {
                        buf: d.buf,
                        offset: zero,
                        sizes: Vec::new(),
                        strides: Vec::new(),
                    },
                );
                let vals = std::iter::once(d.offset).chain(d.sizes).chain(d.strides);
                for (r, v) in rs[1..].iter().zip(vals) {
                    b.ctx.replace_all_uses(*r, v);
                }
            }
            "memref.rank" => {
                let n = b.ctx.ty(operands[0]).as_memref().map_or(0, |m| m.rank());
                let c = cst(&mut b, n as i64);
                let r = b.ctx.result(op, 0);
                b.ctx.replace_all_uses(r, c);
            }
            "memref.copy" => {
                let s = get(&descs, b.ctx, op, operands[0])?;
                let t = get(&descs, b.ctx, op, operands[1])?;
                let elem = b
                    .ctx
                    .ty(operands[0])
                    .as_memref()
                    .map(|m| m.elem.clone())
                    .expect("verified");
                copy(&mut b, &s, &t, &elem);
            }
            "func.return" => {
                let vs = flatten_values(b.ctx, op, &descs, &operands)?;
                b.smart = false;
                b.op("func.return", &vs, &[], vec![]);
            }
            "func.call" => {
                let vs = flatten_values(b.ctx, op, &descs, &operands)?;
                let old = b.ctx.results(op).to_vec();
                let types: Vec<Type> = old
                    .iter()
                    .flat_map(|&r| descriptor_types(b.ctx.ty(r)))
                    .collect();
                let attrs = b.ctx.op(op).attrs.to_vec();
                b.smart = false;
                let new = b.op("func.call", &vs, &types, attrs);
                bind_parts(b.ctx, &old, &new, &mut descs);
            }
            other => {
                return Err(Diagnostic::at_op(
                    b.ctx,
                    op,
                    format!("'{other}' has no lowering to 'arr'"),
                ))
            }
        }
    }
    // Uses first: every memref result is now unused.
    for &op in ops.iter().rev() {
        ctx.erase_op(op);
    }
    Ok(ops.len() as u64)
}
