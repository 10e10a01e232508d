//! Optimization remarks, as LLVM's `-Rpass-missed` and MLIR's remark
//! engine: a pass that declines a transformation says where and why, so
//! that a researcher never has to guess why a loop stayed.
//!
//! Remarks are off unless the driver enables them per pass name
//! ([`enable`]; `l0-opt --remarks=fuse,gpu`). A pass asks [`enabled`] before
//! working out its reasons (which may cost an analysis), then calls
//! [`emit`]. The driver collects them with [`take`] and prints each as a
//! located diagnostic of severity `remark`. The engine is per thread: a
//! pass pipeline runs on one thread.

use std::cell::RefCell;

use crate::context::Loc;
use crate::diag::{Diagnostic, Severity};

/// One remark: the pass that made it, where, and what.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Remark {
    /// The pass (or remark group) name, e.g. `fuse`.
    pub pass: &'static str,
    pub loc: Loc,
    pub message: String,
    /// Further locations and what they are.
    pub notes: Vec<(Loc, String)>,
}

impl Remark {
    /// The remark as a diagnostic of severity `remark`, its message
    /// prefixed with `[pass]`.
    pub fn to_diagnostic(&self) -> Diagnostic {
        let mut d = Diagnostic::error(self.loc, format!("[{}] {}", self.pass, self.message));
        d.severity = Severity::Remark;
        for (loc, m) in &self.notes {
            d = d.with_note(*loc, m.clone());
        }
        d
    }
}

thread_local! {
    static ENABLED: RefCell<Vec<String>> = const { RefCell::new(Vec::new()) };
    static LOG: RefCell<Vec<Remark>> = const { RefCell::new(Vec::new()) };
}

/// Enables remarks of the passes named in `passes` (replacing the set;
/// empty turns remarks off) and drops remarks not yet taken.
pub fn enable(passes: &[String]) {
    ENABLED.with(|e| *e.borrow_mut() = passes.to_vec());
    LOG.with(|l| l.borrow_mut().clear());
}

/// Whether remarks of `pass` are wanted.
pub fn enabled(pass: &str) -> bool {
    ENABLED.with(|e| e.borrow().iter().any(|p| p == pass))
}

/// Records a remark of `pass` at `loc` if remarks of `pass` are enabled.
/// A remark equal to one already recorded (a pass run twice) is dropped.
pub fn emit(pass: &'static str, loc: Loc, message: impl Into<String>) {
    record(pass, loc, message.into(), vec![]);
}

/// [`emit`] with a note at a second location (`note_loc`, `note`).
pub fn emit_with_note(
    pass: &'static str,
    loc: Loc,
    message: impl Into<String>,
    note_loc: Loc,
    note: impl Into<String>,
) {
    record(pass, loc, message.into(), vec![(note_loc, note.into())]);
}

fn record(pass: &'static str, loc: Loc, message: String, notes: Vec<(Loc, String)>) {
    if !enabled(pass) {
        return;
    }
    let r = Remark {
        pass,
        loc,
        message,
        notes,
    };
    LOG.with(|l| {
        let mut l = l.borrow_mut();
        if !l.contains(&r) {
            l.push(r);
        }
    });
}

/// The remarks recorded so far, in order; the log is emptied.
pub fn take() -> Vec<Remark> {
    LOG.with(|l| std::mem::take(&mut *l.borrow_mut()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_enabled_passes_are_recorded_once() {
        enable(&["fuse".to_string()]);
        emit("fuse", Loc::UNKNOWN, "not fused: sizes differ");
        emit("fuse", Loc::UNKNOWN, "not fused: sizes differ");
        emit("gpu", Loc::UNKNOWN, "left on the host");
        let got = take();
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].message, "not fused: sizes differ");
        assert!(take().is_empty());
        enable(&[]);
        assert!(!enabled("fuse"));
    }
}
