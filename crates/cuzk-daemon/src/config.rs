//! The daemon's TOML configuration. Every key is optional; `cuzk.example.toml`
//! at the repository root lists them all with their defaults and meaning.

use anyhow::{bail, Context};
use cuzk_engine::EngineConfig;
use serde::Deserialize;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The whole file.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    /// `[daemon]`
    pub daemon: DaemonSection,
    /// `[srs]`
    pub srs: SrsSection,
    /// `[synthesis]`
    pub synthesis: SynthesisSection,
    /// `[gpus]`
    pub gpus: GpusSection,
    /// `[memory]`
    pub memory: MemorySection,
    /// `[pipeline]`
    pub pipeline: PipelineSection,
    /// `[benchmark]`
    pub benchmark: BenchmarkSection,
    /// `[logging]`
    pub logging: LoggingSection,
    /// `[cluster]`
    pub cluster: ClusterSection,
}

/// `[cluster]`: a pool of daemons on one PostgreSQL job queue (off unless
/// `database` is set).
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct ClusterSection {
    /// `postgres://user:password@host/db`; empty: a single daemon, jobs in
    /// memory.
    pub database: String,
    /// The PostgreSQL schema holding cuzk's tables (created on first start).
    pub schema: String,
    /// This daemon's name in the queue (who holds a job); empty: host name
    /// and process id.
    pub node: String,
    /// How long a claimed job stays this daemon's without a renewal; a
    /// daemon that dies gives its jobs back after at most this long. Renewed
    /// every third of it.
    pub lease_ms: u64,
    /// Jobs this daemon holds at once (enough to keep its pipeline full;
    /// more would hold work other daemons could prove). High and critical
    /// priority jobs may be claimed beyond it, up to twice as many.
    pub max_claimed: usize,
    /// How often an idle daemon looks for queued jobs, and the longest
    /// pause between an AwaitProof's looks at its job.
    pub poll_ms: u64,
    /// Claims a job may lose with its work (its daemon died, so the lease
    /// ran out, or gave it back unfinished at shutdown) before it ends
    /// FAILED, naming them: a request that crashes daemons is not passed
    /// from daemon to daemon for ever. A daemon that cannot start a job yet
    /// (its engine full) gives it back without spending an attempt.
    pub max_attempts: u32,
    /// Jobs queued or running in the whole pool (counted in the database)
    /// at most; SubmitProof and Prove beyond are RESOURCE_EXHAUSTED. A
    /// repeated `request_id` still returns its job.
    pub max_queued_jobs: usize,
    /// The largest request the pool stores (the encoded SubmitProof
    /// message; "auto": the default); larger ones are RESOURCE_EXHAUSTED.
    /// The largest real Filecoin request, a 32 GiB WindowPoSt partition, is
    /// about 56 MiB (docs/REAL-INPUTS.md, "Sizes and the gRPC limit").
    pub max_request_bytes: ByteSize,
}

impl ClusterSection {
    /// `max_request_bytes` when none is set.
    pub const DEFAULT_MAX_REQUEST_BYTES: u64 = 64 << 20;

    /// `max_request_bytes` in bytes.
    pub fn request_limit(&self) -> u64 {
        match self.max_request_bytes {
            ByteSize::Bytes(n) => n,
            ByteSize::Auto => Self::DEFAULT_MAX_REQUEST_BYTES,
        }
    }
}

impl Default for ClusterSection {
    fn default() -> Self {
        Self {
            database: String::new(),
            schema: "cuzk".into(),
            node: String::new(),
            lease_ms: 30_000,
            max_claimed: 2,
            poll_ms: 200,
            max_attempts: 3,
            // As a single daemon's `[pipeline] max_queued_jobs`.
            max_queued_jobs: 1_000,
            max_request_bytes: ByteSize::Bytes(Self::DEFAULT_MAX_REQUEST_BYTES),
        }
    }
}

/// `[daemon]`
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct DaemonSection {
    /// gRPC address: `host:port` or `unix:///path`.
    pub listen: String,
    /// Optional HTTP address for `/metrics` and `/status`.
    pub status_listen: Option<String>,
    /// Seconds jobs in flight get to finish at SIGINT/SIGTERM before the rest are cancelled.
    pub shutdown_grace_secs: u64,
    /// File holding the bearer token that every gRPC call (health checks
    /// excepted) and HTTP `/status` must present; `CUZK_AUTH_TOKEN` is the
    /// alternative. Unset: no token (see SECURITY.md).
    pub auth_token_file: Option<PathBuf>,
    /// Permissions of a Unix socket, in octal ("0600", "0660"), applied
    /// whatever the umask.
    pub socket_mode: String,
    /// Rewrite the HTTP/2 `:authority` that grpc-core clients (Python, C++)
    /// send on a Unix socket (the percent-encoded path, which the server's
    /// HTTP/2 layer refuses) to `localhost`. Off: such clients set the
    /// channel option `grpc.default_authority = "localhost"` instead (Go and
    /// Rust clients need neither).
    pub unix_authority_fix: bool,
    /// `[daemon.tls]`: TLS for a TCP listener.
    pub tls: Option<TlsSection>,
}

impl Default for DaemonSection {
    fn default() -> Self {
        Self {
            listen: "127.0.0.1:9820".into(),
            status_listen: None,
            shutdown_grace_secs: 30,
            auth_token_file: None,
            socket_mode: "0600".into(),
            unix_authority_fix: false,
            tls: None,
        }
    }
}

/// `[daemon.tls]`: the server's certificate chain and key (PEM), and
/// optionally the CA whose certificates clients must present (mutual TLS).
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct TlsSection {
    /// PEM certificate chain, leaf first.
    pub cert: PathBuf,
    /// PEM private key (PKCS#8, PKCS#1 or SEC1).
    pub key: PathBuf,
    /// PEM CA certificates; when set, clients must present a certificate it signed.
    pub client_ca: Option<PathBuf>,
}

/// `[srs]`
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct SrsSection {
    /// Parameter directory (default: `$CUZK_PARAM_CACHE` or `~/.cache/cuzk/params`).
    pub param_cache: Option<PathBuf>,
    /// Circuit ids loaded at start.
    pub preload: Vec<String>,
    /// Resident parameter bytes above which idle ones are evicted ("0" = no limit).
    pub memory_limit: Option<ByteSize>,
    /// Seconds after which parameters no job used are evicted (unset: 7200;
    /// 0: never).
    pub idle_evict_secs: Option<u64>,
    /// How official parameter files' points are checked: "auto" (files whose
    /// BLAKE2b digest matches filecoin-proofs' published one are trusted,
    /// remembered by size and mtime; others get the full check) or "full"
    /// (every point of every file on the curve and in the subgroup).
    pub verify_points: VerifyPoints,
    /// Where the circuits' compiled R1CS files are kept, so a restarted
    /// daemon reads them instead of recording each circuit again: a
    /// directory (default: the parameter directory), or "off" (recorded in
    /// memory at every start). A directory that cannot be written is read
    /// only (a log line says so).
    pub r1cs_cache: Option<String>,
}

/// `[srs] verify_points`.
#[derive(Clone, Copy, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum VerifyPoints {
    /// Trust files with a published digest.
    #[default]
    Auto,
    /// Check every point.
    Full,
}

/// `[synthesis]`
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct SynthesisSection {
    /// Synthesis worker threads.
    pub partition_workers: usize,
}

impl Default for SynthesisSection {
    fn default() -> Self {
        Self { partition_workers: 2 }
    }
}

/// `[gpus]`
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct GpusSection {
    /// Prove on GPUs when the build has the CUDA backend and one is present.
    pub enabled: bool,
    /// GPU ordinals to use (empty = all visible; CUDA_VISIBLE_DEVICES applies first).
    pub devices: Vec<u32>,
    /// Prover workers per device.
    pub gpu_workers_per_device: usize,
    /// Deprecated name of `[pipeline] cpu_threads` (used when that is 0).
    pub gpu_threads: usize,
    /// Where the parameters' G1 sections live while proving: "auto" (in
    /// GPU memory when they fit, else streamed from pinned host memory),
    /// "device" or "host".
    pub srs_residency: String,
    /// Each device used as a card of this much memory ("16GiB"; 0 or
    /// "auto": the whole card): the rest is held for the life of the
    /// process, so a large card runs the small-card paths (streamed
    /// parameters). For testing and sizing; the `CUZK_GPU_MEMORY_CAP_GIB`
    /// environment variable does the same when this is unset.
    pub memory_cap: ByteSize,
    /// Seconds a device that failed a partition (a device error, out of
    /// memory) receives no work while another device can take it; the
    /// partition is proved there.
    pub quarantine_secs: u64,
    /// PoSt witnesses leave their inclusion paths' values to the GPUs
    /// (`cuzk_filecoin::PlanOptions::paths_on_device`), when every prover
    /// is a GPU with the witness path.
    pub post_paths_on_device: bool,
}

impl Default for GpusSection {
    fn default() -> Self {
        Self {
            enabled: true,
            devices: Vec::new(),
            gpu_workers_per_device: 2,
            gpu_threads: 0,
            srs_residency: "auto".into(),
            memory_cap: ByteSize::Bytes(0),
            quarantine_secs: 60,
            post_paths_on_device: false,
        }
    }
}

/// Environment variable capping each GPU's memory, in GiB, where
/// `[gpus] memory_cap` is unset (read here, at the edge, and passed down).
pub const MEMORY_CAP_VAR: &str = "CUZK_GPU_MEMORY_CAP_GIB";

/// The memory cap `CUZK_GPU_MEMORY_CAP_GIB` asks for, in bytes (`None`
/// when unset, or not a positive number, which is logged).
pub fn memory_cap_from_env() -> Option<u64> {
    let value = std::env::var(MEMORY_CAP_VAR).ok()?;
    match value.trim().parse::<f64>() {
        Ok(gib) if gib > 0.0 => Some((gib * (1u64 << 30) as f64) as u64),
        _ => {
            tracing::warn!(value, "{MEMORY_CAP_VAR} is not a positive number of GiB; ignored");
            None
        }
    }
}

/// `[memory]`
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct MemorySection {
    /// Bytes for partitions in flight: "auto" (machine memory minus the
    /// margin) or a size such as "64GiB".
    pub total_budget: ByteSize,
    /// Kept free when the budget is "auto".
    pub safety_margin: ByteSize,
    /// Of the budget, what only PoSt partitions (WindowPoSt, WinningPoSt)
    /// may use, so PoRep partitions in flight never hold the memory a PoSt
    /// deadline needs: "auto" (an eighth of the budget, at most 8 GiB:
    /// one 32 GiB WindowPoSt partition's witness and a WinningPoSt) or a
    /// size; 0 turns it off.
    pub post_reserve: ByteSize,
}

impl Default for MemorySection {
    fn default() -> Self {
        Self {
            total_budget: ByteSize::Auto,
            safety_margin: ByteSize::Bytes(4 << 30),
            post_reserve: ByteSize::Auto,
        }
    }
}

/// `[pipeline]`
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct PipelineSection {
    /// Synthesised partitions that may wait for a prover.
    pub max_gpu_queue_depth: usize,
    /// Seconds finished results are kept for AwaitProof.
    pub result_ttl_secs: u64,
    /// Finished results kept at most.
    pub result_capacity: usize,
    /// Jobs queued or running at most; SubmitProof beyond is RESOURCE_EXHAUSTED.
    pub max_queued_jobs: usize,
    /// With GPUs: synthesise only the witness of Filecoin partitions and
    /// compute a, b, c on the device (the witness path); false computes
    /// them on the host as before.
    pub witness_only: bool,
    /// Cores the process computes on (0 = all): `sequential_threads` of
    /// them are the synthesis workers' sequential slots, the rest rayon's
    /// pool, where every parallel pass runs (a witness by units, a, b, c on
    /// the host, the backends' preparation and MSMs).
    pub cpu_threads: usize,
    /// Synthesis workers that compute at once, one core each (building a
    /// circuit, a sequential witness, a share of a witness by units); 0 =
    /// one per eight cores, at least one.
    pub sequential_threads: usize,
}

impl PipelineSection {
    /// Threads of the process's pool: `cpu_threads`, else the deprecated
    /// `[gpus] gpu_threads`; 0 = all cores.
    pub fn pool_threads(&self, gpus: &GpusSection) -> usize {
        if self.cpu_threads > 0 {
            self.cpu_threads
        } else {
            gpus.gpu_threads
        }
    }

    /// The split of the cores: (sequential slots, pool threads), with
    /// `available` cores when `cpu_threads` is 0.
    pub fn core_split(&self, gpus: &GpusSection, available: usize) -> (usize, usize) {
        let cores = match self.pool_threads(gpus) {
            0 => available.max(1),
            n => n,
        };
        let slots = match self.sequential_threads {
            0 => cuzk_core::cores::default_sequential_slots(cores),
            n => n.min(cores),
        };
        (slots, cuzk_core::cores::pool_threads(cores, slots))
    }
}

impl Default for PipelineSection {
    fn default() -> Self {
        Self {
            max_gpu_queue_depth: 1,
            result_ttl_secs: 600,
            result_capacity: 10_000,
            max_queued_jobs: 1_000,
            witness_only: true,
            cpu_threads: 0,
            sequential_threads: 0,
        }
    }
}

/// `[benchmark]`: the benchmark-only request types.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct BenchmarkSection {
    /// Serve synthetic and shaped requests (registered proof 9000) and
    /// PreloadSRS of their circuit ids. Their parameters are generated on
    /// first use (minutes of CPU and many GiB of disk at large sizes), so a
    /// production daemon sets this to false.
    pub synthetic: bool,
    /// Prove Filecoin requests whose vanilla proofs do not verify (the
    /// real-structure inputs of `cuzk-bench real-inputs`: production shapes,
    /// random values) without verifying their proofs, instead of refusing
    /// them. Structural checks still run, and a request whose vanilla
    /// proofs hold is verified as always. Never set in production.
    pub allow_unverifiable: bool,
}

impl Default for BenchmarkSection {
    fn default() -> Self {
        Self {
            synthetic: true,
            allow_unverifiable: false,
        }
    }
}

/// `[logging]`
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct LoggingSection {
    /// tracing filter: `info`, `debug`, `cuzk_engine=debug,info`, ...
    pub level: String,
}

impl Default for LoggingSection {
    fn default() -> Self {
        Self { level: "info".into() }
    }
}

/// A byte count written as a number, `"auto"`, or a string with a unit
/// (`B`, `KiB`, `MiB`, `GiB`, `TiB`, or the decimal `KB`, `MB`, `GB`, `TB`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ByteSize {
    /// Derived from the machine.
    Auto,
    /// Exactly this many bytes.
    Bytes(u64),
}

impl ByteSize {
    /// Parses the string forms.
    pub fn parse(text: &str) -> Result<Self, String> {
        let text = text.trim();
        if text.eq_ignore_ascii_case("auto") {
            return Ok(ByteSize::Auto);
        }
        let split = text
            .find(|c: char| !c.is_ascii_digit() && c != '.')
            .unwrap_or(text.len());
        let (number, unit) = text.split_at(split);
        let number: f64 = number.parse().map_err(|_| format!("not a size: {text:?}"))?;
        let multiplier: u64 = match unit.trim().to_ascii_lowercase().as_str() {
            "" | "b" => 1,
            "kib" => 1 << 10,
            "mib" => 1 << 20,
            "gib" => 1 << 30,
            "tib" => 1 << 40,
            "kb" => 1_000,
            "mb" => 1_000_000,
            "gb" => 1_000_000_000,
            "tb" => 1_000_000_000_000,
            other => return Err(format!("unknown size unit {other:?} in {text:?}")),
        };
        Ok(ByteSize::Bytes((number * multiplier as f64) as u64))
    }
}

impl<'de> Deserialize<'de> for ByteSize {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Number(u64),
            Text(String),
        }
        match Raw::deserialize(deserializer)? {
            Raw::Number(n) => Ok(ByteSize::Bytes(n)),
            Raw::Text(t) => ByteSize::parse(&t).map_err(serde::de::Error::custom),
        }
    }
}

/// Total physical memory, from /proc/meminfo.
pub fn machine_memory() -> Option<u64> {
    let info = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = info.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

impl Config {
    /// Reads and checks a TOML file.
    pub fn load(path: &Path) -> anyhow::Result<Self> {
        let text =
            std::fs::read_to_string(path).with_context(|| format!("reading config {}", path.display()))?;
        let config: Config =
            toml::from_str(&text).with_context(|| format!("parsing config {}", path.display()))?;
        config.validate()?;
        Ok(config)
    }

    /// Rejects values the engine cannot run with.
    pub fn validate(&self) -> anyhow::Result<()> {
        if !self.cluster.database.is_empty() {
            if self.cluster.lease_ms < 300 {
                bail!("[cluster] lease_ms must be at least 300");
            }
            if self.cluster.max_claimed == 0 {
                bail!("[cluster] max_claimed must be at least 1");
            }
            if self.cluster.poll_ms == 0 {
                bail!("[cluster] poll_ms must be at least 1");
            }
            if self.cluster.max_attempts == 0 {
                bail!("[cluster] max_attempts must be at least 1");
            }
            if self.cluster.max_queued_jobs == 0 {
                bail!("[cluster] max_queued_jobs must be at least 1");
            }
            if self.cluster.request_limit() == 0 {
                bail!("[cluster] max_request_bytes must be positive");
            }
        }
        if self.synthesis.partition_workers == 0 {
            bail!("[synthesis] partition_workers must be at least 1");
        }
        if self.gpus.gpu_workers_per_device == 0 {
            bail!("[gpus] gpu_workers_per_device must be at least 1");
        }
        if self.pipeline.max_gpu_queue_depth == 0 {
            bail!("[pipeline] max_gpu_queue_depth must be at least 1");
        }
        if self.pipeline.max_queued_jobs == 0 {
            bail!("[pipeline] max_queued_jobs must be at least 1");
        }
        Ok(())
    }

    /// `[gpus] memory_cap` in bytes, else the `CUZK_GPU_MEMORY_CAP_GIB`
    /// environment variable's; `None` for the whole card.
    pub fn gpu_memory_cap(&self) -> anyhow::Result<Option<u64>> {
        Ok(match self.gpus.memory_cap {
            ByteSize::Bytes(0) | ByteSize::Auto => memory_cap_from_env(),
            ByteSize::Bytes(n) if n < 1 << 30 => bail!("[gpus] memory_cap must be at least 1GiB"),
            ByteSize::Bytes(n) => Some(n),
        })
    }

    /// The memory budget in bytes.
    pub fn memory_budget(&self) -> anyhow::Result<u64> {
        match self.memory.total_budget {
            ByteSize::Bytes(n) if n > 0 => Ok(n),
            ByteSize::Bytes(_) => bail!("[memory] total_budget must be positive"),
            ByteSize::Auto => {
                let total =
                    machine_memory().context("cannot read /proc/meminfo for total_budget = \"auto\"")?;
                let margin = match self.memory.safety_margin {
                    ByteSize::Bytes(n) => n,
                    ByteSize::Auto => total / 10,
                };
                Ok(total.saturating_sub(margin).max(1 << 30))
            }
        }
    }

    /// Bytes of `budget` kept for PoSt partitions.
    pub fn post_reserve(&self, budget: u64) -> anyhow::Result<u64> {
        match self.memory.post_reserve {
            ByteSize::Auto => Ok((budget / 8).min(8 << 30)),
            ByteSize::Bytes(n) if n >= budget && n > 0 => bail!(
                "[memory] post_reserve ({} MiB) must be less than the budget ({} MiB)",
                n >> 20,
                budget >> 20
            ),
            ByteSize::Bytes(n) => Ok(n),
        }
    }

    /// The engine's settings (its backends and plan sources are built by
    /// [`crate::setup::EngineSetup`]).
    pub fn engine_config(&self) -> anyhow::Result<EngineConfig> {
        let memory_budget = self.memory_budget()?;
        Ok(EngineConfig {
            srs_memory_limit: match self.srs.memory_limit {
                Some(ByteSize::Bytes(n)) => n,
                _ => 0,
            },
            srs_idle_evict: match self.srs.idle_evict_secs {
                None => EngineConfig::default().srs_idle_evict,
                Some(0) => None,
                Some(secs) => Some(Duration::from_secs(secs)),
            },
            preload: self.srs.preload.clone(),
            partition_workers: self.synthesis.partition_workers,
            sequential_slots: self.core_split().0,
            workers_per_backend: self.gpus.gpu_workers_per_device,
            device_quarantine: Duration::from_secs(self.gpus.quarantine_secs),
            max_prover_queue_depth: self.pipeline.max_gpu_queue_depth,
            memory_budget,
            post_reserve: self.post_reserve(memory_budget)?,
            result_ttl: Duration::from_secs(self.pipeline.result_ttl_secs),
            result_capacity: self.pipeline.result_capacity,
            max_queued_jobs: self.pipeline.max_queued_jobs,
            witness_only: self.pipeline.witness_only,
        })
    }

    /// (sequential slots, pool threads) on this host.
    pub fn core_split(&self) -> (usize, usize) {
        let available = std::thread::available_parallelism().map_or(1, |n| n.get());
        self.pipeline.core_split(&self.gpus, available)
    }

    /// The compiled R1CS files' store (`[srs] r1cs_cache`; by default in
    /// `param_dir`).
    pub fn r1cs_store(&self, param_dir: &std::path::Path) -> cuzk_core::R1csStore {
        match self.srs.r1cs_cache.as_deref().map(str::trim) {
            Some("off") => {
                tracing::info!("[srs] r1cs_cache = \"off\": compiled R1CS kept in memory only");
                cuzk_core::R1csStore::memory_only()
            }
            Some(dir) if !dir.is_empty() => cuzk_core::R1csStore::in_dir(dir),
            _ => cuzk_core::R1csStore::in_dir(param_dir),
        }
    }

    /// The parameter directory: `[srs] param_cache`, else the default.
    pub fn param_dir(&self) -> std::path::PathBuf {
        self.srs
            .param_cache
            .clone()
            .unwrap_or_else(cuzk_core::params::default_dir)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse() {
        assert_eq!(ByteSize::parse("auto"), Ok(ByteSize::Auto));
        assert_eq!(ByteSize::parse("64GiB"), Ok(ByteSize::Bytes(64 << 30)));
        assert_eq!(ByteSize::parse("1.5 GiB"), Ok(ByteSize::Bytes(3 << 29)));
        assert_eq!(ByteSize::parse("100"), Ok(ByteSize::Bytes(100)));
        assert!(ByteSize::parse("12 parsecs").is_err());
    }

    #[test]
    fn the_cores_are_split_between_slots_and_the_pool() {
        let gpus = GpusSection::default();
        let split = |toml_text: &str, available| {
            let config: Config = toml::from_str(toml_text).unwrap();
            config.pipeline.core_split(&gpus, available)
        };
        // All cores, one slot per eight.
        assert_eq!(split("", 16), (2, 14));
        assert_eq!(split("", 2), (1, 1));
        assert_eq!(split("[pipeline]\ncpu_threads = 8", 64), (1, 7));
        assert_eq!(
            split("[pipeline]\ncpu_threads = 8\nsequential_threads = 3", 64),
            (3, 5)
        );
        // More slots than cores: every core a slot, the pool keeps one thread.
        assert_eq!(
            split("[pipeline]\ncpu_threads = 2\nsequential_threads = 9", 64),
            (2, 1)
        );
        let config: Config = toml::from_str("[pipeline]\ncpu_threads = 16\nsequential_threads = 3").unwrap();
        assert_eq!(config.engine_config().unwrap().sequential_slots, 3);
    }

    #[test]
    fn the_post_reserve_is_an_eighth_of_the_budget_at_most_8_gib_or_a_size() {
        let config = |text: &str| toml::from_str::<Config>(text).unwrap();
        let auto = config("");
        assert_eq!(auto.post_reserve(16 << 30).unwrap(), 2 << 30);
        assert_eq!(auto.post_reserve(200 << 30).unwrap(), 8 << 30);
        let sized = config("[memory]\npost_reserve = \"12GiB\"");
        assert_eq!(sized.post_reserve(100 << 30).unwrap(), 12 << 30);
        assert!(
            sized.post_reserve(12 << 30).is_err(),
            "a reserve as large as the budget"
        );
        assert_eq!(
            config("[memory]\npost_reserve = 0")
                .post_reserve(1 << 30)
                .unwrap(),
            0
        );
        let engine = config("[memory]\ntotal_budget = \"64GiB\"")
            .engine_config()
            .unwrap();
        assert_eq!((engine.memory_budget, engine.post_reserve), (64 << 30, 8 << 30));
    }

    #[test]
    fn the_gpu_memory_cap_is_a_size_or_none() {
        let cap = |text: &str| toml::from_str::<Config>(text).unwrap().gpu_memory_cap();
        assert_eq!(cap("").unwrap(), None);
        assert_eq!(cap("[gpus]\nmemory_cap = 0").unwrap(), None);
        assert_eq!(cap("[gpus]\nmemory_cap = \"auto\"").unwrap(), None);
        assert_eq!(cap("[gpus]\nmemory_cap = \"16GiB\"").unwrap(), Some(16 << 30));
        assert!(
            cap("[gpus]\nmemory_cap = \"512MiB\"").is_err(),
            "under 1 GiB is refused"
        );
        assert!(toml::from_str::<Config>("[gpus]\nmemory_cap = \"big\"").is_err());
    }

    #[test]
    fn example_config_parses_to_the_defaults() {
        let text =
            std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../cuzk.example.toml")).unwrap();
        let parsed: Config = toml::from_str(&text).unwrap();
        let mut expected = Config::default();
        expected.srs.preload = Vec::new();
        assert_eq!(parsed, expected, "the example documents the defaults");
    }

    #[test]
    fn unverifiable_requests_are_refused_unless_the_benchmark_switch_is_set() {
        assert!(!Config::default().benchmark.allow_unverifiable);
        let on: Config = toml::from_str("[benchmark]\nallow_unverifiable = true").unwrap();
        assert!(on.benchmark.allow_unverifiable && on.benchmark.synthetic);
    }

    #[test]
    fn unknown_keys_and_bad_values_are_rejected() {
        assert!(toml::from_str::<Config>("[daemon]\nlisen = \"x\"").is_err());
        assert!(toml::from_str::<Config>("[memory]\ntotal_budget = \"lots\"").is_err());
        let zero: Config = toml::from_str("[synthesis]\npartition_workers = 0").unwrap();
        assert!(zero.validate().is_err());
    }

    #[test]
    fn the_pools_bounds_are_positive_and_the_request_limit_a_size() {
        let pool = |keys: &str| {
            toml::from_str::<Config>(&format!("[cluster]\ndatabase = \"postgres://h/db\"\n{keys}")).unwrap()
        };
        assert_eq!(pool("").cluster.request_limit(), 64 << 20);
        assert_eq!(
            pool("max_request_bytes = \"1MiB\"").cluster.request_limit(),
            1 << 20
        );
        assert_eq!(
            pool("max_request_bytes = \"auto\"").cluster.request_limit(),
            64 << 20
        );
        for zero in ["max_attempts = 0", "max_queued_jobs = 0", "max_request_bytes = 0"] {
            assert!(pool(zero).validate().is_err(), "{zero}");
        }
        assert!(pool("max_attempts = 1").validate().is_ok());
    }
}
