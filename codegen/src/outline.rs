//! What both native backends need to outline an `scf.forall` body into a
//! chunk function `l0p_<op>(env: ptr, c: i64, depth: i64) -> i8`
//! ([`crate::runtime::ChunkFn`]): the values it captures, and the layout
//! of the environment that carries them.
//!
//! The environment is an array of 8-byte slots on the caller's stack: the
//! captured values in [`captures`] order, each flattened ([`crate::abi`])
//! into one slot per part (an `i1` as an `i8`, an `i32`/`f32` in the low
//! bytes of its slot), except constants, which the chunk function
//! re-creates. The chunk function loads them back and uses them as
//! borrowed values: it never frees a captured buffer.

use rustc_hash::FxHashSet;

use ir::spec::Traits;
use ir::{Context, OpId, ValueId};

/// What an `scf.forall` body uses from outside: the values it captures (in
/// order of first use), and the constant-like ops defining other values it
/// uses, which the chunk function re-creates instead of loading them (so
/// the code generator still sees loop steps, divisors and identities as
/// constants).
pub struct Captures {
    pub values: Vec<ValueId>,
    pub constants: Vec<OpId>,
}

/// The captures of `scf.forall` op `op`.
pub fn captures(ctx: &Context, op: OpId) -> Captures {
    let inside = |v: ValueId| ctx.value_block(v).is_some_and(|b| ctx.block_in_op(b, op));
    let mut seen = FxHashSet::default();
    let mut out = Captures {
        values: Vec::new(),
        constants: Vec::new(),
    };
    for o in ctx.walk_nested(op) {
        for &v in ctx.operands(o) {
            if inside(v) || !seen.insert(v) {
                continue;
            }
            match ctx.def_op(v) {
                Some(d)
                    if ctx.has_traits(d, Traits::CONSTANT_LIKE) && ctx.regions(d).is_empty() =>
                {
                    out.constants.push(d)
                }
                _ => out.values.push(v),
            }
        }
    }
    out
}

/// The symbol of the chunk function of `scf.forall` op `op`.
pub fn chunk_name(op: OpId) -> String {
    format!("l0p_forall_{}", op.index())
}
