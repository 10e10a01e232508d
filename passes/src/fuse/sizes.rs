//! Which loop sizes `fuse` may treat as equal (issue 9, item 7): the same
//! value, equal constants, values that a dominating size check proves
//! equal (`scf.assert` of `arith.cmpi eq`, as a zipWith's lowering places),
//! and the same pure arithmetic (`addi`, `muli`, ..., `vec.len`,
//! `mat.rows`) of equal operands, commutative operands in either order.
//! Equal sizes are a precondition of horizontal and aligned vertical
//! fusion; assuming more than the program proves would change which
//! iterations run, so anything else counts as different.

use ir::{Context, OpId, ValueId};

/// How deep [`SizeFacts::equal`] follows arithmetic.
const DEPTH: u32 = 4;

/// Size equalities known at one point of the program.
pub struct SizeFacts {
    pairs: Vec<(ValueId, ValueId)>,
}

/// The operands `x`, `y` of an `index` equality test `v`, if it is one.
fn equality(ctx: &Context, v: ValueId) -> Option<(ValueId, ValueId)> {
    let d = ctx.def_op_named(v, "arith.cmpi")?;
    let eq = dialects::arith::predicate_of(ctx, d)? == "eq";
    eq.then(|| (ctx.operand(d, 0), ctx.operand(d, 1)))
}

impl SizeFacts {
    /// The equalities that `scf.assert`s dominating `op` establish: those
    /// earlier in `op`'s block, or earlier in a block around it, up to the
    /// enclosing function. (An assert that faults ends the program, so
    /// after it the equality holds.)
    pub fn before(ctx: &Context, op: OpId) -> SizeFacts {
        let mut pairs = Vec::new();
        let mut cur = op;
        while let Some(b) = ctx.op(cur).parent {
            let mut o = ctx.block(b).first;
            while let Some(x) = o {
                if x == cur {
                    break;
                }
                if ctx.is(x, "scf.assert") {
                    if let Some(p) = equality(ctx, ctx.operand(x, 0)) {
                        pairs.push(p);
                    }
                }
                o = ctx.op(x).next;
            }
            match ctx.block_parent_op(b) {
                Some(p) if !ctx.is(p, "func.func") => cur = p,
                _ => break,
            }
        }
        SizeFacts { pairs }
    }

    /// The values known equal to `v` (itself included).
    fn class(&self, v: ValueId) -> Vec<ValueId> {
        let mut out = vec![v];
        let mut i = 0;
        while i < out.len() {
            let x = out[i];
            for &(p, q) in &self.pairs {
                for (a, b) in [(p, q), (q, p)] {
                    if a == x && !out.contains(&b) {
                        out.push(b);
                    }
                }
            }
            i += 1;
        }
        out
    }

    /// Whether sizes `a` and `b` are provably equal here.
    pub fn equal(&self, ctx: &Context, a: ValueId, b: ValueId) -> bool {
        self.equal_at(ctx, a, b, DEPTH)
    }

    fn equal_at(&self, ctx: &Context, a: ValueId, b: ValueId, depth: u32) -> bool {
        let (ca, cb) = (self.class(a), self.class(b));
        ca.iter().any(|&x| {
            cb.iter()
                .any(|&y| same_value(ctx, x, y) || self.same_op(ctx, x, y, depth))
        })
    }

    /// The same pure op of equal operands.
    fn same_op(&self, ctx: &Context, a: ValueId, b: ValueId, depth: u32) -> bool {
        if depth == 0 {
            return false;
        }
        let (Some(da), Some(db)) = (ctx.def_op(a), ctx.def_op(b)) else {
            return false;
        };
        let name = ctx.op_name(da);
        let commutative = matches!(
            name,
            "arith.addi" | "arith.muli" | "arith.maxi" | "arith.mini"
        );
        let known = commutative
            || matches!(
                name,
                "arith.subi" | "arith.divsi" | "arith.remsi" | "vec.len" | "mat.rows" | "mat.cols"
            );
        if !known || ctx.op_name(db) != name || ctx.results(da).len() != 1 {
            return false;
        }
        let (xa, xb) = (ctx.operands(da), ctx.operands(db));
        if xa.len() != xb.len() {
            return false;
        }
        let eq = |p: ValueId, q: ValueId| self.equal_at(ctx, p, q, depth - 1);
        let straight = xa.iter().zip(xb).all(|(&p, &q)| eq(p, q));
        straight || (commutative && xa.len() == 2 && eq(xa[0], xb[1]) && eq(xa[1], xb[0]))
    }
}

/// The same value, or equal constants.
fn same_value(ctx: &Context, a: ValueId, b: ValueId) -> bool {
    if a == b {
        return true;
    }
    let c = |v| {
        ctx.def_op_named(v, "arith.constant")
            .and_then(|o| ctx.attr(o, "value"))
    };
    matches!((c(a), c(b)), (Some(x), Some(y)) if x == y)
}
