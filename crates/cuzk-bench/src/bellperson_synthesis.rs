//! bellperson's own synthesis time, the reference the witness pass is
//! measured against (the synthesis filecoin-proofs' C2 runs).
//!
//! bellperson keeps its synthesis private; it times it itself and logs
//! "synthesis time: <duration>" from `create_proof`, which this module
//! captures with a `log` logger of its own (so the commands using it run
//! without the tracing subscriber the other commands install; warnings and
//! errors of the `log` crate still reach stderr).

use std::sync::{Condvar, Mutex};
use std::time::Duration;

/// Collects bellperson's "synthesis time: ..." log lines.
struct SynthesisTimes {
    times: Mutex<Vec<Duration>>,
    logged: Condvar,
}

impl log::Log for SynthesisTimes {
    fn enabled(&self, metadata: &log::Metadata<'_>) -> bool {
        metadata.level() <= log::Level::Info
    }

    fn log(&self, record: &log::Record<'_>) {
        let text = record.args().to_string();
        if record.level() <= log::Level::Warn {
            eprintln!("{} {}: {text}", record.level(), record.target());
        }
        if let Some(value) = text.strip_prefix("synthesis time: ") {
            if let Some(d) = parse_debug_duration(value) {
                self.times.lock().unwrap_or_else(|e| e.into_inner()).push(d);
                self.logged.notify_all();
            }
        }
    }

    fn flush(&self) {}
}

static TIMES: SynthesisTimes = SynthesisTimes {
    times: Mutex::new(Vec::new()),
    logged: Condvar::new(),
};

/// Installs the capture (once per process, before any `create_proof`).
pub fn capture() -> anyhow::Result<()> {
    log::set_logger(&TIMES).map_err(|e| anyhow::anyhow!("installing the log capture: {e}"))?;
    log::set_max_level(log::LevelFilter::Info);
    Ok(())
}

/// The synthesis times captured so far (and forgets them).
pub fn take() -> Vec<Duration> {
    std::mem::take(&mut *TIMES.times.lock().unwrap_or_else(|e| e.into_inner()))
}

/// Waits up to `timeout` for the next synthesis time to be logged.
pub fn wait_for_one(timeout: Duration) -> Option<Duration> {
    let times = TIMES.times.lock().unwrap_or_else(|e| e.into_inner());
    let (mut times, _) = TIMES
        .logged
        .wait_timeout_while(times, timeout, |t| t.is_empty())
        .unwrap_or_else(|e| e.into_inner());
    times.pop()
}

/// Parses `Duration`'s Debug form ("1.5s", "950.2ms", "12µs", "3ns").
fn parse_debug_duration(text: &str) -> Option<Duration> {
    let text = text.trim();
    let (number, scale) = [("ms", 1e-3), ("µs", 1e-6), ("ns", 1e-9), ("s", 1.0)]
        .iter()
        .find_map(|(unit, scale)| text.strip_suffix(unit).map(|n| (n, *scale)))?;
    number
        .parse::<f64>()
        .ok()
        .map(|v| Duration::from_secs_f64(v * scale))
}

/// Parameters of the right type and no points: enough for `create_proof`
/// to run (and time) its synthesis, after which it fails or is abandoned.
/// Used where the real parameters are out of reach (a full-size
/// real-structure partition on a host without its 44 GiB file).
pub fn empty_parameters() -> bellperson::groth16::Parameters<blstrs::Bls12> {
    use group::prime::PrimeCurveAffine;
    use std::sync::Arc;
    let g1 = blstrs::G1Affine::generator();
    let g2 = blstrs::G2Affine::generator();
    bellperson::groth16::Parameters {
        vk: bellperson::groth16::VerifyingKey {
            alpha_g1: g1,
            beta_g1: g1,
            beta_g2: g2,
            gamma_g2: g2,
            delta_g1: g1,
            delta_g2: g2,
            ic: Vec::new(),
        },
        h: Arc::new(Vec::new()),
        l: Arc::new(Vec::new()),
        a: Arc::new(Vec::new()),
        b_g1: Arc::new(Vec::new()),
        b_g2: Arc::new(Vec::new()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_durations_as_bellperson_logs_them() {
        assert_eq!(parse_debug_duration("1.5s"), Some(Duration::from_millis(1500)));
        assert_eq!(
            parse_debug_duration("950.25ms"),
            Some(Duration::from_micros(950_250))
        );
        assert_eq!(parse_debug_duration("12µs"), Some(Duration::from_micros(12)));
        assert_eq!(parse_debug_duration("oops"), None);
    }
}
