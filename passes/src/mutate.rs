//! Mutations of valid IR, and the pattern fuzzer built on them (issue 43).
//!
//! Random programs from one generator only reach the shapes that generator
//! builds; mutating valid programs (the lit tests, the examples) reaches the
//! ordinary shapes beside them that no generator thought of: an operand
//! swapped for another value of its type, an operand made a constant (so a
//! condition folds, a loop runs zero times), an emit or store duplicated, an
//! op wrapped in an `scf.if` on a constant. The idea is the mutation side of
//! grammar-based fuzzing (Csmith generates, LLVM's `llvm-reduce`/mutators and
//! libFuzzer's custom mutators mutate); the invariants checked are MLIR's:
//! every fold and pattern, applied alone, leaves IR that verifies, and no
//! pass panics.
//!
//! [`mutate`] applies one mutation in place (the caller verifies and drops
//! a mutant that does not verify); [`check_patterns`] applies every fold
//! and canonical rewrite of every op of a module one at a time, each on a
//! fresh parse, and verifies after each; [`check_pipelines`] runs the pass
//! pipelines. All three are driven by [`FuzzRng`], a byte or seed source,
//! so that `cargo test` runs a fixed seed range and cargo-fuzz feeds bytes.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::rc::Rc;

use ir::pass::{PassManager, VerifyEach};
use ir::printer::{print_module, PrintOptions};
use ir::rewrite::{apply_fold, canonical_fold};
use ir::spec::{Registry, Traits};
use ir::{Attribute, Builder, Context, OpId, OpState, Type, ValueId};

/// A source of random choices: a seeded generator (splitmix64) or a byte
/// string (cargo-fuzz's input; once the bytes run out every choice is 0).
pub enum FuzzRng<'a> {
    /// splitmix64 state.
    Seed(u64),
    /// The remaining bytes.
    Bytes(&'a [u8]),
}

impl FuzzRng<'_> {
    /// A number in `0..n` (`0` where `n == 0`).
    pub fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            return 0;
        }
        let x = match self {
            FuzzRng::Seed(s) => {
                *s = s.wrapping_add(0x9E37_79B9_7F4A_7C15);
                let mut z = *s;
                z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
                z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
                z ^ (z >> 31)
            }
            FuzzRng::Bytes(b) => {
                let take = b.len().min(2);
                let mut x = 0u64;
                for &byte in &b[..take] {
                    x = (x << 8) | byte as u64;
                }
                *b = &b[take..];
                x
            }
        };
        (x % n as u64) as usize
    }
    /// One of `xs` (which must not be empty).
    pub fn pick<T: Copy>(&mut self, xs: &[T]) -> T {
        xs[self.below(xs.len())]
    }
}

/// The mutations [`mutate`] chooses from.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Mutation {
    /// Operand `j` of an op becomes another value of its type that is
    /// visible there (a block argument or an earlier result).
    ReplaceOperand,
    /// A scalar operand becomes a new `arith.constant` (0, 1, -1, 2, ...):
    /// conditions that fold, loops of zero trips, sizes of zero.
    ConstantOperand,
    /// Two operands of one op with the same type trade places.
    SwapOperands,
    /// A result-less op (an emit, a store, an assert) runs twice.
    DuplicateOp,
    /// A result-less op moves into the then-branch of an `scf.if` on a
    /// constant condition.
    WrapInIf,
}

const MUTATIONS: [Mutation; 5] = [
    Mutation::ReplaceOperand,
    Mutation::ConstantOperand,
    Mutation::SwapOperands,
    Mutation::DuplicateOp,
    Mutation::WrapInIf,
];

/// The ops a mutation may touch: everything inside a function body (not
/// the function ops themselves).
fn candidates(ctx: &Context) -> Vec<OpId> {
    ctx.walk_all()
        .into_iter()
        .filter(|&op| ctx.alive(op) && ctx.parent_op(op).is_some())
        .collect()
}

/// The values visible just before `op`: earlier results in its block and
/// every enclosing block up to the nearest op isolated from above, and the
/// arguments of those blocks.
pub fn visible_values(ctx: &Context, op: OpId) -> Vec<ValueId> {
    let mut out = Vec::new();
    let mut cur = op;
    while let Some(block) = ctx.op(cur).parent {
        out.extend_from_slice(ctx.block_args(block));
        let mut p = ctx.op(cur).prev;
        while let Some(o) = p {
            out.extend_from_slice(ctx.results(o));
            p = ctx.op(o).prev;
        }
        match ctx.block_parent_op(block) {
            Some(parent) if !ctx.has_traits(parent, Traits::ISOLATED_FROM_ABOVE) => cur = parent,
            _ => break,
        }
    }
    out
}

/// A constant of scalar type `ty` for [`Mutation::ConstantOperand`].
fn random_constant(rng: &mut FuzzRng, ty: &Type) -> Option<Attribute> {
    if *ty == Type::I1 {
        return Some(Attribute::Bool(rng.below(2) == 1));
    }
    if ty.is_integer() {
        let v = rng.pick(&[0i64, 1, -1, 2, 3, 7, 64, i64::MAX, i64::MIN]);
        let v = match ty.int_width() {
            // `i0` has one value.
            Some(0) => 0,
            Some(w) if w < 64 => {
                let shift = 64 - w;
                (v << shift) >> shift
            }
            _ => v,
        };
        return Some(Attribute::Int(v, ty.clone()));
    }
    if ty.is_float() {
        let v = rng.pick(&[0.0f64, -0.0, 1.0, -1.0, 0.5, 2.0, f64::INFINITY, f64::NAN]);
        return Some(Attribute::Float(v, ty.clone()));
    }
    None
}

/// Applies one random mutation to `ctx` and returns which, or `None` when
/// the chosen one found nothing to change. The result may not verify (a
/// replaced operand may break an op-specific rule): verify it, and drop it
/// when it does not.
pub fn mutate(ctx: &mut Context, rng: &mut FuzzRng) -> Option<Mutation> {
    let ops = candidates(ctx);
    if ops.is_empty() {
        return None;
    }
    let m = rng.pick(&MUTATIONS);
    let op = rng.pick(&ops);
    let n = ctx.operands(op).len();
    match m {
        Mutation::ReplaceOperand => {
            if n == 0 {
                return None;
            }
            let j = rng.below(n);
            let ty = ctx.ty(ctx.operand(op, j)).clone();
            let same: Vec<ValueId> = visible_values(ctx, op)
                .into_iter()
                .filter(|&v| *ctx.ty(v) == ty)
                .collect();
            if same.is_empty() {
                return None;
            }
            let v = rng.pick(&same);
            ctx.set_operand(op, j, v);
        }
        Mutation::ConstantOperand => {
            if n == 0 {
                return None;
            }
            let j = rng.below(n);
            let ty = ctx.ty(ctx.operand(op, j)).clone();
            let attr = random_constant(rng, &ty)?;
            let c = constant_raw(ctx, op, attr, &ty)?;
            ctx.set_operand(op, j, c);
        }
        Mutation::SwapOperands => {
            let pairs: Vec<(usize, usize)> = (0..n)
                .flat_map(|a| (a + 1..n).map(move |b| (a, b)))
                .filter(|&(a, b)| ctx.ty(ctx.operand(op, a)) == ctx.ty(ctx.operand(op, b)))
                .collect();
            if pairs.is_empty() {
                return None;
            }
            let (a, b) = rng.pick(&pairs);
            let (va, vb) = (ctx.operand(op, a), ctx.operand(op, b));
            ctx.set_operand(op, a, vb);
            ctx.set_operand(op, b, va);
        }
        Mutation::DuplicateOp => {
            if !ctx.results(op).is_empty() || ctx.has_traits(op, Traits::TERMINATOR) {
                return None;
            }
            let mut b = Builder::before(ctx, op);
            b.smart = false;
            ir::clone::clone_op_into(&mut b, op, &mut Default::default());
        }
        Mutation::WrapInIf => {
            if !ctx.results(op).is_empty() || ctx.has_traits(op, Traits::TERMINATOR) {
                return None;
            }
            wrap_in_if(ctx, op, rng.below(2) == 1)?;
        }
    }
    Some(m)
}

/// A new `arith.constant` of `attr` just before `op`, built without folds
/// or hash-consing (so the mutant is exactly what was asked for).
fn constant_raw(ctx: &mut Context, op: OpId, attr: Attribute, ty: &Type) -> Option<ValueId> {
    let kind = ctx.registry().kind("arith.constant")?;
    let mut b = Builder::before(ctx, op);
    let st = OpState {
        kind,
        operands: Default::default(),
        result_types: smallvec::smallvec![ty.clone()],
        attrs: vec![("value".into(), attr)],
        regions: Default::default(),
        successors: Default::default(),
        loc: b.loc,
        existing: None,
    };
    let c = b.create_raw(st);
    Some(ctx.result(c, 0))
}

/// Moves the result-less `op` into `scf.if %cond { op } else { }`.
fn wrap_in_if(ctx: &mut Context, op: OpId, cond: bool) -> Option<()> {
    let reg = ctx.registry().clone();
    let (if_kind, yield_kind) = (reg.kind("scf.if")?, reg.kind("scf.yield")?);
    let c = constant_raw(ctx, op, Attribute::Bool(cond), &Type::I1)?;
    let (then_r, then_b) = ctx.new_region_with_block(&[]);
    let (else_r, else_b) = ctx.new_region_with_block(&[]);
    let loc = ctx.loc(op);
    let raw = |kind, operands: &[ValueId], regions: &[ir::RegionId]| OpState {
        kind,
        operands: operands.into(),
        result_types: Default::default(),
        attrs: Vec::new(),
        regions: regions.into(),
        successors: Default::default(),
        loc,
        existing: None,
    };
    let mut b = Builder::before(ctx, op);
    b.create_raw(raw(if_kind, &[c], &[then_r, else_r]));
    for blk in [then_b, else_b] {
        let mut b = Builder::at_end(ctx, blk);
        b.create_raw(raw(yield_kind, &[], &[]));
    }
    let first = ctx.block(then_b).first;
    ctx.move_op(op, then_b, first);
    Some(())
}

/// Parses `text` with `registry`; `None` where it does not parse or verify.
pub fn parse_valid(text: &str, registry: &Rc<Registry>) -> Option<Context> {
    let ctx = ir::build::parse_source("mutant.ir", text, registry.clone()).ok()?;
    ir::verifier::verify(&ctx).ok()?;
    Some(ctx)
}

/// The module in generic form (what the fuzzer re-parses).
pub fn print_generic(ctx: &Context) -> String {
    print_module(
        ctx,
        PrintOptions {
            generic: true,
            ..Default::default()
        },
    )
}

/// `text` (which must verify) after up to `rounds` mutations that each
/// verify, or `None` when none applied.
pub fn mutant(
    text: &str,
    registry: &Rc<Registry>,
    rng: &mut FuzzRng,
    rounds: usize,
) -> Option<String> {
    let mut cur = text.to_string();
    let mut changed = false;
    for _ in 0..rounds {
        // Most random choices find nothing to change or break a rule of
        // the op: a few tries per round.
        for _ in 0..16 {
            let mut ctx = parse_valid(&cur, registry)?;
            if mutate(&mut ctx, rng).is_some() && ir::verifier::verify(&ctx).is_ok() {
                cur = print_generic(&ctx);
                changed = true;
                break;
            }
        }
    }
    changed.then_some(cur)
}

fn panic_text(e: Box<dyn std::any::Any + Send>) -> String {
    e.downcast_ref::<String>()
        .cloned()
        .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_else(|| "a panic".into())
}

/// Applies each fold and each canonical rewrite of each op of `text` (which
/// must verify) alone, on a fresh parse, and verifies the module after it.
/// Returns the number of applications that changed something, or what
/// failed: a panic, or IR that no longer verifies, named with the op and
/// the pattern's position in its spec.
pub fn check_patterns(text: &str, registry: &Rc<Registry>) -> Result<usize, String> {
    let Some(base) = parse_valid(text, registry) else {
        return Ok(0);
    };
    let ops = base.walk_all();
    let mut applied = 0;
    for (k, &op) in ops.iter().enumerate() {
        let spec = base.spec(op);
        if base.op(op).parent.is_none() {
            continue;
        }
        let fold = canonical_fold(spec);
        let tries = fold.iter().count() + spec.rewrites.len();
        for t in 0..tries {
            let mut ctx = parse_valid(text, registry).ok_or("a module stopped verifying")?;
            let op = ctx.walk_all()[k];
            let name = ctx.op_name(op);
            let what = if t == 0 && fold.is_some() {
                format!("the fold of '{name}'")
            } else {
                format!("rewrite #{} of '{name}'", t - fold.iter().count())
            };
            let outcome = catch_unwind(AssertUnwindSafe(|| apply_one(&mut ctx, op, t)));
            match outcome {
                Err(e) => return Err(format!("{what} panicked: {}", panic_text(e))),
                Ok(false) => {}
                Ok(true) => {
                    applied += 1;
                    if let Err(ds) = ir::verifier::verify(&ctx) {
                        return Err(format!(
                            "{what} left IR that does not verify: {}\n{}",
                            ds[0].message,
                            print_generic(&ctx)
                        ));
                    }
                }
            }
        }
    }
    Ok(applied)
}

/// Applies pattern `t` of `op` (the fold first where it has one, then its
/// rewrites in order), as the greedy driver does for one op; whether it
/// changed anything.
fn apply_one(ctx: &mut Context, op: OpId, t: usize) -> bool {
    let registry = ctx.registry().clone();
    let spec = registry.spec(ctx.op(op).kind);
    let fold = canonical_fold(spec);
    let st = OpState::of(ctx, op);
    let vals = match (fold, t) {
        (Some(f), 0) => {
            let Some(vals) = apply_fold(ctx, op, &st, f) else {
                return false;
            };
            vals
        }
        _ => {
            let rw = spec.rewrites[t - fold.iter().count()];
            let mut b = Builder::before(ctx, op);
            let Some(vals) = rw(&mut b, &st) else {
                return false;
            };
            vals
        }
    };
    if ctx.alive(op) {
        ctx.replace_op(op, &vals);
    }
    true
}

/// The pipelines [`check_pipelines`] runs on each mutant.
pub const PIPELINES: &[&str] = &[
    "canonicalize",
    "cse,dce",
    "inline",
    "code-motion",
    "fuse",
    "lower",
    "fuse,lower",
    "inline,fuse,lower",
    "split-structs,canonicalize",
    "mem2reg,speculate,canonicalize",
    "fuse,lower{target=gpu,block=32}",
    "fuse{target=gpu},lower{target=gpu,block=32}",
];

/// Runs each of [`PIPELINES`] on `text` (which must verify), verifying
/// after every pass. A pass may refuse with a diagnostic; a panic, or IR
/// that does not verify after a pass that succeeded, is a failure.
pub fn check_pipelines(text: &str, registry: &Rc<Registry>) -> Result<(), String> {
    for pipeline in PIPELINES {
        let Some(mut ctx) = parse_valid(text, registry) else {
            return Ok(());
        };
        let passes = crate::registry()
            .parse_pipeline(pipeline)
            .map_err(|e| format!("pipeline '{pipeline}': {e:?}"))?;
        let outcome = catch_unwind(AssertUnwindSafe(|| {
            let mut pm = PassManager::new(passes);
            pm.instrument(Box::new(VerifyEach));
            pm.run(&mut ctx).is_ok()
        }));
        match outcome {
            Err(e) => return Err(format!("'{pipeline}' panicked: {}", panic_text(e))),
            Ok(false) => {}
            Ok(true) => {
                if let Err(ds) = ir::verifier::verify(&ctx) {
                    return Err(format!(
                        "'{pipeline}' left IR that does not verify: {}",
                        ds[0].message
                    ));
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every integer width gets a constant that fits it, `i0` (one value)
    /// included: the fuzzer once shifted an `i64` by 64 there.
    #[test]
    fn random_constants_fit_their_width() {
        for ty in [
            Type::I0,
            Type::I1,
            Type::I8,
            Type::I32,
            Type::Int(3),
            Type::I64,
        ] {
            for seed in 0..64 {
                let mut rng = FuzzRng::Seed(seed);
                match random_constant(&mut rng, &ty) {
                    Some(Attribute::Int(v, _)) => {
                        let w = ty.int_width().unwrap();
                        if w < 64 {
                            let lo = -(1i64 << w.saturating_sub(1));
                            let hi = (1i64 << w) - 1;
                            assert!(w == 0 && v == 0 || (lo..=hi).contains(&v), "{ty:?}: {v}");
                        }
                    }
                    Some(Attribute::Bool(_)) => assert_eq!(ty, Type::I1),
                    other => panic!("{ty:?}: {other:?}"),
                }
            }
        }
    }
}
