//! L0 core IR: the data model, builder, parser, printer, verifier, rewrite
//! driver, pass manager and interpreter framework. This crate never names a
//! dialect: every operation is described by an [`OpSpec`] that the `dialects`
//! crate registers.

pub mod ast;
pub mod attributes;
pub mod build;
pub mod builder;
pub mod clone;
pub mod context;
pub mod custom;
pub mod diag;
pub mod dominance;
pub mod dot;
pub mod fastmath;
pub mod format;
pub mod interp;
pub mod names;
pub mod parser;
pub mod pass;
pub mod poison;
pub mod printer;
pub mod remarks;
pub mod rewrite;
pub mod source;
pub mod spec;
pub mod types;
pub mod verifier;

pub use attributes::Attribute;
pub use builder::Builder;
pub use context::{BlockId, Context, Loc, OpId, RegionId, Source, ValueId};
pub use diag::Diagnostic;
pub use fastmath::FastMath;
pub use interp::{Interp, RtValue, RunError};
pub use source::SourceText;
pub use spec::{Arity, FoldResult, OpSpec, OpState, Registry, Traits};
pub use types::{MemRefType, StridedLayout, Type};
