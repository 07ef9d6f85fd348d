//! `cold-start`: the time from a daemon's start to its first proof.
//!
//! Spawns `cuzk-daemon --config <file>`, waits until it answers a status
//! call, submits one request (the `single` flags), waits for the proof, then
//! stops the daemon (SIGTERM). The report's `time_to_first_proof_s` runs
//! from the spawn (`from_daemon_start: true`) to the proof's return; its
//! phases come from the proof's timings and the daemon's own log lines
//! (its preloads, and where the compiled R1CS came from: its file or a
//! recording). Whether the page cache held the files is the caller's to
//! say (`--page-cache`): this tool does not drop or fill it.

use crate::batch::{prove_one, status_name, ProofArgs, ProofRecord};
use crate::client::Client;
use anyhow::{bail, Context};
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

#[derive(clap::Args, Debug)]
pub struct ColdStartArgs {
    /// The daemon binary (default: cuzk-daemon beside this binary).
    #[arg(long)]
    pub daemon: Option<PathBuf>,
    /// The daemon's configuration file; it must listen on --addr.
    #[arg(long)]
    pub config: PathBuf,
    /// The proof type, for the report: porep, window-post, winning-post, snap.
    #[arg(long)]
    pub proof: String,
    /// The sector size, for the report: 2k, 8m, 512m, 32g, 64g.
    #[arg(long)]
    pub sector_size: String,
    /// Whether the page cache held the parameter and R1CS files before the
    /// start, for the report: warm, cold or unknown.
    #[arg(long, default_value = "unknown")]
    pub page_cache: String,
    /// The daemon's log (default: cuzk-cold-start-<pid>.log in the
    /// temporary directory).
    #[arg(long)]
    pub daemon_log: Option<PathBuf>,
    /// Seconds to wait for the daemon's first answer.
    #[arg(long, default_value_t = 600)]
    pub ready_timeout_s: u64,
    #[command(flatten)]
    pub request: ProofArgs,
}

/// The JSON report's results.
#[derive(Debug, Serialize)]
struct ColdStartResults {
    /// Spawn to the proof's return.
    time_to_first_proof_s: f64,
    from_daemon_start: bool,
    proof: String,
    sector_size: String,
    page_cache: String,
    circuit_id: Option<String>,
    /// Spawn to the first status answer (the preloads, if any, run before).
    daemon_ready_s: f64,
    phases: Phases,
    first_proof: ProofRecord,
}

/// Setup phases, in seconds.
#[derive(Debug, Default, Serialize)]
struct Phases {
    /// Preloads at start (`[srs] preload`), parameters and R1CS file.
    preload_s: Option<f64>,
    /// Preloads at start: the slowest device taking the parameters and
    /// the compiled R1CS (in the background, the daemon answering).
    devices_s: Option<f64>,
    /// The job's wait for its parameters (0 when preloaded).
    parameters_s: f64,
    /// Getting the compiled R1CS ready: read from its file, or recorded.
    r1cs_s: Option<f64>,
    /// `file` or `recorded`; null when the log does not say.
    r1cs_source: Option<String>,
    /// The job's synthesis (its witnesses; the R1CS included when it
    /// came then).
    synthesis_s: f64,
    /// The job's proving (the CUDA regions).
    prove_s: f64,
}

/// Kills the daemon when dropped (SIGTERM, then SIGKILL after a grace).
struct Daemon(Child);

impl Drop for Daemon {
    fn drop(&mut self) {
        let pid = self.0.id().to_string();
        let _ = Command::new("kill").args(["-TERM", &pid]).status();
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.0.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

pub async fn run(args: ColdStartArgs) -> anyhow::Result<()> {
    let json = crate::report::start("cold-start", args.request.json.as_deref());
    if args.request.target.embedded {
        bail!("cold-start spawns a daemon: --embedded does not apply");
    }
    let daemon = match &args.daemon {
        Some(path) => path.clone(),
        None => std::env::current_exe()?.with_file_name("cuzk-daemon"),
    };
    let log_path = args
        .daemon_log
        .clone()
        .unwrap_or_else(|| std::env::temp_dir().join(format!("cuzk-cold-start-{}.log", std::process::id())));
    let log = std::fs::File::create(&log_path).with_context(|| format!("{}", log_path.display()))?;

    let started = Instant::now();
    let child = Command::new(&daemon)
        .arg("--config")
        .arg(&args.config)
        .stdout(Stdio::from(log.try_clone()?))
        .stderr(Stdio::from(log))
        .spawn()
        .with_context(|| format!("starting {}", daemon.display()))?;
    let mut daemon = Daemon(child);

    let client = loop {
        if let Ok(Some(status)) = daemon.0.try_wait() {
            bail!(
                "the daemon exited ({status}) before answering:\n{}",
                tail(&log_path)
            );
        }
        if started.elapsed() > Duration::from_secs(args.ready_timeout_s) {
            bail!(
                "the daemon did not answer within {} s:\n{}",
                args.ready_timeout_s,
                tail(&log_path)
            );
        }
        if let Ok(client) = Client::connect(&args.request.target).await {
            if client.status().await.is_ok() {
                break client;
            }
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let daemon_ready = started.elapsed();
    eprintln!("daemon answering after {:.2} s", daemon_ready.as_secs_f64());

    let report = prove_one(&client, &args.request, 0).await;
    let time_to_first_proof = started.elapsed();
    drop(daemon);
    let log_text = std::fs::read_to_string(&log_path).unwrap_or_default();
    let record = ProofRecord::of(&report);
    let phases = Phases {
        preload_s: logged_ms(&log_text, "preloaded", "ms").map(|ms| ms / 1e3),
        devices_s: logged_ms(&log_text, "preload: GPU", "ms").map(|ms| ms / 1e3),
        parameters_s: record.srs_load_ms as f64 / 1e3,
        r1cs_s: logged_ms(&log_text, "compiled R1CS ready", "ms").map(|ms| ms / 1e3),
        r1cs_source: if log_text.contains("compiled R1CS read from its file") {
            Some("file".into())
        } else if log_text.contains("compiled R1CS ready") {
            Some("recorded".into())
        } else {
            None
        },
        synthesis_s: record.synthesis_ms as f64 / 1e3,
        prove_s: record.gpu_compute_ms as f64 / 1e3,
    };
    let results = ColdStartResults {
        time_to_first_proof_s: time_to_first_proof.as_secs_f64(),
        from_daemon_start: true,
        proof: args.proof.clone(),
        sector_size: args.sector_size.clone(),
        page_cache: args.page_cache.clone(),
        circuit_id: report.circuit_id.clone(),
        daemon_ready_s: daemon_ready.as_secs_f64(),
        phases,
        first_proof: record,
    };
    println!(
        "first proof {} after {:.2} s from the daemon's start (answering after {:.2} s; R1CS {})",
        report.outcome.as_ref().map_or("ERROR", status_name),
        results.time_to_first_proof_s,
        results.daemon_ready_s,
        results.phases.r1cs_source.as_deref().unwrap_or("not logged"),
    );
    println!("{}", serde_json::to_string_pretty(&results.phases)?);
    json.write(&results)?;
    match &report.outcome {
        Ok(outcome) if status_name(outcome) == "COMPLETED" && report.verified != Some(false) => Ok(()),
        Ok(outcome) => bail!(
            "the first proof ended {}: {}",
            status_name(outcome),
            outcome.error_message
        ),
        Err(e) => bail!("{e:#}\n{}", tail(&log_path)),
    }
}

/// The largest `field=<number>` on the log lines holding `message`, in
/// milliseconds (the daemon's tracing lines, `key=value`).
fn logged_ms(log: &str, message: &str, field: &str) -> Option<f64> {
    let key = format!("{field}=");
    log.lines()
        .filter(|line| line.contains(message))
        .filter_map(|line| {
            let at = line.find(&key)? + key.len();
            let digits: String = line[at..].chars().take_while(char::is_ascii_digit).collect();
            digits.parse::<f64>().ok()
        })
        .reduce(f64::max)
}

/// The log's last lines, for an error.
fn tail(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(30)..].join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn logged_ms_reads_the_daemons_key_value_fields() {
        let log = "\
2026-12-05T10:00:00Z  INFO cuzk_engine::engine: preloaded circuit_id=porep ms=8123\n\
2026-12-05T10:00:09Z  INFO cuzk_core::r1cs_cache: compiled R1CS ready (recorded, or read from its file) \
circuit_id=x constraints=130278869 ms=2415\n\
2026-12-05T10:00:12Z  INFO cuzk_engine::engine: preload: GPU 0 (NVIDIA H200): parameters resident in 2100 ms, \
compiled R1CS beside them in 900 ms circuit_id=porep device=0 ms=3004\n";
        assert_eq!(logged_ms(log, "preloaded", "ms"), Some(8123.0));
        assert_eq!(logged_ms(log, "compiled R1CS ready", "ms"), Some(2415.0));
        assert_eq!(logged_ms(log, "preload: GPU", "ms"), Some(3004.0));
        assert_eq!(logged_ms(log, "nothing like it", "ms"), None);
    }
}
