//! Links the `l0-opt` binary as a position-dependent executable on Linux.
//!
//! A PIE binary with LLVM linked in (see `codegen/build.rs`) has about 115,000 relative
//! relocations for the dynamic loader to apply at every start; a position-dependent one has
//! about 2,400. With static LLVM that takes `l0-opt --version` from about 5.6 ms to 3.5 ms of
//! CPU (against 12.5 ms with `libLLVM-14.so`), which matters to the lit suite and the
//! random-program driver, which start `l0-opt` thousands of times. Only the binary changes:
//! tests, and the library that out-of-tree tools link, keep the target's default.

fn main() {
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    if os == "linux" {
        println!("cargo:rustc-link-arg-bins=-no-pie");
    }
}
