//! A view of `gen.loop` ops for fusion: generators, handles, inits, emits,
//! and rebuilding a loop with a different generator list.

use smallvec::SmallVec;

use ir::{Attribute, BlockId, Context, OpId, Type, ValueId};

/// The kind of one generator of a loop.
#[derive(Clone, Debug, PartialEq)]
pub struct Gen {
    /// The `gens` entry (`#gen.collect`, `#gen.reduce<add>`, ...).
    pub attr: Attribute,
    /// `collect`, `reduce`, `scan` or `bucket`.
    pub kind: String,
    /// The handle block argument.
    pub handle: ValueId,
    /// The init operand (reduce and scan; `None` also for a reduce or scan
    /// of a loop written without inits, which starts from the identity).
    pub init: Option<ValueId>,
    /// The loop results this generator defines (two for a bucket).
    pub results: SmallVec<[ValueId; 2]>,
}

/// A `gen.loop` seen as size, index, generators and body.
#[derive(Clone, Debug)]
pub struct LoopView {
    pub op: OpId,
    pub size: ValueId,
    pub index: ValueId,
    pub body: BlockId,
    pub gens: Vec<Gen>,
}

/// Whether `op` is a `gen.loop`.
pub fn is_loop(ctx: &Context, op: OpId) -> bool {
    ctx.is(op, "gen.loop")
}

/// Reads a `gen.loop`; `None` if malformed.
pub fn view(ctx: &Context, op: OpId) -> Option<LoopView> {
    if !is_loop(ctx, op) {
        return None;
    }
    let Some(Attribute::Array(gens)) = ctx.attr(op, "gens") else {
        return None;
    };
    let body = ctx.op_block(op, 0);
    let args = ctx.block_args(body);
    if args.len() != gens.len() + 1 {
        return None;
    }
    // Inits are given for every reduce and scan, or for none.
    let has_inits = ctx.operands(op).len() > 1;
    let mut inits = ctx.operands(op)[1..].iter().copied();
    let mut results = ctx.results(op).iter().copied();
    let mut out = Vec::new();
    for (k, g) in gens.iter().enumerate() {
        let d = g.as_dialect()?;
        let init = match d.name.as_str() {
            "reduce" | "scan" if has_inits => Some(inits.next()?),
            _ => None,
        };
        let n = if d.name == "bucket" { 2 } else { 1 };
        let mut rs = SmallVec::new();
        for _ in 0..n {
            rs.push(results.next()?);
        }
        out.push(Gen {
            attr: g.clone(),
            kind: d.name.clone(),
            handle: args[k + 1],
            init,
            results: rs,
        });
    }
    Some(LoopView {
        op,
        size: ctx.operand(op, 0),
        index: args[0],
        body,
        gens: out,
    })
}

/// The `gen.emit` ops that write to a handle.
pub use dialects::gen::emits_to as emits;

/// The single unconditional emit to a handle at the top of a body.
pub use dialects::gen::exact_emit;

/// The emitted value of a collect/reduce/scan emit (its last operand).
pub fn emitted_value(ctx: &Context, emit: OpId) -> ValueId {
    *ctx.operands(emit).last().unwrap()
}

/// Builds a new `gen.loop` before `at` from `size`, the generators `gens`
/// (handles and inits taken from them), moving the ops of `body_ops` blocks in
/// order into the new body; returns the new op. Old handles and the old
/// index values in `old_index` are replaced by the new block arguments.
pub fn build_loop(
    ctx: &mut Context,
    at: OpId,
    size: ValueId,
    gens: &[Gen],
    old_index: &[ValueId],
    body_ops: &[OpId],
) -> OpId {
    let kind = ctx.registry().expect_kind("gen.loop");
    let mut operands = vec![size];
    // A merged loop takes inits for every reduce and scan or for none: one
    // written without inits gets its identities (see [`inits_mergeable`]).
    let any_init = gens.iter().any(|g| g.init.is_some());
    for g in gens {
        match g.init {
            Some(i) => operands.push(i),
            None if any_init && folds(g) => {
                let i = identity_init(ctx, g, at).expect("checked by inits_mergeable");
                operands.push(i);
            }
            None => {}
        }
    }
    let result_types: Vec<Type> = gens
        .iter()
        .flat_map(|g| {
            g.results
                .iter()
                .map(|&r| ctx.ty(r).clone())
                .collect::<Vec<_>>()
        })
        .collect();
    let mut arg_types = vec![Type::Index];
    arg_types.extend(gens.iter().map(|g| ctx.ty(g.handle).clone()));
    let (region, block) = ctx.new_region_with_block(&arg_types);
    let new_args = ctx.block_args(block).to_vec();
    ctx.copy_name(old_index[0], new_args[0]);
    for &i in old_index {
        ctx.replace_all_uses(i, new_args[0]);
    }
    for (g, &a) in gens.iter().zip(&new_args[1..]) {
        ctx.replace_all_uses(g.handle, a);
    }
    for &op in body_ops {
        ctx.move_op(op, block, None);
    }
    let end = ctx.registry().expect_kind("gen.end");
    let loc = ctx.loc(at);
    let end_op = ctx.create_op(end, &[], &[], vec![], &[], loc);
    ctx.insert_op(end_op, block, None);
    let attrs = vec![(
        "gens".to_string(),
        Attribute::Array(gens.iter().map(|g| g.attr.clone()).collect()),
    )];
    let op = ctx.create_op(kind, &operands, &result_types, attrs, &[region], loc);
    let parent = ctx.op(at).parent.unwrap();
    ctx.insert_op(op, parent, Some(at));
    // Results in generator order replace the old generators' results.
    let mut k = 0;
    for g in gens {
        for &r in &g.results {
            let nr = ctx.result(op, k);
            ctx.copy_name(r, nr);
            ctx.replace_all_uses(r, nr);
            k += 1;
        }
    }
    op
}

/// Whether `g` folds its values (a reduce or a scan), so takes an init.
fn folds(g: &Gen) -> bool {
    matches!(g.kind.as_str(), "reduce" | "scan")
}

/// The folded type of reduce or scan `g` (its result, or its vector's
/// element) and its monoid's identity there; `None` when it has no scalar
/// identity (a struct).
fn identity_of(ctx: &Context, g: &Gen) -> Option<(Type, Attribute)> {
    use dialects::gen::GenKind;
    let t = ctx.ty(*g.results.first()?);
    let (m, elem) = match GenKind::from_attr(&g.attr).ok()? {
        GenKind::Reduce(m) => (m, t.clone()),
        GenKind::Scan(m) => (m, t.elem()?.clone()),
        _ => return None,
    };
    let value = m.identity(&elem)?;
    Some((elem, value))
}

/// The identity of reduce or scan `g` ([`identity_of`]) as an
/// `arith.constant` inserted before `at`.
fn identity_init(ctx: &mut Context, g: &Gen, at: OpId) -> Option<ValueId> {
    let (elem, value) = identity_of(ctx, g)?;
    let mut b = ir::Builder::before(ctx, at);
    Some(b.op1(
        "arith.constant",
        &[],
        elem,
        vec![("value".to_string(), value)],
    ))
}

/// Whether loops with generators `a` and `b` can become one loop: their
/// reduces and scans all have inits, or none has, or each one without has
/// a scalar identity to start from (built by [`build_loop`]).
pub fn inits_mergeable(ctx: &Context, a: &[Gen], b: &[Gen]) -> bool {
    let gens = || a.iter().chain(b);
    !gens().any(|g| g.init.is_some())
        || gens()
            .filter(|g| folds(g) && g.init.is_none())
            .all(|g| identity_of(ctx, g).is_some())
}

/// The ops of `body` except its terminator.
pub fn body_ops(ctx: &Context, body: BlockId) -> Vec<OpId> {
    let mut ops = ctx.block_ops(body);
    if let Some(&last) = ops.last() {
        if ctx.is(last, "gen.end") {
            ops.pop();
        }
    }
    ops
}
