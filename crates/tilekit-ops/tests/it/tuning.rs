//! Per-device tuning: the built-in table, files saved by `tilekit tune --save`, and what happens
//! with files that cannot be used.

use tilekit_ir::ScalarType;
use tilekit_ops::tuning::{file_name, Tuning, TuningError, TuningSource};

/// The saved file `path` (text `text`) with `from` replaced by `to` is refused as corrupt,
/// naming `why` (e.g. `softmax_coop.threads = 500`) as out of range.
fn assert_out_of_range(path: &std::path::Path, text: &str, from: &str, to: &str, why: &str) {
    assert!(text.contains(from), "{text}");
    std::fs::write(path, text.replace(from, to)).unwrap();
    let dir = path.parent().unwrap();
    let dev = "Some GPU";
    assert_eq!(path.file_name().unwrap().to_str().unwrap(), file_name(dev));
    let e = Tuning::load(dir, dev).unwrap_err();
    assert!(
        matches!(&e, TuningError::Corrupt { why: w, .. } if *w == format!("{why} is out of range")),
        "{e}"
    );
}

#[test]
fn the_table_gives_h100_and_h200_their_shapes_and_everyone_else_the_defaults() {
    let h200 = Tuning::for_device("NVIDIA H200");
    assert_eq!((h200.online.threads, h200.online.unroll, h200.online.reverse), (512, 4, true));
    assert_eq!(h200.softmax_cluster, Tuning::default().softmax_cluster);
    // since session 17 the H200's cooperative shapes hold part of each slice in registers,
    // and its clusters take rows of up to 4 blocks
    use tilekit_ops::reduce::CoopTuning;
    let held = |t: u32, p: i64, h: u32| CoopTuning::in_shared(t, p, 64).with_held(h);
    assert_eq!(h200.softmax_coop, Some(held(256, 16, 10).with_cluster()));
    let bf16 = CoopTuning::in_shared(512, 16, 96).with_held(4).with_cluster();
    assert_eq!(h200.softmax_coop_16bit, Some(bf16));
    assert_eq!(h200.softmax_coop_long, Some(held(384, 8, 6)));
    assert_eq!(h200.softmax_coop_long_16bit, Some(held(384, 16, 6).with_cluster()));
    assert_eq!(h200.softmax_cluster_row_blocks, 3);
    let h100 = Tuning::for_device("NVIDIA H100 80GB HBM3");
    // since session 16 the H100 takes clusters up to 8 blocks a row and no staged kernel
    assert_eq!(h100.softmax_staged, None);
    assert_eq!(h100.softmax_cluster_row_blocks, 8);
    assert_eq!(
        h100.softmax_coop,
        Some(CoopTuning::in_shared(256, 32, 64).with_one_exp().with_cluster())
    );
    assert!(h100.softmax_coop.unwrap().cluster && !h100.softmax_coop_long.unwrap().cluster);
    let c = h100.softmax_cluster.unwrap();
    assert_eq!((c.threads, c.max_cluster, c.stream), (512, 4, true));
    assert_eq!(c.plan(ScalarType::F32, 65536), Some((4, 2)));
    assert_eq!(h100.softmax_threads(ScalarType::BF16), 512);
    assert_eq!(h100.softmax_threads(ScalarType::F32), 256);
    assert!(h100.unmorton_storage_order);
    assert_eq!(Tuning::for_device("NVIDIA A100-SXM4-80GB"), Tuning::default());
}

#[test]
fn a_saved_tuning_wins_over_the_table_and_survives_a_round_trip() {
    let tmp = tempfile::tempdir().unwrap();
    let t = Tuning { softmax_threads_bf16: 1024, transpose_micro_16bit: 4, ..Tuning::default() };
    let path = t.save(tmp.path(), "NVIDIA H200").unwrap();
    assert_eq!(path.file_name().unwrap().to_str().unwrap(), file_name("NVIDIA H200"));
    assert_eq!(Tuning::resolve(tmp.path(), "NVIDIA H200"), (t, TuningSource::Saved(path)));
    // no temporary file is left beside it
    assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 1);
}

#[test]
fn unusable_files_are_named_errors_and_the_table_is_used() {
    let tmp = tempfile::tempdir().unwrap();
    let dev = "Some GPU";
    let path = tmp.path().join(file_name(dev));
    let good = Tuning::default().save(tmp.path(), dev).unwrap();
    let text = std::fs::read_to_string(&good).unwrap();
    // out-of-range knobs
    std::fs::write(
        &path,
        text.replace("\"softmax_threads_bf16\": 512", "\"softmax_threads_bf16\": 100"),
    )
    .unwrap();
    let e = Tuning::load(tmp.path(), dev).unwrap_err();
    assert!(
        matches!(&e, TuningError::Corrupt { why, .. } if why == "softmax_threads_bf16 = 100 is out of range"),
        "{e}"
    );
    // another device's file under this name
    std::fs::write(&path, text.replace("\"device\": \"Some GPU\"", "\"device\": \"Other\""))
        .unwrap();
    let e = Tuning::load(tmp.path(), dev).unwrap_err().to_string();
    assert!(e.contains("it is for device `Other`, not `Some GPU`"), "{e}");
    let (t, source) = Tuning::resolve(tmp.path(), dev);
    assert_eq!(t, Tuning::for_device(dev));
    assert!(matches!(source, TuningSource::TableAfter(TuningError::Corrupt { .. })));
    // a file from another tilekit version is ignored, not an error
    let old = text.replace(
        &format!("\"tilekit_version\": \"{}\"", env!("CARGO_PKG_VERSION")),
        "\"tilekit_version\": \"0.0.0-old\"",
    );
    assert_ne!(old, text);
    std::fs::write(&path, old).unwrap();
    assert_eq!(Tuning::load(tmp.path(), dev).unwrap(), None);
    assert_eq!(Tuning::resolve(tmp.path(), dev).1, TuningSource::Table);
}

#[test]
fn transpose_loops_are_saved_validated_and_default_to_one_tile_per_block() {
    use tilekit_ops::transpose::TransposeLoop;
    let tmp = tempfile::tempdir().unwrap();
    let dev = "Some GPU";
    // the default is today's kernel: one tile per block, for both sizes
    assert_eq!(Tuning::default().transpose_loop_f32.tiles_per_block, 1);
    assert_eq!(Tuning::default().transpose_loop_16bit.tiles_per_block, 1);
    let t = Tuning {
        transpose_loop_f32: TransposeLoop {
            tiles_per_block: 16,
            buffers: 2,
            prefetch: false,
            min_blocks: 0,
            cache: tilekit_ir::GlobalCache::Default,
        },
        transpose_loop_16bit: TransposeLoop {
            tiles_per_block: 4,
            buffers: 1,
            prefetch: true,
            min_blocks: 0,
            cache: tilekit_ir::GlobalCache::Default,
        },
        ..Tuning::default()
    };
    let path = t.save(tmp.path(), dev).unwrap();
    assert_eq!(Tuning::load(tmp.path(), dev).unwrap(), Some((t, path.clone())));
    let text = std::fs::read_to_string(&path).unwrap();
    // out-of-range loops: typed errors naming the field and the value
    for (from, to, why) in [
        (
            "\"tiles_per_block\": 16",
            "\"tiles_per_block\": 0",
            "transpose_loop_f32.tiles_per_block = 0",
        ),
        (
            "\"tiles_per_block\": 4",
            "\"tiles_per_block\": 65",
            "transpose_loop_16bit.tiles_per_block = 65",
        ),
        ("\"buffers\": 2", "\"buffers\": 3", "transpose_loop_f32.buffers = 3"),
    ] {
        assert_out_of_range(&path, &text, from, to, why);
    }
    // a file of this version written before the loops existed loads with the default loops
    let mut v: serde_json::Value = serde_json::from_str(&text).unwrap();
    let knobs = v["tuning"].as_object_mut().unwrap();
    knobs.remove("transpose_loop_f32");
    knobs.remove("transpose_loop_16bit");
    std::fs::write(&path, serde_json::to_string(&v).unwrap()).unwrap();
    let (got, _) = Tuning::load(tmp.path(), dev).unwrap().unwrap();
    assert_eq!(
        got,
        Tuning {
            transpose_loop_f32: TransposeLoop::default(),
            transpose_loop_16bit: TransposeLoop::default(),
            ..t
        }
    );
}

#[test]
fn the_coop_shape_is_saved_validated_and_off_by_default() {
    use tilekit_ops::reduce::CoopTuning;
    let tmp = tempfile::tempdir().unwrap();
    let dev = "Some GPU";
    // off where nothing was measured; on for the H100 and the H200 (measured 2026-11-26)
    assert_eq!(Tuning::default().softmax_coop, None);
    assert_eq!(Tuning::default().softmax_coop_16bit, None);
    assert_eq!(Tuning::for_device("Some Future GPU").softmax_coop, None);
    // (the H100's since session 16: a cluster a row, the counter kernel for longer rows)
    assert_eq!(
        Tuning::for_device("NVIDIA H100 80GB HBM3").softmax_coop,
        Some(CoopTuning::in_shared(256, 32, 64).with_one_exp().with_cluster())
    );
    assert_eq!(
        Tuning::for_device("NVIDIA H100 80GB HBM3").softmax_coop_long,
        Some(CoopTuning::in_shared(256, 32, 64))
    );
    let t = Tuning { softmax_coop: Some(CoopTuning::in_registers(512, 48)), ..Tuning::default() };
    let path = t.save(tmp.path(), dev).unwrap();
    assert_eq!(Tuning::load(tmp.path(), dev).unwrap(), Some((t, path.clone())));
    let text = std::fs::read_to_string(&path).unwrap();
    for (from, to, why) in [
        ("\"threads\": 512", "\"threads\": 500", "softmax_coop.threads = 500"),
        ("\"per_thread\": 48", "\"per_thread\": 65", "softmax_coop.per_thread = 65"),
    ] {
        assert_out_of_range(&path, &text, from, to, why);
    }
    // a file written before the coop existed loads with it off
    let mut v: serde_json::Value = serde_json::from_str(&text).unwrap();
    v["tuning"].as_object_mut().unwrap().remove("softmax_coop");
    std::fs::write(&path, serde_json::to_string(&v).unwrap()).unwrap();
    assert_eq!(Tuning::load(tmp.path(), dev).unwrap().unwrap().0.softmax_coop, None);
}

#[test]
fn the_coop_shared_memory_slice_is_saved_validated_and_defaults_to_registers() {
    use tilekit_ops::reduce::CoopTuning;
    let tmp = tempfile::tempdir().unwrap();
    let dev = "Some GPU";
    let t = Tuning { softmax_coop: Some(CoopTuning::in_shared(256, 16, 48)), ..Tuning::default() };
    let path = t.save(tmp.path(), dev).unwrap();
    assert_eq!(Tuning::load(tmp.path(), dev).unwrap(), Some((t, path.clone())));
    let text = std::fs::read_to_string(&path).unwrap();
    assert_out_of_range(
        &path,
        &text,
        "\"smem_kib\": 48",
        "\"smem_kib\": 201",
        "softmax_coop.smem_kib = 201",
    );
    // a coop shape saved before the shared-memory variant existed holds its slice in registers
    let mut v: serde_json::Value = serde_json::from_str(&text).unwrap();
    v["tuning"]["softmax_coop"].as_object_mut().unwrap().remove("smem_kib");
    std::fs::write(&path, serde_json::to_string(&v).unwrap()).unwrap();
    let c = Tuning::load(tmp.path(), dev).unwrap().unwrap().0.softmax_coop.unwrap();
    assert_eq!((c, c.smem()), (CoopTuning::in_registers(256, 16), false));
}

/// The device tables route long softmax rows by dtype: on the H100 (session 16) every long
/// row is cooperative, one cluster a row up to 8 blocks, the counter kernel beyond; on the H200
/// (session 17) with part of each slice held in registers, clusters up to 3 blocks a row, and
/// the long shapes beyond (bf16: clusters of 6, f32: the counter), each dtype with its own.
#[test]
fn device_tables_route_long_softmax_rows_by_dtype() {
    use tilekit_ops::check::{plan_tuned, Op};
    let softmax = Op::named("softmax").unwrap();
    let h100 = Tuning::for_device("NVIDIA H100 80GB HBM3");
    let h200 = Tuning::for_device("NVIDIA H200");
    let name = |t: Tuning, cols: i64, ty: ScalarType| {
        let (k, grid) = plan_tuned(softmax, &[4, cols], ty, t).unwrap();
        (k.kernel().name.clone(), k.kernel().block_dim[0], grid[0])
    };
    // H100: a row's blocks as one cluster while a row takes at most 8 (bf16 65536: 2 blocks
    // of 64 KiB, 262144: 8; f32 65536: 4), one exponential per element
    let cl = "softmax_cluster_smem_1exp".to_string();
    assert_eq!(name(h100, 65536, ScalarType::BF16), (cl.clone(), 256, 8));
    assert_eq!(name(h100, 262144, ScalarType::BF16), (cl.clone(), 256, 32));
    assert_eq!(name(h100, 65536, ScalarType::F32), (cl, 256, 16));
    // H200: bf16 65536 in one block (96 KiB shared + 32 KiB registers), f32 65536 in
    // clusters of 3 (48 + 40 KiB); bf16 262144 in clusters of 6 of 384 threads (60 + 36 KiB)
    let held = "softmax_cluster_smem_1exp_held".to_string();
    assert_eq!(name(h200, 65536, ScalarType::BF16), (held.clone(), 512, 4));
    assert_eq!(name(h200, 65536, ScalarType::F32), (held.clone(), 256, 12));
    assert_eq!(name(h200, 262144, ScalarType::BF16), (held, 384, 24));
    // f32 262144: 11 blocks at the counter (the planning device here has 4 multiprocessors:
    // too few for 11 waiting blocks, so the shape is checked, not planned)
    let long = |n: i64, ty: ScalarType| h200.softmax_coop_for_row(ty, n).unwrap();
    let f32_long = long(262144, ScalarType::F32);
    assert!(!f32_long.cluster && f32_long.held == 6, "{f32_long:?}");
    assert_eq!(f32_long.plan(ScalarType::F32, 262144), Some((11, 5)));
    // bf16 2^20 (22 blocks): more than a cluster holds, the long shape at the counter
    let bf16_long = long(1 << 20, ScalarType::BF16);
    assert!(!bf16_long.cluster && bf16_long.held == 6, "{bf16_long:?}");
    // rows that fit registers never take it
    assert_eq!(name(h200, 16384, ScalarType::F32).0, "softmax");
}

#[test]
fn the_16bit_coop_shape_is_validated_and_absent_from_old_files() {
    use tilekit_ops::reduce::CoopTuning;
    let tmp = tempfile::tempdir().unwrap();
    let dev = "Some GPU";
    let c = CoopTuning::in_shared(256, 16, 32);
    let t = Tuning { softmax_coop_16bit: Some(c), ..Tuning::default() };
    let path = t.save(tmp.path(), dev).unwrap();
    assert_eq!(Tuning::load(tmp.path(), dev).unwrap(), Some((t, path.clone())));
    let mut v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    v["tuning"]["softmax_coop_16bit"]["threads"] = 1000.into();
    std::fs::write(&path, serde_json::to_string(&v).unwrap()).unwrap();
    let e = Tuning::load(tmp.path(), dev).unwrap_err().to_string();
    assert!(e.contains("softmax_coop_16bit.threads") && e.contains("1000"), "{e}");
    v["tuning"].as_object_mut().unwrap().remove("softmax_coop_16bit");
    std::fs::write(&path, serde_json::to_string(&v).unwrap()).unwrap();
    assert_eq!(Tuning::load(tmp.path(), dev).unwrap().unwrap().0.softmax_coop_16bit, None);
}

#[test]
fn held_vectors_and_the_cluster_row_limit_are_validated() {
    use tilekit_ops::reduce::CoopTuning;
    let tmp = tempfile::tempdir().unwrap();
    let dev = "Some GPU";
    // vectors held in registers beyond 16, clusters of no block
    let held = Tuning {
        softmax_coop: Some(CoopTuning::in_shared(256, 16, 48).with_held(4)),
        ..Tuning::default()
    };
    let path = held.save(tmp.path(), dev).unwrap();
    assert_eq!(Tuning::load(tmp.path(), dev).unwrap(), Some((held, path.clone())));
    let text = std::fs::read_to_string(&path).unwrap();
    assert_out_of_range(&path, &text, "\"held\": 4", "\"held\": 17", "softmax_coop.held = 17");
    let text = std::fs::read_to_string(Tuning::default().save(tmp.path(), dev).unwrap()).unwrap();
    assert_out_of_range(
        &path,
        &text,
        "\"softmax_cluster_row_blocks\": 8",
        "\"softmax_cluster_row_blocks\": 0",
        "softmax_cluster_row_blocks = 0",
    );
    // a file saved before session 17 has neither: none held, the default limit
    let mut v: serde_json::Value = serde_json::from_str(&text).unwrap();
    v["tuning"].as_object_mut().unwrap().remove("softmax_cluster_row_blocks");
    std::fs::write(&path, serde_json::to_string(&v).unwrap()).unwrap();
    let t = Tuning::load(tmp.path(), dev).unwrap().unwrap().0;
    assert_eq!(t.softmax_cluster_row_blocks, tilekit_ops::tuning::CLUSTER_ROW_BLOCKS);
}
