//! Bucket fusion (issue 9, item 8; Delite's groupBy-then-reduce rule,
//! Brown et al. 2016, §4): a `#gen.bucket<#gen.collect>` producer whose
//! groups are each only reduced whole, `reduce(op, map(f, groups[j]))`
//! with the operator's identity as init, becomes a
//! `#gen.bucket<#gen.reduce<op>>` that folds `f(x)` into its key's value as
//! each `x` is emitted, and the read of a group becomes a read of its fold:
//! the groups are never built.
//!
//! Conditions: every use of the groups is `vec.len` or one `vec.get`
//! whose group is used only by one reduce loop over its whole length
//! (reading it at the loop's index); the loop's body is pure ops that
//! cannot fault, reading only that element and values defined before the
//! producer. So `f` runs once per element either way (each element is in
//! exactly one group), and a read of a group out of bounds faults as
//! before (the folds have one entry per key, as the groups).
//! Reassociation is the generators' declared freedom: both fold a key's
//! values in emission order.

use ir::clone::{clone_op_into, ValueMap};
use ir::pass::PassStats;
use ir::{Attribute, Builder, Context, OpId, Type, ValueId};

use dialects::gen::{BucketOf, GenKind, Monoid};

use super::loops::{body_ops, emitted_value, exact_emit, view, LoopView};

/// The most ops a reduce body may have to move into the producer.
const MAX_BODY: usize = 12;

/// A group read and the reduce loop that consumes it.
struct Plan {
    /// `vec.get(groups, j)`.
    get: OpId,
    /// The reduce loop over the group.
    reduce: OpId,
    monoid: Monoid,
    /// The reduce body's ops before its emit (the first reads the element).
    body: Vec<OpId>,
    /// The element read `vec.get(group, i)`.
    elem: ValueId,
    /// The value emitted to the reduce.
    value: ValueId,
}

/// Whether `v` is defined before `a` (in its block or around it).
fn before(ctx: &Context, v: ValueId, a: OpId) -> bool {
    match ctx.value(v).def {
        ir::context::ValueDef::Result(d, _) => {
            ctx.op(d).parent.is_some()
                && ir::builder::dominates_point(ctx, d, ctx.op(a).parent.unwrap(), Some(a))
        }
        ir::context::ValueDef::BlockArg(b, _) => {
            let mut cur = ctx.op(a).parent;
            while let Some(blk) = cur {
                if blk == b {
                    return true;
                }
                cur = ctx.block_parent_op(blk).and_then(|o| ctx.op(o).parent);
            }
            false
        }
    }
}

/// Whether `init` is the identity of `m` on its type (bit for bit).
fn is_identity(ctx: &Context, init: ValueId, m: Monoid) -> bool {
    let (Some(c), Some(id)) = (
        dialects::vec::const_attr(ctx, init),
        m.identity(ctx.ty(init)),
    ) else {
        return false;
    };
    match (c.as_float(), id.as_float()) {
        (Some(x), Some(y)) => x.to_bits() == y.to_bits(),
        _ => c.as_int().is_some() && c.as_int() == id.as_int(),
    }
}

/// The plan for the one group read of `groups` (an output of producer
/// `a`), if the module documentation's conditions hold.
fn plan(ctx: &Context, a: &LoopView, groups: ValueId) -> Option<Plan> {
    let mut get = None;
    for u in ctx.uses(groups) {
        match ctx.op_name(u.op) {
            "vec.len" => {}
            "vec.get" if u.index == 0 && get.is_none() => get = Some(u.op),
            _ => return None,
        }
    }
    let get = get?;
    let group = ctx.result(get, 0);
    // The group's uses: the reduce loop's size (through vec.len) and one
    // read at that loop's index.
    let mut reduce = None;
    let mut read = None;
    for u in ctx.uses(group) {
        match ctx.op_name(u.op) {
            "vec.len" => {
                for w in ctx.uses(ctx.result(u.op, 0)) {
                    if !ctx.is(w.op, "gen.loop")
                        || w.index != 0
                        || reduce.is_some_and(|r| r != w.op)
                    {
                        return None;
                    }
                    reduce = Some(w.op);
                }
            }
            "vec.get" if u.index == 0 && read.is_none() => read = Some(u.op),
            _ => return None,
        }
    }
    let (reduce, read) = (reduce?, read?);
    let r = view(ctx, reduce)?;
    let [g] = &r.gens[..] else { return None };
    let GenKind::Reduce(monoid) = GenKind::from_attr(&g.attr).ok()? else {
        return None;
    };
    if g.init.is_some_and(|i| !is_identity(ctx, i, monoid)) {
        return None;
    }
    if ctx.op(read).parent != Some(r.body) || ctx.operand(read, 1) != r.index {
        return None;
    }
    let emit = exact_emit(ctx, r.body, g.handle)?;
    let value = emitted_value(ctx, emit);
    let ops: Vec<OpId> = body_ops(ctx, r.body)
        .into_iter()
        .filter(|&o| o != emit && o != read)
        .collect();
    if ops.len() > MAX_BODY {
        return None;
    }
    let elem = ctx.result(read, 0);
    for &o in &ops {
        if !crate::code_motion::speculatable(ctx, o) {
            return None;
        }
        let inner = |v: ValueId| v == elem || ctx.value_block(v) == Some(r.body);
        if ctx
            .operands(o)
            .iter()
            .any(|&v| !inner(v) && !before(ctx, v, a.op))
        {
            return None;
        }
    }
    if value != elem && ctx.value_block(value) != Some(r.body) && !before(ctx, value, a.op) {
        return None;
    }
    let mut body = vec![read];
    body.extend(ops);
    Some(Plan {
        get,
        reduce,
        monoid,
        body,
        elem,
        value,
    })
}

/// Applies bucket fusion everywhere; returns how many producers changed.
pub fn fuse_bucket_reduces(ctx: &mut Context, stats: &mut PassStats) -> u64 {
    let bucket_collect = |g: &super::loops::Gen| {
        GenKind::from_attr(&g.attr) == Ok(GenKind::Bucket(BucketOf::Collect))
    };
    let any = ctx
        .walk_all()
        .into_iter()
        .filter_map(|o| view(ctx, o))
        .any(|a| a.gens.iter().any(bucket_collect));
    if !any {
        return 0;
    }
    // Fused reduce loops may still carry the dead generators of the loops
    // they absorbed (a map's collect); the pattern wants them gone.
    super::remove_dead_generators(ctx, stats);
    crate::lower::simplify(ctx, stats);
    let mut done = 0;
    for op in ctx.walk_all() {
        if !ctx.alive(op) {
            continue;
        }
        let Some(a) = view(ctx, op) else { continue };
        for (k, g) in a.gens.iter().enumerate() {
            if !bucket_collect(g) {
                continue;
            }
            let Some(p) = plan(ctx, &a, g.results[1]) else {
                continue;
            };
            apply(ctx, &a, k, &p);
            stats.add("fused-bucket", 1);
            done += 1;
            break;
        }
    }
    done
}

/// Rewrites generator `k` of `a` into a bucket-reduce of `f(x)` and the
/// group read into a read of the fold.
fn apply(ctx: &mut Context, a: &LoopView, k: usize, p: &Plan) {
    let g = &a.gens[k];
    let emits: Vec<OpId> = ctx
        .uses(g.handle)
        .iter()
        .map(|u| u.op)
        .filter(|&o| ctx.is(o, dialects::gen::EMIT))
        .collect();
    let key_ty = match ctx.ty(g.handle).as_dialect("gen", "bucket") {
        Some(d) => match d.params.first() {
            Some(ir::types::TypeParam::Type(t)) => t.clone(),
            _ => return,
        },
        None => return,
    };
    let vty = ctx.ty(p.value).clone();
    // f(x) before each emit, the element standing for the group's read.
    for e in emits {
        let x = ctx.operand(e, 2);
        let mut map = ValueMap::default();
        map.insert(p.elem, x);
        let mut b = Builder::before(ctx, e);
        b.smart = false;
        for &o in &p.body[1..] {
            clone_op_into(&mut b, o, &mut map);
        }
        let y = map.get(&p.value).copied().unwrap_or(p.value);
        ctx.set_operand(e, 2, y);
    }
    // The generator, its handle and its second result change kind.
    let mut gens = match ctx.attr(a.op, "gens") {
        Some(Attribute::Array(v)) => v.clone(),
        _ => return,
    };
    gens[k] = GenKind::Bucket(BucketOf::Reduce(p.monoid)).attr();
    ctx.set_attr(a.op, "gens", Attribute::Array(gens));
    let handle_ty =
        dialects::gen::Generator::bucket(BucketOf::Reduce(p.monoid), key_ty, vty.clone())
            .handle_type();
    ctx.set_type(g.handle, handle_ty);
    let folds = g.results[1];
    ctx.set_type(folds, Type::vec(vty.clone()));
    // The group read becomes a read of its fold, at the same place.
    let j = ctx.operand(p.get, 1);
    let mut b = Builder::before(ctx, p.get);
    b.smart = false;
    let s = b.op1("vec.get", &[folds, j], vty, vec![]);
    let r = ctx.result(p.reduce, 0);
    ctx.replace_all_uses(r, s);
    ctx.erase_op(p.reduce);
    // The group's length (the reduce's size) and the group read go too.
    let group = ctx.result(p.get, 0);
    let lens: Vec<OpId> = ctx.uses(group).iter().map(|u| u.op).collect();
    for l in lens {
        ctx.erase_op(l);
    }
    ctx.erase_op(p.get);
}
