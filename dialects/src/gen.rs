//! The `gen` dialect: Delite-style generator loops, the fusion level
//! (IR-SPEC §3, `LEVELS.md` "gen").
//!
//! ```text
//! %xs, %s = "gen.loop"(%n, %zero) ({
//! ^bb0(%i: index, %g0: !gen.collect<f64>, %g1: !gen.reduce<f64>):
//!   ...
//!   "gen.emit"(%g0, %y) : (!gen.collect<f64>, f64) -> ()
//!   "gen.emit"(%g1, %y) : (!gen.reduce<f64>, f64) -> ()
//!   "gen.end"() : () -> ()
//! }) {gens = [#gen.collect, #gen.reduce<add>]} : (index, f64) -> (vec<f64>, f64)
//! ```
//!
//! * `gen.loop(size, inits...)` runs its single-block body for `%i` in
//!   `[0, size)`. The entry block takes `%i: index` and one handle per
//!   generator of the `gens` attribute; results are in generator order, a
//!   bucket contributing two. See [`GenKind`] for the generators, their
//!   handle types and results.
//! * Inits: either one per reduce/scan generator (in generator order), or
//!   none at all, in which case every reduce/scan starts from its monoid's
//!   identity (the IR-SPEC §3 example is written that way).
//! * `gen.emit(handle, value)` / `gen.emit(handle, key, value)` (bucket)
//!   feeds a generator; it may sit at the top of the body, under `scf.if`
//!   (filter) or in a nested `gen.loop` (flatMap). Its handle must be a
//!   block argument of an enclosing `gen.loop`, and handles have no other use.
//! * `gen.end` terminates the body.
//!
//! Other passes (vec lowering, fusion) read and build loops through
//! [`generators`], [`Generator`], [`gens_attr`], [`build_loop`], [`emit`]
//! and the accessors below, never through the attribute encoding.
//!
//! The lowering to `arr` + `scf` (phase `"arr"`) lives in [`lower`].

use std::any::Any;
use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

use smallvec::{smallvec, SmallVec};

use ir::context::ValueDef;
use ir::interp::{Interp, RtValue, RunError};
use ir::spec::{Arity, OpSpec, OpState, Registry, Traits};
use ir::types::TypeParam;
use ir::{Attribute, BlockId, Builder, Context, OpId, Type, ValueId};

use crate::util::as_size;

pub mod lower;
pub mod running;

pub use running::RUNNING;

/// `gen.loop`.
pub const LOOP: &str = "gen.loop";
/// `gen.emit`.
pub const EMIT: &str = "gen.emit";
/// `gen.end`.
pub const END: &str = "gen.end";

// ----- monoids -----------------------------------------------------------------

/// The associative operator of a reduce or scan generator.
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug)]
pub enum Monoid {
    Add,
    Mul,
    Min,
    Max,
}

impl Monoid {
    /// The keyword used in attributes (`add`, `mul`, `min`, `max`).
    pub fn name(self) -> &'static str {
        match self {
            Monoid::Add => "add",
            Monoid::Mul => "mul",
            Monoid::Min => "min",
            Monoid::Max => "max",
        }
    }
    /// Parses a keyword.
    pub fn from_name(s: &str) -> Option<Monoid> {
        Some(match s {
            "add" => Monoid::Add,
            "mul" => Monoid::Mul,
            "min" => Monoid::Min,
            "max" => Monoid::Max,
            _ => return None,
        })
    }
    /// Whether the monoid is defined on `ty` (`i32`, `i64`, `index`, `f32`, `f64`).
    /// A struct of such types is supported too, the monoid applying to each
    /// field (a complex sum adds `re` and `im` apart; issue 12), though only
    /// the interpreter folds one whole: `split-structs` gives each field a
    /// generator of its own before anything is compiled.
    pub fn supports(ty: &Type) -> bool {
        match ty {
            Type::Struct(st) => st.fields.iter().all(|(_, t)| Monoid::supports(t)),
            t => Monoid::supports_scalar(t),
        }
    }
    /// Whether `ty` is one of the scalars a monoid is defined on.
    pub fn supports_scalar(ty: &Type) -> bool {
        matches!(
            ty,
            Type::I32 | Type::I64 | Type::Index | Type::F32 | Type::F64
        )
    }
    /// The identity element as a constant attribute of type `ty`: add 0,
    /// mul 1, min +inf / INT_MAX, max -inf / INT_MIN.
    pub fn identity(self, ty: &Type) -> Option<Attribute> {
        if !Monoid::supports_scalar(ty) {
            return None;
        }
        Some(if ty.is_float() {
            let v = match self {
                Monoid::Add => 0.0,
                Monoid::Mul => 1.0,
                Monoid::Min => f64::INFINITY,
                Monoid::Max => f64::NEG_INFINITY,
            };
            Attribute::float(v, ty.clone())
        } else {
            let i32_ty = *ty == Type::I32;
            let v = match self {
                Monoid::Add => 0,
                Monoid::Mul => 1,
                Monoid::Min if i32_ty => i32::MAX as i64,
                Monoid::Min => i64::MAX,
                Monoid::Max if i32_ty => i32::MIN as i64,
                Monoid::Max => i64::MIN,
            };
            Attribute::int(v, ty.clone())
        })
    }
    /// The identity element as a run-time value of type `ty`.
    pub fn identity_value(self, ty: &Type) -> Option<RtValue> {
        if let Type::Struct(st) = ty {
            let xs = st.fields.iter().map(|(_, t)| self.identity_value(t));
            return Some(RtValue::Struct(std::rc::Rc::new(
                xs.collect::<Option<_>>()?,
            )));
        }
        crate::util::attr_to_value(&self.identity(ty)?)
    }
    /// The `arith` op that combines two values of type `ty`
    /// (`arith.addf`, `arith.muli`, `arith.minf`, `arith.maxi`, ...).
    pub fn combine_op(self, ty: &Type) -> Option<&'static str> {
        if !Monoid::supports_scalar(ty) {
            return None;
        }
        let f = ty.is_float();
        Some(match (self, f) {
            (Monoid::Add, true) => "arith.addf",
            (Monoid::Add, false) => "arith.addi",
            (Monoid::Mul, true) => "arith.mulf",
            (Monoid::Mul, false) => "arith.muli",
            (Monoid::Min, true) => "arith.minf",
            (Monoid::Min, false) => "arith.mini",
            (Monoid::Max, true) => "arith.maxf",
            (Monoid::Max, false) => "arith.maxi",
        })
    }
    /// Combines two run-time values of type `ty` with exactly the semantics
    /// of [`Monoid::combine_op`]'s `arith` op, so that interpreting a loop
    /// and interpreting its lowering agree: integers wrap at the type's
    /// width; float `min`/`max` are IEEE `minimum`/`maximum` (`arith.minf`:
    /// NaN if either operand is NaN, `-0.0 < +0.0`).
    pub fn apply(self, ty: &Type, a: &RtValue, b: &RtValue) -> Option<RtValue> {
        use crate::arith::eval::{binary, Bin, Scalar};
        if let (Type::Struct(st), RtValue::Struct(xs), RtValue::Struct(ys)) = (ty, a, b) {
            let fields = st.fields.iter().zip(xs.iter().zip(ys.iter()));
            let out = fields.map(|((_, t), (x, y))| self.apply(t, x, y));
            return Some(RtValue::Struct(std::rc::Rc::new(
                out.collect::<Option<_>>()?,
            )));
        }
        let f = ty.is_float();
        let bin = match (self, f) {
            (Monoid::Add, false) => Bin::AddI,
            (Monoid::Add, true) => Bin::AddF,
            (Monoid::Mul, false) => Bin::MulI,
            (Monoid::Mul, true) => Bin::MulF,
            (Monoid::Min, false) => Bin::MinI,
            (Monoid::Min, true) => Bin::MinF,
            (Monoid::Max, false) => Bin::MaxI,
            (Monoid::Max, true) => Bin::MaxF,
        };
        if !Monoid::supports_scalar(ty) {
            return None;
        }
        let (x, y) = (Scalar::from_rt(a, ty)?, Scalar::from_rt(b, ty)?);
        binary(bin, ty, x, y).ok().map(|r| r.to_rt(ty))
    }
}

// ----- generator kinds -----------------------------------------------------------

/// What a bucket generator applies to each key's values.
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug)]
pub enum BucketOf {
    /// `#gen.bucket<#gen.collect>`: per key, the `vec<V>` of its values.
    Collect,
    /// `#gen.bucket<#gen.reduce<op>>`: per key, the fold of its values,
    /// starting from the monoid's identity.
    Reduce(Monoid),
}

/// A generator kind: one entry of a `gen.loop`'s `gens` attribute.
///
/// | kind | attribute | handle | results |
/// |---|---|---|---|
/// | `Collect` | `#gen.collect` | `!gen.collect<T>` | `vec<T>` |
/// | `Reduce(m)` | `#gen.reduce<m>` | `!gen.reduce<T>` | `T` (takes an init) |
/// | `Scan(m)` | `#gen.scan<m>` | `!gen.scan<T>` | `vec<T>` (takes an init; inclusive) |
/// | `Bucket(Collect)` | `#gen.bucket<#gen.collect>` | `!gen.bucket<K, V>` | `vec<K>`, `vec<vec<V>>` |
/// | `Bucket(Reduce(m))` | `#gen.bucket<#gen.reduce<m>>` | `!gen.bucket<K, V>` | `vec<K>`, `vec<V>` |
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug)]
pub enum GenKind {
    Collect,
    Reduce(Monoid),
    Scan(Monoid),
    Bucket(BucketOf),
}

impl GenKind {
    /// The attribute that names this kind in `gens`.
    pub fn attr(self) -> Attribute {
        let kw = |m: Monoid| vec![Attribute::Keyword(m.name().to_string())];
        match self {
            GenKind::Collect => Attribute::dialect("gen", "collect", vec![]),
            GenKind::Reduce(m) => Attribute::dialect("gen", "reduce", kw(m)),
            GenKind::Scan(m) => Attribute::dialect("gen", "scan", kw(m)),
            GenKind::Bucket(BucketOf::Collect) => {
                Attribute::dialect("gen", "bucket", vec![GenKind::Collect.attr()])
            }
            GenKind::Bucket(BucketOf::Reduce(m)) => {
                Attribute::dialect("gen", "bucket", vec![GenKind::Reduce(m).attr()])
            }
        }
    }
    /// Parses an entry of `gens`.
    pub fn from_attr(a: &Attribute) -> Result<GenKind, String> {
        let bad = || {
            format!("'{a}' is not a generator (#gen.collect, #gen.reduce<op>, #gen.scan<op>, #gen.bucket<G>)")
        };
        let d = a
            .as_dialect()
            .filter(|d| d.dialect == "gen")
            .ok_or_else(bad)?;
        let monoid = |d: &ir::attributes::DialectAttr| -> Result<Monoid, String> {
            match d.params.as_slice() {
                [p] => p.as_str().and_then(Monoid::from_name).ok_or_else(|| {
                    format!("unknown reduction operator '{p}' (expected add, mul, min or max)")
                }),
                _ => Err(format!("'{a}' needs one operator: add, mul, min or max")),
            }
        };
        match d.name.as_str() {
            "collect" if d.params.is_empty() => Ok(GenKind::Collect),
            "reduce" => Ok(GenKind::Reduce(monoid(d)?)),
            "scan" => Ok(GenKind::Scan(monoid(d)?)),
            "bucket" => match d.params.as_slice() {
                [inner] => match GenKind::from_attr(inner)? {
                    GenKind::Collect => Ok(GenKind::Bucket(BucketOf::Collect)),
                    GenKind::Reduce(m) => Ok(GenKind::Bucket(BucketOf::Reduce(m))),
                    _ => Err(format!(
                        "'{a}': a bucket applies #gen.collect or #gen.reduce<op> per key"
                    )),
                },
                _ => Err(format!("'{a}' needs one inner generator")),
            },
            _ => Err(bad()),
        }
    }
    /// The monoid of a reduce, scan or bucket-reduce.
    pub fn monoid(self) -> Option<Monoid> {
        match self {
            GenKind::Reduce(m) | GenKind::Scan(m) | GenKind::Bucket(BucketOf::Reduce(m)) => Some(m),
            _ => None,
        }
    }
    /// Whether the kind takes an init operand (reduce and scan).
    pub fn takes_init(self) -> bool {
        matches!(self, GenKind::Reduce(_) | GenKind::Scan(_))
    }
    /// Number of loop results the generator produces (2 for a bucket).
    pub fn num_results(self) -> usize {
        match self {
            GenKind::Bucket(_) => 2,
            _ => 1,
        }
    }
    /// The handle type name (`collect`, `reduce`, `scan`, `bucket`).
    pub fn handle_name(self) -> &'static str {
        match self {
            GenKind::Collect => "collect",
            GenKind::Reduce(_) => "reduce",
            GenKind::Scan(_) => "scan",
            GenKind::Bucket(_) => "bucket",
        }
    }
}

/// A generator of a loop: its kind, the type of emitted values and, for a
/// bucket, the key type.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub struct Generator {
    pub kind: GenKind,
    /// `T` (collect/reduce/scan) or `V` (bucket values).
    pub elem: Type,
    /// `K` for a bucket.
    pub key: Option<Type>,
}

impl Generator {
    /// `#gen.collect` of `elem`.
    pub fn collect(elem: Type) -> Generator {
        Generator {
            kind: GenKind::Collect,
            elem,
            key: None,
        }
    }
    /// `#gen.reduce<m>` of `elem`.
    pub fn reduce(m: Monoid, elem: Type) -> Generator {
        Generator {
            kind: GenKind::Reduce(m),
            elem,
            key: None,
        }
    }
    /// `#gen.scan<m>` of `elem`.
    pub fn scan(m: Monoid, elem: Type) -> Generator {
        Generator {
            kind: GenKind::Scan(m),
            elem,
            key: None,
        }
    }
    /// `#gen.bucket<of>` with keys `key` and values `elem`.
    pub fn bucket(of: BucketOf, key: Type, elem: Type) -> Generator {
        Generator {
            kind: GenKind::Bucket(of),
            elem,
            key: Some(key),
        }
    }
    /// The monoid of a reduce, scan or bucket-reduce.
    pub fn monoid(&self) -> Option<Monoid> {
        self.kind.monoid()
    }
    /// The handle type: `!gen.collect<T>`, `!gen.reduce<T>`, `!gen.scan<T>`, `!gen.bucket<K, V>`.
    pub fn handle_type(&self) -> Type {
        let mut params = Vec::new();
        if let Some(k) = &self.key {
            params.push(TypeParam::Type(k.clone()));
        }
        params.push(TypeParam::Type(self.elem.clone()));
        Type::dialect("gen", self.kind.handle_name(), params)
    }
    /// The generator of kind `kind` whose handle has type `ty`, or why `ty`
    /// is not a handle of that kind.
    pub fn from_handle(kind: GenKind, ty: &Type) -> Result<Generator, String> {
        let want = kind.handle_name();
        let err = || {
            let shape = if matches!(kind, GenKind::Bucket(_)) {
                "<K, V>"
            } else {
                "<T>"
            };
            format!("handle has type '{ty}', but its generator needs '!gen.{want}{shape}'")
        };
        let d = ty.as_dialect("gen", want).ok_or_else(err)?;
        let tys: Vec<&Type> = d
            .params
            .iter()
            .filter_map(|p| match p {
                TypeParam::Type(t) => Some(t),
                TypeParam::Attr(_) => None,
            })
            .collect();
        if tys.len() != d.params.len() {
            return Err(err());
        }
        match (kind, tys.as_slice()) {
            (GenKind::Bucket(_), [k, v]) => Ok(Generator {
                kind,
                elem: (*v).clone(),
                key: Some((*k).clone()),
            }),
            (GenKind::Bucket(_), _) => Err(err()),
            (_, [t]) => Ok(Generator {
                kind,
                elem: (*t).clone(),
                key: None,
            }),
            _ => Err(err()),
        }
    }
    /// The loop results this generator produces.
    pub fn result_types(&self) -> Vec<Type> {
        let t = self.elem.clone();
        match self.kind {
            GenKind::Collect | GenKind::Scan(_) => vec![Type::vec(t)],
            GenKind::Reduce(_) => vec![t],
            GenKind::Bucket(of) => {
                let k = self.key.clone().unwrap_or(Type::Index);
                let v = match of {
                    BucketOf::Collect => Type::vec(Type::vec(t)),
                    BucketOf::Reduce(_) => Type::vec(t),
                };
                vec![Type::vec(k), v]
            }
        }
    }
    /// Checks that the element and key types suit the kind.
    pub fn check_types(&self) -> Result<(), String> {
        if let Some(m) = self.monoid() {
            if !Monoid::supports(&self.elem) {
                return Err(format!(
                    "'{}' reduction needs an i32, i64, index, f32 or f64 element, got '{}'",
                    m.name(),
                    self.elem
                ));
            }
        }
        if let Some(k) = &self.key {
            if !k.is_scalar() {
                return Err(format!("bucket keys must be scalars, got '{k}'"));
            }
        }
        Ok(())
    }
}

/// The `gens` attribute for `gens` (an array of [`GenKind::attr`]).
pub fn gens_attr(gens: &[Generator]) -> Attribute {
    Attribute::Array(gens.iter().map(|g| g.kind.attr()).collect())
}

/// `!gen.collect<T>`.
pub fn collect_type(t: Type) -> Type {
    Generator::collect(t).handle_type()
}
/// `!gen.reduce<T>`.
pub fn reduce_type(t: Type) -> Type {
    Generator::reduce(Monoid::Add, t).handle_type()
}
/// `!gen.scan<T>`.
pub fn scan_type(t: Type) -> Type {
    Generator::scan(Monoid::Add, t).handle_type()
}
/// `!gen.bucket<K, V>`.
pub fn bucket_type(k: Type, v: Type) -> Type {
    Generator::bucket(BucketOf::Collect, k, v).handle_type()
}

/// Whether `ty` is a generator handle type (`!gen.collect<..>` etc.).
pub fn is_handle_type(ty: &Type) -> bool {
    matches!(ty, Type::Dialect(d) if d.dialect == "gen"
        && matches!(d.name.as_str(), "collect" | "reduce" | "scan" | "bucket"))
}

// ----- accessors -------------------------------------------------------------------

/// The generators of `gen.loop` `op`, or why they are malformed (bad `gens`
/// attribute, wrong number or types of block arguments).
pub fn try_generators(ctx: &Context, op: OpId) -> Result<Vec<Generator>, String> {
    let Some(Attribute::Array(items)) = ctx.attr(op, "gens") else {
        return Err("requires a 'gens' array attribute".into());
    };
    let kinds = items
        .iter()
        .map(GenKind::from_attr)
        .collect::<Result<Vec<_>, _>>()?;
    let Some(&r) = ctx.regions(op).first() else {
        return Err("requires a body region".into());
    };
    let Some(&b) = ctx.region(r).blocks.first() else {
        return Err("requires a body block".into());
    };
    let args = ctx.block_args(b);
    if args.len() != kinds.len() + 1 {
        return Err(format!(
            "body must take the index and {} generator handle(s), but takes {} argument(s)",
            kinds.len(),
            args.len()
        ));
    }
    if *ctx.ty(args[0]) != Type::Index {
        return Err(format!(
            "first body argument must be 'index', got '{}'",
            ctx.ty(args[0])
        ));
    }
    kinds
        .iter()
        .zip(&args[1..])
        .enumerate()
        .map(|(i, (&k, &a))| {
            let g =
                Generator::from_handle(k, ctx.ty(a)).map_err(|e| format!("generator #{i}: {e}"))?;
            g.check_types()
                .map_err(|e| format!("generator #{i}: {e}"))?;
            Ok(g)
        })
        .collect()
}

/// The generators of a (verified) `gen.loop`, in order; empty if malformed.
pub fn generators(ctx: &Context, op: OpId) -> Vec<Generator> {
    try_generators(ctx, op).unwrap_or_default()
}

/// The result types of a loop with `gens`, in order.
pub fn result_types(gens: &[Generator]) -> Vec<Type> {
    gens.iter().flat_map(|g| g.result_types()).collect()
}

/// For each generator, the index of its first result.
pub fn result_offsets(gens: &[Generator]) -> Vec<usize> {
    let mut out = Vec::with_capacity(gens.len());
    let mut k = 0;
    for g in gens {
        out.push(k);
        k += g.kind.num_results();
    }
    out
}

/// The body block of a `gen.loop`.
pub fn body(ctx: &Context, op: OpId) -> BlockId {
    ctx.op_block(op, 0)
}
/// The induction variable `%i` of a `gen.loop`.
pub fn induction_var(ctx: &Context, op: OpId) -> ValueId {
    ctx.block_args(body(ctx, op))[0]
}
/// The handle arguments of a `gen.loop`, one per generator.
pub fn handles(ctx: &Context, op: OpId) -> &[ValueId] {
    &ctx.block_args(body(ctx, op))[1..]
}
/// The `size` operand of a `gen.loop`.
pub fn size(ctx: &Context, op: OpId) -> ValueId {
    ctx.operand(op, 0)
}
/// For each generator, its init operand: `Some` for a reduce/scan of a loop
/// with inits, `None` otherwise (the fold starts from the identity).
pub fn inits(ctx: &Context, op: OpId) -> Vec<Option<ValueId>> {
    let ops = &ctx.operands(op)[1..];
    let mut it = ops.iter();
    generators(ctx, op)
        .iter()
        .map(|g| {
            if g.kind.takes_init() {
                it.next().copied()
            } else {
                None
            }
        })
        .collect()
}
/// The `gen.emit` ops that feed `handle`, in no particular order.
pub fn emits_to(ctx: &Context, handle: ValueId) -> Vec<OpId> {
    ctx.uses(handle)
        .iter()
        .filter(|u| u.index == 0 && ctx.is(u.op, EMIT))
        .map(|u| u.op)
        .collect()
}
/// The single unconditional emit to `handle` at the top of loop body `body`,
/// if that is its only emit: its collect or scan then holds exactly one
/// element per index.
pub fn exact_emit(ctx: &Context, body: BlockId, handle: ValueId) -> Option<OpId> {
    match emits_to(ctx, handle).as_slice() {
        [e] if ctx.op(*e).parent == Some(body) => Some(*e),
        _ => None,
    }
}
/// The `gen.loop` owning handle `h` (a block argument), if any.
pub fn handle_owner(ctx: &Context, h: ValueId) -> Option<OpId> {
    match ctx.value(h).def {
        ValueDef::BlockArg(b, i) if i >= 1 => ctx.block_parent_op(b).filter(|&l| ctx.is(l, LOOP)),
        _ => None,
    }
}

/// A result of the same loop that provably has the length of `v`, a
/// collect result of a `gen.loop`: the first collect result whose handle
/// is emitted to as many times as `v`'s in every block of the body (so
/// every run of any block appends as many elements to both, whatever the
/// branches and nested loops do). Where none comes before it, `v` itself;
/// `None` where `v` is not such a result, a loop has a bucket (two
/// results per generator) or a handle has a use other than an emit.
///
/// The field vectors that `split-structs` makes of one filtered or mapped
/// vector of records are such results: their equal length is this fact,
/// not a run-time check that keeps unread fields alive (issue 43).
pub fn same_length_collect(ctx: &Context, v: ValueId) -> Option<ValueId> {
    let ValueDef::Result(lp, k) = ctx.value(v).def else {
        return None;
    };
    if !ctx.is(lp, LOOP) {
        return None;
    }
    let Some(Attribute::Array(gens)) = ctx.attr(lp, "gens") else {
        return None;
    };
    let kinds: Vec<GenKind> = gens
        .iter()
        .map(GenKind::from_attr)
        .collect::<Result<_, _>>()
        .ok()?;
    let k = k as usize;
    if kinds.len() != ctx.results(lp).len()
        || kinds.iter().any(|g| matches!(g, GenKind::Bucket(_)))
        || kinds.get(k) != Some(&GenKind::Collect)
    {
        return None;
    }
    let body = ctx.op_block(lp, 0);
    let args = ctx.block_args(body);
    // Per block, how many emits feed the handle of generator `g`.
    let counts = |g: usize| -> Option<Vec<(ir::BlockId, usize)>> {
        let h = *args.get(g + 1)?;
        let mut per: Vec<(ir::BlockId, usize)> = Vec::new();
        for u in ctx.uses(h) {
            if !ctx.is(u.op, EMIT) || u.index != 0 || ctx.operands(u.op).len() != 2 {
                return None;
            }
            let blk = ctx.op(u.op).parent?;
            match per.iter_mut().find(|(b, _)| *b == blk) {
                Some((_, n)) => *n += 1,
                None => per.push((blk, 1)),
            }
        }
        per.sort();
        Some(per)
    };
    let mine = counts(k)?;
    for (g, kind) in kinds.iter().enumerate().take(k) {
        if *kind == GenKind::Collect && counts(g).as_ref() == Some(&mine) {
            return ctx.try_result(lp, g);
        }
    }
    Some(v)
}

// ----- construction ----------------------------------------------------------------

/// Builds `gen.loop(size, inits...)` with generators `gens`; `body` fills
/// the body given `%i` and the handles (the `gen.end` is appended after it).
/// `inits` is empty or has one value per reduce/scan generator. Returns the
/// loop's results (in generator order, two per bucket).
pub fn build_loop(
    b: &mut Builder,
    size: ValueId,
    inits: &[ValueId],
    gens: &[Generator],
    body: impl FnOnce(&mut Builder, ValueId, &[ValueId]),
) -> SmallVec<[ValueId; 2]> {
    let mut arg_types = vec![Type::Index];
    arg_types.extend(gens.iter().map(|g| g.handle_type()));
    let region = b.build_region(&arg_types, |b, args| {
        body(b, args[0], &args[1..]);
        end(b);
    });
    let mut operands = vec![size];
    operands.extend_from_slice(inits);
    b.op_with_regions(
        LOOP,
        &operands,
        &result_types(gens),
        vec![("gens".to_string(), gens_attr(gens))],
        &[region],
    )
}

/// `gen.emit(handle, value)`.
pub fn emit(b: &mut Builder, handle: ValueId, value: ValueId) {
    b.op(EMIT, &[handle, value], &[], vec![]);
}
/// `gen.emit(handle, key, value)` (bucket).
pub fn emit_kv(b: &mut Builder, handle: ValueId, key: ValueId, value: ValueId) {
    b.op(EMIT, &[handle, key, value], &[], vec![]);
}
/// `gen.end` at the builder's insertion point.
pub fn end(b: &mut Builder) {
    let st = b.state(END, &[], &[], vec![]);
    b.create_raw(st);
}

// ----- verifiers -------------------------------------------------------------------

fn verify_loop(ctx: &Context, op: OpId) -> Result<(), String> {
    let size = ctx.operand(op, 0);
    if *ctx.ty(size) != Type::Index {
        return Err(format!("size must be 'index', got '{}'", ctx.ty(size)));
    }
    let gens = try_generators(ctx, op)?;
    let ninit = gens.iter().filter(|g| g.kind.takes_init()).count();
    let inits = &ctx.operands(op)[1..];
    if !inits.is_empty() && inits.len() != ninit {
        return Err(format!(
            "expects {ninit} init operand(s) (one per reduce/scan generator) or none, but got {}",
            inits.len()
        ));
    }
    if !inits.is_empty() {
        let elems = gens.iter().filter(|g| g.kind.takes_init()).map(|g| &g.elem);
        for (k, (&v, t)) in inits.iter().zip(elems).enumerate() {
            if ctx.ty(v) != t {
                return Err(format!(
                    "init #{k} has type '{}', but its generator folds '{t}'",
                    ctx.ty(v)
                ));
            }
        }
    }
    let want = result_types(&gens);
    let got: Vec<&Type> = ctx.results(op).iter().map(|&r| ctx.ty(r)).collect();
    if got.len() != want.len() {
        return Err(format!(
            "generators produce {} result(s), but the op has {}",
            want.len(),
            got.len()
        ));
    }
    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
        if *g != w {
            return Err(format!(
                "result #{i} has type '{g}', but its generator produces '{w}'"
            ));
        }
    }
    let b = body(ctx, op);
    if ctx.region(ctx.regions(op)[0]).blocks.len() != 1 {
        return Err("body must be a single block".into());
    }
    match ctx.terminator(b) {
        Some(t) if ctx.is(t, END) => {}
        _ => return Err("body must end with 'gen.end'".into()),
    }
    for &h in &ctx.block_args(b)[1..] {
        for u in ctx.uses(h) {
            if u.index != 0 || !(ctx.is(u.op, EMIT) || ctx.is(u.op, RUNNING)) {
                return Err(format!(
                    "a generator handle may only be used as the handle of 'gen.emit' or 'gen.running', but '{}' uses it",
                    ctx.op_name(u.op)
                ));
            }
        }
    }
    Ok(())
}

fn verify_emit(ctx: &Context, op: OpId) -> Result<(), String> {
    let h = ctx.operand(op, 0);
    let ty = ctx.ty(h).clone();
    if !is_handle_type(&ty) {
        return Err(format!(
            "operand #0 must be a generator handle (!gen.collect/reduce/scan/bucket), got '{ty}'"
        ));
    }
    let outside = || "handle must be a block argument of an enclosing 'gen.loop'".to_string();
    let owner = handle_owner(ctx, h).ok_or_else(outside)?;
    if !ctx.is_ancestor(owner, op) || owner == op {
        return Err(outside());
    }
    let Type::Dialect(d) = &ty else {
        return Err(outside());
    };
    let params: Vec<Type> = d
        .params
        .iter()
        .filter_map(|p| match p {
            TypeParam::Type(t) => Some(t.clone()),
            TypeParam::Attr(_) => None,
        })
        .collect();
    let vals = &ctx.operands(op)[1..];
    if params.len() != d.params.len() || params.len() != vals.len() {
        let what = if d.name == "bucket" {
            "a key and a value"
        } else {
            "one value"
        };
        return Err(format!("emitting to a '{ty}' handle takes {what}"));
    }
    for (k, (&v, t)) in vals.iter().zip(&params).enumerate() {
        if ctx.ty(v) != t {
            let what = if vals.len() == 2 && k == 0 {
                "key"
            } else {
                "value"
            };
            return Err(format!(
                "emitted {what} has type '{}', but the handle '{ty}' takes '{t}'",
                ctx.ty(v)
            ));
        }
    }
    Ok(())
}

fn verify_end(ctx: &Context, op: OpId) -> Result<(), String> {
    match ctx.parent_op(op) {
        Some(p) if ctx.is(p, LOOP) => Ok(()),
        _ => Err("expects parent op 'gen.loop'".into()),
    }
}

// ----- canonicalization ------------------------------------------------------------

/// Whether the existing loop `op` can be deleted: no result is used and its
/// body has no effect other than emits to handles of `op` or of loops nested
/// in it.
pub fn is_dead_loop(ctx: &Context, op: OpId) -> bool {
    ctx.results(op).iter().all(|&r| ctx.unused(r)) && effect_free_loop(ctx, op)
}

/// Whether the body of loop `op` has no effect other than emits to handles of
/// `op` or of loops nested in it: the loop as a whole is pure.
pub fn effect_free_loop(ctx: &Context, op: OpId) -> bool {
    ctx.walk_nested(op).into_iter().all(|o| {
        if ctx.is(o, EMIT) || ctx.is(o, RUNNING) {
            return handle_owner(ctx, ctx.operand(o, 0)).is_some_and(|l| ctx.is_ancestor(op, l));
        }
        if ctx.is(o, LOOP) {
            return true;
        }
        let t = ctx.spec(o).traits;
        t.intersects(Traits::PURE | Traits::RECURSIVELY_PURE | Traits::TERMINATOR)
            && !t.intersects(Traits::READS | Traits::WRITES | Traits::ALLOCATES)
    })
}

fn remove_dead_loop(b: &mut Builder, st: &OpState) -> Option<SmallVec<[ValueId; 2]>> {
    let op = st.existing?;
    if b.ctx.op(op).parent.is_some() && is_dead_loop(b.ctx, op) {
        // No result is used: any values do (none are read).
        Some(SmallVec::new())
    } else {
        None
    }
}

/// `gen.loop(n) [#gen.collect, ...] { emit(c_k, vec.get(v_k, i)) ... }`,
/// where every `v_k` is provably `n` long ([`crate::vec::len_key`]), is
/// the `v_k` (every read in bounds, in index order): what is left of a
/// consumer that only copied the folds of a fused bucket, or of the
/// zip that rebuilds records from field vectors (a scan of records).
fn copy_loop(b: &mut Builder, st: &OpState) -> Option<SmallVec<[ValueId; 2]>> {
    let op = st.existing?;
    let ctx = &*b.ctx;
    ctx.op(op).parent?;
    let Some(Attribute::Array(gens)) = ctx.attr(op, "gens") else {
        return None;
    };
    let k = gens.len();
    if k == 0
        || ctx.results(op).len() != k
        || gens
            .iter()
            .any(|g| GenKind::from_attr(g) != Ok(GenKind::Collect))
    {
        return None;
    }
    let size = crate::vec::size_key(ctx, ctx.operand(op, 0));
    let body = ctx.op_block(op, 0);
    let args = ctx.block_args(body);
    let ops = ctx.block_ops(body);
    if ops.len() != 2 * k + 1 || args.len() != k + 1 {
        return None;
    }
    let mut out: SmallVec<[Option<ValueId>; 2]> = smallvec![None; k];
    for pair in ops[..2 * k].chunks(2) {
        // The arity is part of each match: a body of other ops (two emits,
        // say) fails the match instead of being indexed past its results.
        let ([gv, gi], [elem]) = ctx.match_op::<2, 1>(pair[0], "vec.get")?;
        let ([handle, value], []) = ctx.match_op::<2, 0>(pair[1], EMIT)?;
        let slot = args[1..].iter().position(|&h| h == handle)?;
        let read = Some(&gi) == args.first() && value == elem && ctx.uses(elem).len() == 1;
        let fits =
            crate::vec::len_key(ctx, gv) == size && ctx.ty(gv) == ctx.ty(ctx.try_result(op, slot)?);
        if !read || !fits || out[slot].is_some() {
            return None;
        }
        out[slot] = Some(gv);
    }
    out.into_iter().collect()
}

// ----- semantics -------------------------------------------------------------------

/// A hashable form of a scalar bucket key (floats by bit pattern, as
/// run-time values compare).
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug)]
enum KeyRepr {
    Bool(bool),
    Int(i64),
    F32(u32),
    F64(u64),
}

fn key_repr(v: &RtValue) -> Option<KeyRepr> {
    Some(match v {
        RtValue::Bool(b) => KeyRepr::Bool(*b),
        RtValue::Int(i) => KeyRepr::Int(*i),
        RtValue::F32(f) => KeyRepr::F32(f.to_bits()),
        RtValue::F64(f) => KeyRepr::F64(f.to_bits()),
        _ => return None,
    })
}

#[derive(Debug)]
enum GenData {
    Collect(Vec<RtValue>),
    Reduce(RtValue),
    Scan(RtValue, Vec<RtValue>),
    Bucket {
        keys: Vec<RtValue>,
        index: HashMap<KeyRepr, usize>,
        /// Per key: its values (collect) or a one-element fold (reduce).
        vals: Vec<Vec<RtValue>>,
    },
}

/// The run-time state behind a generator handle: a handle is
/// `RtValue::Opaque(Rc<RefCell<GenState>>)`; `gen.emit` pushes or folds
/// into it and the loop turns it into its results when it ends.
#[derive(Debug)]
pub struct GenState {
    gen: Generator,
    data: GenData,
    /// A bucket that was fed a poison key (deferred faults only).
    poisoned: bool,
}

impl GenState {
    fn new(gen: &Generator, init: Option<RtValue>) -> Result<GenState, String> {
        let identity = || {
            gen.monoid()
                .and_then(|m| m.identity_value(&gen.elem))
                .ok_or_else(|| format!("no identity for '{}'", gen.elem))
        };
        let data = match gen.kind {
            GenKind::Collect => GenData::Collect(Vec::new()),
            GenKind::Reduce(_) => GenData::Reduce(match init {
                Some(v) => v,
                None => identity()?,
            }),
            GenKind::Scan(_) => GenData::Scan(
                match init {
                    Some(v) => v,
                    None => identity()?,
                },
                Vec::new(),
            ),
            GenKind::Bucket(_) => GenData::Bucket {
                keys: Vec::new(),
                index: HashMap::new(),
                vals: Vec::new(),
            },
        };
        Ok(GenState {
            gen: gen.clone(),
            data,
            poisoned: false,
        })
    }

    fn emit(&mut self, args: &[RtValue]) -> Result<(), String> {
        let ty = &self.gen.elem;
        let fold = |m: Option<Monoid>, a: &RtValue, b: &RtValue| {
            m.and_then(|m| m.apply(ty, a, b))
                .ok_or_else(|| format!("cannot fold {a} and {b} as '{ty}'"))
        };
        let m = self.gen.monoid();
        // Under deferred faults (`ir::poison`) poison is tracked per
        // generator: a poison value makes this generator's fold poison (a
        // collect keeps it as an element), a poison key the whole bucket,
        // and the loop's other outputs stay as they are (issue 43).
        let folded = |acc: &RtValue, x: &RtValue| {
            if acc.is_poison() || x.is_poison() {
                Ok(RtValue::poison())
            } else {
                fold(m, acc, x)
            }
        };
        match (&mut self.data, args) {
            (GenData::Collect(v), [x]) => v.push(x.clone()),
            (GenData::Reduce(acc), [x]) => *acc = folded(acc, x)?,
            (GenData::Scan(acc, out), [x]) => {
                *acc = folded(acc, x)?;
                out.push(acc.clone());
            }
            (GenData::Bucket { .. }, [k, _]) if k.is_poison() => self.poisoned = true,
            (GenData::Bucket { keys, index, vals }, [k, x]) => {
                let kr = key_repr(k).ok_or("bucket key is not a scalar")?;
                let j = *index.entry(kr).or_insert_with(|| {
                    keys.push(k.clone());
                    vals.push(Vec::new());
                    keys.len() - 1
                });
                match self.gen.kind {
                    GenKind::Bucket(BucketOf::Collect) => vals[j].push(x.clone()),
                    _ => {
                        let new = match vals[j].first() {
                            Some(acc) => folded(acc, x)?,
                            None => {
                                let id = m
                                    .and_then(|m| m.identity_value(ty))
                                    .ok_or("no identity for the bucket reduction")?;
                                folded(&id, x)?
                            }
                        };
                        vals[j] = vec![new];
                    }
                }
            }
            _ => return Err("wrong number of emitted values for this generator".into()),
        }
        Ok(())
    }

    fn finish(&mut self, out: &mut SmallVec<[RtValue; 2]>) {
        let data = std::mem::replace(&mut self.data, GenData::Collect(Vec::new()));
        if self.poisoned {
            // A bucket fed a poison key: which bucket got what is unknown.
            out.extend([RtValue::poison(), RtValue::poison()]);
            return;
        }
        match data {
            GenData::Collect(v) => out.push(RtValue::Vec(Rc::new(v))),
            GenData::Reduce(acc) => out.push(acc),
            GenData::Scan(_, v) => out.push(RtValue::Vec(Rc::new(v))),
            GenData::Bucket { keys, vals, .. } => {
                out.push(RtValue::Vec(Rc::new(keys)));
                let per_key: Vec<RtValue> = match self.gen.kind {
                    GenKind::Bucket(BucketOf::Collect) => {
                        vals.into_iter().map(|v| RtValue::Vec(Rc::new(v))).collect()
                    }
                    _ => vals
                        .into_iter()
                        .map(|mut v| v.pop().unwrap_or(RtValue::Int(0)))
                        .collect(),
                };
                out.push(RtValue::Vec(Rc::new(per_key)));
            }
        }
    }
}

type Res = Result<SmallVec<[RtValue; 2]>, RunError>;

fn interp_loop(it: &mut Interp, op: OpId, args: &[RtValue]) -> Res {
    let ctx = it.ctx;
    let gens = try_generators(ctx, op).map_err(|e| RunError::at(ctx, op, e))?;
    let n = as_size(ctx, op, &args[0])?;
    let mut inits = args[1..].iter();
    let mut states = Vec::with_capacity(gens.len());
    for g in &gens {
        let init = if g.kind.takes_init() {
            inits.next().cloned()
        } else {
            None
        };
        let s = GenState::new(g, init).map_err(|e| RunError::at(ctx, op, e))?;
        states.push(Rc::new(RefCell::new(s)));
    }
    let region = ctx.regions(op)[0];
    let mut bargs: Vec<RtValue> = Vec::with_capacity(states.len() + 1);
    bargs.push(RtValue::Int(0));
    for s in &states {
        bargs.push(RtValue::Opaque(s.clone() as Rc<dyn Any>));
    }
    for i in 0..n {
        bargs[0] = RtValue::Int(i as i64);
        it.run_region(region, &bargs)?;
    }
    let mut out = SmallVec::new();
    for s in &states {
        s.borrow_mut().finish(&mut out);
    }
    Ok(out)
}

/// The generator state behind handle value `h` (an operand of `op`).
fn gen_state<'a>(
    ctx: &Context,
    op: OpId,
    h: &'a RtValue,
) -> Result<&'a RefCell<GenState>, RunError> {
    let not_gen = || RunError::at(ctx, op, "handle is not a generator");
    let RtValue::Opaque(h) = h else {
        return Err(not_gen());
    };
    let any: &dyn Any = &**h;
    any.downcast_ref::<RefCell<GenState>>().ok_or_else(not_gen)
}

fn interp_emit(it: &mut Interp, op: OpId, args: &[RtValue]) -> Res {
    let ctx = it.ctx;
    let cell = gen_state(ctx, op, &args[0])?;
    let mut st = cell
        .try_borrow_mut()
        .map_err(|_| RunError::at(ctx, op, "generator is busy"))?;
    st.emit(&args[1..]).map_err(|e| RunError::at(ctx, op, e))?;
    Ok(smallvec![])
}

fn interp_end(_: &mut Interp, _: OpId, _: &[RtValue]) -> Res {
    Ok(smallvec![])
}

/// Registers `gen.loop`, `gen.emit`, `gen.running`, `gen.end`.
pub fn register(r: &mut Registry) {
    r.effect_free
        .push(|ctx, op| ctx.is(op, LOOP).then(|| effect_free_loop(ctx, op)));
    r.register(
        OpSpec::new(LOOP, "a generator loop: runs its body for i in [0, size)")
            .operands(Arity::AtLeast(1))
            .results(Arity::AtLeast(0))
            .regions(Arity::Exactly(1))
            .traits(Traits::RECURSIVELY_PURE | Traits::REGIONS_NEED_TERMINATOR)
            .assembly_format("(operands) $gens attr-dict : type(operands) -> type(results) regions")
            .verify(verify_loop)
            .rewrite(|b, st| remove_dead_loop(b, st).or_else(|| copy_loop(b, st)))
            .interpret(interp_loop)
            .lowering("arr", lower::lower_loop),
    );
    r.register(
        OpSpec::new(EMIT, "feeds a value (or a key and a value) to a generator")
            .operands(Arity::Between(2, 3))
            .traits(Traits::WRITES)
            .assembly_format("operands attr-dict : type(first)")
            .verify(verify_emit)
            .interpret(interp_emit),
    );
    running::register(r);
    r.register(
        OpSpec::new(END, "terminates a generator loop body")
            .traits(Traits::TERMINATOR | Traits::PURE)
            .assembly_format("attr-dict")
            .verify(verify_end)
            .interpret(interp_end),
    );
}
