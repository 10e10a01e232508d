use super::*;
use crate::ast::AstItemKind as K;

fn module(src: &str) -> AstModule {
    match parse_module(src) {
        Ok(m) => m,
        Err(e) => panic!("parse failed at {}: {}\n{src}", e.offset, e.message),
    }
}

fn one_op(src: &str) -> AstOp {
    let mut m = module(src);
    assert_eq!(m.ops.len(), 1, "{:#?}", m.ops);
    m.ops.remove(0)
}

fn generic(op: &AstOp) -> &AstGeneric {
    match &op.body {
        AstOpBody::Generic(g) => g,
        b => panic!("not generic: {b:?}"),
    }
}

fn items(op: &AstOp) -> &[AstItem] {
    match &op.body {
        AstOpBody::Custom(i) => i,
        b => panic!("not custom: {b:?}"),
    }
}

fn kinds(items: &[AstItem]) -> Vec<K> {
    items.iter().map(|i| i.kind.clone()).collect()
}

fn err(src: &str) -> SyntaxError {
    match parse_module(src) {
        Ok(m) => panic!("expected an error for {src:?}, got {m:#?}"),
        Err(e) => e,
    }
}

fn attr(src: &str) -> Attribute {
    parse_attribute(src).unwrap_or_else(|e| panic!("{src}: {} at {}", e.message, e.offset))
}

fn ty(src: &str) -> Type {
    parse_type(src).unwrap_or_else(|e| panic!("{src}: {} at {}", e.message, e.offset))
}

fn val(name: &str) -> K {
    K::Value(AstValueRef {
        name: name.into(),
        index: None,
        loc: 0,
    })
}

/// Item kinds with all offsets zeroed (for structural comparison).
fn strip(items: &[AstItem]) -> Vec<K> {
    items
        .iter()
        .map(|i| match &i.kind {
            K::Value(v) => K::Value(AstValueRef {
                loc: 0,
                ..v.clone()
            }),
            K::Paren(v) => K::Paren(
                strip(v)
                    .into_iter()
                    .map(|kind| AstItem { kind, loc: 0 })
                    .collect(),
            ),
            K::Square(v) => K::Square(
                strip(v)
                    .into_iter()
                    .map(|kind| AstItem { kind, loc: 0 })
                    .collect(),
            ),
            k => k.clone(),
        })
        .collect()
}

fn p(v: Vec<K>) -> K {
    K::Paren(v.into_iter().map(|kind| AstItem { kind, loc: 0 }).collect())
}

// ------------------------------------------------------------ generic form

#[test]
fn generic_op() {
    let src = "%a = \"arith.addf\"(%x, %y) : (f64, f64) -> f64";
    let op = one_op(src);
    assert_eq!(op.name, "arith.addf");
    assert_eq!(op.loc, 0);
    assert_eq!(
        op.results,
        vec![AstResult {
            name: "a".into(),
            count: 1,
            loc: 0
        }]
    );
    let g = generic(&op);
    assert_eq!(g.operands.len(), 2);
    assert_eq!(g.operands[1].name, "y");
    assert_eq!(g.operands[1].loc, src.find("%y").unwrap());
    assert_eq!(g.operand_types, vec![Type::F64, Type::F64]);
    assert_eq!(g.result_types, vec![Type::F64]);
    assert_eq!(g.type_loc, src.find(':').unwrap());
    assert!(g.regions.is_empty() && g.attrs.is_empty());
}

#[test]
fn results_and_uses() {
    let op = one_op("%a, %b = \"t.two\"() : () -> (i32, i64)");
    assert_eq!(op.results.len(), 2);
    assert_eq!(op.results[1].name, "b");
    assert_eq!(op.results[1].loc, 4);
    assert_eq!(generic(&op).result_types, vec![Type::I32, Type::I64]);

    let op = one_op("%r:2 = \"t.two\"(%a#1, %x.y$-z) : (f64, f64) -> (f64, f64)");
    assert_eq!(op.results[0].count, 2);
    let g = generic(&op);
    assert_eq!(g.operands[0].index, Some(1));
    assert_eq!(g.operands[0].name, "a");
    assert_eq!(g.operands[1].name, "x.y$-z");

    let op = one_op("\"func.return\"() : () -> ()");
    assert!(op.results.is_empty());
    assert!(generic(&op).result_types.is_empty());
}

#[test]
fn generic_regions_and_attrs() {
    let src = r#"
%xs, %s = "gen.loop"(%n) ({
^bb0(%i: index, %g0: !gen.collect<f64>, %g1: !gen.reduce<f64>):
  %v = "vec.get"(%a, %i) : (vec<f64>, index) -> f64
  "gen.emit"(%g0, %v) : (!gen.collect<f64>, f64) -> ()
  "gen.end"() : () -> ()
}, {
  "t.a"() : () -> ()
^next:
  "t.b"() : () -> ()
}) {gens = [#gen.collect, #gen.reduce<add>], flag} : (index) -> (vec<f64>, f64)
"#;
    let op = one_op(src);
    assert_eq!(op.loc, src.find("%xs").unwrap());
    let g = generic(&op);
    assert_eq!(g.regions.len(), 2);
    let r0 = &g.regions[0];
    assert_eq!(r0.loc, src.find("({").unwrap() + 1);
    assert_eq!(r0.blocks.len(), 1);
    let b = &r0.blocks[0];
    assert_eq!(b.label.as_deref(), Some("bb0"));
    assert_eq!(b.loc, src.find("^bb0").unwrap());
    assert_eq!(b.args.len(), 3);
    assert_eq!(b.args[0].ty, Type::Index);
    assert_eq!(
        b.args[1].ty,
        Type::dialect("gen", "collect", vec![TypeParam::Type(Type::F64)])
    );
    assert_eq!(b.args[2].loc, src.find("%g1").unwrap());
    assert_eq!(b.ops.len(), 3);
    assert_eq!(b.ops[0].loc, src.find("%v =").unwrap());
    assert_eq!(b.ops[2].name, "gen.end");
    let r1 = &g.regions[1];
    assert_eq!(r1.blocks.len(), 2);
    assert_eq!(r1.blocks[0].label, None);
    assert_eq!(r1.blocks[0].loc, src.find("\"t.a\"").unwrap());
    assert_eq!(r1.blocks[1].label.as_deref(), Some("next"));
    assert!(r1.blocks[1].args.is_empty());
    assert_eq!(g.attrs.len(), 2);
    assert_eq!(g.attrs[0].name, "gens");
    assert_eq!(g.attrs[0].loc, src.find("gens").unwrap());
    assert_eq!(
        g.attrs[0].value,
        Attribute::Array(vec![
            Attribute::dialect("gen", "collect", vec![]),
            Attribute::dialect("gen", "reduce", vec![Attribute::Keyword("add".into())]),
        ])
    );
    assert_eq!(g.attrs[1].value, Attribute::Unit);
    assert_eq!(g.result_types, vec![Type::vec(Type::F64), Type::F64]);
}

#[test]
fn empty_generic_region_has_no_blocks() {
    let op = one_op("\"t.r\"() ({}) : () -> ()");
    assert_eq!(generic(&op).regions[0].blocks.len(), 0);
}

#[test]
fn module_wrapper_and_comments() {
    let src = "// header\nmodule { // c\n  \"t.a\"() : () -> () // trailing\n}\n// end";
    let m = module(src);
    assert_eq!(m.loc, src.find("module").unwrap());
    assert_eq!(m.ops.len(), 1);
    assert_eq!(m.ops[0].loc, src.find("\"t.a\"").unwrap());

    let m = module("");
    assert!(m.ops.is_empty() && m.loc == 0);
    let m = module("  // only a comment");
    assert!(m.ops.is_empty());
    let m = module("module {}");
    assert!(m.ops.is_empty());
}

#[test]
fn nested_module_is_builtin_module() {
    let m = module("module { module { \"t.a\"() : () -> () } }");
    assert_eq!(m.ops[0].name, "builtin.module");
    match &items(&m.ops[0])[0].kind {
        K::Region(r) => assert_eq!(r.blocks[0].ops[0].name, "t.a"),
        k => panic!("{k:?}"),
    }
}

#[test]
fn spec_example() {
    let src = r#"
// comment to end of line
module {
  func.func @sumsq(%x: vec<f64>) -> f64 {
    %sq = "vec.map"(%x) ({
    ^bb0(%e: f64):
      %m = "arith.mulf"(%e, %e) : (f64, f64) -> f64
      "vec.yield"(%m) : (f64) -> ()
    }) : (vec<f64>) -> vec<f64>
    %s = "vec.sum"(%sq) : (vec<f64>) -> f64
    "func.return"(%s) : (f64) -> ()
  }
}
"#;
    let m = module(src);
    assert_eq!(m.ops.len(), 1);
    let f = &m.ops[0];
    assert_eq!(f.name, "func.func");
    assert_eq!(f.loc, src.find("func.func").unwrap());
    let it = items(f);
    assert_eq!(it[0].kind, K::Symbol("sumsq".into()));
    match &it[1].kind {
        K::Paren(args) => {
            assert_eq!(
                strip(args),
                vec![val("x"), K::Punct(":"), K::Type(Type::vec(Type::F64))]
            );
        }
        k => panic!("{k:?}"),
    }
    assert_eq!(it[2].kind, K::Punct("->"));
    assert_eq!(it[3].kind, K::Type(Type::F64));
    let K::Region(r) = &it[4].kind else { panic!() };
    assert_eq!(r.blocks.len(), 1);
    assert_eq!(r.blocks[0].ops.len(), 3);
    assert_eq!(it.len(), 5);
    let map = &r.blocks[0].ops[0];
    assert_eq!(generic(map).regions[0].blocks[0].ops.len(), 2);
}

// ------------------------------------------------------------ custom forms

#[test]
fn custom_ops_terminate_at_next_op() {
    let src = "func.func @f(%a: f64, %b: f64) -> f64 {\n  %c = arith.addf %a, %b : f64\n  %d = \"arith.mulf\"(%c, %c) : (f64, f64) -> f64\n  arith.negf %d : f64\n  func.return %d : f64\n}\nfunc.func @g() {\n  func.return\n}";
    let m = module(src);
    assert_eq!(m.ops.len(), 2);
    let K::Region(r) = &items(&m.ops[0]).last().unwrap().kind else {
        panic!()
    };
    let ops = &r.blocks[0].ops;
    assert_eq!(ops.len(), 4);
    assert_eq!(ops[0].name, "arith.addf");
    assert_eq!(ops[0].loc, src.find("%c =").unwrap());
    assert_eq!(
        strip(items(&ops[0])),
        vec![
            val("a"),
            K::Punct(","),
            val("b"),
            K::Punct(":"),
            K::Type(Type::F64)
        ]
    );
    assert_eq!(ops[1].name, "arith.mulf");
    assert_eq!(ops[2].name, "arith.negf");
    assert!(ops[2].results.is_empty());
    assert_eq!(ops[3].name, "func.return");
    let K::Region(r) = &items(&m.ops[1]).last().unwrap().kind else {
        panic!()
    };
    assert_eq!(r.blocks[0].ops[0].name, "func.return");
    assert!(items(&r.blocks[0].ops[0]).is_empty());
}

#[test]
fn custom_scf_for_and_if() {
    let src = "%r = scf.for %i = %lb to %ub step %s iter_args(%acc = %z) -> (f64) {\n  %c = arith.cmpf olt, %acc, %acc : f64\n  %y = scf.if %c -> (f64) {\n    scf.yield %acc : f64\n  } else {\n    scf.yield %z : f64\n  }\n  scf.yield %y : f64\n}\ngen.end";
    let m = module(src);
    assert_eq!(m.ops.len(), 2);
    assert_eq!(m.ops[1].name, "gen.end");
    let it = items(&m.ops[0]);
    let head = strip(&it[..it.len() - 1]);
    assert_eq!(
        head,
        vec![
            val("i"),
            K::Punct("="),
            val("lb"),
            K::Keyword("to".into()),
            val("ub"),
            K::Keyword("step".into()),
            val("s"),
            K::Keyword("iter_args".into()),
            p(vec![val("acc"), K::Punct("="), val("z")]),
            K::Punct("->"),
            p(vec![K::Type(Type::F64)]),
        ]
    );
    let K::Region(body) = &it.last().unwrap().kind else {
        panic!()
    };
    let ops = &body.blocks[0].ops;
    assert_eq!(ops.len(), 3);
    assert_eq!(
        strip(items(&ops[0])),
        vec![
            K::Keyword("olt".into()),
            K::Punct(","),
            val("acc"),
            K::Punct(","),
            val("acc"),
            K::Punct(":"),
            K::Type(Type::F64)
        ]
    );
    let if_items = items(&ops[1]);
    assert_eq!(if_items.len(), 6);
    assert!(matches!(&if_items[3].kind, K::Region(_)));
    assert_eq!(if_items[4].kind, K::Keyword("else".into()));
    let K::Region(els) = &if_items[5].kind else {
        panic!()
    };
    assert_eq!(els.loc, src.find("else {").unwrap() + 5);
    assert_eq!(els.blocks[0].ops[0].name, "scf.yield");
}

#[test]
fn custom_item_lexing() {
    let src = "t.op %a#2 i1 i32 i64 index f32 f64 vec<vec<f64>> mat<i32> arr<f64> !gen.bucket<index, #gen.reduce<add>> \
               to true -7 0x1F 1.5 -2.0e-3 1e9 \"s\\n\" @sym #gen.reduce<add> : , = -> * < > [1, 2] (x) {a = 1, b} {} f64x";
    let op = one_op(src);
    let it = items(&op);
    let k = kinds(it);
    assert_eq!(
        k[0],
        K::Value(AstValueRef {
            name: "a".into(),
            index: Some(2),
            loc: 5
        })
    );
    assert_eq!(
        &k[1..7],
        &[
            K::Type(Type::I1),
            K::Type(Type::I32),
            K::Type(Type::I64),
            K::Type(Type::Index),
            K::Type(Type::F32),
            K::Type(Type::F64)
        ]
    );
    assert_eq!(k[7], K::Type(Type::vec(Type::vec(Type::F64))));
    assert_eq!(k[8], K::Type(Type::mat(Type::I32)));
    assert_eq!(k[9], K::Type(Type::arr(Type::F64)));
    assert_eq!(
        k[10],
        K::Type(Type::dialect(
            "gen",
            "bucket",
            vec![
                TypeParam::Type(Type::Index),
                TypeParam::Attr(Attribute::dialect(
                    "gen",
                    "reduce",
                    vec![Attribute::Keyword("add".into())]
                ))
            ]
        ))
    );
    assert_eq!(k[11], K::Keyword("to".into()));
    assert_eq!(k[12], K::Keyword("true".into()));
    assert_eq!(k[13], K::Int(-7));
    assert_eq!(k[14], K::Int(31));
    assert_eq!(k[15], K::Float(1.5));
    assert_eq!(k[16], K::Float(-2.0e-3));
    assert_eq!(k[17], K::Float(1e9));
    assert_eq!(k[18], K::Str("s\n".into()));
    assert_eq!(k[19], K::Symbol("sym".into()));
    assert_eq!(
        k[20],
        K::Attr(Attribute::dialect(
            "gen",
            "reduce",
            vec![Attribute::Keyword("add".into())]
        ))
    );
    assert_eq!(
        &k[21..28],
        &[
            K::Punct(":"),
            K::Punct(","),
            K::Punct("="),
            K::Punct("->"),
            K::Punct("*"),
            K::Punct("<"),
            K::Punct(">")
        ]
    );
    let K::Square(sq) = &k[28] else {
        panic!("{:?}", k[28])
    };
    assert_eq!(kinds(sq), vec![K::Int(1), K::Punct(","), K::Int(2)]);
    assert_eq!(it[28].loc, src.find("[1").unwrap());
    assert_eq!(strip(&it[29..30])[0], p(vec![K::Keyword("x".into())]));
    let K::AttrDict(d) = &k[30] else {
        panic!("{:?}", k[30])
    };
    assert_eq!(d.len(), 2);
    assert_eq!(d[0].value, Attribute::Int(1, Type::I64));
    assert_eq!(d[1].value, Attribute::Unit);
    assert_eq!(k[31], K::AttrDict(vec![]));
    assert_eq!(k[32], K::Keyword("f64x".into()));
    assert_eq!(k.len(), 33);
    // Every item's offset is its first character.
    assert_eq!(it[13].loc, src.find("-7").unwrap());
    assert_eq!(it[20].loc, src.find("#gen.reduce<add> :").unwrap());
}

#[test]
fn function_type_items_are_not_one_type() {
    let op = one_op("t.call @f(%a) : (f64) -> f64");
    assert_eq!(
        strip(&items(&op)[2..]),
        vec![
            K::Punct(":"),
            p(vec![K::Type(Type::F64)]),
            K::Punct("->"),
            K::Type(Type::F64)
        ]
    );
}

#[test]
fn custom_op_ends_at_generic_op_and_result_lists() {
    let m = module(
        "t.a %x\n\"t.b\"() : () -> ()\nt.c\n%p, %q:2 = t.d\nt.e %v, %w\n%z = \"t.f\"() : () -> i1",
    );
    let names: Vec<_> = m.ops.iter().map(|o| o.name.as_str()).collect();
    assert_eq!(names, ["t.a", "t.b", "t.c", "t.d", "t.e", "t.f"]);
    assert_eq!(m.ops[3].results[1].count, 2);
    assert_eq!(items(&m.ops[4]).len(), 3);
}

#[test]
fn attr_dict_vs_region() {
    let op = one_op("t.op {x = 1} { t.inner } {flag} { ^bb0: t.inner }");
    let k = kinds(items(&op));
    assert!(matches!(&k[0], K::AttrDict(d) if d.len() == 1));
    assert!(matches!(&k[1], K::Region(r) if r.blocks[0].ops[0].name == "t.inner"));
    assert!(matches!(&k[2], K::AttrDict(d) if d[0].value == Attribute::Unit));
    assert!(matches!(&k[3], K::Region(r) if r.blocks[0].label.as_deref() == Some("bb0")));
}

// ------------------------------------------------------------ types and attributes

#[test]
fn types() {
    assert_eq!(ty("f64"), Type::F64);
    assert_eq!(ty(" vec< vec<f64> > "), Type::vec(Type::vec(Type::F64)));
    assert_eq!(
        ty("(f64, i32) -> f64"),
        Type::function(vec![Type::F64, Type::I32], vec![Type::F64])
    );
    assert_eq!(ty("() -> ()"), Type::function(vec![], vec![]));
    assert_eq!(
        ty("(i1) -> (i1, f32)"),
        Type::function(vec![Type::I1], vec![Type::I1, Type::F32])
    );
    assert_eq!(
        ty("!gen.bucket<index, #gen.reduce<add>>"),
        Type::dialect(
            "gen",
            "bucket",
            vec![
                TypeParam::Type(Type::Index),
                TypeParam::Attr(Attribute::dialect(
                    "gen",
                    "reduce",
                    vec![Attribute::Keyword("add".into())]
                ))
            ]
        )
    );
    assert_eq!(ty("!gen.reduce<f64>").to_string(), "!gen.reduce<f64>");
    for s in [
        "vec<f64>",
        "(f64, f64) -> f64",
        "(vec<f64>) -> (f64, index)",
        "!gen.collect<mat<f32>>",
    ] {
        assert_eq!(ty(s).to_string(), s);
    }
    assert!(parse_type("f64 f64").is_err());
    assert!(parse_type("vec<f64").is_err());
    assert!(parse_type("f6").is_err());
    assert!(parse_type("").is_err());
}

#[test]
fn attributes() {
    // MLIR's dense arrays read as arrays of typed integers.
    assert_eq!(
        attr("array<i64: 1, -2>"),
        Attribute::Array(vec![
            Attribute::Int(1, Type::I64),
            Attribute::Int(-2, Type::I64)
        ])
    );
    assert_eq!(attr("array<i32>"), Attribute::Array(vec![]));
    assert!(parse_attribute("array<f64: 1.0>").is_err());
    assert_eq!(attr("42 : i64"), Attribute::Int(42, Type::I64));
    assert_eq!(attr("42"), Attribute::Int(42, Type::I64));
    assert_eq!(attr("-3 : i32"), Attribute::Int(-3, Type::I32));
    assert_eq!(attr("4294967295 : i32"), Attribute::Int(-1, Type::I32));
    assert_eq!(attr("0xFFFFFFFF : i32"), Attribute::Int(-1, Type::I32));
    assert_eq!(
        attr("0xFFFFFFFFFFFFFFFF : i64"),
        Attribute::Int(-1, Type::I64)
    );
    assert_eq!(
        attr("-9223372036854775808"),
        Attribute::Int(i64::MIN, Type::I64)
    );
    assert_eq!(attr("1 : i1"), Attribute::Int(1, Type::I1));
    assert_eq!(attr("7 : index"), Attribute::Int(7, Type::Index));
    assert_eq!(attr("2.5 : f64"), Attribute::Float(2.5, Type::F64));
    assert_eq!(attr("2.5"), Attribute::Float(2.5, Type::F64));
    assert_eq!(attr("1.0e-3 : f32"), Attribute::float(1.0e-3, Type::F32));
    assert_eq!(attr("3 : f64"), Attribute::Float(3.0, Type::F64));
    let nan = attr("0x7FF8000000000000 : f64");
    assert_eq!(nan.as_float().unwrap().to_bits(), 0x7FF8000000000000);
    let nan32 = attr("0x7FC00000 : f32");
    assert!(nan32.as_float().unwrap().is_nan());
    assert_eq!(nan32.value_type(), Some(&Type::F32));
    assert_eq!(
        attr("0x7FF0000000000000 : f64").as_float(),
        Some(f64::INFINITY)
    );
    let nz = attr("-0.0 : f64");
    assert_eq!(nz.as_float().unwrap().to_bits(), (-0.0f64).to_bits());
    assert_eq!(nz.to_string(), "-0.0 : f64");
    assert_eq!(attr("true"), Attribute::Bool(true));
    assert_eq!(attr("false"), Attribute::Bool(false));
    assert_eq!(attr("unit"), Attribute::Unit);
    assert_eq!(
        attr(r#""a\"b\\c\n\t\41""#),
        Attribute::Str("a\"b\\c\n\tA".into())
    );
    assert_eq!(attr(r#""\C3\A9""#), Attribute::Str("é".into()));
    assert_eq!(attr("\"héllo\""), Attribute::Str("héllo".into()));
    assert_eq!(attr("@main"), Attribute::SymbolRef("main".into()));
    assert_eq!(attr("f64"), Attribute::Type(Type::F64));
    assert_eq!(attr("vec<f64>"), Attribute::Type(Type::vec(Type::F64)));
    assert_eq!(
        attr("[1, 2.5, \"x\", []]"),
        Attribute::Array(vec![
            Attribute::Int(1, Type::I64),
            Attribute::Float(2.5, Type::F64),
            Attribute::Str("x".into()),
            Attribute::Array(vec![])
        ])
    );
    assert_eq!(
        attr("#gen.collect"),
        Attribute::dialect("gen", "collect", vec![])
    );
    assert_eq!(
        attr("#gen.bucket<#gen.reduce<add>>"),
        Attribute::dialect(
            "gen",
            "bucket",
            vec![Attribute::dialect(
                "gen",
                "reduce",
                vec![Attribute::Keyword("add".into())]
            )]
        )
    );
    // Display round trip.
    for s in [
        "42 : i64",
        "-3 : i32",
        "2.5 : f64",
        "-0.0 : f64",
        "0x7FF8000000000000 : f64",
        "0x7FC00000 : f32",
        "[#gen.collect, #gen.reduce<add>]",
        "\"q\\\"\\\\\\n\\01\"",
        "@f",
        "unit",
    ] {
        assert_eq!(attr(s).to_string(), s);
    }
}

#[test]
fn attribute_errors() {
    let e = parse_attribute("9223372036854775808").unwrap_err();
    assert!(
        e.message.contains("integer literal out of range"),
        "{}",
        e.message
    );
    assert_eq!(e.offset, 0);
    assert!(
        parse_attribute("99999999999999999999999999999999999999999999999")
            .unwrap_err()
            .message
            .contains("out of range")
    );
    assert!(parse_attribute("4294967296 : i32")
        .unwrap_err()
        .message
        .contains("out of range"));
    assert!(parse_attribute("-2147483649 : i32")
        .unwrap_err()
        .message
        .contains("out of range"));
    assert!(parse_attribute("2 : i1")
        .unwrap_err()
        .message
        .contains("out of range"));
    assert!(parse_attribute("0x10000000000000000 : i64").is_err());
    assert!(parse_attribute("0x1FFFFFFFF : f32").is_err());
    assert!(parse_attribute("1.5 : i32").is_err());
    assert!(parse_attribute("1 : vec<f64>").is_err());
    let e = parse_attribute("\"bad \\q\"").unwrap_err();
    assert_eq!(e.offset, 5);
    assert!(parse_attribute("\"\\FF\"")
        .unwrap_err()
        .message
        .contains("UTF-8"));
    assert!(parse_attribute("\"unterminated").is_err());
    assert!(parse_attribute("add").is_err());
    assert!(parse_attribute("[1, 2").is_err());
    assert!(parse_attribute("").is_err());
    let huge = "9".repeat(100_000);
    assert!(parse_attribute(&huge).is_err());
    let e = err(&format!("t.op {}", "9".repeat(50)));
    assert_eq!(e.offset, 5);
    assert!(e.message.contains("out of range"));
}

// ------------------------------------------------------------ errors

#[test]
fn truncated_inputs_are_errors() {
    let src = r#"module {
  func.func @f(%a: f64) -> f64 {
    %b = "arith.addf"(%a, %a) {x = [1, #gen.reduce<add>]} : (f64, f64) -> f64
    %c = "t.r"(%b) ({
    ^bb0(%e: f64):
      "t.y"(%e) : (f64) -> ()
    }) : (f64) -> f64
    func.return %c : f64
  }
}"#;
    assert!(parse_module(src).is_ok());
    // Every strict prefix either parses (cut between ops) or fails cleanly.
    for (i, _) in src.char_indices() {
        assert_eq!(parse_module(&src[..i]), parse_module_pest_only(&src[..i]));
        if let Err(e) = parse_module(&src[..i]) {
            assert!(e.offset <= i, "offset {} past end {i}", e.offset);
            assert!(!e.message.is_empty());
        }
    }
    let e = err("module {\n  \"t.a\"() : () -> ()\n");
    assert_eq!(e.offset, 30);
    assert!(e.message.contains("'}'"), "{}", e.message);
}

#[test]
fn error_offsets_and_messages() {
    let src = "\"t.a\"() : () -> ()\n\"t.b\"(%x : () -> ()";
    let e = err(src);
    assert_eq!(e.offset, src.rfind(" : ()").unwrap() + 1);
    assert!(e.message.starts_with("expected"), "{}", e.message);

    let e = err("\"t.a\"() : () -> ()\n+ garbage");
    assert_eq!(e.offset, 19);
    assert!(e.message.contains("expected operation"), "{}", e.message);
    assert!(e.message.contains("'+'"), "{}", e.message);

    let e = err("%a = \"t.a\"() : (f64) -> flt");
    assert_eq!(e.offset, 24);

    let e = err("t.op (a, b");
    assert_eq!(e.offset, 10);
    assert!(e.message.contains("')'"), "{}", e.message);

    let e = err("t.op (a ]");
    assert_eq!(e.offset, 8);

    let e = err("}");
    assert_eq!(e.offset, 0);

    let e = err("module { } extra");
    assert_eq!(e.offset, 11);

    let e = err("\"t.a\"() ({ \"t.b\"() : () -> () } : () -> ()");
    assert!(e.message.contains("')'"), "{}", e.message);

    let e = err("t.op é");
    assert_eq!(e.offset, 5);

    let e = err("\"t.a\"() {x = add} : () -> ()");
    assert_eq!(e.offset, 13);

    let e = err("%a = \"t.a\"(%b#99999999999999999999999) : () -> ()");
    assert!(e.message.contains("out of range"));

    let e = err("\"t.a\"() : () -> ()\n^bb0:");
    assert_eq!(e.offset, 19);
}

#[test]
fn garbage_never_panics() {
    let samples = [
        "",
        "(",
        ")",
        "{",
        "}",
        "[",
        "]",
        "<",
        ">",
        "%",
        "%a",
        "%a =",
        "%a = \"",
        "\"",
        "^",
        "^bb",
        "module",
        "module {",
        "#",
        "#gen.",
        "!gen.x<",
        "@",
        "0x",
        "-",
        "->",
        "//",
        "\u{0}",
        "é",
        "\u{FEFF}",
        "t.x {",
        "t.x {a =",
        "t.x (",
        "t.x [",
        "t.x {}}",
        "\"a\"(",
        "\"a\"()",
        "\"a\"() (",
        "\"a\"() ({",
        "\"a\"() ({}",
        "\"a\"() ({})",
        "\"a\"() ({}) :",
        "%a:",
        "%a:99999999999999999999999 = t.x",
        "t.x \"\\",
        "t.x \"\\4",
        "\"a\"() ({^",
        "\"a\"() ({^b(",
    ];
    for s in samples {
        let _ = parse_module(s);
        let _ = parse_type(s);
        let _ = parse_attribute(s);
    }
    // Deterministic pseudo-random byte soup built from grammar characters.
    let alphabet: Vec<char> = "%%%^@#!\"(){}[]<>,,:=-> \n\n0x1.5e9abfvecif64t.op/\\é"
        .chars()
        .collect();
    let mut state = 0x2545F4914F6CDD1Du64;
    for _ in 0..3000 {
        let len = (state % 40) as usize;
        let mut s = String::new();
        for _ in 0..len {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            s.push(alphabet[(state % alphabet.len() as u64) as usize]);
        }
        assert_eq!(parse_module(&s), parse_module_pest_only(&s), "{s:?}");
        let _ = parse_type(&s);
        let _ = parse_attribute(&s);
    }
}

#[test]
fn deep_nesting_is_rejected() {
    let n = 10_000;
    let src = format!("{}{}", "\"t.a\"() ({".repeat(n), "})".repeat(n));
    let e = err(&src);
    assert!(
        e.message.contains("nesting too deep (limit 200)"),
        "{}",
        e.message
    );
    let src = format!(
        "%a = \"t.a\"() : () -> {}f64{}",
        "vec<".repeat(n),
        ">".repeat(n)
    );
    let e = err(&src);
    assert!(e.message.contains("nesting too deep"));
    assert_eq!(e.offset, src.find('<').unwrap() + 4 * 200);
    let e = parse_attribute(&format!("{}{}", "[".repeat(n), "]".repeat(n))).unwrap_err();
    assert_eq!(e.offset, 200);
    assert!(parse_type(&"(".repeat(n)).is_err());
    let e = err(&format!("t.op {}", "(".repeat(n)));
    assert_eq!(e.offset, 5 + 200);
    // Brackets inside strings and comments do not count.
    let deep = format!(
        "\"t.a\"() {{s = \"{}\"}} : () -> () // {}",
        "(".repeat(500),
        "[".repeat(500)
    );
    assert!(parse_module(&deep).is_ok());
}

#[test]
fn nesting_at_the_limit_parses() {
    // 199 levels of region nesting plus the op's own brackets.
    let n = 95;
    let src = format!(
        "{}\"t.z\"() : () -> (){}",
        "\"t.a\"() ({".repeat(n),
        "}) : () -> ()".repeat(n)
    );
    let m = module(&src);
    assert_eq!(m.ops.len(), 1);
    let ty_src = format!("{}f64{}", "vec<".repeat(200), ">".repeat(200));
    assert!(parse_type(&ty_src).is_ok());
    let attr_src = format!("{}1{}", "[".repeat(200), "]".repeat(200));
    assert!(parse_attribute(&attr_src).is_ok());
    let custom = format!("t.op {}x{}", "(".repeat(200), ")".repeat(200));
    assert!(parse_module(&custom).is_ok());
}

#[test]
fn long_lists_are_linear() {
    // A custom op with a very long operand list and a generic op with many operands.
    let n = 50_000;
    let list: Vec<String> = (0..n).map(|i| format!("%v{i}")).collect();
    let src = format!(
        "t.op {}\n%r = \"t.g\"({}) : () -> ()",
        list.join(", "),
        list.join(", ")
    );
    let t = std::time::Instant::now();
    let m = module(&src);
    assert_eq!(items(&m.ops[0]).len(), 2 * n - 1);
    assert_eq!(generic(&m.ops[1]).operands.len(), n);
    assert!(t.elapsed().as_secs() < 20);
}

#[test]
fn offsets_on_later_lines() {
    let src = "func.func @f() {\n  %a = \"t.c\"() : () -> f64\n    %b = arith.negf %a : f64\n}";
    let m = module(src);
    let K::Region(r) = &items(&m.ops[0]).last().unwrap().kind else {
        panic!()
    };
    let ops = &r.blocks[0].ops;
    assert_eq!(ops[1].loc, src.find("%b").unwrap());
    assert_eq!(ops[1].results[0].loc, src.find("%b").unwrap());
    assert_eq!(items(&ops[1])[0].loc, src.find("%a :").unwrap());
    assert_eq!(r.blocks[0].loc, src.find("%a =").unwrap());
    assert_eq!(r.loc, src.find('{').unwrap());
}

// ------------------------------------------------------------ fast path

#[test]
fn fast_path_matches_pest() {
    let cases = [
        "%a = \"arith.addf\"(%x, %y) : (f64, f64) -> f64",
        "%a, %b = \"t.x\"(%x#1, %y) : (vec<vec<f64>>, mat<i32>) -> (arr<i1>, index)",
        "\"t.x\"() : () -> ()\n\"t.y\"( ) : ( ) -> ( )",
        "%a = \"t.x\"() : () -> f64x",
        "%a = \"t.x\"() : () -> f64.y",
        "%a = \"t.x\"() : () -> vec <f64>",
        "%a=\"t.x\"(%b)//c\n:(f64)->(f64)",
        "%a:2 = \"t.x\"() : () -> (f64, f64)",
        "%a = \"t\\\"x\"() : () -> f64",
        "%a = \"t.x\"(%b#99999999999999999999999) : () -> f64",
        "%a = arith.addf %v3, %v7 : f64\n%b = arith.addf %a, %a : f64\n",
        "t.op %a, %b = t.z\nt.op %a %b = t.z\nt.q %x : 2\nt.op %a = %b\nt.op %a, %b = \"t.g\"() : () -> ()",
        "t.op %a#1, %b#x f64 f64x f64.q i1 index vec<f64> -> - * < > := to.x",
        "t.op a,b.c , d.e f",
        "t.op (%a, f64 -> i32) [x, y] {a = 1} %q %r:2 = t.x",
        "t.op %a#",
        "t.op %",
        "%a = t.op %x : f64 }",
        "t.op %a, \"s\"(x)",
        "t.op %a : 3 = t.x",
    ];
    for src in cases {
        let fast = parse_module(src);
        let slow = parse_module_pest_only(src);
        assert_eq!(fast, slow, "{src}");
    }
}

/// The streaming parser's ops, each as a syntax tree node (the fast lines
/// through their `to_ast`), and which events were fast lines.
fn streamed(src: &str) -> (Vec<AstOp>, usize) {
    let start = src.find('{').unwrap();
    let mut ops = Vec::new();
    let mut fast = 0;
    stream_region(src, start, &Rc::default(), &mut |ev| {
        match ev {
            RegionEvent::Op(op) => ops.push(op),
            RegionEvent::Line(l) => {
                fast += 1;
                ops.push(l.to_ast())
            }
            RegionEvent::Custom(l) => {
                fast += 1;
                ops.push(l.to_ast())
            }
            RegionEvent::Label(_) => {}
        }
        Ok(())
    })
    .unwrap();
    (ops, fast)
}

#[test]
fn streamed_lines_equal_the_eager_syntax_tree() {
    // Each op in turn: the fast lines (generic and custom, odd spacing and
    // comments included) and shapes that must take the general path.
    let src = "\"t.f\"() ({\n\
        %a = \"arith.addf\"(%x, %y) : (f64, f64) -> f64\n\
        %b,%c=\"t.two\"( %a ,%x ):(f64,f64)->(f64, i1) // comment\n\
        \"t.none\"() : () -> ()\n\
        %d = arith.addf %a, %b : f64\n\
        %e = arith.negf   %d   :   f64\n\
        %f = arith.addf %a , %b  // c\n   : f64\n\
        %g = arith.addf %a, %b {fastmath} : f64\n\
        %h = arith.addf %a, %b : vec<f64>\n\
        %i = arith.addf %a, %b#1 : f64\n\
        %j:2 = \"t.two\"(%a) : (f64) -> (f64, f64)\n\
        func.return %j#0 : f64\n\
        }) : () -> ()";
    let eager = one_op(src);
    let region = &generic(&eager).regions[0];
    let want = &region.blocks[0].ops;
    let lazy = parse_module_lazy(src).unwrap();
    assert!(generic(&lazy.ops[0]).regions[0].lazy_end.is_some());
    let (got, fast) = streamed(src);
    assert_eq!(&got, want);
    // addf/two/none generic lines and the four plain custom lines are fast.
    assert_eq!(fast, 6, "{got:#?}");
}

#[test]
fn long_braces_match_as_matching_close_does() {
    // Large regions with braces inside strings and comments, an unclosed
    // string (no `}` is matched past it), and short regions (not kept).
    let filler = "  %a = \"t.op\"() {s = \"}{\"} : () -> f64 // } {\n".repeat(2000);
    let src = format!(
        "{{\n{filler}  {{ {{ }} }}\n  {{\n{filler}  }}\n}}\n{{\n{filler} \"open\n{filler}}}\n{{ {filler} }}"
    );
    let long = scan_nesting(&src).unwrap();
    assert!(long.len() >= 3, "{long:?}");
    let b = src.as_bytes();
    for &(open, close) in &long {
        assert_eq!(matching_close(b, open), Some(close), "at {open}");
    }
    // Every long region's `{` outside strings and comments is kept.
    let region_opens: Vec<usize> = src
        .match_indices("{\n")
        .map(|(k, _)| k)
        .filter(|&k| k == 0 || b[k - 1] == b'\n' || b[k - 1] == b' ')
        .filter(|&k| !src[..k].rsplit('\n').next().unwrap().contains("//"))
        .filter(|&k| matching_close(b, k).is_some_and(|e| e - k >= LONG_BRACES))
        .collect();
    for k in region_opens {
        assert!(
            long.iter().any(|&(o, _)| o == k) || src[k..].contains("\"open"),
            "at {k}"
        );
    }
    // The pair after the unclosed string is kept; the one around it is not.
    let around = src
        .find("{\n")
        .map(|_| src.rfind("\n{\n").unwrap() + 1)
        .unwrap();
    assert!(!long.iter().any(|&(o, _)| o == around));
    assert_eq!(long.last().unwrap().1, src.len() - 1);
}

#[test]
fn memref_types_round_trip() {
    for t in [
        "memref<f32>",
        "memref<i1>",
        "memref<4x?xf32>",
        "memref<8x16x4xf32, strided<[64, 4, 1]>>",
        "memref<?x?xf32, strided<[?, 1], offset: ?>>",
        "memref<3x4xindex, strided<[16, 1], offset: 5>>",
    ] {
        let ty = parse_type(t).unwrap_or_else(|e| panic!("{t}: {}", e.message));
        assert_eq!(ty.to_string(), t);
    }
    assert_eq!(
        parse_type("memref<2xf32, strided<[1], offset: 0>>")
            .unwrap()
            .to_string(),
        "memref<2xf32, strided<[1]>>"
    );
    for bad in ["memref<4xvec<f32>>", "memref<4xf32, strided<[1, 1]>>"] {
        assert!(parse_type(bad).is_err(), "{bad}");
    }
}
