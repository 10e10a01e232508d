//! Deferred faults: the interpreter's oracle for faults that a pass deleted.
//!
//! IR-SPEC §3 lets a pass delete a pure op when its results are unused, and a
//! fault of that op goes with it; code motion may sink a pure op into a branch
//! that does not run. So a pipeline may run to its end where the program before
//! it faults. Whether that was allowed depends on whether the faulting op's value
//! mattered, which this mode decides dynamically, in the way LLVM's `poison`
//! values do (LangRef, "Poison Values"):
//!
//! - a pure op that faults yields *poison* results instead, and the first such
//!   fault is remembered ([`Deferral::first`]);
//! - a pure op with a poison operand yields poison results without running,
//!   except [`PoisonRule::Carries`] ops, which only store their operands (a struct
//!   whose field is poison, a vector filled with poison, an `arith.select`
//!   whose arm not chosen is poison), and ops with regions
//!   (a loop whose body may not read the poison; where it does, the loop's
//!   fault turns into poison results as above);
//! - an op with effects runs with poison operands (a store keeps a poison
//!   element, a call passes a poison argument), and where it cannot (poison as
//!   a branch condition, a loop bound, an index) the run stops with the
//!   remembered fault;
//! - a generator that is fed poison (`gen.emit` of a poison value or key)
//!   makes only its own output poison (a collect holds the poison element),
//!   so a loop's other outputs stay usable where a pass deletes the
//!   poisoned one (the gen dialect's `GenState`);
//! - a store that faults turns its whole buffer into poison instead
//!   ([`PoisonRule::PoisonsBuffer`]): `dce` may erase a store that nothing
//!   reads, and its fault with it;
//! - a result of the outermost call that holds poison anywhere (an element, a
//!   field) stops the run with the remembered fault.
//!
//! A run that ends without stopping shows that every faulting op's value went
//! unused, so deleting those ops was allowed, and its results are the ones a
//! pipeline that deleted them must compute. `l0-opt --defer-faults` turns it on;
//! the random-program driver uses it to check configurations that elided a
//! fault of the reference. Faults that are not of the program (the step limit,
//! the call-depth limit, an op without semantics) are never deferred.

use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};

use smallvec::SmallVec;

use crate::context::OpId;
use crate::interp::{Interp, RtValue, RunError};
use crate::spec::{InterpFn, Traits};

/// The poison marker of [`RtValue::Opaque`].
#[derive(Debug)]
pub struct Poison;

static DEFER_FAULTS: AtomicBool = AtomicBool::new(false);

/// Makes interpreters created from now on defer faults of pure ops
/// (`--defer-faults`; see the module documentation).
pub fn set_defer_faults(on: bool) {
    DEFER_FAULTS.store(on, Ordering::Relaxed);
}

/// Whether new interpreters defer faults.
pub fn defer_faults() -> bool {
    DEFER_FAULTS.load(Ordering::Relaxed)
}

/// The state of a deferring interpreter.
#[derive(Default)]
pub struct Deferral {
    /// The first fault turned into poison.
    pub first: Option<RunError>,
    /// Set by a fault that must not be deferred: it passes up unchanged.
    pub hard: bool,
    /// Per op index: whether the op, with everything nested, is pure.
    pure: Vec<Option<bool>>,
}

impl RtValue {
    /// A poison value.
    pub fn poison() -> RtValue {
        RtValue::Opaque(Rc::new(Poison))
    }
    /// Whether this value is poison itself.
    pub fn is_poison(&self) -> bool {
        matches!(self, RtValue::Opaque(o) if o.is::<Poison>())
    }
    /// Whether poison appears anywhere in this value (elements, fields).
    pub fn holds_poison(&self) -> bool {
        match self {
            RtValue::Opaque(o) => o.is::<Poison>(),
            RtValue::Vec(v) | RtValue::Struct(v) => v.iter().any(RtValue::holds_poison),
            RtValue::Mat(m) => m.data.iter().any(RtValue::holds_poison),
            RtValue::Arr(a) => a.borrow().iter().any(RtValue::holds_poison),
            RtValue::Bool(_) | RtValue::Int(_) | RtValue::F32(_) | RtValue::F64(_) => false,
        }
    }
}

/// How an op treats poison under deferred faults, where it differs from the
/// default: a pure op given poison yields poison without running, a pure op
/// that faults yields poison, and an op with effects that faults stops the run.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub enum PoisonRule {
    #[default]
    Default,
    /// A pure op that only stores its operands (`struct.new`, `vec.fill`): it
    /// runs with poison operands, and its result holds them.
    Carries,
    /// A store into the buffer that is operand 0 (`arr.store`): where it
    /// faults (an index out of bounds, or poison), every element of the buffer
    /// becomes poison and the run goes on, so the fault matters only where the
    /// buffer is read again.
    PoisonsBuffer,
}

impl Interp<'_> {
    /// Executes `op` with `f` under deferred faults (see the module documentation).
    pub(crate) fn step_deferring(
        &mut self,
        op: OpId,
        f: InterpFn,
        operands: &[RtValue],
    ) -> Result<SmallVec<[RtValue; 2]>, RunError> {
        let ctx = self.ctx;
        let spec = ctx.spec(op);
        let pure = !spec.traits.contains(Traits::TERMINATOR) && self.pure(op);
        let poisoned = operands.iter().any(RtValue::is_poison);
        let poison = || ctx.results(op).iter().map(|_| RtValue::poison()).collect();
        // A pure op with regions runs: its body may not need the poison (a
        // loop's initial value of an output nobody reads); if it does, it
        // faults, and the fault turns into poison results below.
        let rule = spec.poison;
        let skip = ctx.regions(op).is_empty() && rule != PoisonRule::Carries;
        if poisoned && pure && skip {
            return Ok(poison());
        }
        match f(self, op, operands) {
            Ok(r) => Ok(r),
            Err(e) => {
                let d = self.deferral.as_mut().expect("a deferring interpreter");
                if d.hard {
                    Err(e)
                } else if let (PoisonRule::PoisonsBuffer, Some(RtValue::Arr(a))) =
                    (rule, operands.first())
                {
                    let Ok(mut elems) = a.try_borrow_mut() else {
                        return Err(e);
                    };
                    elems.fill(RtValue::poison());
                    d.first.get_or_insert(e);
                    Ok(SmallVec::new())
                } else if pure {
                    d.first.get_or_insert(e);
                    Ok(poison())
                } else if poisoned {
                    // Poison reached an effect that needs its value.
                    Err(d.first.clone().unwrap_or(e))
                } else {
                    Err(e)
                }
            }
        }
    }

    /// Marks the fault being returned as one that must not be deferred.
    pub(crate) fn hard_fault(&mut self) {
        if let Some(d) = self.deferral.as_mut() {
            d.hard = true;
        }
    }

    /// The remembered fault where poison reached one of `results` (of the
    /// outermost call).
    pub(crate) fn check_results(&self, results: &[RtValue]) -> Result<(), RunError> {
        match &self.deferral {
            Some(d) if results.iter().any(RtValue::holds_poison) => {
                Err(d.first.clone().unwrap_or_else(|| RunError {
                    loc: crate::context::Loc::UNKNOWN,
                    message: "poison from a deferred fault reached a result".into(),
                }))
            }
            _ => Ok(()),
        }
    }

    /// Whether `op`, with everything nested in it, is pure (cached).
    fn pure(&mut self, op: OpId) -> bool {
        let ctx = self.ctx;
        let d = self.deferral.as_mut().expect("a deferring interpreter");
        let i = op.index();
        if i >= d.pure.len() {
            d.pure.resize(i + 1, None);
        }
        *d.pure[i].get_or_insert_with(|| {
            let hooks = &ctx.registry().effect_free;
            hooks
                .iter()
                .find_map(|h| h(ctx, op))
                .unwrap_or_else(|| crate::rewrite::is_side_effect_free(ctx, op))
        })
    }
}
