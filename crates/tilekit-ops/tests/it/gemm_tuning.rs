//! GEMM choices: shape classes, the tuner's candidate set, the heuristic, tuning files (saved,
//! reloaded, refused when corrupt), and the API running tuned choices — Hilbert order and the
//! TMA-store epilogue, whose extra arguments the API binds — against an f64 reference.

use tilekit_ir::tensor::HostTensor;
use tilekit_ir::wgmma::Major;
use tilekit_ir::ScalarType;
use tilekit_ops::api;
use tilekit_ops::backend::Interp;
use tilekit_ops::gemm_sm90::{Epilogue, GemmConfig, Raster};
use tilekit_ops::gemm_tuning::{
    file_name, GemmChoice, GemmProblem, GemmTable, Tuned, ODD_WIDTHS, ODD_WIDTHS_64_ROWS,
    PINGPONG_SUBTILE_WIDTHS, PINGPONG_WIDTHS,
};
use tilekit_ops::host;
use tilekit_ops::tuning::{TuningError, TuningSource};

const BF: ScalarType = ScalarType::BF16;
const F32: ScalarType = ScalarType::F32;

#[test]
fn classes_round_each_dim_up_to_a_power_of_two() {
    let p = |m, n, k| GemmProblem::new(m, n, k, BF, F32, true).class();
    assert_eq!(p(8192, 8192, 8192), "bf16>f32 nt m8192 n8192 k8192");
    assert_eq!(p(6000, 4097, 1), "bf16>f32 nt m8192 n8192 k64");
    assert_eq!(p(1, 65, 128), "bf16>f32 nt m64 n128 k128");
    // the C type is part of the class: a bf16 C tile changes what fits in shared memory
    assert_ne!(p(64, 64, 64), GemmProblem::new(64, 64, 64, BF, BF, true).class());
}

#[test]
fn the_candidates_are_every_buildable_choice_and_nothing_else() {
    let p = GemmProblem::new(4096, 4096, 4096, BF, BF, true);
    let c = p.candidates();
    // brute force over the same knobs: widths 128/192/256 × both epilogues × 3..=6 stages ×
    // (4 grids + 2 grids of 2-block clusters), kept where GemmConfig::check accepts the shared
    // memory; and ping-pong at bn 128 (one grid; two C tiles with the TMA store)
    let (mut want, mut pingpong) = (0, 0);
    for bn in [128i64, 192, 256] {
        for tma in [false, true] {
            for stages in 3..=6i64 {
                let ring = stages * (128 + bn) * 64 * 2;
                let c_tile = if tma { 128 * bn * 2 } else { 0 };
                if ring + c_tile <= 227 * 1024 {
                    want += 4 + 2;
                }
                if bn == 128 && ring + 2 * c_tile <= 227 * 1024 {
                    pingpong += 1;
                }
            }
        }
    }
    // the odd widths (160, 176, 240), both epilogues (the TMA store's last boxes narrower), the
    // deepest ring that fits, persistent grouped 8 and pairs grouped 4
    let mut odd_choices = 0;
    for bn in ODD_WIDTHS {
        for (epilogue, c_tile) in [(Epilogue::Registers, 0), (Epilogue::Tma, 128 * bn * 2)] {
            let deepest =
                (2..=6).rev().find(|s| s * (128 + bn) * 128 + c_tile <= 227 * 1024).unwrap();
            let at = |cluster, raster| GemmChoice {
                bn,
                stages: deepest,
                overlap: true,
                persistent: true,
                raster,
                epilogue,
                cluster,
                consumers: 2,
                ..GemmChoice::of(&GemmConfig::default())
            };
            assert!(
                c.contains(&at(1, Raster::Grouped(8))) && c.contains(&at(2, Raster::Grouped(4)))
            );
            odd_choices += 2;
        }
    }
    // the wide ping-pong tiles (144..192), each epilogue's deepest ring beside two C tiles
    let mut wide_pp = 0;
    for bn in PINGPONG_WIDTHS {
        for (epilogue, c_tile) in [(Epilogue::Registers, 0), (Epilogue::Tma, 128 * bn * 2)] {
            let deepest =
                (2..=6).rev().find(|s| s * (128 + bn) * 128 + 2 * c_tile <= 227 * 1024).unwrap();
            let want = GemmChoice::pingpong(bn, deepest, epilogue);
            assert!(c.contains(&want), "{want:?}");
            wide_pp += 1;
        }
    }
    // (bn 176 with the TMA store: 3 stages of 38 KiB beside 2 × 44 KiB of C)
    assert!(c.iter().any(|c| c.pingpong && c.bn == 176 && c.stages == 3));
    // the TMA store in subtiles (128..208 ping-pong): of 64, 32 or 16 bf16 columns, whichever
    // leaves the deepest ring beside 2 warpgroups × 2 buffers of 128 × s (the wider on a tie);
    // and the cooperative 128 × 256 tile with 64-column subtiles (2 buffers)
    let mut subtiled = 0;
    for bn in PINGPONG_SUBTILE_WIDTHS {
        let (mut stages, mut sub) = (0, 0);
        for s in [64i64, 32, 16] {
            let deepest =
                (2..=6).rev().find(|n| n * (128 + bn) * 128 + 4 * 128 * s * 2 <= 227 * 1024);
            if let Some(d) = deepest.filter(|&d| d > stages) {
                (stages, sub) = (d, s);
            }
        }
        let want =
            GemmChoice { epilogue_subtile: sub, ..GemmChoice::pingpong(bn, stages, Epilogue::Tma) };
        assert!(c.contains(&want), "{want:?}");
        subtiled += 1;
    }
    let coop = GemmChoice {
        pingpong: false,
        epilogue_subtile: 64,
        ..GemmChoice::pingpong(256, 4, Epilogue::Tma)
    };
    assert!(c.contains(&coop));
    assert!(!c.contains(&GemmChoice { stages: 5, ..coop }), "5 × 48 + 32 KiB do not fit");
    subtiled += 1;
    assert_eq!(c.iter().filter(|c| c.epilogue_subtile > 0).count(), subtiled);
    let pp_odd = c.iter().filter(|c| c.pingpong && c.bn % 64 != 0).count();
    assert_eq!(c.iter().filter(|c| c.bn % 64 != 0).count(), odd_choices + pp_odd);
    assert_eq!(pingpong, 7);
    assert_eq!(c.len(), want + pingpong + odd_choices + wide_pp + subtiled);
    assert_eq!(c.iter().filter(|c| c.pingpong).count(), pingpong + wide_pp + subtiled - 1);
    assert!(c.iter().filter(|c| c.pingpong).all(|c| c.bn <= 208 && c.persistent));
    let mut uniq = c.clone();
    uniq.sort_by_key(|c| format!("{c:?}"));
    uniq.dedup();
    assert_eq!(uniq.len(), c.len(), "no choice twice");
    assert!(c.contains(&GemmChoice::heuristic(&p)), "the heuristic is among the candidates");
    // the heuristic's knobs in pairs of blocks, in groups of 4 pairs (8 M-tiles)
    let paired = GemmChoice { cluster: 2, raster: Raster::Grouped(4), ..GemmChoice::heuristic(&p) };
    assert!(c.contains(&paired));
    assert_eq!(c.iter().filter(|c| c.cluster == 2).count(), want / 3 + odd_choices / 2);
    // an f32 C takes the TMA store of every odd width (bn 176: five 32-column boxes and one of
    // 16, 3 stages beside the 88 KiB C tile; bn 240: 2 beside 120 KiB); ping-pong's two f32 C
    // tiles fit at bn 144 only (2 stages)
    let f32_c = GemmProblem::new(4096, 4096, 4096, BF, F32, true).candidates();
    let tma_odd: Vec<(i64, i64, bool)> = f32_c
        .iter()
        .filter(|c| c.bn % 64 != 0 && c.epilogue == Epilogue::Tma && c.epilogue_subtile == 0)
        .map(|c| (c.bn, c.stages, c.pingpong))
        .collect();
    // (in subtiles, every ping-pong width keeps 5 or 6 stages beside an f32 C: 32 or 16
    // columns of 4 bytes)
    let sub: Vec<(i64, i64, i64)> = f32_c
        .iter()
        .filter(|c| c.epilogue_subtile > 0 && c.pingpong)
        .map(|c| (c.bn, c.stages, c.epilogue_subtile))
        .collect();
    assert_eq!(
        sub,
        [(128, 6, 16), (144, 6, 8), (160, 5, 16), (176, 5, 16), (192, 5, 8), (208, 5, 8)]
    );
    assert_eq!(
        tma_odd,
        [
            (144, 2, true),
            (160, 4, false),
            (160, 4, false),
            (176, 3, false),
            (176, 3, false),
            (240, 2, false),
            (240, 2, false)
        ]
    );
    // B MN-major (row-major B, the API's layout): no odd widths
    let nn = GemmProblem::new(4096, 4096, 4096, BF, BF, true).with_majors(Major::K, Major::MN);
    assert!(nn.candidates().iter().all(|c| c.bn % 64 == 0));
    // a C that TMA cannot store: register epilogues only; one tile: no persistent grids
    let odd = GemmProblem::new(4096, 4095, 4096, BF, F32, false);
    assert!(odd.candidates().iter().all(|c| c.epilogue == Epilogue::Registers));
    // (of 128 rows; in 64-row tiles it is two, with persistent grids and pairs)
    let one = GemmProblem::new(100, 100, 4096, BF, F32, true);
    let unsplit: Vec<GemmChoice> =
        one.candidates().into_iter().filter(|c| c.split_k == 1).collect();
    let (two_wg, one_wg): (Vec<GemmChoice>, Vec<GemmChoice>) =
        unsplit.iter().partition(|c| c.consumers == 2);
    assert!(two_wg.iter().all(|c| !c.persistent && c.raster == Raster::Linear));
    assert!(one_wg.iter().any(|c| c.persistent) && one_wg.iter().any(|c| c.cluster == 2));
    assert!(one.candidates().iter().all(|c| c.bn <= 128), "no tile wider than N needs");
    assert!(two_wg.iter().all(|c| c.bn == 128), "the 128-row tile's narrowest is 128");
}

#[test]
fn the_64_row_candidates_are_there_for_skinny_and_few_tile_problems_only() {
    // 64 × 8192 × 8192: every 64-row candidate builds, and brute force over the same knobs
    // (widths 64..256 × both epilogues × 4..12 stages × 2 grids, kept where they fit) counts
    // the unsplit ones; split K with 64-row tiles where they number at most 64 (bn 128, 256)
    let skinny = GemmProblem::new(64, 8192, 8192, BF, F32, true);
    let c = skinny.candidates();
    let one: Vec<&GemmChoice> = c.iter().filter(|c| c.consumers == 1).collect();
    assert!(one.iter().all(|c| skinny.config(c).check().is_ok()));
    let mut want = 0;
    for bn in [64i64, 128, 192, 256] {
        for tma in [false, true] {
            for stages in [4i64, 6, 8, 10, 12] {
                let c_tile = if tma { 64 * bn * 4 } else { 0 };
                if stages * (64 + bn) * 128 + c_tile <= 227 * 1024 {
                    want += 2;
                }
            }
        }
    }
    // the odd widths of 64 rows (80, 112, 144, 160, 176): both epilogues (the f32 C's last box
    // 16 columns), the deepest ring, one block per tile and persistent (one M-tile: no pairs);
    // with the TMA store also 6 stages, persistent, where the deepest ring is deeper
    let mut shallow = vec![];
    for bn in ODD_WIDTHS_64_ROWS {
        for (epilogue, c_tile) in [(Epilogue::Registers, 0), (Epilogue::Tma, 64 * bn * 4)] {
            let deepest =
                (2..=12).rev().find(|s| s * (64 + bn) * 128 + c_tile <= 227 * 1024).unwrap();
            let odd: Vec<&&GemmChoice> =
                one.iter().filter(|c| c.bn == bn && c.epilogue == epilogue).collect();
            let extra = usize::from(epilogue == Epilogue::Tma && deepest > 6);
            assert_eq!(odd.len(), 2 + extra, "{bn} {epilogue:?}");
            assert_eq!(odd.iter().filter(|c| c.stages == deepest).count(), 2, "{bn}");
            if extra == 1 {
                let s = odd.iter().find(|c| c.stages == 6).expect("the 6-stage ring");
                assert!(s.persistent, "{}", s.label());
                shallow.push(bn);
            }
            want += 2 + extra;
        }
    }
    // f32 C: 80 (11 stages), 112 (9), 144 (7) deeper than 6; 160 and 176 hold 6 at most
    assert_eq!(shallow, [80, 112, 144]);
    assert_eq!(one.iter().filter(|c| c.split_k == 1).count(), want);
    assert!(one.iter().all(|c| c.cluster == 1), "one 64-row tile: nothing to pair");
    let split_widths: Vec<i64> = one.iter().filter(|c| c.split_k > 1).map(|c| c.bn).collect();
    assert!(split_widths.contains(&128) && split_widths.contains(&256), "{split_widths:?}");
    assert!(!split_widths.contains(&64), "128 tiles of 64 × 64: not few");
    // the split's ring is the deepest that fits: bn 256 five stages of 40 KiB, bn 192 seven of
    // 32 KiB, bn 128 nine of 24 KiB
    for s in one.iter().filter(|c| c.split_k > 1) {
        let deepest = match s.bn {
            256 => 5,
            192 => 7,
            _ => 9,
        };
        assert_eq!(s.stages, deepest, "{}", s.label());
        assert!(s.label().ends_with("bm 64"), "{}", s.label());
    }
    // 1000³: 64-row candidates with pairs (16 M-tiles); 4096³: none
    let small = GemmProblem::new(1000, 1000, 1000, BF, BF, true);
    assert!(small.candidates().iter().any(|c| c.consumers == 1 && c.cluster == 2));
    let big = GemmProblem::new(4096, 4096, 4096, BF, BF, true);
    assert!(big.candidates().iter().all(|c| c.consumers == 2));
}

#[test]
fn the_heuristic_takes_one_consumer_where_the_tile_counts_say_so() {
    let h = |m, n, k, out| GemmChoice::heuristic(&GemmProblem::new(m, n, k, BF, out, true));
    // M ≤ 64: one consumer, 8 stages, for either output type (the f32 C tile of 64 × 128 fits
    // beside 8 × 24 KiB)
    for out in [BF, F32] {
        let c = h(64, 8192, 8192, out);
        assert_eq!((c.consumers, c.bn, c.stages, c.epilogue), (1, 128, 8, Epilogue::Tma));
        assert_eq!(h(33, 4096, 4096, out).consumers, 1);
    }
    // few tiles whose 64 × 128 tiles fit one wave: 1000³ (128 tiles), 512² (32)
    assert_eq!(h(1000, 1000, 1000, BF).consumers, 1);
    assert_eq!(h(512, 512, 4096, BF).consumers, 1);
    // few tiles, but 64 × 128 tiles would be two waves (1024 × 2048: 256): two consumers
    let mid = h(1024, 2048, 1024, BF);
    assert_eq!((mid.consumers, mid.bn, mid.stages), (2, 128, 6));
    // the big squares keep the measured two-consumer winner
    for (m, n, k) in [(8192, 8192, 8192), (4096, 4096, 4096), (2048, 2048, 2048)] {
        let c = h(m, n, k, BF);
        assert_eq!((c.consumers, c.bn, c.stages), (2, 256, 3), "{m}x{n}x{k}");
    }
    // a C that TMA cannot store: the register epilogue, still one consumer
    let odd = GemmChoice::heuristic(&GemmProblem::new(64, 8190, 8192, BF, BF, false));
    assert_eq!((odd.consumers, odd.epilogue), (1, Epilogue::Registers));
}

#[test]
fn tuning_files_without_consumers_read_as_two() {
    // a file written before the 64-row tile: no `consumers` field
    let tmp = tempfile::tempdir().unwrap();
    let p = GemmProblem::new(64, 8192, 8192, BF, F32, true);
    let mut t = GemmTable::default();
    // (4 stages: a ring that fits the 128-row tile too, so the old reading is valid)
    let one = GemmChoice { consumers: 1, stages: 4, ..GemmChoice::heuristic(&p) };
    t.insert(&p, Tuned { choice: one, shape: [64, 8192, 8192], tflops: 200.0 });
    let path = t.save(tmp.path(), "GPU").unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.contains("\"consumers\": 1") || text.contains("\"consumers\":1"), "{text}");
    let old = text.replace("\"consumers\": 1", "\"x\": 0").replace("\"consumers\":1", "\"x\":0");
    std::fs::write(&path, old).unwrap();
    let (back, _) = GemmTable::load(tmp.path(), "GPU").unwrap().unwrap();
    assert_eq!(back.choose(&p).consumers, 2);
    assert_eq!(back.choose(&p), GemmChoice { consumers: 2, ..one });
}

#[test]
fn the_heuristic_is_the_measured_winner_where_it_fits() {
    let won = GemmChoice {
        bn: 256,
        stages: 3,
        overlap: true,
        persistent: true,
        raster: Raster::Grouped(8),
        epilogue: Epilogue::Tma,
        split_k: 1,
        cluster: 1,
        consumers: 2,
        pingpong: false,
        epilogue_subtile: 0,
    };
    assert_eq!(GemmChoice::heuristic(&GemmProblem::new(8192, 8192, 8192, BF, BF, true)), won);
    // f32 C: 128 KiB of C tile beside 3 × 48 KiB of ring does not fit
    let f32c = GemmChoice::heuristic(&GemmProblem::new(8192, 8192, 8192, BF, F32, true));
    assert_eq!(f32c, GemmChoice { stages: 4, epilogue: Epilogue::Registers, ..won });
    let odd = GemmChoice::heuristic(&GemmProblem::new(8192, 8190, 8192, BF, BF, false));
    assert_eq!(odd.epilogue, Epilogue::Registers);
}

#[test]
fn tuning_files_round_trip_and_corrupt_ones_are_named() {
    let tmp = tempfile::tempdir().unwrap();
    let dev = "NVIDIA H100 80GB HBM3";
    let p = GemmProblem::new(64, 8192, 8192, BF, F32, true);
    // 4 stages × 32 KiB of ring + a 64 KiB f32 C tile fit the 227 KiB
    let won = GemmChoice {
        bn: 128,
        stages: 4,
        overlap: true,
        persistent: true,
        raster: Raster::Hilbert,
        epilogue: Epilogue::Tma,
        split_k: 1,
        cluster: 1,
        consumers: 2,
        pingpong: false,
        epilogue_subtile: 0,
    };
    assert!(won.apply(p.base()).check().is_ok());
    let mut t = GemmTable::default();
    t.insert(&p, Tuned { choice: won, shape: [64, 8192, 8192], tflops: 131.5 });
    let path = t.save(tmp.path(), dev).unwrap();
    assert_eq!(path, tmp.path().join("gemm-NVIDIA_H100_80GB_HBM3.json"));
    let (back, from) = GemmTable::resolve(tmp.path(), dev);
    assert_eq!(back, t);
    assert_eq!(from, TuningSource::Saved(path.clone()));
    assert_eq!(back.choose(&p), won);
    // the same class with a C that TMA cannot store: the tuned TMA epilogue cannot run it
    let odd = GemmProblem { c_tma: false, ..p.clone() };
    assert_eq!(back.choose(&odd), GemmChoice::heuristic(&odd));
    // and one that does not fit beside this class's f32 C tile (6 stages): the heuristic too
    let mut big = t.clone();
    big.insert(
        &p,
        Tuned { choice: GemmChoice { stages: 6, ..won }, shape: [64, 8192, 8192], tflops: 1.0 },
    );
    assert_eq!(big.choose(&p), GemmChoice::heuristic(&p));
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.contains("\"raster\": \"hilbert\"") && text.contains("\"epilogue\": \"tma\""));
    // a file written before clusters (no `cluster` field) reads as unclustered choices
    assert!(text.contains("\"cluster\": 1"), "{text}");
    let before = text.replace(",\n          \"cluster\": 1", "");
    assert!(!before.contains("cluster"), "{before}");
    std::fs::write(&path, before).unwrap();
    let (old, _) = GemmTable::resolve(tmp.path(), dev);
    assert_eq!((old.choose(&p), old.choose(&p).cluster), (won, 1));
    std::fs::write(&path, &text).unwrap();

    // another device's file under this name, a bad raster, an impossible tile: corrupt
    let other = text.replace(dev, "Another GPU");
    std::fs::write(&path, other).unwrap();
    let e = GemmTable::load(tmp.path(), dev).unwrap_err();
    assert!(e.to_string().contains("it is for device `Another GPU`"), "{e}");
    std::fs::write(&path, text.replace("\"hilbert\"", "\"grouped 0\"")).unwrap();
    let e = GemmTable::load(tmp.path(), dev).unwrap_err().to_string();
    assert!(
        e.contains("raster `grouped 0`: expected `linear`, `grouped G` (G ≥ 1) or `hilbert`"),
        "{e}"
    );
    std::fs::write(&path, text.replace("\"bn\": 128", "\"bn\": 72")).unwrap();
    match GemmTable::load(tmp.path(), dev) {
        Err(TuningError::Corrupt { why, .. }) => {
            assert!(why.contains("entry `bf16>f32 nt m64 n8192 k8192`"), "{why}");
            assert!(why.contains("bn = 72") && why.contains("multiple of 16"), "{why}");
        }
        other => panic!("expected a corrupt file, got {other:?}"),
    }
    let (fallback, from) = GemmTable::resolve(tmp.path(), dev);
    assert_eq!(fallback, GemmTable::default());
    assert!(matches!(from, TuningSource::TableAfter(TuningError::Corrupt { .. })));
    // another tilekit version's file is ignored (its knobs may mean other kernels)
    let version = format!("\"tilekit_version\": \"{}\"", env!("CARGO_PKG_VERSION"));
    assert!(text.contains(&version));
    std::fs::write(&path, text.replace(&version, "\"tilekit_version\": \"0.0.0-old\"")).unwrap();
    assert_eq!(GemmTable::load(tmp.path(), dev).unwrap(), None);
    assert_eq!(file_name(dev), "gemm-NVIDIA_H100_80GB_HBM3.json");
}

/// A (M×K) · W (N×K)ᵀ through `api::gemm_with` with `choice`, against an f64 reference.
fn check_with(choice: GemmChoice, (m, n, k): (i64, i64, i64), out: ScalarType, seed: u64) {
    check_with_pitch(choice, (m, n, k), n, out, seed)
}

/// [`check_with`] into the first `n` columns of a `m × pitch` C poisoned with NaN; the columns
/// past `n` must stay NaN.
fn check_with_pitch(
    choice: GemmChoice,
    (m, n, k): (i64, i64, i64),
    pitch: i64,
    out: ScalarType,
    seed: u64,
) {
    let a = HostTensor::new(
        host::random(BF, (m * k) as usize, seed).unwrap(),
        tilekit_ir::tensor::TensorLayout::contiguous(BF, vec![m, k]).unwrap(),
    )
    .unwrap();
    let w = HostTensor::new(
        host::random(BF, (n * k) as usize, seed + 1).unwrap(),
        tilekit_ir::tensor::TensorLayout::contiguous(BF, vec![n, k]).unwrap(),
    )
    .unwrap();
    let layout = tilekit_ir::tensor::TensorLayout::strided(out, vec![m, n], vec![pitch, 1], 0);
    let mut c =
        HostTensor::new(host::poisoned(out, (m * pitch) as usize).unwrap(), layout.unwrap())
            .unwrap();
    api::gemm_with(&Interp, choice, &a, &w.transpose(0, 1).unwrap(), &mut c).unwrap();
    let (av, wv) = (host::to_f64(&a.buffer()), host::to_f64(&w.buffer()));
    let full = host::to_f64(&c.buffer());
    for i in 0..m as usize {
        for j in n as usize..pitch as usize {
            assert!(full[i * pitch as usize + j].is_nan(), "C[{i}][{j}] past N was written");
        }
    }
    let got: Vec<f64> = (0..(m * n) as usize)
        .map(|ij| full[ij / n as usize * pitch as usize + ij % n as usize])
        .collect();
    let rel = if out == F32 { 1e-5 } else { 1.0 / 128.0 };
    for i in 0..m as usize {
        for j in 0..n as usize {
            let terms = (0..k as usize).map(|x| av[i * k as usize + x] * wv[j * k as usize + x]);
            let want: f64 = terms.clone().sum();
            let tol = terms.map(f64::abs).sum::<f64>() * rel + 1e-6;
            let g = got[i * n as usize + j];
            assert!(
                (g - want).abs() <= tol,
                "{}: C[{i}][{j}] = {g}, reference {want}",
                choice.label()
            );
        }
    }
}

#[test]
fn the_api_runs_tuned_choices_with_their_extra_arguments() {
    let base = GemmChoice {
        bn: 128,
        stages: 2,
        overlap: true,
        persistent: true,
        raster: Raster::Hilbert,
        epilogue: Epilogue::Registers,
        split_k: 1,
        cluster: 1,
        consumers: 2,
        pingpong: false,
        epilogue_subtile: 0,
    };
    // Hilbert order: the API builds and binds the tile table (3 × 2 tiles over 4 "SMs")
    check_with(base, (300, 200, 72), F32, 11);
    // TMA-store epilogue into a bf16 C whose rows are 16-byte multiples
    check_with(
        GemmChoice { epilogue: Epilogue::Tma, raster: Raster::Grouped(2), ..base },
        (130, 136, 64),
        BF,
        12,
    );
    // pairs of blocks sharing B (2-block clusters): 3 M-tiles (the last pair half outside C)
    // walked by the API's persistent grid in groups of one pair
    check_with(
        GemmChoice { cluster: 2, raster: Raster::Grouped(1), ..base },
        (300, 200, 72),
        F32,
        13,
    );
    // ping-pong consumers through the API: Hilbert order with the register epilogue, and the
    // TMA-store epilogue's two C tiles (3 × 2 tiles over the API's persistent grid)
    check_with(GemmChoice { pingpong: true, ..base }, (300, 200, 72), F32, 14);
    check_with(
        GemmChoice { pingpong: true, epilogue: Epilogue::Tma, raster: Raster::Grouped(2), ..base },
        (300, 264, 136),
        BF,
        15,
    );
    // a wide ping-pong tile with the TMA store: the API binds `cm_tail` too (bn 176: two
    // 64-column boxes and three of 16), into the first 312 columns of a C of pitch 328 whose
    // last columns must stay NaN (the second N-tile's first 16-column box, columns 304..320,
    // clipped at 312)
    let wide = GemmChoice {
        bn: 176,
        stages: 3,
        pingpong: true,
        epilogue: Epilogue::Tma,
        raster: Raster::Grouped(2),
        ..base
    };
    check_with_pitch(wide, (300, 312, 136), 328, BF, 16);
    // the same tile in 32-column subtiles with 5 stages: five 64-byte boxes through `cm` and a
    // 32-byte one through `cm_tail`, both bound by the API to the same C, clipped at 312
    let sub = GemmChoice { stages: 5, epilogue_subtile: 32, ..wide };
    check_with_pitch(sub, (300, 312, 136), 328, BF, 17);
}

#[test]
fn the_api_refuses_a_tma_store_into_rows_tma_cannot_address() {
    let a = HostTensor::from_slice(&vec![half::bf16::from_f32(1.0); 64 * 64], &[64, 64]).unwrap();
    let w = HostTensor::from_slice(&vec![half::bf16::from_f32(1.0); 66 * 64], &[66, 64]).unwrap();
    let mut c = HostTensor::from_slice(&vec![half::bf16::ZERO; 64 * 66], &[64, 66]).unwrap();
    let tma = GemmChoice {
        bn: 128,
        stages: 2,
        overlap: false,
        persistent: false,
        raster: Raster::Linear,
        epilogue: Epilogue::Tma,
        split_k: 1,
        cluster: 1,
        consumers: 2,
        pingpong: false,
        epilogue_subtile: 0,
    };
    let e = api::gemm_with(&Interp, tma, &a, &w.transpose(0, 1).unwrap(), &mut c).unwrap_err();
    let e = e.to_string();
    assert!(e.contains("tma store") && e.contains("C strides [66, 1] of bf16"), "{e}");
    // the register epilogue stores the same C
    let regs = GemmChoice { epilogue: Epilogue::Registers, ..tma };
    api::gemm_with(&Interp, regs, &a, &w.transpose(0, 1).unwrap(), &mut c).unwrap();
    assert!(c.to_vec::<half::bf16>().unwrap().iter().all(|v| v.to_f32() == 64.0));
}

#[test]
fn a_split_k_sums_its_partial_products() {
    let split = |split_k, persistent| GemmChoice {
        bn: 128,
        stages: 2,
        overlap: true,
        persistent,
        raster: if persistent { Raster::Grouped(8) } else { Raster::Linear },
        epilogue: Epilogue::Registers,
        split_k,
        cluster: 1,
        consumers: 2,
        pingpong: false,
        epilogue_subtile: 0,
    };
    // 10 k-slices over 3 splits: 4 + 4 + 2; an f32 C
    check_with(split(3, false), (64, 136, 640), F32, 21);
    // 2 k-slices over 3 splits: the last split has none and adds zeros; a bf16 C (the reduce
    // converts), persistent blocks walking (split, tile) pairs
    check_with(split(3, true), (70, 136, 128), BF, 22);
    // an odd N in an even-pitch C: the workspace is one column wider, C's pad stays NaN
    check_with_pitch(split(4, false), (64, 135, 320), 136, F32, 23);
    // 64-row tiles (one consumer): 4 splits of 5 k-slices on 2 × 2 tiles, an odd N; 3 splits
    // with persistent blocks into a bf16 C
    let one = |split_k, persistent| GemmChoice { consumers: 1, ..split(split_k, persistent) };
    check_with_pitch(one(4, false), (100, 135, 1280), 136, F32, 24);
    check_with(one(3, true), (64, 136, 640), BF, 25);
    assert!(one(4, false).label().ends_with("split k 4, bm 64"));
    // the split's label, and a split refused where it cannot run
    assert!(split(4, false).label().ends_with("split k 4"));
    let tma = GemmChoice { epilogue: Epilogue::Tma, ..split(2, false) };
    let p = GemmProblem::new(64, 136, 640, BF, F32, true);
    assert!(p.config(&tma).check().unwrap_err().to_string().contains("split_k = 2 is invalid"));
}

#[test]
fn split_candidates_appear_for_few_tiles_and_long_k() {
    let skinny = GemmProblem::new(64, 8192, 8192, BF, F32, true);
    let splits: Vec<i64> =
        skinny.candidates().iter().map(|c| c.split_k).filter(|&s| s > 1).collect();
    assert!(splits.contains(&2) && splits.contains(&4) && splits.contains(&8), "{splits:?}");
    // more than 64 tiles of 128 × 128: no split; a short K (8 slices): at most 2
    let square = GemmProblem::new(4096, 4096, 4096, BF, F32, true);
    assert!(square.candidates().iter().filter(|c| c.bn == 128).all(|c| c.split_k == 1));
    let short = GemmProblem::new(64, 8192, 512, BF, F32, true);
    assert!(short.candidates().iter().all(|c| c.split_k <= 2));
}

#[test]
fn the_api_runs_the_heuristics_64_row_choices() {
    // M ≤ 64 (bn 128, 8 stages, TMA store of an f32 C) and a few-tile problem (TMA store of a
    // bf16 C), through api::gemm_with against the f64 reference
    let skinny = GemmProblem::new(50, 264, 600, BF, F32, true);
    let c = GemmChoice::heuristic(&skinny);
    assert_eq!((c.consumers, c.stages, c.epilogue), (1, 8, Epilogue::Tma));
    check_with(c, (50, 264, 600), F32, 31);
    let few = GemmProblem::new(130, 136, 200, BF, BF, true);
    let c = GemmChoice::heuristic(&few);
    assert_eq!((c.consumers, c.bn, c.stages), (1, 128, 6));
    check_with(c, (130, 136, 200), BF, 32);
    // the same knobs with two consumers after one: the compiled-kernel cache keeps them apart
    // (the one-consumer kernel on the two-consumer grid would leave half of C's rows NaN)
    // (one block per tile: a persistent walk would cover any grid)
    let one = GemmChoice { bn: 64, persistent: false, raster: Raster::Linear, ..c };
    let two = GemmChoice { consumers: 2, ..one };
    check_with(one, (256, 136, 64), BF, 33);
    check_with(two, (256, 136, 64), BF, 34);
    check_with(one, (256, 136, 64), BF, 35);
}
