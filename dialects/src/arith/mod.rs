//! The `arith` dialect (IR-SPEC §3): constants, integer and float
//! arithmetic, comparisons, `select`, bitwise ops, min/max, casts and math
//! functions. Every op is pure.
//!
//! Semantics (shared by the interpreter and the folder, see [`eval`]):
//! - Integers wrap at their type's width (two's complement). Signed ops
//!   (`divsi remsi ceildivsi floordivsi mini maxi minsi maxsi shrsi abs`,
//!   `cmpi s*`) read an `i1` as signed, so `true` is `-1` (MLIR's view);
//!   unsigned ops (`divui remui ceildivui minui maxui shrui`, `cmpi u*`)
//!   read the bits as unsigned at the width. Division and remainder by zero
//!   are a run-time fault "integer division by zero"; `INT_MIN / -1` wraps
//!   to `INT_MIN` (`remsi` gives 0); `abs(INT_MIN) = INT_MIN`. `shli shrsi
//!   shrui` read the amount unsigned; by the width or more (undefined in
//!   MLIR, never folded) every bit is shifted out: 0, or the sign for
//!   `shrsi`. `mini`/`maxi` are also spelt MLIR's `minsi`/`maxsi`, and
//!   `minf`/`maxf` `minimumf`/`maximumf`; `minnumf`/`maxnumf` return the
//!   other operand when one is NaN; `remf` is C's `fmod` (exact).
//! - Floats are IEEE-754, computed in the op's type (`f32` in `f32`;
//!   `f16` and `bf16` in `f32`, each result rounded to the type, ties to
//!   even).
//!   `minf`/`maxf` are IEEE `minimum`/`maximum`: NaN if either operand is
//!   NaN, and `-0.0 < +0.0`. `log` is the natural logarithm.
//! - `fptosi` saturates like Rust's `as`: NaN gives 0, values beyond the
//!   target's range give its minimum or maximum; `sitofp` rounds to nearest
//!   even (once, directly to `f32` for `f32`).
//! - Casts: `sitofp` i32/i64/index -> any float, `fptosi` any float ->
//!   i32/i64/index, `index_cast` between `index` and i32/i64 (sign-extends or
//!   truncates), `extf` to a wider float (exact), `truncf` to a narrower one
//!   (round to nearest even, straight from the operand: never twice);
//!   MLIR's `extsi extui trunci` between i1, i32 and i64, `uitofp`,
//!   `fptoui` (saturating, NaN gives 0), `index_castui` (zero-extends) and
//!   `bitcast` (between any two types of one width: i64/f64, i32/f32,
//!   i16/f16/bf16).
//!   `i1` is not a cast operand (convert with `select`).
//! - Predicates: `cmpi` takes `eq ne slt sle sgt sge` (IR-SPEC) and MLIR's
//!   unsigned `ult ule ugt uge` (the operands' bits read as unsigned at the
//!   type's width). `cmpf` takes `olt ole ogt oge oeq one` (IR-SPEC: false
//!   when an operand is NaN) and MLIR's other predicates `ord uno ueq une ult
//!   ule ugt uge true false` (`u*`: true when an operand is NaN).
//!
//! Custom forms (MLIR's):
//! `%c = arith.constant 1.5 : f64`, `arith.constant true`, `arith.constant 3 : i64`,
//! `arith.constant 0x7FF8000000000000 : f64` (a hex integer with a float type
//! is the bit pattern; a decimal integer is the value),
//! `%r = arith.addf %a, %b : f64`, `%r = arith.cmpf olt, %a, %b : f64`,
//! `%r = arith.select %c, %a, %b : f64`, `%r = arith.sitofp %a : i64 to f64`,
//! `%r = arith.sqrt %a : f64`.

pub mod eval;
pub mod extended;
pub mod fold;
pub mod patterns;

use smallvec::{smallvec, SmallVec};

use ir::ast::{AstItemKind, SyntaxError};
use ir::custom::{CustomParser, ParsedOp, OVERFLOW_FLAGS, OVERFLOW_KEY};
use ir::interp::{Interp, RtValue, RunError};
use ir::printer::Printer;
use ir::spec::{Arity, FoldFn, InterpFn, MlirNameFn, OpSpec, Registry, Traits, VerifyFn};
use ir::{Attribute, Builder, Context, FastMath, OpId, Type, ValueId};

use crate::util;
use eval::{Bin, Cast, Scalar, Un};
pub use fold::{constant_float, constant_int, constant_of};

type InterpResult = Result<SmallVec<[RtValue; 2]>, RunError>;

// ----- verifiers -------------------------------------------------------------

const INT_TYPES: &str = "integer (i1, i8, i16, i32, i64 or index)";
const FLOAT_TYPES: &str = "float (f16, bf16, f32 or f64)";

fn operand_type(ctx: &Context, op: OpId) -> &Type {
    match ctx.operands(op).first() {
        Some(&v) => ctx.ty(v),
        None => ctx.ty(ctx.result(op, 0)),
    }
}

/// The type of every operand and the result of an op of the `binary!` and
/// `unary!` families, read from its result: the verifier has checked their
/// [`Traits::SAME_OPERANDS_AND_RESULT_TYPE`] before it runs an op's own
/// verifier, and the result's record sits beside its neighbours' where an
/// operand's may be anywhere in a large module.
fn same_type(ctx: &Context, op: OpId) -> &Type {
    ctx.ty(ctx.result(op, 0))
}

fn verify_int(ctx: &Context, op: OpId) -> Result<(), String> {
    let t = same_type(ctx, op);
    if t.is_integer() {
        verify_fastmath(ctx, op)?;
        verify_overflow(ctx, op)
    } else {
        Err(format!("operands must be {INT_TYPES}, but got '{t}'"))
    }
}

fn verify_float(ctx: &Context, op: OpId) -> Result<(), String> {
    let t = same_type(ctx, op);
    if t.is_float() {
        verify_fastmath(ctx, op)?;
        verify_overflow(ctx, op)
    } else {
        Err(format!("operands must be {FLOAT_TYPES}, but got '{t}'"))
    }
}

fn verify_scalar(ctx: &Context, op: OpId) -> Result<(), String> {
    let t = same_type(ctx, op);
    if t.is_scalar() {
        verify_fastmath(ctx, op)
    } else {
        Err(format!(
            "operand must be {INT_TYPES} or {FLOAT_TYPES}, but got '{t}'"
        ))
    }
}

fn verify_cmp<const FLOAT: bool>(ctx: &Context, op: OpId) -> Result<(), String> {
    let (a, b) = (ctx.ty(ctx.operand(op, 0)), ctx.ty(ctx.operand(op, 1)));
    if a != b {
        return Err(format!(
            "operands must have the same type, but got '{a}' and '{b}'"
        ));
    }
    let (ok, class, preds) = if FLOAT {
        (a.is_float(), FLOAT_TYPES, eval::CMPF_PREDICATES)
    } else {
        (a.is_integer(), INT_TYPES, eval::CMPI_PREDICATES)
    };
    if !ok {
        return Err(format!("operands must be {class}, but got '{a}'"));
    }
    let r = ctx.ty(ctx.result(op, 0));
    if *r != Type::I1 {
        return Err(format!("result must be 'i1', but got '{r}'"));
    }
    let float = ctx.is(op, "arith.cmpf");
    match ctx.attr(op, "predicate") {
        None => Err("requires a string attribute 'predicate'".into()),
        Some(a) if eval::predicate_name(Some(a), float).is_some() => Ok(()),
        Some(a) => Err(format!(
            "unknown predicate '{}' (expected one of {}, or its position in that list, as MLIR's integer encoding)",
            a.as_str().map_or_else(|| a.to_string(), str::to_string),
            preds.join(", ")
        )),
    }
}

fn verify_select(ctx: &Context, op: OpId) -> Result<(), String> {
    let c = ctx.ty(ctx.operand(op, 0));
    if *c != Type::I1 {
        return Err(format!("condition must be 'i1', but got '{c}'"));
    }
    let (a, b, r) = (
        ctx.ty(ctx.operand(op, 1)),
        ctx.ty(ctx.operand(op, 2)),
        ctx.ty(ctx.result(op, 0)),
    );
    if a != b || a != r {
        return Err(format!(
            "true value, false value and result must have the same type, but got '{a}', '{b}' and '{r}'"
        ));
    }
    Ok(())
}

fn verify_cast<const K: u8>(ctx: &Context, op: OpId) -> Result<(), String> {
    let c = Cast::of(K);
    let (from, to) = (ctx.ty(ctx.operand(op, 0)), ctx.ty(ctx.result(op, 0)));
    if eval::cast_ok(c, from, to) {
        return Ok(());
    }
    let allowed = match c {
        Cast::SIToFP => "i8, i16, i32, i64 or index to a float",
        Cast::FPToSI => "a float to i8, i16, i32, i64 or index",
        Cast::IndexCast => "index to i8, i16, i32 or i64, or back",
        Cast::ExtF => "a float to a wider float",
        Cast::TruncF => "a float to a narrower float",
        Cast::ExtSI | Cast::ExtUI => "i1, i8, i16, i32 or i64 to a wider one of them",
        Cast::TruncI => "i1, i8, i16, i32 or i64 to a narrower one of them",
        Cast::UIToFP => "i1, i8, i16, i32, i64 or index to a float",
        Cast::FPToUI => "a float to i8, i16, i32, i64 or index",
        Cast::IndexCastUI => "index to i8, i16, i32 or i64, or back",
        Cast::Bitcast => "two integer or float types of one width",
    };
    Err(format!(
        "cannot cast '{from}' to '{to}' (expected {allowed})"
    ))
}

fn verify_constant(ctx: &Context, op: OpId) -> Result<(), String> {
    let ty = ctx.ty(ctx.result(op, 0));
    let Some(a) = ctx.attr(op, "value") else {
        return Err("requires attribute 'value'".into());
    };
    let ok = match a {
        Attribute::Bool(_) => *ty == Type::I1,
        Attribute::Int(v, t) => t == ty && ty.is_integer() && ir::attributes::wrap_int(*v, t) == *v,
        Attribute::Float(v, t) => {
            t == ty
                && ty.is_float()
                && (*t == Type::F64
                    || v.is_nan()
                    || ir::types::round_float(*v, t).to_bits() == v.to_bits())
        }
        _ => false,
    };
    if ok {
        Ok(())
    } else {
        Err(format!(
            "value attribute '{a}' does not match the result type '{ty}'"
        ))
    }
}

// ----- interpreter -----------------------------------------------------------

fn bad_operands(ctx: &Context, op: OpId) -> RunError {
    RunError::at(ctx, op, "operands do not match the op's types")
}

fn interp_binary<const K: u8>(it: &mut Interp, op: OpId, args: &[RtValue]) -> InterpResult {
    let ctx = it.ctx;
    let ty = ctx.ty(ctx.result(op, 0));
    let (Some(a), Some(b)) = (
        args.first().and_then(|v| Scalar::from_rt(v, ty)),
        args.get(1).and_then(|v| Scalar::from_rt(v, ty)),
    ) else {
        return Err(bad_operands(ctx, op));
    };
    match eval::binary(Bin::of(K), ty, a, b) {
        Ok(r) => Ok(smallvec![r.to_rt(ty)]),
        Err(m) => Err(RunError::at(ctx, op, m)),
    }
}

fn interp_unary<const K: u8>(it: &mut Interp, op: OpId, args: &[RtValue]) -> InterpResult {
    let ctx = it.ctx;
    let ty = ctx.ty(ctx.result(op, 0));
    let Some(a) = args.first().and_then(|v| Scalar::from_rt(v, ty)) else {
        return Err(bad_operands(ctx, op));
    };
    match eval::unary(Un::of(K), ty, a) {
        Ok(r) => Ok(smallvec![r.to_rt(ty)]),
        Err(m) => Err(RunError::at(ctx, op, m)),
    }
}

fn interp_fma(it: &mut Interp, op: OpId, args: &[RtValue]) -> InterpResult {
    let ctx = it.ctx;
    let ty = ctx.ty(ctx.result(op, 0));
    let s: Option<Vec<Scalar>> = args.iter().map(|v| Scalar::from_rt(v, ty)).collect();
    let Some(s) = s.filter(|s| s.len() == 3) else {
        return Err(bad_operands(ctx, op));
    };
    match eval::fma(ty, s[0], s[1], s[2]) {
        Ok(r) => Ok(smallvec![r.to_rt(ty)]),
        Err(m) => Err(RunError::at(ctx, op, m)),
    }
}

fn interp_cast<const K: u8>(it: &mut Interp, op: OpId, args: &[RtValue]) -> InterpResult {
    let ctx = it.ctx;
    let (from, to) = (ctx.ty(ctx.operand(op, 0)), ctx.ty(ctx.result(op, 0)));
    let Some(a) = args.first().and_then(|v| Scalar::from_rt(v, from)) else {
        return Err(bad_operands(ctx, op));
    };
    match eval::cast(Cast::of(K), from, to, a) {
        Ok(r) => Ok(smallvec![r.to_rt(to)]),
        Err(m) => Err(RunError::at(ctx, op, m)),
    }
}

fn interp_cmp<const FLOAT: bool>(it: &mut Interp, op: OpId, args: &[RtValue]) -> InterpResult {
    let ctx = it.ctx;
    let ty = ctx.ty(ctx.operand(op, 0));
    let pred = predicate_of(ctx, op).unwrap_or("");
    let (Some(a), Some(b)) = (
        args.first().and_then(|v| Scalar::from_rt(v, ty)),
        args.get(1).and_then(|v| Scalar::from_rt(v, ty)),
    ) else {
        return Err(bad_operands(ctx, op));
    };
    let r = if FLOAT {
        match (eval::as_f64(a), eval::as_f64(b)) {
            (Some(a), Some(b)) => eval::cmpf(pred, a, b),
            _ => None,
        }
    } else {
        match (a, b) {
            (Scalar::Int(a), Scalar::Int(b)) => eval::cmpi(pred, ty, a, b),
            _ => None,
        }
    };
    match r {
        Some(r) => Ok(smallvec![RtValue::Bool(r)]),
        None => Err(RunError::at(
            ctx,
            op,
            format!("cannot compare with predicate '{pred}'"),
        )),
    }
}

fn interp_select(it: &mut Interp, op: OpId, args: &[RtValue]) -> InterpResult {
    match args {
        [c, a, b] => match c.as_bool() {
            Some(true) => Ok(smallvec![a.clone()]),
            Some(false) => Ok(smallvec![b.clone()]),
            None => Err(bad_operands(it.ctx, op)),
        },
        _ => Err(bad_operands(it.ctx, op)),
    }
}

fn interp_constant(it: &mut Interp, op: OpId, _: &[RtValue]) -> InterpResult {
    let ctx = it.ctx;
    match ctx.attr(op, "value").and_then(util::attr_to_value) {
        Some(v) => Ok(smallvec![v]),
        None => Err(RunError::at(ctx, op, "invalid constant value")),
    }
}

// ----- custom forms ----------------------------------------------------------

/// ` %a, %b fastmath<flags> {attrs} : T` (the flags only when some are set;
/// a malformed `fastmath` stays in the dictionary).
fn print_same(p: &mut Printer, op: OpId) -> std::fmt::Result {
    let ctx = p.ctx();
    let fm = ctx
        .attr(op, ir::fastmath::KEY)
        .and_then(|a| FastMath::from_attr(a).ok());
    let ovf = ctx.attr(op, OVERFLOW_KEY).and_then(overflow_words);
    if fm.is_none() && ovf.is_none() {
        return util::print_operands_colon_type(p, op, &[]);
    }
    p.w(" ");
    p.values(ctx.operands(op));
    match fm {
        Some(fm) if !fm.is_empty() => p.w(&format!(" fastmath<{fm}>")),
        _ => {}
    }
    match ovf {
        Some(ref w) if w != &["none"] => p.w(&format!(" overflow<{}>", w.join(", "))),
        _ => {}
    }
    // An explicit `#arith.fastmath<none>` (from the generic form) stays in
    // the dictionary, so that both forms round-trip to the same op.
    let mut skip = vec![];
    if fm.is_some_and(|f| !f.is_empty()) {
        skip.push(ir::fastmath::KEY);
    }
    if ovf.is_some() {
        skip.push(OVERFLOW_KEY);
    }
    p.attr_dict(op, &skip);
    p.w(" : ");
    p.ty(same_type(ctx, op));
    Ok(())
}

/// The words of a well-formed `#arith.overflow<...>`.
fn overflow_words(a: &Attribute) -> Option<Vec<&str>> {
    let d = a
        .as_dialect()
        .filter(|d| d.dialect == "arith" && d.name == "overflow")?;
    d.params
        .iter()
        .map(|p| match p {
            Attribute::Keyword(w) if OVERFLOW_FLAGS.contains(&w.as_str()) => Some(w.as_str()),
            _ => None,
        })
        .collect()
}

/// Checks `op`'s MLIR overflow flags (kept, printed, never used: L0's
/// integer arithmetic wraps, IR-SPEC §1): well formed, and on
/// `addi`/`subi`/`muli`/`shli` only.
fn verify_overflow(ctx: &Context, op: OpId) -> Result<(), String> {
    let Some(a) = ctx.attr(op, OVERFLOW_KEY) else {
        return Ok(());
    };
    if overflow_words(a).is_none() {
        return Err(format!(
            "'{OVERFLOW_KEY}' must be '#arith.overflow<...>' of none, nsw and nuw, but got '{a}'"
        ));
    }
    if !matches!(
        ctx.op_name(op),
        "arith.addi" | "arith.subi" | "arith.muli" | "arith.shli"
    ) {
        return Err("overflow flags are allowed on addi, subi, muli and shli only".into());
    }
    Ok(())
}

/// Checks `op`'s `fastmath` attribute: well formed, and on a float op.
fn verify_fastmath(ctx: &Context, op: OpId) -> Result<(), String> {
    let Some(a) = ctx.attr(op, ir::fastmath::KEY) else {
        return Ok(());
    };
    FastMath::from_attr(a)?;
    if !same_type(ctx, op).is_float() {
        return Err("fast-math flags are allowed on float operations only".into());
    }
    Ok(())
}

/// ` olt, %a, %b : f64`.
/// ` slt, %a, %b : T`: the predicate as its keyword, as MLIR prints it,
/// whether it is stored as a string or as MLIR's integer.
fn print_cmp(p: &mut Printer, op: OpId) -> std::fmt::Result {
    let ctx = p.ctx();
    let pred = predicate_of(ctx, op).or_else(|| util::str_attr(ctx, op, "predicate"));
    match pred {
        Some(pred) if is_bare_word(pred) => {
            p.w(" ");
            p.w(pred);
            p.w(",");
            util::print_operands_colon_type(p, op, &["predicate"])
        }
        // Not a known predicate: keep the attribute in the dictionary.
        _ => util::print_operands_colon_type(p, op, &[]),
    }
}

/// The generic form's attributes of `arith.cmpi`/`arith.cmpf`: a known
/// predicate as MLIR's integer encoding (`{predicate = 2 : i64}` for `slt`),
/// as MLIR's generic form writes it.
fn cmp_generic_attrs(ctx: &Context, op: OpId) -> Vec<(String, Attribute)> {
    let list = if ctx.is(op, "arith.cmpf") {
        eval::CMPF_PREDICATES
    } else {
        eval::CMPI_PREDICATES
    };
    let code = predicate_of(ctx, op).and_then(|p| list.iter().position(|q| *q == p));
    ctx.op(op)
        .attrs
        .iter()
        .map(|(k, a)| match (k.as_str(), code) {
            ("predicate", Some(c)) => (k.clone(), Attribute::Int(c as i64, Type::I64)),
            _ => (k.clone(), a.clone()),
        })
        .collect()
}

/// The inverse of [`cmp_generic_attrs`]: a known predicate written as MLIR's
/// integer encoding is stored as its keyword, so that both spellings are one
/// attribute (CSE merges them). An unknown integer stays for the verifier.
fn cmp_parse_generic_attrs(name: &str, attrs: &mut [(String, Attribute)]) {
    for (k, a) in attrs.iter_mut() {
        if k == "predicate" && matches!(a, Attribute::Int(..)) {
            if let Some(p) = eval::predicate_name(Some(a), name == "arith.cmpf") {
                *a = Attribute::Str(p.to_string());
            }
        }
    }
}

/// Smart-builds the binary `arith` op `name` of `x` and `y`, whose result
/// has `x`'s type (`arith.addi`, `arith.andi`, `arith.mulf`, ...).
pub fn build_binop(b: &mut ir::Builder, name: &str, x: ValueId, y: ValueId) -> ValueId {
    let t = b.ctx.ty(x).clone();
    b.op1(name, &[x, y], t, vec![])
}

/// Smart-builds `arith.cmpi pred, x, y` (an `i1`); `pred` is a predicate
/// name (`eq`, `slt`, `uge`, ...).
pub fn build_cmpi(b: &mut ir::Builder, pred: &str, x: ValueId, y: ValueId) -> ValueId {
    b.op1(
        "arith.cmpi",
        &[x, y],
        Type::I1,
        vec![("predicate".to_string(), Attribute::Str(pred.to_string()))],
    )
}

/// Smart-builds `0 <= i < n` for a length `n` (which is never negative) as
/// the one unsigned comparison `arith.cmpi ult, i, n`: a negative `i` is a
/// huge unsigned number. One compare and branch where `sge` and `slt` joined
/// by `andi` cost two compares and the materialized `i1`s they combine
/// (Cranelift does not merge them itself; LLVM's instcombine does).
pub fn build_in_range(b: &mut ir::Builder, i: ValueId, n: ValueId) -> ValueId {
    build_cmpi(b, "ult", i, n)
}

/// The predicate of `arith.cmpi`/`arith.cmpf` op `op` (string or MLIR's
/// integer encoding, [`eval::predicate_name`]).
pub fn predicate_of(ctx: &Context, op: OpId) -> Option<&'static str> {
    eval::predicate_name(ctx.attr(op, "predicate"), ctx.is(op, "arith.cmpf"))
}

fn is_bare_word(s: &str) -> bool {
    !s.is_empty()
        && s.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'_')
        && !s.as_bytes()[0].is_ascii_digit()
}

fn parse_cmp(cp: &mut CustomParser) -> Result<ParsedOp, SyntaxError> {
    let pred = match cp.peek().map(|i| &i.kind) {
        Some(AstItemKind::Keyword(k)) => Some(k.clone()),
        Some(AstItemKind::Str(s)) => Some(s.clone()),
        _ => None,
    };
    if pred.is_some() {
        cp.next_item();
        cp.expect_punct(",")?;
    }
    let mut parsed = util::parse_operands_colon_type(cp, Some(Type::I1))?;
    if let Some(pred) = pred {
        parsed
            .attrs
            .insert(0, ("predicate".to_string(), Attribute::Str(pred)));
    }
    Ok(parsed)
}

/// ` %c, %a, %b : T`.
fn print_select(p: &mut Printer, op: OpId) -> std::fmt::Result {
    let ctx = p.ctx();
    p.w(" ");
    p.values(ctx.operands(op));
    p.attr_dict(op, &[]);
    p.w(" : ");
    p.ty(ctx.ty(ctx.result(op, 0)));
    Ok(())
}

fn parse_select(cp: &mut CustomParser) -> Result<ParsedOp, SyntaxError> {
    let at = cp.loc();
    let vals = cp.value_list()?;
    if vals.len() != 3 {
        return Err(SyntaxError {
            offset: at,
            message: format!(
                "expected 3 operands (condition, true value, false value), found {}",
                vals.len()
            ),
        });
    }
    let mut attrs = Vec::new();
    cp.optional_attr_dict(&mut attrs);
    cp.expect_punct(":")?;
    let t = cp.expect_type()?;
    let types = [Type::I1, t.clone(), t.clone()];
    Ok(ParsedOp {
        successors: Vec::new(),
        operands: vals.into_iter().zip(types.into_iter().map(Some)).collect(),
        result_types: if cp.num_results == 0 { vec![] } else { vec![t] },
        attrs,
        regions: vec![],
    })
}

/// ` %a : T to U`.
fn print_cast(p: &mut Printer, op: OpId) -> std::fmt::Result {
    let ctx = p.ctx();
    p.w(" ");
    p.values(ctx.operands(op));
    p.attr_dict(op, &[]);
    p.w(" : ");
    p.ty(operand_type(ctx, op));
    p.w(" to ");
    p.ty(ctx.ty(ctx.result(op, 0)));
    Ok(())
}

fn parse_cast(cp: &mut CustomParser) -> Result<ParsedOp, SyntaxError> {
    let v = cp.expect_value()?;
    let mut attrs = Vec::new();
    cp.optional_attr_dict(&mut attrs);
    cp.expect_punct(":")?;
    let from = cp.expect_type()?;
    cp.expect_keyword("to")?;
    let to = cp.expect_type()?;
    Ok(ParsedOp {
        successors: Vec::new(),
        operands: vec![(v, Some(from))],
        result_types: if cp.num_results == 0 {
            vec![]
        } else {
            vec![to]
        },
        attrs,
        regions: vec![],
    })
}

/// ` 1.5 : f64`, ` true`, ` 3 : i64` (other attributes in a dictionary first).
fn print_constant(p: &mut Printer, op: OpId) -> std::fmt::Result {
    let ctx = p.ctx();
    p.attr_dict(op, &["value"]);
    let ty = ctx.ty(ctx.result(op, 0));
    match ctx.attr(op, "value") {
        Some(Attribute::Int(v, t)) if *t == Type::I1 && *ty == Type::I1 => {
            p.w(if *v & 1 != 0 { " true" } else { " false" })
        }
        Some(Attribute::Bool(b)) if *ty == Type::I1 => p.w(if *b { " true" } else { " false" }),
        Some(a @ (Attribute::Int(..) | Attribute::Float(..))) if a.value_type() == Some(ty) => {
            p.w(" ");
            p.attr(a);
        }
        // An invalid constant (the verifier reports it): show the attribute
        // and the result type so that nothing is lost.
        Some(a) => {
            p.w(&format!(" {{value = {a}}} : {ty}"));
        }
        None => p.w(&format!(" : {ty}")),
    }
    Ok(())
}

/// The integer range a literal of width `w` may have: the signed range, and
/// for hex literals or widths below 64 also the unsigned one.
fn int_literal(v: i128, ty: &Type) -> Option<i64> {
    let w = ty.int_width()?;
    if w == 0 {
        // `i0`'s only value.
        return (v == 0).then_some(0);
    }
    let min = -(1i128 << (w - 1));
    let max = (1i128 << w) - 1;
    (min..=max)
        .contains(&v)
        .then(|| ir::attributes::wrap_int(v as u64 as i64, ty))
}

fn parse_constant(cp: &mut CustomParser) -> Result<ParsedOp, SyntaxError> {
    let mut attrs = Vec::new();
    cp.optional_attr_dict(&mut attrs);
    // An alias of a typed number (`#two = 2 : i64`, `arith.constant #two`).
    let (value, ty) = match cp.expect_attr() {
        Ok(a @ (Attribute::Int(..) | Attribute::Float(..) | Attribute::Bool(_))) => {
            let ty = a.value_type().cloned().unwrap_or(Type::I1);
            (a, ty)
        }
        _ => literal_value(cp)?,
    };
    attrs.insert(0, ("value".to_string(), value));
    Ok(ParsedOp {
        successors: Vec::new(),
        operands: vec![],
        result_types: if cp.num_results == 0 {
            vec![]
        } else {
            vec![ty]
        },
        attrs,
        regions: vec![],
    })
}

/// The value and type of `arith.constant`'s literal (`2 : i64`, `1.5 :
/// f64`, `true`).
fn literal_value(cp: &mut CustomParser) -> Result<(Attribute, Type), SyntaxError> {
    let (lit, at) = cp.expect_literal()?;
    let err = |m: String| SyntaxError {
        offset: at,
        message: m,
    };
    let (value, ty) = match lit {
        AstItemKind::Keyword(k) => {
            let b = k == "true";
            if cp.try_punct(":") {
                let t = cp.expect_type()?;
                if t != Type::I1 {
                    return Err(err(format!(
                        "boolean literal with type '{t}' (expected 'i1')"
                    )));
                }
            }
            (Attribute::Int(b as i64, Type::I1), Type::I1)
        }
        AstItemKind::Int(v) => {
            cp.expect_punct(":")?;
            let t = cp.expect_type()?;
            if t.is_float() {
                (float_of_int_literal(cp, v, at, &t).map_err(err)?, t)
            } else {
                let x = int_literal(v, &t)
                    .ok_or_else(|| err(format!("integer literal out of range for {t}")))?;
                (Attribute::Int(x, t.clone()), t)
            }
        }
        AstItemKind::Float(x) => {
            cp.expect_punct(":")?;
            let t = cp.expect_type()?;
            if !t.is_float() {
                return Err(err(format!("float literal with non-float type '{t}'")));
            }
            (Attribute::float(x, t.clone()), t)
        }
        _ => return Err(err("expected a number or 'true'/'false'".into())),
    };
    Ok((value, ty))
}

/// An integer literal with a float type: a hex literal is the bit pattern
/// (MLIR), a decimal one the value.
fn float_of_int_literal(
    cp: &CustomParser,
    v: i128,
    at: usize,
    t: &Type,
) -> Result<Attribute, String> {
    let hex = cp
        .source_from(at)
        .map(|s| s.starts_with("0x") || s.starts_with("-0x"))
        .unwrap_or(true);
    if !hex {
        return Ok(Attribute::float(v as f64, t.clone()));
    }
    if v < 0 {
        return Err("a hex float bit pattern cannot be negative".into());
    }
    let width = t.float_width().unwrap_or(64);
    let bits = u64::try_from(v)
        .ok()
        .filter(|b| width == 64 || *b < 1u64 << width)
        .ok_or_else(|| format!("hex literal too wide for {t} ({} hex digits)", width / 4))?;
    Ok(Attribute::Float(
        ir::types::float_from_bits(bits, t),
        t.clone(),
    ))
}

// ----- constants ---------------------------------------------------------------

/// Builds `arith.constant` for `attr` at type `ty` (hash-consed by smart
/// construction). `Bool` becomes `Int(_, i1)`; an integer attribute is
/// re-typed to an integer `ty`, a float one rounded to a float `ty`.
pub fn materialize(b: &mut Builder, attr: &Attribute, ty: &Type) -> Option<ValueId> {
    let value = match attr {
        Attribute::Bool(v) if *ty == Type::I1 => Attribute::Int(*v as i64, Type::I1),
        Attribute::Int(v, _) if ty.is_integer() => Attribute::int(*v, ty.clone()),
        Attribute::Float(v, _) if ty.is_float() => Attribute::float(*v, ty.clone()),
        _ => return None,
    };
    Some(b.op1(
        "arith.constant",
        &[],
        ty.clone(),
        vec![("value".to_string(), value)],
    ))
}

/// Builds the integer constant `v` of type `ty`.
pub fn const_int(b: &mut Builder, v: i64, ty: &Type) -> ValueId {
    b.op1(
        "arith.constant",
        &[],
        ty.clone(),
        vec![("value".to_string(), Attribute::int(v, ty.clone()))],
    )
}

/// Builds the float constant `v` of type `ty` (rounded to `f32` for `f32`).
pub fn const_float(b: &mut Builder, v: f64, ty: &Type) -> ValueId {
    b.op1(
        "arith.constant",
        &[],
        ty.clone(),
        vec![("value".to_string(), Attribute::float(v, ty.clone()))],
    )
}

// ----- registration ------------------------------------------------------------

fn spec(
    name: &'static str,
    summary: &'static str,
    arity: usize,
    traits: Traits,
    verify: VerifyFn,
    fold: FoldFn,
    interp: InterpFn,
) -> OpSpec {
    OpSpec::new(name, summary)
        .operands(Arity::Exactly(arity))
        .results(Arity::Exactly(1))
        .traits(Traits::PURE | traits)
        .verify(verify)
        .fold(fold)
        .interpret(interp)
        .generic_attrs(same_generic_attrs, normalize_fastmath)
}

/// The generic form's attributes: the op's own.
fn same_generic_attrs(ctx: &Context, op: OpId) -> Vec<(String, Attribute)> {
    ctx.op(op).attrs.to_vec()
}

/// Fast-math flags read from the generic form in MLIR's normal form, as
/// the custom form writes them: `fast` for every flag, none dropped
/// (`#arith.fastmath<none>` is the default), so both forms round-trip to
/// one op. A malformed value is left for the verifier.
fn normalize_fastmath(_name: &str, attrs: &mut [(String, Attribute)]) {
    for (k, a) in attrs.iter_mut() {
        if k == ir::fastmath::KEY {
            if let Ok(fm) = FastMath::from_attr(a) {
                *a = fm.to_attr();
            }
        }
    }
}

macro_rules! binary {
    ($r:expr, $name:literal, $summary:literal, $op:ident, $verify:expr, $comm:expr) => {{
        let mut s = spec(
            $name,
            $summary,
            2,
            Traits::SAME_OPERANDS_AND_RESULT_TYPE,
            $verify,
            fold::fold_binary::<{ Bin::$op as u8 }>,
            interp_binary::<{ Bin::$op as u8 }>,
        )
        .same_type_custom_form(print_same);
        if $comm {
            s = s.traits(Traits::COMMUTATIVE).rewrite(|b, st| {
                fold::constant_to_right(b, st).or_else(|| fold::reassociate(b, st))
            });
        } else {
            s = s.rewrite(fold::reassociate);
        }
        $r.register(s);
    }};
}

macro_rules! unary {
    ($r:expr, $name:literal, $summary:literal, $op:ident, $verify:expr) => {
        $r.register(
            spec(
                $name,
                $summary,
                1,
                Traits::SAME_OPERANDS_AND_RESULT_TYPE,
                $verify,
                fold::fold_unary::<{ Un::$op as u8 }>,
                interp_unary::<{ Un::$op as u8 }>,
            )
            .same_type_custom_form(print_same),
        )
    };
}

macro_rules! cast {
    ($r:expr, $name:literal, $summary:literal, $op:ident) => {
        $r.register(
            spec(
                $name,
                $summary,
                1,
                Traits::NONE,
                verify_cast::<{ Cast::$op as u8 }>,
                fold::fold_cast::<{ Cast::$op as u8 }>,
                interp_cast::<{ Cast::$op as u8 }>,
            )
            .custom_form(print_cast, parse_cast),
        )
    };
}

/// Registers every `arith` op and the constant materializer.
pub fn register(r: &mut Registry) {
    extended::register(r);
    r.register(
        OpSpec::new("arith.constant", "a constant: its `value` attribute")
            .results(Arity::Exactly(1))
            .traits(Traits::PURE | Traits::CONSTANT_LIKE)
            .verify(verify_constant)
            .interpret(interp_constant)
            .custom_form(print_constant, parse_constant),
    );
    binary!(
        r,
        "arith.addi",
        "integer addition (wrapping)",
        AddI,
        verify_int,
        true
    );
    binary!(
        r,
        "arith.subi",
        "integer subtraction (wrapping)",
        SubI,
        verify_int,
        false
    );
    binary!(
        r,
        "arith.muli",
        "integer multiplication (wrapping)",
        MulI,
        verify_int,
        true
    );
    binary!(
        r,
        "arith.divsi",
        "signed integer division, rounding toward zero",
        DivSI,
        verify_int,
        false
    );
    binary!(
        r,
        "arith.remsi",
        "signed integer remainder (sign of the dividend)",
        RemSI,
        verify_int,
        false
    );
    binary!(r, "arith.andi", "bitwise and", AndI, verify_int, true);
    binary!(r, "arith.ori", "bitwise or", OrI, verify_int, true);
    binary!(
        r,
        "arith.xori",
        "bitwise exclusive or",
        XorI,
        verify_int,
        true
    );
    binary!(
        r,
        "arith.mini",
        "signed integer minimum",
        MinI,
        verify_int,
        true
    );
    binary!(
        r,
        "arith.maxi",
        "signed integer maximum",
        MaxI,
        verify_int,
        true
    );
    binary!(
        r,
        "arith.minui",
        "unsigned integer minimum",
        MinUI,
        verify_int,
        true
    );
    binary!(
        r,
        "arith.maxui",
        "unsigned integer maximum",
        MaxUI,
        verify_int,
        true
    );
    binary!(
        r,
        "arith.shli",
        "shift left (by the width or more: 0)",
        ShLI,
        verify_int,
        false
    );
    binary!(
        r,
        "arith.shrsi",
        "arithmetic shift right (by the width or more: the sign)",
        ShRSI,
        verify_int,
        false
    );
    binary!(
        r,
        "arith.shrui",
        "logical shift right (by the width or more: 0)",
        ShRUI,
        verify_int,
        false
    );
    binary!(
        r,
        "arith.divui",
        "unsigned integer division",
        DivUI,
        verify_int,
        false
    );
    binary!(
        r,
        "arith.remui",
        "unsigned integer remainder",
        RemUI,
        verify_int,
        false
    );
    binary!(
        r,
        "arith.ceildivsi",
        "signed integer division rounding toward +inf",
        CeilDivSI,
        verify_int,
        false
    );
    binary!(
        r,
        "arith.floordivsi",
        "signed integer division rounding toward -inf",
        FloorDivSI,
        verify_int,
        false
    );
    binary!(
        r,
        "arith.ceildivui",
        "unsigned integer division rounding up",
        CeilDivUI,
        verify_int,
        false
    );
    binary!(r, "arith.addf", "float addition", AddF, verify_float, true);
    binary!(
        r,
        "arith.subf",
        "float subtraction",
        SubF,
        verify_float,
        false
    );
    binary!(
        r,
        "arith.mulf",
        "float multiplication",
        MulF,
        verify_float,
        true
    );
    binary!(r, "arith.divf", "float division", DivF, verify_float, false);
    binary!(
        r,
        "arith.minf",
        "float minimum (NaN-propagating, -0 < +0)",
        MinF,
        verify_float,
        true
    );
    binary!(
        r,
        "arith.maxf",
        "float maximum (NaN-propagating, -0 < +0)",
        MaxF,
        verify_float,
        true
    );
    binary!(r, "arith.pow", "float power x^y", Pow, verify_float, false);
    binary!(
        r,
        "arith.remf",
        "float remainder of truncated division (C fmod)",
        RemF,
        verify_float,
        false
    );
    binary!(
        r,
        "arith.minnumf",
        "float minimum ignoring a NaN operand (IEEE minNum, -0 < +0)",
        MinNumF,
        verify_float,
        true
    );
    binary!(
        r,
        "arith.maxnumf",
        "float maximum ignoring a NaN operand (IEEE maxNum, -0 < +0)",
        MaxNumF,
        verify_float,
        true
    );
    unary!(
        r,
        "arith.negf",
        "float negation (flips the sign bit)",
        NegF,
        verify_float
    );
    unary!(r, "arith.sqrt", "float square root", Sqrt, verify_float);
    unary!(r, "arith.exp", "float e^x", Exp, verify_float);
    unary!(r, "arith.log", "float natural logarithm", Log, verify_float);
    unary!(r, "arith.sin", "float sine", Sin, verify_float);
    unary!(r, "arith.cos", "float cosine", Cos, verify_float);
    unary!(
        r,
        "arith.abs",
        "absolute value of an integer (wrapping) or float",
        Abs,
        verify_scalar
    );
    // MLIR's `math` ops beyond the spec's (issue 45, item 3): kept under
    // `arith.` names inside L0, like the spec's math ops, and printed under
    // MLIR's names.
    unary!(
        r,
        "arith.tanh",
        "float hyperbolic tangent (math.tanh)",
        Tanh,
        verify_float
    );
    unary!(
        r,
        "arith.erf",
        "float error function (math.erf)",
        Erf,
        verify_float
    );
    unary!(
        r,
        "arith.floor",
        "float rounded toward -inf (math.floor)",
        Floor,
        verify_float
    );
    unary!(
        r,
        "arith.ceil",
        "float rounded toward +inf (math.ceil)",
        Ceil,
        verify_float
    );
    unary!(
        r,
        "arith.round",
        "float rounded to the nearest integer, halves away from zero (math.round)",
        Round,
        verify_float
    );
    binary!(
        r,
        "arith.copysign",
        "the magnitude of the first operand with the sign of the second (math.copysign)",
        CopySign,
        verify_float,
        false
    );
    r.register(
        OpSpec::new("arith.fma", "a * b + c rounded once (math.fma)")
            .operands(Arity::Exactly(3))
            .results(Arity::Exactly(1))
            .traits(Traits::PURE | Traits::SAME_OPERANDS_AND_RESULT_TYPE)
            .verify(verify_float)
            .fold(fold::fold_fma)
            .interpret(interp_fma)
            .same_type_custom_form(print_same),
    );
    // One op, two spellings: MLIR's names read as L0's ops (and print,
    // below, where MLIR 16 has no L0 name).
    for (alias, name) in [
        ("arith.minsi", "arith.mini"),
        ("arith.maxsi", "arith.maxi"),
        ("arith.minimumf", "arith.minf"),
        ("arith.maximumf", "arith.maxf"),
    ] {
        r.alias(alias, name);
    }
    // MLIR keeps these in its `math` dialect: its names read as L0's ops.
    for (alias, name) in [
        ("math.sqrt", "arith.sqrt"),
        ("math.exp", "arith.exp"),
        ("math.log", "arith.log"),
        ("math.sin", "arith.sin"),
        ("math.cos", "arith.cos"),
        ("math.absf", "arith.abs"),
        ("math.absi", "arith.abs"),
        ("math.powf", "arith.pow"),
        ("math.tanh", "arith.tanh"),
        ("math.erf", "arith.erf"),
        ("math.floor", "arith.floor"),
        ("math.ceil", "arith.ceil"),
        ("math.round", "arith.round"),
        ("math.copysign", "arith.copysign"),
        ("math.fma", "arith.fma"),
    ] {
        r.alias(alias, name);
    }
    let mlir_names: [(&str, MlirNameFn); 16] = [
        ("arith.tanh", |_, _| "math.tanh"),
        ("arith.erf", |_, _| "math.erf"),
        ("arith.floor", |_, _| "math.floor"),
        ("arith.ceil", |_, _| "math.ceil"),
        ("arith.round", |_, _| "math.round"),
        ("arith.copysign", |_, _| "math.copysign"),
        ("arith.fma", |_, _| "math.fma"),
        ("arith.mini", |_, _| "arith.minsi"),
        ("arith.maxi", |_, _| "arith.maxsi"),
        ("arith.sqrt", |_, _| "math.sqrt"),
        ("arith.exp", |_, _| "math.exp"),
        ("arith.log", |_, _| "math.log"),
        ("arith.sin", |_, _| "math.sin"),
        ("arith.cos", |_, _| "math.cos"),
        ("arith.pow", |_, _| "math.powf"),
        ("arith.abs", |ctx, op| {
            if ctx.ty(ctx.result(op, 0)).is_float() {
                "math.absf"
            } else {
                "math.absi"
            }
        }),
    ];
    for (name, f) in mlir_names {
        r.spec_mut(name).expect("registered above").mlir_name = Some(f);
    }
    r.register(
        spec(
            "arith.cmpi",
            "integer comparison giving i1",
            2,
            Traits::NONE,
            verify_cmp::<false>,
            fold::fold_cmpi,
            interp_cmp::<false>,
        )
        .custom_form(print_cmp, parse_cmp)
        .generic_attrs(cmp_generic_attrs, cmp_parse_generic_attrs),
    );
    r.register(
        spec(
            "arith.cmpf",
            "float comparison giving i1",
            2,
            Traits::NONE,
            verify_cmp::<true>,
            fold::fold_cmpf,
            interp_cmp::<true>,
        )
        .custom_form(print_cmp, parse_cmp)
        .generic_attrs(cmp_generic_attrs, cmp_parse_generic_attrs),
    );
    r.register(
        spec(
            "arith.select",
            "select(c, a, b): a if c else b",
            3,
            Traits::NONE,
            verify_select,
            fold::fold_select,
            interp_select,
        )
        // Under deferred faults, poison in the arm not chosen does not
        // matter (LLVM's select); a poison condition faults in
        // `interp_select`, which makes the result poison.
        .poison(ir::poison::PoisonRule::Carries)
        .custom_form(print_select, parse_select),
    );
    cast!(
        r,
        "arith.sitofp",
        "signed integer to float (round to nearest)",
        SIToFP
    );
    cast!(
        r,
        "arith.fptosi",
        "float to signed integer (toward zero, saturating; NaN -> 0)",
        FPToSI
    );
    cast!(
        r,
        "arith.index_cast",
        "between index and i32/i64 (sign-extends or truncates)",
        IndexCast
    );
    cast!(r, "arith.extf", "float to a wider float (exact)", ExtF);
    cast!(
        r,
        "arith.truncf",
        "float to a narrower float (round to nearest even)",
        TruncF
    );
    cast!(
        r,
        "arith.extsi",
        "to a wider integer, sign-extending",
        ExtSI
    );
    cast!(
        r,
        "arith.extui",
        "to a wider integer, zero-extending",
        ExtUI
    );
    cast!(
        r,
        "arith.trunci",
        "to a narrower integer (low bits)",
        TruncI
    );
    cast!(
        r,
        "arith.uitofp",
        "unsigned integer to float (round to nearest)",
        UIToFP
    );
    cast!(
        r,
        "arith.fptoui",
        "float to unsigned integer (toward zero, saturating; NaN -> 0)",
        FPToUI
    );
    cast!(
        r,
        "arith.index_castui",
        "between index and i32/i64 (zero-extends or truncates)",
        IndexCastUI
    );
    cast!(
        r,
        "arith.bitcast",
        "the same bits as another type (i64/f64, i32/f32)",
        Bitcast
    );
    r.materialize = Some(materialize);
    // MLIR's canonicalization patterns, added to the ops registered above.
    patterns::register(r);
}
