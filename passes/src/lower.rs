//! `lower`: delayed rewriting (Delite's `atPhase(lowering)`). Each op spec
//! may register lowerings per phase; this pass applies the registry's phases
//! in order (`gen`: vec/mat ops become generator loops; `arr`: generator
//! loops become buffers and `scf` loops), and after each phase re-runs
//! canonicalize, CSE and DCE, so high-level simplifications happen before an
//! op is lowered and the lowered code is simplified before the next phase.
//!
//! First, `memref` ops become `arr` ops ([`crate::memref_to_arr`]), then
//! `mem2reg` promotes variables and `split-structs` replaces every
//! struct value by its fields ([`crate::split_structs`]), so no phase and
//! no backend sees a struct.
//!
//! With `target=native` (the default), the top-level generator loops are
//! split into chunks run by `scf.forall` just before the `arr` phase (the
//! parallel decomposition, [`crate::parallel`]); `parallel=false` keeps
//! them sequential.
//!
//! With `target=gpu`, the top-level generator loops that a kernel can run
//! become `gpu` kernels and launches just before the `arr` phase (see
//! [`crate::gpu`]); the `arr` phase then lowers the kernels' per-thread
//! loops and whatever stays on the host.

use ir::pass::{Pass, PassInfo, PassOptions, PassStats};
use ir::rewrite::{apply_greedily, GreedyConfig, Patterns};
use ir::{Context, Diagnostic};

use crate::canonicalize::canonicalize;

/// The pass.
pub struct Lower {
    /// Stop after this phase (inclusive); `None` runs every phase.
    pub until: Option<String>,
    /// Accumulators per reduction, applied just before the `arr` phase
    /// (see [`crate::split_reductions`]); 1 disables it.
    pub split: usize,
    /// `Some` for `target=gpu`: outline loops into kernels.
    pub gpu: Option<crate::gpu::GpuOptions>,
    /// `Some` (the default for `target=native`): the parallel decomposition
    /// of top-level loops ([`crate::parallel`]) before the `arr` phase.
    pub parallel: Option<crate::parallel::ParallelOptions>,
    /// Version innermost loops whose reads at `i + c` / `c - i` are not
    /// proved in bounds ([`crate::bounds_version`]); on for `native`.
    pub version: bool,
    /// `mat.mul` in 2x2 register blocks ([`dialects::mat_blocked`]); on for
    /// `native`.
    pub block_products: bool,
    /// Collects of column reductions in blocks of these many columns, read
    /// by rows ([`crate::jam`]), widest first; empty (off) for `gpu`.
    pub jam: Vec<i64>,
}

impl Lower {
    /// Every phase, with `split` accumulators per reduction, the parallel
    /// decomposition on (native) or the gpu outlining (`gpu`).
    pub fn new(split: usize, gpu: Option<crate::gpu::GpuOptions>) -> Lower {
        let parallel = gpu
            .is_none()
            .then(crate::parallel::ParallelOptions::default);
        Lower {
            until: None,
            split,
            version: gpu.is_none(),
            block_products: gpu.is_none(),
            jam: if gpu.is_none() {
                crate::jam::DEFAULT_WIDTHS.to_vec()
            } else {
                vec![]
            },
            gpu,
            parallel,
        }
    }
}

/// Runs `canonicalize`, `cse` and `dce`.
pub fn simplify(ctx: &mut Context, stats: &mut PassStats) {
    canonicalize(ctx, GreedyConfig::default(), stats);
    stats.add("cse-eliminated", crate::cse::cse(ctx));
    stats.add("dce-erased", crate::dce::dce(ctx));
}

/// Whether `lower` still has work on `ctx`: an op with a lowering, a
/// variable (`var` ops become buffers at the `arr` phase), a struct value
/// or signature (`split-structs` splits them first), or a memref op or
/// signature (they become `arr` descriptors).
pub fn needs_lowering(ctx: &Context) -> bool {
    ctx.walk_all().into_iter().any(|op| {
        !ctx.spec(op).lowerings.is_empty()
            || ctx.op_name(op).starts_with("var.")
            || ctx.op_name(op).starts_with("memref.")
            || crate::memref_to_arr::has_memref_signature(ctx, op)
            || crate::split_structs::op_has_structs(ctx, op)
    })
}

/// Applies the lowerings of one phase, then simplifies.
pub fn lower_phase(ctx: &mut Context, phase: &str, stats: &mut PassStats) {
    let s = apply_greedily(
        ctx,
        Patterns::Phase(phase),
        GreedyConfig {
            max_iterations: 50,
            remove_dead: true,
        },
    );
    stats.add("lowered", s.rewritten);
    simplify(ctx, stats);
}

impl Pass for Lower {
    fn name(&self) -> &'static str {
        "lower"
    }
    fn run(&mut self, ctx: &mut Context, stats: &mut PassStats) -> Result<(), Diagnostic> {
        let memref_ops = crate::memref_to_arr::lower_memrefs(ctx)?;
        if memref_ops > 0 {
            stats.add("memref-ops-lowered", memref_ops);
        }
        stats.add("promoted-vars", crate::mem2reg::mem2reg(ctx));
        let (split, records) = crate::split_structs::split_structs_keeping(ctx)?;
        let mut moved = std::collections::HashMap::new();
        if split > 0 {
            stats.add("split-values", split);
            // A field nobody reads: its generator goes, then its work.
            simplify(ctx, stats);
            crate::fuse::remove_dead_generators_tracked(ctx, stats, &mut moved);
        }
        if self.block_products {
            stats.add(
                "blocked-products",
                dialects::mat_blocked::block_products(ctx),
            );
        }
        if self.gpu.is_some() {
            stats.add("gpu-grouped-buckets", crate::gpu::group_buckets(ctx));
        }
        simplify(ctx, stats);
        if ir::remarks::enabled("lower") {
            crate::split_structs::remark_surviving_fields(ctx, &records, &moved);
        }
        let phases = ctx.registry().phases.clone();
        for p in phases {
            if p == "arr" {
                if let Some(g) = &self.gpu {
                    // Before the loops are outlined: the parallel forms.
                    if crate::gpu::launch_threads(ctx, g) > 0 {
                        simplify(ctx, stats);
                    }
                }
                stats.add("var-buffers", crate::mem2reg::vars_to_arrays(ctx));
                stats.add("in-bounds", crate::bounds::mark_in_bounds(ctx));
                stats.add(
                    "merged-sibling-loops",
                    crate::sibling_fors::fuse_sibling_fors(ctx),
                );
                stats.add(
                    "jammed-loops",
                    crate::jam::jam_column_reductions(ctx, &self.jam),
                );
                if self.version {
                    stats.add("versioned-loops", crate::bounds_version::version_loops(ctx));
                }
                if let Some(g) = &self.gpu {
                    let (k, h, sc) = crate::gpu::outline(ctx, g);
                    stats.add("gpu-kernels", k);
                    stats.add("gpu-host-loops", h);
                    stats.add("gpu-scratch-collects", sc);
                    stats.add(
                        "gpu-forwarded-copies",
                        crate::gpu::forward_device_copies(ctx),
                    );
                    stats.add("gpu-reused-copies", crate::gpu::reuse_device_copies(ctx));
                    stats.add(
                        "gpu-hoisted-copies",
                        crate::gpu::hoist_invariant_copies(ctx),
                    );
                    stats.add("gpu-resident-values", crate::gpu::keep_on_device(ctx));
                }
                if let Some(p) = &self.parallel {
                    stats.add("parallel-loops", crate::parallel::decompose(ctx, p));
                }
                stats.add(
                    "split-reductions",
                    crate::split_reductions::split_reductions(ctx, self.split),
                );
            }
            lower_phase(ctx, p, stats);
            if self.until.as_deref() == Some(p) {
                break;
            }
        }
        if self.until.is_none() {
            let mut changed = crate::divrem::strength_reduce(ctx);
            stats.add("strength-reduced-loops", changed);
            if self.version {
                // Invariants out first: a read's invariant index must be
                // defined before the loop to enter its versioning condition.
                crate::code_motion::code_motion(ctx).record(stats);
                let split = crate::index_split::split_index_sets(ctx);
                let versioned = crate::bounds_version::version_scf_loops(ctx);
                stats.add("index-split-loops", split);
                stats.add("versioned-scf-loops", versioned);
                changed += split + versioned;
            }
            if changed > 0 {
                simplify(ctx, stats);
            }
        }
        // Schedule the lowered loops: invariants out, single-branch ops in.
        crate::code_motion::code_motion(ctx).record(stats);
        Ok(())
    }
}

fn create(opts: &PassOptions) -> Result<Box<dyn Pass>, String> {
    opts.check_known(
        "lower",
        &[
            "until", "split", "target", "block", "max-grid", "parallel", "grain", "chunks",
            "version", "jam",
        ],
    )?;
    let gpu = match opts.get("target").unwrap_or("native") {
        "native" => {
            if opts.get("block").is_some() || opts.get("max-grid").is_some() {
                return Err("options 'block' and 'max-grid' need 'target=gpu'".into());
            }
            None
        }
        "gpu" => {
            use crate::gpu::GpuOptions;
            let d = GpuOptions::default();
            let within = |key: &str, default: i64, r: std::ops::RangeInclusive<i64>| {
                let (lo, hi) = (*r.start() as usize, *r.end() as usize);
                opts.get_usize_in(key, default as usize, lo, hi)
                    .map(|v| v as i64)
            };
            let g = GpuOptions {
                block: within("block", d.block, GpuOptions::BLOCK)?,
                max_grid: within("max-grid", d.max_grid, GpuOptions::GRID)?,
            };
            g.check()?;
            Some(g)
        }
        t => return Err(format!("unknown target '{t}' (expected native or gpu)")),
    };
    let d = crate::parallel::ParallelOptions::default();
    let parallel = crate::parallel::ParallelOptions {
        grain: opts.get_usize_in("grain", d.grain as usize, 1, i64::MAX as usize)? as i64,
        max_chunks: opts.get_usize_in("chunks", d.max_chunks as usize, 1, i64::MAX as usize)?
            as i64,
    };
    parallel.check()?;
    let on = opts.get_bool("parallel", gpu.is_none())?;
    if on && gpu.is_some() {
        return Err("option 'parallel' needs 'target=native'".into());
    }
    let version = opts.get_bool("version", gpu.is_none())?;
    if version && gpu.is_some() {
        return Err("option 'version' needs 'target=native'".into());
    }
    let jam = match opts.get("jam") {
        _ if gpu.is_some() && opts.get_bool("jam", false) != Ok(false) => {
            return Err("option 'jam' needs 'target=native'".into())
        }
        _ if gpu.is_some() => vec![],
        None => crate::jam::DEFAULT_WIDTHS.to_vec(),
        Some(v) => crate::jam::parse_widths(v)?,
    };
    let until = opts.get("until").map(|s| s.to_string());
    if let Some(u) = &until {
        // The tool's phases (a dialect may add its own), else L0's.
        let phases = if opts.phases.is_empty() {
            dialects::PHASES
        } else {
            &opts.phases[..]
        };
        if !phases.iter().any(|p| p == u) {
            return Err(format!(
                "option 'until' names no phase: '{u}' (phases: {})",
                phases.join(", ")
            ));
        }
    }
    Ok(Box::new(Lower {
        until,
        split: opts.get_usize_in("split", default_split(opts.codegen), 0, MAX_SPLIT)?,
        block_products: gpu.is_none(),
        jam,
        gpu,
        parallel: on.then_some(parallel),
        version,
    }))
}

/// The largest accumulator count of options `split` (`lower`) and
/// `factor` (`split-reductions`): a reduction's body is copied that many
/// times, and register files hold far fewer chains.
pub const MAX_SPLIT: usize = 64;

/// The default of option `split` for code generator `codegen`: 4 for
/// Cranelift, which does not vectorize and pairs the lanes of split
/// reductions itself; 1 for LLVM, whose loop vectorizer reassociates a
/// `reassoc` reduction on its own and does worse on one split into
/// interleaved lanes (strided loads and shuffles: `benches/matmul.sh`).
/// 4 when unknown.
pub fn default_split(codegen: Option<&str>) -> usize {
    if codegen == Some("llvm") {
        1
    } else {
        4
    }
}

/// Registration record.
pub fn info() -> PassInfo {
    PassInfo {
        name: "lower",
        description:
            "apply delayed lowerings phase by phase (vec -> gen -> arr+scf), simplifying after each",
        options: &[
            ("until", "last phase to apply (e.g. gen)"),
            (
                "split",
                "accumulators per reduction before the arr phase (default 4, 1 when the output goes to --backend=llvm; 1 = off)",
            ),
            (
                "target",
                "native (default) or gpu: top-level loops become gpu kernels and launches",
            ),
            (
                "block",
                "gpu: threads per block (power of two, 32..1024; default 256)",
            ),
            ("max-grid", "gpu: most blocks per launch (default 1024)"),
            (
                "parallel",
                "native: split top-level loops into chunks run by scf.forall (default true)",
            ),
            (
                "grain",
                "parallel: fewest indices per chunk of a loop without inner loops (default 4096; 1 with them)",
            ),
            ("chunks", "parallel: most chunks per loop (default 256)"),
            (
                "jam",
                "native: collects of column reductions in blocks of columns read by rows; false, true, or decreasing block widths (default 64,8)",
            ),
            (
                "version",
                "native: a copy of each innermost loop without the bounds checks of its reads at i+c or c-i, run when they all pass (default true)",
            ),
        ],
        create,
    }
}
