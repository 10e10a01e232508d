//! `poly-compose`: merges `q(p(x))`, a `poly.eval` whose operand is another
//! `poly.eval` used nowhere else, into one `poly.eval` of the composed
//! polynomial `q∘p` (so one Horner chain runs instead of two).
//!
//! The composed coefficients are computed exactly in `f64` as polynomials
//! (Horner's rule over polynomials: `r = q_n; r = r*p + q_j`), so the result
//! equals `q(p(x))` up to rounding: the two evaluate the same polynomial in
//! a different order. (A production pass would ask for a fast-math flag.)
//!
//! Refused: an inner `poly.eval` with other uses (its work would be
//! duplicated), composed degrees above the `max-degree` option (default 16),
//! and compositions whose coefficients overflow to infinity.

use ir::pass::{Pass, PassInfo, PassOptions, PassStats};
use ir::{Builder, Context, Diagnostic};

use crate::poly::{coefficients, coefficients_attr, EVAL};

/// The pass.
pub struct Compose {
    /// The largest degree a composed polynomial may have.
    pub max_degree: usize,
}

/// `a * b` as coefficient lists (lowest degree first).
fn mul(a: &[f64], b: &[f64]) -> Vec<f64> {
    if a.is_empty() || b.is_empty() {
        return Vec::new();
    }
    let mut out = vec![0.0; a.len() + b.len() - 1];
    for (i, x) in a.iter().enumerate() {
        for (j, y) in b.iter().enumerate() {
            out[i + j] += x * y;
        }
    }
    out
}

/// The coefficients of `q(p(x))`.
pub fn compose(q: &[f64], p: &[f64]) -> Vec<f64> {
    let mut r: Vec<f64> = Vec::new();
    for &c in q.iter().rev() {
        r = mul(&r, p);
        if r.is_empty() {
            r.push(0.0);
        }
        r[0] += c;
    }
    r
}

impl Pass for Compose {
    fn name(&self) -> &'static str {
        "poly-compose"
    }
    fn run(&mut self, ctx: &mut Context, stats: &mut PassStats) -> Result<(), Diagnostic> {
        // Visit in program order: composing an outer op after its inner one
        // was composed chains through (r(q(p(x))) becomes one op).
        for op in ctx.walk_all() {
            if !ctx.alive(op) || !ctx.is(op, EVAL) {
                continue;
            }
            let Some(inner) = ctx.def_op_named(ctx.operand(op, 0), EVAL) else {
                continue;
            };
            if ctx.uses(ctx.result(inner, 0)).len() != 1 {
                stats.add("refused-shared", 1);
                continue;
            }
            let (Some(q), Some(p)) = (
                coefficients(&ctx.op(op).attrs),
                coefficients(&ctx.op(inner).attrs),
            ) else {
                continue;
            };
            let r = compose(&q, &p);
            if r.len() > self.max_degree + 1 || r.iter().any(|c| !c.is_finite()) {
                stats.add("refused-degree", 1);
                continue;
            }
            let x = ctx.operand(inner, 0);
            let ty = ctx.ty(x).clone();
            let old = ctx.result(op, 0);
            let new = Builder::before(ctx, op).op1(
                EVAL,
                &[x],
                ty.clone(),
                vec![coefficients_attr(&r, &ty)],
            );
            ctx.replace_all_uses(old, new);
            ctx.erase_op(op);
            ctx.erase_op(inner);
            stats.add("composed", 1);
        }
        Ok(())
    }
}

fn create(opts: &PassOptions) -> Result<Box<dyn Pass>, String> {
    opts.check_known("poly-compose", &["max-degree"])?;
    Ok(Box::new(Compose {
        max_degree: opts.get_usize("max-degree", 16)?,
    }))
}

/// Registration record.
pub fn info() -> PassInfo {
    PassInfo {
        name: "poly-compose",
        description: "merge poly.eval(poly.eval(x, p), q) into poly.eval(x, q∘p)",
        options: &[("max-degree", "largest composed degree (default 16)")],
        create,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn composition_matches_nested_evaluation() {
        let (q, p) = ([1.0, 2.0, 3.0], [0.5, -1.0]);
        let r = compose(&q, &p);
        assert_eq!(r.len(), 3);
        for x in [-2.0, 0.0, 0.25, 3.0] {
            let nested = crate::poly::horner(&q, crate::poly::horner(&p, x, false), false);
            assert!((crate::poly::horner(&r, x, false) - nested).abs() < 1e-12);
        }
    }
}
