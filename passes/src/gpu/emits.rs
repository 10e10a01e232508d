//! Reduce emits moved out of `scf.if`s, so that a kernel keeps the
//! accumulator in a register: `scf.if %c { %q = ...; gen.emit %g, %q }`
//! becomes `%v = scf.if %c -> T { %q = ...; scf.yield %q } else { scf.yield
//! id }; gen.emit %g, %v`, with `id` the monoid's exact identity (`x ⊕ id =
//! x` for every `x`, `-0.0` for a float sum), so the fold is unchanged. The
//! `arr` lowering otherwise gives such an emit (whose value the branch
//! computes, so that it cannot be if-converted) a memory cell, which a
//! kernel cannot allocate.

use ir::{Builder, Context, OpId, Type, ValueId};

use dialects::gen::{self, GenKind};

use crate::mem2reg::{append_yield, rebuild};

/// Moves every emit to a reduce of loop `l` that stands under `scf.if`s
/// only (no loop between it and the body) to the top of the body, one
/// `scf.if` at a time, innermost first. Emits keep their order: each one
/// moves to just after its `scf.if`. Returns how many `scf.if` results it
/// added.
pub(super) fn hoist_reduce_emits(ctx: &mut Context, l: OpId) -> u64 {
    let Ok(gens) = gen::try_generators(ctx, l) else {
        return 0;
    };
    let body = gen::body(ctx, l);
    let handles = gen::handles(ctx, l).to_vec();
    let mut n = 0;
    loop {
        let next = handles.iter().zip(&gens).find_map(|(&h, g)| {
            let GenKind::Reduce(m) = g.kind else {
                return None;
            };
            // A running read between the old and the new place would see
            // the fold without the emit.
            if !gen::running::reads_of(ctx, h).is_empty() {
                return None;
            }
            let id = gen::lower::exact_identity(m, &g.elem)?;
            gen::emits_to(ctx, h)
                .into_iter()
                .find(|&e| {
                    ctx.op(e).parent != Some(body)
                        && ctx.operands(e).len() == 2
                        && super::under_ifs_only(ctx, l, e)
                })
                .map(|e| (e, h, id, g.elem.clone()))
        });
        let Some((e, h, id, elem)) = next else {
            return n;
        };
        hoist_one(ctx, e, h, id, &elem);
        n += 1;
    }
}

/// Moves emit `e` (to `h`, directly in a region of an `scf.if`) after that
/// `scf.if`, which yields its value or the identity `id`.
fn hoist_one(ctx: &mut Context, e: OpId, h: ValueId, id: ir::Attribute, elem: &Type) {
    let blk = ctx.op(e).parent.expect("a placed emit");
    let ifop = ctx.block_parent_op(blk).expect("an emit under an scf.if");
    let x = ctx.operand(e, 1);
    if ctx.regions(ifop).len() < 2 {
        let (r, b) = ctx.new_region_with_block(&[]);
        let mut bb = Builder::at_end(ctx, b);
        bb.op("scf.yield", &[], &[], vec![]);
        ctx.op_mut(ifop).regions.push(r);
    }
    let idv = {
        let mut b = Builder::before(ctx, ifop);
        b.constant(id, elem)
    };
    for r in ctx.regions(ifop).to_vec() {
        let b = ctx.region_block(r);
        append_yield(ctx, b, &[if b == blk { x } else { idv }]);
    }
    ctx.erase_op(e);
    let results = rebuild(ctx, ifop, &[], std::slice::from_ref(elem));
    let v = *results.last().expect("the new result");
    let new_if = ctx.def_op(v).expect("a result");
    // The block ends in a terminator, so an op follows the `scf.if`.
    let next = ctx.op(new_if).next.expect("a terminator after the scf.if");
    let mut b = Builder::before(ctx, next);
    gen::emit(&mut b, h, v);
}
