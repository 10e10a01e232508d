//! Reading MLIR's `memref` type: `memref<4x?xf32>`, `memref<f32>`,
//! `memref<8x?xf32, strided<[?, 1], offset: ?>>`.

use pest::iterators::Pair;

use super::{error, internal, Driver, PResult, Rule};
use crate::types::{StridedLayout, Type};

impl<'s> Driver<'s, '_> {
    /// Converts a `memref_type` pair at `loc`. The element type must be a
    /// scalar, and a layout gives one stride per dimension.
    pub(super) fn memref_type(&self, loc: usize, p: Pair<'s, Rule>) -> PResult<Type> {
        let mut parts = p.into_inner();
        let shape_pair = parts.next().ok_or_else(|| internal(loc))?;
        let mut shape = Vec::new();
        for d in shape_pair.into_inner() {
            let at = Self::at(self.pos, &d);
            shape.push(match d.as_str() {
                "?" => None,
                n => Some(
                    n.parse::<u64>()
                        .ok()
                        .filter(|&n| n <= i64::MAX as u64)
                        .ok_or_else(|| error(at, format!("memref size '{n}' is too large")))?,
                ),
            });
        }
        let elem_pair = parts.next().ok_or_else(|| internal(loc))?;
        let elem_at = Self::at(self.pos, &elem_pair);
        let elem = self.ty(elem_pair)?;
        if !elem.is_scalar() {
            return Err(error(
                elem_at,
                format!("memref elements must be integers, floats or 'index', not '{elem}'"),
            ));
        }
        let layout = match parts.next() {
            None => None,
            Some(l) => {
                let at = Self::at(self.pos, &l);
                let mut items = l.into_inner();
                let strides = items.next().ok_or_else(|| internal(loc))?;
                let strides: Vec<Option<i64>> = strides
                    .into_inner()
                    .map(|s| self.layout_value(&s))
                    .collect::<PResult<_>>()?;
                let offset = match items.next() {
                    Some(o) => self.layout_value(&o)?,
                    None => Some(0),
                };
                if strides.len() != shape.len() {
                    return Err(error(
                        at,
                        format!(
                            "expected {} strides (one per dimension), found {}",
                            shape.len(),
                            strides.len()
                        ),
                    ));
                }
                Some(StridedLayout { strides, offset })
            }
        };
        Ok(Type::memref(shape, elem, layout))
    }

    /// A stride or offset: an integer, or `?` (dynamic).
    fn layout_value(&self, p: &Pair<'s, Rule>) -> PResult<Option<i64>> {
        match p.as_str() {
            "?" => Ok(None),
            n => n.parse::<i64>().map(Some).map_err(|_| {
                error(
                    Self::at(self.pos, p),
                    format!("layout value '{n}' does not fit 64 bits"),
                )
            }),
        }
    }
}
