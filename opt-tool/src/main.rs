//! `l0-opt`: the L0 optimizer driver, [`opt_tool::opt_main`] with every
//! dialect and pass of L0 (IR-SPEC §4).

use std::process::ExitCode;

/// mimalloc: the IR allocates millions of small objects, and glibc's
/// per-thread arena (we run on a big-stack thread) grows slowly.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    opt_tool::opt_main(opt_tool::Tool::l0())
}
