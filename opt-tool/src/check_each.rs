//! `--check-each`: runs `--run`'s function in the interpreter, with the
//! given `--arg`s, before the pipeline and after every pass, and reports the
//! first pass that changes a result (issue 11, item 5), a bisection no
//! anchor's tooling does for you.
//!
//! Results are compared as printed, floats within a relative 1e-9 (passes
//! may reassociate declared-associative reductions, IR-SPEC §3). A pass may
//! turn a fault into a result (a dead faulting op removed), never a result
//! into a fault; a run that faulted before the pipeline is not compared.

use std::time::Duration;

use ir::diag::Diagnostic;
use ir::interp::{Interp, RtValue};
use ir::pass::{Instrumentation, PassStats};
use ir::{Context, Loc};

/// What one interpreter run gave.
enum Outcome {
    Values(Vec<String>),
    Fault(String),
}

/// Runs `func` on the flattened `--arg` values `leaves` (struct
/// parameters are assembled for the function as it is now, before or after
/// `split-structs`), and compares its results split into fields.
fn outcome(ctx: &Context, func: &str, leaves: &[RtValue]) -> Outcome {
    let shown = |f: crate::Failure| match f {
        crate::Failure::Usage(m) => m,
        _ => "the arguments do not fit".to_string(),
    };
    let args = match crate::run::assemble(ctx, func, leaves) {
        Ok(a) => a,
        Err(f) => return Outcome::Fault(shown(f)),
    };
    match Interp::new(ctx).call(func, &args, Loc::UNKNOWN) {
        Ok(v) => match crate::run::flatten_results(ctx, func, &v) {
            Ok(v) => Outcome::Values(v.iter().map(|x| x.to_string()).collect()),
            Err(f) => Outcome::Fault(shown(f)),
        },
        Err(e) => Outcome::Fault(e.message),
    }
}

/// Equal as printed, floats within a relative 1e-9 (NaN equals NaN).
fn same(a: &[String], b: &[String]) -> bool {
    let tokens = |s: &str| -> Vec<String> {
        s.split(|c: char| c == '[' || c == ']' || c == ',' || c.is_whitespace())
            .filter(|t| !t.is_empty())
            .map(str::to_string)
            .collect()
    };
    a.len() == b.len()
        && a.iter().zip(b).all(|(x, y)| {
            let (tx, ty) = (tokens(x), tokens(y));
            tx.len() == ty.len()
                && tx.iter().zip(&ty).all(|(p, q)| {
                    p == q
                        || match (p.parse::<f64>(), q.parse::<f64>()) {
                            (Ok(u), Ok(v)) => {
                                (u.is_nan() && v.is_nan())
                                    || (u - v).abs() <= 1e-9 * u.abs().max(v.abs()).max(1.0)
                            }
                            _ => false,
                        }
                })
        })
}

/// The instrumentation.
pub struct CheckEach {
    func: String,
    args: Vec<RtValue>,
    reference: Outcome,
    at: Loc,
}

impl CheckEach {
    /// Runs `func` on `ctx` (before the pipeline) for the reference.
    pub fn new(ctx: &Context, func: &str, args: Vec<RtValue>) -> CheckEach {
        CheckEach {
            func: func.to_string(),
            reference: outcome(ctx, func, &args),
            args,
            at: ctx
                .lookup_symbol(func)
                .map(|f| ctx.loc(f))
                .unwrap_or(Loc::UNKNOWN),
        }
    }
}

impl Instrumentation for CheckEach {
    fn after_pass(
        &mut self,
        pass: &str,
        ctx: &Context,
        _: &PassStats,
        _: Duration,
    ) -> Result<(), Diagnostic> {
        let Outcome::Values(before) = &self.reference else {
            return Ok(());
        };
        let f = &self.func;
        let shown = |v: &[String]| v.join(", ");
        match outcome(ctx, f, &self.args) {
            Outcome::Values(after) if same(before, &after) => Ok(()),
            Outcome::Values(after) => Err(Diagnostic::error(
                self.at,
                format!(
                    "--check-each: pass '{pass}' changed the result of '@{f}': {} before the pipeline, {} after this pass",
                    shown(before),
                    shown(&after)
                ),
            )),
            Outcome::Fault(m) => Err(Diagnostic::error(
                self.at,
                format!(
                    "--check-each: pass '{pass}' made '@{f}' fault ({m}); before the pipeline it returned {}",
                    shown(before)
                ),
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::same;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn tolerance() {
        assert!(same(&s(&["[1, 2.5]", "3"]), &s(&["[1, 2.5]", "3"])));
        assert!(same(&s(&["0.30000000000000004"]), &s(&["0.3"])));
        assert!(!same(&s(&["8"]), &s(&["0"])));
        assert!(!same(&s(&["[1, 2]"]), &s(&["[1, 2, 3]"])));
        assert!(same(&s(&["NaN"]), &s(&["NaN"])));
        assert!(!same(&s(&["true"]), &s(&["false"])));
    }
}
