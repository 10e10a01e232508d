//! Lane pairing of split reductions on Cranelift (`translate::slp`): which
//! loops pair, which do not, and that both compute exactly what the
//! interpreter does.

mod common;
use codegen::translate::slp::paired_loops;
use common::*;

/// A loop of four lanes `s_g += f(a[4i + g], b[4i + g])`; `lane1` is lane
/// 1's text (with `%x1`, `%y1`, `%s1`; it defines `%t1`), the others are the
/// same expression in their own names.
fn four_lanes(name: &str, lane: &str, lane1: &str) -> String {
    let mut body = String::new();
    for g in 0..4 {
        body += &format!("    %j{g} = arith.addi %k, %c{g} : index\n");
        body += &format!("    %x{g} = vec.get %a, %j{g} {{in_bounds}} : vec<f64>\n");
        body += &format!("    %y{g} = vec.get %b, %j{g} {{in_bounds}} : vec<f64>\n");
        let text = if g == 1 { lane1 } else { lane };
        body += &text.replace("#", &g.to_string());
        body += "\n";
    }
    format!(
        r#"
func.func @{name}(%a: vec<f64>, %b: vec<f64>, %n: index, %w: f64) -> (f64, f64, f64, f64) {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %c4 = arith.constant 4 : index
  %z = arith.constant 0.0 : f64
  %m = arith.constant -0.0 : f64
  %r:4 = scf.for %i = %c0 to %n step %c1 iter_args(%s0 = %z, %s1 = %m, %s2 = %m, %s3 = %w) -> (f64, f64, f64, f64) {{
    %k = arith.muli %i, %c4 : index
{body}    scf.yield %t0, %t1, %t2, %t3 : f64, f64, f64, f64
  }}
  func.return %r#0, %r#1, %r#2, %r#3 : f64, f64, f64, f64
}}
"#
    )
}

/// Argument lists: `n` groups of four, `a` and `b` of length `4n`, with
/// signed zeros, infinities and NaNs among ordinary values.
fn cases() -> Vec<Vec<ir::interp::RtValue>> {
    let special = [
        0.5,
        -0.0,
        1e300,
        f64::INFINITY,
        3.25,
        f64::NAN,
        -2.0,
        1e-310,
    ];
    let mut out = Vec::new();
    for n in [0usize, 1, 2, 3, 7] {
        let a: Vec<f64> = (0..4 * n)
            .map(|k| special[k % 8] * (k as f64 + 1.0))
            .collect();
        let b: Vec<f64> = (0..4 * n)
            .map(|k| special[(k * 3 + 1) % 8] - k as f64)
            .collect();
        for w in [1.5, -0.0] {
            out.push(vec![vf(&a), vf(&b), i(n as i64), f(w)]);
        }
    }
    out
}

/// Whether compiling `src` pairs a loop; and the JIT agrees with the
/// interpreter on every case.
fn pairs(src: &str, name: &str) -> bool {
    let ctx = build(src, "");
    let before = paired_loops();
    compile(&ctx);
    let paired = paired_loops() > before;
    same(&ctx, name, &cases());
    paired
}

#[test]
fn matching_lanes_pair_and_compute_the_same() {
    // A dot product per lane, as split-reductions writes it.
    let dot = "    %p# = arith.mulf %x#, %y# : f64\n    %t# = arith.addf %s#, %p# fastmath<reassoc> : f64";
    assert!(pairs(&four_lanes("dot", dot, dot), "dot"));
    // Shared scalars, subtraction, division and negation pair too.
    let mixed = "    %p# = arith.mulf %x#, %w : f64\n    %q# = arith.divf %p#, %y# : f64\n    %u# = arith.negf %q# : f64\n    %t# = arith.subf %s#, %u# : f64";
    assert!(pairs(&four_lanes("mixed", mixed, mixed), "mixed"));
    // Both lanes multiplying by lane 0's element: a broadcast of it.
    let dot = "    %p# = arith.mulf %x#, %y# : f64\n    %t# = arith.addf %s#, %p# fastmath<reassoc> : f64";
    let bcast =
        "    %p1 = arith.mulf %x0, %y1 : f64\n    %t1 = arith.addf %s1, %p1 fastmath<reassoc> : f64";
    let src = four_lanes("bcast", dot, bcast)
        .replace("%p2 = arith.mulf %x2", "%p2 = arith.mulf %x0")
        .replace("%p3 = arith.mulf %x3", "%p3 = arith.mulf %x0");
    assert!(pairs(&src, "bcast"));
}

#[test]
fn lanes_that_differ_stay_scalar() {
    let dot = "    %p# = arith.mulf %x#, %y# : f64\n    %t# = arith.addf %s#, %p# fastmath<reassoc> : f64";
    // Lane 1 subtracts where lane 0 adds.
    let sub = "    %p1 = arith.mulf %x1, %y1 : f64\n    %t1 = arith.subf %s1, %p1 : f64";
    assert!(!pairs(&four_lanes("op", dot, sub), "op"));
    // Lane 1 without lane 0's attribute.
    let plain = "    %p1 = arith.mulf %x1, %y1 : f64\n    %t1 = arith.addf %s1, %p1 : f64";
    assert!(!pairs(&four_lanes("attr", dot, plain), "attr"));
    // Lane 1 loads lane 0's element again, not its neighbour.
    let same_elem = "    %e1 = vec.get %a, %k {in_bounds} : vec<f64>\n    %p1 = arith.mulf %e1, %y1 : f64\n    %t1 = arith.addf %s1, %p1 fastmath<reassoc> : f64";
    assert!(!pairs(&four_lanes("elem", dot, same_elem), "elem"));
    // Lane 1 adds into accumulator 0 and lane 0's product is used twice.
    let cross =
        "    %p1 = arith.mulf %x1, %p0 : f64\n    %t1 = arith.addf %s1, %p1 fastmath<reassoc> : f64";
    assert!(!pairs(&four_lanes("cross", dot, cross), "cross"));
    // A lane with a comparison (not an op that pairs).
    let cmp =
        "    %p1 = arith.maximumf %x1, %y1 : f64\n    %t1 = arith.addf %s1, %p1 fastmath<reassoc> : f64";
    assert!(!pairs(&four_lanes("cmp", dot, cmp), "cmp"));
}

#[test]
fn unproved_loads_stay_scalar() {
    // Without `in_bounds` the loads keep their checks: no pairing, and the
    // faults are the interpreter's.
    let dot = "    %p# = arith.mulf %x#, %y# : f64\n    %t# = arith.addf %s#, %p# fastmath<reassoc> : f64";
    let src = four_lanes("checked", dot, dot).replace(" {in_bounds}", "");
    assert!(!pairs(&src, "checked"));
    let ctx = build(&src, "");
    let short = vec![vf(&[1.0; 5]), vf(&[2.0; 8]), i(2), f(0.0)];
    same(&ctx, "checked", &[short]);
}

#[test]
fn a_lowered_matrix_product_pairs() {
    let src = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../benches/matmul/matmul.ir"
    ))
    .unwrap();
    let ctx = build(&src, "fuse,lower");
    let before = paired_loops();
    compile(&ctx);
    assert!(paired_loops() > before, "the dot products did not pair");
    let mut cases = Vec::new();
    for n in [0usize, 1, 2, 3, 5, 8] {
        let a: Vec<f64> = (0..n * n).map(|k| (k as f64 * 0.37).sin()).collect();
        let b: Vec<f64> = (0..n * n).map(|k| (k as f64 * 0.11).cos() - 0.5).collect();
        cases.push(vec![vf(&a), vf(&b), i(n as i64)]);
    }
    same(&ctx, "main", &cases);
}

#[test]
fn an_accumulator_read_elsewhere_stays_scalar() {
    // Lane 1 also reads accumulator 0: it has no scalar in a paired body.
    let dot = "    %p# = arith.mulf %x#, %y# : f64\n    %t# = arith.addf %s#, %p# fastmath<reassoc> : f64";
    let reads =
        "    %p1 = arith.mulf %x1, %s0 : f64\n    %t1 = arith.addf %s1, %p1 fastmath<reassoc> : f64";
    assert!(!pairs(&four_lanes("acc", dot, reads), "acc"));
}
