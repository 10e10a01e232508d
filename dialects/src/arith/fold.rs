//! Folds and canonicalization rewrites of the arith ops.
//!
//! Every fold is exact: constant folding uses the interpreter's semantics
//! ([`super::eval`]), so IEEE rounding (in `f32` for `f32`), NaN propagation
//! and wrapping integer arithmetic are preserved, and a fold that would fault
//! at run time (division or remainder by zero) or that MLIR leaves undefined
//! (a shift by the width or more) is left alone. Identities are only
//! those that hold for every input: `x + 0.0` is *not* folded for floats
//! (`-0.0 + 0.0 = +0.0`), `x * 0` only for integers (`NaN * 0`, `-1.0 * 0`),
//! whatever fast-math flags ([`ir::FastMath`]) an op carries: IR-SPEC §1
//! lets only `contract` and `reassoc` license a result other than IEEE's,
//! and those are for the backends (fused multiply-adds, reassociated
//! reductions). A fold keeps an op's flags on the ops it builds.

use smallvec::{smallvec, SmallVec};

use ir::builder::Builder;
use ir::spec::{FoldResult, OpState, Traits};
use ir::{Attribute, Context, Type, ValueId};

use super::eval::{self, Bin, Cast, Scalar, Un};

type Folded = Option<SmallVec<[FoldResult; 1]>>;

/// The `value` attribute of the constant-like op defining `v`, if any.
pub fn constant_of(ctx: &Context, v: ValueId) -> Option<&Attribute> {
    let op = ctx.def_op(v)?;
    if !ctx.alive(op) || !ctx.has_traits(op, Traits::CONSTANT_LIKE) {
        return None;
    }
    ctx.attr(op, "value")
}

/// The integer constant `v` (sign-extended from its type's width; an `i1`
/// `true` is `1` here), if `v` is one.
pub fn constant_int(ctx: &Context, v: ValueId) -> Option<i64> {
    match constant_of(ctx, v)? {
        Attribute::Int(x, _) => Some(*x),
        Attribute::Bool(b) => Some(*b as i64),
        _ => None,
    }
}

/// The float constant `v` (`f32` widened), if `v` is one.
pub fn constant_float(ctx: &Context, v: ValueId) -> Option<f64> {
    constant_of(ctx, v)?.as_float()
}

fn scalar(ctx: &Context, v: ValueId, ty: &Type) -> Option<Scalar> {
    Scalar::from_attr(constant_of(ctx, v)?, ty)
}

/// The integer constant `v` at type `ty`, sign-extended from the type's
/// width as [`eval`] carries integers (an `i1` `true` is `-1`), if `v` is
/// one.
pub fn constant_sint(ctx: &Context, v: ValueId, ty: &Type) -> Option<i64> {
    scalar(ctx, v, ty)?.int()
}

fn value(v: ValueId) -> Folded {
    Some(smallvec![FoldResult::Value(v)])
}

fn constant(a: Attribute) -> Folded {
    Some(smallvec![FoldResult::Constant(a)])
}

/// The operand defining op's kind name and its operands, if `v` is a result.
fn producer(ctx: &Context, v: ValueId) -> Option<(&'static str, &[ValueId])> {
    let op = ctx.def_op(v)?;
    ctx.alive(op).then(|| (ctx.op_name(op), ctx.operands(op)))
}

/// Fold of the binary ops (`K` is a [`Bin`] discriminant).
pub fn fold_binary<const K: u8>(ctx: &Context, st: &OpState) -> Folded {
    let op = Bin::of(K);
    if st.operands.len() != 2 || st.result_types.len() != 1 {
        return None;
    }
    let ty = &st.result_types[0];
    let (x, y) = (st.operands[0], st.operands[1]);
    if ctx.ty(x) != ty || ctx.ty(y) != ty {
        return None;
    }
    let (a, b) = (scalar(ctx, x, ty), scalar(ctx, y, ty));
    let shift = matches!(op, Bin::ShLI | Bin::ShRSI | Bin::ShRUI);
    if let (Some(a), Some(b)) = (a, b) {
        // A shift by the width or more is undefined in MLIR: not folded,
        // except at `i0`, where every value, shifted or not, is 0.
        let amount = b.int().map(|v| eval::zext(v, ty));
        if shift && *ty != Type::I0 && amount.is_none_or(|n| n >= eval::width(ty) as u64) {
            return None;
        }
        return eval::binary(op, ty, a, b)
            .ok()
            .map(|s| smallvec![FoldResult::Constant(s.to_attr(ty))]);
    }
    let is_int = ty.is_integer();
    let int = |s: Option<Scalar>, v: i64| is_int && s == Some(Scalar::Int(eval::sext(v, ty)));
    let float = |s: Option<Scalar>, v: f64| s.is_some_and(|s| s.is_float_bits(v));
    let zero = || constant(Scalar::Int(0).to_attr(ty));
    match op {
        Bin::AddI if int(b, 0) => value(x),
        Bin::AddI if int(a, 0) => value(y),
        Bin::AddF if float(b, -0.0) => value(x),
        Bin::AddF if float(a, -0.0) => value(y),
        Bin::SubI if int(b, 0) => value(x),
        Bin::SubI if is_int && x == y => zero(),
        // (x + y) - y -> x, (x + y) - x -> y, (x - y) + y -> x (wrapping).
        Bin::SubI if is_int => match producer(ctx, x) {
            Some(("arith.addi", &[p, q])) if q == y => value(p),
            Some(("arith.addi", &[p, q])) if p == y => value(q),
            _ => None,
        },
        Bin::AddI if is_int => match (producer(ctx, x), producer(ctx, y)) {
            (Some(("arith.subi", &[p, q])), _) if q == y => value(p),
            (_, Some(("arith.subi", &[p, q]))) if q == x => value(p),
            _ => None,
        },
        Bin::SubF if float(b, 0.0) => value(x),
        Bin::MulI if int(b, 1) => value(x),
        Bin::MulI if int(a, 1) => value(y),
        Bin::MulI if int(a, 0) || int(b, 0) => zero(),
        Bin::MulF if float(b, 1.0) => value(x),
        Bin::MulF if float(a, 1.0) => value(y),
        Bin::DivSI if int(b, 1) => value(x),
        Bin::RemSI if int(b, 1) => zero(),
        Bin::DivF if float(b, 1.0) => value(x),
        Bin::ShLI | Bin::ShRSI | Bin::ShRUI if int(b, 0) => value(x),
        Bin::DivUI | Bin::CeilDivUI if int(b, 1) && *ty != Type::I1 => value(x),
        Bin::CeilDivSI | Bin::FloorDivSI if int(b, 1) && *ty != Type::I1 => value(x),
        Bin::RemUI if int(b, 1) && *ty != Type::I1 => zero(),
        Bin::MinUI | Bin::MaxUI if x == y => value(x),
        Bin::AndI | Bin::OrI | Bin::MinI | Bin::MaxI | Bin::MinF | Bin::MaxF if x == y => value(x),
        Bin::MinNumF | Bin::MaxNumF if x == y => value(x),
        Bin::XorI if x == y => zero(),
        Bin::AndI if int(b, 0) => zero(),
        Bin::AndI if int(a, 0) => zero(),
        Bin::AndI if int(b, -1) => value(x),
        Bin::AndI if int(a, -1) => value(y),
        Bin::OrI | Bin::XorI if int(b, 0) => value(x),
        Bin::OrI | Bin::XorI if int(a, 0) => value(y),
        Bin::OrI if int(a, -1) || int(b, -1) => constant(Scalar::Int(-1).to_attr(ty)),
        _ => None,
    }
}

/// Fold of the unary ops (`K` is a [`Un`] discriminant).
pub fn fold_unary<const K: u8>(ctx: &Context, st: &OpState) -> Folded {
    let op = Un::of(K);
    if st.operands.len() != 1 || st.result_types.len() != 1 {
        return None;
    }
    let ty = &st.result_types[0];
    let x = st.operands[0];
    if ctx.ty(x) != ty {
        return None;
    }
    if let Some(a) = scalar(ctx, x, ty) {
        return eval::unary(op, ty, a)
            .ok()
            .map(|s| smallvec![FoldResult::Constant(s.to_attr(ty))]);
    }
    if op == Un::NegF {
        if let Some(("arith.negf", [inner])) = producer(ctx, x) {
            return value(*inner);
        }
    }
    // Rounding to an integer twice is rounding once; so is rounding a
    // value that any of the three made integral (`floor(ceil(x))`), and
    // `abs(abs(x))` is `abs(x)`.
    let integral = ["arith.floor", "arith.ceil", "arith.round"];
    match (op, producer(ctx, x)) {
        (Un::Floor | Un::Ceil | Un::Round, Some((name, _))) if integral.contains(&name) => value(x),
        (Un::Abs, Some(("arith.abs", _))) => value(x),
        _ => None,
    }
}

/// Fold of `math.fma`: constant operands only (its single rounding is not
/// a multiply and an add).
pub fn fold_fma(ctx: &Context, st: &OpState) -> Folded {
    if st.operands.len() != 3 || st.result_types.len() != 1 {
        return None;
    }
    let ty = &st.result_types[0];
    let s: Vec<Scalar> = st
        .operands
        .iter()
        .map(|&v| scalar(ctx, v, ty))
        .collect::<Option<_>>()?;
    eval::fma(ty, s[0], s[1], s[2])
        .ok()
        .map(|r| smallvec![FoldResult::Constant(r.to_attr(ty))])
}

/// Fold of the casts (`K` is a [`Cast`] discriminant).
pub fn fold_cast<const K: u8>(ctx: &Context, st: &OpState) -> Folded {
    let op = Cast::of(K);
    if st.operands.len() != 1 || st.result_types.len() != 1 {
        return None;
    }
    let to = &st.result_types[0];
    let x = st.operands[0];
    let from = ctx.ty(x);
    if !eval::cast_ok(op, from, to) {
        return None;
    }
    if let Some(a) = scalar(ctx, x, from) {
        // A float attribute holds an `f64`, which cannot keep a signaling
        // NaN that a bitcast makes: such a cast stays.
        return eval::cast(op, from, to, a)
            .ok()
            .filter(|s| !(op == Cast::Bitcast && eval::as_f64(*s).is_some_and(f64::is_nan)))
            .map(|s| smallvec![FoldResult::Constant(s.to_attr(to))]);
    }
    // index_cast(index_cast(y)) back to y's type is y when the inner cast
    // did not narrow (i32 -> index -> i32, i64 -> index -> i64).
    if op == Cast::IndexCast {
        if let Some(("arith.index_cast", [inner])) = producer(ctx, x) {
            let orig = ctx.ty(*inner);
            if orig == to && orig.int_width() <= from.int_width() {
                return value(*inner);
            }
        }
    }
    None
}

fn predicate(st: &OpState, float: bool) -> Option<&'static str> {
    eval::predicate_name(st.attr("predicate"), float)
}

fn bool_attr(b: bool) -> Attribute {
    Attribute::Int(b as i64, Type::I1)
}

/// Whether `i` is the index of a loop that runs it over `[lo, n)` with a
/// constant `lo >= 0`: a `gen.loop` of size `n`, or an `scf.for` from a
/// constant `lo >= 0` to `n` with a constant positive step. Inside the
/// body, then, `0 <= i < n` holds, signed and unsigned.
fn index_below(ctx: &Context, i: ValueId, n: ValueId) -> bool {
    let ir::context::ValueDef::BlockArg(b, 0) = ctx.value(i).def else {
        return false;
    };
    let Some(lp) = ctx.block_parent_op(b) else {
        return false;
    };
    match ctx.op_name(lp) {
        "gen.loop" => ctx.operand(lp, 0) == n,
        "scf.for" => {
            ctx.operand(lp, 1) == n
                && constant_int(ctx, ctx.operand(lp, 0)).is_some_and(|lo| lo >= 0)
                && constant_int(ctx, ctx.operand(lp, 2)).is_some_and(|s| s > 0)
        }
        _ => false,
    }
}

/// Whether `x` and `y` are `vec.len`s of vectors whose lengths provably
/// agree ([`crate::vec::len_key`]).
fn same_length(ctx: &Context, x: ValueId, y: ValueId) -> bool {
    ctx.def_op_named(x, "vec.len").is_some()
        && ctx.def_op_named(y, "vec.len").is_some()
        && crate::vec::size_key(ctx, x) == crate::vec::size_key(ctx, y)
}

/// Fold of `arith.cmpi`: constants, `x <pred> x`, and a loop's index
/// against the loop's upper bound ([`index_below`]: `i < n` is true).
pub fn fold_cmpi(ctx: &Context, st: &OpState) -> Folded {
    if st.operands.len() != 2 || st.result_types.len() != 1 || st.result_types[0] != Type::I1 {
        return None;
    }
    let pred = predicate(st, false)?;
    let (x, y) = (st.operands[0], st.operands[1]);
    let ty = ctx.ty(x);
    if ctx.ty(y) != ty || !ty.is_integer() {
        return None;
    }
    if let (Some(a), Some(b)) = (scalar(ctx, x, ty), scalar(ctx, y, ty)) {
        return constant(bool_attr(eval::cmpi(pred, ty, a.int()?, b.int()?)?));
    }
    // Equal values, or lengths that provably agree (`vec.len` of vectors
    // with one length key, e.g. two collects of one loop emitted to alike).
    if x == y || (*ty == Type::Index && same_length(ctx, x, y)) {
        return constant(bool_attr(eval::cmpi(pred, ty, 0, 0)?));
    }
    // As 0 and 1, which compare as every i < n with 0 <= i does.
    if index_below(ctx, x, y) {
        return constant(bool_attr(eval::cmpi(pred, ty, 0, 1)?));
    }
    if index_below(ctx, y, x) {
        return constant(bool_attr(eval::cmpi(pred, ty, 1, 0)?));
    }
    None
}

/// Fold of `arith.cmpf`: constants only (`x == x` is false for NaN).
pub fn fold_cmpf(ctx: &Context, st: &OpState) -> Folded {
    if st.operands.len() != 2 || st.result_types.len() != 1 || st.result_types[0] != Type::I1 {
        return None;
    }
    let pred = predicate(st, true)?;
    let (x, y) = (st.operands[0], st.operands[1]);
    let ty = ctx.ty(x);
    if ctx.ty(y) != ty || !ty.is_float() {
        return None;
    }
    let (a, b) = (scalar(ctx, x, ty), scalar(ctx, y, ty));
    let nan = |s: Option<Scalar>| s.and_then(eval::as_f64).is_some_and(f64::is_nan);
    if nan(a) || nan(b) {
        // A NaN operand decides every predicate: ordered ones are false,
        // unordered ones true, whatever the other operand.
        return constant(bool_attr(eval::cmpf(pred, f64::NAN, 0.0)?));
    }
    let a = eval::as_f64(a?)?;
    let b = eval::as_f64(b?)?;
    constant(bool_attr(eval::cmpf(pred, a, b)?))
}

/// Fold of `arith.select`: a constant condition, equal branches, and
/// `select(c, true, false) = c`.
pub fn fold_select(ctx: &Context, st: &OpState) -> Folded {
    if st.operands.len() != 3 || st.result_types.len() != 1 {
        return None;
    }
    let (c, a, b) = (st.operands[0], st.operands[1], st.operands[2]);
    let ty = &st.result_types[0];
    if *ctx.ty(c) != Type::I1 || ctx.ty(a) != ty || ctx.ty(b) != ty {
        return None;
    }
    if a == b {
        return value(a);
    }
    if let Some(Scalar::Int(cv)) = scalar(ctx, c, &Type::I1) {
        return value(if cv != 0 { a } else { b });
    }
    if *ty == Type::I1
        && scalar(ctx, a, ty) == Some(Scalar::Int(-1))
        && scalar(ctx, b, ty) == Some(Scalar::Int(0))
    {
        return value(c);
    }
    None
}

/// Canonicalization of commutative ops: a constant left operand moves to
/// the right (`addi(c, x) -> addi(x, c)`), so folds see one shape.
/// MLIR's constant reassociation for integers (exact: the ring wraps):
/// `op(op(x, c1), c2) -> op(x, c1 op c2)` for `addi muli andi ori xori`,
/// and `(x + c1) - c2 -> x + (c1 - c2)`, `(x - c1) + c2 -> x + (c2 - c1)`,
/// `(x - c1) - c2 -> x - (c1 + c2)`. (Commutative ops have their constant
/// on the right already, [`constant_to_right`].)
pub fn reassociate(b: &mut Builder, st: &OpState) -> Option<SmallVec<[ValueId; 2]>> {
    let outer = b.ctx.registry().spec(st.kind).name;
    if !matches!(
        outer,
        "arith.addi" | "arith.subi" | "arith.muli" | "arith.andi" | "arith.ori" | "arith.xori"
    ) {
        return None;
    }
    let [x, y] = st.operands[..] else {
        return None;
    };
    let ty = st.result_types.first()?.clone();
    if !ty.is_integer() || b.ctx.ty(x) != &ty {
        return None;
    }
    let c2 = scalar(b.ctx, y, &ty)?;
    let (inner, &[p, q]) = producer(b.ctx, x)? else {
        return None;
    };
    let c1 = scalar(b.ctx, q, &ty)?;
    if scalar(b.ctx, p, &ty).is_some() {
        return None;
    }
    let same = |n: &str| {
        n == outer
            && matches!(
                n,
                "arith.addi" | "arith.muli" | "arith.andi" | "arith.ori" | "arith.xori"
            )
    };
    // (new op, combine, left and right constants)
    let (name, combine, l, r) = match (inner, outer) {
        (i, _) if same(i) => (outer, outer, c1, c2),
        ("arith.addi", "arith.subi") => ("arith.addi", "arith.subi", c1, c2),
        ("arith.subi", "arith.addi") => ("arith.addi", "arith.subi", c2, c1),
        ("arith.subi", "arith.subi") => ("arith.subi", "arith.addi", c1, c2),
        _ => return None,
    };
    let k = match combine {
        "arith.addi" => Bin::AddI,
        "arith.subi" => Bin::SubI,
        "arith.muli" => Bin::MulI,
        "arith.andi" => Bin::AndI,
        "arith.ori" => Bin::OrI,
        _ => Bin::XorI,
    };
    let c = eval::binary(k, &ty, l, r).ok()?;
    let cv = b.op1(
        "arith.constant",
        &[],
        ty.clone(),
        vec![("value".into(), c.to_attr(&ty))],
    );
    Some(smallvec![b.op1(name, &[p, cv], ty, vec![])])
}

pub fn constant_to_right(b: &mut Builder, st: &OpState) -> Option<SmallVec<[ValueId; 2]>> {
    if st.operands.len() != 2 {
        return None;
    }
    let (x, y) = (st.operands[0], st.operands[1]);
    if constant_of(b.ctx, x).is_none() || constant_of(b.ctx, y).is_some() {
        return None;
    }
    let mut swapped = st.clone();
    swapped.operands = smallvec![y, x];
    swapped.existing = None;
    if st.existing.is_some() {
        // Hash-consing would find the op being rewritten (its key sorts the
        // operands), so build the swapped op plainly.
        let op = b.create_raw(swapped);
        return Some(SmallVec::from_slice(b.ctx.results(op)));
    }
    Some(b.create(swapped))
}
