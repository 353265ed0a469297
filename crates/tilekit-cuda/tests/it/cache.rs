//! The kernel cache without a GPU: hits, misses, corrupt and truncated entries, concurrent
//! writers, and keys that must differ.

use tilekit_cuda::cache::{CacheKey, CacheOutcome};
use tilekit_cuda::KernelCache;

/// A fresh folder, removed when the test ends (pass or fail).
fn dir() -> tempfile::TempDir {
    tempfile::Builder::new().prefix("tk-cache-test-").tempdir().unwrap()
}

fn key(h: &str) -> CacheKey {
    CacheKey {
        ir_hash: h.into(),
        target: "sm_90a".into(),
        driver_version: 13000,
        tilekit_version: "0.1.0".into(),
    }
}

#[test]
fn miss_then_hit() {
    let d = dir();
    let c = KernelCache::open(d.path()).unwrap();
    let payload: Vec<u8> = (0..1000u32).map(|i| (i * 7 % 251) as u8).collect();
    let (p, o) = c.get_or_build(&key("a"), || Ok(payload.clone())).unwrap();
    assert_eq!((p.as_slice(), o), (payload.as_slice(), CacheOutcome::Miss));
    let (p, o) = c.get_or_build(&key("a"), || panic!("must not rebuild")).unwrap();
    assert_eq!((p, o), (payload, CacheOutcome::Hit));
}

#[test]
fn corrupt_and_truncated_entries_are_rebuilt() {
    let d = dir();
    let c = KernelCache::open(d.path()).unwrap();
    c.put(&key("b"), &[5; 64]).unwrap();
    let path = c.path(&key("b"));
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[60] ^= 0xff;
    std::fs::write(&path, &bytes).unwrap();
    let (p, o) = c.get_or_build(&key("b"), || Ok(vec![6; 64])).unwrap();
    assert_eq!(p, vec![6; 64]);
    assert_eq!(o, CacheOutcome::Rebuilt { reason: "checksum mismatch".into() });
    let bytes = std::fs::read(&path).unwrap();
    std::fs::write(&path, &bytes[..70]).unwrap();
    let (_, o) = c.get_or_build(&key("b"), || Ok(vec![7; 64])).unwrap();
    assert_eq!(
        o,
        CacheOutcome::Rebuilt { reason: "truncated: header says 64 bytes, file holds 22".into() }
    );
    std::fs::write(&path, b"garbage").unwrap();
    let (_, o) = c.get_or_build(&key("b"), || Ok(vec![8; 64])).unwrap();
    assert!(
        matches!(o, CacheOutcome::Rebuilt { ref reason } if reason.starts_with("not a tilekit cache entry")),
        "{o:?}"
    );
    assert_eq!(c.get(&key("b")).unwrap(), Some(vec![8; 64]));
}

#[test]
fn concurrent_writers_leave_a_whole_entry() {
    let tmp = dir();
    let d = tmp.path().to_path_buf();
    let handles: Vec<_> = (0..8)
        .map(|t| {
            let d = d.clone();
            std::thread::spawn(move || {
                let c = KernelCache::open(&d).unwrap();
                for _ in 0..20 {
                    c.put(&key("same"), &vec![t as u8; 4096]).unwrap();
                    let got = c.get(&key("same")).unwrap().unwrap();
                    assert_eq!(got.len(), 4096);
                    assert!(got.iter().all(|&b| b == got[0]), "a torn entry was read");
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    let leftovers: Vec<_> = std::fs::read_dir(&d).unwrap().filter_map(|e| e.ok()).collect();
    assert_eq!(leftovers.len(), 1, "temporary files left behind");
}

#[test]
fn a_cache_in_a_folder_that_cannot_be_made_is_an_error() {
    let tmp = dir();
    let file = tmp.path().join("a-file");
    std::fs::write(&file, b"x").unwrap();
    let e = KernelCache::open(file.join("below")).unwrap_err().to_string();
    assert!(e.contains("cannot create the folder"), "{e}");
}

#[test]
fn every_key_field_matters() {
    let base = key("h");
    let mut names = std::collections::HashSet::new();
    names.insert(base.file_name());
    for k in [
        CacheKey { ir_hash: "h2".into(), ..base.clone() },
        CacheKey { target: "sm_80".into(), ..base.clone() },
        CacheKey { driver_version: 12080, ..base.clone() },
        CacheKey { tilekit_version: "0.2.0".into(), ..base.clone() },
    ] {
        assert!(names.insert(k.file_name()), "{k:?}");
    }
}

/// Past its byte bound the folder loses its least recently used entries, a hit counting as a
/// use, and keeps foreign files.
#[test]
fn prune_drops_least_recently_used() {
    use std::time::{Duration, SystemTime};
    let tmp = tempfile::tempdir().unwrap();
    let c = KernelCache::open(tmp.path()).unwrap().with_max_bytes(8000);
    let key = |i: usize| CacheKey {
        ir_hash: format!("k{i}"),
        target: "sm_90a".into(),
        driver_version: 1,
        tilekit_version: "0".into(),
    };
    std::fs::write(tmp.path().join("notes.txt"), vec![7u8; 50_000]).unwrap();
    let t0 = SystemTime::now() - Duration::from_secs(3600);
    for i in 0..10 {
        c.put(&key(i), &vec![i as u8; 952]).unwrap();
        // entry i last used at t0 + i seconds
        let f = std::fs::File::options().append(true).open(c.path(&key(i))).unwrap();
        f.set_modified(t0 + Duration::from_secs(i as u64)).unwrap();
    }
    // entries 0 and 1 are used again: now the most recent
    assert_eq!(c.get(&key(0)).unwrap().unwrap(), vec![0u8; 952]);
    assert_eq!(c.get(&key(1)).unwrap().unwrap(), vec![1u8; 952]);
    let p = c.prune().unwrap();
    assert_eq!((p.entries, p.bytes), (10, 10_000));
    assert_eq!((p.removed, p.removed_bytes), (4, 4000)); // 6000 = 3/4 of 8000 left
    let kept: Vec<usize> = (0..10).filter(|&i| c.path(&key(i)).exists()).collect();
    assert_eq!(kept, vec![0, 1, 6, 7, 8, 9]);
    assert!(tmp.path().join("notes.txt").exists());
    assert_eq!(c.prune().unwrap().removed, 0);
}
