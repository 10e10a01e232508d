//! Host ISA construction (see `/work/scratch/cranelift-notes.md` §1).

use cranelift_codegen::isa::OwnedTargetIsa;
use cranelift_codegen::settings::{self, Configurable};

/// The host ISA with `opt_level=speed`. `pic` must be `false` for the JIT
/// (cranelift-jit asserts it) and `true` for object files, so that calls to
/// imported symbols use the GOT and link cleanly into PIE executables.
pub fn native_isa(pic: bool) -> Result<OwnedTargetIsa, String> {
    let mut flags = settings::builder();
    let set = |f: &mut settings::Builder, k: &str, v: &str| {
        f.set(k, v).map_err(|e| format!("setting {k}={v}: {e}"))
    };
    set(&mut flags, "opt_level", "speed")?;
    set(&mut flags, "is_pic", if pic { "true" } else { "false" })?;
    set(&mut flags, "use_colocated_libcalls", "false")?;
    set(&mut flags, "enable_verifier", "true")?;
    set(&mut flags, "preserve_frame_pointers", "true")?;
    let builder =
        cranelift_native::builder().map_err(|e| format!("host ISA not supported: {e}"))?;
    builder
        .finish(settings::Flags::new(flags))
        .map_err(|e| format!("invalid ISA flags: {e}"))
}
