//! The IR context: arenas of operations, values, blocks and regions, addressed
//! by small copyable ids, with use lists so that replacing all uses of a value
//! costs O(uses).
//!
//! Blocks keep their operations in an intrusive doubly linked list; every
//! operation carries an order key so that "does A come before B in this
//! block" is O(1) (used by dominance checks and hash-consing).

use std::rc::Rc;

use smallvec::SmallVec;
pub use thin_vec::ThinVec;

use crate::attributes::Attribute;
use crate::names::{Name, Names};
use crate::spec::{OpKind, OpSpec, Registry, Traits};
use crate::types::Type;

macro_rules! id_type {
    ($(#[$m:meta])* $name:ident) => {
        $(#[$m])*
        #[derive(Copy, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Debug)]
        pub struct $name(pub u32);
        impl $name {
            /// The arena index.
            pub fn index(self) -> usize {
                self.0 as usize
            }
        }
    };
}
id_type!(
    /// An operation.
    OpId
);
id_type!(
    /// An SSA value: an operation result or a block argument.
    ValueId
);
id_type!(
    /// A block (a list of operations with arguments).
    BlockId
);
id_type!(
    /// A region (a list of blocks owned by an operation).
    RegionId
);

/// A source location: a byte offset into the context's source text.
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug)]
pub struct Loc(pub u32);

impl Loc {
    /// A location that names no source position.
    pub const UNKNOWN: Loc = Loc(u32::MAX);
    /// The byte offset, if known.
    pub fn offset(self) -> Option<usize> {
        (self != Loc::UNKNOWN).then_some(self.0 as usize)
    }
}

/// The source an IR was parsed from, for diagnostics.
#[derive(Clone, Debug)]
pub struct Source {
    /// File name as given on the command line (`-` prints as `<stdin>`).
    pub name: String,
    /// The text (owned, or a memory map of a large input file).
    pub text: crate::source::SourceText,
}

/// Where a value comes from.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub enum ValueDef {
    /// Result `index` of an operation.
    Result(OpId, u32),
    /// Argument `index` of a block.
    BlockArg(BlockId, u32),
}

/// One use of a value: operand `index` of `op`.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub struct Use {
    pub op: OpId,
    pub index: u32,
}

/// The operands of an op, with each operand's position in its value's use
/// list (so a use is removed in O(1)), in one small vector
/// `[v0, .., vn-1, p0, .., pn-1]` (positions carried as ids): an op with up to
/// two operands needs no allocation. Dereferences to the operand values.
#[derive(Clone, Debug, Default)]
pub struct OperandList(SmallVec<[ValueId; 4]>);

impl OperandList {
    fn new(values: &[ValueId]) -> OperandList {
        let mut v = SmallVec::with_capacity(2 * values.len());
        v.extend_from_slice(values);
        v.extend(std::iter::repeat_n(ValueId(0), values.len()));
        OperandList(v)
    }
    /// The operand values.
    pub fn values(&self) -> &[ValueId] {
        &self.0[..self.0.len() / 2]
    }
    /// Operand `i`'s position in its value's use list.
    pub fn use_pos(&self, i: usize) -> u32 {
        self.0[self.0.len() / 2 + i].0
    }
    fn set_use_pos(&mut self, i: usize, p: u32) {
        let n = self.0.len() / 2;
        self.0[n + i] = ValueId(p);
    }
    fn set(&mut self, i: usize, v: ValueId) {
        self.0[i] = v;
    }
    fn clear(&mut self) {
        self.0.clear();
    }
}

impl std::ops::Deref for OperandList {
    type Target = [ValueId];
    fn deref(&self) -> &[ValueId] {
        self.values()
    }
}

/// Operation storage (120 bytes: issue 14 measures it).
#[derive(Clone, Debug)]
pub struct OpData {
    pub kind: OpKind,
    pub operands: OperandList,
    /// A terminator's successor blocks (MLIR's successors), each with the
    /// number of operands it forwards to the block's arguments: those are
    /// the op's last operands, in successor order. No allocation when
    /// empty (every op but a branch).
    pub successors: ThinVec<(BlockId, u32)>,
    pub results: SmallVec<[ValueId; 1]>,
    /// No allocation when empty (most ops).
    pub regions: ThinVec<RegionId>,
    /// No allocation when empty.
    pub attrs: ThinVec<(String, Attribute)>,
    pub loc: Loc,
    pub parent: Option<BlockId>,
    pub prev: Option<OpId>,
    pub next: Option<OpId>,
    /// Position key within the parent block (strictly increasing along the list).
    pub order: u64,
    pub alive: bool,
}

/// Value storage.
#[derive(Clone, Debug)]
pub struct ValueData {
    pub ty: Type,
    pub def: ValueDef,
    pub uses: SmallVec<[Use; 2]>,
    /// The name the source gave this value (without `%`), kept for printing
    /// ([`Context::value_name`]).
    pub(crate) name: Option<Name>,
}

/// Block storage.
#[derive(Clone, Debug, Default)]
pub struct BlockData {
    pub args: Vec<ValueId>,
    pub first: Option<OpId>,
    pub last: Option<OpId>,
    pub parent: Option<RegionId>,
    pub label: Option<String>,
}

/// Region storage.
#[derive(Clone, Debug, Default)]
pub struct RegionData {
    pub blocks: Vec<BlockId>,
    pub parent: Option<OpId>,
}

const ORDER_GAP: u64 = 1 << 16;

/// Owns a whole module: every operation, value, block and region, plus the
/// registry of op specs. The module body is [`Context::top`].
pub struct Context {
    ops: Vec<OpData>,
    values: Vec<ValueData>,
    blocks: Vec<BlockData>,
    regions: Vec<RegionData>,
    registry: Rc<Registry>,
    /// The module's body block (top-level operations).
    pub top: BlockId,
    /// The module's symbol name (`module @name`), printed back.
    pub module_name: Option<String>,
    /// The module's attributes (`module attributes {...}`), printed back.
    pub module_attrs: Vec<(String, crate::Attribute)>,
    /// The source text, for diagnostics.
    pub source: Option<Rc<Source>>,
    pub(crate) gvn: crate::builder::GvnTable,
    names: Names,
    /// Whether an op whose spec has [`Traits::SAME_OPERANDS_AND_RESULT_TYPE`]
    /// was ever created here with operand and result types that differ.
    /// While it stays false, IR fresh from the parser (no op changed since
    /// its creation) needs no second look at those types:
    /// [`crate::verifier::verify_parsed`] then skips the check, whose reads
    /// of each operand's record, at random places in a large module, are
    /// a third of its time.
    pub(crate) mixed_same_type_ops: bool,
    /// Whether a region of this context ever held more than one block:
    /// then [`crate::verifier::verify_parsed`] checks dominance.
    pub(crate) cfg_built: bool,
}

impl Context {
    /// An empty module using the op specs in `registry`.
    pub fn new(registry: Rc<Registry>) -> Context {
        let mut ctx = Context {
            ops: Vec::new(),
            values: Vec::new(),
            blocks: Vec::new(),
            regions: Vec::new(),
            registry,
            top: BlockId(0),
            module_name: None,
            module_attrs: Vec::new(),
            source: None,
            gvn: Default::default(),
            names: Names::default(),
            mixed_same_type_ops: false,
            cfg_built: false,
        };
        ctx.top = ctx.new_block();
        ctx
    }

    /// Reserves room for `ops` more operations and `values` more values.
    pub fn reserve(&mut self, ops: usize, values: usize) {
        self.ops.reserve(ops);
        self.values.reserve(values);
    }

    /// The op-spec registry.
    pub fn registry(&self) -> &Rc<Registry> {
        &self.registry
    }

    // ----- accessors -------------------------------------------------------

    /// Operation storage.
    pub fn op(&self, op: OpId) -> &OpData {
        &self.ops[op.index()]
    }
    /// Mutable operation storage (do not edit operands or links directly).
    pub fn op_mut(&mut self, op: OpId) -> &mut OpData {
        &mut self.ops[op.index()]
    }
    /// Value storage.
    pub fn value(&self, v: ValueId) -> &ValueData {
        &self.values[v.index()]
    }
    /// Changes the type of `v` (a type conversion, e.g. `var<T>` to
    /// `arr<T>`); the caller keeps the IR valid.
    pub fn set_type(&mut self, v: ValueId, ty: Type) {
        self.values[v.index()].ty = ty;
    }
    /// Block storage.
    pub fn block(&self, b: BlockId) -> &BlockData {
        &self.blocks[b.index()]
    }
    /// Region storage.
    pub fn region(&self, r: RegionId) -> &RegionData {
        &self.regions[r.index()]
    }
    /// The spec of `op`'s kind.
    pub fn spec(&self, op: OpId) -> &OpSpec {
        self.registry.spec(self.ops[op.index()].kind)
    }
    /// The full name of `op` (`arith.addf`).
    pub fn op_name(&self, op: OpId) -> &'static str {
        self.spec(op).name
    }
    /// Whether `op` has kind `name`.
    pub fn is(&self, op: OpId, name: &str) -> bool {
        self.op_name(op) == name
    }
    /// Whether `op`'s spec has all of `traits`.
    pub fn has_traits(&self, op: OpId, traits: Traits) -> bool {
        self.spec(op).traits.contains(traits)
    }
    /// The type of a value.
    pub fn ty(&self, v: ValueId) -> &Type {
        &self.values[v.index()].ty
    }
    /// The operands of `op`.
    pub fn operands(&self, op: OpId) -> &[ValueId] {
        &self.ops[op.index()].operands
    }
    /// Operand `i` of `op`.
    pub fn operand(&self, op: OpId, i: usize) -> ValueId {
        self.ops[op.index()].operands[i]
    }
    /// The results of `op`.
    pub fn results(&self, op: OpId) -> &[ValueId] {
        &self.ops[op.index()].results
    }
    /// Result `i` of `op`.
    pub fn result(&self, op: OpId, i: usize) -> ValueId {
        self.ops[op.index()].results[i]
    }
    /// Operand `i` of `op`, or `None` where `op` has no operand `i`.
    ///
    /// Patterns read the operands of ops other than their root (producers,
    /// body ops) with this, so that a match fails instead of panicking on
    /// an op of another kind or arity (MLIR's generated op adaptors check
    /// the same before a match reads them).
    pub fn try_operand(&self, op: OpId, i: usize) -> Option<ValueId> {
        self.ops[op.index()].operands.get(i).copied()
    }
    /// Result `i` of `op`, or `None` where `op` has no result `i` (see
    /// [`Context::try_operand`]).
    pub fn try_result(&self, op: OpId, i: usize) -> Option<ValueId> {
        self.ops[op.index()].results.get(i).copied()
    }
    /// `op`'s operands and results as arrays, when `op` has kind `name`,
    /// exactly `N` operands and exactly `M` results: an adaptor whose arity
    /// is part of the match, so a pattern never indexes past what an op
    /// has. Example: `let ([v, i], [r]) = ctx.match_op::<2, 1>(op, "vec.get")?;`.
    pub fn match_op<const N: usize, const M: usize>(
        &self,
        op: OpId,
        name: &str,
    ) -> Option<([ValueId; N], [ValueId; M])> {
        if !self.is(op, name) {
            return None;
        }
        let d = &self.ops[op.index()];
        let operands: [ValueId; N] = d.operands.values().try_into().ok()?;
        let results: [ValueId; M] = d.results.as_slice().try_into().ok()?;
        Some((operands, results))
    }
    /// The regions of `op`.
    pub fn regions(&self, op: OpId) -> &[RegionId] {
        &self.ops[op.index()].regions
    }
    /// The attribute `name` of `op`.
    pub fn attr(&self, op: OpId, name: &str) -> Option<&Attribute> {
        self.ops[op.index()]
            .attrs
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, a)| a)
    }
    /// Sets (or replaces) attribute `name` of `op`.
    pub fn set_attr(&mut self, op: OpId, name: &str, value: Attribute) {
        let attrs = &mut self.ops[op.index()].attrs;
        match attrs.iter_mut().find(|(k, _)| k == name) {
            Some(slot) => slot.1 = value,
            None => attrs.push((name.to_string(), value)),
        }
    }
    /// The location of `op`.
    pub fn loc(&self, op: OpId) -> Loc {
        self.ops[op.index()].loc
    }
    /// The uses of `v`.
    pub fn uses(&self, v: ValueId) -> &[Use] {
        &self.values[v.index()].uses
    }
    /// Whether `v` has no uses.
    pub fn unused(&self, v: ValueId) -> bool {
        self.values[v.index()].uses.is_empty()
    }
    /// The operation defining `v`, if it is a result.
    pub fn def_op(&self, v: ValueId) -> Option<OpId> {
        match self.values[v.index()].def {
            ValueDef::Result(op, _) => Some(op),
            ValueDef::BlockArg(..) => None,
        }
    }
    /// The defining op of `v` if it has kind `name`.
    pub fn def_op_named(&self, v: ValueId, name: &str) -> Option<OpId> {
        self.def_op(v).filter(|&op| self.is(op, name))
    }
    /// The block that defines `v` (the block containing its op, or owning the argument).
    pub fn value_block(&self, v: ValueId) -> Option<BlockId> {
        match self.values[v.index()].def {
            ValueDef::Result(op, _) => self.ops[op.index()].parent,
            ValueDef::BlockArg(b, _) => Some(b),
        }
    }
    /// The printed name hint of `v` (its source name without `%`).
    pub fn value_name(&self, v: ValueId) -> Option<&str> {
        self.values[v.index()].name.map(|n| self.names.get(n))
    }
    /// The text of a name of this context.
    pub(crate) fn name_text(&self, n: Name) -> &str {
        self.names.get(n)
    }
    /// Sets (or with `None` clears) the printed name hint of `v`.
    pub fn set_name(&mut self, v: ValueId, name: Option<&str>) {
        self.values[v.index()].name = name.map(|s| self.names.intern(s));
    }
    /// Gives `to` the name hint of `from`, if `from` has one (no copy of
    /// the text).
    pub fn copy_name(&mut self, from: ValueId, to: ValueId) {
        if let Some(n) = self.values[from.index()].name {
            self.values[to.index()].name = Some(n);
        }
    }
    /// Reserves room for value names of about `bytes` bytes in all.
    pub fn reserve_names(&mut self, bytes: usize) {
        self.names.reserve(bytes);
    }
    /// The block argument list.
    pub fn block_args(&self, b: BlockId) -> &[ValueId] {
        &self.blocks[b.index()].args
    }
    /// The successors of terminator `op`, each with the number of operands
    /// it forwards (empty for an op that is not a branch).
    pub fn successors(&self, op: OpId) -> &[(BlockId, u32)] {
        &self.ops[op.index()].successors
    }
    /// The operands `op` forwards to its successor `i`'s arguments.
    pub fn successor_operands(&self, op: OpId, i: usize) -> &[ValueId] {
        let d = &self.ops[op.index()];
        let total: usize = d.successors.iter().map(|s| s.1 as usize).sum();
        let start = d.operands.len() - total
            + d.successors[..i]
                .iter()
                .map(|s| s.1 as usize)
                .sum::<usize>();
        &d.operands[start..start + d.successors[i].1 as usize]
    }
    /// The number of `op`'s operands that are its own, not forwarded to a
    /// successor (a conditional branch's condition).
    pub fn num_own_operands(&self, op: OpId) -> usize {
        let d = &self.ops[op.index()];
        let total: usize = d.successors.iter().map(|s| s.1 as usize).sum();
        d.operands.len().saturating_sub(total)
    }
    /// Sets `op`'s successors (see [`OpData::successors`]); the forwarded
    /// operands must already be its last operands.
    pub fn set_successors(&mut self, op: OpId, successors: &[(BlockId, u32)]) {
        self.ops[op.index()].successors = ThinVec::from(successors);
    }
    /// Redirects successor `i` of `op` to block `b` forwarding `args`
    /// (the op's operand list is rebuilt).
    pub fn set_successor(&mut self, op: OpId, i: usize, b: BlockId, args: &[ValueId]) {
        let own = self.num_own_operands(op);
        let mut operands: Vec<ValueId> = self.operands(op)[..own].to_vec();
        let mut succs: Vec<(BlockId, u32)> = self.successors(op).to_vec();
        for (k, s) in succs.iter_mut().enumerate() {
            if k == i {
                operands.extend_from_slice(args);
                *s = (b, args.len() as u32);
            } else {
                operands.extend_from_slice(self.successor_operands(op, k));
            }
        }
        self.set_operands(op, &operands);
        self.ops[op.index()].successors = ThinVec::from(succs.as_slice());
    }
    /// The blocks of `b`'s region whose terminator branches to `b`, once
    /// per edge (a block branching twice to `b` appears twice). O(blocks of
    /// the region).
    pub fn predecessors(&self, b: BlockId) -> Vec<BlockId> {
        let Some(r) = self.blocks[b.index()].parent else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for &p in &self.regions[r.index()].blocks {
            if let Some(t) = self.terminator(p) {
                for &(s, _) in self.successors(t) {
                    if s == b {
                        out.push(p);
                    }
                }
            }
        }
        out
    }
    /// Gives block `b` the label `label` (without `^`), which the printer
    /// keeps where it can.
    pub fn set_block_label(&mut self, b: BlockId, label: &str) {
        self.blocks[b.index()].label = Some(label.to_string());
    }
    /// The region holding block `b`.
    pub fn block_region(&self, b: BlockId) -> Option<RegionId> {
        self.blocks[b.index()].parent
    }
    /// Whether `op` or an op nested in it has a region of several blocks.
    pub fn has_cfg(&self, op: OpId) -> bool {
        std::iter::once(op).chain(self.walk_nested(op)).any(|o| {
            self.ops[o.index()]
                .regions
                .iter()
                .any(|&r| self.regions[r.index()].blocks.len() > 1)
        })
    }
    /// The first live op of the module with a region of several blocks.
    pub fn first_cfg_op(&self) -> Option<OpId> {
        self.walk_all().into_iter().find(|&o| {
            self.ops[o.index()]
                .regions
                .iter()
                .any(|&r| self.regions[r.index()].blocks.len() > 1)
        })
    }
    /// Removes block `b` from its region (its ops should be erased first, or
    /// moved).
    pub fn remove_block(&mut self, b: BlockId) {
        if let Some(r) = self.blocks[b.index()].parent.take() {
            self.regions[r.index()].blocks.retain(|&x| x != b);
        }
    }
    /// Inserts detached block `b` right before block `anchor`, in
    /// `anchor`'s region.
    pub fn insert_block_before(&mut self, anchor: BlockId, b: BlockId) {
        self.insert_block_near(anchor, b, 0);
    }
    /// Inserts detached block `b` right after block `anchor`, in `anchor`'s
    /// region.
    pub fn insert_block_after(&mut self, anchor: BlockId, b: BlockId) {
        self.insert_block_near(anchor, b, 1);
    }
    fn insert_block_near(&mut self, anchor: BlockId, b: BlockId, offset: usize) {
        let r = self.blocks[anchor.index()]
            .parent
            .expect("anchor block in a region");
        let blocks = &mut self.regions[r.index()].blocks;
        let at = blocks
            .iter()
            .position(|&x| x == anchor)
            .expect("anchor block in its region");
        blocks.insert(at + offset, b);
        self.blocks[b.index()].parent = Some(r);
        self.cfg_built |= self.regions[r.index()].blocks.len() > 1;
    }
    /// The entry block of region `r` (the only one in most regions; see
    /// [`Context::has_cfg`]).
    pub fn region_block(&self, r: RegionId) -> BlockId {
        self.regions[r.index()].blocks[0]
    }
    /// The entry block of region `i` of `op`.
    pub fn op_block(&self, op: OpId, i: usize) -> BlockId {
        self.region_block(self.ops[op.index()].regions[i])
    }
    /// The op owning region `r`.
    pub fn region_parent(&self, r: RegionId) -> Option<OpId> {
        self.regions[r.index()].parent
    }
    /// The op whose region contains block `b`.
    pub fn block_parent_op(&self, b: BlockId) -> Option<OpId> {
        self.blocks[b.index()]
            .parent
            .and_then(|r| self.region_parent(r))
    }
    /// The op enclosing `op` (the owner of its block's region).
    pub fn parent_op(&self, op: OpId) -> Option<OpId> {
        self.ops[op.index()]
            .parent
            .and_then(|b| self.block_parent_op(b))
    }
    /// The ops of block `b`, in order (a snapshot: safe to mutate while iterating).
    pub fn block_ops(&self, b: BlockId) -> Vec<OpId> {
        let mut out = Vec::new();
        let mut cur = self.blocks[b.index()].first;
        while let Some(op) = cur {
            out.push(op);
            cur = self.ops[op.index()].next;
        }
        out
    }
    /// An iterator over the ops of block `b` (do not mutate the block meanwhile).
    pub fn iter_block(&self, b: BlockId) -> BlockIter<'_> {
        BlockIter {
            ctx: self,
            cur: self.blocks[b.index()].first,
        }
    }
    /// The last op of block `b` (its terminator, in verified IR).
    pub fn terminator(&self, b: BlockId) -> Option<OpId> {
        self.blocks[b.index()].last
    }
    /// Number of arena slots for values (ids are below this).
    pub fn num_values(&self) -> usize {
        self.values.len()
    }
    /// Number of arena slots for ops (ids are below this).
    pub fn num_ops(&self) -> usize {
        self.ops.len()
    }
    /// Whether `op` is still in the IR.
    pub fn alive(&self, op: OpId) -> bool {
        self.ops[op.index()].alive
    }

    /// All live ops nested under block `b`, in pre-order (parents before children).
    pub fn walk_block(&self, b: BlockId) -> Vec<OpId> {
        let mut out = Vec::new();
        let mut stack: Vec<Option<OpId>> = vec![self.blocks[b.index()].first];
        while let Some(top) = stack.last_mut() {
            match *top {
                None => {
                    stack.pop();
                }
                Some(op) => {
                    *top = self.ops[op.index()].next;
                    out.push(op);
                    for &r in self.ops[op.index()].regions.iter().rev() {
                        for &blk in self.regions[r.index()].blocks.iter().rev() {
                            stack.push(self.blocks[blk.index()].first);
                        }
                    }
                }
            }
        }
        out
    }
    /// All live ops nested in `op`'s regions (not `op` itself), pre-order.
    pub fn walk_nested(&self, op: OpId) -> Vec<OpId> {
        let mut out = Vec::new();
        for &r in self.ops[op.index()].regions.iter() {
            for &b in self.regions[r.index()].blocks.iter() {
                out.extend(self.walk_block(b));
            }
        }
        out
    }
    /// Every live op of the module, pre-order.
    pub fn walk_all(&self) -> Vec<OpId> {
        self.walk_block(self.top)
    }

    /// Whether `inner` is `outer` or nested (at any depth) inside one of `outer`'s regions.
    pub fn is_ancestor(&self, outer: OpId, inner: OpId) -> bool {
        let mut cur = Some(inner);
        while let Some(op) = cur {
            if op == outer {
                return true;
            }
            cur = self.parent_op(op);
        }
        false
    }
    /// Whether block `b` is nested (at any depth) inside op `outer`.
    pub fn block_in_op(&self, b: BlockId, outer: OpId) -> bool {
        match self.block_parent_op(b) {
            Some(p) => self.is_ancestor(outer, p),
            None => false,
        }
    }

    // ----- creation --------------------------------------------------------

    /// A new detached block with no arguments.
    pub fn new_block(&mut self) -> BlockId {
        let id = BlockId(self.blocks.len() as u32);
        self.blocks.push(BlockData::default());
        id
    }
    /// Adds an argument of type `ty` to block `b`.
    pub fn add_block_arg(&mut self, b: BlockId, ty: Type, name: Option<&str>) -> ValueId {
        let idx = self.blocks[b.index()].args.len() as u32;
        let name = name.map(|s| self.names.intern(s));
        let v = self.new_value(ty, ValueDef::BlockArg(b, idx), name);
        self.blocks[b.index()].args.push(v);
        v
    }
    /// Gives block `b` new arguments of `types` in place of its old ones,
    /// which are left detached (the caller replaces their uses first or
    /// after); returns the new arguments.
    pub fn replace_block_args(&mut self, b: BlockId, types: &[Type]) -> Vec<ValueId> {
        self.blocks[b.index()].args.clear();
        types
            .iter()
            .map(|t| self.add_block_arg(b, t.clone(), None))
            .collect()
    }
    /// A new detached region holding one empty block with arguments of `arg_types`.
    pub fn new_region_with_block(&mut self, arg_types: &[Type]) -> (RegionId, BlockId) {
        let r = self.new_region();
        let b = self.new_block();
        for t in arg_types {
            self.add_block_arg(b, t.clone(), None);
        }
        self.push_block(r, b);
        (r, b)
    }
    /// A new detached empty region.
    pub fn new_region(&mut self) -> RegionId {
        let id = RegionId(self.regions.len() as u32);
        self.regions.push(RegionData::default());
        id
    }
    /// Appends block `b` to region `r`.
    pub fn push_block(&mut self, r: RegionId, b: BlockId) {
        self.regions[r.index()].blocks.push(b);
        self.blocks[b.index()].parent = Some(r);
        self.cfg_built |= self.regions[r.index()].blocks.len() > 1;
    }

    fn new_value(&mut self, ty: Type, def: ValueDef, name: Option<Name>) -> ValueId {
        let id = ValueId(self.values.len() as u32);
        self.values.push(ValueData {
            ty,
            def,
            uses: SmallVec::new(),
            name,
        });
        id
    }

    /// Creates a detached operation (not in any block). Regions are adopted.
    /// No verification, folding or hash-consing happens here: see
    /// [`crate::Builder`] for smart construction.
    pub fn create_op(
        &mut self,
        kind: OpKind,
        operands: &[ValueId],
        result_types: &[Type],
        attrs: Vec<(String, Attribute)>,
        regions: &[RegionId],
        loc: Loc,
    ) -> OpId {
        let id = OpId(self.ops.len() as u32);
        let mut results = SmallVec::new();
        for (i, t) in result_types.iter().enumerate() {
            results.push(self.new_value(t.clone(), ValueDef::Result(id, i as u32), None));
        }
        let mut list = OperandList::new(operands);
        for (i, &v) in operands.iter().enumerate() {
            let uses = &mut self.values[v.index()].uses;
            list.set_use_pos(i, uses.len() as u32);
            uses.push(Use {
                op: id,
                index: i as u32,
            });
        }
        for &r in regions {
            self.regions[r.index()].parent = Some(id);
        }
        self.ops.push(OpData {
            kind,
            operands: list,
            results,
            regions: ThinVec::from(regions),
            successors: ThinVec::new(),
            attrs: ThinVec::from(attrs),
            loc,
            parent: None,
            prev: None,
            next: None,
            order: 0,
            alive: true,
        });
        if !self.mixed_same_type_ops
            && self
                .registry
                .spec(kind)
                .traits
                .contains(Traits::SAME_OPERANDS_AND_RESULT_TYPE)
        {
            self.mixed_same_type_ops = self.operand_and_result_types_differ(id);
        }
        id
    }

    /// Whether two of `op`'s operands and results have different types: the
    /// violation of [`Traits::SAME_OPERANDS_AND_RESULT_TYPE`], asked by
    /// [`Context::create_op`] and by the verifier. False for an op with
    /// neither operands nor results.
    pub fn operand_and_result_types_differ(&self, op: OpId) -> bool {
        let d = &self.ops[op.index()];
        let mut tys = d
            .operands
            .iter()
            .chain(d.results.iter())
            .map(|&v| &self.values[v.index()].ty);
        match tys.next() {
            Some(first) => tys.any(|t| t != first),
            None => false,
        }
    }

    // ----- linking ---------------------------------------------------------

    /// Inserts detached `op` into `block` before `before` (or at the end).
    pub fn insert_op(&mut self, op: OpId, block: BlockId, before: Option<OpId>) {
        debug_assert!(self.ops[op.index()].parent.is_none());
        let prev = match before {
            Some(b) => self.ops[b.index()].prev,
            None => self.blocks[block.index()].last,
        };
        {
            let d = &mut self.ops[op.index()];
            d.parent = Some(block);
            d.prev = prev;
            d.next = before;
        }
        match prev {
            Some(p) => self.ops[p.index()].next = Some(op),
            None => self.blocks[block.index()].first = Some(op),
        }
        match before {
            Some(b) => self.ops[b.index()].prev = Some(op),
            None => self.blocks[block.index()].last = Some(op),
        }
        let lo = prev.map(|p| self.ops[p.index()].order).unwrap_or(0);
        match before.map(|b| self.ops[b.index()].order) {
            None => self.ops[op.index()].order = lo + ORDER_GAP,
            Some(hi) if hi - lo >= 2 => self.ops[op.index()].order = lo + (hi - lo) / 2,
            Some(_) => self.renumber(block),
        }
    }

    fn renumber(&mut self, block: BlockId) {
        let mut cur = self.blocks[block.index()].first;
        let mut k = 0;
        while let Some(op) = cur {
            k += ORDER_GAP;
            self.ops[op.index()].order = k;
            cur = self.ops[op.index()].next;
        }
    }

    /// Removes `op` from its block without destroying it (it can be re-inserted).
    pub fn detach_op(&mut self, op: OpId) {
        let Some(block) = self.ops[op.index()].parent else {
            return;
        };
        let (prev, next) = (self.ops[op.index()].prev, self.ops[op.index()].next);
        match prev {
            Some(p) => self.ops[p.index()].next = next,
            None => self.blocks[block.index()].first = next,
        }
        match next {
            Some(n) => self.ops[n.index()].prev = prev,
            None => self.blocks[block.index()].last = prev,
        }
        let d = &mut self.ops[op.index()];
        d.parent = None;
        d.prev = None;
        d.next = None;
    }

    /// Moves `op` to `block` before `before` (or to the end).
    pub fn move_op(&mut self, op: OpId, block: BlockId, before: Option<OpId>) {
        self.detach_op(op);
        self.insert_op(op, block, before);
    }

    /// Whether `a` comes strictly before `b`; both must be in the same block.
    pub fn is_before_in_block(&self, a: OpId, b: OpId) -> bool {
        self.ops[a.index()].order < self.ops[b.index()].order
    }

    // ----- mutation of uses ------------------------------------------------

    /// Removes operand `index` of `op` from the use list of value `v` in O(1)
    /// (swap-remove, then fix the moved use's back-index).
    fn remove_use(&mut self, v: ValueId, op: OpId, index: usize) {
        let p = self.ops[op.index()].operands.use_pos(index) as usize;
        let uses = &mut self.values[v.index()].uses;
        debug_assert!(
            uses[p]
                == Use {
                    op,
                    index: index as u32
                }
        );
        uses.swap_remove(p);
        if p < uses.len() {
            let moved = uses[p];
            self.ops[moved.op.index()]
                .operands
                .set_use_pos(moved.index as usize, p as u32);
        }
    }

    fn add_use(&mut self, v: ValueId, op: OpId, index: usize) {
        let uses = &mut self.values[v.index()].uses;
        self.ops[op.index()]
            .operands
            .set_use_pos(index, uses.len() as u32);
        uses.push(Use {
            op,
            index: index as u32,
        });
    }

    /// Sets operand `index` of `op` to `v`.
    pub fn set_operand(&mut self, op: OpId, index: usize, v: ValueId) {
        let old = self.ops[op.index()].operands[index];
        if old == v {
            return;
        }
        self.remove_use(old, op, index);
        self.ops[op.index()].operands.set(index, v);
        self.add_use(v, op, index);
    }

    /// Replaces the whole operand list of `op`.
    pub fn set_operands(&mut self, op: OpId, operands: &[ValueId]) {
        let old = self.ops[op.index()].operands.clone();
        for (i, &v) in old.iter().enumerate() {
            self.remove_use(v, op, i);
        }
        self.ops[op.index()].operands = OperandList::new(operands);
        for (i, &v) in operands.iter().enumerate() {
            self.add_use(v, op, i);
        }
    }

    /// Replaces every use of `from` by `to`. O(uses of `from`).
    pub fn replace_all_uses(&mut self, from: ValueId, to: ValueId) {
        if from == to {
            return;
        }
        let uses = std::mem::take(&mut self.values[from.index()].uses);
        let base = self.values[to.index()].uses.len();
        for (k, u) in uses.iter().enumerate() {
            let d = &mut self.ops[u.op.index()];
            d.operands.set(u.index as usize, to);
            d.operands.set_use_pos(u.index as usize, (base + k) as u32);
        }
        self.values[to.index()].uses.extend(uses);
        if self.values[to.index()].name.is_none() {
            self.values[to.index()].name = self.values[from.index()].name;
        }
    }

    /// Replaces every use of `from` by `to` where the user satisfies `pred`.
    pub fn replace_uses_where(
        &mut self,
        from: ValueId,
        to: ValueId,
        mut pred: impl FnMut(&Context, OpId) -> bool,
    ) {
        let uses = self.values[from.index()].uses.clone();
        for u in uses {
            if pred(self, u.op) {
                self.set_operand(u.op, u.index as usize, to);
            }
        }
    }

    /// Replaces the results of `op` by `values` (one per result) and erases `op`.
    pub fn replace_op(&mut self, op: OpId, values: &[ValueId]) {
        let results: SmallVec<[ValueId; 2]> = SmallVec::from_slice(&self.ops[op.index()].results);
        for (r, &v) in results.iter().zip(values) {
            self.replace_all_uses(*r, v);
        }
        self.erase_op(op);
    }

    /// Erases `op` and everything nested in it. Its results should be unused;
    /// any remaining uses are left dangling, which the verifier reports.
    pub fn erase_op(&mut self, op: OpId) {
        if !self.ops[op.index()].alive {
            return;
        }
        self.detach_op(op);
        let nested = self.walk_nested(op);
        for o in std::iter::once(op).chain(nested) {
            let operands = self.ops[o.index()].operands.clone();
            for (i, &v) in operands.iter().enumerate() {
                self.remove_use(v, o, i);
            }
            let d = &mut self.ops[o.index()];
            d.operands.clear();
            d.alive = false;
        }
    }

    /// Erases a detached region that was never adopted (e.g. after a rewrite
    /// at construction time made it unnecessary).
    pub fn erase_region(&mut self, r: RegionId) {
        for b in self.regions[r.index()].blocks.clone() {
            for op in self.block_ops(b) {
                self.erase_op(op);
            }
        }
    }

    /// Moves every op of block `from` before `before` in `to` (or at its end).
    pub fn splice_block(&mut self, from: BlockId, to: BlockId, before: Option<OpId>) {
        for op in self.block_ops(from) {
            self.move_op(op, to, before);
        }
    }

    /// Searches the module body for an op with `sym_name = @name`.
    pub fn lookup_symbol(&self, name: &str) -> Option<OpId> {
        self.iter_block(self.top).find(|&op| {
            matches!(self.attr(op, "sym_name"), Some(Attribute::SymbolRef(s)) | Some(Attribute::Str(s)) if s == name)
        })
    }
}

/// Iterator over a block's ops.
pub struct BlockIter<'a> {
    ctx: &'a Context,
    cur: Option<OpId>,
}

impl Iterator for BlockIter<'_> {
    type Item = OpId;
    fn next(&mut self) -> Option<OpId> {
        let op = self.cur?;
        self.cur = self.ctx.ops[op.index()].next;
        Some(op)
    }
}
