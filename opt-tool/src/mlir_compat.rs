//! MLIR's command-line spellings that `l0-opt` accepts as aliases (issue
//! 11): `--pass-pipeline='builtin.module(...)'` here; `--mlir-timing` and
//! `--mlir-print-ir-after-all` are aliases of `--timing` and
//! `--print-ir-after-all` in the argument parser.

/// The L0 pipeline of an MLIR `--pass-pipeline` text: the outer
/// `builtin.module(...)` (optional) is removed and every nested
/// `func.func(...)` is replaced by its contents, since L0's passes run on
/// the whole module. Pass options `{...}` are kept as they are.
///
/// Errors: unbalanced parentheses, or another op name used as an anchor.
pub fn pipeline(text: &str) -> Result<String, String> {
    let t = text.trim();
    let inner = match t.strip_prefix("builtin.module") {
        Some(rest) => {
            let rest = rest.trim();
            rest.strip_prefix('(')
                .and_then(|r| r.strip_suffix(')'))
                .ok_or_else(|| format!("expected 'builtin.module(...)', got '{t}'"))?
        }
        None => t,
    };
    let mut out = String::new();
    let mut rest = inner;
    while !rest.is_empty() {
        if let Some(after) = rest.strip_prefix("func.func(") {
            let (body, tail) = split_group(after)?;
            out.push_str(&pipeline(body)?);
            rest = tail;
            continue;
        }
        let c = rest.chars().next().unwrap_or(' ');
        if c == '(' || c == ')' {
            return Err(format!(
                "unbalanced or unsupported nesting at '{rest}' (only builtin.module(...) and func.func(...) anchor passes)"
            ));
        }
        if c == '{' {
            // Options: copied through their closing brace.
            let end = rest
                .find('}')
                .ok_or_else(|| format!("unterminated options in '{text}'"))?;
            out.push_str(&rest[..=end]);
            rest = &rest[end + 1..];
            continue;
        }
        out.push(c);
        rest = &rest[c.len_utf8()..];
    }
    Ok(out.trim_matches(',').to_string())
}

/// Splits `body) tail` at the parenthesis that closes an already opened
/// one; returns `(body, tail)`.
fn split_group(s: &str) -> Result<(&str, &str), String> {
    let mut depth = 1;
    for (i, c) in s.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => {
                depth -= 1;
                if depth == 0 {
                    return Ok((&s[..i], &s[i + 1..]));
                }
            }
            _ => {}
        }
    }
    Err(format!("unbalanced parentheses in '{s}'"))
}

#[cfg(test)]
mod tests {
    use super::pipeline;

    #[test]
    fn mlir_pipelines() {
        assert_eq!(
            pipeline("builtin.module(cse,canonicalize)").unwrap(),
            "cse,canonicalize"
        );
        assert_eq!(pipeline("cse").unwrap(), "cse");
        assert_eq!(
            pipeline("builtin.module(func.func(cse,canonicalize{max-iterations=3}),dce)").unwrap(),
            "cse,canonicalize{max-iterations=3},dce"
        );
        assert_eq!(pipeline("builtin.module()").unwrap(), "");
        assert!(pipeline("builtin.module(cse").is_err());
        assert!(pipeline("builtin.module(gpu.module(cse))").is_err());
    }
}
