//! `l0-not [--crash] CMD ARGS...`: LLVM's `not`. Runs the command and exits 0 iff it exited
//! with a non-zero status (without `--crash`), or iff it crashed (with `--crash`). A crash is
//! death by a signal or exit status 101, a Rust panic: unlike LLVM's `not`, a panicking
//! `l0-opt` never counts as an expected failure. Failure to start the command exits 1.

use std::os::unix::process::ExitStatusExt;
use std::process::{Command, ExitCode};

fn main() -> ExitCode {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let crash = args.first().is_some_and(|a| a == "--crash");
    if crash {
        args.remove(0);
    }
    let Some((prog, rest)) = args.split_first() else {
        eprintln!("l0-not: usage: l0-not [--crash] CMD ARGS...");
        return ExitCode::from(1);
    };
    let status = match Command::new(prog).args(rest).status() {
        Ok(s) => s,
        Err(e) => {
            eprintln!("l0-not: cannot run '{prog}': {e}");
            return ExitCode::from(1);
        }
    };
    let ok = match (status.code(), status.signal()) {
        (_, Some(sig)) => {
            if !crash {
                eprintln!("l0-not: '{prog}' was killed by signal {sig}");
            }
            crash
        }
        (Some(101), None) => {
            if !crash {
                eprintln!("l0-not: '{prog}' panicked (exit status 101)");
            }
            crash
        }
        (Some(code), None) => !crash && code != 0,
        (None, None) => false,
    };
    if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}
