//! Operation specs: an op kind is data. A spec names the op, its arity, its
//! traits, and the functions that verify, fold, rewrite, print, parse,
//! interpret and lower it. Dialects register specs in a [`Registry`].

use rustc_hash::FxHashMap as HashMap;
use std::fmt;

use smallvec::SmallVec;

use crate::attributes::Attribute;
use crate::builder::Builder;
use crate::context::{Context, Loc, OpId, RegionId, ValueId};
use crate::custom::{CustomParser, ParsedOp};
use crate::interp::{Interp, RtValue, RunError};
use crate::printer::Printer;
use crate::types::Type;

/// Index of a spec in the registry.
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug)]
pub struct OpKind(pub u32);

/// How many operands, results or regions an op takes.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub enum Arity {
    Exactly(usize),
    AtLeast(usize),
    Between(usize, usize),
}

impl Arity {
    /// Whether `n` is allowed.
    pub fn allows(self, n: usize) -> bool {
        match self {
            Arity::Exactly(k) => n == k,
            Arity::AtLeast(k) => n >= k,
            Arity::Between(a, b) => n >= a && n <= b,
        }
    }
}

impl fmt::Display for Arity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Arity::Exactly(k) => write!(f, "{k}"),
            Arity::AtLeast(k) => write!(f, "at least {k}"),
            Arity::Between(a, b) => write!(f, "between {a} and {b}"),
        }
    }
}

/// Trait flags of an op kind (MLIR's op traits and memory effects).
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug, Default)]
pub struct Traits(pub u32);

impl Traits {
    pub const NONE: Traits = Traits(0);
    /// No side effects: may be CSE'd, moved, or deleted when unused.
    pub const PURE: Traits = Traits(1);
    /// Operands may be swapped (CSE normalizes their order).
    pub const COMMUTATIVE: Traits = Traits(1 << 1);
    /// Ends a block.
    pub const TERMINATOR: Traits = Traits(1 << 2);
    /// All operands and all results have one type.
    pub const SAME_OPERANDS_AND_RESULT_TYPE: Traits = Traits(1 << 3);
    /// Regions cannot use values defined outside the op.
    pub const ISOLATED_FROM_ABOVE: Traits = Traits(1 << 4);
    /// Materializes its `value` attribute (folds read it).
    pub const CONSTANT_LIKE: Traits = Traits(1 << 5);
    /// Defines a symbol through its `sym_name` attribute.
    pub const SYMBOL: Traits = Traits(1 << 6);
    /// Reads memory (an effect).
    pub const READS: Traits = Traits(1 << 7);
    /// Writes memory (an effect).
    pub const WRITES: Traits = Traits(1 << 8);
    /// Allocates memory (an effect).
    pub const ALLOCATES: Traits = Traits(1 << 9);
    /// Its regions' blocks must end in a terminator.
    pub const REGIONS_NEED_TERMINATOR: Traits = Traits(1 << 10);
    /// The op is pure only if everything nested in its regions is (e.g. loops).
    pub const RECURSIVELY_PURE: Traits = Traits(1 << 11);
    /// Its only effect is reading memory, and where it would fault the
    /// behaviour is undefined (MLIR's `memref.load` out of bounds): with its
    /// results unused it may be erased, as MLIR erases ops that only read.
    pub const DEAD_IF_UNUSED: Traits = Traits(1 << 12);

    /// Whether every flag of `other` is set.
    pub fn contains(self, other: Traits) -> bool {
        self.0 & other.0 == other.0
    }
    /// Whether any flag of `other` is set.
    pub fn intersects(self, other: Traits) -> bool {
        self.0 & other.0 != 0
    }
}

impl std::ops::BitOr for Traits {
    type Output = Traits;
    fn bitor(self, rhs: Traits) -> Traits {
        Traits(self.0 | rhs.0)
    }
}

/// Everything needed to build an operation (MLIR's `OperationState`): what a
/// fold or rewrite sees, both at construction time (before the op exists) and
/// in `canonicalize` (where `existing` names the op).
#[derive(Clone, Debug)]
pub struct OpState {
    pub kind: OpKind,
    pub operands: SmallVec<[ValueId; 4]>,
    pub result_types: SmallVec<[Type; 2]>,
    pub attrs: Vec<(String, Attribute)>,
    pub regions: SmallVec<[RegionId; 2]>,
    /// Successor blocks with their forwarded operand counts
    /// ([`crate::context::OpData::successors`]).
    pub successors: SmallVec<[(crate::context::BlockId, u32); 2]>,
    pub loc: Loc,
    /// The op this state was read from, when rewriting existing IR.
    pub existing: Option<OpId>,
}

impl OpState {
    /// The state of an existing op.
    pub fn of(ctx: &Context, op: OpId) -> OpState {
        let d = ctx.op(op);
        OpState {
            kind: d.kind,
            operands: SmallVec::from_slice(&d.operands),
            result_types: d.results.iter().map(|&r| ctx.ty(r).clone()).collect(),
            attrs: d.attrs.to_vec(),
            regions: SmallVec::from_slice(&d.regions),
            successors: SmallVec::from_slice(&d.successors),
            loc: d.loc,
            existing: Some(op),
        }
    }
    /// Attribute `name`.
    pub fn attr(&self, name: &str) -> Option<&Attribute> {
        self.attrs.iter().find(|(k, _)| k == name).map(|(_, a)| a)
    }
    /// The first result type.
    pub fn result_type(&self) -> &Type {
        &self.result_types[0]
    }
}

/// A fold's answer for one result: an existing value or a constant to materialize.
#[derive(Clone, Debug, PartialEq)]
pub enum FoldResult {
    Value(ValueId),
    Constant(Attribute),
}

/// Checks op-specific invariants; the message is reported at the op.
pub type VerifyFn = fn(&Context, OpId) -> Result<(), String>;
/// Folds an op to existing values or constants without creating ops
/// (MLIR's `fold`). Returns one entry per result, or `None`.
pub type FoldFn = fn(&Context, &OpState) -> Option<SmallVec<[FoldResult; 1]>>;
/// A rewrite pattern: may build new ops with the builder (inserted before the
/// op) and returns the values that replace the op's results, or `None` when it
/// does not apply. It must not mutate the op described by `state`.
pub type RewriteFn = fn(&mut Builder, &OpState) -> Option<SmallVec<[ValueId; 2]>>;
/// Executes an op on run-time values (one per operand) and returns one value
/// per result. Terminators return their operands.
pub type InterpFn = fn(&mut Interp, OpId, &[RtValue]) -> Result<SmallVec<[RtValue; 2]>, RunError>;
/// Prints the custom form of an op after `%results = ` and the op name.
pub type PrintFn = fn(&mut Printer, OpId) -> fmt::Result;
/// Parses the custom form of an op from its token items.
pub type ParseFn = fn(&mut CustomParser) -> Result<ParsedOp, crate::ast::SyntaxError>;
/// The attributes the generic form prints for an op, where they differ from
/// the stored ones (MLIR prints enum attributes as integers there).
pub type GenericAttrsFn = fn(&Context, OpId) -> Vec<(String, Attribute)>;
/// The name MLIR gives an op, where it differs from L0's (an op MLIR keeps
/// in another dialect, or under a name that depends on its types).
pub type MlirNameFn = fn(&Context, OpId) -> &'static str;
/// The inverse of [`GenericAttrsFn`]: rewrites the attributes of an op read
/// in the generic form (named by its first argument) into their stored form,
/// so that `{predicate = 2 : i64}` and the custom form's `slt` are one
/// attribute (for CSE, folds and printing), as MLIR's enum attributes are.
pub type ParseGenericAttrsFn = fn(&str, &mut [(String, Attribute)]);
/// Rewrites an op the parser has just built (operands, regions and result
/// names in place) into the form the IR holds, when the text used a spelling
/// the op itself does not have: MLIR's `scf.for ... : i32` becomes an index
/// loop with casts. Runs before verification; leaves malformed ops alone
/// for the verifier to report.
pub type DesugarFn = fn(&mut crate::Context, crate::OpId);
/// How many operands a branch read in the generic form forwards to each of
/// its successors, from its attributes (MLIR's `operand_segment_sizes`),
/// its operand count and its successor count; removes the attributes that
/// only the generic form carries. An error names what is wrong.
pub type SuccessorCountsFn =
    fn(&mut Vec<(String, Attribute)>, usize, usize) -> Result<Vec<u32>, String>;
/// Infers an op's result types from its operand types and attributes, or
/// `None` when they do not determine them.
pub type InferFn = fn(&[Type], &[(String, Attribute)]) -> Option<SmallVec<[Type; 2]>>;
/// Whether an op (with everything nested) has no effect outside itself, where
/// a dialect knows better than the traits; `None` where it does not decide.
pub type EffectFreeFn = fn(&Context, OpId) -> Option<bool>;
/// Materializes a constant attribute as an op (a dialect's constant op).
pub type MaterializeFn = fn(&mut Builder, &Attribute, &Type) -> Option<ValueId>;

/// An op kind.
#[derive(Clone)]
pub struct OpSpec {
    pub name: &'static str,
    pub summary: &'static str,
    pub operands: Arity,
    pub results: Arity,
    pub regions: Arity,
    pub traits: Traits,
    pub verify: Option<VerifyFn>,
    pub fold: Option<FoldFn>,
    pub rewrites: Vec<RewriteFn>,
    pub interpret: Option<InterpFn>,
    pub print: Option<PrintFn>,
    pub parse: Option<ParseFn>,
    /// Delayed rewrites: `(phase, rewrite)` applied by the `lower` pass at that phase.
    pub lowerings: Vec<(&'static str, RewriteFn)>,
    /// A declarative custom form ([`crate::format`]), used when `print` and
    /// `parse` are not set.
    pub format: Option<crate::format::Format>,
    /// The custom form is [`crate::custom::parse_same_type`]'s
    /// `%a, %b {attrs} : T` (every operand and the result of type `T`); the
    /// parser then builds the plain line `%r = d.op %a, %b : T` without a
    /// syntax tree (issue 14).
    pub same_type_form: bool,
    /// See [`GenericAttrsFn`]; `None`: the stored attributes.
    pub generic_attrs: Option<GenericAttrsFn>,
    /// See [`ParseGenericAttrsFn`]; `None`: attributes stored as written.
    pub parse_generic_attrs: Option<ParseGenericAttrsFn>,
    /// See [`MlirNameFn`]; printed unless `PrintOptions::l0_names`.
    pub mlir_name: Option<MlirNameFn>,
    /// Result types from operand types and attributes (MLIR's
    /// `InferTypeOpInterface`), for formats that do not write them.
    pub infer: Option<InferFn>,
    /// MLIR's `SingleBlockImplicitTerminator` as its generic form uses it:
    /// a region written without any block (`{}`) in the generic form of an
    /// op without results gets one block holding just this terminator (an
    /// `scf.if` without an else, as `mlir-opt --mlir-print-op-generic`
    /// writes it).
    pub empty_region_terminator: Option<&'static str>,
    /// The op's one region is optional (a `func.func` declaration has
    /// none): in the generic form a region without blocks (`({\n})`, as
    /// MLIR writes a declaration) builds the op without it, and the generic
    /// printer writes that empty region for the op without one.
    pub optional_body: bool,
    /// See [`DesugarFn`].
    pub desugar: Option<DesugarFn>,
    /// The op's regions may hold several blocks joined by branches (MLIR's
    /// SSACFG regions: a function body, `scf.execute_region`); elsewhere a
    /// region has at most one block (MLIR's `SingleBlock`).
    pub multi_block: bool,
    /// See [`SuccessorCountsFn`]; `None`: one successor takes every operand.
    pub successor_counts: Option<SuccessorCountsFn>,
    /// How the op treats poison under deferred faults ([`crate::poison`]).
    pub poison: crate::poison::PoisonRule,
}

impl OpSpec {
    /// A spec with no operands, results, regions or traits.
    pub fn new(name: &'static str, summary: &'static str) -> OpSpec {
        OpSpec {
            name,
            summary,
            operands: Arity::Exactly(0),
            results: Arity::Exactly(0),
            regions: Arity::Exactly(0),
            traits: Traits::NONE,
            verify: None,
            fold: None,
            rewrites: Vec::new(),
            interpret: None,
            print: None,
            parse: None,
            lowerings: Vec::new(),
            format: None,
            infer: None,
            same_type_form: false,
            generic_attrs: None,
            parse_generic_attrs: None,
            mlir_name: None,
            empty_region_terminator: None,
            optional_body: false,
            desugar: None,
            multi_block: false,
            successor_counts: None,
            poison: crate::poison::PoisonRule::Default,
        }
    }
    /// Sets [`OpSpec::multi_block`].
    pub fn multi_block(mut self) -> Self {
        self.multi_block = true;
        self
    }
    /// Sets [`OpSpec::successor_counts`].
    pub fn successor_counts(mut self, f: SuccessorCountsFn) -> Self {
        self.successor_counts = Some(f);
        self
    }
    /// Sets [`OpSpec::poison`].
    pub fn poison(mut self, rule: crate::poison::PoisonRule) -> Self {
        self.poison = rule;
        self
    }
    /// Sets [`OpSpec::desugar`].
    pub fn desugar(mut self, f: DesugarFn) -> Self {
        self.desugar = Some(f);
        self
    }
    /// Sets [`OpSpec::optional_body`].
    pub fn optional_body(mut self) -> Self {
        self.optional_body = true;
        self
    }
    /// Sets [`OpSpec::empty_region_terminator`].
    pub fn empty_region_terminator(mut self, term: &'static str) -> Self {
        self.empty_region_terminator = Some(term);
        self
    }
    /// Sets the operand arity.
    pub fn operands(mut self, a: Arity) -> Self {
        self.operands = a;
        self
    }
    /// Sets the result arity.
    pub fn results(mut self, a: Arity) -> Self {
        self.results = a;
        self
    }
    /// Sets the region arity.
    pub fn regions(mut self, a: Arity) -> Self {
        self.regions = a;
        self
    }
    /// Adds traits.
    pub fn traits(mut self, t: Traits) -> Self {
        self.traits = self.traits | t;
        self
    }
    /// Sets the verifier.
    pub fn verify(mut self, f: VerifyFn) -> Self {
        self.verify = Some(f);
        self
    }
    /// Sets the fold.
    pub fn fold(mut self, f: FoldFn) -> Self {
        self.fold = Some(f);
        self
    }
    /// Adds a canonicalization / construction-time rewrite.
    pub fn rewrite(mut self, f: RewriteFn) -> Self {
        self.rewrites.push(f);
        self
    }
    /// Sets the interpreter semantics.
    pub fn interpret(mut self, f: InterpFn) -> Self {
        self.interpret = Some(f);
        self
    }
    /// Sets the custom printer and parser.
    pub fn custom_form(mut self, print: PrintFn, parse: ParseFn) -> Self {
        self.print = Some(print);
        self.parse = Some(parse);
        self
    }
    /// Sets the attributes the generic form prints ([`GenericAttrsFn`]) and
    /// how it reads them back ([`ParseGenericAttrsFn`]).
    pub fn generic_attrs(mut self, print: GenericAttrsFn, parse: ParseGenericAttrsFn) -> Self {
        self.generic_attrs = Some(print);
        self.parse_generic_attrs = Some(parse);
        self
    }
    /// Declares the custom form `%a, %b {attrs} : T`, parsed by
    /// [`crate::custom::parse_same_type`] and printed by `print` (which must
    /// print that form).
    pub fn same_type_custom_form(mut self, print: PrintFn) -> Self {
        self.print = Some(print);
        self.parse = Some(crate::custom::parse_same_type);
        self.same_type_form = true;
        self
    }
    /// Declares the custom form with a format string ([`crate::format`]).
    /// Panics on a malformed format (a bug in the dialect, found by any
    /// test that registers it; [`Registry::register`] also rejects a format
    /// that leaves out result types the op cannot infer).
    pub fn assembly_format(mut self, format: &'static str) -> Self {
        let f = crate::format::Format::parse(format)
            .unwrap_or_else(|e| panic!("bad assembly format of '{}': {e}", self.name));
        self.format = Some(f);
        self
    }
    /// Sets the result-type inference.
    pub fn infer(mut self, f: InferFn) -> Self {
        self.infer = Some(f);
        self
    }
    /// Whether the declared format can parse without result types.
    pub fn format_needs_infer(&self) -> bool {
        self.format.as_ref().is_some_and(|f| !f.has_result_types)
            && self.results != Arity::Exactly(0)
            && self.infer.is_none()
    }
    /// Registers a delayed rewrite applied at `phase` by the `lower` pass.
    pub fn lowering(mut self, phase: &'static str, f: RewriteFn) -> Self {
        self.lowerings.push((phase, f));
        self
    }
    /// Whether the spec has the `PURE` trait.
    pub fn is_pure(&self) -> bool {
        self.traits.contains(Traits::PURE)
    }
}

/// All registered op kinds, by name.
#[derive(Default)]
pub struct Registry {
    specs: Vec<OpSpec>,
    by_name: HashMap<&'static str, OpKind>,
    /// Builds the constant op for a folded attribute.
    pub materialize: Option<MaterializeFn>,
    /// Lowering phases in the order `lower` applies them.
    pub phases: Vec<&'static str>,
    /// Dialect hooks that tell whether an op whose regions hold effects has
    /// none as a whole (a `gen.loop` whose emits go only to its own handles);
    /// `None` from every hook leaves it to the traits. Read by deferred faults
    /// ([`crate::poison`]).
    pub effect_free: Vec<EffectFreeFn>,
}

impl Registry {
    /// An empty registry.
    pub fn new() -> Registry {
        Registry::default()
    }
    /// Adds a spec; a second spec with the same name replaces the first.
    pub fn register(&mut self, spec: OpSpec) -> OpKind {
        assert!(
            !spec.format_needs_infer(),
            "the assembly format of '{}' leaves out its result types, but the op has no result-type inference",
            spec.name
        );
        if let Some(&k) = self.by_name.get(spec.name) {
            self.specs[k.0 as usize] = spec;
            return k;
        }
        let k = OpKind(self.specs.len() as u32);
        self.by_name.insert(spec.name, k);
        self.specs.push(spec);
        k
    }
    /// Makes `alias` a second name of the registered op `name` (MLIR's
    /// `math.sqrt` for L0's `arith.sqrt`): the parser accepts it in both
    /// forms, and the op prints under `name`. Panics if `name` is not
    /// registered (a programming error).
    pub fn alias(&mut self, alias: &'static str, name: &str) {
        let k = self.expect_kind(name);
        self.by_name.entry(alias).or_insert(k);
    }
    /// The kind named `name` (or aliased so).
    pub fn kind(&self, name: &str) -> Option<OpKind> {
        self.by_name.get(name).copied()
    }
    /// The kind named `name`; panics if it was never registered (a programming error).
    pub fn expect_kind(&self, name: &str) -> OpKind {
        self.kind(name)
            .unwrap_or_else(|| panic!("op `{name}` is not registered"))
    }
    /// The spec of `kind`.
    pub fn spec(&self, kind: OpKind) -> &OpSpec {
        &self.specs[kind.0 as usize]
    }
    /// Mutable access to a spec by name (to add rewrites or lowerings from outside its dialect).
    pub fn spec_mut(&mut self, name: &str) -> Option<&mut OpSpec> {
        let k = self.kind(name)?;
        Some(&mut self.specs[k.0 as usize])
    }
    /// Every spec, in registration order.
    pub fn specs(&self) -> &[OpSpec] {
        &self.specs
    }
}
