//! Whole-program passes over L0 IR. Each module defines one pass; [`registry`]
//! registers them all by name with a description and options.

use ir::pass::PassRegistry;

pub use dialects::alias;
pub mod bounds;
pub mod bounds_version;
pub mod canonicalize;
pub mod cfg;
pub mod code_motion;
pub mod cse;
pub mod dce;
pub mod divrem;
pub mod fp_contract;
pub mod fuse;
pub mod gpu;
pub mod index_split;
pub mod inline;
pub mod jam;
pub mod lower;
pub mod mem2reg;
pub mod memref_to_arr;
pub mod mutate;
pub mod parallel;
pub mod scf_to_cf;
pub mod sibling_fors;
pub mod speculate;
pub mod split_reductions;
pub mod split_structs;
pub mod test_passes;

/// Every pass of L0 (and, when `L0_TEST_PASSES` is set, the test passes
/// of [`test_passes`]).
pub fn registry() -> PassRegistry {
    let mut r = PassRegistry::default();
    register_all(&mut r);
    r
}

/// Registers every pass of L0 into `r` (see [`registry`]); a tool with
/// passes of its own calls this, then registers its own.
pub fn register_all(r: &mut PassRegistry) {
    r.register(canonicalize::info());
    r.register(code_motion::info());
    r.register(cse::info());
    r.register(dce::info());
    r.register(fp_contract::info());
    r.register(fuse::info());
    r.register(inline::info());
    r.register(lower::info());
    r.register(mem2reg::info());
    r.register(scf_to_cf::info());
    r.register(speculate::info());
    r.register(split_reductions::info());
    r.register(split_structs::info());
    if std::env::var_os("L0_TEST_PASSES").is_some() {
        for i in test_passes::infos() {
            r.register(i);
        }
    }
}
