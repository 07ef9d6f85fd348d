//! Trusting the official parameter files the way the ecosystem does: by
//! their published digests (filecoin-proofs' `parameters.json`, vendored as
//! `data/parameters.json`), checked once at disk speed and remembered
//! against the file's size and modification time.
//!
//! A file whose BLAKE2b digest matches the published one holds the
//! ceremony's bytes, so its points are read with [`PointCheck::Trusted`]
//! (canonical coordinates only). A file that does not match, or is not
//! listed (test-size files made by `cuzk-bench gen-params` carry official
//! names but not the ceremony's bytes), is of unknown origin and is read
//! with [`PointCheck::Full`], every point on the curve and in the subgroup.
//!
//! The match is remembered in `<param dir>/.cuzk-trust/<file name>.json`
//! (size, mtime in ns, digest; written to a temporary name, then renamed),
//! or, where that cannot be written (a read-only directory), in memory for
//! the life of the process.
//!
//! Benchmarks of the real circuits' sizes use stand-in files under the
//! official names (`cuzk-bench gen-srs --real`: random points, the real
//! circuit's section sizes), which must be read at the official files'
//! cost, not point by point. Their generator leaves a generation record
//! (`.cuzk-trust/generated/<file name>.json`: size, mtime, digest), kept
//! like the trust records, and a [`Trust`] that honours them
//! ([`Trust::honouring_generated`], only with `[benchmark]
//! allow_unverifiable`: such files prove nothing filecoin-proofs accepts)
//! reads a file whose size and mtime match its record trusted.
//!
//! Parameters made on this machine by filecoin-proofs' own generator
//! ([`crate::params::ensure`]: test sizes, with their verifying key, so
//! their proofs verify) leave a generation record marked
//! [`Generation::Verifiable`], honoured by every daemon: their points were
//! computed here, and the record, like the trust records, holds only while
//! the file keeps its size and mtime. Without it each test daemon checked
//! a 2 KiB PoRep file (1.1 GB) point by point on one pool thread, minutes.

use cuzk_core::{ParameterFile, ParameterRecipe, PlanError, PointCheck, ProvingParameters};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Instant, UNIX_EPOCH};

/// filecoin-proofs 19.1.0's `parameters.json` (MIT OR Apache-2.0).
const PUBLISHED: &str = include_str!("../data/parameters.json");

/// The directory of the trust records, inside the parameter directory.
pub const RECORD_DIR: &str = ".cuzk-trust";

/// Published digests: parameter file name -> the first 32 hex characters
/// of the file's BLAKE2b-512.
#[derive(Clone, Default)]
pub struct Digests(HashMap<String, String>);

impl std::fmt::Debug for Digests {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Digests({} files)", self.0.len())
    }
}

impl Digests {
    /// The digests filecoin-proofs publishes (`data/parameters.json`).
    pub fn published() -> Self {
        #[derive(Deserialize)]
        struct Entry {
            digest: String,
        }
        let table: HashMap<String, Entry> =
            serde_json::from_str(PUBLISHED).expect("the vendored parameters.json parses");
        Self(table.into_iter().map(|(name, e)| (name, e.digest)).collect())
    }

    /// A table of (file name, digest) pairs (for tests, or another release).
    pub fn from_pairs<N: Into<String>, D: Into<String>>(pairs: impl IntoIterator<Item = (N, D)>) -> Self {
        Self(pairs.into_iter().map(|(n, d)| (n.into(), d.into())).collect())
    }

    /// The published digest of `file_name`.
    pub fn get(&self, file_name: &str) -> Option<&str> {
        self.0.get(file_name).map(String::as_str)
    }
}

/// The digest filecoin-proofs publishes for a file: the first 32 hex
/// characters of its BLAKE2b-512, streamed (BLAKE2b is sequential: one
/// core, at about a GB/s).
pub fn file_digest(path: &Path) -> std::io::Result<String> {
    let mut file = std::fs::File::open(path)?;
    let mut state = blake2b_simd::State::new();
    let mut buf = vec![0u8; 8 << 20];
    loop {
        let n = file.read(&mut buf)?;
        if n == 0 {
            break;
        }
        state.update(&buf[..n]);
    }
    Ok(state.finalize().to_hex()[..32].to_string())
}

/// A file as it was when its digest was computed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
struct Record {
    size: u64,
    mtime_ns: u64,
    digest: String,
    /// Generation records only: made by filecoin-proofs' generator (a
    /// record without it is a stand-in's).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    verifiable: bool,
}

/// What a generation record vouches for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Generation {
    /// A stand-in of random points (`cuzk-bench gen-srs --real`): its
    /// proofs verify against nothing; honoured only for benchmarks.
    StandIn,
    /// Made here by filecoin-proofs' generator beside its verifying key
    /// ([`crate::params::ensure`]); honoured everywhere.
    Verifiable,
}

fn stat(path: &Path) -> std::io::Result<(u64, u64)> {
    let meta = std::fs::metadata(path)?;
    let mtime_ns = meta
        .modified()?
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX));
    Ok((meta.len(), mtime_ns))
}

/// Why a file is read with the check it is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// `verify_points = "full"`: every file gets the full check.
    Forced,
    /// The file's name is not in the published digests.
    Unlisted,
    /// A record (on disk or in memory) says this size and mtime matched.
    Remembered,
    /// Hashed now, and the digest matched.
    Matched,
    /// Hashed now (or remembered as hashed), and the digest did not match.
    Mismatch,
    /// The file could not be read or changed while being hashed.
    Unreadable,
    /// A stand-in generated on this machine, its generation record
    /// matching (honoured only for benchmarks).
    Generated,
    /// Made on this machine by filecoin-proofs' generator, its generation
    /// record matching.
    MadeHere,
}

impl Verdict {
    /// The point check this verdict reads with.
    pub fn check(self) -> PointCheck {
        match self {
            Verdict::Remembered | Verdict::Matched | Verdict::Generated | Verdict::MadeHere => {
                PointCheck::Trusted
            }
            _ => PointCheck::Full,
        }
    }
}

/// Published digests and what has been learnt about the files: shared by
/// every recipe of one [`crate::FilecoinPlans`].
#[derive(Debug)]
pub struct Trust {
    digests: Digests,
    full: bool,
    /// Files hashed this process, by path: the record of each, whether its
    /// digest matched or not (so a mismatched file is not re-hashed).
    known: Mutex<HashMap<PathBuf, Record>>,
    hashed: AtomicU64,
    /// Whether generation records are honoured.
    generated: bool,
}

/// The directory of the generation records, inside [`RECORD_DIR`].
pub const GENERATED_DIR: &str = "generated";

/// Leaves the generation record of `path`, a parameter file just written
/// on this machine: its size, mtime and digest (hashed now, one core), and
/// what made it. Returns the digest.
pub fn record_generated(path: &Path, generation: Generation) -> std::io::Result<String> {
    let digest = file_digest(path)?;
    let (size, mtime_ns) = stat(path)?;
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let record = Record {
        size,
        mtime_ns,
        digest: digest.clone(),
        verifiable: generation == Generation::Verifiable,
    };
    write_record_at(&generated_record_path(path, &name), &record)?;
    Ok(digest)
}

/// Writes `record` as `target`: to a temporary name beside it, then
/// renamed, so a reader sees the whole record or none.
fn write_record_at(target: &Path, record: &Record) -> std::io::Result<()> {
    std::fs::create_dir_all(target.parent().expect("a record has a directory"))?;
    let tmp = target.with_extension(format!("tmp.{}", std::process::id()));
    let result = std::fs::write(&tmp, serde_json::to_vec(record).expect("a record serialises"))
        .and_then(|()| std::fs::rename(&tmp, target));
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

fn generated_record_path(path: &Path, name: &str) -> PathBuf {
    path.with_file_name(RECORD_DIR)
        .join(GENERATED_DIR)
        .join(format!("{name}.json"))
}

impl Trust {
    /// Trust by `digests`; `full`: read every file with the full check.
    pub fn new(digests: Digests, full: bool) -> Self {
        Self {
            digests,
            full,
            known: Mutex::new(HashMap::new()),
            hashed: AtomicU64::new(0),
            generated: false,
        }
    }

    /// `honour`: read a stand-in whose generation record matches its size
    /// and mtime ([`record_generated`]) trusted. Benchmarks only.
    pub fn honouring_generated(self, honour: bool) -> Self {
        Self {
            generated: honour,
            ..self
        }
    }

    /// Whether generation records are honoured.
    pub fn honours_generated(&self) -> bool {
        self.generated
    }

    /// How many files this has hashed.
    pub fn files_hashed(&self) -> u64 {
        self.hashed.load(Ordering::Relaxed)
    }

    /// The published digests judged by.
    pub fn digests(&self) -> &Digests {
        &self.digests
    }

    /// Whether every file gets the full check.
    pub fn full(&self) -> bool {
        self.full
    }

    fn record_path(path: &Path, name: &str) -> PathBuf {
        path.with_file_name(RECORD_DIR).join(format!("{name}.json"))
    }

    fn read_record(path: &Path, name: &str) -> Option<Record> {
        let bytes = std::fs::read(Self::record_path(path, name)).ok()?;
        serde_json::from_slice(&bytes).ok()
    }

    fn write_record(path: &Path, name: &str, record: &Record) -> std::io::Result<()> {
        write_record_at(&Self::record_path(path, name), record)
    }

    /// Decides how `path` is read, hashing it when nothing is known of its
    /// current size and mtime, and remembering a match.
    pub fn verdict(&self, path: &Path) -> Verdict {
        if self.full {
            return Verdict::Forced;
        }
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let generation: Option<Record> = std::fs::read(generated_record_path(path, &name))
            .ok()
            .and_then(|bytes| serde_json::from_slice::<Record>(&bytes).ok())
            .filter(|r| stat(path).ok() == Some((r.size, r.mtime_ns)));
        if let Some(record) = generation {
            if record.verifiable {
                tracing::info!(
                    file = %name,
                    "parameter file made on this machine by filecoin-proofs' generator (its generation record \
                     matches): read trusted"
                );
                return Verdict::MadeHere;
            }
            if self.generated {
                tracing::warn!(
                    file = %name,
                    "parameter file generated on this machine (a stand-in: its generation record matches): \
                     read trusted ([benchmark] allow_unverifiable)"
                );
                return Verdict::Generated;
            }
        }
        let Some(published) = self.digests.get(&name) else {
            tracing::warn!(
                file = %name,
                "parameter file not in the published digests: reading it with the full point check"
            );
            return Verdict::Unlisted;
        };
        let Ok((size, mtime_ns)) = stat(path) else {
            return Verdict::Unreadable;
        };
        let fits = |r: &Record| r.size == size && r.mtime_ns == mtime_ns;
        let known = self
            .known
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(path)
            .cloned();
        let remembered = known
            .filter(fits)
            .or_else(|| Self::read_record(path, &name).filter(|r| fits(r) && r.digest == published));
        if let Some(record) = remembered {
            if record.digest == published {
                return Verdict::Remembered;
            }
            tracing::warn!(file = %name, "parameter file does not match its published digest (remembered): reading it with the full point check");
            return Verdict::Mismatch;
        }
        let started = Instant::now();
        let digest = match file_digest(path) {
            Ok(d) => d,
            Err(e) => {
                tracing::warn!(file = %name, error = %e, "cannot hash parameter file: reading it with the full point check");
                return Verdict::Unreadable;
            }
        };
        self.hashed.fetch_add(1, Ordering::Relaxed);
        let secs = started.elapsed().as_secs_f64();
        tracing::info!(
            file = %name,
            seconds = secs,
            gb_per_s = size as f64 / secs.max(1e-9) / 1e9,
            "hashed parameter file (BLAKE2b-512) against its published digest"
        );
        if stat(path).ok() != Some((size, mtime_ns)) {
            tracing::warn!(file = %name, "parameter file changed while being hashed: reading it with the full point check");
            return Verdict::Unreadable;
        }
        let record = Record {
            size,
            mtime_ns,
            digest,
            verifiable: false,
        };
        let matched = record.digest == published;
        if matched {
            if let Err(e) = Self::write_record(path, &name, &record) {
                tracing::info!(
                    file = %name,
                    error = %e,
                    "cannot write the trust record (read-only parameter directory?): trust kept in memory for this process"
                );
            }
        } else {
            tracing::warn!(
                file = %name,
                digest = %record.digest,
                published,
                "parameter file does not match its published digest (not the ceremony's file): reading it with the full point check"
            );
        }
        self.known
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(path.to_path_buf(), record);
        if matched {
            Verdict::Matched
        } else {
            Verdict::Mismatch
        }
    }
}

/// An official parameter file, read with the check its digest earns.
#[derive(Debug, Clone)]
pub struct TrustedFile {
    file: ParameterFile,
    trust: Arc<Trust>,
}

impl TrustedFile {
    /// `file` (its `check` is ignored: the verdict decides), judged by `trust`.
    pub fn new(file: ParameterFile, trust: Arc<Trust>) -> Self {
        Self { file, trust }
    }

    /// The file.
    pub fn file(&self) -> &ParameterFile {
        &self.file
    }
}

impl ParameterRecipe for TrustedFile {
    fn check_available(&self) -> Result<(), PlanError> {
        self.file.check_available()
    }

    fn canonical_id(&self) -> Option<&str> {
        self.file.canonical_id.as_deref()
    }

    fn memory_bytes(&self) -> u64 {
        self.file.memory_bytes()
    }

    fn load(&self) -> Result<ProvingParameters, PlanError> {
        self.check_available()?;
        let verdict = self.trust.verdict(&self.file.path);
        let check = verdict.check();
        let started = Instant::now();
        let params = ProvingParameters::read(&self.file.path, check).map_err(|e| {
            PlanError::Parameters(cuzk_core::plan::without_directory(
                &e.to_string(),
                &self.file.path,
            ))
        })?;
        tracing::info!(
            file = %self.file.path.display(),
            ?verdict,
            ?check,
            seconds = started.elapsed().as_secs_f64(),
            "read parameter file"
        );
        Ok(params)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, SystemTime};

    const NAME: &str = "v28-stacked-proof-of-replication-test.params";

    fn setup(bytes: &[u8]) -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(NAME);
        std::fs::write(&path, bytes).unwrap();
        (dir, path)
    }

    fn trust_for(path: &Path) -> Trust {
        Trust::new(Digests::from_pairs([(NAME, file_digest(path).unwrap())]), false)
    }

    fn touch(path: &Path, secs: u64) {
        let file = std::fs::File::options().write(true).open(path).unwrap();
        file.set_modified(SystemTime::UNIX_EPOCH + Duration::from_secs(secs))
            .unwrap();
    }

    #[test]
    fn the_vendored_table_is_filecoin_proofs() {
        let digests = Digests::published();
        assert_eq!(
            digests.get("v28-stacked-proof-of-replication-merkletree-poseidon_hasher-8-8-0-sha256_hasher-82a357d2f2ca81dc61bb45f4a762807aedee1b0a53fd6c4e77b46a01bfef7820.params"),
            Some("6a388072a518cf46ebd661f5cc46900a"),
        );
        assert!(digests.0.len() >= 40);
        assert!(digests.0.values().all(|d| d.len() == 32));
    }

    #[test]
    fn the_digest_is_blake2b_512_truncated() {
        let (_dir, path) = setup(b"abc");
        // BLAKE2b-512("abc"), RFC 7693 appendix A.
        assert_eq!(file_digest(&path).unwrap(), "ba80a53f981c4d0d6a2797b69f12f6e9");
    }

    #[test]
    fn a_matching_file_is_trusted_and_remembered() {
        let (_dir, path) = setup(&[7u8; 100_000]);
        let trust = trust_for(&path);
        assert_eq!(trust.verdict(&path), Verdict::Matched);
        assert_eq!(trust.files_hashed(), 1);
        assert!(Trust::record_path(&path, NAME).exists());
        // Again: remembered, not re-hashed; by another process (a fresh
        // Trust) too, from the record.
        assert_eq!(trust.verdict(&path), Verdict::Remembered);
        assert_eq!(trust.files_hashed(), 1);
        let fresh = trust_for(&path);
        assert_eq!(fresh.verdict(&path), Verdict::Remembered);
        assert_eq!(fresh.files_hashed(), 0);
        assert_eq!(Verdict::Remembered.check(), PointCheck::Trusted);
    }

    #[test]
    fn a_changed_file_is_checked_again() {
        let (_dir, path) = setup(&[7u8; 100_000]);
        let trust = trust_for(&path);
        assert_eq!(trust.verdict(&path), Verdict::Matched);
        // Same bytes, other mtime: hashed again, still trusted.
        touch(&path, 1_000_000);
        assert_eq!(trust.verdict(&path), Verdict::Matched);
        assert_eq!(trust.files_hashed(), 2);
        // Other bytes and another mtime: hashed, mismatch, full check.
        std::fs::write(&path, [8u8; 100_000]).unwrap();
        touch(&path, 2_000_000);
        assert_eq!(trust.verdict(&path), Verdict::Mismatch);
        assert_eq!(trust.files_hashed(), 3);
        // Remembered as mismatched: not hashed again, still full.
        assert_eq!(trust.verdict(&path), Verdict::Mismatch);
        assert_eq!(trust.files_hashed(), 3);
        // A size change alone is a change too.
        std::fs::write(&path, [7u8; 100_001]).unwrap();
        touch(&path, 2_000_000);
        let fresh = trust_for(&path);
        assert_eq!(fresh.verdict(&path), Verdict::Matched);
        assert_eq!(trust.verdict(&path), Verdict::Mismatch, "the old table's digest");
        assert_eq!(trust.files_hashed(), 4);
    }

    #[test]
    fn a_file_not_matching_its_digest_gets_the_full_check() {
        let (_dir, path) = setup(&[7u8; 1000]);
        let trust = Trust::new(Digests::from_pairs([(NAME, "00".repeat(16))]), false);
        assert_eq!(trust.verdict(&path), Verdict::Mismatch);
        assert_eq!(Verdict::Mismatch.check(), PointCheck::Full);
        assert!(
            !Trust::record_path(&path, NAME).exists(),
            "no record of a mismatch"
        );
        // A record claiming otherwise (stale, or forged to another digest) is ignored.
        let other = Trust::new(Digests::from_pairs([(NAME, "11".repeat(16))]), false);
        Trust::write_record(
            &path,
            NAME,
            &Record {
                size: 1000,
                mtime_ns: stat(&path).unwrap().1,
                digest: "22".repeat(16),
                verifiable: false,
            },
        )
        .unwrap();
        assert_eq!(other.verdict(&path), Verdict::Mismatch);
        assert_eq!(other.files_hashed(), 1);
    }

    #[test]
    fn unlisted_files_and_full_mode_are_not_hashed() {
        let (_dir, path) = setup(&[7u8; 1000]);
        let trust = Trust::new(Digests::from_pairs([("other.params", "00".repeat(16))]), false);
        assert_eq!(trust.verdict(&path), Verdict::Unlisted);
        let forced = Trust::new(Digests::from_pairs([(NAME, file_digest(&path).unwrap())]), true);
        assert_eq!(forced.verdict(&path), Verdict::Forced);
        assert_eq!(trust.files_hashed() + forced.files_hashed(), 0);
        assert_eq!(Verdict::Forced.check(), PointCheck::Full);
        assert_eq!(Verdict::Unlisted.check(), PointCheck::Full);
    }

    #[test]
    fn trust_is_kept_in_memory_where_no_record_can_be_written() {
        let (dir, path) = setup(&[7u8; 1000]);
        // The record directory's name taken by a file: no record can be written.
        std::fs::write(dir.path().join(RECORD_DIR), b"").unwrap();
        let trust = trust_for(&path);
        assert_eq!(trust.verdict(&path), Verdict::Matched);
        assert_eq!(trust.verdict(&path), Verdict::Remembered);
        assert_eq!(trust.files_hashed(), 1);
        assert_eq!(trust_for(&path).verdict(&path), Verdict::Matched, "not on disk");
    }

    /// The recipe reads a matched file with the trusted check and gets the
    /// same parameters as the full check does.
    #[test]
    fn a_trusted_file_loads_the_same_parameters() {
        let assignment = cuzk_core::shaped::shaped_assignment(300, 2, 3);
        let params = cuzk_core::shaped::shaped_parameters(&assignment, 5);
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(NAME);
        params.write(&path).unwrap();
        let trust = Arc::new(trust_for(&path));
        let recipe = TrustedFile::new(ParameterFile::new(&path, PointCheck::Full), trust.clone());
        let loaded = recipe.load().unwrap();
        assert_eq!(trust.verdict(&path), Verdict::Remembered);
        let full = ProvingParameters::read(&path, PointCheck::Full).unwrap();
        assert_eq!((loaded.h, loaded.l, loaded.a), (full.h, full.l, full.a));
        assert_eq!((loaded.b_g1, loaded.b_g2), (full.b_g1, full.b_g2));
        assert_eq!(trust.files_hashed(), 1);
    }

    /// Issue 36: a stand-in generated here is read trusted by its
    /// generation record, only where those are honoured (benchmarks), and
    /// only while its size and mtime are the recorded ones.
    #[test]
    fn a_generated_stand_in_is_trusted_by_its_record_only_for_benchmarks() {
        let (_dir, path) = setup(b"stand-in points");
        let other = Trust::new(Digests::from_pairs([(NAME, "0".repeat(32))]), false);
        assert_eq!(other.verdict(&path), Verdict::Mismatch, "no record yet");
        record_generated(&path, Generation::StandIn).unwrap();
        let benchmark =
            Trust::new(Digests::from_pairs([(NAME, "0".repeat(32))]), false).honouring_generated(true);
        assert_eq!(benchmark.verdict(&path), Verdict::Generated);
        assert_eq!(Verdict::Generated.check(), PointCheck::Trusted);
        assert_eq!(benchmark.files_hashed(), 0, "read at a trusted file's cost");
        // A production daemon does not honour it.
        let production = Trust::new(Digests::from_pairs([(NAME, "0".repeat(32))]), false);
        assert_eq!(production.verdict(&path), Verdict::Mismatch);
        // Nor does a benchmark once the file changed.
        touch(&path, 1_000);
        let benchmark =
            Trust::new(Digests::from_pairs([(NAME, "0".repeat(32))]), false).honouring_generated(true);
        assert_eq!(benchmark.verdict(&path), Verdict::Mismatch);
    }

    /// CI time (issue 37.7): parameters made here by filecoin-proofs'
    /// generator are read trusted by every daemon, benchmark or not, while
    /// the file keeps its recorded size and mtime; `verify_points = "full"`
    /// still checks them point by point.
    #[test]
    fn parameters_made_here_by_the_generator_are_trusted_by_their_record() {
        let (_dir, path) = setup(b"generated points");
        let production = || Trust::new(Digests::from_pairs([(NAME, "0".repeat(32))]), false);
        assert_eq!(production().verdict(&path), Verdict::Mismatch, "no record yet");
        record_generated(&path, Generation::Verifiable).unwrap();
        let trust = production();
        assert_eq!(trust.verdict(&path), Verdict::MadeHere);
        assert_eq!(Verdict::MadeHere.check(), PointCheck::Trusted);
        assert_eq!(trust.files_hashed(), 0, "read at a trusted file's cost");
        let forced = Trust::new(Digests::from_pairs([(NAME, "0".repeat(32))]), true);
        assert_eq!(forced.verdict(&path), Verdict::Forced);
        touch(&path, 1_000);
        assert_eq!(
            production().verdict(&path),
            Verdict::Mismatch,
            "changed since its record"
        );
    }
}
