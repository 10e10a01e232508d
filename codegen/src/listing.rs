//! `--emit=asm --backend=cranelift`: the machine code Cranelift makes for
//! each function, as its disassembler prints it (the `VCode` listing after
//! register allocation, with block labels), so that a researcher can see
//! what a lowering became without a debugger.
//!
//! Every function goes through [`define`], which records the listing of
//! the functions it defines while [`collect`] runs (on the same thread) and
//! costs nothing otherwise.

use std::cell::RefCell;

use cranelift_module::{FuncId, Module, ModuleError};

thread_local! {
    static LISTING: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// `m.define_function(id, cl)`, appending `name`'s disassembly to the
/// listing when one is being collected.
pub(crate) fn define(
    m: &mut dyn Module,
    id: FuncId,
    cl: &mut cranelift_codegen::Context,
    name: &str,
) -> Result<(), Box<ModuleError>> {
    let on = LISTING.with(|l| l.borrow().is_some());
    cl.set_disasm(on);
    let r = m.define_function(id, cl);
    if on && r.is_ok() {
        let text = cl
            .compiled_code()
            .and_then(|c| c.vcode.clone())
            .unwrap_or_default();
        LISTING.with(|l| {
            if let Some(s) = l.borrow_mut().as_mut() {
                s.push_str(&format!("{name}:\n{text}\n"));
            }
        });
    }
    r.map_err(Box::new)
}

/// Runs `f` (which compiles a module) and returns its result with the
/// listing of every function it defined, in the order they were compiled.
pub(crate) fn collect<T>(f: impl FnOnce() -> T) -> (T, String) {
    LISTING.with(|l| *l.borrow_mut() = Some(String::new()));
    let r = f();
    let text = LISTING.with(|l| l.borrow_mut().take()).unwrap_or_default();
    (r, text)
}
