//! Scalars as bytes in device memory: the layout compiled code gives an
//! `arr`'s elements ([`crate::abi::scalar`]), little-endian. A device
//! that runs kernels on interpreter values (the simulation), or a host
//! that hands interpreter values to a device, converts with these.

use ir::interp::RtValue;
use ir::Type;

/// Bytes per element of scalar `t`: `i0`/`i1`/`i8` 1, `i16` 2, `i32` and
/// the floats below 64 bits 4 (a 16-bit float is the `f32` of its value,
/// see `crate::half`), another integer width its container
/// ([`crate::abi::container`]), everything else 8.
pub fn elem_size(t: &Type) -> usize {
    crate::abi::scalar(t).map_or(8, |c| c.bytes() as usize)
}

/// The bytes of `items`, elements of scalar type `t`; an error when one of
/// them is not of that type.
pub fn encode(items: &[RtValue], t: &Type) -> Result<Vec<u8>, String> {
    let n = elem_size(t);
    let mut out = Vec::with_capacity(items.len() * n);
    for x in items {
        match (t, x) {
            (Type::I0, _) => out.push(0),
            (Type::I1, v) => out.push(v.as_bool().ok_or("expected a boolean")? as u8),
            (Type::F16 | Type::BF16 | Type::F32, RtValue::F32(f)) => out.extend(f.to_le_bytes()),
            (Type::F64, RtValue::F64(f)) => out.extend(f.to_le_bytes()),
            (Type::F16 | Type::BF16 | Type::F32 | Type::F64, _) => {
                return Err("expected a float".into())
            }
            // Integers: the low bytes, which for a width below the
            // container keep the sign extension the interpreter keeps.
            (_, v) => out.extend(&v.as_int().ok_or("expected an integer")?.to_le_bytes()[..n]),
        }
    }
    Ok(out)
}

/// The elements of scalar type `t` in `bytes` (a whole number of them).
pub fn decode(bytes: &[u8], t: &Type) -> Vec<RtValue> {
    bytes
        .chunks_exact(elem_size(t))
        .map(|c| decode_one(c, t))
        .collect()
}

/// One element of scalar type `t` from its bytes.
pub fn decode_one(c: &[u8], t: &Type) -> RtValue {
    let mut w = [0u8; 8];
    w[..c.len()].copy_from_slice(c);
    let w = u64::from_le_bytes(w);
    match t {
        Type::I0 => RtValue::Int(0),
        Type::I1 => RtValue::Bool(c[0] != 0),
        Type::F16 | Type::BF16 | Type::F32 => RtValue::F32(f32::from_bits(w as u32)),
        Type::F64 => RtValue::F64(f64::from_bits(w)),
        _ => {
            // Sign-extended from the container's width.
            let bits = 8 * c.len() as u32;
            RtValue::Int(((w << (64 - bits)) as i64) >> (64 - bits))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_every_scalar_layout() {
        let cases = [
            (Type::I1, vec![RtValue::Bool(true), RtValue::Bool(false)]),
            (Type::I8, vec![RtValue::Int(-128), RtValue::Int(127)]),
            (Type::I16, vec![RtValue::Int(-300), RtValue::Int(2)]),
            (Type::I32, vec![RtValue::Int(i32::MIN as i64)]),
            (Type::I64, vec![RtValue::Int(i64::MIN), RtValue::Int(-1)]),
            (Type::Int(5), vec![RtValue::Int(-16), RtValue::Int(15)]),
            (Type::Int(40), vec![RtValue::Int(-(1 << 39))]),
            (Type::F32, vec![RtValue::F32(-1.5)]),
            (Type::F64, vec![RtValue::F64(1e300)]),
        ];
        for (t, xs) in cases {
            let b = encode(&xs, &t).unwrap();
            assert_eq!(b.len(), xs.len() * elem_size(&t), "{t}");
            assert_eq!(decode(&b, &t), xs, "{t}");
        }
        assert_eq!(elem_size(&Type::Int(40)), 8);
        assert!(encode(&[RtValue::Int(1)], &Type::F32).is_err());
    }
}
