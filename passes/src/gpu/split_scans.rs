//! Scans that the scan kernels cannot compute where they stand (issue 41,
//! item 3): a scan generator fed under a condition (a filter fused with
//! its scan), inside a nested loop, or from several places.
//!
//! The scan kernels ([`super::scan`]) need each iteration to feed a scan
//! exactly once, at the top of the body. Any other scan is a collect of the
//! same emits followed by a scan of the collected values: the scan of a
//! sequence only depends on the values in emission order, which the
//! collect keeps. So the generator becomes `#gen.collect` (its emits,
//! handle and result stay; its init leaves the loop's operands), and after
//! the loop a second loop over the collected vector feeds each element to
//! `#gen.scan<m>` from the same init, at the top of its body:
//! ```text
//! %pos, %s = gen.loop (%n, %init) [#gen.collect, #gen.scan<add>] { ... scf.if %c { emit %h0, %e; emit %h1, %e } }
//! ```
//! becomes
//! ```text
//! %pos, %c = gen.loop (%n) [#gen.collect, #gen.collect] { ... }
//! %s = gen.loop (vec.len %c, %init) [#gen.scan<add>] { emit %h, (vec.get %c, %i) }
//! ```
//! The first loop is a filter kernel (or a flatMap's), the second the scan
//! kernels. The first fault is unchanged: a scan's combination cannot
//! fault, and the emitted values are computed in the first loop as before.
//!
//! Not split: a scan the body reads back (`gen.running`: its running value
//! is needed inside the loop) and a scan never fed (its result is the
//! empty vector; the loop is left as it is).

use ir::{Builder, Context, OpId, ValueId};

use dialects::gen::{self, GenKind, Generator};
use dialects::{gpu, vec};

/// Splits the scans of every `gen.loop` in host function `f` (at any depth,
/// kernels excluded) that the scan kernels cannot compute; returns how
/// many were split.
pub(super) fn split_all(ctx: &mut Context, f: OpId) -> u64 {
    if gpu::is_kernel(ctx, f) {
        return 0;
    }
    let loops: Vec<OpId> = ctx
        .walk_nested(f)
        .into_iter()
        .filter(|&op| ctx.is(op, gen::LOOP))
        .collect();
    let mut n = 0;
    for l in loops {
        while let Some(p) = splittable(ctx, l) {
            split(ctx, l, p);
            n += 1;
        }
    }
    n
}

/// The position of a scan generator of loop `l` to split, if any.
fn splittable(ctx: &Context, l: OpId) -> Option<usize> {
    let gens = gen::try_generators(ctx, l).ok()?;
    let body = gen::body(ctx, l);
    let handles = gen::handles(ctx, l);
    gens.iter().zip(handles).position(|(g, &h)| {
        if !matches!(g.kind, GenKind::Scan(_)) {
            return false;
        }
        let emits = gen::emits_to(ctx, h);
        let only_emits = ctx
            .uses(h)
            .iter()
            .all(|u| u.index == 0 && ctx.is(u.op, gen::EMIT));
        let exact = matches!(emits.as_slice(), [e] if ctx.op(*e).parent == Some(body));
        only_emits && !emits.is_empty() && !exact
    })
}

/// Splits scan generator `p` of loop `l` (see the module documentation).
fn split(ctx: &mut Context, l: OpId, p: usize) {
    let gens = gen::generators(ctx, l);
    let GenKind::Scan(m) = gens[p].kind else {
        unreachable!("checked by splittable")
    };
    let elem = gens[p].elem.clone();
    let init = gen::inits(ctx, l)[p];
    let handle = gen::handles(ctx, l)[p];
    let r = ctx.result(l, gen::result_offsets(&gens)[p]);
    let uses: Vec<(OpId, u32)> = ctx.uses(r).iter().map(|u| (u.op, u.index)).collect();

    // The generator becomes a collect of the same emits.
    let mut kinds: Vec<_> = gens.iter().map(|g| g.kind.attr()).collect();
    kinds[p] = GenKind::Collect.attr();
    ctx.set_attr(l, "gens", ir::Attribute::Array(kinds));
    ctx.set_type(handle, Generator::collect(elem.clone()).handle_type());
    if init.is_some() {
        let at = 1 + gens[..p].iter().filter(|g| g.kind.takes_init()).count();
        let mut operands = ctx.operands(l).to_vec();
        operands.remove(at);
        ctx.set_operands(l, &operands);
    }

    // The scan of the collected values, after the loop.
    let mut b = Builder::after(ctx, l);
    let n = vec::len(&mut b, r);
    let inits: Vec<ValueId> = init.into_iter().collect();
    let s = gen::build_loop(
        &mut b,
        n,
        &inits,
        &[Generator::scan(m, elem)],
        |b, i, hs| {
            let x = vec::get_in_bounds(b, r, i);
            gen::emit(b, hs[0], x);
        },
    )[0];
    for (op, index) in uses {
        ctx.set_operand(op, index as usize, s);
    }
}
