//! Guards for refactoring the kernel library (issue 31): the kernels' records were measured on
//! GPUs, so moving a kernel onto the kernel-author layer must leave what it emits unchanged.
//!
//! - [`ptx_snapshot`] (`#[ignore]`d: about a minute) builds every configuration the library can
//!   build — the GEMM configurations the tuner picks and a sweep of [`GemmConfig`]'s fields, every
//!   attention variant and a sweep of [`AttnConfig`], the softmax / reduce kernels (cooperative,
//!   ring, cluster, persistent, held, staged, online), copy, transpose, elementwise, Morton, the
//!   selftest cases — and writes each one's sm_90a PTX (or the build error) to a folder, one file
//!   a configuration, plus `manifest.txt` naming them. Snapshot before a refactor, diff after:
//!
//!   ```text
//!   TILEKIT_PTX_SNAPSHOT=target/ptx-before cargo test -p tilekit-ops --test it -- --ignored refactor_guard::
//!   # … refactor …
//!   TILEKIT_PTX_SNAPSHOT=target/ptx-after cargo test -p tilekit-ops --test it -- --ignored refactor_guard::
//!   diff -r target/ptx-before target/ptx-after
//!   ```
//!
//!   (paths relative to the workspace root; `TILEKIT_PTX_SNAPSHOT_ONLY=gemm_sm90,attention_sm90`
//!   writes those families only, numbered as in a full snapshot: `diff -r` their folders).
//!
//! - [`raw_builder_calls_only_fall`] counts the raw builder calls (`b.<KernelBuilder method>(`)
//!   per file of `tilekit-ops/src`, prints them, and fails where a file has more than its entry
//!   in [`RAW_BUILDER_CALLS`] (the counts when the test was written, lowered as kernels move
//!   onto the layer): the number can only fall.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use rayon::prelude::*;
use tilekit_ir::wgmma::Major;
use tilekit_ir::{Kernel, ScalarType};
use tilekit_ops::attention_sm90::{self, AttnConfig};
use tilekit_ops::gemm_sm90::{
    self, Activation, Epilogue, EpilogueOp, GemmConfig, Raster, PINGPONG_MAX_BN,
};
use tilekit_ops::gemm_tuning::GemmProblem;
use tilekit_ops::reduce::{self, CoopTuning, OnlineTuning, Reduction};
use tilekit_ops::Result;
use tilekit_ptx::{emit_kernel, Target};

use ScalarType::{BF16, F16, F32, I64};

/// One configuration: a family, a description (the arguments) and a builder.
type Case = (String, String, Box<dyn Fn() -> Result<Kernel> + Send + Sync>);

fn case(
    out: &mut Vec<Case>,
    family: &str,
    what: String,
    f: impl Fn() -> Result<Kernel> + Send + Sync + 'static,
) {
    out.push((family.to_string(), what, Box::new(f)));
}

/// The GEMM configurations: the tuner's candidates for a spread of problems, then sweeps of
/// [`GemmConfig`]'s structural fields (schedule, walk, ring depth, epilogue, cluster, split,
/// batches) and, on a few schedules, of its types, majors, widths and epilogue ops. Only the
/// ones [`GemmConfig::check`] accepts (a rejected one is an error the builder repeats).
fn gemm_configs() -> Vec<GemmConfig> {
    let mut seen = std::collections::HashSet::new();
    let mut out = Vec::new();
    let mut push = |c: GemmConfig| {
        if c.check().is_ok() && seen.insert(format!("{c:?}")) {
            out.push(c);
        }
    };
    // the tuner's candidates
    for (m, n, k) in [
        (4096, 4096, 4096),
        (64, 8192, 8192),
        (1000, 1000, 1000),
        (200, 328, 72),
        (8192, 8192, 8192),
        (128, 256, 64),
        (4096, 4095, 4096),
    ] {
        for (input, output) in [(BF16, BF16), (F16, F16), (BF16, F32), (F32, F32)] {
            for c_tma in [true, false] {
                let p = GemmProblem::new(m, n, k, input, output, c_tma);
                for ch in p.candidates() {
                    push(p.config(&ch));
                }
            }
        }
    }
    // the structural sweep (bn 128 and 64)
    let walks = [
        (false, Raster::Linear),
        (true, Raster::Linear),
        (true, Raster::Grouped(4)),
        (true, Raster::Grouped(8)),
        (true, Raster::Hilbert),
    ];
    for consumers in [1, 2] {
        for pingpong in [false, true] {
            for &(persistent, raster) in &walks {
                for cluster in [1, 2] {
                    for overlap in [false, true] {
                        for epilogue in [Epilogue::Registers, Epilogue::Tma] {
                            for epilogue_subtile in [0, 32, 64] {
                                for split_k in [1, 2, 4] {
                                    for batched in [false, true] {
                                        for stages in [2, 3, 4, 6, 12] {
                                            for bn in [64, 128] {
                                                let output = if split_k > 1 { F32 } else { BF16 };
                                                push(GemmConfig {
                                                    consumers,
                                                    pingpong,
                                                    persistent,
                                                    raster,
                                                    cluster,
                                                    overlap,
                                                    epilogue,
                                                    epilogue_subtile,
                                                    split_k,
                                                    batched,
                                                    stages,
                                                    bn,
                                                    output,
                                                    ..GemmConfig::default()
                                                });
                                            }
                                        }
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
    }
    // types, majors, widths and epilogue ops on a few schedules
    let schedules = [
        GemmConfig::default(),
        GemmConfig {
            overlap: true,
            persistent: true,
            raster: Raster::Grouped(8),
            ..GemmConfig::default()
        },
        GemmConfig {
            overlap: true,
            persistent: true,
            raster: Raster::Grouped(8),
            pingpong: true,
            ..GemmConfig::default()
        },
        GemmConfig { consumers: 1, stages: 8, overlap: true, ..GemmConfig::default() },
        GemmConfig {
            overlap: true,
            persistent: true,
            raster: Raster::Grouped(4),
            cluster: 2,
            ..GemmConfig::default()
        },
    ];
    let ops = [
        EpilogueOp::default(),
        EpilogueOp { alpha: true, ..EpilogueOp::default() },
        EpilogueOp { alpha: true, beta: true, ..EpilogueOp::default() },
        EpilogueOp { bias: Some(BF16), act: Activation::Relu, ..EpilogueOp::default() },
        EpilogueOp { bias: Some(F32), act: Activation::Gelu, beta: true, ..EpilogueOp::default() },
    ];
    for s in schedules {
        for (input, output) in [(BF16, BF16), (F16, F16), (BF16, F32), (F16, F32), (F32, F32)] {
            for a_major in [Major::K, Major::MN] {
                for b_major in [Major::K, Major::MN] {
                    for epilogue in [Epilogue::Registers, Epilogue::Tma] {
                        for stages in [s.stages, 3] {
                            for bn in (16..=256).step_by(16) {
                                push(GemmConfig {
                                    input,
                                    output,
                                    a_major,
                                    b_major,
                                    epilogue,
                                    stages,
                                    bn,
                                    ..s
                                });
                            }
                            for op in ops {
                                for sub in [0, 64] {
                                    push(GemmConfig {
                                        input,
                                        output,
                                        a_major,
                                        b_major,
                                        epilogue,
                                        stages,
                                        op,
                                        epilogue_subtile: sub,
                                        ..s
                                    });
                                }
                            }
                        }
                    }
                }
            }
        }
    }
    // the widest ping-pong tiles
    for bn in (128..=PINGPONG_MAX_BN).step_by(16) {
        for epilogue in [Epilogue::Registers, Epilogue::Tma] {
            for sub in [0, 16, 32, 64] {
                for stages in 2..=6 {
                    push(GemmConfig {
                        bn,
                        stages,
                        epilogue,
                        epilogue_subtile: sub,
                        ..schedules[2]
                    });
                }
            }
        }
    }
    out
}

fn attention_configs() -> Vec<AttnConfig> {
    let mut seen = std::collections::HashSet::new();
    let mut out = Vec::new();
    for dtype in [BF16, F16] {
        for head_dim in [64, 128, 256] {
            for causal in [false, true] {
                for (_, c) in attention_sm90::variants(dtype, head_dim, causal).unwrap() {
                    for probe in [false, true] {
                        let c = AttnConfig { probe, ..c };
                        if seen.insert(format!("{c:?}")) {
                            out.push(c);
                        }
                    }
                }
                let base = AttnConfig::new(dtype, head_dim, causal);
                for bn in [64, 128] {
                    for stages in [2, 3] {
                        for (overlap, pingpong) in [(false, false), (true, false), (true, true)] {
                            for tma_store in [false, true] {
                                for consumers in [1, 2, 3] {
                                    for probe in [false, true] {
                                        let c = AttnConfig {
                                            bn,
                                            stages,
                                            overlap,
                                            pingpong,
                                            tma_store,
                                            consumers,
                                            probe,
                                            ..base
                                        };
                                        if c.check().is_ok() && seen.insert(format!("{c:?}")) {
                                            out.push(c);
                                        }
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
    }
    out
}

/// Every configuration, in a fixed order.
fn cases() -> Vec<Case> {
    let mut v: Vec<Case> = Vec::new();
    for c in gemm_configs() {
        case(&mut v, "gemm_sm90", format!("{c:?}"), move || gemm_sm90::build_gemm_sm90(c));
    }
    for out in [BF16, F16, F32] {
        case(&mut v, "gemm_split_reduce", format!("{out:?}"), move || {
            gemm_sm90::build_split_reduce(out)
        });
    }
    for c in attention_configs() {
        case(&mut v, "attention_sm90", format!("{c:?}"), move || {
            attention_sm90::build_attention_sm90(c)
        });
    }
    // the library's selftest cases, as the API plans them
    for (i, (kernel, shape, dtype)) in tilekit_ops::run::SELFTEST_CASES.iter().enumerate() {
        let (kernel, shape, dtype) = (kernel.to_string(), shape.to_vec(), *dtype);
        case(&mut v, "selftest", format!("{i} {kernel} {shape:?} {dtype:?}"), move || {
            tilekit_ops::run::plan(&kernel, &shape, dtype).map(|(k, _)| k)
        });
    }
    // memory-bound kernels
    for ty in [F32, F16, BF16] {
        let vw = 16 / ty.size_bytes() as i64;
        for (vx, vy) in [(vw, vw), (1, 1), (vw, 1), (2, 2)] {
            case(&mut v, "copy", format!("{ty:?} {vx} {vy}"), move || {
                tilekit_ops::copy::build(ty, vx, vy)
            });
            case(&mut v, "copy_i64", format!("{ty:?} {vx} {vy}"), move || {
                tilekit_ops::copy::build_indexed(ty, vx, vy, I64)
            });
            case(&mut v, "transpose", format!("{ty:?} {vx} {vy}"), move || {
                tilekit_ops::transpose::build(ty, vx, vy)
            });
            for op in [tilekit_ops::elementwise::Binary::Add, tilekit_ops::elementwise::Binary::Max]
            {
                case(&mut v, "elementwise", format!("{op:?} {ty:?} {vx} {vy}"), move || {
                    tilekit_ops::elementwise::build(op, ty, vx, vy)
                });
                case(&mut v, "elementwise_i64", format!("{op:?} {ty:?} {vx} {vy}"), move || {
                    tilekit_ops::elementwise::build_indexed(op, ty, vx, vy, I64)
                });
            }
        }
        for m in [1, 2, 4, 8] {
            case(&mut v, "transpose_micro", format!("{ty:?} {m}"), move || {
                tilekit_ops::transpose::build_micro(ty, m, vw, vw)
            });
        }
        for (h, w, t) in [(8, 8, 32), (16, 16, 64), (4, 8, 32)] {
            for inverse in [false, true] {
                case(&mut v, "morton", format!("{ty:?} {h} {w} {t} {inverse}"), move || {
                    tilekit_ops::morton::build(ty, h, w, t, inverse)
                });
            }
            case(&mut v, "morton_storage", format!("{ty:?} {h} {w} {t}"), move || {
                tilekit_ops::morton::build_storage_order(ty, h, w, t)
            });
        }
    }
    for ty in [F32, F16, BF16] {
        case(&mut v, "gemm_mma", format!("{ty:?}"), move || tilekit_ops::gemm::build(ty));
    }
    // reductions and softmax
    for ty in reduce::TYPES {
        let vw = 16 / ty.size_bytes() as i64;
        for vx in [1, vw] {
            for r in [Reduction::Sum, Reduction::Max] {
                case(&mut v, "reduce", format!("{r:?} {ty:?} {vx}"), move || {
                    reduce::build_reduce(r, ty, vx)
                });
                case(&mut v, "reduce_i64", format!("{r:?} {ty:?} {vx}"), move || {
                    reduce::build_reduce_indexed(r, ty, vx, I64)
                });
            }
            for chunks in [1, 2, 4, 8] {
                case(&mut v, "softmax", format!("{ty:?} {chunks} {vx}"), move || {
                    reduce::build_softmax(ty, chunks, vx)
                });
                for threads in [128u32, 256, 512, 1024] {
                    case(
                        &mut v,
                        "softmax_threads",
                        format!("{ty:?} {chunks} {vx} {threads}"),
                        move || reduce::build_softmax_threads(ty, chunks, vx, threads),
                    );
                }
            }
            case(&mut v, "softmax_online", format!("{ty:?} {vx}"), move || {
                reduce::build_softmax_online(ty, vx)
            });
            for threads in [256u32, 512, 1024] {
                for unroll in [1, 2, 4] {
                    for reverse in [false, true] {
                        for blocks_per_sm in [0u32, 2] {
                            let o = OnlineTuning { threads, unroll, reverse, blocks_per_sm };
                            case(
                                &mut v,
                                "softmax_online_tuned",
                                format!("{ty:?} {vx} {o:?}"),
                                move || reduce::build_softmax_online_tuned(ty, vx, o),
                            );
                            case(
                                &mut v,
                                "softmax_online_i64",
                                format!("{ty:?} {vx} {o:?}"),
                                move || reduce::build_softmax_online_indexed(ty, vx, o, I64),
                            );
                            for cluster in [2u32, 4, 8] {
                                for slice in [1, 4] {
                                    for stash in [false, true] {
                                        case(
                                            &mut v,
                                            "softmax_stream_cluster",
                                            format!("{ty:?} {vx} {o:?} {cluster} {slice} {stash}"),
                                            move || {
                                                reduce::build_softmax_stream_cluster_stashed(
                                                    ty, vx, o, cluster, slice, stash,
                                                )
                                            },
                                        );
                                    }
                                    case(
                                        &mut v,
                                        "softmax_stream_cluster_plain",
                                        format!("{ty:?} {vx} {o:?} {cluster} {slice}"),
                                        move || {
                                            reduce::build_softmax_stream_cluster(
                                                ty, vx, o, cluster, slice,
                                            )
                                        },
                                    );
                                }
                            }
                        }
                    }
                }
            }
            for threads in [256u32, 512, 1024] {
                for unroll in [1, 2, 4] {
                    for cap in [4096, 16384, 65536] {
                        case(
                            &mut v,
                            "softmax_staged",
                            format!("{ty:?} {vx} {cap} {threads} {unroll}"),
                            move || reduce::build_softmax_staged(ty, vx, cap, threads, unroll),
                        );
                    }
                }
                for cluster in [2u32, 4, 8, 16] {
                    for chunks in [1, 2, 4] {
                        case(
                            &mut v,
                            "softmax_cluster",
                            format!("{ty:?} {vx} {cluster} {threads} {chunks}"),
                            move || reduce::build_softmax_cluster(ty, vx, cluster, threads, chunks),
                        );
                    }
                }
            }
        }
        // the bulk-copy cluster kernels: staged, held, persistent ring
        for cluster in [1u32, 2, 4, 8, 16] {
            for threads in [128u32, 256, 512, 1024] {
                for unroll in [1, 2, 4, 8] {
                    for chunks in [1, 2, 3, 4, 8] {
                        let what = format!("{ty:?} {cluster} {threads} {unroll} {chunks}");
                        case(&mut v, "softmax_bulk_cluster", what.clone(), move || {
                            reduce::build_softmax_bulk_cluster(ty, cluster, threads, unroll, chunks)
                        });
                        case(&mut v, "softmax_bulk_held", what.clone(), move || {
                            reduce::build_softmax_bulk_held(ty, cluster, threads, unroll, chunks)
                        });
                        for stages in [2, 3, 4] {
                            case(
                                &mut v,
                                "softmax_persistent",
                                format!("{what} {stages}"),
                                move || {
                                    reduce::build_softmax_persistent(
                                        ty, cluster, threads, unroll, chunks, stages,
                                    )
                                },
                            );
                        }
                    }
                }
            }
        }
        // the cooperative kernels: every candidate, and each with the other switches, at a
        // few row lengths (the plan's k and chunks)
        let mut tunings = Vec::new();
        for t in CoopTuning::candidates() {
            tunings.push(t);
            tunings.push(CoopTuning { pipe: true, ..t });
            tunings.push(CoopTuning { rows: 2, ..t });
            tunings.push(CoopTuning { cluster: !t.cluster, ..t });
            tunings.push(CoopTuning { bulk: !t.bulk, ..t });
            tunings.push(CoopTuning { one_exp: !t.one_exp, ..t });
            tunings.push(CoopTuning { early: !t.early, ..t });
            tunings.push(CoopTuning { spec: !t.spec, ..t });
        }
        for (slots, lag) in [(2u32, 0u32), (3, 1), (4, 2), (4, 1), (6, 3)] {
            for (threads, per_thread, kib) in [(256u32, 8i64, 16u32), (512, 8, 32), (256, 16, 64)] {
                tunings.push(CoopTuning::in_shared(threads, per_thread, kib).with_ring(slots, lag));
            }
        }
        let mut seen = std::collections::HashSet::new();
        for t in tunings {
            for n in [65536i64, 262144, 1 << 20] {
                let Some((k, chunks)) = t.plan(ty, n) else { continue };
                for vx in [1, vw] {
                    let what = format!("{ty:?} {vx} {k} {chunks} {t:?}");
                    if seen.insert(what.clone()) {
                        case(&mut v, "softmax_coop", what, move || t.build(ty, vx, k, chunks));
                    }
                }
            }
        }
    }
    v
}

fn sanitize(s: &str) -> String {
    s.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' { c } else { '_' }).collect()
}

/// Writes every configuration's PTX (sm_90a) or build error to `$TILEKIT_PTX_SNAPSHOT`
/// (default `target/ptx-snapshot`): `<family>/<nnnnn>.ptx` and `manifest.txt` (file, then the
/// configuration).
#[test]
#[ignore = "writes a PTX snapshot of every configuration (a minute or more); see the module docs"]
fn ptx_snapshot() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let dir = root.join(
        std::env::var_os("TILEKIT_PTX_SNAPSHOT")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from("target/ptx-snapshot")),
    );
    // `TILEKIT_PTX_SNAPSHOT_ONLY=gemm_sm90,attention_sm90`: those families only
    let only: Option<Vec<String>> = std::env::var("TILEKIT_PTX_SNAPSHOT_ONLY")
        .ok()
        .map(|s| s.split(',').map(|f| f.trim().to_string()).collect());
    let _ = std::fs::remove_dir_all(&dir); // (a stale snapshot would hide a missing file)
    std::fs::create_dir_all(&dir).unwrap();
    let start = std::time::Instant::now();
    let mut cases = cases();
    if let Some(only) = &only {
        // whole families, so their files are numbered as in a full snapshot
        cases.retain(|c| only.contains(&c.0));
    }
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    let named: Vec<(String, &Case)> = cases
        .iter()
        .map(|c| {
            let n = counts.entry(c.0.clone()).or_default();
            *n += 1;
            (format!("{}/{:05}.ptx", sanitize(&c.0), *n - 1), c)
        })
        .collect();
    for family in counts.keys() {
        std::fs::create_dir_all(dir.join(sanitize(family))).unwrap();
    }
    let built: Vec<bool> = named
        .par_iter()
        .map(|(file, (_, _, build))| {
            let (text, ok) = match build() {
                Ok(k) => match emit_kernel(&k, Target::Sm90a) {
                    Ok(ptx) => (ptx, true),
                    Err(e) => (format!("EMIT ERROR: {e}\n"), false),
                },
                Err(e) => (format!("BUILD ERROR: {e}\n"), false),
            };
            std::fs::write(dir.join(file), text).unwrap();
            ok
        })
        .collect();
    let mut manifest = String::new();
    for (file, (_, what, _)) in &named {
        writeln!(manifest, "{file}\t{what}").unwrap();
    }
    std::fs::write(dir.join("manifest.txt"), manifest).unwrap();
    let ok = built.iter().filter(|&&b| b).count();
    println!(
        "{} configurations ({ok} built, {} errors) in {:.0?} to {}",
        named.len(),
        named.len() - ok,
        start.elapsed(),
        dir.display()
    );
    for (family, n) in &counts {
        println!("  {family}: {n}");
    }
}

/// Raw builder calls per file of `tilekit-ops/src` (issue 31; at 1267907 gemm_sm90 188,
/// attention_sm90 174, persistent 51, before the rings moved to `tilekit_kernel::ring`); a
/// file may only go lower (then lower its entry here). Files not listed must have none.
const RAW_BUILDER_CALLS: &[(&str, usize)] = &[
    ("attention_sm90.rs", 159),
    ("backend.rs", 4),
    ("copy.rs", 9),
    ("elementwise.rs", 10),
    ("gemm.rs", 11),
    ("gemm_simt.rs", 16),
    ("gemm_sm90.rs", 174),
    ("morton.rs", 10),
    ("reduce.rs", 129),
    ("reduce/coop.rs", 45),
    ("reduce/coop_smem.rs", 146),
    ("reduce/held.rs", 31),
    ("reduce/persistent.rs", 49),
    ("reduce/ring.rs", 125),
    // new kernels (session 19): declarations, PDL and the per-row store; the row walk is
    // windows and for_range
    ("reduce/split_rows.rs", 18),
    ("reduce/warp_rows.rs", 16),
    ("transpose.rs", 28),
];

/// The public methods of `KernelBuilder` (its `impl KernelBuilder` blocks in `tilekit-ir`).
fn builder_methods() -> Vec<String> {
    let ir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tilekit-ir/src");
    let mut methods = std::collections::BTreeSet::new();
    for f in std::fs::read_dir(&ir).unwrap() {
        let path = f.unwrap().path();
        if path.extension().is_none_or(|e| e != "rs") {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        let mut inside = false;
        for line in text.lines() {
            if line.starts_with("impl KernelBuilder") {
                inside = true;
            } else if inside && line.starts_with('}') {
                inside = false;
            } else if let Some(rest) = line.strip_prefix("    pub fn ").filter(|_| inside) {
                let name: String =
                    rest.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
                methods.insert(name);
            }
        }
    }
    assert!(methods.len() > 50, "found only {} KernelBuilder methods", methods.len());
    methods.into_iter().collect()
}

/// Calls `b.<method>(` (the builder is `b` throughout the library) with `method` a builder
/// method, outside line comments.
fn count_calls(text: &str, methods: &[String]) -> usize {
    let set: std::collections::HashSet<&str> = methods.iter().map(|s| s.as_str()).collect();
    let mut n = 0;
    for line in text.lines() {
        let code = match line.find("//") {
            Some(i) => &line[..i],
            None => line,
        };
        let bytes = code.as_bytes();
        let mut i = 0;
        while let Some(j) = code[i..].find("b.") {
            let at = i + j;
            let word_start = at == 0
                || !(bytes[at - 1].is_ascii_alphanumeric()
                    || bytes[at - 1] == b'_'
                    || bytes[at - 1] == b'.');
            let name: String = code[at + 2..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            let call = code[at + 2 + name.len()..].starts_with('(')
                || code[at + 2 + name.len()..].starts_with("::<");
            if word_start && call && set.contains(name.as_str()) {
                n += 1;
            }
            i = at + 2;
        }
    }
    n
}

fn source_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            source_files(&p, out);
        } else if p.extension().is_some_and(|e| e == "rs") {
            out.push(p);
        }
    }
}

#[test]
fn raw_builder_calls_only_fall() {
    let methods = builder_methods();
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    source_files(&src, &mut files);
    files.sort();
    let mut counts = BTreeMap::new();
    for f in &files {
        let text = std::fs::read_to_string(f).unwrap();
        let rel = f.strip_prefix(&src).unwrap().to_string_lossy().replace('\\', "/");
        counts.insert(rel, count_calls(&text, &methods));
    }
    let mut over = Vec::new();
    println!("raw builder calls per file of tilekit-ops/src (now / limit):");
    for (file, &n) in &counts {
        let limit = RAW_BUILDER_CALLS.iter().find(|(f, _)| f == file).map_or(0, |&(_, l)| l);
        if n > 0 || limit > 0 {
            println!("  {file:<24} {n:>5} / {limit}");
        }
        if n > limit {
            over.push(format!("{file}: {n} > {limit}"));
        }
    }
    println!("  total {}", counts.values().sum::<usize>());
    assert!(
        over.is_empty(),
        "raw builder calls rose (use the kernel-author layer, tilekit-kernel): {over:?}"
    );
}
