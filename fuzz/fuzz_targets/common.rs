//! Shared by the fuzz targets: parsing bytes as L0 IR and the invariants every
//! target checks (no panic, diagnostics render, printed IR parses again).

use ir::printer::{print_module, PrintOptions};
use ir::Context;

/// Parses and verifies `data` (bytes as any `&str` API would see them); `None`
/// when the input is rejected with a diagnostic (which must render).
pub fn parse(data: &[u8]) -> Option<Context> {
    let text = String::from_utf8_lossy(data);
    let src = ir::Source {
        name: "fuzz.ir".into(),
        text: text.to_string().into(),
    };
    let ctx = match ir::build::parse_source("fuzz.ir", &text, dialects::registry()) {
        Ok(c) => c,
        Err(d) => {
            let _ = ir::diag::render(Some(&src), &d);
            return None;
        }
    };
    let verified = ir::verifier::verify(&ctx);
    // The parser's shortcut (no dominance walk) must give the same answer.
    assert_eq!(ir::verifier::verify_parsed(&ctx), verified);
    if let Err(ds) = verified {
        for d in &ds {
            let _ = ir::diag::render(Some(&src), d);
        }
        return None;
    }
    Some(ctx)
}

/// The module printed in both forms must parse and verify again.
#[allow(dead_code)]
pub fn roundtrip(ctx: &Context) {
    for generic in [false, true] {
        let text = print_module(ctx, PrintOptions { generic, ..Default::default() });
        let again = ir::build::parse_source("printed.ir", &text, dialects::registry())
            .unwrap_or_else(|d| panic!("printed IR does not parse: {}\n{text}", d.message));
        if let Err(ds) = ir::verifier::verify(&again) {
            panic!("printed IR does not verify: {}\n{text}", ds[0].message);
        }
    }
}
