//! Run-time faults of compiled code. Each fault site gets an id at compile
//! time; the generated code calls `l0rt_fault(id, a, b, c)` with up to three
//! `i64` payloads (an index, a length, ...) and returns status 1 up the call
//! chain. The host then formats the site's template with the payloads.

use ir::interp::RunError;
use ir::Loc;

/// One place in the compiled code that may fault.
#[derive(Clone, Debug)]
pub struct FaultSite {
    pub loc: Loc,
    /// The message, with `{0}`, `{1}`, `{2}` standing for the payloads
    /// (taken literally when `formatted` is false).
    pub template: String,
    pub formatted: bool,
}

/// All fault sites of a module, indexed by id.
#[derive(Clone, Debug, Default)]
pub struct FaultTable {
    pub sites: Vec<FaultSite>,
}

impl FaultTable {
    /// Registers a site; returns its id.
    pub fn add(&mut self, loc: Loc, template: String, formatted: bool) -> i64 {
        self.sites.push(FaultSite {
            loc,
            template,
            formatted,
        });
        (self.sites.len() - 1) as i64
    }

    /// The run error of fault `id` with `payload`.
    pub fn error(&self, id: i64, payload: [i64; 3]) -> RunError {
        match usize::try_from(id).ok().and_then(|i| self.sites.get(i)) {
            Some(s) => RunError {
                loc: s.loc,
                message: if s.formatted {
                    format_template(&s.template, payload)
                } else {
                    s.template.clone()
                },
            },
            None => RunError {
                loc: Loc::UNKNOWN,
                message: format!("compiled code reported an unknown fault #{id}"),
            },
        }
    }
}

/// Replaces `{0}`, `{1}`, `{2}` in `t` by the payloads.
pub fn format_template(t: &str, p: [i64; 3]) -> String {
    t.replace("{0}", &p[0].to_string())
        .replace("{1}", &p[1].to_string())
        .replace("{2}", &p[2].to_string())
}

/// The object-file fault table `l0_fault_messages`: one NUL-terminated
/// `file:line:col: template` per fault id, then an empty string (what
/// `runtime/l0rt.c` reads).
pub fn message_table(ctx: &ir::Context, faults: &FaultTable) -> Vec<u8> {
    let mut bytes = Vec::new();
    for s in &faults.sites {
        let prefix = ir::diag::location_prefix(ctx.source.as_deref(), s.loc);
        bytes.extend(
            format!("{prefix}: {}", s.template)
                .replace('\0', " ")
                .into_bytes(),
        );
        bytes.push(0);
    }
    bytes.push(0);
    bytes
}
