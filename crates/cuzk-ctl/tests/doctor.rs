//! `cuzk-ctl doctor` through the real binary on this machine: every check
//! named, missing and truncated parameter files and an unreachable daemon
//! reported as failures (exit status 1), a Curio host's config read, a
//! running daemon found; its `--json` report (docs/bench/SCHEMA.md).

use serde_json::Value;
use std::path::Path;
use std::process::{Command, Output};

mod common;
use common::free_port;

const CTL: &str = env!("CARGO_BIN_EXE_cuzk-ctl");

fn run(args: &[&str]) -> Output {
    common::run(CTL, "cuzk-ctl", args)
}

/// The doctor's report: the fixed part of the bench's schema, named for
/// this tool.
fn read_report(path: &Path) -> Value {
    let report: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    assert_eq!(report["schema_version"], 1);
    assert_eq!(report["command"], "doctor");
    assert_eq!(report["tool"]["name"], "cuzk-ctl");
    assert!(!report["tool"]["git_commit"].as_str().unwrap().is_empty());
    assert!(report["host"]["memory"]["total_bytes"].as_u64().unwrap() > 0);
    report
}

/// A file of the layout of a `.params` file (vk, then the five sections'
/// counts and points), with zero bytes for points: what doctor reads is the
/// header and the length.
fn fake_params(path: &Path, inputs: u32, sections: [u32; 5]) {
    let mut bytes = vec![0u8; 3 * 96 + 3 * 192];
    bytes.extend(inputs.to_be_bytes());
    bytes.extend(vec![0u8; inputs as usize * 96]);
    for (i, count) in sections.into_iter().enumerate() {
        bytes.extend(count.to_be_bytes());
        bytes.extend(vec![0u8; count as usize * if i == 4 { 192 } else { 96 }]);
    }
    std::fs::write(path, bytes).unwrap();
}

fn official(name: &str) -> String {
    cuzk_filecoin::names::official_id(name).unwrap().unwrap()
}

fn check<'a>(report: &'a Value, name: &str) -> &'a Value {
    report["results"]["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == name)
        .unwrap_or_else(|| panic!("no check {name:?}"))
}

#[test]
fn doctor_names_each_check_and_what_to_fix_on_this_machine() {
    let dir = tempfile::tempdir().unwrap();
    let params = dir.path().join("params");
    std::fs::create_dir(&params).unwrap();
    // winning-2k present (a consistent layout), wpost-2k truncated,
    // porep-2k missing.
    let winning = official("winning-2k");
    fake_params(
        &params.join(format!("{winning}.params")),
        2,
        [1023, 100, 101, 30, 30],
    );
    std::fs::write(params.join(format!("{winning}.vk")), [0u8; 64]).unwrap();
    let wpost = official("wpost-2k");
    let truncated = params.join(format!("{wpost}.params"));
    fake_params(&truncated, 2, [511, 50, 51, 10, 10]);
    let len = std::fs::metadata(&truncated).unwrap().len();
    std::fs::File::options()
        .write(true)
        .open(&truncated)
        .unwrap()
        .set_len(len - 100)
        .unwrap();
    std::fs::write(params.join(format!("{wpost}.vk")), [0u8; 64]).unwrap();
    let porep = official("porep-2k");

    let port = free_port();
    let json = dir.path().join("doctor.json");
    let out = run(&[
        "doctor",
        "--param-cache",
        params.to_str().unwrap(),
        "--circuits",
        "winning-2k,wpost-2k,porep-2k",
        "--addr",
        &format!("127.0.0.1:{port}"),
        "--json",
        json.to_str().unwrap(),
    ]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "a FAIL exits 1");
    for line in ["[ OK ] cpu", "huge pages", "memory", "summary:"] {
        assert!(text.contains(line), "no {line:?} in:\n{text}");
    }
    // This machine's GPU, or the plain words for none.
    let gpus = Command::new("nvidia-smi").arg("-L").output();
    if gpus.map_or(true, |o| !o.status.success()) {
        assert!(text.contains("[WARN] gpu          no GPU visible"), "{text}");
    } else {
        assert!(text.contains("[ OK ] gpu") && text.contains("vram 0"), "{text}");
    }
    assert!(text.contains("[ OK ] parameters winning-2k"), "{text}");
    assert!(text.contains("layout consistent"), "{text}");
    assert!(text.contains("[FAIL] parameters wpost-2k"), "{text}");
    assert!(text.contains(&format!("{wpost}.params is truncated")), "{text}");
    assert!(text.contains("[FAIL] parameters porep-2k"), "{text}");
    assert!(
        text.contains(&format!("missing {porep}.params and {porep}.vk")),
        "{text}"
    );
    assert!(text.contains("curio fetch-params 2KiB"), "{text}");
    assert!(
        text.contains(&format!(
            "[FAIL] daemon       cannot reach the daemon at http://127.0.0.1:{port}"
        )),
        "{text}"
    );

    let report = read_report(&json);
    assert_eq!(check(&report, "parameters porep-2k")["status"], "fail");
    assert_eq!(check(&report, "parameters winning-2k")["status"], "ok");
    assert_eq!(check(&report, "daemon")["status"], "fail");
    assert!(check(&report, "daemon")["fix"]
        .as_str()
        .unwrap()
        .contains("[Cuzk] Address"));
    for name in ["cpu", "gpu", "huge pages", "memory"] {
        assert!(check(&report, name)["status"].is_string());
    }
    assert_eq!(report["results"]["fails"], 3);
}

#[test]
fn doctor_reads_the_curio_host_config() {
    let dir = tempfile::tempdir().unwrap();
    let config = concat!(env!("CARGO_MANIFEST_DIR"), "/../../deploy/curio-host.toml");
    let out = run(&[
        "doctor",
        "--config",
        config,
        "--param-cache",
        dir.path().to_str().unwrap(),
        "--no-daemon",
    ]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "its parameters are missing here");
    assert!(text.contains("circuits: porep-32g"), "{text}");
    assert!(text.contains("[FAIL] parameters porep-32g"), "{text}");
    assert!(
        text.contains("budget 224.0 GiB ([memory] total_budget)"),
        "{text}"
    );
    assert!(!text.contains("] daemon"), "--no-daemon: {text}");
}

#[test]
fn doctor_reports_a_running_daemon() {
    let Some(daemon) = common::daemon_beside(CTL) else {
        println!("SKIPPED: no cuzk-daemon beside cuzk-ctl (cargo build -p cuzk-daemon)");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let addr = format!("127.0.0.1:{port}");
    let mut child = Command::new(daemon)
        .args(["--listen", &addr, "--log-level", "warn", "--param-cache"])
        .arg(dir.path())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let text = loop {
        let out = run(&[
            "doctor",
            "--param-cache",
            dir.path().to_str().unwrap(),
            "--circuits",
            "synthetic-v1-n1024-i2",
            "--addr",
            &addr,
        ]);
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        if text.contains("[ OK ] daemon") || std::time::Instant::now() > deadline {
            break text;
        }
        std::thread::sleep(std::time::Duration::from_millis(200));
    };
    let _ = child.kill();
    let _ = child.wait();
    assert!(
        text.contains(&format!("[ OK ] daemon       reachable at http://{addr}")),
        "{text}"
    );
    assert!(text.contains("devices: "), "{text}");
}
