//! The L0 dialects, one module each: `func`, `arith`, `scf` (and the
//! higher levels `vec`/`mat`, `gen`, `arr`, and `gpu`). Each module's `register`
//! declares its op specs; [`registry`] assembles all of them.

use std::rc::Rc;

use ir::spec::Registry;

pub mod arith;
pub mod arr;
pub mod func;
pub mod gen;
pub mod gpu;
pub mod mat;
pub mod scf;
pub mod util;
pub mod vec;

/// The lowering phases, in the order the `lower` pass applies them.
pub const PHASES: &[&str] = &["gen", "arr"];

/// A registry with every dialect of L0.
pub fn registry() -> Rc<Registry> {
    let mut r = Registry::new();
    func::register(&mut r);
    arith::register(&mut r);
    scf::register(&mut r);
    vec::register(&mut r);
    mat::register(&mut r);
    gen::register(&mut r);
    arr::register(&mut r);
    gpu::register(&mut r);
    r.phases = PHASES.to_vec();
    Rc::new(r)
}
