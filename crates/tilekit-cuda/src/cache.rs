//! The on-disk kernel cache: compiled cubins keyed by what they were built from.
//!
//! ```text
//!   key = sha256(IR hash ‖ target ‖ driver version ‖ tilekit version)  →  <dir>/<key>.cubin
//!
//!   entry file:  "TKCUBIN1" | payload length (u64 LE) | sha256(payload) | payload
//!
//!   get_or_build(key, build):
//!     file absent            → build, store atomically (temp file + rename), Miss
//!     file valid             → Hit (no JIT)
//!     file corrupt/truncated → build, replace, Rebuilt { reason }  (the caller warns)
//! ```
//!
//! Several processes may build the same kernel at once: each writes its own temporary file in
//! the cache folder and renames it over the entry, which is atomic on one file system, so a
//! reader sees either no entry or a whole one. The folder is `$TILEKIT_CACHE_DIR` if set, else
//! the user's cache directory (`~/.cache/tilekit/kernels` on Linux).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use sha2::{Digest, Sha256};

use crate::error::{CudaError, Result};

const MAGIC: &[u8; 8] = b"TKCUBIN1";

/// What a compiled kernel was built from.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct CacheKey {
    /// Hash of the kernel's IR (or of its PTX text).
    pub ir_hash: String,
    /// PTX target, e.g. `sm_90a`.
    pub target: String,
    /// Driver version (its JIT produced the cubin).
    pub driver_version: i32,
    /// tilekit version.
    pub tilekit_version: String,
}

impl CacheKey {
    /// The entry's file name: the sha256 of every field.
    ///
    /// ```
    /// use tilekit_cuda::cache::CacheKey;
    /// let k = CacheKey { ir_hash: "ab".into(), target: "sm_90a".into(), driver_version: 13000, tilekit_version: "0.1.0".into() };
    /// assert_eq!(k.file_name().len(), 64 + ".cubin".len());
    /// let mut k2 = k.clone();
    /// k2.driver_version = 13010;
    /// assert_ne!(k.file_name(), k2.file_name());
    /// ```
    pub fn file_name(&self) -> String {
        let text = format!(
            "{}\n{}\n{}\n{}",
            self.ir_hash, self.target, self.driver_version, self.tilekit_version
        );
        format!("{}.cubin", hex(&Sha256::digest(text.as_bytes())))
    }
}

/// The sha256 of some bytes, in hex (for IR and PTX hashes).
///
/// ```
/// assert_eq!(tilekit_cuda::cache::content_hash(b"").len(), 64);
/// ```
pub fn content_hash(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// How a lookup went.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CacheOutcome {
    /// The entry was there and whole.
    Hit,
    /// No entry: built and stored.
    Miss,
    /// The entry was corrupt: rebuilt and replaced. The reason says what was wrong.
    Rebuilt {
        /// What was wrong with the old entry.
        reason: String,
    },
}

/// A kernel cache in one folder.
#[derive(Debug, Clone)]
pub struct KernelCache {
    dir: PathBuf,
}

static TMP_COUNTER: AtomicU64 = AtomicU64::new(0);

impl KernelCache {
    /// The default folder: `$TILEKIT_CACHE_DIR`, else `<user cache dir>/tilekit/kernels`, else
    /// a `tilekit-kernels` folder in the temporary directory.
    pub fn default_dir() -> PathBuf {
        if let Some(d) = std::env::var_os("TILEKIT_CACHE_DIR") {
            return PathBuf::from(d);
        }
        match dirs::cache_dir() {
            Some(d) => d.join("tilekit").join("kernels"),
            None => std::env::temp_dir().join("tilekit-kernels"),
        }
    }

    /// Opens (and creates) a cache folder.
    ///
    /// ```
    /// let tmp = tempfile::tempdir().unwrap(); // removed when dropped
    /// let dir = tmp.path().join("kernels");
    /// let c = tilekit_cuda::KernelCache::open(&dir).unwrap();
    /// assert_eq!(c.dir(), dir.as_path());
    /// assert!(dir.is_dir());
    /// ```
    pub fn open(dir: impl AsRef<Path>) -> Result<Self> {
        let dir = dir.as_ref().to_path_buf();
        std::fs::create_dir_all(&dir).map_err(|e| CudaError::Cache {
            path: dir.clone(),
            message: format!("cannot create the folder: {e}"),
        })?;
        Ok(KernelCache { dir })
    }

    /// The folder.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The path of a key's entry.
    pub fn path(&self, key: &CacheKey) -> PathBuf {
        self.dir.join(key.file_name())
    }

    /// Reads an entry: `Ok(None)` if absent, `Err(reason)` if present but corrupt.
    pub fn get(&self, key: &CacheKey) -> Result<Option<Vec<u8>>, String> {
        let bytes = match std::fs::read(self.path(key)) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(format!("unreadable: {e}")),
        };
        if bytes.len() < 48 || &bytes[..8] != MAGIC {
            return Err(format!("not a tilekit cache entry ({} bytes, bad header)", bytes.len()));
        }
        let len = u64::from_le_bytes(bytes[8..16].try_into().expect("8 bytes")) as usize;
        let payload = &bytes[48..];
        if payload.len() != len {
            return Err(format!(
                "truncated: header says {len} bytes, file holds {}",
                payload.len()
            ));
        }
        if Sha256::digest(payload).as_slice() != &bytes[16..48] {
            return Err("checksum mismatch".to_string());
        }
        Ok(Some(payload.to_vec()))
    }

    /// Stores an entry atomically (temporary file + rename).
    pub fn put(&self, key: &CacheKey, payload: &[u8]) -> Result<()> {
        let path = self.path(key);
        let tmp = self.dir.join(format!(
            ".{}.{}.{}.tmp",
            key.file_name(),
            std::process::id(),
            TMP_COUNTER.fetch_add(1, Ordering::Relaxed)
        ));
        let mut data = Vec::with_capacity(48 + payload.len());
        data.extend_from_slice(MAGIC);
        data.extend_from_slice(&(payload.len() as u64).to_le_bytes());
        data.extend_from_slice(&Sha256::digest(payload));
        data.extend_from_slice(payload);
        let err =
            |e: std::io::Error| CudaError::Cache { path: path.clone(), message: e.to_string() };
        std::fs::write(&tmp, &data).map_err(err)?;
        std::fs::rename(&tmp, &path).map_err(|e| {
            let _ = std::fs::remove_file(&tmp);
            err(e)
        })
    }

    /// Returns the cached payload, or builds, stores and returns it.
    ///
    /// ```
    /// use tilekit_cuda::cache::{CacheKey, CacheOutcome};
    /// let tmp = tempfile::tempdir().unwrap();
    /// let c = tilekit_cuda::KernelCache::open(tmp.path()).unwrap();
    /// let k = CacheKey { ir_hash: "x".into(), target: "sm_90a".into(), driver_version: 1, tilekit_version: "0".into() };
    /// let (a, o) = c.get_or_build(&k, || Ok(vec![1, 2, 3])).unwrap();
    /// assert_eq!((a, o), (vec![1, 2, 3], CacheOutcome::Miss));
    /// let (b, o) = c.get_or_build(&k, || unreachable!()).unwrap();
    /// assert_eq!((b, o), (vec![1, 2, 3], CacheOutcome::Hit));
    /// ```
    pub fn get_or_build(
        &self,
        key: &CacheKey,
        build: impl FnOnce() -> Result<Vec<u8>>,
    ) -> Result<(Vec<u8>, CacheOutcome)> {
        let outcome = match self.get(key) {
            Ok(Some(p)) => return Ok((p, CacheOutcome::Hit)),
            Ok(None) => CacheOutcome::Miss,
            Err(reason) => CacheOutcome::Rebuilt { reason },
        };
        let payload = build()?;
        self.put(key, &payload)?;
        Ok((payload, outcome))
    }
}
