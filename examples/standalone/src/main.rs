//! `poly-opt`: `l0-opt` with the `poly` dialect and the `poly-compose` pass
//! added. Every flag of `l0-opt` works (`--pass`, `--run` on every backend,
//! `--emit`, `--print-generic`, ...).

use std::process::ExitCode;

fn main() -> ExitCode {
    #[cfg(unix)]
    opt_tool::quiet_on_closed_pipe();
    opt_tool::opt_main(opt_tool::Tool {
        name: "poly-opt",
        dialects: standalone::register_dialects,
        passes: standalone::register_passes,
    })
}
