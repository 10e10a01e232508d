//! Crash reproducers (`--crash-reproducer=FILE`, MLIR's
//! `--mlir-pass-pipeline-crash-reproducer`): when a pass fails, breaks
//! verification or panics, the IR from before that pass is written to FILE
//! with the pipeline stage that fails on it, runnable as is
//! (`l0-opt FILE --pass=STAGE`), and the diagnostic names the file.

use std::cell::RefCell;
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::time::Duration;

use ir::diag::Diagnostic;
use ir::pass::{Instrumentation, PassStats};
use ir::printer::{print_module, PrintOptions};
use ir::Context;

/// What the instrumentation saw, shared with the driver.
#[derive(Default)]
pub struct State {
    /// The IR before the running pass (generic form).
    before: Option<String>,
    /// How many passes have started.
    started: usize,
    /// The reproducer written, with its stage.
    pub written: Option<(PathBuf, String)>,
}

/// The instrumentation; [`Reproducer::state`] is read by the driver.
pub struct Reproducer {
    path: PathBuf,
    stages: Vec<String>,
    pub state: Rc<RefCell<State>>,
}

impl Reproducer {
    /// A reproducer for `pipeline` (its stages, as given) written to `path`.
    pub fn new(path: PathBuf, pipeline: &str) -> Reproducer {
        Reproducer {
            path,
            stages: stages(pipeline),
            state: Rc::new(RefCell::new(State::default())),
        }
    }

    /// Writes the reproducer of the pass that is running (after a failure
    /// or a panic); returns the note that names it.
    pub fn write(path: &Path, stages: &[String], state: &RefCell<State>) -> Option<String> {
        let mut st = state.borrow_mut();
        let stage = stages.get(st.started.checked_sub(1)?)?.clone();
        let before = st.before.as_deref()?;
        let text = format!(
            "// {me} crash reproducer: the IR before pass '{stage}', which failed on it.\n// Reproduce with: {me} {} --pass='{stage}'\n{before}",
            path.display(),
            me = crate::me()
        );
        if crate::output::write_file(path, text.as_bytes()).is_err() {
            return Some(format!(
                "the crash reproducer could not be written to '{}'",
                path.display()
            ));
        }
        let n = note(path, &stage);
        st.written = Some((path.to_path_buf(), stage));
        Some(n)
    }

    /// The path, stages and state, for writing after a panic.
    pub fn parts(&self) -> (PathBuf, Vec<String>, Rc<RefCell<State>>) {
        (self.path.clone(), self.stages.clone(), self.state.clone())
    }
}

impl Instrumentation for Reproducer {
    fn before_pass(&mut self, _: &str, ctx: &Context) {
        let mut st = self.state.borrow_mut();
        st.before = Some(print_module(
            ctx,
            PrintOptions {
                generic: true,
                ..Default::default()
            },
        ));
        st.started += 1;
    }
    fn after_pass(
        &mut self,
        _: &str,
        _: &Context,
        _: &PassStats,
        _: Duration,
    ) -> Result<(), Diagnostic> {
        Ok(())
    }
    fn on_failure(&mut self, _: &str, _: &Context) {
        Reproducer::write(&self.path, &self.stages, &self.state);
    }
}

/// The note naming a reproducer written to `path` for `stage`.
pub fn note(path: &std::path::Path, stage: &str) -> String {
    format!(
        "a reproducer was written to '{}' ({} {} --pass='{stage}')",
        path.display(),
        crate::me(),
        path.display()
    )
}

/// The stages of a pipeline text: split at commas outside `{...}`.
fn stages(pipeline: &str) -> Vec<String> {
    let mut out = Vec::new();
    let (mut depth, mut cur) = (0, String::new());
    for c in pipeline.chars() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                out.push(std::mem::take(&mut cur).trim().to_string());
                continue;
            }
            _ => {}
        }
        cur.push(c);
    }
    if !cur.trim().is_empty() {
        out.push(cur.trim().to_string());
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn stages() {
        assert_eq!(
            super::stages("fuse,lower{target=gpu,block=32},cse"),
            ["fuse", "lower{target=gpu,block=32}", "cse"]
        );
        assert!(super::stages("").is_empty());
    }
}
