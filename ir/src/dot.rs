//! `--emit=dot`: the dataflow graph of each function in Graphviz format.
//! Nodes are operations and block arguments (nested ops and the arguments
//! of their blocks are drawn inside a cluster for their parent op, a
//! function's arguments inside the function's cluster); edges go from
//! producer to consumer and are labeled with the value they carry.

use std::collections::HashSet;
use std::fmt::Write;

use crate::context::{Context, OpId, ValueDef, ValueId};

fn node(op: OpId) -> String {
    format!("op{}", op.0)
}

fn arg_node(v: ValueId) -> String {
    format!("arg{}", v.0)
}

/// `%name` of `v` (its source name, or its number).
fn value_label(ctx: &Context, v: ValueId) -> String {
    match ctx.value_name(v) {
        Some(n) => format!("%{n}"),
        None => format!("%{}", v.0),
    }
}

/// Escapes `"` and `\` for a Graphviz label.
fn esc(s: &str) -> String {
    s.replace('\\', "\\\\").replace('"', "\\\"")
}

/// Renders the module's dataflow graph.
pub fn to_dot(ctx: &Context) -> String {
    let mut out = String::from("digraph L0 {\n  node [shape=box, fontname=\"monospace\"];\n");
    for f in ctx.iter_block(ctx.top) {
        let name = ctx
            .attr(f, "sym_name")
            .and_then(|a| a.as_str())
            .unwrap_or("?")
            .to_string();
        let _ = writeln!(
            out,
            "  subgraph cluster_{} {{\n    label=\"@{}\";",
            f.0,
            esc(&name)
        );
        cluster(ctx, f, &mut out, 2);
        out.push_str("  }\n");
    }
    let mut seen = HashSet::new();
    for op in ctx.walk_all() {
        for &v in ctx.operands(op) {
            let src = match ctx.value(v).def {
                ValueDef::Result(d, _) => node(d),
                ValueDef::BlockArg(..) => arg_node(v),
            };
            if src != node(op) && seen.insert((src.clone(), op, v)) {
                let _ = writeln!(
                    out,
                    "  {src} -> {} [label=\"{}\"];",
                    node(op),
                    esc(&value_label(ctx, v))
                );
            }
        }
    }
    out.push_str("}\n");
    out
}

/// The label of `op`: its results' names, then its name.
fn op_label(ctx: &Context, op: OpId) -> String {
    let results: Vec<String> = ctx
        .results(op)
        .iter()
        .map(|&r| value_label(ctx, r))
        .collect();
    if results.is_empty() {
        ctx.op_name(op).to_string()
    } else {
        format!("{} = {}", results.join(", "), ctx.op_name(op))
    }
}

fn cluster(ctx: &Context, parent: OpId, out: &mut String, depth: usize) {
    let pad = "  ".repeat(depth);
    for &r in ctx.regions(parent) {
        for &b in &ctx.region(r).blocks {
            for &a in ctx.block_args(b) {
                let _ = writeln!(
                    out,
                    "{pad}{} [label=\"{}: {}\", shape=ellipse];",
                    arg_node(a),
                    esc(&value_label(ctx, a)),
                    esc(&ctx.ty(a).to_string())
                );
            }
            for op in ctx.iter_block(b) {
                let label = esc(&op_label(ctx, op));
                if ctx.regions(op).is_empty() {
                    let _ = writeln!(out, "{pad}{} [label=\"{label}\"];", node(op));
                } else {
                    let _ = writeln!(
                        out,
                        "{pad}subgraph cluster_{} {{\n{pad}  label=\"{}\";\n{pad}  {} [label=\"{label}\", shape=box, style=bold];",
                        op.0,
                        ctx.op_name(op),
                        node(op),
                    );
                    cluster(ctx, op, out, depth + 1);
                    let _ = writeln!(out, "{pad}}}");
                }
            }
        }
    }
}
