//! `tilekit bench gemm`'s configuration lists without a GPU: every label of
//! `--gemm-config best` ([`BEST`]) is among the configurations the bench times for its shape
//! (bf16 and f16, layout nt) and builds, so the list cannot rot silently when the tables
//! change; the 64-row TMA-store tiles of cuBLASLt's 1000³ width are timed where 64-row tiles
//! are and nowhere else; the subtiled ping-pong tiles are timed at 8192 × 8192 × 1024 and
//! 2048³; a pattern selects by substring, `best` by whole label.

use tilekit_cli::bench_gemm::{
    best_labels, parse_gemm_config, select_sm90, sm90_case, Sm90Run, BEST, SHAPES,
    SM90_PINGPONG_SUBTILE,
};
use tilekit_cuda::blas::Order;
use tilekit_ir::ScalarType;
use tilekit_ops::gemm_sm90::{build_gemm_sm90, launch_grid, Epilogue};

const NT: (Order, Order) = (Order::RowMajor, Order::ColMajor);

#[test]
fn every_best_label_is_timed_for_its_shape_and_builds() {
    // one list per shape of the table, in the same order
    let shapes: Vec<(usize, usize, usize)> = BEST.iter().map(|(s, _)| *s).collect();
    assert_eq!(shapes, SHAPES);
    for &(shape, list) in BEST {
        assert!((2..=4).contains(&list.len()), "{shape:?}: {}", list.len());
        for ty in [ScalarType::BF16, ScalarType::F16] {
            let case = sm90_case(shape, NT, ty);
            for want in list {
                let hits: Vec<&(String, Sm90Run)> =
                    case.entries.iter().filter(|(l, _)| l == want).collect();
                assert_eq!(hits.len(), 1, "{shape:?} {ty}: `{want}` timed {} times", hits.len());
                if let Sm90Run::Kernel(cfg) = hits[0].1 {
                    assert_eq!((cfg.input, cfg.output), (ty, ty));
                    build_gemm_sm90(cfg).unwrap_or_else(|e| panic!("{want}: {e}"));
                }
            }
        }
    }
    // and the whole table passes the check that `bench gemm --gemm-config best` makes
    let cases: Vec<_> = SHAPES
        .iter()
        .flat_map(|&s| [ScalarType::BF16, ScalarType::F16].map(|ty| sm90_case(s, NT, ty)))
        .collect();
    let best = select_sm90(&cases, &parse_gemm_config("best").unwrap(), "nt").unwrap();
    for (case, picked) in cases.iter().zip(&best) {
        assert_eq!(picked.entries.len(), best_labels(case.shape).unwrap().len());
        // (8191³ is staged: only its 7 TMA-store configurations of bn ≥ 192)
        let least = if case.staged { 7 } else { 30 };
        assert!(case.entries.len() >= least, "{:?}: {}", case.shape, case.entries.len());
    }
    // the full table times ~35 a shape; best about a tenth of that
    let full: usize = cases.iter().map(|c| c.entries.len()).sum();
    let picked: usize = best.iter().map(|c| c.entries.len()).sum();
    assert!(picked * 8 < full, "{picked} of {full}");
}

#[test]
fn the_64_by_144_tma_tiles_are_timed_where_64_row_tiles_are() {
    let small = sm90_case((1000, 1000, 1000), NT, ScalarType::BF16);
    let tiles: Vec<_> = small
        .entries
        .iter()
        .filter_map(|(l, r)| match r {
            Sm90Run::Kernel(c) if c.bm() == 64 && c.epilogue == Epilogue::Tma && c.bn % 64 != 0 => {
                Some((l.as_str(), *c))
            }
            _ => None,
        })
        .collect();
    let labels: Vec<&str> = tiles.iter().map(|(l, _)| *l).collect();
    assert_eq!(
        labels,
        [
            "bn 144, 8 stages, overlap, persistent, grouped 8, tma store, bm 64",
            "bn 144, 6 stages, overlap, persistent, grouped 8, tma store, bm 64",
            "bn 144, 8 stages, overlap, tma store, bm 64",
            "bn 160, 7 stages, overlap, persistent, grouped 8, tma store, bm 64",
        ]
    );
    for (label, cfg) in &tiles {
        // cuBLASLt's 112 tiles: 16 M-tiles × 7 N-tiles (144: the last 136 wide; 160: 40)
        let (tm, tn) = ((1000 + cfg.bm() - 1) / cfg.bm(), (1000 + cfg.bn - 1) / cfg.bn);
        assert_eq!(tm * tn, 112, "{label}");
        assert_eq!(cfg.c_maps(), ["cm", "cm_tail"], "{label}");
        if !cfg.persistent {
            assert_eq!(launch_grid(cfg, 1000, 1000, 132).unwrap(), [7, 16, 1]);
        }
    }
    // a problem of many tiles keeps the 128-row tile
    let big = sm90_case((4096, 4096, 4096), NT, ScalarType::BF16);
    assert!(big.labels().iter().all(|l| !l.contains("bm 64")));
}

#[test]
fn patterns_select_by_substring_and_best_by_whole_label() {
    let cases =
        [(1000, 1000, 1000), (8192, 8192, 8192)].map(|s| sm90_case(s, NT, ScalarType::BF16));
    let wide = "bn 256, 3 stages, overlap, persistent, grouped 8, tma store";
    let f = parse_gemm_config(&format!("{wide}|bn 144, 8 stages")).unwrap();
    let picked = select_sm90(&cases, &f, "nt").unwrap();
    let big: Vec<&str> = picked[1].labels();
    // the substring takes the pair of blocks too (`…, cluster 2`)
    assert_eq!(big, [wide, &format!("{wide}, cluster 2")[..]]);
    // 1000³: the 64 × 144 tiles of both epilogues (and their pair), and the bn 256 one there
    assert!(picked[0].labels().iter().all(|l| l.contains(wide) || l.contains("bn 144, 8 stages")));
    assert!(picked[0].labels().contains(&"bn 144, 8 stages, overlap, tma store, bm 64"));
    let best = select_sm90(&cases, &parse_gemm_config("best").unwrap(), "nt").unwrap();
    assert_eq!(
        best[1].labels(),
        [wide, "bn 256, 3 stages, overlap, persistent, hilbert, tma store"]
    );
    // a text that matches nothing anywhere names itself
    let e = select_sm90(&cases, &parse_gemm_config("bm 64|hilbrt").unwrap(), "nt").unwrap_err();
    let e = e.to_string();
    assert!(e.starts_with("--gemm-config \"hilbrt\" is invalid"), "{e}");
    assert!(e.contains("1000x1000x1000 bf16, 8192x8192x8192 bf16"), "{e}");
    // a text that matches one case only: no error, the other case keeps no entries
    let only = select_sm90(&cases, &parse_gemm_config("bm 64").unwrap(), "nt").unwrap();
    assert!(!only[0].entries.is_empty() && only[1].entries.is_empty());
}

#[test]
fn subtiled_pingpong_tiles_are_timed_at_8192_by_1024_and_2048_cubed() {
    // `--gemm-config "subtile"` picks exactly the subtiled list (bf16 and f16: the same
    // shared memory), each a kernel that builds
    let f = parse_gemm_config("subtile").unwrap();
    for shape in [(8192, 8192, 1024), (2048, 2048, 2048)] {
        for ty in [ScalarType::BF16, ScalarType::F16] {
            let cases = [sm90_case(shape, NT, ty)];
            let picked = select_sm90(&cases, &f, "nt").unwrap();
            let labels = picked[0].labels();
            assert_eq!(labels.len(), SM90_PINGPONG_SUBTILE.len(), "{shape:?} {ty}");
            assert!(labels.contains(
                &"bn 176, 5 stages, overlap, persistent, grouped 8, tma store, pingpong, subtile 32"
            ));
            for (_, run) in &picked[0].entries {
                match run {
                    Sm90Run::Kernel(c) => {
                        assert!(c.epilogue_subtile > 0 && c.input == ty);
                        build_gemm_sm90(*c).unwrap();
                    }
                    Sm90Run::SplitK(_) => panic!("{shape:?}: a split K is no subtile"),
                }
            }
        }
    }
}
