//! The Grafana dashboard (`deploy/grafana/cuzk-dashboard.json`) against the
//! real daemon's `/metrics`: every metric a panel or variable queries must
//! be one the daemon exports, so the two cannot drift apart.

use cuzk_proto::v1 as pb;
use serde_json::Value;
use std::collections::BTreeSet;

mod common;
use common::{await_job, free_port, http_get, spec, Daemon, Listen};

const DASHBOARD: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../deploy/grafana/cuzk-dashboard.json"
);

/// Metrics that only a daemon proving on a GPU exports (a CPU daemon never
/// has a sample of them), with the labels their queries group by. They are
/// checked against the engine's metric definitions instead.
const GPU_ONLY: &[(&str, &[&str])] = &[("cuzk_gpu_busy_seconds_total", &["device"])];

/// Every query string of the dashboard: panel targets' `expr` and the
/// template variables' `query` / `definition`, wherever they nest.
fn queries(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            for (key, v) in map {
                match (key.as_str(), v) {
                    ("expr" | "query" | "definition", Value::String(s)) => out.push(s.clone()),
                    _ => queries(v, out),
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|v| queries(v, out)),
        _ => {}
    }
}

/// `cuzk_...` names in a PromQL expression.
fn metric_names(expr: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    let bytes = expr.as_bytes();
    let mut i = 0;
    while let Some(at) = expr[i..].find("cuzk_") {
        let start = i + at;
        let boundary = start == 0 || !(bytes[start - 1].is_ascii_alphanumeric() || bytes[start - 1] == b'_');
        let end = expr[start..]
            .find(|c: char| !(c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_'))
            .map_or(expr.len(), |n| start + n);
        if boundary {
            names.insert(expr[start..end].to_string());
        }
        i = end;
    }
    names
}

/// Label names of `by (...)` and `without (...)` clauses.
fn grouping_labels(expr: &str) -> BTreeSet<String> {
    let mut labels = BTreeSet::new();
    for keyword in ["by (", "by(", "without (", "without("] {
        for part in expr.split(keyword).skip(1) {
            if let Some(list) = part.split(')').next() {
                labels.extend(
                    list.split(',')
                        .map(|l| l.trim().to_string())
                        .filter(|l| !l.is_empty()),
                );
            }
        }
    }
    labels
}

/// Sample names (`name{...} value` / `name value`) of Prometheus text.
fn sample_names(text: &str) -> BTreeSet<String> {
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .filter_map(|l| l.split(['{', ' ']).next().map(str::to_string))
        .collect()
}

#[test]
fn promql_names_and_labels_are_found() {
    let expr = "histogram_quantile(0.5, sum by (kind, le) (rate(cuzk_job_duration_seconds_bucket{instance=~\"$i\"}[5m]))) / xcuzk_no";
    assert_eq!(
        metric_names(expr),
        BTreeSet::from(["cuzk_job_duration_seconds_bucket".to_string()])
    );
    assert_eq!(
        grouping_labels(expr),
        BTreeSet::from(["kind".to_string(), "le".to_string()])
    );
    assert!(sample_names("# HELP a b\ncuzk_x{k=\"v\"} 1\ncuzk_y 2\n").contains("cuzk_y"));
}

#[test]
fn the_dashboard_is_a_grafana_model_over_a_prometheus_variable() {
    let dashboard: Value = serde_json::from_str(&std::fs::read_to_string(DASHBOARD).unwrap()).unwrap();
    assert!(dashboard["uid"].is_string() && dashboard["title"].is_string());
    assert!(dashboard["schemaVersion"].as_u64().unwrap() >= 36);
    let variables = dashboard["templating"]["list"].as_array().unwrap();
    assert!(variables
        .iter()
        .any(|v| v["type"] == "datasource" && v["query"] == "prometheus" && v["name"] == "datasource"));
    let panels = dashboard["panels"].as_array().unwrap();
    let mut ids = BTreeSet::new();
    for panel in panels {
        assert!(
            ids.insert(panel["id"].as_u64().unwrap()),
            "duplicate panel id: {panel}"
        );
        assert!(panel["gridPos"]["w"].as_u64().unwrap() > 0, "{panel}");
        if panel["type"] == "row" {
            continue;
        }
        assert_eq!(panel["datasource"]["uid"], "${datasource}", "{}", panel["title"]);
        let targets = panel["targets"].as_array().unwrap();
        assert!(!targets.is_empty(), "{}", panel["title"]);
        for target in targets {
            let expr = target["expr"].as_str().unwrap();
            assert!(!metric_names(expr).is_empty(), "{expr}");
            assert!(
                expr.contains("instance=~\"$instance\""),
                "no instance filter: {expr}"
            );
        }
    }
    // The panels the operator's kit promises.
    let titles: Vec<&str> = panels.iter().filter_map(|p| p["title"].as_str()).collect();
    for wanted in [
        "Proofs per hour by kind",
        "Job latency by kind",
        "Queue depth by priority",
        "Memory budget in use",
        "GPU busy per device",
        "Resident parameters",
        "Failures per hour, by kind and reason",
    ] {
        assert!(titles.contains(&wanted), "no panel {wanted:?} in {titles:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn every_metric_the_dashboard_queries_is_in_the_daemons_metrics() {
    let dashboard: Value = serde_json::from_str(&std::fs::read_to_string(DASHBOARD).unwrap()).unwrap();
    let mut exprs = Vec::new();
    queries(&dashboard, &mut exprs);
    assert!(exprs.len() > 10, "{exprs:?}");

    // A daemon with its HTTP endpoint, and one finished job: counters and
    // histograms with labels have no sample until they are used.
    let http = format!("127.0.0.1:{}", free_port());
    let daemon = Daemon::start(Listen::Tcp, &format!("[daemon]\nstatus_listen = \"{http}\"\n"));
    let mut client = daemon.client();
    let spec = spec(1 << 9, 1, 1);
    let job = common::submit_job(&mut client, common::synthetic_request(&spec)).await;
    let done = await_job(&mut client, &job, 0).await;
    assert_eq!(done.status, pb::await_proof_response::Status::Completed as i32);

    let response = http_get(&http, "/metrics", None).await;
    assert!(response.starts_with("HTTP/1.1 200"), "{response}");
    let metrics = response.split("\r\n\r\n").nth(1).unwrap().to_string();
    let exported = sample_names(&metrics);
    let engine_source = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../cuzk-engine/src/metrics.rs"
    ))
    .unwrap();

    let mut missing = Vec::new();
    for expr in &exprs {
        for name in metric_names(expr) {
            if exported.contains(&name) {
                continue;
            }
            // A GPU-only metric: the engine must still define it (its name
            // without the registry's `cuzk_` prefix).
            if GPU_ONLY.iter().any(|(gpu, _)| *gpu == name)
                && engine_source.contains(&format!("\"{}\"", name.trim_start_matches("cuzk_")))
            {
                continue;
            }
            missing.push(format!("{name} (in {expr})"));
        }
        // Labels the query groups by must be labels of the daemon's samples
        // (`le` of histograms, `instance` added by Prometheus).
        for label in grouping_labels(expr) {
            let gpu_label = GPU_ONLY
                .iter()
                .any(|(_, labels)| labels.contains(&label.as_str()));
            if matches!(label.as_str(), "le" | "instance" | "job")
                || gpu_label
                || metrics.contains(&format!("{label}=\""))
            {
                continue;
            }
            missing.push(format!("label {label} (in {expr})"));
        }
    }
    assert!(
        missing.is_empty(),
        "the dashboard queries what the daemon does not export:\n{}\n--- /metrics ---\n{metrics}",
        missing.join("\n")
    );
}
