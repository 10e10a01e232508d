//! `.npy` input and output for `--arg=@file.npy` and `-o FILE.npy`, with the
//! `npyz` crate. Element types: f64, f32, i64, i32, bool; 1-D files become
//! `vec<T>`, 2-D files `mat<T>` (row-major; a file in Fortran order,
//! `'fortran_order': True`, is read column by column into row order, and
//! `-o` always writes C order).

use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};
use std::rc::Rc;

use ir::interp::{MatValue, RtValue};
use ir::Type;
use npyz::WriterBuilder;

/// A `.npy` file mapped into memory, its header checked against the
/// parameter type `vec<T>` or `mat<T>` (dtype, rank, length). Nothing is
/// decoded until a run needs values ([`Mapped::value`], for the
/// interpreter); compiled code reads the file's bytes in place where their
/// layout is the ABI's ([`Mapped::raw`]), so a large input costs its page
/// faults and no conversion. The file must not be truncated while it is
/// mapped (as for any memory-mapped file).
pub struct Mapped {
    path: PathBuf,
    map: Rc<memmap2::Mmap>,
    header: npyz::NpyHeader,
    /// Offset of the first element in the file.
    offset: usize,
    /// The dtype as the header spells it, e.g. `<f8`.
    descr: String,
    ty: Type,
}

/// Maps `path` for a parameter of type `ty` (`vec<T>`, `mat<T>`, or a
/// `memref` of the identity layout whose rank is the file's and whose
/// static sizes are its sizes).
pub fn open(path: &Path, ty: &Type) -> Result<Mapped, String> {
    let f = File::open(path).map_err(|e| format!("cannot open '{}': {e}", path.display()))?;
    // SAFETY: the map is only read, and the file is not written by this
    // process; see `Mapped` for truncation by another one.
    let map = unsafe { memmap2::Mmap::map(&f) }
        .map_err(|e| format!("cannot read '{}': {e}", path.display()))?;
    let invalid = |e: std::io::Error| format!("'{}' is not a valid .npy file: {e}", path.display());
    let mut cursor = std::io::Cursor::new(&map[..]);
    let header = npyz::NpyHeader::from_reader(&mut cursor).map_err(invalid)?;
    let offset = cursor.position() as usize;
    let npy = npyz::NpyFile::with_header(header.clone(), &map[offset..]);
    let elem = match ty.as_memref() {
        Some(m) if m.layout.is_none() => Some(m.elem.clone()),
        _ => ty.elem().cloned(),
    }
    .ok_or_else(|| format!("a .npy file cannot be passed as '{ty}'"))?;
    let descr = dtype_for(&npy, &elem).map_err(|e| format!("'{}': {e}", path.display()))?;
    match (ty, npy.shape()) {
        (Type::Vec(_), [_]) | (Type::Mat(_), [_, _]) => {}
        (Type::MemRef(m), s) => {
            let fits = s.len() == m.shape.len()
                && s.iter()
                    .zip(&m.shape)
                    .all(|(&n, d)| d.is_none_or(|d| d == n));
            if !fits {
                return Err(format!(
                    "'{}' has shape {s:?}, which '{ty}' does not take",
                    path.display()
                ));
            }
        }
        (Type::Vec(_), s) => {
            return Err(format!(
                "'{}' has shape {s:?}, expected a 1-D array for '{ty}'",
                path.display()
            ))
        }
        (_, s) => {
            return Err(format!(
                "'{}' has shape {s:?}, expected a 2-D array for '{ty}'",
                path.display()
            ))
        }
    }
    // The element count from the shape itself (npyz's `len` multiplies in
    // u64 and wraps): each size and the product must be an `index`.
    let count = npy
        .shape()
        .iter()
        .try_fold(1u128, |acc, &n| {
            (n <= i64::MAX as u64).then_some(())?;
            acc.checked_mul(n as u128)
        })
        .filter(|&c| c <= i64::MAX as u128)
        .ok_or_else(|| {
            format!(
                "'{}' has shape {:?}: a size or the number of elements exceeds 2^63 - 1",
                path.display(),
                npy.shape()
            )
        })?;
    let need = count * (elem_bytes(&descr) as u128);
    if need > (map.len() - offset) as u128 {
        return Err(format!(
            "'{}' is truncated: its header promises {need} bytes of data, it holds {}",
            path.display(),
            map.len() - offset
        ));
    }
    Ok(Mapped {
        path: path.to_path_buf(),
        map: Rc::new(map),
        header,
        offset,
        descr,
        ty: ty.clone(),
    })
}

/// Reads `path` as a value of type `ty` (`vec<T>` or `mat<T>`).
pub fn read(path: &Path, ty: &Type) -> Result<RtValue, String> {
    open(path, ty)?.value()
}

impl Mapped {
    fn npy(&self) -> npyz::NpyFile<&[u8]> {
        npyz::NpyFile::with_header(self.header.clone(), &self.map[self.offset..])
    }

    /// The file's array as a run-time value (decoded element by element; a
    /// Fortran-order matrix is reordered by rows).
    pub fn value(&self) -> Result<RtValue, String> {
        let npy = self.npy();
        let shape = npy.shape().to_vec();
        let fortran = npy.order() == npyz::Order::Fortran;
        let elem = match self.ty.as_memref() {
            Some(m) => m.elem.clone(),
            None => self.ty.elem().cloned().unwrap_or(Type::F64),
        };
        let data = read_elems(npy, &elem).map_err(|e| format!("'{}': {e}", self.path.display()))?;
        if self.ty.as_memref().is_some() {
            let sizes: Vec<i64> = shape.iter().map(|&n| n as i64).collect();
            let data = if fortran {
                c_order_of_fortran(data, &sizes)
            } else {
                data
            };
            let m = ir::interp::MemRefValue::row_major(data, sizes);
            return Ok(RtValue::Opaque(Rc::new(m)));
        }
        Ok(match shape.as_slice() {
            [r, c] => {
                let (rows, cols) = (*r as usize, *c as usize);
                RtValue::Mat(Rc::new(MatValue {
                    rows,
                    cols,
                    data: if fortran {
                        c_order_of_fortran(data, &[rows as i64, cols as i64])
                    } else {
                        data
                    },
                }))
            }
            _ => RtValue::Vec(Rc::new(data)),
        })
    }

    /// The file's data as compiled code reads it, in place: `None` where
    /// the bytes are not already the ABI's layout (a Fortran-order matrix,
    /// a big-endian or 16-bit float dtype, a `bool` byte other than 0 or 1,
    /// data not aligned to its element size), and the caller decodes
    /// [`Self::value`] instead.
    pub fn raw(&self) -> Option<codegen::RawArray> {
        let npy = self.npy();
        let elem = self.ty.elem()?.clone();
        let shape = match *npy.shape() {
            [n] => (n as usize, None),
            [r, c] if npy.order() == npyz::Order::C => {
                ((r * c) as usize, Some((r as usize, c as usize)))
            }
            _ => return None,
        };
        // The file's dtype is the one `-o` writes for `elem`: the ABI's bytes.
        if dtype_of_abi(&elem) != Some(self.descr.as_str()) {
            return None;
        }
        let es = elem_bytes(&self.descr);
        let data = &self.map[self.offset..self.offset + shape.0 * es];
        if !(data.as_ptr() as usize).is_multiple_of(es) {
            return None;
        }
        if elem == Type::I1 && data.iter().any(|&b| b > 1) {
            return None;
        }
        Some(codegen::RawArray {
            elem,
            data: data.as_ptr(),
            len: shape.0,
            shape: shape.1,
            keep: self.map.clone(),
        })
    }
}

/// Bytes per element of a plain dtype such as `<f8` (its trailing number).
fn elem_bytes(descr: &str) -> usize {
    descr[2..].parse().unwrap_or(1)
}

/// The elements of a Fortran-order (column-major) array of shape `sizes`
/// in C order (row-major): C element `(i0, ..., ik)` is Fortran element
/// `i0 + s0 * (i1 + s1 * (...))`.
fn c_order_of_fortran(data: Vec<RtValue>, sizes: &[i64]) -> Vec<RtValue> {
    let rank = sizes.len();
    let total = data.len();
    let mut out = Vec::with_capacity(total);
    let mut idx = vec![0i64; rank];
    for _ in 0..total {
        let mut f = 0i64;
        for d in (0..rank).rev() {
            f = f * sizes[d] + idx[d];
        }
        out.push(data[f as usize].clone());
        // The next C-order index: the last dimension fastest.
        for d in (0..rank).rev() {
            idx[d] += 1;
            if idx[d] < sizes[d] {
                break;
            }
            idx[d] = 0;
        }
    }
    out
}

/// The header's dtype (e.g. `<f8`) where it holds elements of type
/// `elem`; `Err` says why not.
fn dtype_for<R: std::io::Read>(npy: &npyz::NpyFile<R>, elem: &Type) -> Result<String, String> {
    let dt = npy.dtype();
    let ts = match &dt {
        npyz::DType::Plain(ts) => ts.to_string(),
        _ => return Err("structured dtypes are not supported".into()),
    };
    let want = match elem {
        Type::F64 => "f8",
        Type::F32 => "f4",
        Type::F16 => "f2",
        Type::I64 | Type::Index => "i8",
        Type::I32 => "i4",
        Type::I1 => "b1",
        t => return Err(format!("element type '{t}' cannot be read from .npy")),
    };
    if !ts.ends_with(want) {
        return Err(format!(
            "dtype '{ts}' does not match element type '{elem}' (expected '{want}')"
        ));
    }
    Ok(ts)
}

fn read_elems<R: std::io::Read>(
    npy: npyz::NpyFile<R>,
    elem: &Type,
) -> Result<Vec<RtValue>, String> {
    let err = |e: std::io::Error| e.to_string();
    Ok(match elem {
        Type::F64 => npy
            .into_vec::<f64>()
            .map_err(err)?
            .into_iter()
            .map(RtValue::F64)
            .collect(),
        Type::F32 => npy
            .into_vec::<f32>()
            .map_err(err)?
            .into_iter()
            .map(RtValue::F32)
            .collect(),
        Type::F16 => npy
            .into_vec::<npyz::half::f16>()
            .map_err(err)?
            .into_iter()
            .map(|h| RtValue::F32(ir::types::half_from_bits(h.to_bits(), &Type::F16)))
            .collect(),
        Type::I64 | Type::Index => npy
            .into_vec::<i64>()
            .map_err(err)?
            .into_iter()
            .map(RtValue::Int)
            .collect(),
        Type::I32 => npy
            .into_vec::<i32>()
            .map_err(err)?
            .into_iter()
            .map(|x| RtValue::Int(x as i64))
            .collect(),
        _ => npy
            .into_vec::<bool>()
            .map_err(err)?
            .into_iter()
            .map(RtValue::Bool)
            .collect(),
    })
}

/// Writes a vector or matrix result of type `ty` to `path` (via a temporary
/// file renamed into place, so no half-written file is left on error). A
/// result of compiled code still in its buffer ([`codegen::Out::Raw`]) is
/// written from its bytes where they are the file's layout.
pub fn write(path: &Path, v: codegen::Out, ty: &Type) -> Result<(), String> {
    match v {
        codegen::Out::Raw(a) => match dtype_of_abi(&a.elem) {
            Some(descr) => {
                let shape = match a.shape {
                    Some((r, c)) => format!("({r}, {c})"),
                    None => format!("({},)", a.len),
                };
                via_tmp(path, |mut w| {
                    use std::io::Write;
                    w.write_all(&header_v1(descr, &shape))?;
                    w.write_all(a.bytes())?;
                    w.flush()
                })
            }
            None => write_value(path, &a.into_value(), ty),
        },
        codegen::Out::Value(v) => write_value(path, &v, ty),
    }
}

/// The little-endian dtype of elements of `t` whose ABI bytes are also
/// their `.npy` bytes (a 16-bit float is an `f32` in the ABI: not one).
fn dtype_of_abi(t: &Type) -> Option<&'static str> {
    Some(match t {
        Type::F64 => "<f8",
        Type::F32 => "<f4",
        Type::I64 | Type::Index => "<i8",
        Type::I32 => "<i4",
        Type::I1 => "|b1",
        _ => return None,
    })
}

/// A version 1.0 `.npy` header for a C-order array of dtype `descr` and
/// shape `shape` (Python tuple syntax), padded with spaces so that the
/// data starts at a multiple of 64 bytes, as NumPy writes it (and as
/// [`Mapped::raw`] needs it to read the file back in place).
fn header_v1(descr: &str, shape: &str) -> Vec<u8> {
    let mut dict = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape}, }}");
    // magic (6) + version (2) + length (2) + dict + newline
    while (10 + dict.len() + 1) % 64 != 0 {
        dict.push(' ');
    }
    dict.push('\n');
    let mut out = b"\x93NUMPY\x01\x00".to_vec();
    out.extend((dict.len() as u16).to_le_bytes());
    out.extend(dict.as_bytes());
    out
}

/// Runs `body` on a buffered writer of a temporary file next to `path`,
/// then renames it into place; on an error the temporary file is removed.
/// A `path` that exists and is not a regular file (a FIFO, `/dev/null`) is
/// written in place ([`crate::output::write_whole`]).
fn via_tmp(
    path: &Path,
    body: impl FnOnce(BufWriter<File>) -> std::io::Result<()>,
) -> Result<(), String> {
    crate::output::write_whole(
        path,
        |p| {
            let f =
                File::create(p).map_err(|e| format!("cannot create '{}': {e}", path.display()))?;
            body(BufWriter::new(f)).map_err(|e| e.to_string())
        },
        |e| format!("cannot write '{}': {e}", path.display()),
    )
}

/// [`write`] of a run-time value, element by element with `npyz`.
fn write_value(path: &Path, v: &RtValue, ty: &Type) -> Result<(), String> {
    let memref;
    let (shape, data): (Vec<u64>, &[RtValue]) = match v {
        RtValue::Vec(d) => (vec![d.len() as u64], d),
        RtValue::Mat(m) => (vec![m.rows as u64, m.cols as u64], &m.data),
        RtValue::Opaque(o) if o.is::<ir::interp::MemRefValue>() => {
            let m = o
                .downcast_ref::<ir::interp::MemRefValue>()
                .expect("checked by is");
            memref = m
                .elements()
                .map_err(|e| format!("cannot write the result to .npy: {e}"))?;
            let shape = m.sizes.iter().map(|&s| s.max(0) as u64).collect();
            (shape, &memref)
        }
        _ => return Err("-o FILE.npy needs a vector, matrix or memref result".into()),
    };
    let elem = ty.elem().or(ty.as_memref().map(|m| &m.elem));
    if !matches!(
        elem,
        Some(Type::F64 | Type::F32 | Type::F16 | Type::I32 | Type::I1 | Type::I64 | Type::Index)
    ) {
        return Err(format!("cannot write '{ty}' to .npy"));
    }
    via_tmp(path, |w| match elem {
        Some(Type::F64) => write_all(w, &shape, data.iter().map(|x| x.as_f64().unwrap_or(0.0))),
        Some(Type::F32) => write_all(
            w,
            &shape,
            data.iter().map(|x| x.as_f64().unwrap_or(0.0) as f32),
        ),
        Some(Type::F16) => write_all(
            w,
            &shape,
            data.iter().map(|x| {
                let v = match x {
                    RtValue::F32(v) => *v,
                    _ => 0.0,
                };
                npyz::half::f16::from_bits(ir::types::half_to_bits(v, &Type::F16))
            }),
        ),
        Some(Type::I32) => write_all(
            w,
            &shape,
            data.iter().map(|x| x.as_int().unwrap_or(0) as i32),
        ),
        Some(Type::I1) => write_all(w, &shape, data.iter().map(|x| x.as_bool().unwrap_or(false))),
        _ => write_all(w, &shape, data.iter().map(|x| x.as_int().unwrap_or(0))),
    })
}

fn write_all<T: npyz::AutoSerialize, W: std::io::Write>(
    w: W,
    shape: &[u64],
    items: impl Iterator<Item = T>,
) -> std::io::Result<()> {
    let mut writer = npyz::WriteOptions::new()
        .default_dtype()
        .shape(shape)
        .writer(w)
        .begin_nd()?;
    writer.extend(items)?;
    writer.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn save<T: npyz::AutoSerialize + Clone>(
        name: &str,
        shape: &[u64],
        order: npyz::Order,
        data: &[T],
    ) {
        let path = std::env::temp_dir().join(format!("l0-npy-{}-{name}", std::process::id()));
        let w = BufWriter::new(File::create(&path).unwrap());
        let mut wr = npyz::WriteOptions::<T>::new()
            .default_dtype()
            .shape(shape)
            .order(order)
            .writer(w)
            .begin_nd()
            .unwrap();
        wr.extend(data.iter().cloned()).unwrap();
        wr.finish().unwrap();
    }

    fn mapped(name: &str, ty: &str) -> Mapped {
        let path = std::env::temp_dir().join(format!("l0-npy-{}-{name}", std::process::id()));
        let ty = ir::parser::parse_type(ty).unwrap();
        open(&path, &ty).unwrap()
    }

    /// Files in the ABI's layout are read in place: the raw array points
    /// into the mapping and holds the file's elements.
    #[test]
    fn abi_layouts_are_read_in_place() {
        use npyz::Order::{Fortran, C};
        save("f8", &[3], C, &[1.5f64, 2.5, -1.0]);
        save("i4", &[2], C, &[7i32, -8]);
        save("b1", &[2], C, &[true, false]);
        save("m", &[2, 2], C, &[1.0f64, 2.0, 3.0, 4.0]);
        save("mf", &[2, 2], Fortran, &[1.0f64, 2.0, 3.0, 4.0]);
        let r = mapped("f8", "vec<f64>").raw().expect("f8 in place");
        assert_eq!((r.len, r.shape), (3, None));
        // SAFETY: `r.keep` holds the mapping, of 3 aligned f64s.
        let xs = unsafe { std::slice::from_raw_parts(r.data as *const f64, 3) };
        assert_eq!(xs, [1.5, 2.5, -1.0]);
        assert!(mapped("i4", "vec<i32>").raw().is_some());
        assert!(mapped("b1", "vec<i1>").raw().is_some());
        let m = mapped("m", "mat<f64>")
            .raw()
            .expect("C-order matrix in place");
        assert_eq!((m.len, m.shape), (4, Some((2, 2))));
        // A Fortran-order matrix is decoded (reordered by rows) instead.
        let f = mapped("mf", "mat<f64>");
        assert!(f.raw().is_none());
        assert_eq!(f.value().unwrap().to_string(), "[[1, 3], [2, 4]]");
    }
}
