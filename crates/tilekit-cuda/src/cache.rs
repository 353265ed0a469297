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
//!
//!   bounded: every 64th store of a handle (and its first) sums the entries; past max_bytes (1 GiB unless
//!   told) the least recently used go (a hit refreshes an entry's time) down to 3/4 of it
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
    max_bytes: u64,
    /// Stores through this handle (and its clones): every 64th prunes.
    puts: std::sync::Arc<AtomicU64>,
}

static TMP_COUNTER: AtomicU64 = AtomicU64::new(0);

/// How many bytes of entries a cache folder keeps unless told otherwise
/// ([`KernelCache::with_max_bytes`]): tens of thousands of kernels.
pub const DEFAULT_MAX_BYTES: u64 = 1 << 30;

/// What [`KernelCache::prune`] found and removed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Pruned {
    /// Entries in the folder before.
    pub entries: usize,
    /// Their bytes.
    pub bytes: u64,
    /// Entries removed (least recently used first).
    pub removed: usize,
    /// Their bytes.
    pub removed_bytes: u64,
}

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
        Ok(KernelCache { dir, max_bytes: DEFAULT_MAX_BYTES, puts: Default::default() })
    }

    /// The same folder keeping at most `max_bytes` of entries (at least one entry is kept).
    ///
    /// ```
    /// let tmp = tempfile::tempdir().unwrap();
    /// let c = tilekit_cuda::KernelCache::open(tmp.path()).unwrap().with_max_bytes(1 << 20);
    /// assert_eq!(c.max_bytes(), 1 << 20);
    /// ```
    pub fn with_max_bytes(self, max_bytes: u64) -> Self {
        KernelCache { max_bytes, ..self }
    }

    /// The most bytes of entries kept.
    pub fn max_bytes(&self) -> u64 {
        self.max_bytes
    }

    /// Removes the least recently used entries (by modification time, which a hit refreshes)
    /// until the folder's entries fit in three quarters of [`Self::max_bytes`], if they are
    /// over it. Files that are not entries are left alone; an entry another process removes
    /// first is not an error.
    ///
    /// ```
    /// use tilekit_cuda::cache::CacheKey;
    /// let tmp = tempfile::tempdir().unwrap();
    /// let c = tilekit_cuda::KernelCache::open(tmp.path()).unwrap().with_max_bytes(4000);
    /// for i in 0..6 {
    ///     let k = CacheKey { ir_hash: i.to_string(), target: "t".into(), driver_version: 1, tilekit_version: "0".into() };
    ///     c.put(&k, &[0u8; 952]).unwrap(); // 1000 bytes with the header
    /// }
    /// let p = c.prune().unwrap();
    /// assert_eq!((p.entries, p.bytes), (6, 6000));
    /// assert_eq!(p.removed, 3); // down to 3000 = 3/4 of 4000
    /// ```
    pub fn prune(&self) -> Result<Pruned> {
        let err = |e: std::io::Error| CudaError::Cache {
            path: self.dir.clone(),
            message: format!("cannot list the folder: {e}"),
        };
        let mut entries = Vec::new();
        for e in std::fs::read_dir(&self.dir).map_err(err)? {
            let Ok(e) = e else { continue };
            let name = e.file_name();
            let name = name.to_string_lossy();
            if !name.ends_with(".cubin") || name.starts_with('.') {
                continue;
            }
            let Ok(meta) = e.metadata() else { continue };
            let time = meta.modified().unwrap_or(std::time::SystemTime::UNIX_EPOCH);
            entries.push((time, meta.len(), e.path()));
        }
        let mut p = Pruned {
            entries: entries.len(),
            bytes: entries.iter().map(|e| e.1).sum(),
            ..Pruned::default()
        };
        if p.bytes <= self.max_bytes {
            return Ok(p);
        }
        entries.sort();
        let target = self.max_bytes - self.max_bytes / 4;
        let mut left = p.bytes;
        for (_, len, path) in &entries[..entries.len() - 1] {
            if left <= target {
                break;
            }
            if std::fs::remove_file(path).is_ok() {
                p.removed += 1;
                p.removed_bytes += len;
            }
            left -= len;
        }
        Ok(p)
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
        // a hit is a use: the entry is recent for pruning (best effort, a read-only folder
        // still serves hits)
        if let Ok(f) = std::fs::File::options().append(true).open(self.path(key)) {
            let _ = f.set_modified(std::time::SystemTime::now());
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
        })?;
        if self.puts.fetch_add(1, Ordering::Relaxed).is_multiple_of(64) {
            self.prune()?;
        }
        Ok(())
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
