//! Effects per allocation (issue 13, item 1; IR-SPEC §3; LMS's effect
//! tracking with aliasing, `lms-compiler-internals`, "Effects" and
//! "Aliasing").
//!
//! Two analyses that `cse`, `dce`, `code-motion` and `fuse` consult:
//! - [`Aliases`]: a flow-insensitive points-to analysis. Each `arr`/`var`
//!   value points to a set of *fresh allocations* (results of `arr.alloc`,
//!   `arr.from_vec`, `var.new`, `gpu.alloc`, `gpu.workgroup_alloc`) and may
//!   also point to *unknown* memory (function arguments, call results, a
//!   buffer loaded from a buffer of buffers). Sets follow values through
//!   `arith.select`, `scf.if` results, `scf.for` and `scf.while` carried
//!   values, to a fixpoint. An allocation *escapes* when it flows anywhere
//!   else (passed to a call, stored into memory, returned, yielded by an op
//!   the analysis does not model); unknown memory may be any escaped
//!   allocation.
//! - [`Effects`]: which allocations an op and everything nested in it may
//!   read and write, or that it may touch memory it does not name (a call,
//!   a kernel launch).
//!
//! Everything errs on the side of "may alias": a value created after the
//! analysis ran, or one it does not model, may alias anything.

use rustc_hash::{FxHashMap, FxHashSet};
use smallvec::SmallVec;

use ir::{Context, OpId, Traits, Type, ValueId};

/// Whether values of type `t` name memory (`arr<T>`, `var<T>`).
pub fn is_memory(t: &Type) -> bool {
    matches!(t, Type::Arr(_) | Type::Var(_) | Type::MemRef(_))
}

/// Whether `op` creates new allocations (one per result) that no other value
/// names yet.
pub fn is_fresh_allocation(ctx: &Context, op: OpId) -> bool {
    matches!(
        ctx.op_name(op),
        "arr.alloc"
            | "memref.alloc"
            | "memref.alloca"
            | "arr.from_vec"
            | "var.new"
            | "gpu.alloc"
            | "gpu.workgroup_alloc"
            | "gpu.pack_rows"
    )
}

/// Whether `v` is the result of a fresh allocation.
pub fn is_fresh(ctx: &Context, v: ValueId) -> bool {
    ctx.def_op(v).is_some_and(|d| is_fresh_allocation(ctx, d))
}

/// What one memory value may point to.
#[derive(Clone, Default, Debug, PartialEq)]
struct PointsTo {
    /// Fresh allocations (their result values), sorted.
    allocs: SmallVec<[ValueId; 2]>,
    /// Whether it may also be memory the function did not allocate itself.
    unknown: bool,
}

impl PointsTo {
    /// Adds `other`; returns whether anything changed.
    fn join(&mut self, other: &PointsTo) -> bool {
        let mut changed = false;
        if other.unknown && !self.unknown {
            self.unknown = true;
            changed = true;
        }
        for &a in &other.allocs {
            if let Err(i) = self.allocs.binary_search(&a) {
                self.allocs.insert(i, a);
                changed = true;
            }
        }
        changed
    }
}

/// Points-to sets of every `arr`/`var` value of a module (see the module
/// documentation). Computed once by [`Aliases::compute`]; a pass that
/// creates new memory values must treat them as unknown (the queries do).
#[derive(Default)]
pub struct Aliases {
    sets: FxHashMap<ValueId, PointsTo>,
    escaped: FxHashSet<ValueId>,
}

/// The positions at which memory operand `i` of `op` is only accessed (read,
/// written, freed), not passed on: such a use neither flows nor escapes.
pub fn accessed_only(ctx: &Context, op: OpId, i: usize) -> bool {
    match ctx.op_name(op) {
        "arr.load" | "arr.len" | "arr.to_vec" | "arr.free" | "arr.push" | "var.get"
        | "gpu.dealloc" | "gpu.atomic_rmw" | "gpu.atomic_cas" => i == 0,
        "arr.store" | "arr.find_or_insert" | "var.set" => i == 0,
        "gpu.memcpy" | "gpu.unpack_rows" | "memref.copy" => true,
        "memref.load" | "memref.dealloc" | "memref.dim" => i == 0,
        "memref.store" | "memref.atomic_rmw" => i == 1,
        _ => false,
    }
}

impl Aliases {
    /// Runs the analysis over the whole module.
    pub fn compute(ctx: &Context) -> Aliases {
        let mut a = Aliases::default();
        let ops = ctx.walk_all();
        // Flow edges `from -> to` between memory values.
        let mut edges: Vec<(ValueId, ValueId)> = Vec::new();
        let mut escaping: Vec<ValueId> = Vec::new();
        let memory = |v: ValueId| is_memory(ctx.ty(v));
        for &op in &ops {
            if is_fresh_allocation(ctx, op) {
                // Each result is an allocation of its own.
                for &r in ctx.results(op) {
                    a.sets.insert(
                        r,
                        PointsTo {
                            allocs: smallvec::smallvec![r],
                            unknown: false,
                        },
                    );
                }
            }
            let name = ctx.op_name(op);
            let modeled = match name {
                // Views of their source.
                n if crate::memref::is_view(n) || n == crate::memref::metadata::NAME => {
                    edges.push((ctx.operand(op, 0), ctx.result(op, 0)));
                    true
                }
                // A fresh allocation that reads and frees its source
                // (its own effects, unlike an allocation's, see `add_own`).
                "memref.realloc" => {
                    let r = ctx.result(op, 0);
                    a.sets.insert(
                        r,
                        PointsTo {
                            allocs: smallvec::smallvec![r],
                            unknown: false,
                        },
                    );
                    true
                }
                "arith.select" => {
                    let r = ctx.result(op, 0);
                    if memory(r) {
                        edges.push((ctx.operand(op, 1), r));
                        edges.push((ctx.operand(op, 2), r));
                    }
                    true
                }
                "scf.for" => {
                    // Operands: lb, ub, step, inits; block args: index, carried.
                    let body = ctx.op_block(op, 0);
                    for (k, &init) in ctx.operands(op)[3..].iter().enumerate() {
                        if memory(init) {
                            edges.push((init, ctx.block_args(body)[k + 1]));
                            edges.push((init, ctx.result(op, k)));
                        }
                    }
                    true
                }
                "scf.while" => {
                    let before = ctx.op_block(op, 0);
                    for (k, &init) in ctx.operands(op).iter().enumerate() {
                        if memory(init) {
                            edges.push((init, ctx.block_args(before)[k]));
                        }
                    }
                    true
                }
                "scf.yield" | "scf.condition" => {
                    let parent = ctx.parent_op(op);
                    let skip = usize::from(name == "scf.condition");
                    let vals = &ctx.operands(op)[skip..];
                    let targets: Option<Vec<ValueId>> = parent.and_then(|p| {
                        let mut t = Vec::new();
                        match (ctx.op_name(p), name) {
                            ("scf.if", _) | ("scf.index_switch", _) => {
                                t.extend_from_slice(ctx.results(p))
                            }
                            ("scf.for", _) => {
                                t.extend_from_slice(ctx.results(p));
                                t.extend(ctx.block_args(ctx.op_block(p, 0)).iter().skip(1));
                            }
                            ("scf.while", "scf.condition") => {
                                t.extend_from_slice(ctx.results(p));
                                t.extend_from_slice(ctx.block_args(ctx.op_block(p, 1)));
                            }
                            ("scf.while", _) => {
                                t.extend_from_slice(ctx.block_args(ctx.op_block(p, 0)))
                            }
                            _ => return None,
                        }
                        Some(t)
                    });
                    match targets {
                        Some(t) => {
                            let n = vals.len();
                            for (j, &to) in t.iter().enumerate() {
                                // Results and block args are per slot; a
                                // target list is one or two copies of the slots.
                                if let Some(&from) = vals.get(j % n.max(1)) {
                                    if memory(from) && memory(to) {
                                        edges.push((from, to));
                                    }
                                }
                            }
                            true
                        }
                        None => false,
                    }
                }
                _ => false,
            };
            for (i, &v) in ctx.operands(op).iter().enumerate() {
                if memory(v) && !modeled && !accessed_only(ctx, op, i) {
                    escaping.push(v);
                }
            }
        }
        // Memory values with no source the analysis models point to unknown
        // memory: function arguments, call results, loads of buffers.
        let mut has_source: FxHashSet<ValueId> = a.sets.keys().copied().collect();
        has_source.extend(edges.iter().map(|&(_, to)| to));
        let unknown = PointsTo {
            allocs: SmallVec::new(),
            unknown: true,
        };
        for &op in &ops {
            let mut vals: Vec<ValueId> = ctx.results(op).to_vec();
            for &r in ctx.regions(op) {
                for &b in &ctx.region(r).blocks {
                    vals.extend_from_slice(ctx.block_args(b));
                }
            }
            for v in vals {
                if memory(v) && !has_source.contains(&v) {
                    a.sets.insert(v, unknown.clone());
                }
            }
        }
        // Propagate along the edges to a fixpoint (sets only grow).
        loop {
            let mut changed = false;
            for &(from, to) in &edges {
                let Some(src) = a.sets.get(&from).cloned() else {
                    continue;
                };
                changed |= a.sets.entry(to).or_default().join(&src);
            }
            if !changed {
                break;
            }
        }
        for v in escaping {
            if let Some(s) = a.sets.get(&v) {
                a.escaped.extend(s.allocs.iter().copied());
            }
        }
        a
    }

    /// Whether memory values `x` and `y` may name the same allocation.
    pub fn may_alias(&self, x: ValueId, y: ValueId) -> bool {
        if x == y {
            return true;
        }
        let (Some(a), Some(b)) = (self.sets.get(&x), self.sets.get(&y)) else {
            return true;
        };
        if a.allocs.iter().any(|v| b.allocs.binary_search(v).is_ok()) {
            return true;
        }
        let escaped = |s: &PointsTo| s.allocs.iter().any(|v| self.escaped.contains(v));
        (a.unknown && (b.unknown || escaped(b))) || (b.unknown && escaped(a))
    }

    /// Whether every allocation `x` may name was made by this module's code
    /// and never escapes: then only ops that name `x` or an alias of it can
    /// read or write it.
    pub fn is_local(&self, x: ValueId) -> bool {
        self.sets
            .get(&x)
            .is_some_and(|s| !s.unknown && s.allocs.iter().all(|v| !self.escaped.contains(v)))
    }
}

/// The memory an op (with everything nested in it) may read and write.
#[derive(Clone, Default, Debug)]
pub struct Effects {
    /// Buffers and variables it may read.
    pub reads: Vec<ValueId>,
    /// Buffers and variables it may write (stores, pushes, frees).
    pub writes: Vec<ValueId>,
    /// It may read memory it does not name.
    pub unknown_read: bool,
    /// It may write memory it does not name.
    pub unknown_write: bool,
}

impl Effects {
    /// The effects of `op` and of every op nested in it. Generator emits
    /// and reads (`gen.emit`, `gen.running`) and run-time checks
    /// (`scf.assert`) touch no memory: the passes order them by their own
    /// rules.
    pub fn of(ctx: &Context, op: OpId) -> Effects {
        let mut e = Effects::default();
        for o in std::iter::once(op).chain(ctx.walk_nested(op)) {
            e.add_own(ctx, o);
        }
        e
    }

    fn add_own(&mut self, ctx: &Context, op: OpId) {
        let t = ctx.spec(op).traits;
        if t.intersects(Traits::PURE | Traits::TERMINATOR | Traits::RECURSIVELY_PURE)
            || !t.intersects(Traits::READS | Traits::WRITES)
            || is_fresh_allocation(ctx, op)
        {
            // Allocating alone touches no memory another op could name.
            return;
        }
        let a0 = || ctx.operand(op, 0);
        match ctx.op_name(op) {
            "gen.emit" | "gen.running" | "scf.assert" | "cf.assert" => {}
            "arr.load" | "arr.len" | "arr.to_vec" | "var.get" => self.reads.push(a0()),
            "arr.store" | "var.set" | "arr.free" | "gpu.dealloc" | "memref.dealloc" => {
                self.writes.push(a0())
            }
            "memref.load" => self.reads.push(a0()),
            "memref.store" => self.writes.push(ctx.operand(op, 1)),
            "memref.atomic_rmw" => {
                self.reads.push(ctx.operand(op, 1));
                self.writes.push(ctx.operand(op, 1));
            }
            "memref.realloc" => {
                self.reads.push(a0());
                self.writes.push(a0());
            }
            "memref.copy" => {
                self.reads.push(a0());
                self.writes.push(ctx.operand(op, 1));
            }
            "arr.push" | "arr.find_or_insert" | "gpu.atomic_rmw" | "gpu.atomic_cas" => {
                self.reads.push(a0());
                self.writes.push(a0());
            }
            "gpu.unpack_rows" => self.reads.extend(ctx.operands(op).iter().copied()),
            "gpu.memcpy" => {
                self.writes.push(a0());
                let src = ctx.operand(op, 1);
                if is_memory(ctx.ty(src)) {
                    self.reads.push(src);
                }
            }
            _ => {
                if t.contains(Traits::READS) && !t.intersects(Traits::WRITES | Traits::ALLOCATES) {
                    self.unknown_read = true;
                } else {
                    self.unknown_read = true;
                    self.unknown_write = true;
                }
            }
        }
    }

    /// Whether it touches memory at all.
    pub fn is_empty(&self) -> bool {
        self.reads.is_empty() && self.writes.is_empty() && !self.unknown_read && !self.unknown_write
    }

    /// Whether running `self` and `other` in either order, or interleaved,
    /// may give different results: one writes what the other reads or
    /// writes.
    pub fn conflicts(&self, other: &Effects, aliases: &Aliases) -> bool {
        let writes_into = |w: &Effects, r: &Effects| {
            (w.unknown_write && !r.is_empty())
                || (r.unknown_read && (w.unknown_write || !w.writes.is_empty()))
                || (r.unknown_write && !w.writes.is_empty())
                || w.writes.iter().any(|&x| {
                    r.reads
                        .iter()
                        .chain(r.writes.iter())
                        .any(|&y| aliases.may_alias(x, y))
                })
        };
        writes_into(self, other) || writes_into(other, self)
    }
}
