//! `cuzk-ctl doctor`: checks a host before it proves, and says in plain
//! words what to fix. Each check ends OK, WARN (proving works, but slower or
//! at a risk) or FAIL (proving as configured will not work); any FAIL makes
//! the exit status non-zero.
//!
//! The checks read the machine (/proc, /sys, nvidia-smi), the daemon's
//! config when given (`--config`: its parameter directory, memory budget,
//! GPUs, preload list and listen address), the parameter files' headers
//! (section sizes: what the GPU keeps resident), and ask the daemon for its
//! status. Nothing is changed, except with `--verify-digests`, which hashes
//! the parameter files and leaves the same trust records the daemon would.

use crate::report::{self, GpuInfo, HostInfo, JsonReport};
use clap::Args;
use cuzk_core::params::ParamsLayout as Layout;
use cuzk_core::ProofKind;
use cuzk_daemon::config::{ByteSize, Config};
use cuzk_filecoin::constraints::partition_shape;
use cuzk_filecoin::names::CurioCircuit;
use serde::Serialize;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

#[derive(Args, Debug)]
pub struct DoctorArgs {
    /// The daemon's config file: its [srs], [memory], [gpus] and [daemon]
    /// listen are what the checks hold the host against (default: the
    /// built-in defaults, as a daemon started without a config).
    #[arg(long)]
    config: Option<PathBuf>,
    /// Circuits the daemon will prove: Curio's names (porep-32g, wpost-32g,
    /// winning-32g, snap-32g, or -2k, -8m, -512m, -64g) or official ids
    /// (v28-...). Comma-separated or repeated. Default: the config's
    /// [srs] preload, else porep-32g.
    #[arg(long, value_delimiter = ',')]
    circuits: Vec<String>,
    /// Parameter directory (default: the config's [srs] param_cache, else
    /// $FIL_PROOFS_PARAMETER_CACHE, else cuzk's default: the daemon's rule).
    #[arg(long)]
    param_cache: Option<PathBuf>,
    /// The daemon to check: http://host:port, host:port (as Curio's
    /// [Cuzk] Address) or unix:///path (default: the config's [daemon] listen).
    #[arg(long)]
    addr: Option<String>,
    /// Skip the daemon check (a host prepared before the daemon is started).
    #[arg(long)]
    no_daemon: bool,
    /// Hash every parameter file against filecoin-proofs' published digest
    /// (one core at about 1 GB/s: 45 s for 32 GiB PoRep's), remembering a
    /// match in <param dir>/.cuzk-trust/ as the daemon does.
    #[arg(long)]
    verify_digests: bool,
    /// File holding the daemon's bearer token (default: $CUZK_AUTH_TOKEN,
    /// $CUZK_AUTH_TOKEN_FILE).
    #[arg(long)]
    auth_token_file: Option<PathBuf>,
    /// Also write the checks as JSON (docs/bench/SCHEMA.md, command "doctor").
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
}

/// How a check ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Ok,
    Warn,
    Fail,
}

impl Status {
    fn label(self) -> &'static str {
        match self {
            Status::Ok => "[ OK ]",
            Status::Warn => "[WARN]",
            Status::Fail => "[FAIL]",
        }
    }
}

/// One check's verdict.
#[derive(Debug, Serialize)]
struct Check {
    /// `cpu`, `gpu`, `vram <n>`, `huge pages`, `memory`,
    /// `parameters <circuit>`, `daemon`.
    name: String,
    status: Status,
    /// One line: what was found.
    summary: String,
    /// Further facts, one per line.
    details: Vec<String>,
    /// What to do about a WARN or FAIL, in plain words.
    fix: Option<String>,
}

impl Check {
    fn new(name: impl Into<String>, status: Status, summary: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            status,
            summary: summary.into(),
            details: Vec::new(),
            fix: None,
        }
    }

    fn detail(mut self, line: impl Into<String>) -> Self {
        self.details.push(line.into());
        self
    }

    fn fix(mut self, text: impl Into<String>) -> Self {
        self.fix = Some(text.into());
        self
    }

    fn print(&self) {
        println!("{} {:<12} {}", self.status.label(), self.name, self.summary);
        for line in &self.details {
            println!("{:19} {line}", "");
        }
        if let Some(fix) = &self.fix {
            println!("{:19} fix: {fix}", "");
        }
    }
}

/// The doctor's figures in the JSON report.
#[derive(Debug, Serialize)]
struct DoctorResults {
    config: Option<PathBuf>,
    param_dir: PathBuf,
    /// Where the parameter directory came from.
    param_dir_source: String,
    circuits: Vec<String>,
    daemon_addr: Option<String>,
    checks: Vec<Check>,
    fails: usize,
    warns: usize,
}

const GIB: u64 = 1 << 30;

fn gib(bytes: u64) -> String {
    if bytes > 0 && bytes < GIB {
        return format!("{:.1} MiB", bytes as f64 / (1u64 << 20) as f64);
    }
    format!("{:.1} GiB", bytes as f64 / GIB as f64)
}

/// A circuit to check.
#[derive(Clone, Debug)]
struct Circuit {
    /// As the operator wrote it.
    name: String,
    what: CircuitKind,
}

#[derive(Clone, Debug)]
enum CircuitKind {
    /// An official Filecoin circuit: its id (the files' stem), proof kind
    /// and sector size.
    Filecoin {
        id: String,
        kind: ProofKind,
        sector_size: u64,
        /// The size as `fetch-params` takes it (`32GiB`).
        fetch_name: String,
    },
    /// A benchmark circuit, generated by the daemon on first use.
    Benchmark,
    /// Not a circuit id cuzk serves (the reason).
    Unknown(String),
}

impl Circuit {
    fn resolve(name: &str) -> Self {
        let filecoin = |id: String, circuit: CurioCircuit| CircuitKind::Filecoin {
            id,
            kind: circuit.kind,
            sector_size: circuit.sector_size,
            fetch_name: circuit.fetch_params_size(),
        };
        let what = if name.starts_with("synthetic-") || name.starts_with("shaped-") {
            CircuitKind::Benchmark
        } else if let Some(circuit) = CurioCircuit::parse(name) {
            match circuit.official_id() {
                Ok(id) => filecoin(id, circuit),
                Err(e) => CircuitKind::Unknown(e.to_string()),
            }
        } else if name.starts_with("v28-") {
            match CurioCircuit::from_official_id(name) {
                Some((_, circuit)) => filecoin(name.to_string(), circuit),
                None => CircuitKind::Unknown("not an official circuit id of filecoin-proofs 19.1".into()),
            }
        } else {
            CircuitKind::Unknown(
                "not a circuit id cuzk serves (Curio's names: porep-32g, wpost-32g, winning-32g, snap-32g, ...)"
                    .into(),
            )
        };
        Self {
            name: name.to_string(),
            what,
        }
    }
}

/// Host bytes of a circuit's compiled R1CS (held once per circuit id and
/// counted by the budget), estimated per constraint from the measured
/// 32 GiB circuits (BENCHMARKS.md): PoRep 7.38 GB for 130.3 M constraints
/// (57 bytes each), WindowPoSt 10.71 GB for 125.3 M (86 bytes); the others
/// at WindowPoSt's rate.
fn r1cs_bytes(kind: ProofKind, constraints: usize) -> u64 {
    let per_constraint = if kind == ProofKind::PorepSealCommit {
        57
    } else {
        86
    };
    constraints as u64 * per_constraint
}

/// What one circuit needs of a GPU's free memory, by the CUDA backend's
/// own model (`cuzk_sys::gpu::limits`).
#[derive(Debug, Clone, Copy)]
struct VramNeed {
    /// Parameters resident beside a partition's working set.
    resident: u64,
    /// The above plus the compiled R1CS and the witness path's working set
    /// (a, b, c computed on the device).
    witness_path: u64,
    /// Parameters streamed from host memory: a partition's working set only.
    streamed: u64,
}

fn vram_need(layout: &Layout, r1cs: u64) -> VramNeed {
    use cuzk_sys::gpu::limits::{partition_working_set, witness_working_set, VRAM_SLACK};
    let domain = layout.domain() as usize;
    let working = partition_working_set(domain);
    let witness_working = witness_working_set(layout.inputs as usize, layout.l as usize, domain);
    let sections = layout.device_bytes();
    VramNeed {
        resident: sections + working + VRAM_SLACK,
        witness_path: sections + r1cs + witness_working + VRAM_SLACK,
        streamed: working + VRAM_SLACK,
    }
}

/// A cuzk-daemon process on this host, as /proc shows it.
#[derive(Debug)]
struct DaemonProcess {
    pid: u32,
    /// `GLIBC_TUNABLES` of its environment; None when /proc/<pid>/environ
    /// is not readable (another user's process) or it is unset.
    environ_readable: bool,
    glibc_hugetlb: Option<String>,
    /// "Max locked memory" soft limit, bytes (None = unlimited).
    memlock: Option<Option<u64>>,
}

fn local_daemons() -> Vec<DaemonProcess> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let mut found = Vec::new();
    for entry in entries.flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else {
            continue;
        };
        let comm = std::fs::read_to_string(entry.path().join("comm")).unwrap_or_default();
        if comm.trim() != "cuzk-daemon" {
            continue;
        }
        let environ = std::fs::read(entry.path().join("environ")).ok();
        let glibc_hugetlb = environ.as_ref().and_then(|bytes| {
            bytes
                .split(|&b| b == 0)
                .filter_map(|kv| std::str::from_utf8(kv).ok())
                .find_map(|kv| kv.strip_prefix("GLIBC_TUNABLES="))
                .and_then(report::glibc_hugetlb)
        });
        let memlock = std::fs::read_to_string(entry.path().join("limits"))
            .ok()
            .and_then(|text| parse_memlock(&text));
        found.push(DaemonProcess {
            pid,
            environ_readable: environ.is_some(),
            glibc_hugetlb,
            memlock,
        });
    }
    found.sort_by_key(|d| d.pid);
    found
}

/// The soft "Max locked memory" of /proc/<pid>/limits: Some(None) for
/// unlimited.
fn parse_memlock(limits: &str) -> Option<Option<u64>> {
    let line = limits.lines().find(|l| l.starts_with("Max locked memory"))?;
    let soft = line["Max locked memory".len()..].split_whitespace().next()?;
    if soft == "unlimited" {
        Some(None)
    } else {
        soft.parse().ok().map(Some)
    }
}

/// The parameter directory by the daemon's rule, and where it came from.
fn param_dir(args: &DoctorArgs, config: &Config) -> (PathBuf, String) {
    if let Some(dir) = &args.param_cache {
        return (dir.clone(), "--param-cache".into());
    }
    if let Some(dir) = &config.srs.param_cache {
        return (dir.clone(), "[srs] param_cache".into());
    }
    match std::env::var_os(cuzk_filecoin::settings::PARAMETER_CACHE_VAR) {
        Some(dir) if !dir.is_empty() => (
            PathBuf::from(dir),
            format!(
                "${} (of this shell: the daemon's environment may differ)",
                cuzk_filecoin::settings::PARAMETER_CACHE_VAR
            ),
        ),
        _ => (
            cuzk_core::params::default_dir(),
            "cuzk's default ($CUZK_PARAM_CACHE, else ~/.cache/cuzk/params)".into(),
        ),
    }
}

/// A gRPC address for the daemon: `--addr`, else the config's listen
/// address seen from this host (a wildcard listener is reached on loopback).
fn daemon_addr(args: &DoctorArgs, config: &Config) -> String {
    let raw = args.addr.clone().unwrap_or_else(|| {
        let listen = &config.daemon.listen;
        let listen = listen
            .replace("0.0.0.0:", "127.0.0.1:")
            .replace("[::]:", "[::1]:");
        match &config.daemon.tls {
            Some(_) if !listen.starts_with("unix:") => format!("https://{listen}"),
            _ => listen,
        }
    });
    if raw.contains("://") {
        raw
    } else {
        // Curio's form: a bare host:port.
        format!("http://{raw}")
    }
}

/// Runs the checks, prints them, writes `--json`; false when one failed.
pub async fn run(args: DoctorArgs) -> anyhow::Result<bool> {
    let json = JsonReport::start(crate::tool(), "doctor", args.json.as_deref());
    let config = match &args.config {
        Some(path) => Config::load(path)?,
        None => Config::default(),
    };
    let (param_dir, param_dir_source) = param_dir(&args, &config);
    let names: Vec<String> = if !args.circuits.is_empty() {
        args.circuits.clone()
    } else if !config.srs.preload.is_empty() {
        config.srs.preload.clone()
    } else {
        vec!["porep-32g".into()]
    };
    let circuits: Vec<Circuit> = names.iter().map(|n| Circuit::resolve(n)).collect();
    let host = tokio::task::spawn_blocking(HostInfo::gather).await?;
    let daemons = local_daemons();

    println!(
        "cuzk doctor: {} ({}), {}",
        host.hostname,
        host.os,
        report::rfc3339(std::time::SystemTime::now())
    );
    println!(
        "parameters in {} ({param_dir_source}); circuits: {}",
        param_dir.display(),
        names.join(", ")
    );
    if let Some(path) = &args.config {
        println!("config: {}", path.display());
    } else {
        println!("config: none given (the daemon's defaults; --config FILE checks against yours)");
    }
    println!();

    let mut checks = vec![cpu_check(&host, &config)];
    let gpus = visible_gpus(&host, &config);
    checks.push(gpu_check(&host, &config, &gpus));
    let layouts: Vec<Option<Layout>> = circuits
        .iter()
        .map(|c| match &c.what {
            CircuitKind::Filecoin { id, .. } => Layout::read(&param_dir.join(format!("{id}.params"))).ok(),
            _ => None,
        })
        .collect();
    for gpu in &gpus {
        checks.push(vram_check(gpu, &config, &circuits, &layouts));
    }
    checks.push(huge_pages_check(&host, &daemons));
    if !gpus.is_empty() {
        if let Some(check) = memlock_check(&daemons) {
            checks.push(check);
        }
    }
    let gpu_path = !gpus.is_empty() && config.gpus.enabled && config.pipeline.witness_only;
    checks.push(memory_check(&host, &config, &circuits, &param_dir, gpu_path));
    let verify = args.verify_digests;
    for circuit in &circuits {
        let (circuit, dir) = (circuit.clone(), param_dir.clone());
        let check = tokio::task::spawn_blocking(move || parameters_check(&circuit, &dir, verify)).await?;
        checks.push(check);
    }
    let daemon_addr = (!args.no_daemon).then(|| daemon_addr(&args, &config));
    if let Some(addr) = &daemon_addr {
        checks.push(daemon_check(addr, args.auth_token_file.as_deref(), &gpus, &daemons).await);
    }

    for check in &checks {
        check.print();
    }
    let fails = checks.iter().filter(|c| c.status == Status::Fail).count();
    let warns = checks.iter().filter(|c| c.status == Status::Warn).count();
    let oks = checks.len() - fails - warns;
    println!();
    println!(
        "summary: {fails} FAIL, {warns} WARN, {oks} OK: {}",
        match (fails, warns) {
            (0, 0) => "this host is ready to prove",
            (0, _) => "this host can prove; the warnings say what it costs",
            _ => "proving as configured will not work until every FAIL is fixed",
        }
    );
    json.write(&DoctorResults {
        config: args.config.clone(),
        param_dir,
        param_dir_source,
        circuits: names,
        daemon_addr,
        checks,
        fails,
        warns,
    })?;
    Ok(fails == 0)
}

fn cpu_check(host: &HostInfo, config: &Config) -> Check {
    let cpu = &host.cpu;
    let mut check = Check::new(
        "cpu",
        Status::Ok,
        format!(
            "{} ({} core(s), {} thread(s), {} socket(s); {} usable here)",
            cpu.model, cpu.physical_cores, cpu.logical_cpus, cpu.sockets, cpu.available_parallelism
        ),
    );
    let threads = config.pipeline.pool_threads(&config.gpus);
    if threads > cpu.available_parallelism {
        check = Check {
            status: Status::Warn,
            ..check
        }
        .detail(format!(
            "[pipeline] cpu_threads = {threads} is more than the {} CPUs usable",
            cpu.available_parallelism
        ))
        .fix("set [pipeline] cpu_threads = 0 (all cores) or at most the CPUs usable");
    }
    check.detail(format!(
        "[synthesis] partition_workers = {}",
        config.synthesis.partition_workers
    ))
}

/// The GPUs the daemon will use: nvidia-smi's, narrowed by
/// CUDA_VISIBLE_DEVICES (numeric lists) and `[gpus] devices`.
fn visible_gpus(host: &HostInfo, config: &Config) -> Vec<GpuInfo> {
    if !config.gpus.enabled {
        return Vec::new();
    }
    let mut gpus = host.gpus.clone();
    if let Ok(list) = std::env::var("CUDA_VISIBLE_DEVICES") {
        let indices: Option<Vec<u32>> = list.split(',').map(|s| s.trim().parse().ok()).collect();
        if let Some(indices) = indices {
            gpus = indices
                .iter()
                .filter_map(|i| host.gpus.iter().find(|g| g.index == *i).cloned())
                .collect();
        }
    }
    if !config.gpus.devices.is_empty() {
        gpus = config
            .gpus
            .devices
            .iter()
            .filter_map(|&ordinal| gpus.get(ordinal as usize).cloned())
            .collect();
    }
    // `[gpus] memory_cap` (or the environment's when unset): the daemon uses
    // each card as one of that size, so it is sized against that.
    let cap = config.gpu_memory_cap().ok().flatten();
    if let Some(cap) = cap {
        gpus.iter_mut().for_each(|g| cap_gpu(g, cap));
    }
    gpus
}

/// `gpu` as a card of `cap` bytes: the memory above the cap is held, so the
/// free memory shrinks by as much.
fn cap_gpu(gpu: &mut GpuInfo, cap: u64) {
    if cap < gpu.memory_total_bytes {
        let held = gpu.memory_total_bytes - cap;
        gpu.memory_free_bytes = gpu.memory_free_bytes.saturating_sub(held);
        gpu.memory_total_bytes = cap;
    }
}

fn gpu_check(host: &HostInfo, config: &Config, gpus: &[GpuInfo]) -> Check {
    if !config.gpus.enabled {
        return Check::new(
            "gpu",
            Status::Warn,
            "[gpus] enabled = false: the daemon proves on the CPU",
        )
        .fix("remove enabled = false from [gpus] to prove on the GPUs");
    }
    if host.gpus.is_empty() {
        let why = host
            .gpu_probe_error
            .clone()
            .unwrap_or_else(|| "nvidia-smi lists no GPU".into());
        return Check::new(
            "gpu",
            Status::Warn,
            "no GPU visible: the daemon will prove on the CPU (a 32 GiB PoRep takes hours there)",
        )
        .detail(format!("nvidia-smi: {why}"))
        .fix(
            "install the NVIDIA driver and check that `nvidia-smi` lists the GPU; \
             a CPU-only host proves only test sizes in reasonable time",
        );
    }
    let mut check = if gpus.is_empty() {
        Check::new(
            "gpu",
            Status::Fail,
            format!(
                "{} GPU(s) on the host, none left for the daemon by CUDA_VISIBLE_DEVICES / [gpus] devices",
                host.gpus.len()
            ),
        )
        .fix("list existing GPUs in CUDA_VISIBLE_DEVICES and [gpus] devices (ordinals count from 0 among the visible ones)")
    } else {
        let listed: Vec<String> = gpus
            .iter()
            .map(|g| {
                format!(
                    "{} {} ({} total, {} free)",
                    g.index,
                    g.name,
                    gib(g.memory_total_bytes),
                    gib(g.memory_free_bytes)
                )
            })
            .collect();
        Check::new(
            "gpu",
            Status::Ok,
            format!("{} GPU(s): {}", gpus.len(), listed.join("; ")),
        )
    };
    check = check.detail(format!(
        "driver {}, CUDA {} (the newest the driver supports)",
        host.driver_version.as_deref().unwrap_or("unknown"),
        host.cuda_driver_version.as_deref().unwrap_or("unknown")
    ));
    if let Ok(list) = std::env::var("CUDA_VISIBLE_DEVICES") {
        check = check.detail(format!("CUDA_VISIBLE_DEVICES={list} in this shell"));
    }
    let missing: Vec<u32> = config
        .gpus
        .devices
        .iter()
        .copied()
        .filter(|&d| d as usize >= gpus.len().max(host.gpus.len()))
        .collect();
    if !missing.is_empty() {
        check = Check {
            status: Status::Fail,
            ..check
        }
        .detail(format!("[gpus] devices names {missing:?}, which do not exist"))
        .fix("list only existing ordinals in [gpus] devices (or leave it empty: all GPUs)");
    }
    if cuzk_sys::gpu::COMPILED {
        let seen = cuzk_sys::gpu::device_count();
        check = check.detail(format!("the CUDA runtime of this build sees {seen} device(s)"));
    }
    check
}

fn vram_check(gpu: &GpuInfo, config: &Config, circuits: &[Circuit], layouts: &[Option<Layout>]) -> Check {
    let name = format!("vram {}", gpu.index);
    let free = gpu.memory_free_bytes;
    let mut worst = Status::Ok;
    let mut details = Vec::new();
    let mut fixes = Vec::new();
    for (circuit, layout) in circuits.iter().zip(layouts) {
        let CircuitKind::Filecoin {
            kind, sector_size, ..
        } = &circuit.what
        else {
            continue;
        };
        let Some(layout) = layout else {
            details.push(format!(
                "{}: unknown until its parameter file is present",
                circuit.name
            ));
            continue;
        };
        let (constraints, _) = partition_shape(*kind, *sector_size);
        let need = vram_need(layout, r1cs_bytes(*kind, constraints));
        let domain_log2 = layout.domain().next_power_of_two().trailing_zeros();
        if need.streamed > free {
            worst = worst.max(Status::Fail);
            details.push(format!(
                "{}: a partition's working set (domain 2^{domain_log2}) needs {}, {} free: the GPU declines it and the CPU proves it",
                circuit.name,
                gib(need.streamed),
                gib(free)
            ));
            fixes.push("free the GPU (other processes: see nvidia-smi) or use a larger card".to_string());
        } else if need.resident > free || config.gpus.srs_residency == "host" {
            worst = worst.max(Status::Warn);
            details.push(format!(
                "{}: parameters ({}) and a partition's working set need {}, {} free: streamed from host memory at every proof (slower)",
                circuit.name,
                gib(layout.device_bytes()),
                gib(need.resident),
                gib(free)
            ));
            fixes.push(
                "free the GPU's memory, or accept streaming (16 GB cards always stream 32 GiB parameters)"
                    .to_string(),
            );
        } else if config.pipeline.witness_only && need.witness_path > free {
            worst = worst.max(Status::Warn);
            details.push(format!(
                "{}: parameters resident ({}), but with the compiled R1CS and the witness path's working set it needs {}, {} free: a, b, c are computed on the host (slower)",
                circuit.name,
                gib(layout.device_bytes()),
                gib(need.witness_path),
                gib(free)
            ));
            fixes.push("free the GPU's memory to keep the witness path on the device".to_string());
        } else {
            details.push(format!(
                "{}: parameters ({}) stay resident; with the witness path {} of {} free",
                circuit.name,
                gib(layout.device_bytes()),
                gib(need.witness_path),
                gib(free)
            ));
        }
    }
    let summary = match worst {
        Status::Ok => format!("{} free on {}: every circuit checked fits", gib(free), gpu.name),
        Status::Warn => format!("{} free on {}: some circuits prove slower", gib(free), gpu.name),
        Status::Fail => format!(
            "{} free on {}: some partitions cannot use the GPU",
            gib(free),
            gpu.name
        ),
    };
    let mut check = Check::new(name, worst, summary);
    check.details = details;
    check.details.push(
        "one circuit's parameters are resident per GPU at a time; another circuit replaces them".into(),
    );
    fixes.dedup();
    if !fixes.is_empty() {
        check.fix = Some(fixes.join("; "));
    }
    check
}

fn huge_pages_check(host: &HostInfo, daemons: &[DaemonProcess]) -> Check {
    let hp = &host.huge_pages;
    let shell = hp.glibc_hugetlb.as_deref() == Some("1");
    // The running daemon's environment decides, when it can be read.
    let daemon = daemons.iter().find(|d| d.environ_readable);
    let (asked, whose) = match daemon {
        Some(d) => (
            d.glibc_hugetlb.as_deref() == Some("1"),
            format!("the running daemon (pid {})", d.pid),
        ),
        None => (
            shell,
            "this shell (the daemon's own environment is what counts)".to_string(),
        ),
    };
    let mut check = match hp.transparent.as_str() {
        "always" => Check::new(
            "huge pages",
            Status::Ok,
            "transparent huge pages: always (every large allocation gets them)",
        ),
        "madvise" if asked => Check::new(
            "huge pages",
            Status::Ok,
            format!("transparent huge pages on request, and glibc requests them in {whose}"),
        ),
        "madvise" => Check::new(
            "huge pages",
            Status::Warn,
            format!(
                "transparent huge pages only on request, and glibc does not request them in {whose}: \
                 full-size partitions pay 4 KiB page faults (45.6 s instead of 32.9 s per 32 GiB proof on the H200)"
            ),
        )
        .fix("start the daemon with GLIBC_TUNABLES=glibc.malloc.hugetlb=1 (deploy/systemd/cuzk.service sets it)"),
        "never" => Check::new(
            "huge pages",
            Status::Warn,
            "transparent huge pages are off: full-size partitions pay 4 KiB page faults",
        )
        .fix("echo madvise > /sys/kernel/mm/transparent_hugepage/enabled (as root; persist it with transparent_hugepage=madvise on the kernel command line) and set GLIBC_TUNABLES=glibc.malloc.hugetlb=1"),
        other => Check::new(
            "huge pages",
            Status::Warn,
            format!("transparent huge pages: {other} (no /sys/kernel/mm/transparent_hugepage?)"),
        ),
    };
    check = check.detail(format!("defrag: {}", hp.defrag));
    let reserved = hp.static_total * hp.static_page_bytes;
    if reserved > 0 {
        check = check.detail(format!(
            "{} reserved as static huge pages (vm.nr_hugepages = {}, {} free): cuzk does not use them, and they are not available to it",
            gib(reserved),
            hp.static_total,
            hp.static_free
        ));
        if reserved >= GIB && check.status == Status::Ok {
            check.status = Status::Warn;
            check.fix =
                Some("set vm.nr_hugepages = 0 (sysctl) unless another program on this host uses them".into());
        }
    }
    check
}

fn memlock_check(daemons: &[DaemonProcess]) -> Option<Check> {
    let daemon = daemons.iter().find(|d| d.memlock.is_some())?;
    let limit = daemon.memlock.flatten();
    Some(match limit {
        None => Check::new(
            "memlock",
            Status::Ok,
            format!("the running daemon (pid {}) may page-lock any amount of memory", daemon.pid),
        ),
        Some(bytes) if bytes >= 64 * GIB => Check::new(
            "memlock",
            Status::Ok,
            format!("the running daemon (pid {}) may page-lock {}", daemon.pid, gib(bytes)),
        ),
        Some(bytes) => Check::new(
            "memlock",
            Status::Warn,
            format!(
                "the running daemon (pid {}) may page-lock only {} KiB: parameters streamed to the GPU cannot be pinned (half the copy speed)",
                daemon.pid,
                bytes >> 10
            ),
        )
        .fix("raise its limit: LimitMEMLOCK=infinity in the systemd unit (deploy/systemd/cuzk.service)"),
    })
}

fn memory_check(host: &HostInfo, config: &Config, circuits: &[Circuit], dir: &Path, gpu_path: bool) -> Check {
    let total = host.memory.total_bytes;
    let reserved = host.huge_pages.static_total * host.huge_pages.static_page_bytes;
    let budget = match config.memory_budget() {
        Ok(b) => b,
        Err(e) => {
            return Check::new("memory", Status::Fail, format!("no memory budget: {e:#}"))
                .fix("set [memory] total_budget to a size, e.g. \"64GiB\"")
        }
    };
    let budget_kind = match config.memory.total_budget {
        ByteSize::Auto => "auto: the machine's memory minus safety_margin",
        ByteSize::Bytes(_) => "[memory] total_budget",
    };
    // Parameters live in host memory while used, counted by the budget;
    // [srs] memory_limit (at most the budget) evicts idle ones beyond it.
    let sizes: Vec<u64> = circuits
        .iter()
        .filter_map(|c| match &c.what {
            CircuitKind::Filecoin { id, .. } => std::fs::metadata(dir.join(format!("{id}.params"))).ok(),
            _ => None,
        })
        .map(|m| m.len())
        .collect();
    let all_params: u64 = sizes.iter().sum();
    let largest = sizes.iter().copied().max().unwrap_or(0);
    let params = match config.srs.memory_limit {
        Some(ByteSize::Bytes(limit)) if limit > 0 => all_params.min(limit.max(largest)),
        _ => all_params,
    };
    let r1cs: u64 = circuits
        .iter()
        .filter_map(|c| match &c.what {
            CircuitKind::Filecoin {
                kind, sector_size, ..
            } => Some(r1cs_bytes(*kind, partition_shape(*kind, *sector_size).0)),
            _ => None,
        })
        .sum();

    let mut status = Status::Ok;
    let mut details = vec![
        format!(
            "host {} ({} available now); budget {} ({budget_kind}); parameters {} resident when used and compiled R1CS about {}, both counted by the budget",
            gib(total),
            gib(host.memory.available_bytes),
            gib(budget),
            gib(params),
            gib(r1cs)
        ),
    ];
    let mut fixes = Vec::new();
    let path = if gpu_path {
        "the witness only: GPU path"
    } else {
        "a, b, c on the host: no GPU, or witness_only = false"
    };
    let workers = config.synthesis.partition_workers;
    for circuit in circuits {
        let CircuitKind::Filecoin {
            kind, sector_size, ..
        } = &circuit.what
        else {
            continue;
        };
        let (constraints, partitions) = partition_shape(*kind, *sector_size);
        let per = if gpu_path {
            constraints as u64 * 32 * 5 / 4
        } else {
            cuzk_core::plan::partition_bytes(constraints, constraints)
        };
        let room = budget.saturating_sub(r1cs + params);
        let fit = room / per.max(1);
        if fit == 0 {
            status = Status::Fail;
            details.push(format!(
                "{}: one partition needs {} ({path}) beside {} of parameters and {} of compiled R1CS, the budget is {}: such requests are refused (RESOURCE_EXHAUSTED)",
                circuit.name,
                gib(per),
                gib(params),
                gib(r1cs),
                gib(budget)
            ));
            fixes.push(format!(
                "raise [memory] total_budget to at least {} (a host with more memory, fewer circuits listed, or [srs] memory_limit to keep fewer parameters resident)",
                gib(per + r1cs + params + GIB)
            ));
        } else {
            details.push(format!(
                "{}: {fit} partition(s) in flight at {} each ({path}); a proof has {partitions}; {workers} synthesised at once ([synthesis] partition_workers)",
                circuit.name,
                gib(per)
            ));
        }
    }
    // What the kernel must hold under full load: the budget filled (the
    // parameters, the R1CS and the partitions) and room for the OS and a
    // co-located Curio.
    const OS_ROOM: u64 = 8 << 30;
    let usable = total.saturating_sub(reserved);
    if budget + OS_ROOM > usable && status == Status::Ok {
        status = Status::Warn;
        let suggested = usable.saturating_sub(OS_ROOM);
        details.push(format!(
            "budget {} + {} for the OS and Curio exceed the host's {}: a full queue can run the host out of memory (the kernel kills the daemon)",
            gib(budget),
            gib(OS_ROOM),
            gib(usable)
        ));
        fixes.push(format!(
            "set [memory] total_budget = \"{}GiB\" (memory - 8 GiB for the OS and Curio)",
            suggested / GIB
        ));
    }
    let summary = match status {
        Status::Ok => format!(
            "budget {} fits the host and holds {} of parameters",
            gib(budget),
            gib(params)
        ),
        Status::Warn => format!("budget {} is too large for this host", gib(budget)),
        Status::Fail => format!(
            "budget {} cannot hold one partition of every circuit beside the parameters",
            gib(budget)
        ),
    };
    let mut check = Check::new("memory", status, summary);
    check.details = details;
    if !fixes.is_empty() {
        check.fix = Some(fixes.join("; "));
    }
    check
}

/// A trust record the daemon left (`<dir>/.cuzk-trust/<file>.json`) that
/// still describes the file: its digest matched the published one.
fn trust_record_matches(path: &Path, published: &str) -> bool {
    #[derive(serde::Deserialize)]
    struct Record {
        size: u64,
        mtime_ns: u64,
        digest: String,
    }
    let (Some(dir), Some(name)) = (path.parent(), path.file_name()) else {
        return false;
    };
    let record = dir
        .join(cuzk_filecoin::trust::RECORD_DIR)
        .join(format!("{}.json", name.to_string_lossy()));
    let Some(record) = std::fs::read(record)
        .ok()
        .and_then(|bytes| serde_json::from_slice::<Record>(&bytes).ok())
    else {
        return false;
    };
    let Ok(meta) = std::fs::metadata(path) else {
        return false;
    };
    let mtime_ns = meta
        .modified()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX));
    record.size == meta.len() && record.mtime_ns == mtime_ns && record.digest == published
}

fn parameters_check(circuit: &Circuit, dir: &Path, verify: bool) -> Check {
    let name = format!("parameters {}", circuit.name);
    let (id, fetch_name) = match &circuit.what {
        CircuitKind::Benchmark => {
            return Check::new(
                name,
                Status::Ok,
                "a benchmark circuit: the daemon generates its parameters on first use ([benchmark] synthetic = true)",
            )
        }
        CircuitKind::Unknown(why) => {
            return Check::new(name, Status::Fail, why.clone())
                .fix("use Curio's names (porep-32g, wpost-32g, winning-32g, snap-32g) in [srs] preload and --circuits")
        }
        CircuitKind::Filecoin { id, fetch_name, .. } => (id, fetch_name),
    };
    let params = dir.join(format!("{id}.params"));
    let vk = dir.join(format!("{id}.vk"));
    let fetch = format!(
        "fetch them with `curio fetch-params {fetch_name}` (or lotus's `fetch-params {fetch_name}`) into {}, or point [srs] param_cache (FIL_PROOFS_PARAMETER_CACHE) at the directory that has them",
        dir.display()
    );
    let missing: Vec<String> = [&params, &vk]
        .iter()
        .filter(|p| !p.is_file())
        .map(|p| p.file_name().unwrap_or_default().to_string_lossy().into_owned())
        .collect();
    if !missing.is_empty() {
        let mut check = Check::new(name, Status::Fail, format!("missing {}", missing.join(" and ")));
        check = check.detail(format!("looked in {}", dir.display()));
        return check.fix(format!(
            "{fetch}; until then the daemon refuses these requests (FAILED_PRECONDITION)"
        ));
    }
    let layout = match Layout::read(&params) {
        Ok(layout) => layout,
        Err(why) => {
            return Check::new(name, Status::Fail, why.to_string())
                .fix(format!("delete the file and {fetch}"))
        }
    };
    let file_name = params
        .file_name()
        .unwrap_or_default()
        .to_string_lossy()
        .into_owned();
    if layout.expected_len != layout.file_len {
        let what = if layout.file_len < layout.expected_len {
            "truncated"
        } else {
            "longer than its header says"
        };
        return Check::new(
            name,
            Status::Fail,
            format!(
                "{file_name} is {what}: {} bytes, its header describes {}",
                layout.file_len, layout.expected_len
            ),
        )
        .fix(format!("delete it and {fetch}"));
    }
    let vk_len = std::fs::metadata(&vk).map_or(0, |m| m.len());
    let mut check = Check::new(
        name,
        Status::Ok,
        format!(
            "{file_name}: {} bytes ({}), layout consistent",
            layout.file_len,
            gib(layout.file_len)
        ),
    )
    .detail(format!(
        "domain 2^{}, {} inputs, {} aux; {} on a GPU; .vk {vk_len} bytes",
        layout.domain().next_power_of_two().trailing_zeros(),
        layout.inputs,
        layout.l,
        gib(layout.device_bytes())
    ));
    let digests = cuzk_filecoin::trust::Digests::published();
    let Some(published) = digests.get(&file_name).map(str::to_string) else {
        return check
            .detail("not among filecoin-proofs' published files".to_string())
            .fix("none needed for test sizes; the daemon reads unlisted files with the full point check (hours at 32 GiB)");
    };
    if verify {
        use cuzk_filecoin::trust::{Trust, Verdict};
        let trust = Trust::new(digests, false);
        match trust.verdict(&params) {
            Verdict::Matched | Verdict::Remembered => {
                check = check.detail("its BLAKE2b digest matches the published one")
            }
            Verdict::Mismatch => {
                check.status = Status::Warn;
                check = check
                    .detail("its BLAKE2b digest does NOT match the published one: not the ceremony's file (a generated test file?)")
                    .fix(format!("for production, delete it and {fetch}; the daemon reads it with the full point check (hours at 32 GiB)"));
            }
            other => {
                check.status = Status::Warn;
                check = check.detail(format!("its digest could not be checked ({other:?})"));
            }
        }
    } else if trust_record_matches(&params, &published) {
        check =
            check.detail("its digest matched the published one when the daemon first read it (.cuzk-trust)");
    } else {
        check = check.detail(
            "digest not checked yet: the daemon hashes it at its first load (about 1 GB/s), or run doctor --verify-digests",
        );
    }
    check
}

async fn daemon_check(
    addr: &str,
    token_file: Option<&Path>,
    gpus: &[GpuInfo],
    daemons: &[DaemonProcess],
) -> Check {
    let mut options = match cuzk_proto::ClientOptions::from_env() {
        Ok(o) => o,
        Err(e) => return Check::new("daemon", Status::Fail, format!("client settings: {e}")),
    };
    if let Some(path) = token_file {
        options = match options.token_file(path) {
            Ok(o) => o,
            Err(e) => return Check::new("daemon", Status::Fail, format!("{e}")),
        };
    }
    const LIMIT: Duration = Duration::from_secs(5);
    let start_fix =
        "start it (systemctl start cuzk; `journalctl -u cuzk -e` says why it stopped), and check that \
                     [daemon] listen, this --addr and Curio's [Cuzk] Address name the same address";
    let channel = match tokio::time::timeout(LIMIT, cuzk_proto::connect_with(addr, &options)).await {
        Ok(Ok(channel)) => channel,
        Ok(Err(e)) => {
            let mut why = e.to_string();
            let mut source = std::error::Error::source(&e);
            while let Some(inner) = source {
                // tonic repeats a cause in its own message.
                let text = inner.to_string();
                if !why.contains(&text) {
                    let _ = write!(why, ": {text}");
                }
                source = inner.source();
            }
            return Check::new(
                "daemon",
                Status::Fail,
                format!("cannot reach the daemon at {addr}"),
            )
            .detail(why)
            .fix(start_fix);
        }
        Err(_) => {
            return Check::new(
                "daemon",
                Status::Fail,
                format!("cannot reach the daemon at {addr}: no answer in 5 s"),
            )
            .fix(start_fix)
        }
    };
    let mut client = cuzk_proto::v1::proving_engine_client::ProvingEngineClient::new(channel);
    let status = match tokio::time::timeout(LIMIT, client.get_status(cuzk_proto::v1::GetStatusRequest {})).await {
        Ok(Ok(status)) => status.into_inner(),
        Ok(Err(e)) if e.code() == tonic::Code::Unauthenticated => {
            return Check::new(
                "daemon",
                Status::Fail,
                format!("the daemon at {addr} wants a bearer token"),
            )
            .detail(e.message().to_string())
            .fix(
                "give doctor the token (--auth-token-file or CUZK_AUTH_TOKEN); note that Curio's client sends \
                 none, so a daemon serving Curio must not set auth_token_file (keep it on loopback or a Unix socket)",
            )
        }
        Ok(Err(e)) => {
            return Check::new("daemon", Status::Fail, format!("the daemon at {addr} answered an error"))
                .detail(format!("{}: {}", e.code(), e.message()))
                .fix(start_fix)
        }
        Err(_) => {
            return Check::new(
                "daemon",
                Status::Fail,
                format!("the daemon at {addr} accepted the connection but did not answer GetStatus in 5 s"),
            )
            .fix("look at its log (journalctl -u cuzk -e); a wedged daemon is restarted by systemctl restart cuzk")
        }
    };
    let devices: Vec<String> = status
        .gpus
        .iter()
        .map(|g| {
            if g.vram_total_bytes > 0 {
                format!("{} {} ({} free)", g.ordinal, g.name, gib(g.vram_free_bytes))
            } else {
                format!("{} {}", g.ordinal, g.name)
            }
        })
        .collect();
    let srs: Vec<String> = status
        .loaded_srs
        .iter()
        .map(|s| {
            let tier = cuzk_proto::v1::srs_status::Tier::try_from(s.tier)
                .map(|t| t.as_str_name())
                .unwrap_or("?");
            format!("{} {tier} {}", s.circuit_id, gib(s.size_bytes))
        })
        .collect();
    let pending: u32 = status.queues.iter().map(|q| q.pending + q.in_progress).sum();
    let mut check = Check::new(
        "daemon",
        Status::Ok,
        format!(
            "reachable at {addr}: up {} s, {} proofs completed, {} failed, {pending} queued or running",
            status.uptime_seconds, status.total_proofs_completed, status.total_proofs_failed
        ),
    )
    .detail(format!("devices: {}", devices.join("; ")))
    .detail(format!(
        "parameters: {}",
        if srs.is_empty() {
            "none loaded".into()
        } else {
            srs.join("; ")
        }
    ))
    .detail(format!(
        "memory budget: {} of {} granted",
        gib(status.pinned_memory_bytes),
        gib(status.pinned_memory_limit_bytes)
    ));
    // A daemon on this host that proves only on the CPU while GPUs are
    // visible was built without the CUDA backend (or told not to use it).
    let local = addr.starts_with("unix:")
        || addr.contains("127.0.0.1")
        || addr.contains("[::1]")
        || addr.contains("localhost");
    let daemon_gpus = status.gpus.iter().filter(|g| g.vram_total_bytes > 0).count();
    if local && !gpus.is_empty() && daemon_gpus == 0 {
        check.status = Status::Warn;
        check = check
            .detail(format!(
                "{} GPU(s) visible here, but the daemon proves only on the CPU",
                gpus.len()
            ))
            .fix("build it with --features cuda (scripts/install-cuda.sh), and check [gpus] enabled and its log at start");
    }
    if !daemons.is_empty() {
        let pids: Vec<String> = daemons.iter().map(|d| d.pid.to_string()).collect();
        check = check.detail(format!(
            "cuzk-daemon process(es) on this host: pid {}",
            pids.join(", ")
        ));
    }
    check
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn curio_names_resolve_to_official_files() {
        let porep = Circuit::resolve("porep-32g");
        let CircuitKind::Filecoin {
            id,
            kind,
            sector_size,
            fetch_name,
        } = &porep.what
        else {
            panic!("{porep:?}");
        };
        assert!(id.starts_with("v28-stacked-proof-of-replication"), "{id}");
        assert_eq!(
            (*kind, *sector_size, fetch_name.as_str()),
            (ProofKind::PorepSealCommit, 32 << 30, "32GiB")
        );
        // The official id is recognised too, as the same circuit.
        let again = Circuit::resolve(id);
        assert!(
            matches!(again.what, CircuitKind::Filecoin { kind: ProofKind::PorepSealCommit, sector_size, .. } if sector_size == 32 << 30)
        );
        assert!(matches!(
            Circuit::resolve("synthetic-v1-n1024-i2").what,
            CircuitKind::Benchmark
        ));
        assert!(matches!(
            Circuit::resolve("porep-1t").what,
            CircuitKind::Unknown(_)
        ));
        assert!(matches!(
            Circuit::resolve("v28-nope").what,
            CircuitKind::Unknown(_)
        ));
    }

    #[test]
    fn vram_needs_follow_the_32g_porep_figures() {
        // A 32 GiB PoRep partition's sections, checked against what the
        // H200 held (BENCHMARKS.md, "The witness path on the H200").
        let domain = 1u64 << 27;
        let aux = 130_278_541 - 328;
        let layout = Layout {
            inputs: 328,
            h: domain - 1,
            l: aux,
            a: aux + 328,
            b_g1: aux / 4,
            b_g2: aux / 4,
            expected_len: 0,
            file_len: 0,
        };
        let need = vram_need(&layout, r1cs_bytes(ProofKind::PorepSealCommit, 130_300_000));
        let gib = |b: u64| b as f64 / GIB as f64;
        assert!(
            (40.0..48.0).contains(&gib(layout.device_bytes())),
            "{}",
            gib(layout.device_bytes())
        );
        // Fits an H200 (139 GiB), not a 16 GB card, which streams.
        assert!(
            need.witness_path < 139 * GIB && need.witness_path > 60 * GIB,
            "{}",
            gib(need.witness_path)
        );
        assert!(
            need.resident > 16 * GIB && need.streamed < 16 * GIB,
            "{}",
            gib(need.streamed)
        );
    }

    #[test]
    fn a_memory_cap_sizes_the_gpu_as_the_smaller_card() {
        let h200 = GpuInfo {
            index: 0,
            name: "NVIDIA H200".into(),
            memory_total_bytes: 141 * GIB,
            memory_free_bytes: 140 * GIB,
            pci_bus_id: String::new(),
        };
        let host = HostInfo {
            gpus: vec![h200],
            ..HostInfo::default()
        };
        let mut config = Config::default();
        config.gpus.memory_cap = ByteSize::Bytes(16 * GIB);
        let gpus = visible_gpus(&host, &config);
        assert_eq!(gpus[0].memory_total_bytes, 16 * GIB);
        assert_eq!(
            gpus[0].memory_free_bytes,
            15 * GIB,
            "what was in use stays in use"
        );
        // A cap above the card changes nothing.
        let mut big = host.gpus[0].clone();
        cap_gpu(&mut big, 200 * GIB);
        assert_eq!(big, host.gpus[0]);
    }

    #[test]
    fn the_memory_budget_counts_the_parameters() {
        // A 32 GiB PoRep: 44.1 GiB of parameters (a sparse file of that
        // length), 6.9 GiB of R1CS, 4.9 GiB a partition on the GPU path.
        let dir = tempfile::tempdir().unwrap();
        let porep = Circuit::resolve("porep-32g");
        let CircuitKind::Filecoin { id, .. } = &porep.what else {
            panic!("{porep:?}");
        };
        std::fs::File::create(dir.path().join(format!("{id}.params")))
            .unwrap()
            .set_len(44 * GIB + GIB / 10)
            .unwrap();
        let host = |total: u64| HostInfo {
            memory: report::MemoryInfo {
                total_bytes: total,
                available_bytes: total,
            },
            ..HostInfo::default()
        };
        let check = |total: u64, budget: u64| {
            let mut config = Config::default();
            config.memory.total_budget = ByteSize::Bytes(budget);
            memory_check(
                &host(total),
                &config,
                std::slice::from_ref(&porep),
                dir.path(),
                true,
            )
        };

        // deploy/curio-host.toml's 256 GiB host: 224 - 44.1 - 6.9 = 173
        // GiB for partitions, 35 of them.
        let ok = check(256 * GIB, 224 * GIB);
        assert_eq!(ok.status, Status::Ok, "{ok:?}");
        assert!(ok.details[0].contains("both counted by the budget"), "{ok:?}");
        assert!(ok.details[1].contains("35 partition(s) in flight"), "{ok:?}");

        // The old sizing (56 GiB for one proof's partitions and R1CS, the
        // parameters beside) leaves room for one partition; 50 GiB for none.
        let one = check(256 * GIB, 56 * GIB);
        assert!(one.details[1].contains(" 1 partition(s)"), "{one:?}");
        let none = check(256 * GIB, 50 * GIB);
        assert_eq!(none.status, Status::Fail, "{none:?}");
        assert!(
            none.details[1].contains("beside 44.1 GiB of parameters"),
            "{none:?}"
        );
        assert!(
            none.fix.as_deref().unwrap().contains("at least 56.9 GiB"),
            "{none:?}"
        );

        // A budget of the whole host leaves the OS and Curio nothing; the
        // fix is the host's memory less 8 GiB, parameters not subtracted.
        let over = check(128 * GIB, 124 * GIB);
        assert_eq!(over.status, Status::Warn, "{over:?}");
        assert_eq!(
            over.fix.as_deref(),
            Some("set [memory] total_budget = \"120GiB\" (memory - 8 GiB for the OS and Curio)")
        );
        assert_eq!(check(128 * GIB, 120 * GIB).status, Status::Ok);
    }

    #[test]
    fn memlock_limits_parse() {
        let limits = "Limit                     Soft Limit           Hard Limit           Units\n\
                      Max locked memory         8388608              8388608              bytes\n";
        assert_eq!(parse_memlock(limits), Some(Some(8 << 20)));
        let unlimited = "Max locked memory         unlimited            unlimited            bytes\n";
        assert_eq!(parse_memlock(unlimited), Some(None));
    }
}
