//! `l0-filecheck CHECKFILE [--check-prefix=P]... [--check-prefixes=A,B] [--input-file=F]
//! [--allow-empty]`: LLVM FileCheck for the subset of directives L0 tests use, built on the
//! `filecheck` crate. Reads the input from stdin (or `--input-file`). Exit status: 0 match,
//! 1 mismatch, 2 invalid check file or command line.

use lit_tests::checkfile::{parse_check_file, valid_prefix};
use lit_tests::translate::{check, Outcome};
use std::io::Read;
use std::process::ExitCode;

/// Parsed command line.
struct Opts {
    check_file: String,
    prefixes: Vec<String>,
    input_file: Option<String>,
    allow_empty: bool,
}

fn parse_args(args: &[String]) -> Result<Opts, String> {
    let mut o = Opts {
        check_file: String::new(),
        prefixes: Vec::new(),
        input_file: None,
        allow_empty: false,
    };
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let a2 = a
            .strip_prefix('-')
            .filter(|s| s.starts_with('-'))
            .unwrap_or(a);
        let (key, inline) = match a2.split_once('=') {
            Some((k, v)) => (k, Some(v.to_string())),
            None => (a2, None),
        };
        let mut value = || {
            inline
                .clone()
                .or_else(|| it.next().cloned())
                .ok_or(format!("missing value for {key}"))
        };
        match key {
            "-check-prefix" | "-check-prefixes" => {
                o.prefixes.extend(value()?.split(',').map(str::to_string));
            }
            "-input-file" => o.input_file = Some(value()?),
            "-allow-empty" => o.allow_empty = true,
            k if k.starts_with('-') && k.len() > 1 => return Err(format!("unknown option '{a}'")),
            _ if o.check_file.is_empty() => o.check_file = a.clone(),
            _ => return Err(format!("unexpected argument '{a}'")),
        }
    }
    if o.check_file.is_empty() {
        return Err("no check file given".into());
    }
    if o.prefixes.is_empty() {
        o.prefixes.push("CHECK".into());
    }
    if let Some(p) = o.prefixes.iter().find(|p| !valid_prefix(p)) {
        return Err(format!("invalid check prefix '{p}'"));
    }
    Ok(o)
}

fn run() -> Result<Outcome, String> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let o = parse_args(&args).map_err(|e| format!("error: {e}"))?;
    let text = std::fs::read_to_string(&o.check_file)
        .map_err(|e| format!("error: cannot read check file '{}': {e}", o.check_file))?;
    let dirs = parse_check_file(&text, &o.prefixes).map_err(|e| match e.line {
        0 => format!("{}: {e}", o.check_file),
        _ => format!("{}:{e}", o.check_file),
    })?;
    let input = match &o.input_file {
        Some(f) => std::fs::read_to_string(f)
            .map_err(|e| format!("error: cannot read input '{f}': {e}"))?,
        None => {
            let mut s = String::new();
            std::io::stdin()
                .read_to_string(&mut s)
                .map_err(|e| format!("error: cannot read stdin: {e}"))?;
            s
        }
    };
    if input.is_empty() && !o.allow_empty {
        let name = o.input_file.as_deref().unwrap_or("<stdin>");
        return Err(format!("error: '{name}' is empty"));
    }
    Ok(check(&dirs, &input, &o.check_file))
}

fn main() -> ExitCode {
    let outcome = run();
    // Always consume the piped input, even after an early error: otherwise the
    // writer (`cat %s | FileCheck ...` under pipefail) may die of SIGPIPE and
    // fail the RUN line for a reason that depends on timing.
    let _ = std::io::copy(&mut std::io::stdin().lock(), &mut std::io::sink());
    match outcome {
        Ok(Outcome::Pass) => ExitCode::SUCCESS,
        Ok(Outcome::Fail(m)) => {
            eprintln!("{m}");
            ExitCode::from(1)
        }
        Ok(Outcome::Error(m)) => {
            eprintln!("l0-filecheck: {m}");
            ExitCode::from(2)
        }
        Err(m) => {
            eprintln!("l0-filecheck: {m}");
            ExitCode::from(2)
        }
    }
}
