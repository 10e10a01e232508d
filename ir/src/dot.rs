//! `--emit=dot`: the dataflow graph of each function in Graphviz format.
//! Nodes are operations (nested ops are drawn inside a cluster for their
//! parent op); edges go from producer to consumer.

use std::fmt::Write;

use crate::context::{Context, OpId, ValueDef};

fn node(op: OpId) -> String {
    format!("op{}", op.0)
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
        let _ = writeln!(out, "  subgraph cluster_{} {{\n    label=\"@{name}\";", f.0);
        cluster(ctx, f, &mut out, 2);
        out.push_str("  }\n");
    }
    for op in ctx.walk_all() {
        for &v in ctx.operands(op) {
            let src = match ctx.value(v).def {
                ValueDef::Result(d, _) => node(d),
                ValueDef::BlockArg(b, i) => match ctx.block_parent_op(b) {
                    Some(p) => format!("{}:arg{i}", node(p)),
                    None => continue,
                },
            };
            let src = src.split(':').next().unwrap().to_string();
            if src != node(op) {
                let _ = writeln!(out, "  {src} -> {};", node(op));
            }
        }
    }
    out.push_str("}\n");
    out
}

fn cluster(ctx: &Context, parent: OpId, out: &mut String, depth: usize) {
    let pad = "  ".repeat(depth);
    for &r in ctx.regions(parent) {
        for &b in &ctx.region(r).blocks {
            for op in ctx.iter_block(b) {
                if ctx.regions(op).is_empty() {
                    let _ = writeln!(out, "{pad}{} [label=\"{}\"];", node(op), ctx.op_name(op));
                } else {
                    let _ = writeln!(
                        out,
                        "{pad}subgraph cluster_{} {{\n{pad}  label=\"{}\";\n{pad}  {} [label=\"{}\", shape=ellipse];",
                        op.0,
                        ctx.op_name(op),
                        node(op),
                        ctx.op_name(op)
                    );
                    cluster(ctx, op, out, depth + 1);
                    let _ = writeln!(out, "{pad}}}");
                }
            }
        }
    }
}
