//! `.npy` input and output for `--arg=@file.npy` and `-o FILE.npy`, with the
//! `npyz` crate. Element types: f64, f32, i64, i32, bool; 1-D files become
//! `vec<T>`, 2-D files `mat<T>` (row-major; a file in Fortran order,
//! `'fortran_order': True`, is read column by column into row order, and
//! `-o` always writes C order).

use std::fs::File;
use std::io::{BufReader, BufWriter};
use std::path::Path;
use std::rc::Rc;

use ir::interp::{MatValue, RtValue};
use ir::Type;
use npyz::WriterBuilder;

/// Reads `path` as a value of type `ty` (`vec<T>` or `mat<T>`).
pub fn read(path: &Path, ty: &Type) -> Result<RtValue, String> {
    let f = File::open(path).map_err(|e| format!("cannot open '{}': {e}", path.display()))?;
    let npy = npyz::NpyFile::new(BufReader::new(f))
        .map_err(|e| format!("'{}' is not a valid .npy file: {e}", path.display()))?;
    let shape = npy.shape().to_vec();
    let fortran = npy.order() == npyz::Order::Fortran;
    let elem = ty
        .elem()
        .cloned()
        .ok_or_else(|| format!("a .npy file cannot be passed as '{ty}'"))?;
    let data = read_elems(npy, &elem).map_err(|e| format!("'{}': {e}", path.display()))?;
    match (ty, shape.as_slice()) {
        (Type::Vec(_), [_]) => Ok(RtValue::Vec(Rc::new(data))),
        (Type::Mat(_), [r, c]) => {
            let (rows, cols) = (*r as usize, *c as usize);
            Ok(RtValue::Mat(Rc::new(MatValue {
                rows,
                cols,
                data: if fortran {
                    row_major_of_column_major(data, rows, cols)
                } else {
                    data
                },
            })))
        }
        (Type::Vec(_), s) => Err(format!(
            "'{}' has shape {s:?}, expected a 1-D array for '{ty}'",
            path.display()
        )),
        (_, s) => Err(format!(
            "'{}' has shape {s:?}, expected a 2-D array for '{ty}'",
            path.display()
        )),
    }
}

/// The elements of a `rows x cols` matrix stored column by column (a
/// `.npy` header's `'fortran_order': True`), reordered row by row: element
/// `(i, j)` is at `j * rows + i` in `data`.
fn row_major_of_column_major(data: Vec<RtValue>, rows: usize, cols: usize) -> Vec<RtValue> {
    let mut out = Vec::with_capacity(data.len());
    for i in 0..rows {
        for j in 0..cols {
            out.push(data[j * rows + i].clone());
        }
    }
    out
}

fn read_elems<R: std::io::Read>(
    npy: npyz::NpyFile<R>,
    elem: &Type,
) -> Result<Vec<RtValue>, String> {
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
/// file renamed into place, so no half-written file is left on error).
pub fn write(path: &Path, v: &RtValue, ty: &Type) -> Result<(), String> {
    let (shape, data): (Vec<u64>, &[RtValue]) = match v {
        RtValue::Vec(d) => (vec![d.len() as u64], d),
        RtValue::Mat(m) => (vec![m.rows as u64, m.cols as u64], &m.data),
        _ => return Err("-o FILE.npy needs a vector or matrix result".into()),
    };
    let tmp = path.with_extension("npy.tmp");
    let res = (|| -> Result<(), String> {
        let f =
            File::create(&tmp).map_err(|e| format!("cannot create '{}': {e}", path.display()))?;
        let w = BufWriter::new(f);
        let io = |e: std::io::Error| e.to_string();
        match ty.elem() {
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
            Some(Type::I1) => {
                write_all(w, &shape, data.iter().map(|x| x.as_bool().unwrap_or(false)))
            }
            Some(Type::I64 | Type::Index) => {
                write_all(w, &shape, data.iter().map(|x| x.as_int().unwrap_or(0)))
            }
            _ => return Err(format!("cannot write '{ty}' to .npy")),
        }
        .map_err(io)
    })();
    match res {
        Ok(()) => std::fs::rename(&tmp, path)
            .map_err(|e| format!("cannot write '{}': {e}", path.display())),
        Err(e) => {
            let _ = std::fs::remove_file(&tmp);
            Err(e)
        }
    }
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
