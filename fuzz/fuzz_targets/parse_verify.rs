//! Parser and verifier: any bytes give a module or a rendered diagnostic, and a
//! module that verifies prints (custom and generic form) to text that parses and
//! verifies again.
#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "common.rs"]
mod common;

fuzz_target!(|data: &[u8]| {
    if let Some(ctx) = common::parse(data) {
        common::roundtrip(&ctx);
    }
});
