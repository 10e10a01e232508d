//! MLIR's canonicalization patterns for `arith` beyond the folds of
//! [`super::fold`] (issue 10, item 3), each exact for every input:
//!
//! - `select`: `select(cmpi eq x y, x, y)` is `y` (and the `ne` and swapped
//!   forms); `select(c, 1, 0)` is `extui c`, `select(c, 0, 1)` is `extui(not
//!   c)`, and at `i1` `select(c, false, true)` is `not c`; `select(not c, a,
//!   b)` is `select(c, b, a)`; a `select` nested in a branch under the same
//!   condition takes that branch's value.
//! - `cmpi`: `cmpi ne (ext x), 0` with `x : i1` is `x`; comparisons of two
//!   sign extensions from one type compare the narrow values (every
//!   predicate), of two zero extensions too (`eq`, `ne`, unsigned); an
//!   `i1` compared with `true`/`false` is itself or its negation.
//! - `cmpf`: `cmpf p (sitofp x), c` and `(uitofp x)` against a float
//!   constant `c` is an integer comparison of `x` with `floor(c)` or
//!   `ceil(c)`, or a constant when `c` is NaN, infinite, outside `x`'s range
//!   or (for `eq`/`ne`) not an integer, whenever every value of `x` converts
//!   exactly (its width at most the float's precision, 24 or 53 bits; MLIR's
//!   `CmpFIntToFPConst`, after LLVM's InstCombine).
//! - `xori`: `not (cmpi p x y)` is `cmpi (not p) x y`; `(a ^ b) ^ b` is `a`
//!   (every operand order).
//! - `andi`/`ori`: `a & (a & b)` is `a & b`, `a | (a | b)` is `a | b`, `x &
//!   ~x` is 0; and, or and xor of two extensions of one kind from one type
//!   are the extension of the narrow op.
//! - Casts: `extsi(extsi x)` and `extui(extui x)` are one extension,
//!   `extsi(extui x)` is `extui x`; `trunci` of an extension or of a
//!   `trunci` takes the narrow value directly; `index_cast(extsi x)` is
//!   `index_cast x` and `index_castui(extui x)` is `index_castui x`;
//!   `bitcast(bitcast x)` is `x` back at `x`'s type and one `bitcast`
//!   otherwise, and a `bitcast` of `x` to its own type is `x`;
//!   `extf(extf x)` is one `extf`; `truncf(extf x)` is `x` at `x`'s type
//!   and `truncf x` when `x` is wider than the result (the widening is
//!   exact, so `x` is still rounded once; `f16 -> f32 -> bf16` stays).
//! - Constants on the left of a subtraction (integers wrap, so this is
//!   exact): `(c1 - x) + c2` is `(c1 + c2) - x`; `(c1 - x) - c2` is
//!   `(c1 - c2) - x`; `c2 - (c1 - x)` is `x + (c2 - c1)`; `c2 - (x - c1)`
//!   is `(c2 + c1) - x`; `c2 - (x + c1)` is `(c2 - c1) - x`.
//! - `mulf`/`divf` of two negations is the op of the operands.
//! - `minsi maxsi minui maxui` with the type's bound: `max(x, SMAX)` is
//!   `SMAX`, `max(x, SMIN)` is `x`, and so on (not for `index`, whose width
//!   MLIR leaves to the target).

use smallvec::{smallvec, SmallVec};

use ir::spec::{OpState, Registry, RewriteFn};
use ir::{Builder, Context, ValueId};
use ir::{OpId, Type};

use super::eval;
use super::fold::constant_sint as int;
use super::predicate_of as pred_of;

type Rewritten = Option<SmallVec<[ValueId; 2]>>;

/// Adds the patterns to the registered arith ops.
pub fn register(r: &mut Registry) {
    let table: &[(&str, RewriteFn)] = &[
        ("arith.select", select),
        ("arith.cmpi", cmpi),
        ("arith.cmpf", cmpf_of_int),
        ("arith.xori", xori),
        ("arith.andi", and_or),
        ("arith.ori", and_or),
        ("arith.extsi", ext_of_ext),
        ("arith.extui", ext_of_ext),
        ("arith.trunci", trunc_of_cast),
        ("arith.index_cast", index_cast_of_ext),
        ("arith.index_castui", index_cast_of_ext),
        ("arith.bitcast", bitcast_of_bitcast),
        ("arith.extf", float_casts),
        ("arith.truncf", float_casts),
        ("arith.addi", constant_minus),
        ("arith.subi", constant_minus),
        ("arith.mulf", negf_pair),
        ("arith.divf", negf_pair),
        ("arith.maxi", bounds),
        ("arith.maxsi", bounds),
        ("arith.mini", bounds),
        ("arith.minsi", bounds),
        ("arith.maxui", bounds),
        ("arith.minui", bounds),
    ];
    for &(name, f) in table {
        if let Some(spec) = r.spec_mut(name) {
            spec.rewrites.push(f);
        }
    }
}

// ----- helpers -----------------------------------------------------------------

/// The live op defining `v`, its name and operands.
fn def(ctx: &Context, v: ValueId) -> Option<(OpId, &'static str, &[ValueId])> {
    let op = ctx.def_op(v)?;
    ctx.alive(op)
        .then(|| (op, ctx.op_name(op), ctx.operands(op)))
}

fn name_of(b: &Builder, st: &OpState) -> &'static str {
    b.ctx.registry().spec(st.kind).name
}

fn one(v: ValueId) -> Rewritten {
    Some(smallvec![v])
}

/// `x` when it is `xori(c, true)` of an `i1` `c`: returns `c`.
fn negated(ctx: &Context, x: ValueId) -> Option<ValueId> {
    let (_, name, ops) = def(ctx, x)?;
    if name != "arith.xori" || *ctx.ty(x) != Type::I1 {
        return None;
    }
    match (int(ctx, ops[0], &Type::I1), int(ctx, ops[1], &Type::I1)) {
        (_, Some(-1)) => Some(ops[0]),
        (Some(-1), _) => Some(ops[1]),
        _ => None,
    }
}

fn not(b: &mut Builder, c: ValueId) -> ValueId {
    let t = super::const_int(b, 1, &Type::I1);
    b.op1("arith.xori", &[c, t], Type::I1, vec![])
}

/// The cast `name` (`arith.extsi`/`arith.extui`) defining `v`, and its source.
fn ext_source(ctx: &Context, v: ValueId) -> Option<(&'static str, ValueId)> {
    let (_, name, ops) = def(ctx, v)?;
    matches!(name, "arith.extsi" | "arith.extui").then(|| (name, ops[0]))
}

// ----- select ------------------------------------------------------------------

fn select(b: &mut Builder, st: &OpState) -> Rewritten {
    let [c, x, y] = st.operands[..] else {
        return None;
    };
    let ty = st.result_types.first()?.clone();
    let ctx = &*b.ctx;
    // select(cmpi eq/ne p q, p, q) and the swapped forms.
    if let Some((cop, "arith.cmpi", &[p, q])) = def(ctx, c) {
        let same = (x, y) == (p, q);
        let swapped = (x, y) == (q, p);
        match pred_of(ctx, cop) {
            Some("eq") if same || swapped => return one(y),
            Some("ne") if same || swapped => return one(x),
            _ => {}
        }
    }
    // A nested select under the same condition.
    if let Some((_, "arith.select", &[c2, a, _])) = def(ctx, x) {
        if c2 == c {
            return Some(smallvec![b.op1("arith.select", &[c, a, y], ty, vec![])]);
        }
    }
    if let Some((_, "arith.select", &[c2, _, d])) = def(ctx, y) {
        if c2 == c {
            return Some(smallvec![b.op1("arith.select", &[c, x, d], ty, vec![])]);
        }
    }
    // select(not c, x, y) = select(c, y, x).
    if let Some(c0) = negated(ctx, c) {
        return Some(smallvec![b.op1("arith.select", &[c0, y, x], ty, vec![])]);
    }
    // Constant 0/1 branches.
    if !ty.is_integer() || ty == Type::Index {
        return None;
    }
    let (one_, zero_) = if ty == Type::I1 { (-1, 0) } else { (1, 0) };
    match (int(ctx, x, &ty), int(ctx, y, &ty)) {
        (Some(a), Some(z)) if a == one_ && z == zero_ && ty != Type::I1 => {
            Some(smallvec![b.op1("arith.extui", &[c], ty, vec![])])
        }
        (Some(z), Some(a)) if a == one_ && z == zero_ => {
            let n = not(b, c);
            if ty == Type::I1 {
                return one(n);
            }
            Some(smallvec![b.op1("arith.extui", &[n], ty, vec![])])
        }
        _ => None,
    }
}

// ----- cmpi --------------------------------------------------------------------

/// The predicate true exactly when `p` is false.
fn negate_pred(p: &str) -> Option<&'static str> {
    Some(match p {
        "eq" => "ne",
        "ne" => "eq",
        "slt" => "sge",
        "sge" => "slt",
        "sle" => "sgt",
        "sgt" => "sle",
        "ult" => "uge",
        "uge" => "ult",
        "ule" => "ugt",
        "ugt" => "ule",
        _ => return None,
    })
}

fn cmpi(b: &mut Builder, st: &OpState) -> Rewritten {
    let [x, y] = st.operands[..] else {
        return None;
    };
    let ctx = &*b.ctx;
    let pred = eval::predicate_name(st.attr("predicate"), false)?;
    let ty = ctx.ty(x).clone();
    // An i1 against a constant.
    if ty == Type::I1 {
        let (v, k) = match (int(ctx, x, &ty), int(ctx, y, &ty)) {
            (None, Some(k)) => (x, k),
            (Some(k), None) => (y, k),
            _ => return None,
        };
        return match (pred, k) {
            ("eq", -1) | ("ne", 0) => one(v),
            ("eq", 0) | ("ne", -1) => Some(smallvec![not(b, v)]),
            _ => None,
        };
    }
    // cmpi ne (ext x : i1), 0 = x.
    if pred == "ne" && int(ctx, y, &ty) == Some(0) {
        if let Some((_, src)) = ext_source(ctx, x) {
            if *ctx.ty(src) == Type::I1 {
                return one(src);
            }
        }
    }
    // Two extensions of one kind from one type.
    let (Some((kx, a)), Some((ky, c))) = (ext_source(ctx, x), ext_source(ctx, y)) else {
        return None;
    };
    if kx != ky || ctx.ty(a) != ctx.ty(c) {
        return None;
    }
    let keeps = match kx {
        "arith.extsi" => true,
        _ => matches!(pred, "eq" | "ne" | "ult" | "ule" | "ugt" | "uge"),
    };
    keeps.then(|| smallvec![super::build_cmpi(b, pred, a, c)])
}

/// `cmpf p (sitofp|uitofp x), c` with a float constant `c` (either side).
/// Exact because the cast is exact: for `x` of width `w`, every value has at
/// most `w` (unsigned) or `w - 1` (signed) magnitude bits, no more than the
/// float's precision, so `tofp(x) p c` is the comparison of the integer `x`
/// with the real `c`, and the cast's result is never NaN.
fn cmpf_of_int(b: &mut Builder, st: &OpState) -> Rewritten {
    let [x, y] = st.operands[..] else {
        return None;
    };
    let ctx = &*b.ctx;
    let mut pred = eval::predicate_name(st.attr("predicate"), true)?;
    let (cast, c) = match (
        super::fold::constant_float(ctx, x),
        super::fold::constant_float(ctx, y),
    ) {
        (None, Some(c)) => (x, c),
        (Some(c), None) => {
            pred = swap_pred(pred)?;
            (y, c)
        }
        _ => return None,
    };
    let (_, name, ops) = def(ctx, cast)?;
    let signed = match name {
        "arith.sitofp" => true,
        "arith.uitofp" => false,
        _ => return None,
    };
    let v = ops[0];
    let ity = ctx.ty(v).clone();
    let w = ity.int_width()?;
    if ity == Type::Index || w == 0 {
        return None;
    }
    let precision = match ctx.ty(cast) {
        Type::BF16 => 8,
        Type::F16 => 11,
        Type::F32 => 24,
        Type::F64 => 53,
        _ => return None,
    };
    if (if signed { w - 1 } else { w }) > precision {
        return None;
    }
    // The range of `x` as read by the cast, exact in f64 (w <= 53).
    let (lo, hi) = if signed {
        (-(2f64.powi(w as i32 - 1)), 2f64.powi(w as i32 - 1) - 1.0)
    } else {
        (0.0, 2f64.powi(w as i32) - 1.0)
    };
    let konst =
        |b: &mut Builder, t: bool| Some(smallvec![super::const_int(b, t as i64, &Type::I1)]);
    if c.is_nan() {
        // Ordered predicates are false and unordered ones true.
        return konst(b, pred.starts_with('u') || pred == "true");
    }
    let (fl, ce) = (c.floor(), c.ceil());
    // (integer predicate, bound, result when the bound is above `hi`,
    // result when it is below `lo`).
    let (ip, k, above, below) = match pred {
        "oeq" | "ueq" if fl != c || c < lo || c > hi => return konst(b, false),
        "one" | "une" if fl != c || c < lo || c > hi => return konst(b, true),
        "oeq" | "ueq" => ("eq", c, false, false),
        "one" | "une" => ("ne", c, true, true),
        // x < c  <=>  x < ceil(c)
        "olt" | "ult" => ("lt", ce, true, false),
        // x <= c  <=>  x <= floor(c)
        "ole" | "ule" => ("le", fl, true, false),
        // x > c  <=>  x > floor(c)
        "ogt" | "ugt" => ("gt", fl, false, true),
        // x >= c  <=>  x >= ceil(c)
        "oge" | "uge" => ("ge", ce, false, true),
        "ord" => return konst(b, true),
        "uno" => return konst(b, false),
        _ => return None,
    };
    // Bounds at or beyond the range decide the comparison: `x < k` with
    // `k > hi` holds for every x, with `k <= lo` for none, and so on.
    let decided = match ip {
        "lt" if k > hi => Some(above),
        "lt" if k <= lo => Some(below),
        "le" if k >= hi => Some(above),
        "le" if k < lo => Some(below),
        "gt" if k >= hi => Some(above),
        "gt" if k < lo => Some(below),
        "ge" if k > hi => Some(above),
        "ge" if k <= lo => Some(below),
        _ => None,
    };
    if let Some(t) = decided {
        return konst(b, t);
    }
    // `k` is an integer in [lo, hi] here: a constant of `x`'s type.
    let bits = eval::sext(if signed { k as i64 } else { k as u64 as i64 }, &ity);
    let kv = super::const_int(b, bits, &ity);
    let ipred = match (ip, signed) {
        ("eq" | "ne", _) => ip,
        ("lt", true) => "slt",
        ("le", true) => "sle",
        ("gt", true) => "sgt",
        ("ge", true) => "sge",
        ("lt", false) => "ult",
        ("le", false) => "ule",
        ("gt", false) => "ugt",
        _ => "uge",
    };
    Some(smallvec![super::build_cmpi(b, ipred, v, kv)])
}

/// The float predicate with its operands swapped (`c p x` as `x p' c`).
fn swap_pred(p: &'static str) -> Option<&'static str> {
    Some(match p {
        "ogt" => "olt",
        "olt" => "ogt",
        "oge" => "ole",
        "ole" => "oge",
        "ugt" => "ult",
        "ult" => "ugt",
        "uge" => "ule",
        "ule" => "uge",
        "false" | "true" | "oeq" | "one" | "ord" | "ueq" | "une" | "uno" => p,
        _ => return None,
    })
}

// ----- xori, andi, ori -----------------------------------------------------------

fn xori(b: &mut Builder, st: &OpState) -> Rewritten {
    let [x, y] = st.operands[..] else {
        return None;
    };
    let ty = st.result_types.first()?.clone();
    let ctx = &*b.ctx;
    // not (cmpi p a c) = cmpi (not p) a c.
    if ty == Type::I1 && int(ctx, y, &ty) == Some(-1) {
        if let Some((cop, "arith.cmpi", &[a, c])) = def(ctx, x) {
            if let Some(np) = pred_of(ctx, cop).and_then(negate_pred) {
                return Some(smallvec![super::build_cmpi(b, np, a, c)]);
            }
        }
    }
    // (a ^ b) ^ b = a, in every operand order.
    for (inner, other) in [(x, y), (y, x)] {
        if let Some((_, "arith.xori", &[p, q])) = def(ctx, inner) {
            if q == other {
                return one(p);
            }
            if p == other {
                return one(q);
            }
        }
    }
    of_extensions(b, "arith.xori", x, y, &ty)
}

fn and_or(b: &mut Builder, st: &OpState) -> Rewritten {
    let [x, y] = st.operands[..] else {
        return None;
    };
    let name = name_of(b, st);
    let ty = st.result_types.first()?.clone();
    let ctx = &*b.ctx;
    // a op (a op b) = a op b.
    for (inner, other) in [(x, y), (y, x)] {
        if let Some((_, n, &[p, q])) = def(ctx, inner) {
            if n == name && (p == other || q == other) {
                return one(inner);
            }
        }
    }
    // x & ~x = 0.
    if name == "arith.andi" && ty.is_integer() {
        for (v, w) in [(x, y), (y, x)] {
            if let Some((_, "arith.xori", &[p, q])) = def(ctx, w) {
                if p == v && int(ctx, q, &ty) == Some(-1) {
                    return one(super::const_int(b, 0, &ty));
                }
            }
        }
    }
    of_extensions(b, name, x, y, &ty)
}

/// `op(ext a, ext c)` for `andi ori xori` and two extensions of one kind
/// from one type: `ext(op(a, c))`.
fn of_extensions(b: &mut Builder, name: &str, x: ValueId, y: ValueId, ty: &Type) -> Rewritten {
    let ctx = &*b.ctx;
    let (Some((kx, a)), Some((ky, c))) = (ext_source(ctx, x), ext_source(ctx, y)) else {
        return None;
    };
    if kx != ky || ctx.ty(a) != ctx.ty(c) {
        return None;
    }
    let narrow = ctx.ty(a).clone();
    let r = b.op1(name, &[a, c], narrow, vec![]);
    Some(smallvec![b.op1(kx, &[r], ty.clone(), vec![])])
}

// ----- casts -------------------------------------------------------------------

fn ext_of_ext(b: &mut Builder, st: &OpState) -> Rewritten {
    let [x] = st.operands[..] else {
        return None;
    };
    let outer = name_of(b, st);
    let ty = st.result_types.first()?.clone();
    let (inner, src) = ext_source(b.ctx, x)?;
    // extsi(extsi), extui(extui): one extension; extsi(extui): the inner
    // extension widened, so the sign bit is 0 and extui is the same.
    let name = match (outer, inner) {
        ("arith.extsi", "arith.extsi") => "arith.extsi",
        (_, "arith.extui") => "arith.extui",
        _ => return None,
    };
    Some(smallvec![b.op1(name, &[src], ty, vec![])])
}

fn trunc_of_cast(b: &mut Builder, st: &OpState) -> Rewritten {
    let [x] = st.operands[..] else {
        return None;
    };
    let ty = st.result_types.first()?.clone();
    let ctx = &*b.ctx;
    let (_, name, &[src]) = def(ctx, x)? else {
        return None;
    };
    if !matches!(name, "arith.extsi" | "arith.extui" | "arith.trunci") {
        return None;
    }
    let st_ty = ctx.ty(src).clone();
    let (ws, wr) = (eval::width(&st_ty), eval::width(&ty));
    if ws == wr {
        return one(src);
    }
    if ws > wr {
        return Some(smallvec![b.op1("arith.trunci", &[src], ty, vec![])]);
    }
    // The result is wider than the source: the extension, narrower.
    (name != "arith.trunci").then(|| smallvec![b.op1(name, &[src], ty, vec![])])
}

fn index_cast_of_ext(b: &mut Builder, st: &OpState) -> Rewritten {
    let [x] = st.operands[..] else {
        return None;
    };
    let outer = name_of(b, st);
    let ty = st.result_types.first()?.clone();
    let want = match outer {
        "arith.index_cast" => "arith.extsi",
        _ => "arith.extui",
    };
    let (kind, src) = ext_source(b.ctx, x)?;
    // An `i1` is no `index_cast` operand.
    let ok = kind == want && ty == Type::Index && *b.ctx.ty(src) != Type::I1;
    ok.then(|| smallvec![b.op1(outer, &[src], ty, vec![])])
}

fn bitcast_of_bitcast(b: &mut Builder, st: &OpState) -> Rewritten {
    let [x] = st.operands[..] else {
        return None;
    };
    let ty = st.result_types.first()?;
    if b.ctx.ty(x) == ty {
        return one(x);
    }
    let (_, "arith.bitcast", &[src]) = def(b.ctx, x)? else {
        return None;
    };
    if b.ctx.ty(src) == ty {
        return one(src);
    }
    // Both casts keep the bits: one cast from the first type does too.
    let ty = ty.clone();
    Some(smallvec![b.op1("arith.bitcast", &[src], ty, vec![])])
}

fn float_casts(b: &mut Builder, st: &OpState) -> Rewritten {
    let [x] = st.operands[..] else {
        return None;
    };
    let outer = name_of(b, st);
    let ty = st.result_types.first()?.clone();
    let (_, "arith.extf", &[src]) = def(b.ctx, x)? else {
        return None;
    };
    let src_ty = b.ctx.ty(src).clone();
    let width = |t: &Type| t.float_width().unwrap_or(0);
    if outer == "arith.extf" {
        // Two exact widenings are one.
        return Some(smallvec![b.op1("arith.extf", &[src], ty, vec![])]);
    }
    // truncf(extf a): the widening is exact, so this rounds `a` once.
    if src_ty == ty {
        return one(src);
    }
    (width(&src_ty) > width(&ty)).then(|| smallvec![b.op1("arith.truncf", &[src], ty, vec![])])
}

// ----- integer reassociation with a constant on the left -------------------------

fn constant_minus(b: &mut Builder, st: &OpState) -> Rewritten {
    let [x, y] = st.operands[..] else {
        return None;
    };
    let outer = name_of(b, st);
    let ty = st.result_types.first()?.clone();
    if !ty.is_integer() {
        return None;
    }
    let ctx = &*b.ctx;
    let k = |v: ValueId| int(ctx, v, &ty);
    let wrap = |v: i64| eval::sext(v, &ty);
    // (new op, constant, value, constant first)
    let (name, c, v, c_first) = match outer {
        "arith.addi" => {
            // (c1 - x) + c2 = (c1 + c2) - x
            let c2 = k(y)?;
            let (_, "arith.subi", &[p, q]) = def(ctx, x)? else {
                return None;
            };
            let c1 = k(p)?;
            if k(q).is_some() {
                return None;
            }
            ("arith.subi", c1.wrapping_add(c2), q, true)
        }
        _ => {
            if let Some(c2) = k(y) {
                // (c1 - x) - c2 = (c1 - c2) - x
                let (_, "arith.subi", &[p, q]) = def(ctx, x)? else {
                    return None;
                };
                let c1 = k(p)?;
                if k(q).is_some() {
                    return None;
                }
                ("arith.subi", c1.wrapping_sub(c2), q, true)
            } else {
                let c2 = k(x)?;
                let (_, inner, &[p, q]) = def(ctx, y)? else {
                    return None;
                };
                match (inner, k(p), k(q)) {
                    // c2 - (c1 - v) = v + (c2 - c1)
                    ("arith.subi", Some(c1), None) => ("arith.addi", c2.wrapping_sub(c1), q, false),
                    // c2 - (v - c1) = (c2 + c1) - v
                    ("arith.subi", None, Some(c1)) => ("arith.subi", c2.wrapping_add(c1), p, true),
                    // c2 - (v + c1) = (c2 - c1) - v
                    ("arith.addi", None, Some(c1)) => ("arith.subi", c2.wrapping_sub(c1), p, true),
                    _ => return None,
                }
            }
        }
    };
    let cv = super::const_int(b, wrap(c), &ty);
    let operands = if c_first { [cv, v] } else { [v, cv] };
    Some(smallvec![b.op1(name, &operands, ty, vec![])])
}

// ----- floats --------------------------------------------------------------------

fn negf_pair(b: &mut Builder, st: &OpState) -> Rewritten {
    let [x, y] = st.operands[..] else {
        return None;
    };
    let name = name_of(b, st);
    let ty = st.result_types.first()?.clone();
    let ctx = &*b.ctx;
    let (Some((_, "arith.negf", &[a])), Some((_, "arith.negf", &[c]))) = (def(ctx, x), def(ctx, y))
    else {
        return None;
    };
    Some(smallvec![b.op1(name, &[a, c], ty, st.attrs.clone())])
}

// ----- min and max at the type's bounds -------------------------------------------

fn bounds(b: &mut Builder, st: &OpState) -> Rewritten {
    let [x, y] = st.operands[..] else {
        return None;
    };
    let ty = st.result_types.first()?;
    if !ty.is_integer() || *ty == Type::Index {
        return None;
    }
    let k = int(b.ctx, y, ty)?;
    let w = eval::width(ty);
    if w == 0 {
        return None;
    }
    let smax = eval::sext((1i64 << (w - 1)).wrapping_sub(1), ty);
    let smin = eval::sext(1i64.wrapping_shl(w - 1), ty);
    let (umax, umin) = (-1i64, 0i64);
    let name = name_of(b, st);
    let r = match name {
        "arith.maxi" | "arith.maxsi" if k == smax => y,
        "arith.maxi" | "arith.maxsi" if k == smin => x,
        "arith.mini" | "arith.minsi" if k == smin => y,
        "arith.mini" | "arith.minsi" if k == smax => x,
        "arith.maxui" if k == umax => y,
        "arith.maxui" if k == umin => x,
        "arith.minui" if k == umin => y,
        "arith.minui" if k == umax => x,
        _ => return None,
    };
    one(r)
}
