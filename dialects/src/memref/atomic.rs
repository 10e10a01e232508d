//! `memref.atomic_rmw` (MLIR's op of that name; issue 45, item 4): reads
//! one element, combines it with a value and writes the result back, as one
//! indivisible step, and returns the element's old value.
//!
//! Custom form `%old = memref.atomic_rmw addf %x, %m[%i, %j] : (f32,
//! memref<?x?xf32>) -> f32`; generic form `"memref.atomic_rmw"(%x, %m, %i,
//! %j) {kind = 0 : i64}`, the kind as MLIR 16 numbers it ([`KINDS`]). The
//! combining op of each kind is an `arith` op with that op's semantics
//! (`maxf`/`minf` are `arith.maxf`/`arith.minf`: a NaN operand gives NaN,
//! and `-0 < +0`); `assign` stores `%x`. Float kinds need a float element,
//! the others but `assign` an integer one.
//!
//! L0 runs one thread per memory access order that the program states
//! (`scf.forall` iterations touch disjoint memory, [`crate::alias`]), so
//! the op is its read, combine and write in sequence: the interpreter does
//! that, and `lower` (`passes::memref_to_arr`) rewrites it into
//! `arr.load`, the `arith` op and `arr.store`. The index faults out of
//! bounds as `memref.load` does. Effects: it reads and writes its memref
//! (operand 1).

use smallvec::{smallvec, SmallVec};

use ir::ast::SyntaxError;
use ir::custom::{CustomParser, ParsedOp};
use ir::interp::{Interp, RtValue, RunError};
use ir::printer::Printer;
use ir::{Attribute, Context, OpId, Type};

use crate::arith::eval::{self, Bin, Scalar};

/// The op's name.
pub const NAME: &str = "memref.atomic_rmw";

/// Which element types a kind takes.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Family {
    /// Floats (`f16`, `bf16`, `f32`, `f64`).
    Float,
    /// Integers and `index`.
    Int,
    /// Any scalar (`assign`).
    Any,
}

/// One kind: its MLIR 16 keyword, the `arith` op that combines the old
/// element (left) with the value (right), `None` for `assign`, the
/// interpreter's operation, and the element types it takes. The position
/// in [`KINDS`] is MLIR 16's number for it (`AtomicRMWKind`).
pub type Kind = (&'static str, Option<&'static str>, Option<Bin>, Family);

/// The kinds, in MLIR 16's numbering.
pub const KINDS: [Kind; 13] = [
    ("addf", Some("arith.addf"), Some(Bin::AddF), Family::Float),
    ("addi", Some("arith.addi"), Some(Bin::AddI), Family::Int),
    ("assign", None, None, Family::Any),
    ("maxf", Some("arith.maxf"), Some(Bin::MaxF), Family::Float),
    ("maxs", Some("arith.maxi"), Some(Bin::MaxI), Family::Int),
    ("maxu", Some("arith.maxui"), Some(Bin::MaxUI), Family::Int),
    ("minf", Some("arith.minf"), Some(Bin::MinF), Family::Float),
    ("mins", Some("arith.mini"), Some(Bin::MinI), Family::Int),
    ("minu", Some("arith.minui"), Some(Bin::MinUI), Family::Int),
    ("mulf", Some("arith.mulf"), Some(Bin::MulF), Family::Float),
    ("muli", Some("arith.muli"), Some(Bin::MulI), Family::Int),
    ("ori", Some("arith.ori"), Some(Bin::OrI), Family::Int),
    ("andi", Some("arith.andi"), Some(Bin::AndI), Family::Int),
];

/// The kind of `op`, if its `kind` attribute names one.
pub fn kind(ctx: &Context, op: OpId) -> Option<&'static Kind> {
    let k = ctx.attr(op, "kind")?.as_int()?;
    KINDS.get(usize::try_from(k).ok()?)
}

pub(super) fn verify(ctx: &Context, op: OpId) -> Result<(), String> {
    let Some(&(name, _, _, family)) = kind(ctx, op) else {
        return Err(format!(
            "needs attribute 'kind', an integer from 0 to {}",
            KINDS.len() - 1
        ));
    };
    if ctx.operands(op).len() < 2 {
        return Err("expects a value and a memref".into());
    }
    super::verify_access(ctx, op, 1)?;
    let m = super::operand_memref(ctx, op, 1)?;
    let t = ctx.ty(ctx.operand(op, 0));
    if *t != m.elem {
        return Err(format!(
            "value has type '{t}', expected the element type '{}'",
            m.elem
        ));
    }
    if *ctx.ty(ctx.result(op, 0)) != m.elem {
        return Err(format!("result must have the element type '{}'", m.elem));
    }
    let ok = match family {
        Family::Float => t.is_float(),
        Family::Int => t.is_integer() || *t == Type::Index,
        Family::Any => true,
    };
    if !ok {
        return Err(format!(
            "kind '{name}' does not take elements of type '{t}'"
        ));
    }
    Ok(())
}

pub(super) fn interp(
    it: &mut Interp,
    op: OpId,
    args: &[RtValue],
) -> Result<SmallVec<[RtValue; 2]>, RunError> {
    let ctx = it.ctx;
    let old = super::interp::load(it, op, &args[1..])?.remove(0);
    let &(_, _, bin, _) = kind(ctx, op).ok_or_else(|| RunError::at(ctx, op, "unknown kind"))?;
    let new = match bin {
        None => args[0].clone(),
        Some(bin) => {
            let ty = ctx.ty(ctx.result(op, 0));
            let (Some(a), Some(b)) = (Scalar::from_rt(&old, ty), Scalar::from_rt(&args[0], ty))
            else {
                return Err(RunError::at(
                    ctx,
                    op,
                    "operands do not match the op's types",
                ));
            };
            eval::binary(bin, ty, a, b)
                .map_err(|m| RunError::at(ctx, op, m))?
                .to_rt(ty)
        }
    };
    let mut store_args = vec![new];
    store_args.extend_from_slice(&args[1..]);
    super::interp::store(it, op, &store_args)?;
    Ok(smallvec![old])
}

/// `kind %x, %m[%i, ...] {attrs} : (T, memref<...>) -> T`.
pub(super) fn parse(cp: &mut CustomParser) -> Result<ParsedOp, SyntaxError> {
    let mut p = ParsedOp::default();
    let at = cp.loc();
    let word = cp.keyword()?;
    let Some(k) = KINDS.iter().position(|k| k.0 == word) else {
        return Err(SyntaxError {
            offset: at,
            message: format!("unknown atomic_rmw kind '{word}'"),
        });
    };
    let x = cp.expect_value()?;
    cp.expect_punct(",")?;
    let m = cp.expect_value()?;
    let mut idx = cp.expect_square()?;
    let vals = idx.value_list()?;
    idx.finish()?;
    cp.optional_attr_dict(&mut p.attrs);
    p.attrs
        .push(("kind".into(), Attribute::int(k as i64, Type::I64)));
    cp.expect_punct(":")?;
    let ts = cp.type_list()?;
    let [vt, mt] = <[Type; 2]>::try_from(ts).map_err(|_| SyntaxError {
        offset: at,
        message: "expected the types '(value type, memref type) -> value type'".into(),
    })?;
    cp.expect_punct("->")?;
    let rt = cp.expect_type()?;
    p.operands.push((x, Some(vt)));
    p.operands.push((m, Some(mt)));
    p.operands
        .extend(vals.into_iter().map(|v| (v, Some(Type::Index))));
    p.result_types.push(rt);
    Ok(p)
}

pub(super) fn print(p: &mut Printer, op: OpId) -> std::fmt::Result {
    let ctx = p.ctx();
    let ops = ctx.operands(op);
    let Some(k) = kind(ctx, op).filter(|_| ops.len() >= 2) else {
        p.w(" <<malformed memref.atomic_rmw>>");
        return Ok(());
    };
    p.w(" ");
    p.w(k.0);
    p.w(" ");
    p.value(ops[0]);
    p.w(", ");
    p.value(ops[1]);
    p.w("[");
    p.values(&ops[2..]);
    p.w("]");
    p.attr_dict(op, &["kind"]);
    p.w(" : (");
    p.ty(ctx.ty(ops[0]));
    p.w(", ");
    p.ty(ctx.ty(ops[1]));
    p.w(") -> ");
    p.ty(ctx.ty(ctx.result(op, 0)));
    Ok(())
}
