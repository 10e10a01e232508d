//! Parsing `--arg` values (IR-SPEC §4) against a function's parameter types:
//! numbers, booleans, inline vectors `[1.0, 2.0]`, nested `[[1, 2], [3, 4]]`
//! for matrices, and `@path.npy`.

use std::path::Path;
use std::rc::Rc;

use ir::interp::{MatValue, RtValue};
use ir::Type;

/// One `--arg` value: parsed, or a mapped `.npy` file decoded only when
/// a run needs its values ([`crate::npy::Mapped`]).
#[derive(Clone)]
pub enum Leaf {
    Value(RtValue),
    Npy(Rc<crate::npy::Mapped>),
}

impl Leaf {
    /// The value (a mapped file is decoded).
    pub fn value(&self) -> Result<RtValue, String> {
        match self {
            Leaf::Value(v) => Ok(v.clone()),
            Leaf::Npy(m) => m.value(),
        }
    }

    /// The argument for compiled code: a mapped file is passed in place
    /// where its bytes have the ABI's layout.
    pub fn arg(&self) -> Result<codegen::Arg, String> {
        match self {
            Leaf::Npy(m) => match m.raw() {
                Some(r) => Ok(codegen::Arg::Raw(r)),
                None => m.value().map(codegen::Arg::Value),
            },
            Leaf::Value(v) => Ok(codegen::Arg::Value(v.clone())),
        }
    }
}

/// Parses one `--arg` text for type `ty`; `@path.npy` is mapped, not read.
pub fn parse_leaf(text: &str, ty: &Type) -> Result<Leaf, String> {
    match text.trim().strip_prefix('@') {
        Some(path) => Ok(Leaf::Npy(Rc::new(crate::npy::open(Path::new(path), ty)?))),
        None => parse_arg(text, ty).map(Leaf::Value),
    }
}

/// Parses one `--arg` text as a value of type `ty`.
pub fn parse_arg(text: &str, ty: &Type) -> Result<RtValue, String> {
    let t = text.trim();
    if let Some(path) = t.strip_prefix('@') {
        return crate::npy::read(Path::new(path), ty);
    }
    match ty {
        Type::Vec(elem) => {
            let items = split_list(t)
                .ok_or_else(|| format!("expected a vector like [1, 2] for '{ty}', got '{t}'"))?;
            let vals = items
                .iter()
                .map(|s| parse_arg(s, elem))
                .collect::<Result<Vec<_>, _>>()?;
            Ok(RtValue::Vec(Rc::new(vals)))
        }
        Type::Mat(elem) => {
            let rows = split_list(t)
                .ok_or_else(|| format!("expected a matrix like [[1, 2], [3, 4]] for '{ty}'"))?;
            let mut data = Vec::new();
            let mut cols = None;
            for r in &rows {
                let items = split_list(r)
                    .ok_or_else(|| format!("expected a matrix row like [1, 2], got '{r}'"))?;
                if *cols.get_or_insert(items.len()) != items.len() {
                    return Err("matrix rows have different lengths".into());
                }
                for s in items {
                    data.push(parse_arg(&s, elem)?);
                }
            }
            Ok(RtValue::Mat(Rc::new(MatValue {
                rows: rows.len(),
                cols: cols.unwrap_or(0),
                data,
            })))
        }
        Type::MemRef(m) => parse_memref(t, ty, m),
        _ => parse_scalar(t, ty),
    }
}

/// A memref argument (lowered functions get its descriptor,
/// [`crate::memref_args`]): nested lists of the rank, `[[1,
/// 2], [3, 4]]` for `memref<2x?xf64>`, a bare scalar for rank 0; sizes must
/// agree with the static ones, and the layout must be the identity.
fn parse_memref(t: &str, ty: &Type, m: &ir::MemRefType) -> Result<RtValue, String> {
    if m.layout.is_some() {
        return Err(format!(
            "arguments of type '{ty}' cannot be given on the command line (only the identity layout)"
        ));
    }
    let mut sizes: Vec<Option<i64>> = vec![None; m.rank()];
    let mut data = Vec::new();
    fn walk(
        t: &str,
        dim: usize,
        m: &ir::MemRefType,
        sizes: &mut [Option<i64>],
        data: &mut Vec<RtValue>,
    ) -> Result<(), String> {
        if dim == m.rank() {
            data.push(parse_scalar(t.trim(), &m.elem)?);
            return Ok(());
        }
        let items = split_list(t.trim())
            .ok_or_else(|| format!("expected a list for dimension {dim}, got '{}'", t.trim()))?;
        let n = items.len() as i64;
        if *sizes[dim].get_or_insert(n) != n {
            return Err(format!("lists of dimension {dim} have different lengths"));
        }
        for s in &items {
            walk(s, dim + 1, m, sizes, data)?;
        }
        Ok(())
    }
    walk(t, 0, m, &mut sizes, &mut data)?;
    // Dimensions after an empty list have their static size, else 0.
    let sizes: Vec<i64> = sizes
        .into_iter()
        .zip(&m.shape)
        .map(|(s, d)| s.or(d.map(|d| d as i64)).unwrap_or(0))
        .collect();
    for (k, (d, n)) in m.shape.iter().zip(&sizes).enumerate() {
        if d.is_some_and(|d| d as i64 != *n) {
            return Err(format!(
                "dimension {k} has {n} elements, but '{ty}' says {}",
                d.unwrap_or(0)
            ));
        }
    }
    Ok(RtValue::Opaque(Rc::new(
        ir::interp::MemRefValue::row_major(data, sizes),
    )))
}

fn parse_scalar(t: &str, ty: &Type) -> Result<RtValue, String> {
    let bad = || format!("cannot parse '{t}' as '{ty}'");
    match ty {
        Type::I1 => match t {
            "true" | "1" => Ok(RtValue::Bool(true)),
            "false" | "0" => Ok(RtValue::Bool(false)),
            _ => Err(bad()),
        },
        Type::I0 => match t {
            "0" => Ok(RtValue::Int(0)),
            _ => Err(bad()),
        },
        Type::I8 => t
            .parse::<i8>()
            .map(|v| RtValue::Int(v as i64))
            .map_err(|_| bad()),
        Type::I16 => t
            .parse::<i16>()
            .map(|v| RtValue::Int(v as i64))
            .map_err(|_| bad()),
        Type::I32 => t
            .parse::<i32>()
            .map(|v| RtValue::Int(v as i64))
            .map_err(|_| bad()),
        Type::I64 | Type::Index => t.parse::<i64>().map(RtValue::Int).map_err(|_| bad()),
        // Another width: a signed value in range, as for `i8`.
        Type::Int(w) => t
            .parse::<i64>()
            .ok()
            .filter(|&v| v >> (*w - 1) == 0 || v >> (*w - 1) == -1)
            .map(RtValue::Int)
            .ok_or_else(bad),
        Type::F32 => t.parse::<f32>().map(RtValue::F32).map_err(|_| bad()),
        // Read as a double, then rounded once to the 16-bit type.
        Type::F16 | Type::BF16 => t
            .parse::<f64>()
            .map(|v| RtValue::F32(ir::types::round_float(v, ty) as f32))
            .map_err(|_| bad()),
        Type::F64 => t.parse::<f64>().map(RtValue::F64).map_err(|_| bad()),
        _ => Err(format!(
            "arguments of type '{ty}' cannot be given on the command line"
        )),
    }
}

/// Splits `[a, b, [c, d]]` into its top-level items; `None` if not bracketed.
fn split_list(t: &str) -> Option<Vec<String>> {
    let inner = t.strip_prefix('[')?.strip_suffix(']')?;
    let mut out = Vec::new();
    let mut depth = 0i32;
    let mut cur = String::new();
    for c in inner.chars() {
        match c {
            '[' => depth += 1,
            ']' => depth -= 1,
            ',' if depth == 0 => {
                out.push(std::mem::take(&mut cur).trim().to_string());
                continue;
            }
            _ => {}
        }
        if depth < 0 {
            return None;
        }
        cur.push(c);
    }
    if depth != 0 {
        return None;
    }
    if !cur.trim().is_empty() || !out.is_empty() {
        out.push(cur.trim().to_string());
    }
    Some(out)
}
