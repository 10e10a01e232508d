//! `--run` of a function with memref parameters or results after `lower`
//! (issue 45): `memref_to_arr` turns each memref of the signature into its
//! descriptor ([`passes::memref_to_arr::descriptor_types`]: the allocation
//! as an `arr<T>`, the offset, a size and a stride per dimension). The
//! command line still speaks of the memrefs the user wrote: their `--arg`
//! values are parsed against the signature before the pipeline, handed to
//! the lowered function as descriptors, and its descriptor results are put
//! back together as memrefs (views of one allocation share it, so a result
//! that is a window of an argument prints that window).

use std::rc::Rc;

use ir::interp::{MemRefValue, RtValue};
use ir::Type;

use crate::args::Leaf;

/// The signature of the function to run before the pipeline ran, where it
/// had memrefs (otherwise `None`: nothing to adapt).
#[derive(Clone, Debug)]
pub struct MemRefEntry {
    pub params: Vec<Type>,
    pub results: Vec<Type>,
}

impl MemRefEntry {
    /// The memref signature `(params, results)`, or `None` without memrefs.
    pub fn of(sig: Option<(Vec<Type>, Vec<Type>)>) -> Option<MemRefEntry> {
        let (params, results) = sig?;
        let has = params
            .iter()
            .chain(&results)
            .any(|t| t.as_memref().is_some());
        has.then_some(MemRefEntry { params, results })
    }

    /// Whether the function now has the descriptor signature of this one
    /// (`lower` ran), rather than the memref one.
    pub fn lowered(&self, now: &(Vec<Type>, Vec<Type>)) -> bool {
        let flat = |ts: &[Type]| -> Vec<Type> {
            ts.iter()
                .flat_map(passes::memref_to_arr::descriptor_types)
                .collect()
        };
        now.0 == flat(&self.params) && now.1 == flat(&self.results)
    }

    /// The arguments of the lowered function: each memref argument as its
    /// descriptor's values, the rest as they are.
    pub fn arguments(&self, leaves: Vec<Leaf>) -> Result<Vec<Leaf>, String> {
        let mut out = Vec::with_capacity(leaves.len());
        for (k, (l, t)) in leaves.into_iter().zip(&self.params).enumerate() {
            if t.as_memref().is_none() {
                out.push(l);
                continue;
            }
            let v = l.value()?;
            let m = match &v {
                RtValue::Opaque(o) => o.downcast_ref::<MemRefValue>(),
                _ => None,
            }
            .ok_or_else(|| format!("--arg #{}: expected a value of type '{t}'", k + 1))?;
            out.push(Leaf::Value(RtValue::Arr(m.buf.clone())));
            out.push(Leaf::Value(RtValue::Int(m.offset)));
            for &x in m.sizes.iter().chain(&m.strides) {
                out.push(Leaf::Value(RtValue::Int(x)));
            }
        }
        Ok(out)
    }

    /// The memref results put back together from the lowered function's
    /// descriptor results `vs`.
    pub fn results(&self, vs: Vec<RtValue>) -> Result<Vec<RtValue>, String> {
        let mut it = vs.into_iter();
        let mut out = Vec::with_capacity(self.results.len());
        let bad = || "a memref result came back without its descriptor".to_string();
        for t in &self.results {
            let Some(m) = t.as_memref() else {
                out.push(it.next().ok_or_else(bad)?);
                continue;
            };
            let buf = match it.next() {
                Some(RtValue::Arr(b)) => b,
                _ => return Err(bad()),
            };
            let mut int = || match it.next() {
                Some(RtValue::Int(x)) => Ok(x),
                _ => Err(bad()),
            };
            let offset = int()?;
            let rank = m.shape.len();
            let sizes = (0..rank).map(|_| int()).collect::<Result<Vec<_>, _>>()?;
            let strides = (0..rank).map(|_| int()).collect::<Result<Vec<_>, _>>()?;
            out.push(RtValue::Opaque(Rc::new(MemRefValue {
                buf,
                offset,
                sizes,
                strides,
            })));
        }
        Ok(out)
    }
}
