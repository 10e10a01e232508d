//! `memref.realloc` (MLIR's op of that name; issue 45, item 4): a new
//! rank-1 allocation of another size holding the source's elements, the
//! source freed.
//!
//! Custom form `%b = memref.realloc %a : memref<4xf32> to memref<8xf32>`,
//! with the new size as an operand where the result's size is dynamic:
//! `memref.realloc %a(%n) : memref<?xf32> to memref<?xf32>`; an optional
//! `{alignment = 8 : i64}` is kept (L0's allocations are aligned to their
//! element). Source and result are rank-1 memrefs of one element type with
//! the identity layout.
//!
//! Meaning (MLIR's): the first `min(old, new)` elements are copied, the
//! others are undefined until stored, and the source's allocation is freed,
//! so using the source (or a view of it) afterwards is undefined. MLIR also
//! leaves undefined a source that is not a whole allocation (a view of part
//! of one); L0 faults there, as it does on a negative size or a source
//! already freed. The interpreter does all of this; `lower`
//! (`passes::memref_to_arr`) checks the same, allocates, copies in a loop
//! and frees. Effects: it reads and frees its source, and its result is a
//! fresh allocation ([`crate::alias`]).
//!
//! Canonicalization (MLIR's `SimplifyDeadAlloc` for `realloc`): a realloc
//! whose result is only stored into and freed is erased with those users.
//! The source then stays allocated; a program that is defined never uses
//! it after the realloc, so only a leak and the faults of undefined uses
//! (a partial source, a negative size) go with it.

use std::cell::RefCell;
use std::rc::Rc;

use smallvec::{smallvec, SmallVec};

use ir::ast::SyntaxError;
use ir::custom::{CustomParser, ParsedOp};
use ir::interp::{Interp, MemRefValue, RtValue, RunError};
use ir::printer::Printer;
use ir::{Context, MemRefType, OpId, Type};

/// The op's name.
pub const NAME: &str = "memref.realloc";

/// The message of the fault on a source that is not a whole allocation.
pub const NOT_WHOLE: &str = "memref.realloc of a view that is not a whole allocation";

fn rank1(t: &Type, what: &str) -> Result<MemRefType, String> {
    match t.as_memref() {
        Some(m) if m.rank() == 1 && m.layout.is_none() => Ok(m.clone()),
        _ => Err(format!(
            "{what} must be a rank-1 memref with the identity layout, got '{t}'"
        )),
    }
}

pub(super) fn verify(ctx: &Context, op: OpId) -> Result<(), String> {
    let Some(&src) = ctx.operands(op).first() else {
        return Err("expects a source memref".into());
    };
    let s = rank1(ctx.ty(src), "the source")?;
    let r = rank1(ctx.ty(ctx.result(op, 0)), "the result")?;
    if s.elem != r.elem {
        return Err(format!(
            "the result's element type '{}' differs from the source's '{}'",
            r.elem, s.elem
        ));
    }
    let want = 1 + usize::from(r.shape[0].is_none());
    let n = ctx.operands(op).len();
    if n != want {
        return Err(format!(
            "expects {} size operand{} (one for a dynamic result size), got {}",
            want - 1,
            if want == 2 { "" } else { "s" },
            n - 1
        ));
    }
    if let Some(&d) = ctx.operands(op).get(1) {
        if *ctx.ty(d) != Type::Index {
            return Err(format!("the size must be 'index', got '{}'", ctx.ty(d)));
        }
    }
    Ok(())
}

pub(super) fn interp(
    it: &mut Interp,
    op: OpId,
    args: &[RtValue],
) -> Result<SmallVec<[RtValue; 2]>, RunError> {
    let ctx = it.ctx;
    let m = super::interp::view(ctx, op, &args[0])?;
    let old = m.sizes[0];
    if old > 0 && m.buf.borrow().is_empty() {
        return Err(RunError::at(ctx, op, "memref.realloc of a freed memref"));
    }
    let whole =
        m.offset == 0 && m.buf.borrow().len() as i64 == old && (old <= 1 || m.strides[0] == 1);
    if !whole {
        return Err(RunError::at(ctx, op, NOT_WHOLE));
    }
    let t = ctx.ty(ctx.result(op, 0)).as_memref().cloned();
    let n = match (t.and_then(|t| t.shape[0]), args.get(1)) {
        (Some(n), _) => n as i64,
        (None, Some(v)) => v
            .as_int()
            .ok_or_else(|| RunError::at(ctx, op, "expected an integer size"))?,
        (None, None) => return Err(RunError::at(ctx, op, "missing the size operand")),
    };
    if n < 0 {
        return Err(RunError::at(ctx, op, format!("negative size {n}")));
    }
    let mut data = super::interp::uninit_buffer(ctx, op, n)?;
    for (d, s) in data.iter_mut().zip(m.buf.borrow().iter()) {
        *d = s.clone();
    }
    *m.buf
        .try_borrow_mut()
        .map_err(|_| RunError::at(ctx, op, "memref is already borrowed"))? = Vec::new();
    Ok(smallvec![super::interp::wrap(MemRefValue {
        buf: Rc::new(RefCell::new(data)),
        offset: 0,
        sizes: vec![n],
        strides: vec![1],
    })])
}

/// `%a[(%n)] {attrs} : memref<..> to memref<..>`.
pub(super) fn parse(cp: &mut CustomParser) -> Result<ParsedOp, SyntaxError> {
    let mut p = ParsedOp::default();
    let a = cp.expect_value()?;
    let size = match cp.try_paren() {
        Some(mut inner) => {
            let v = inner.expect_value()?;
            inner.finish()?;
            Some(v)
        }
        None => None,
    };
    cp.optional_attr_dict(&mut p.attrs);
    cp.expect_punct(":")?;
    let src = cp.expect_type()?;
    cp.expect_keyword("to")?;
    let dst = cp.expect_type()?;
    p.operands.push((a, Some(src)));
    if let Some(v) = size {
        p.operands.push((v, Some(Type::Index)));
    }
    p.result_types.push(dst);
    Ok(p)
}

pub(super) fn print(p: &mut Printer, op: OpId) -> std::fmt::Result {
    let ctx = p.ctx();
    let ops = ctx.operands(op);
    let Some(&a) = ops.first() else {
        p.w(" <<malformed memref.realloc>>");
        return Ok(());
    };
    p.w(" ");
    p.value(a);
    if let Some(&n) = ops.get(1) {
        p.w("(");
        p.value(n);
        p.w(")");
    }
    p.attr_dict(op, &[]);
    p.w(" : ");
    p.ty(ctx.ty(a));
    p.w(" to ");
    p.ty(ctx.ty(ctx.result(op, 0)));
    Ok(())
}
