//! `l0-opt`: the L0 optimizer driver, [`opt_tool::opt_main`] with every
//! dialect and pass of L0 (IR-SPEC §4).

use std::process::ExitCode;

/// mimalloc: the IR allocates millions of small objects, and glibc's
/// per-thread arena (we run on a big-stack thread) grows slowly.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    // No transparent huge pages: mimalloc asks for them, and the kernel then
    // zeroes a whole 2 MiB page on the first touch of each. For l0-opt's
    // allocation pattern (a large IR built once) that zeroing was a third of
    // the run time on a 10^6-op file (benches/cse_vs_mlir.sh: 3.5 s -> 3.1 s,
    // and less peak memory). Harmless where the call is not supported.
    #[cfg(target_os = "linux")]
    // SAFETY: prctl with PR_SET_THP_DISABLE only sets a flag of this process.
    unsafe {
        libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0);
    }
    #[cfg(unix)]
    opt_tool::quiet_on_closed_pipe();
    opt_tool::opt_main(opt_tool::Tool::l0())
}
