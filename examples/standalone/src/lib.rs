//! A dialect and a pass built outside L0's crates, on its public API only:
//! the template `examples/standalone/README.md` walks through.
//!
//! * [`poly`]: the `poly` dialect, one op `poly.eval` (a polynomial with
//!   constant coefficients evaluated at a float), with a custom form, a
//!   verifier, a fold, a canonicalization pattern, interpreter semantics
//!   and a lowering to `arith` (Horner's rule) in a phase of its own.
//! * [`compose`]: the `poly-compose` pass, which merges
//!   `poly.eval(poly.eval(x, p), q)` into one `poly.eval(x, q∘p)`.

pub mod compose;
pub mod poly;

/// Registers L0's dialects and then `poly` (the `dialects` hook of
/// `opt_tool::Tool`).
pub fn register_dialects(r: &mut ir::spec::Registry) {
    dialects::register_all(r);
    poly::register(r);
}

/// Registers L0's passes and then `poly-compose` (the `passes` hook of
/// `opt_tool::Tool`).
pub fn register_passes(p: &mut ir::pass::PassRegistry) {
    passes::register_all(p);
    p.register(compose::info());
}
