//! Where compiled R1CS files are kept (`<dir>/<circuit id>.r1cs`, the
//! format of [`crate::r1cs`]'s file module) and what is done with one that
//! cannot be used: a missing, truncated, corrupt, stale or other circuit's
//! file is never used; the circuit is recorded again (a warning names why)
//! and the file replaced. A directory that cannot be written is still read,
//! and nothing is written there; with no directory every R1CS lives in
//! memory only. Each case is said once in a log line when the store is made.

use crate::r1cs::{CompiledR1cs, R1csFileError};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

/// See the module documentation.
#[derive(Debug, Clone, Default)]
pub struct R1csStore {
    /// `None`: memory only.
    dir: Option<PathBuf>,
    /// Whether files are written there.
    writable: bool,
}

impl R1csStore {
    /// Files in `dir`, created if missing. When it cannot be created or
    /// written, files there are still read and none is written.
    pub fn in_dir(dir: impl Into<PathBuf>) -> Self {
        let dir = dir.into();
        let writable = std::fs::create_dir_all(&dir).is_ok()
            && tempfile::Builder::new()
                .prefix(".r1cs-probe-")
                .tempfile_in(&dir)
                .is_ok();
        if writable {
            tracing::info!(dir = %dir.display(), "compiled R1CS files kept in this directory");
        } else {
            tracing::warn!(dir = %dir.display(),
                "the compiled R1CS directory is not writable: files there are read, new ones kept in memory only");
        }
        Self {
            dir: Some(dir),
            writable,
        }
    }

    /// No files: every R1CS is recorded in memory at first use.
    pub fn memory_only() -> Self {
        Self::default()
    }

    /// The directory, when there is one.
    pub fn dir(&self) -> Option<&Path> {
        self.dir.as_deref()
    }

    /// Whether new files are written.
    pub fn writable(&self) -> bool {
        self.writable
    }

    /// The file of `circuit_id`; `None` without a directory or for an id
    /// that is no plain file name.
    pub fn path(&self, circuit_id: &str) -> Option<PathBuf> {
        let plain = !circuit_id.is_empty()
            && !circuit_id.starts_with('.')
            && circuit_id
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b));
        Some(self.dir.as_ref()?.join(format!("{circuit_id}.r1cs"))).filter(|_| plain)
    }

    /// The R1CS of `circuit_id` (for circuits shaped by `shape`) from its
    /// file; `None` when there is none or it cannot be used (a warning
    /// says why; it is replaced once recorded again).
    pub fn load(&self, circuit_id: &str, shape: &str) -> Option<CompiledR1cs> {
        let path = self.path(circuit_id)?;
        let started = Instant::now();
        match CompiledR1cs::read_file(&path, circuit_id, shape) {
            Ok(r1cs) => {
                tracing::info!(circuit_id, path = %path.display(), bytes = r1cs.memory_bytes(),
                    read_ms = started.elapsed().as_millis() as u64, "compiled R1CS read from its file");
                Some(r1cs)
            }
            Err(R1csFileError::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => {
                tracing::warn!(circuit_id, path = %path.display(), error = %e,
                    "compiled R1CS file not used; recording the circuit again");
                None
            }
        }
    }

    /// Writes `r1cs` as `circuit_id`'s file, when the directory is
    /// writable; a failure is a warning (the R1CS stays in memory).
    pub fn save(&self, circuit_id: &str, shape: &str, r1cs: &CompiledR1cs) -> bool {
        let Some(path) = self.path(circuit_id).filter(|_| self.writable) else {
            return false;
        };
        let started = Instant::now();
        match r1cs.write_file(&path, circuit_id, shape) {
            Ok(()) => {
                tracing::info!(circuit_id, path = %path.display(),
                    write_ms = started.elapsed().as_millis() as u64, "compiled R1CS file written");
                true
            }
            Err(e) => {
                tracing::warn!(circuit_id, error = %e, "compiled R1CS file not written; kept in memory only");
                false
            }
        }
    }

    /// [`save`](Self::save) on a thread of its own, so the proof that
    /// recorded the R1CS does not wait for the disk.
    pub fn save_in_background(&self, circuit_id: &str, shape: &str, r1cs: Arc<CompiledR1cs>) {
        if self.path(circuit_id).is_none() || !self.writable {
            return;
        }
        let (store, id, shape) = (self.clone(), circuit_id.to_owned(), shape.to_owned());
        let spawned = std::thread::Builder::new()
            .name("r1cs-save".into())
            .spawn(move || store.save(&id, &shape, &r1cs));
        if let Err(e) = spawned {
            tracing::warn!(circuit_id, error = %e, "compiled R1CS file not written: no thread");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::SyntheticCircuit;

    fn r1cs(constraints: usize) -> CompiledR1cs {
        CompiledR1cs::record(
            SyntheticCircuit::new(constraints, vec![blstrs::Scalar::from(3u64); 2], 7).unwrap(),
        )
        .unwrap()
    }

    /// The file of a recorded R1CS reads back equal, field for field.
    #[test]
    fn r1cs_file_reads_back_what_was_written() {
        let dir = tempfile::tempdir().unwrap();
        let store = R1csStore::in_dir(dir.path());
        assert!(store.writable());
        let recorded = r1cs(3000);
        assert!(store.load("circuit-a", "shape 1").is_none(), "no file yet");
        assert!(store.save("circuit-a", "shape 1", &recorded));
        assert!(store.load("circuit-a", "shape 1").unwrap() == recorded);
        // Nothing but the file is left in the directory.
        let names: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        assert_eq!(names, vec!["circuit-a.r1cs".to_owned()]);
    }

    fn written(dir: &Path, store: &R1csStore) -> (CompiledR1cs, PathBuf, Vec<u8>) {
        let recorded = r1cs(2000);
        assert!(store.save("circuit-a", "shape 1", &recorded));
        let path = dir.join("circuit-a.r1cs");
        let bytes = std::fs::read(&path).unwrap();
        (recorded, path, bytes)
    }

    #[test]
    fn corrupt_r1cs_file_is_detected_and_recorded_again() {
        let dir = tempfile::tempdir().unwrap();
        let store = R1csStore::in_dir(dir.path());
        let (recorded, path, bytes) = written(dir.path(), &store);
        // One flipped bit in the body, in the middle and at its last byte.
        for at in [bytes.len() / 2, bytes.len() - 41] {
            let mut corrupt = bytes.clone();
            corrupt[at] ^= 0x10;
            std::fs::write(&path, &corrupt).unwrap();
            let read = CompiledR1cs::read_file(&path, "circuit-a", "shape 1");
            assert!(matches!(read, Err(R1csFileError::Corrupt)), "byte {at}: {read:?}");
            assert!(store.load("circuit-a", "shape 1").is_none());
        }
        // Recorded again, the file is replaced and used.
        assert!(store.save("circuit-a", "shape 1", &recorded));
        assert!(store.load("circuit-a", "shape 1").unwrap() == recorded);
    }

    #[test]
    fn truncated_r1cs_file_is_detected_and_recorded_again() {
        let dir = tempfile::tempdir().unwrap();
        let store = R1csStore::in_dir(dir.path());
        let (_, path, bytes) = written(dir.path(), &store);
        for len in [0, 5, 20, bytes.len() / 3, bytes.len() - 1] {
            std::fs::write(&path, &bytes[..len]).unwrap();
            let read = CompiledR1cs::read_file(&path, "circuit-a", "shape 1");
            assert!(
                matches!(read, Err(R1csFileError::Truncated { .. })),
                "{len} bytes: {read:?}"
            );
            assert!(store.load("circuit-a", "shape 1").is_none());
        }
        // So is one with bytes after its end.
        let mut longer = bytes.clone();
        longer.push(0);
        std::fs::write(&path, &longer).unwrap();
        let read = CompiledR1cs::read_file(&path, "circuit-a", "shape 1");
        assert!(matches!(read, Err(R1csFileError::Truncated { .. })), "{read:?}");
    }

    #[test]
    fn stale_r1cs_file_is_detected_and_recorded_again() {
        let dir = tempfile::tempdir().unwrap();
        let store = R1csStore::in_dir(dir.path());
        let (recorded, path, bytes) = written(dir.path(), &store);
        // Circuit crates of another version.
        let read = CompiledR1cs::read_file(&path, "circuit-a", "shape 2");
        assert!(matches!(read, Err(R1csFileError::Stale(_))), "{read:?}");
        assert!(store.load("circuit-a", "shape 2").is_none());
        // Another format version.
        let mut other = bytes.clone();
        other[8..12].copy_from_slice(&(crate::r1cs::FORMAT_VERSION + 1).to_le_bytes());
        std::fs::write(&path, &other).unwrap();
        let read = CompiledR1cs::read_file(&path, "circuit-a", "shape 1");
        assert!(matches!(read, Err(R1csFileError::Stale(_))), "{read:?}");
        assert!(store.save("circuit-a", "shape 1", &recorded));
        assert!(store.load("circuit-a", "shape 1").unwrap() == recorded);
    }

    #[test]
    fn r1cs_file_of_another_circuit_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let store = R1csStore::in_dir(dir.path());
        let (_, path, _) = written(dir.path(), &store);
        // Copied (or renamed) under another circuit's name.
        let other = dir.path().join("circuit-b.r1cs");
        std::fs::copy(&path, &other).unwrap();
        let read = CompiledR1cs::read_file(&other, "circuit-b", "shape 1");
        assert!(
            matches!(read, Err(R1csFileError::WrongCircuit { .. })),
            "{read:?}"
        );
        assert!(store.load("circuit-b", "shape 1").is_none());
        // And a file that is no R1CS at all.
        std::fs::write(&other, b"v28 parameters, not an R1CS, and long enough").unwrap();
        let read = CompiledR1cs::read_file(&other, "circuit-b", "shape 1");
        assert!(matches!(read, Err(R1csFileError::NotR1cs)), "{read:?}");
    }

    /// Two processes sharing a directory: one writes the file again and
    /// again while others read it; a reader sees the whole file or none,
    /// never a part.
    #[test]
    fn r1cs_file_is_never_read_half_written() {
        let dir = tempfile::tempdir().unwrap();
        let recorded = Arc::new(r1cs(20_000));
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let writers: Vec<_> = (0..2)
            .map(|_| {
                let (store, recorded, stop) = (R1csStore::in_dir(dir.path()), recorded.clone(), stop.clone());
                std::thread::spawn(move || {
                    let mut writes = 0;
                    while !stop.load(std::sync::atomic::Ordering::Relaxed) || writes == 0 {
                        assert!(store.save("circuit-a", "shape 1", &recorded));
                        writes += 1;
                    }
                    writes
                })
            })
            .collect();
        let path = dir.path().join("circuit-a.r1cs");
        let (mut whole, mut absent) = (0, 0);
        let started = Instant::now();
        while started.elapsed() < std::time::Duration::from_millis(1500) || whole < 3 {
            match CompiledR1cs::read_file(&path, "circuit-a", "shape 1") {
                Ok(read) => {
                    assert!(read == *recorded);
                    whole += 1;
                }
                Err(R1csFileError::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {
                    absent += 1
                }
                Err(e) => panic!("a reader saw a partial file: {e}"),
            }
        }
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        let writes: usize = writers.into_iter().map(|w| w.join().unwrap()).sum();
        assert!(
            writes >= 2 && whole >= 3,
            "{writes} writes, {whole} reads, {absent} before the first"
        );
    }

    /// A directory that cannot be written is read, never written; without
    /// one nothing is read or written; an id that is no plain file name
    /// gets no file.
    #[test]
    fn r1cs_store_without_a_writable_directory_keeps_memory_only() {
        let memory = R1csStore::memory_only();
        assert!(memory.path("circuit-a").is_none());
        assert!(!memory.save("circuit-a", "shape 1", &r1cs(100)));
        assert!(memory.load("circuit-a", "shape 1").is_none());
        let dir = tempfile::tempdir().unwrap();
        let store = R1csStore::in_dir(dir.path());
        for hostile in ["../x", "a/b", ".hidden", ""] {
            assert!(store.path(hostile).is_none(), "{hostile}");
        }
        // A directory under a file cannot be created.
        let file = dir.path().join("a-file");
        std::fs::write(&file, b"").unwrap();
        let unwritable = R1csStore::in_dir(file.join("sub"));
        assert!(!unwritable.writable());
        assert!(!unwritable.save("circuit-a", "shape 1", &r1cs(100)));
    }
}
