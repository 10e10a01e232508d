//! `--allow-unregistered-dialect` (MLIR's flag): ops in the generic form
//! whose name no dialect registered parse as opaque ops instead of failing.
//! An opaque op takes any operands, results, regions and attributes; it has
//! no verifier, folds or semantics, and no traits, so passes treat it as an
//! op with unknown effects (never moved across other effects, never
//! removed); running one is a located error.

use ir::spec::{Arity, OpSpec, Registry};

/// Registers an opaque spec for each op name in `text` (written as
/// `"dialect.op"(` in the generic form) that `r` lacks.
pub fn register_opaque_ops(text: &str, r: &mut Registry) {
    let bytes = text.as_bytes();
    let mut i = 0;
    while let Some(off) = text[i..].find('"') {
        let start = i + off + 1;
        let len = text[start..]
            .bytes()
            .take_while(|&b| b.is_ascii_alphanumeric() || b"_$.-".contains(&b))
            .count();
        let end = start + len;
        i = end.max(start);
        if bytes.get(end) != Some(&b'"') {
            continue;
        }
        i = end + 1;
        let name = &text[start..end];
        let called = text[end + 1..].trim_start().starts_with('(');
        let dotted = name.find('.').is_some_and(|d| d > 0 && d + 1 < name.len());
        if called && dotted && r.kind(name).is_none() {
            // Bounded by the input's size; the registry needs 'static names.
            let name: &'static str = Box::leak(name.to_string().into_boxed_str());
            r.register(
                OpSpec::new(name, "an unregistered op (--allow-unregistered-dialect)")
                    .operands(Arity::AtLeast(0))
                    .results(Arity::AtLeast(0))
                    .regions(Arity::AtLeast(0)),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_generic_op_names_only() {
        let mut r = Registry::new();
        register_opaque_ops(
            r#"%0 = "foo.bar"(%x) : (i64) -> i64  "foo.baz" () {s = "not.an_op"} "nodot"()"#,
            &mut r,
        );
        let names: Vec<_> = r.specs().iter().map(|s| s.name).collect();
        assert_eq!(names, ["foo.bar", "foo.baz"]);
    }
}
