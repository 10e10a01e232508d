//! The L0 dialects, one module each: `func`, `arith`, `scf`, `cf` (and the
//! higher levels `vec`/`mat`, `gen`, `arr`, and `gpu`, and `var`, `struct` and `ub`). Each module's `register`
//! declares its op specs; [`registry`] assembles all of them.

use std::rc::Rc;

use ir::spec::Registry;

pub mod alias;
pub mod arith;
pub mod arr;
pub mod builtin;
pub mod cf;
pub mod cf_switch;
pub mod func;
pub mod gen;
pub mod gpu;
pub mod mat;
pub mod mat_blocked;
pub mod memref;
pub mod nested;
pub mod scf;
pub mod structs;
pub mod ub;
pub mod util;
pub mod var;
pub mod vec;
pub mod vec_combine;
pub mod vec_scatter;
pub mod vec_slices;

/// The lowering phases, in the order the `lower` pass applies them.
pub const PHASES: &[&str] = &["gen", "arr"];

/// Registers every dialect of L0 into `r` and sets its lowering phases to
/// [`PHASES`]. A tool that adds dialects of its own (see `opt_tool::opt_main`
/// and `examples/standalone`) calls this first, then its own `register`
/// functions, which may insert phases of their own.
pub fn register_all(r: &mut Registry) {
    builtin::register(r);
    func::register(r);
    arith::register(r);
    scf::register(r);
    cf::register(r);
    cf_switch::register(r);
    vec::register(r);
    vec_slices::register(r);
    vec_scatter::register(r);
    mat::register(r);
    nested::register(r);
    gen::register(r);
    arr::register(r);
    gpu::register(r);
    var::register(r);
    structs::register(r);
    // After arith and scf: it adds its folds to their ops.
    ub::register(r);
    memref::register(r);
    r.phases = PHASES.to_vec();
}

/// A registry with every dialect of L0 (built by [`register_all`]).
pub fn registry() -> Rc<Registry> {
    let mut r = Registry::new();
    register_all(&mut r);
    Rc::new(r)
}
