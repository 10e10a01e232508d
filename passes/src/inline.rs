//! `inline`: replaces each `func.call` of a non-recursive function by a copy
//! of the callee's body. Recursion is found as the strongly connected
//! components of the call graph (petgraph's Tarjan SCC): a function in a
//! cycle, or calling itself, is never inlined. Callees are inlined bottom-up
//! so that one pass flattens a whole call tree.

use std::collections::{HashMap, HashSet};

use petgraph::algo::tarjan_scc;
use petgraph::graph::{DiGraph, NodeIndex};

use ir::clone::{clone_block_into, clone_region, ValueMap};
use ir::pass::{Pass, PassInfo, PassOptions, PassStats};
use ir::{Builder, Context, Diagnostic, OpId};

/// The pass.
pub struct Inline;

impl Pass for Inline {
    fn name(&self) -> &'static str {
        "inline"
    }
    fn handles_cfg(&self) -> bool {
        true
    }
    fn run(&mut self, ctx: &mut Context, stats: &mut PassStats) -> Result<(), Diagnostic> {
        stats.add("inlined", inline(ctx));
        Ok(())
    }
}

/// The call graph of the defined functions: an edge per call site, and the
/// `(call, callee)` pairs of each caller.
struct CallGraph {
    graph: DiGraph<OpId, ()>,
    calls: HashMap<OpId, Vec<(OpId, OpId)>>,
}

fn call_graph(ctx: &Context) -> CallGraph {
    let funcs: Vec<OpId> = ctx
        .iter_block(ctx.top)
        .filter(|&op| ctx.is(op, "func.func") && !dialects::func::is_declaration(ctx, op))
        .collect();
    let mut graph: DiGraph<OpId, ()> = DiGraph::new();
    let mut node: HashMap<OpId, NodeIndex> = HashMap::new();
    for &f in &funcs {
        node.insert(f, graph.add_node(f));
    }
    let mut calls: HashMap<OpId, Vec<(OpId, OpId)>> = HashMap::new();
    for &f in &funcs {
        for op in ctx.walk_nested(f) {
            if !ctx.is(op, "func.call") {
                continue;
            }
            let Some(callee) = dialects::func::callee(ctx, op).and_then(|c| ctx.lookup_symbol(c))
            else {
                continue;
            };
            if let Some(&n) = node.get(&callee) {
                graph.add_edge(node[&f], n, ());
                calls.entry(f).or_default().push((op, callee));
            }
        }
    }
    CallGraph { graph, calls }
}

/// The functions in a cycle of `sccs` (or calling themselves).
fn in_cycles(g: &DiGraph<OpId, ()>, sccs: &[Vec<NodeIndex>]) -> HashSet<OpId> {
    let mut recursive = HashSet::new();
    for scc in sccs {
        let self_loop = scc.len() == 1 && g.contains_edge(scc[0], scc[0]);
        if scc.len() > 1 || self_loop {
            recursive.extend(scc.iter().map(|n| g[*n]));
        }
    }
    recursive
}

/// The defined functions that are recursive (in a strongly connected
/// component of the call graph with a cycle): the ones [`inline`] never
/// inlines.
pub fn recursive_functions(ctx: &Context) -> HashSet<OpId> {
    let cg = call_graph(ctx);
    in_cycles(&cg.graph, &tarjan_scc(&cg.graph))
}

/// The defined functions, each before every function it calls (callers
/// first; the functions of a recursive cycle in any order among
/// themselves).
pub fn callers_first(ctx: &Context) -> Vec<OpId> {
    let cg = call_graph(ctx);
    // Tarjan returns SCCs in reverse topological order: callees first.
    tarjan_scc(&cg.graph)
        .into_iter()
        .rev()
        .flatten()
        .map(|n| cg.graph[n])
        .collect()
}

/// Inlines every call to a non-recursive function; returns the number of
/// call sites inlined.
pub fn inline(ctx: &mut Context) -> u64 {
    let CallGraph { graph, calls } = call_graph(ctx);
    // Tarjan returns SCCs in reverse topological order: callees first.
    let sccs = tarjan_scc(&graph);
    let recursive = in_cycles(&graph, &sccs);
    let mut count = 0;
    for scc in sccs {
        for n in scc {
            let f = graph[n];
            for &(call, callee) in calls.get(&f).map(|v| v.as_slice()).unwrap_or(&[]) {
                if recursive.contains(&callee) || !ctx.alive(call) {
                    continue;
                }
                // A body of several blocks splits the call's block, which
                // only a function body may be (MLIR's inliner does the
                // same); elsewhere (a loop body) the call stays.
                let cfg = ctx
                    .regions(callee)
                    .first()
                    .is_some_and(|&r| ctx.region(r).blocks.len() > 1);
                if cfg {
                    // (Not into a GPU kernel, whose body stays one block.)
                    let kernel = ctx.attr(f, "gpu.kernel").is_some();
                    if !kernel && ctx.parent_op(call).is_some_and(|p| ctx.spec(p).multi_block) {
                        inline_cfg_call(ctx, call, callee);
                        count += 1;
                    }
                    continue;
                }
                inline_call(ctx, call, callee);
                count += 1;
            }
        }
    }
    count
}

/// Inlines one call of `callee` at `call`.
pub fn inline_call(ctx: &mut Context, call: OpId, callee: OpId) {
    let body = ctx.op_block(callee, 0);
    let mut map = ValueMap::new();
    for (&a, &v) in ctx
        .block_args(body)
        .to_vec()
        .iter()
        .zip(ctx.operands(call).to_vec().iter())
    {
        map.insert(a, v);
    }
    let mut b = Builder::before(ctx, call);
    b.smart = false;
    let rets = clone_block_into(&mut b, body, &mut map);
    ctx.replace_op(call, &rets);
}

/// Inlines one call of `callee`, whose body has several blocks, at `call`,
/// which stands in a function body: the call's block is split after it,
/// the callee's blocks go between the two halves (its entry block's
/// arguments replaced by the call's operands), the first half branches to
/// them, and each `func.return` branches to the second half with the
/// returned values, which replace the call's results.
pub fn inline_cfg_call(ctx: &mut Context, call: OpId, callee: OpId) {
    let blk = ctx.op(call).parent.expect("call in a block");
    let cont = crate::cfg::split_after(ctx, call);
    let mut map = ValueMap::new();
    let body = ctx.regions(callee)[0];
    let mut b = Builder::at_end(ctx, blk);
    b.smart = false;
    let copy = clone_region(&mut b, body, &mut map);
    let blocks = ctx.region(copy).blocks.clone();
    let entry = blocks[0];
    for (a, v) in ctx
        .block_args(entry)
        .to_vec()
        .into_iter()
        .zip(ctx.operands(call).to_vec())
    {
        ctx.replace_all_uses(a, v);
    }
    ctx.replace_block_args(entry, &[]);
    for &nb in &blocks {
        ctx.remove_block(nb);
        ctx.insert_block_before(cont, nb);
        if let Some(t) = ctx.terminator(nb).filter(|&t| ctx.is(t, "func.return")) {
            let vals = ctx.operands(t).to_vec();
            let loc = ctx.loc(t);
            ctx.erase_op(t);
            crate::cfg::append_br(ctx, nb, cont, &vals, loc);
        }
    }
    let loc = ctx.loc(call);
    ctx.erase_op(call);
    crate::cfg::append_br(ctx, blk, entry, &[], loc);
}

fn create(opts: &PassOptions) -> Result<Box<dyn Pass>, String> {
    opts.check_known("inline", &[])?;
    Ok(Box::new(Inline))
}

/// Registration record.
pub fn info() -> PassInfo {
    PassInfo {
        name: "inline",
        description: "inline calls to non-recursive functions",
        options: &[],
        create,
    }
}
