//! Object files: the same functions as the JIT, each exported as
//! `int8_t l0_<name>(params..., void *out)`, plus the data symbol
//! `l0_fault_messages`: one NUL-terminated `file:line:col: template` per
//! fault id, then an empty string. Link with `runtime/l0rt.c` and `-lm`.

use cranelift_module::{default_libcall_names, DataDescription, Linkage, Module};
use cranelift_object::{ObjectBuilder, ObjectModule};

use ir::{Context, Diagnostic};

use crate::isa;
use crate::module::{self, Wrapper};

fn err(e: impl std::fmt::Display) -> Diagnostic {
    ir::pass::pass_error(format!("Cranelift: {e}"))
}

/// Compiles `ctx` (at the `arr` + `scf` level) into a relocatable object
/// file for the host (position independent).
pub fn emit_object(ctx: &Context) -> Result<Vec<u8>, Diagnostic> {
    let isa = isa::native_isa(true).map_err(ir::pass::pass_error)?;
    let builder = ObjectBuilder::new(isa, "l0", default_libcall_names()).map_err(err)?;
    let mut om = ObjectModule::new(builder);
    let c = module::compile(&mut om, ctx)?;
    module::first_unsupported(ctx, &c.unsupported)?;
    for fi in &c.funcs.list {
        module::define_wrapper(&mut om, fi, Wrapper::Export)?;
    }
    let bytes = crate::faults::message_table(ctx, &c.faults);
    let mut desc = DataDescription::new();
    desc.define(bytes.into_boxed_slice());
    let id = om
        .declare_data("l0_fault_messages", Linkage::Export, false, false)
        .map_err(err)?;
    om.define_data(id, &desc).map_err(err)?;
    om.finish().emit().map_err(err)
}

/// The machine code Cranelift makes for `ctx` (at the `arr` + `scf` level),
/// as text: each function's disassembly after register allocation
/// ([`crate::listing`]), the functions of parallel loop bodies included,
/// for `l0-opt --emit=asm --backend=cranelift`. Errors as for
/// [`emit_object`].
pub fn emit_asm(ctx: &Context) -> Result<String, Diagnostic> {
    let (r, text) = crate::listing::collect(|| emit_object(ctx));
    r.map(|_| text)
}
