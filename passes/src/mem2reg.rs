//! `mem2reg`: promotes mutable variables (`var.new`/`get`/`set`) to SSA
//! values, and the lowering of the variables left to one-element buffers.
//!
//! A variable is promoted when its address does not escape: every use is
//! the variable operand of a `var.get` or `var.set` (never stored, yielded,
//! passed to a call or selected), and every `var.set` sits directly in the
//! variable's block or under `scf.if`/`scf.for`/`scf.while` ops only (a
//! write inside a data-parallel loop body or a region of an unknown op is
//! not promoted). Promotion walks the program in order, keeping the current
//! value of each variable (LMS's "variables as SSA values", the classic
//! structured-SSA construction): a `get` becomes the current value, a `set`
//! replaces it; an `scf.if` whose branches set variables gets one more
//! result per variable, each branch yielding its final value, an `scf.for`
//! whose body sets variables one more iter_arg per variable, and an
//! `scf.while` one more loop-carried value (a `before` argument forwarded by
//! `scf.condition` to the `after` region and out as a result).
//! Reads anywhere (also inside loops that cannot carry a value) read the
//! current value, which is the variable's value there.
//!
//! [`vars_to_arrays`] (run by `lower` at the `arr` phase) turns the
//! remaining variables into one-element `arr` buffers, so the native
//! backends compile them: `var<T>` types become `arr<T>` everywhere,
//! `var.new x` an `arr.alloc` of 1 and a store, `get`/`set` a load/store at
//! index 0 marked in bounds (the buffer always has one element).

use rustc_hash::{FxHashMap, FxHashSet};

use ir::pass::{Pass, PassInfo, PassOptions, PassStats};
use ir::{Attribute, BlockId, Builder, Context, Diagnostic, OpId, Type, ValueId};

/// The pass.
pub struct Mem2Reg;

impl Pass for Mem2Reg {
    fn name(&self) -> &'static str {
        "mem2reg"
    }
    fn run(&mut self, ctx: &mut Context, stats: &mut PassStats) -> Result<(), Diagnostic> {
        stats.add("promoted", mem2reg(ctx));
        Ok(())
    }
}

/// Whether every op from `op`'s parent up to (excluding) the op owning
/// `home` is an `scf.if` or `scf.for`.
fn structured_path(ctx: &Context, op: OpId, home: BlockId) -> bool {
    let mut block = ctx.op(op).parent;
    while let Some(b) = block {
        if b == home {
            return true;
        }
        let Some(parent) = ctx.block_parent_op(b) else {
            return false;
        };
        if !(ctx.is(parent, "scf.if") || ctx.is(parent, "scf.for") || ctx.is(parent, "scf.while")) {
            return false;
        }
        block = ctx.op(parent).parent;
    }
    false
}

/// The variables (results of `var.new`) that can be promoted.
fn candidates(ctx: &Context) -> FxHashSet<ValueId> {
    let mut out = FxHashSet::default();
    for op in ctx.walk_all() {
        if !ctx.is(op, "var.new") {
            continue;
        }
        let Some(home) = ctx.op(op).parent else {
            continue;
        };
        let v = ctx.result(op, 0);
        let ok = ctx.uses(v).iter().all(|u| {
            u.index == 0
                && (ctx.is(u.op, "var.get")
                    || (ctx.is(u.op, "var.set") && structured_path(ctx, u.op, home)))
        });
        if ok {
            out.insert(v);
        }
    }
    out
}

struct Promote {
    cands: FxHashSet<ValueId>,
}

impl Promote {
    /// The candidate variables defined outside `op` that `op` sets, in
    /// order of first write.
    fn writes(&self, ctx: &Context, op: OpId) -> Vec<ValueId> {
        let mut out = Vec::new();
        for o in ctx.walk_nested(op) {
            if !ctx.is(o, "var.set") {
                continue;
            }
            let v = ctx.operand(o, 0);
            let outside = ctx.def_op(v).is_some_and(|d| !ctx.is_ancestor(op, d));
            if self.cands.contains(&v) && outside && !out.contains(&v) {
                out.push(v);
            }
        }
        out
    }

    fn block(&mut self, ctx: &mut Context, b: BlockId, cur: &mut FxHashMap<ValueId, ValueId>) {
        for op in ctx.block_ops(b) {
            if !ctx.alive(op) {
                continue;
            }
            let name = ctx.op_name(op);
            match name {
                "var.new" if self.cands.contains(&ctx.result(op, 0)) => {
                    cur.insert(ctx.result(op, 0), ctx.operand(op, 0));
                }
                "var.get" if self.cands.contains(&ctx.operand(op, 0)) => {
                    if let Some(&x) = cur.get(&ctx.operand(op, 0)) {
                        let r = ctx.result(op, 0);
                        ctx.replace_all_uses(r, x);
                        ctx.erase_op(op);
                    }
                }
                "var.set" if self.cands.contains(&ctx.operand(op, 0)) => {
                    cur.insert(ctx.operand(op, 0), ctx.operand(op, 1));
                    ctx.erase_op(op);
                }
                "scf.if" | "scf.for" | "scf.while" => {
                    let ws = self.writes(ctx, op);
                    if ws.is_empty() {
                        self.regions(ctx, op, cur);
                    } else if name == "scf.if" {
                        self.branch(ctx, op, &ws, cur);
                    } else if name == "scf.for" {
                        self.for_loop(ctx, op, &ws, cur);
                    } else {
                        self.while_loop(ctx, op, &ws, cur);
                    }
                }
                _ => self.regions(ctx, op, cur),
            }
        }
    }

    /// Nested regions that set no outside variable: they read the current
    /// values; what they define stays local.
    fn regions(&mut self, ctx: &mut Context, op: OpId, cur: &FxHashMap<ValueId, ValueId>) {
        for r in ctx.regions(op).to_vec() {
            for b in ctx.region(r).blocks.clone() {
                self.block(ctx, b, &mut cur.clone());
            }
        }
    }

    /// The type a variable holds.
    fn held(ctx: &Context, v: ValueId) -> Type {
        ctx.ty(v).elem().cloned().unwrap_or(Type::I1)
    }

    /// Promotes in block `b`, starting from the current values `cur`, with
    /// each variable of `ws` entering `b` as a new block argument of its type
    /// in `args` (or, without `args`, holding its current value), and
    /// appends the variables' final values to `b`'s terminator.
    fn carry(
        &mut self,
        ctx: &mut Context,
        b: BlockId,
        ws: &[ValueId],
        args: Option<&[Type]>,
        cur: &FxHashMap<ValueId, ValueId>,
    ) {
        let mut c = cur.clone();
        for (&w, t) in ws.iter().zip(args.unwrap_or_default()) {
            let arg = ctx.add_block_arg(b, t.clone(), None);
            c.insert(w, arg);
        }
        self.block(ctx, b, &mut c);
        let finals: Vec<ValueId> = ws.iter().map(|w| c[w]).collect();
        append_yield(ctx, b, &finals);
    }

    /// [`rebuild`] with `inits` and results of `types` appended for
    /// the variables `ws`, whose current values become those results.
    fn rebuild_carrying(
        ctx: &mut Context,
        op: OpId,
        ws: &[ValueId],
        inits: &[ValueId],
        types: &[Type],
        cur: &mut FxHashMap<ValueId, ValueId>,
    ) {
        let n = ctx.results(op).len();
        let results = rebuild(ctx, op, inits, types);
        for (k, &w) in ws.iter().enumerate() {
            cur.insert(w, results[n + k]);
        }
    }

    /// `scf.if`: each variable a branch sets becomes one more result, each
    /// branch yielding its final value.
    fn branch(
        &mut self,
        ctx: &mut Context,
        op: OpId,
        ws: &[ValueId],
        cur: &mut FxHashMap<ValueId, ValueId>,
    ) {
        for r in ctx.regions(op).to_vec() {
            let b = ctx.region_block(r);
            self.carry(ctx, b, ws, None, cur);
        }
        let types: Vec<Type> = ws.iter().map(|&w| Self::held(ctx, w)).collect();
        Self::rebuild_carrying(ctx, op, ws, &[], &types, cur);
    }

    /// `scf.for`: each variable the body sets becomes one more iter_arg
    /// (initial value: the current one).
    fn for_loop(
        &mut self,
        ctx: &mut Context,
        op: OpId,
        ws: &[ValueId],
        cur: &mut FxHashMap<ValueId, ValueId>,
    ) {
        let b = ctx.region_block(ctx.regions(op)[0]);
        let types: Vec<Type> = ws.iter().map(|&w| Self::held(ctx, w)).collect();
        let inits: Vec<ValueId> = ws.iter().map(|w| cur[w]).collect();
        self.carry(ctx, b, ws, Some(&types), cur);
        Self::rebuild_carrying(ctx, op, ws, &inits, &types, cur);
    }

    /// `scf.while`: each variable the loop sets is carried through the
    /// `before` region's arguments (initial value: the current one),
    /// forwarded by `scf.condition` to the `after` region and out as a
    /// result, and yielded back by the `after` region.
    fn while_loop(
        &mut self,
        ctx: &mut Context,
        op: OpId,
        ws: &[ValueId],
        cur: &mut FxHashMap<ValueId, ValueId>,
    ) {
        let regions = ctx.regions(op).to_vec();
        let types: Vec<Type> = ws.iter().map(|&w| Self::held(ctx, w)).collect();
        let inits: Vec<ValueId> = ws.iter().map(|w| cur[w]).collect();
        for r in regions {
            let b = ctx.region_block(r);
            self.carry(ctx, b, ws, Some(&types), cur);
        }
        Self::rebuild_carrying(ctx, op, ws, &inits, &types, cur);
    }
}

/// Promotes every variable that can be; returns how many.
pub fn mem2reg(ctx: &mut Context) -> u64 {
    let cands = candidates(ctx);
    if cands.is_empty() {
        return 0;
    }
    let mut p = Promote {
        cands: cands.clone(),
    };
    let top = ctx.top;
    p.block(ctx, top, &mut FxHashMap::default());
    let mut promoted = 0;
    for v in cands {
        if let Some(d) = ctx.def_op(v) {
            if ctx.alive(d) && ctx.unused(v) {
                ctx.erase_op(d);
                promoted += 1;
            }
        }
    }
    promoted
}

/// `t` with every `var<T>` replaced by `arr<T>`, if it has one.
fn convert(t: &Type) -> Option<Type> {
    let inner = |e: &Type| convert(e).unwrap_or_else(|| e.clone());
    Some(match t {
        Type::Var(e) => Type::arr(inner(e)),
        Type::Vec(e) => Type::vec(convert(e)?),
        Type::Mat(e) => Type::mat(convert(e)?),
        Type::Arr(e) => Type::arr(convert(e)?),
        Type::Function(f) => {
            if !f
                .inputs
                .iter()
                .chain(&f.results)
                .any(|t| convert(t).is_some())
            {
                return None;
            }
            Type::function(
                f.inputs.iter().map(inner).collect(),
                f.results.iter().map(inner).collect(),
            )
        }
        _ => return None,
    })
}

/// Lowers the variables left to one-element `arr` buffers; returns how
/// many `var` ops were rewritten.
pub fn vars_to_arrays(ctx: &mut Context) -> u64 {
    let ops: Vec<OpId> = ctx
        .walk_all()
        .into_iter()
        .filter(|&o| ctx.is(o, "var.new") || ctx.is(o, "var.get") || ctx.is(o, "var.set"))
        .collect();
    let mut retyped = false;
    for i in 0..ctx.num_values() {
        let v = ValueId(i as u32);
        if let Some(t) = convert(ctx.ty(v)) {
            ctx.set_type(v, t);
            retyped = true;
        }
    }
    if ops.is_empty() && !retyped {
        return 0;
    }
    for f in ctx.walk_all() {
        if let Some(Attribute::Type(t)) = ctx.attr(f, "function_type") {
            if let Some(t) = convert(t) {
                ctx.set_attr(f, "function_type", Attribute::Type(t));
            }
        }
    }
    let in_bounds = || vec![("in_bounds".to_string(), Attribute::Unit)];
    for &op in &ops {
        let mut b = Builder::before(ctx, op);
        let zero = b.constant(Attribute::Int(0, Type::Index), &Type::Index);
        match b.ctx.op_name(op) {
            "var.new" => {
                let x = b.ctx.operand(op, 0);
                let t = b.ctx.ty(x).clone();
                let one = b.constant(Attribute::Int(1, Type::Index), &Type::Index);
                let a = b.op1("arr.alloc", &[one], Type::arr(t), vec![]);
                b.op("arr.store", &[a, zero, x], &[], in_bounds());
                let r = ctx.result(op, 0);
                ctx.copy_name(r, a);
                ctx.replace_all_uses(r, a);
            }
            "var.get" => {
                let v = b.ctx.operand(op, 0);
                let t = b.ctx.ty(b.ctx.result(op, 0)).clone();
                let x = b.op1("arr.load", &[v, zero], t, in_bounds());
                let r = ctx.result(op, 0);
                ctx.replace_all_uses(r, x);
            }
            _ => {
                let (v, x) = (b.ctx.operand(op, 0), b.ctx.operand(op, 1));
                b.op("arr.store", &[v, zero, x], &[], in_bounds());
            }
        }
        ctx.erase_op(op);
    }
    ops.len() as u64
}

fn create(opts: &PassOptions) -> Result<Box<dyn Pass>, String> {
    opts.check_known("mem2reg", &[])?;
    Ok(Box::new(Mem2Reg))
}

/// Registration record.
pub fn info() -> PassInfo {
    PassInfo {
        name: "mem2reg",
        description: "promote variables whose address does not escape to SSA values (scf.if results, scf.for iter_args)",
        options: &[],
        create,
    }
}

/// `op` rebuilt with `extra` operands and result types appended (its
/// regions moved over); returns the new op's results.
pub(crate) fn rebuild(
    ctx: &mut Context,
    op: OpId,
    extra: &[ValueId],
    extra_types: &[Type],
) -> Vec<ValueId> {
    let mut operands = ctx.operands(op).to_vec();
    operands.extend_from_slice(extra);
    let mut types: Vec<Type> = ctx.results(op).iter().map(|&r| ctx.ty(r).clone()).collect();
    let old_results = ctx.results(op).to_vec();
    types.extend_from_slice(extra_types);
    let regions = ctx.regions(op).to_vec();
    ctx.op_mut(op).regions.clear();
    let attrs = ctx.op(op).attrs.to_vec();
    let (kind, loc) = (ctx.op(op).kind, ctx.loc(op));
    let new = ctx.create_op(kind, &operands, &types, attrs, &regions, loc);
    let block = ctx.op(op).parent.expect("a placed op");
    ctx.insert_op(new, block, Some(op));
    let results = ctx.results(new).to_vec();
    for (i, &r) in old_results.iter().enumerate() {
        ctx.copy_name(r, results[i]);
        ctx.replace_all_uses(r, results[i]);
    }
    ctx.erase_op(op);
    results
}

/// Appends `vals` to the operands of block `b`'s terminator (a yield).
pub(crate) fn append_yield(ctx: &mut Context, b: BlockId, vals: &[ValueId]) {
    if let Some(y) = ctx.terminator(b) {
        let mut ops = ctx.operands(y).to_vec();
        ops.extend_from_slice(vals);
        ctx.set_operands(y, &ops);
    }
}
