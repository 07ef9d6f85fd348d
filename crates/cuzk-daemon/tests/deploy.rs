//! The deployment kit (`deploy/`): the Curio host's config loads through
//! the daemon's own loader with the values docs/OPERATING.md promises, and
//! the systemd unit starts the daemon with that config, the huge-pages
//! environment, its limits and a stop timeout longer than the config's
//! grace period.

use cuzk_daemon::config::{ByteSize, Config};
use std::path::PathBuf;

fn deploy(file: &str) -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../deploy")).join(file)
}

const GIB: u64 = 1 << 30;

#[test]
fn the_curio_host_config_loads_and_serves_curio_safely() {
    let config = Config::load(&deploy("curio-host.toml")).unwrap();
    let d = &config.daemon;
    // Curio's client has no TLS and no token: loopback or a Unix socket,
    // and no token it could not send.
    assert!(
        d.listen.starts_with("127.0.0.1:") || d.listen.starts_with("unix://"),
        "{}",
        d.listen
    );
    assert!(d.auth_token_file.is_none() && d.tls.is_none());
    assert!(d
        .status_listen
        .as_deref()
        .is_some_and(|a| a.starts_with("127.0.0.1:")));
    // Production: no benchmark requests, never unverified proofs.
    assert!(!config.benchmark.synthetic && !config.benchmark.allow_unverifiable);
    // Curio's circuit names, each the official parameter file.
    assert!(!config.srs.preload.is_empty());
    for name in &config.srs.preload {
        let id = cuzk_filecoin::names::official_id(name)
            .unwrap_or_else(|| panic!("{name} is not a Curio circuit name"))
            .unwrap();
        assert!(
            cuzk_filecoin::params::is_official_circuit_id(&id),
            "{name} -> {id}"
        );
    }
    // A budget sized for the host, not "auto" (which leaves only 4 GiB to
    // Curio and the OS): the budget counts the parameters, so 256 GiB -
    // room for Curio and the OS.
    let ByteSize::Bytes(budget) = config.memory.total_budget else {
        panic!("total_budget must be a size on a Curio host");
    };
    assert!(budget + 24 * GIB <= 256 * GIB, "{}", budget / GIB);
    // A whole 32 GiB PoRep proof fits beside its parameters: 44 GiB of
    // parameters, R1CS 6.9 GiB and 10 partitions of 4.9 GiB.
    assert!(budget >= 100 * GIB, "{}", budget / GIB);
    assert!(config.engine_config().is_ok());
}

/// The values of `key=` lines of a unit file.
fn unit_values<'a>(unit: &'a str, key: &str) -> Vec<&'a str> {
    unit.lines()
        .filter_map(|l| l.trim().strip_prefix(key)?.strip_prefix('='))
        .collect()
}

#[test]
fn the_systemd_unit_starts_the_daemon_as_the_guide_says() {
    let unit = std::fs::read_to_string(deploy("systemd/cuzk.service")).unwrap();
    let exec = unit_values(&unit, "ExecStart");
    assert_eq!(exec, ["/usr/local/bin/cuzk-daemon --config /etc/cuzk/cuzk.toml"]);
    let env = unit_values(&unit, "Environment");
    assert!(env.contains(&"GLIBC_TUNABLES=glibc.malloc.hugetlb=1"), "{env:?}");
    assert_eq!(unit_values(&unit, "LimitMEMLOCK"), ["infinity"]);
    assert_eq!(unit_values(&unit, "Restart"), ["on-failure"]);
    assert_eq!(unit_values(&unit, "KillSignal"), ["SIGTERM"]);
    // systemd's SIGKILL must come after the daemon's grace period.
    let stop: u64 = unit_values(&unit, "TimeoutStopSec")[0].parse().unwrap();
    let config = Config::load(&deploy("curio-host.toml")).unwrap();
    assert!(
        stop > config.daemon.shutdown_grace_secs + 30,
        "TimeoutStopSec={stop}, grace {}",
        config.daemon.shutdown_grace_secs
    );
    // The socket directory of the config's Unix-socket alternative.
    assert_eq!(unit_values(&unit, "RuntimeDirectory"), ["cuzk"]);
    // The shared parameter directory is not hidden from the daemon.
    assert!(unit_values(&unit, "PrivateTmp").is_empty());
    assert!(config
        .srs
        .param_cache
        .as_deref()
        .is_some_and(|p| p.starts_with("/var/tmp")));

    // systemd's own parser, where this machine has it: no complaint about
    // any line (it warns and ignores bad values rather than failing).
    let analyze = std::process::Command::new("systemd-analyze")
        .arg("--version")
        .output();
    if analyze.is_err() {
        println!("SKIPPED systemd-analyze verify: not installed");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let copy = dir.path().join("cuzk.service");
    std::fs::write(
        &copy,
        unit.replace("/usr/local/bin/cuzk-daemon", env!("CARGO_BIN_EXE_cuzk-daemon")),
    )
    .unwrap();
    let out = std::process::Command::new("systemd-analyze")
        .arg("verify")
        .arg(&copy)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success() && stderr.trim().is_empty(), "{stderr}");
}
