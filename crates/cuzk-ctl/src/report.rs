//! The JSON report of `--json FILE`: the figures a subcommand's text report
//! prints, with what is needed to compare runs across machines (the build,
//! the command line, the host's CPU, memory, huge-page mode and GPUs). The
//! schema is documented in `docs/bench/SCHEMA.md`; `SCHEMA_VERSION` changes
//! whenever a field is renamed, removed or changes meaning (adding a field
//! does not change it), so a reader can refuse files it does not know.

use anyhow::Context;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// The version of the report's layout (docs/bench/SCHEMA.md).
pub const SCHEMA_VERSION: u32 = 1;

/// One report file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BenchReport {
    /// [`SCHEMA_VERSION`] of the writer.
    pub schema_version: u32,
    /// The binary that measured.
    pub tool: Tool,
    /// The subcommand (`batch`, `compare-cpu`, ...); it says what `results` holds.
    pub command: String,
    /// The whole command line, program name first.
    pub command_line: Vec<String>,
    /// When the subcommand started and finished (RFC 3339, UTC).
    pub started_at: String,
    pub finished_at: String,
    /// The machine cuzk-bench ran on (for a daemon elsewhere, `results`
    /// carries the daemon's own devices).
    pub host: HostInfo,
    /// Environment variables that change what is measured, when set.
    pub environment: BTreeMap<String, String>,
    /// The subcommand's figures (SCHEMA.md, one section per command).
    pub results: serde_json::Value,
}

/// The measuring binary.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Tool {
    pub name: String,
    /// The workspace version (Cargo.toml).
    pub version: String,
    /// `git rev-parse HEAD` at build time, or "unknown".
    pub git_commit: String,
    /// Cargo profile (`release`, `production`, `debug`).
    pub profile: String,
    /// Cargo features compiled in (`cuda`, `supraseal`).
    pub features: Vec<String>,
    /// `rustc --version` of the build.
    pub rustc: String,
    /// The CUDA toolkit compiled with (the runtime is static), `null`
    /// without the `cuda` feature.
    pub cuda_toolkit: Option<String>,
}

/// The host, as the kernel and the NVIDIA driver describe it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct HostInfo {
    pub hostname: String,
    /// `PRETTY_NAME` of /etc/os-release.
    pub os: String,
    pub kernel: String,
    pub cpu: CpuInfo,
    pub memory: MemoryInfo,
    pub huge_pages: HugePages,
    /// GPUs as `nvidia-smi` lists them (all of them, whatever
    /// `CUDA_VISIBLE_DEVICES` says); empty without a driver.
    pub gpus: Vec<GpuInfo>,
    /// The NVIDIA driver's version, `null` without one.
    pub driver_version: Option<String>,
    /// The newest CUDA version the driver supports (nvidia-smi's "CUDA Version").
    pub cuda_driver_version: Option<String>,
    /// Why no GPU is listed, when none is (no nvidia-smi, or its error).
    pub gpu_probe_error: Option<String>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CpuInfo {
    /// `model name` of /proc/cpuinfo ("unknown" where it has none).
    pub model: String,
    /// CPUs the kernel lists (hardware threads).
    pub logical_cpus: usize,
    /// Distinct (socket, core) pairs.
    pub physical_cores: usize,
    pub sockets: usize,
    /// CPUs this process may run on (affinity and cgroup limits applied).
    pub available_parallelism: usize,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct MemoryInfo {
    /// `MemTotal` of /proc/meminfo, bytes.
    pub total_bytes: u64,
    /// `MemAvailable`, bytes, when the report was started.
    pub available_bytes: u64,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct HugePages {
    /// Transparent huge pages: the selected mode of
    /// /sys/kernel/mm/transparent_hugepage/enabled (`always`, `madvise`, `never`).
    pub transparent: String,
    /// The selected mode of .../transparent_hugepage/defrag.
    pub defrag: String,
    /// The `glibc.malloc.hugetlb` tunable of `GLIBC_TUNABLES` in this
    /// process, when set (1 = glibc asks for transparent huge pages).
    pub glibc_hugetlb: Option<String>,
    /// Static huge pages (`HugePages_Total`, `HugePages_Free`, `Hugepagesize`).
    pub static_total: u64,
    pub static_free: u64,
    pub static_page_bytes: u64,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct GpuInfo {
    /// nvidia-smi's index.
    pub index: u32,
    pub name: String,
    pub memory_total_bytes: u64,
    pub memory_free_bytes: u64,
    pub pci_bus_id: String,
}

/// Variables recorded in [`BenchReport::environment`] when set. A list, not
/// a prefix: `CUZK_AUTH_TOKEN` and the like must never reach a report.
const RECORDED_ENV: [&str; 10] = [
    "CUZK_R1CS",
    "CUZK_PARALLEL_WITNESS",
    "CUZK_PARAM_CACHE",
    "CUZK_LOG",
    "FIL_PROOFS_PARAMETER_CACHE",
    "GLIBC_TUNABLES",
    "CUDA_VISIBLE_DEVICES",
    "RAYON_NUM_THREADS",
    "MALLOC_ARENA_MAX",
    "MALLOC_MMAP_THRESHOLD_",
];

impl Tool {
    /// The binary `name` (of this workspace's build: commit, profile and
    /// compiler are the workspace's) with its compiled-in `features` and
    /// the CUDA toolkit of a CUDA build (None or empty without one).
    pub fn new(name: &str, features: Vec<String>, cuda_toolkit: Option<&str>) -> Self {
        Self {
            name: name.into(),
            version: env!("CARGO_PKG_VERSION").into(),
            git_commit: env!("CUZK_GIT_COMMIT").into(),
            profile: env!("CUZK_BUILD_PROFILE").into(),
            features,
            rustc: env!("CUZK_RUSTC_VERSION").into(),
            cuda_toolkit: cuda_toolkit.filter(|v| !v.is_empty()).map(str::to_string),
        }
    }
}

impl BenchReport {
    /// Parses a report, refusing another schema version (whose fields may
    /// mean something else). The reader's side of the schema, which the
    /// round-trip test holds the writer to.
    #[cfg(test)]
    pub fn parse(text: &str) -> anyhow::Result<Self> {
        let value: serde_json::Value = serde_json::from_str(text).context("not JSON")?;
        match value.get("schema_version").and_then(|v| v.as_u64()) {
            Some(v) if v == u64::from(SCHEMA_VERSION) => {}
            Some(v) => anyhow::bail!("schema version {v}; this cuzk-bench reads version {SCHEMA_VERSION}"),
            None => anyhow::bail!("no schema_version: not a cuzk-bench report"),
        }
        Ok(serde_json::from_value(value)?)
    }
}

/// A report being recorded: started with the subcommand, written when it
/// has its figures. Does nothing when no `--json` file was asked for.
#[derive(Debug)]
pub struct JsonReport {
    pending: Option<(Tool, PathBuf, String, SystemTime, HostInfo)>,
}

impl JsonReport {
    /// Takes the host's description now, before the measurement moves the
    /// free-memory figures.
    pub fn start(tool: Tool, command: &str, path: Option<&Path>) -> Self {
        Self {
            pending: path.map(|p| {
                (
                    tool,
                    p.to_path_buf(),
                    command.to_string(),
                    SystemTime::now(),
                    HostInfo::gather(),
                )
            }),
        }
    }

    /// Writes the report (to a temporary name, then renamed, so a reader
    /// never sees half a file).
    pub fn write<T: Serialize>(self, results: &T) -> anyhow::Result<()> {
        let Some((tool, path, command, started, host)) = self.pending else {
            return Ok(());
        };
        let report = BenchReport {
            schema_version: SCHEMA_VERSION,
            tool,
            command,
            command_line: std::env::args().collect(),
            started_at: rfc3339(started),
            finished_at: rfc3339(SystemTime::now()),
            host,
            environment: recorded_environment(),
            results: serde_json::to_value(results)?,
        };
        let text = serde_json::to_string_pretty(&report)? + "\n";
        let tmp = path.with_extension(format!("tmp.{}", std::process::id()));
        std::fs::write(&tmp, text)
            .and_then(|()| std::fs::rename(&tmp, &path))
            .with_context(|| format!("writing the JSON report {}", path.display()))?;
        eprintln!("json report: {}", path.display());
        Ok(())
    }
}

fn recorded_environment() -> BTreeMap<String, String> {
    RECORDED_ENV
        .iter()
        .filter_map(|name| Some((name.to_string(), std::env::var(name).ok()?)))
        .collect()
}

/// `t` as RFC 3339 in UTC, to the second.
pub fn rfc3339(t: SystemTime) -> String {
    let secs = t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let (days, rem) = (secs / 86_400, secs % 86_400);
    let (y, m, d) = civil_from_days(days as i64);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// Days since 1970-01-01 to (year, month, day) in the proleptic Gregorian
/// calendar, by 400-year eras (146,097 days each) counted from March, so
/// the leap day is the last day of its year.
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468; // days from 0000-03-01
    let era = z.div_euclid(146_097);
    let day_of_era = z.rem_euclid(146_097);
    let year_of_era = (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_from_march = (5 * day_of_year + 2) / 153;
    let day = (day_of_year - (153 * month_from_march + 2) / 5 + 1) as u32;
    let month = if month_from_march < 10 {
        month_from_march + 3
    } else {
        month_from_march - 9
    } as u32;
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

impl HostInfo {
    /// Reads /proc, /sys and /etc, and asks nvidia-smi when it is installed.
    pub fn gather() -> Self {
        let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
        let kib = |field: &str| meminfo_kib(&meminfo, field).unwrap_or(0);
        let probe = probe_gpus();
        Self {
            hostname: read_trimmed("/proc/sys/kernel/hostname").unwrap_or_else(|| "unknown".into()),
            os: os_name(),
            kernel: read_trimmed("/proc/sys/kernel/osrelease").unwrap_or_else(|| "unknown".into()),
            cpu: cpu_info(&std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default()),
            memory: MemoryInfo {
                total_bytes: kib("MemTotal") << 10,
                available_bytes: kib("MemAvailable") << 10,
            },
            huge_pages: HugePages {
                transparent: selected_mode("/sys/kernel/mm/transparent_hugepage/enabled"),
                defrag: selected_mode("/sys/kernel/mm/transparent_hugepage/defrag"),
                glibc_hugetlb: glibc_hugetlb(&std::env::var("GLIBC_TUNABLES").unwrap_or_default()),
                // HugePages_* are page counts, Hugepagesize is in kB.
                static_total: meminfo_kib(&meminfo, "HugePages_Total").unwrap_or(0),
                static_free: meminfo_kib(&meminfo, "HugePages_Free").unwrap_or(0),
                static_page_bytes: kib("Hugepagesize") << 10,
            },
            gpus: probe.gpus,
            driver_version: probe.driver_version,
            cuda_driver_version: probe.cuda_version,
            gpu_probe_error: probe.error,
        }
    }
}

fn read_trimmed(path: &str) -> Option<String> {
    Some(std::fs::read_to_string(path).ok()?.trim().to_string()).filter(|s| !s.is_empty())
}

fn os_name() -> String {
    std::fs::read_to_string("/etc/os-release")
        .ok()
        .and_then(|text| {
            let line = text.lines().find(|l| l.starts_with("PRETTY_NAME="))?;
            Some(line["PRETTY_NAME=".len()..].trim_matches('"').to_string())
        })
        .unwrap_or_else(|| "unknown".into())
}

/// The number after `field:` in /proc/meminfo text (kB for sizes, a count
/// for `HugePages_*`).
pub fn meminfo_kib(meminfo: &str, field: &str) -> Option<u64> {
    let line = meminfo.lines().find(|l| l.split(':').next() == Some(field))?;
    line.split(':').nth(1)?.split_whitespace().next()?.parse().ok()
}

/// The bracketed choice of a sysfs mode file (`always [madvise] never`),
/// "unknown" when the file is missing.
pub fn selected_mode(path: &str) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    text.split_whitespace()
        .find(|w| w.starts_with('['))
        .map(|w| w.trim_matches(|c| c == '[' || c == ']').to_string())
        .unwrap_or_else(|| "unknown".into())
}

/// The value of `glibc.malloc.hugetlb` in a `GLIBC_TUNABLES` string
/// (`name=value` pairs separated by colons).
pub fn glibc_hugetlb(tunables: &str) -> Option<String> {
    tunables
        .split(':')
        .find_map(|pair| pair.strip_prefix("glibc.malloc.hugetlb="))
        .map(str::to_string)
}

fn cpu_info(cpuinfo: &str) -> CpuInfo {
    let field = |line: &str, name: &str| {
        let (key, value) = line.split_once(':')?;
        (key.trim() == name).then(|| value.trim().to_string())
    };
    let model = cpuinfo
        .lines()
        .find_map(|l| field(l, "model name"))
        .unwrap_or_else(|| "unknown".into());
    // Each processor's block: its socket and core ids.
    let mut cores = std::collections::BTreeSet::new();
    let mut sockets = std::collections::BTreeSet::new();
    let mut logical = 0;
    for block in cpuinfo.split("\n\n").filter(|b| b.contains("processor")) {
        logical += 1;
        let socket = block.lines().find_map(|l| field(l, "physical id"));
        let core = block.lines().find_map(|l| field(l, "core id"));
        sockets.insert(socket.clone());
        cores.insert((socket, core));
    }
    // Kernels that give no ids (some VMs, ARM) count each CPU as a core.
    let physical_cores = if cores.iter().all(|(_, c)| c.is_none()) {
        logical
    } else {
        cores.len()
    };
    CpuInfo {
        model,
        logical_cpus: logical,
        physical_cores,
        sockets: sockets.len().max(1),
        available_parallelism: std::thread::available_parallelism().map_or(1, |n| n.get()),
    }
}

/// What nvidia-smi says, or why it said nothing.
#[derive(Debug, Default)]
pub struct GpuProbe {
    pub gpus: Vec<GpuInfo>,
    pub driver_version: Option<String>,
    pub cuda_version: Option<String>,
    pub error: Option<String>,
}

/// Runs `program` with a deadline (a wedged driver can hang nvidia-smi),
/// giving its standard output or a reason.
pub fn run_with_timeout(program: &str, args: &[&str], limit: Duration) -> Result<String, String> {
    let mut child = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("{program}: {e}"))?;
    let started = Instant::now();
    loop {
        match child.try_wait() {
            Ok(Some(_)) => break,
            Ok(None) if started.elapsed() > limit => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!("{program} did not answer in {} s", limit.as_secs()));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(20)),
            Err(e) => return Err(format!("{program}: {e}")),
        }
    }
    let out = child.wait_with_output().map_err(|e| format!("{program}: {e}"))?;
    if !out.status.success() {
        let stderr = String::from_utf8_lossy(&out.stderr);
        let stdout = String::from_utf8_lossy(&out.stdout);
        let why = if stderr.trim().is_empty() { stdout } else { stderr };
        return Err(format!("{program} failed ({}): {}", out.status, why.trim()));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The GPUs nvidia-smi lists, with the driver's versions.
pub fn probe_gpus() -> GpuProbe {
    const LIMIT: Duration = Duration::from_secs(15);
    let query = run_with_timeout(
        "nvidia-smi",
        &[
            "--query-gpu=index,name,memory.total,memory.free,driver_version,pci.bus_id",
            "--format=csv,noheader,nounits",
        ],
        LIMIT,
    );
    let text = match query {
        Ok(text) => text,
        Err(error) => {
            return GpuProbe {
                error: Some(error),
                ..GpuProbe::default()
            }
        }
    };
    let (gpus, driver_version) = parse_gpu_query(&text);
    // Only the summary screen says which CUDA version the driver supports.
    let cuda_version = run_with_timeout("nvidia-smi", &[], LIMIT)
        .ok()
        .and_then(|screen| parse_cuda_version(&screen));
    GpuProbe {
        error: gpus.is_empty().then(|| "nvidia-smi lists no GPU".to_string()),
        gpus,
        driver_version,
        cuda_version,
    }
}

/// Lines of `index, name, memory.total [MiB], memory.free [MiB], driver, bus id`.
pub fn parse_gpu_query(text: &str) -> (Vec<GpuInfo>, Option<String>) {
    let mut driver = None;
    let gpus = text
        .lines()
        .filter_map(|line| {
            let fields: Vec<&str> = line.split(',').map(str::trim).collect();
            if fields.len() < 6 {
                return None;
            }
            // A name with a comma in it spans several fields.
            let n = fields.len();
            let mib = |s: &str| s.parse::<u64>().ok().map(|v| v << 20);
            driver = Some(fields[n - 2].to_string());
            Some(GpuInfo {
                index: fields[0].parse().ok()?,
                name: fields[1..n - 4].join(", "),
                memory_total_bytes: mib(fields[n - 4])?,
                memory_free_bytes: mib(fields[n - 3])?,
                pci_bus_id: fields[n - 1].to_string(),
            })
        })
        .collect();
    (gpus, driver)
}

/// "CUDA Version: 13.0" of nvidia-smi's summary screen.
pub fn parse_cuda_version(screen: &str) -> Option<String> {
    let rest = screen.split("CUDA Version:").nth(1)?;
    Some(rest.split_whitespace().next()?.trim_matches('|').to_string()).filter(|v| !v.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_report_round_trips_and_other_versions_are_refused() {
        let mut host = HostInfo::gather();
        host.gpus.push(GpuInfo {
            index: 0,
            name: "NVIDIA H200".into(),
            memory_total_bytes: 143_771 << 20,
            memory_free_bytes: 143_180 << 20,
            pci_bus_id: "00000000:1B:00.0".into(),
        });
        let report = BenchReport {
            schema_version: SCHEMA_VERSION,
            tool: Tool::new("cuzk-bench", vec!["cuda".into()], Some("13.0")),
            command: "compare-cpu".into(),
            command_line: vec!["cuzk-bench".into(), "compare-cpu".into()],
            started_at: rfc3339(SystemTime::now()),
            finished_at: rfc3339(SystemTime::now()),
            host,
            environment: [("GLIBC_TUNABLES".to_string(), "glibc.malloc.hugetlb=1".to_string())].into(),
            results: serde_json::json!({"rows": [{"k": 16, "ratio": 1.5}]}),
        };
        let text = serde_json::to_string_pretty(&report).unwrap();
        let back = BenchReport::parse(&text).unwrap();
        assert_eq!(back, report);
        assert_eq!(back.results["rows"][0]["k"], 16);

        let mut other: serde_json::Value = serde_json::from_str(&text).unwrap();
        other["schema_version"] = (SCHEMA_VERSION + 1).into();
        let refused = BenchReport::parse(&other.to_string()).unwrap_err();
        assert!(refused.to_string().contains("schema version"), "{refused}");
        assert!(BenchReport::parse("{}").is_err());
    }

    #[test]
    fn host_facts_are_read_from_this_machine() {
        let host = HostInfo::gather();
        assert!(host.memory.total_bytes > 0);
        assert!(host.cpu.logical_cpus >= 1 && host.cpu.physical_cores >= 1);
        assert!(host.cpu.available_parallelism >= 1);
        assert!(!host.hostname.is_empty());
        // No GPU here means a reason, not an error.
        if host.gpus.is_empty() {
            assert!(host.gpu_probe_error.is_some());
        }
        let tool = Tool::new("cuzk-ctl", Vec::new(), Some(""));
        assert!(!tool.git_commit.is_empty() && !tool.profile.is_empty());
        assert_eq!(tool.cuda_toolkit, None, "an empty toolkit is none");
    }

    #[test]
    fn dates_are_rfc3339_utc() {
        let at = |secs| rfc3339(UNIX_EPOCH + Duration::from_secs(secs));
        assert_eq!(at(0), "1970-01-01T00:00:00Z");
        assert_eq!(at(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(at(1_735_689_599), "2024-12-31T23:59:59Z");
        assert_eq!(at(4_107_542_400), "2100-03-01T00:00:00Z");
    }

    #[test]
    fn nvidia_smi_and_proc_text_parse() {
        let (gpus, driver) = parse_gpu_query(
            "0, NVIDIA H200, 143771, 143180, 570.86.15, 00000000:1B:00.0\n\
             1, Odd, Name, 16303, 100, 570.86.15, 00000000:2B:00.0\n",
        );
        assert_eq!(gpus.len(), 2);
        assert_eq!(gpus[0].name, "NVIDIA H200");
        assert_eq!(gpus[0].memory_total_bytes, 143_771 << 20);
        assert_eq!(gpus[1].name, "Odd, Name");
        assert_eq!(gpus[1].memory_free_bytes, 100 << 20);
        assert_eq!(driver.as_deref(), Some("570.86.15"));
        assert_eq!(
            parse_cuda_version("| NVIDIA-SMI 570.86.15  Driver Version: 570.86.15  CUDA Version: 12.8     |"),
            Some("12.8".into())
        );
        let meminfo = "MemTotal:       24000000 kB\nHugePages_Total:      16\nHugepagesize:       2048 kB\n";
        assert_eq!(meminfo_kib(meminfo, "MemTotal"), Some(24_000_000));
        assert_eq!(meminfo_kib(meminfo, "HugePages_Total"), Some(16));
        assert_eq!(meminfo_kib(meminfo, "Hugepagesize"), Some(2048));
        assert_eq!(
            glibc_hugetlb("glibc.malloc.arena_max=2:glibc.malloc.hugetlb=1").as_deref(),
            Some("1")
        );
        assert_eq!(glibc_hugetlb(""), None);
        let cpus = cpu_info(
            "processor\t: 0\nmodel name\t: AMD EPYC 9654\nphysical id\t: 0\ncore id\t: 0\n\n\
             processor\t: 1\nmodel name\t: AMD EPYC 9654\nphysical id\t: 0\ncore id\t: 0\n\n\
             processor\t: 2\nmodel name\t: AMD EPYC 9654\nphysical id\t: 1\ncore id\t: 0\n",
        );
        assert_eq!(cpus.model, "AMD EPYC 9654");
        assert_eq!((cpus.logical_cpus, cpus.physical_cores, cpus.sockets), (3, 2, 2));
    }
}
