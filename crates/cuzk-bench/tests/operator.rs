//! The bench through the real binary: `--json` reports of measuring
//! subcommands (schema version, host, figures), and `cold-start` against
//! the daemon binary. (`doctor` is cuzk-ctl's: crates/cuzk-ctl/tests.)

use serde_json::Value;
use std::path::Path;
use std::process::Output;

#[path = "../../cuzk-ctl/tests/common/mod.rs"]
mod common;

const BENCH: &str = env!("CARGO_BIN_EXE_cuzk-bench");

fn run(args: &[&str]) -> Output {
    common::run(BENCH, "cuzk-bench", args)
}

fn read_report(path: &Path, command: &str) -> Value {
    let report: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    assert_eq!(report["schema_version"], 1);
    assert_eq!(report["command"], command);
    assert_eq!(report["tool"]["name"], "cuzk-bench");
    assert!(!report["tool"]["git_commit"].as_str().unwrap().is_empty());
    assert!(report["command_line"]
        .as_array()
        .unwrap()
        .iter()
        .any(|a| a == command));
    let host = &report["host"];
    assert!(host["memory"]["total_bytes"].as_u64().unwrap() > 0);
    assert!(host["cpu"]["logical_cpus"].as_u64().unwrap() >= 1);
    assert!(host["huge_pages"]["transparent"].is_string());
    assert!(host["gpus"].is_array());
    assert!(report["started_at"].as_str().unwrap().ends_with('Z'));
    report
}

/// Every key of the report's fixed part is documented in docs/bench/SCHEMA.md.
fn assert_documented(report: &Value) {
    let schema =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/bench/SCHEMA.md")).unwrap();
    let mut keys = Vec::new();
    for part in [
        report,
        &report["tool"],
        &report["host"],
        &report["host"]["cpu"],
        &report["host"]["memory"],
        &report["host"]["huge_pages"],
    ] {
        keys.extend(part.as_object().unwrap().keys().cloned());
    }
    for key in keys {
        assert!(
            schema.contains(&format!("`{key}`")),
            "{key} is not in docs/bench/SCHEMA.md"
        );
    }
}

#[test]
fn compare_cpu_writes_its_figures_and_the_host_as_json() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("compare.json");
    let params = dir.path().join("params");
    let out = run(&[
        "compare-cpu",
        "--log2",
        "10",
        "--repeat",
        "1",
        "--param-cache",
        params.to_str().unwrap(),
        "--json",
        json.to_str().unwrap(),
    ]);
    assert!(out.status.success());
    let report = read_report(&json, "compare-cpu");
    assert_documented(&report);
    let row = &report["results"]["rows"][0];
    assert_eq!(row["log2"], 10);
    assert_eq!(row["bytes_equal"], true);
    assert!(row["ours_total_seconds"].as_f64().unwrap() > 0.0);
    assert!(row["ratio"].as_f64().unwrap() > 0.0);
}

#[test]
fn an_embedded_batch_writes_every_proof_and_the_summary_as_json() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("batch.json");
    let params = dir.path().join("params");
    let out = run(&[
        "batch",
        "--embedded",
        "--type",
        "synthetic",
        "--log2",
        "10",
        "--count",
        "2",
        "--concurrency",
        "2",
        "--param-cache",
        params.to_str().unwrap(),
        "--json",
        json.to_str().unwrap(),
    ]);
    assert!(out.status.success());
    // The text report is unchanged by --json.
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("=== Batch Summary ===") && text.contains("\nverified:      2\n"),
        "{text}"
    );
    let report = read_report(&json, "batch");
    let results = &report["results"];
    assert_eq!(results["target"]["embedded"], true);
    assert_eq!(results["proof_type"], "synthetic");
    assert_eq!(results["constraints"], 1024);
    assert_eq!(results["count"], 2);
    let proofs = results["proofs"].as_array().unwrap();
    assert_eq!(proofs.len(), 2);
    for proof in proofs {
        assert_eq!(proof["status"], "COMPLETED");
        assert_eq!(proof["verified"], true);
        assert_eq!(proof["proof_bytes"], 192);
    }
    let summary = &results["summary"];
    assert_eq!(summary["completed"], 2);
    assert_eq!(summary["failed"], 0);
    assert_eq!(summary["verified_locally"], 2);
    assert!(summary["proofs_per_hour"].as_f64().unwrap() > 0.0);
    assert!(results["usage"]["phase_seconds"]["synthesis"].as_f64().unwrap() > 0.0);
    assert!(
        results["usage"]["host_memory"]["peak_rss_bytes"]
            .as_u64()
            .unwrap()
            > 0
    );
    assert!(!results["engine_devices"].as_array().unwrap().is_empty());
}

#[test]
fn single_writes_its_proof_as_json() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("single.json");
    let params = dir.path().join("params");
    let out = run(&[
        "single",
        "--embedded",
        "--log2",
        "10",
        "--param-cache",
        params.to_str().unwrap(),
        "--json",
        json.to_str().unwrap(),
    ]);
    assert!(out.status.success());
    let report = read_report(&json, "single");
    let results = &report["results"];
    assert_eq!(results["circuit_id"], "synthetic-v1-n1024-i2");
    assert_eq!(results["proof"]["status"], "COMPLETED");
    assert_eq!(results["proof"]["verified"], true);
    assert!(!results["job_id"].as_str().unwrap().is_empty());
}

/// Issue 36: `cold-start` spawns the daemon with a config, proves one
/// request, stops the daemon and reports the time from its start.
#[test]
fn cold_start_reports_the_first_proof_from_the_daemons_start() {
    let Some(daemon) = common::daemon_beside(BENCH) else {
        println!("SKIPPED: no cuzk-daemon beside cuzk-bench (cargo build -p cuzk-daemon)");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let addr = format!("127.0.0.1:{}", common::free_port());
    let config = dir.path().join("cuzk.toml");
    std::fs::write(
        &config,
        format!(
            "[daemon]\nlisten = \"{addr}\"\n[srs]\nparam_cache = \"{}\"\n",
            dir.path().join("params").display()
        ),
    )
    .unwrap();
    let report = dir.path().join("cold-start.json");
    let out = run(&[
        "cold-start",
        "--daemon",
        daemon.to_str().unwrap(),
        "--config",
        config.to_str().unwrap(),
        "--proof",
        "synthetic",
        "--sector-size",
        "none",
        "--page-cache",
        "warm",
        "--addr",
        &format!("http://{addr}"),
        "--type",
        "synthetic",
        "--log2",
        "10",
        "--json",
        report.to_str().unwrap(),
    ]);
    assert!(out.status.success());
    let report: Value = serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    let results = &report["results"];
    assert_eq!(results["from_daemon_start"], true);
    assert_eq!(results["first_proof"]["status"], "COMPLETED");
    assert_eq!(results["first_proof"]["proof_bytes"], 192);
    let total = results["time_to_first_proof_s"].as_f64().unwrap();
    let ready = results["daemon_ready_s"].as_f64().unwrap();
    assert!(ready > 0.0 && total > ready, "{results}");
    assert_eq!(results["page_cache"], "warm");
    // The daemon was stopped: its port is free again.
    std::net::TcpListener::bind(&addr).expect("the daemon still listens");
}
