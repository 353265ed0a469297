//! Per-device tuning: the built-in table, files saved by `tilekit tune --save`, and what happens
//! with files that cannot be used.

use tilekit_ir::ScalarType;
use tilekit_ops::tuning::{file_name, Tuning, TuningError, TuningSource};

#[test]
fn the_table_gives_the_h200_its_online_shape_and_everyone_the_defaults() {
    let h200 = Tuning::for_device("NVIDIA H200");
    assert_eq!((h200.online.threads, h200.online.unroll, h200.online.reverse), (512, 4, true));
    let h100 = Tuning::for_device("NVIDIA H100 80GB HBM3");
    assert_eq!(h100, Tuning::default());
    assert_eq!(h100.softmax_threads(ScalarType::BF16), 512);
    assert_eq!(h100.softmax_threads(ScalarType::F32), 256);
    assert!(h100.unmorton_storage_order);
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
