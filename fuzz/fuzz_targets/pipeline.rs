//! The pass pipelines: on every module that verifies, `canonicalize,cse,dce`,
//! `fuse,lower`, `fuse,lower{target=gpu,block=32}` and the same with
//! `fuse{target=gpu}` either succeed with IR
//! that verifies and round-trips, or stop with a diagnostic; never a panic.
#![no_main]

use ir::pass::{PassManager, VerifyEach};
use libfuzzer_sys::fuzz_target;

#[path = "common.rs"]
mod common;

const PIPELINES: &[&str] = &[
    "canonicalize,cse,dce",
    "fuse,lower",
    "fuse,lower{target=gpu,block=32}",
    "fuse{target=gpu},lower{target=gpu,block=32}",
];

fuzz_target!(|data: &[u8]| {
    for pipeline in PIPELINES {
        let Some(mut ctx) = common::parse(data) else {
            return;
        };
        let passes = passes::registry()
            .parse_pipeline(pipeline)
            .expect("a known pipeline");
        let mut pm = PassManager::new(passes);
        pm.instrument(Box::new(VerifyEach));
        if pm.run(&mut ctx).is_err() {
            continue;
        }
        if let Err(ds) = ir::verifier::verify(&ctx) {
            panic!(
                "'{pipeline}' produced IR that does not verify: {}",
                ds[0].message
            );
        }
        common::roundtrip(&ctx);
    }
});
