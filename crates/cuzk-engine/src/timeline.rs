//! TIMELINE events: one log line per pipeline step of a partition, in a
//! fixed `key=value` form that a script can turn into a timeline chart:
//!
//! `TIMELINE t_ms=<unix ms> event=<name> job=<id> partition=<n> worker=<name>`
//!
//! Events, in order: `synthesis_start`, `synthesis_end`, `queued_for_prover`,
//! `picked_up`, `prover_start`, `prover_gpu_end` (prove_start returned, the
//! memory permit released), `prover_end` (finish done).

use std::time::{SystemTime, UNIX_EPOCH};

pub(crate) fn event(event: &str, job: &str, partition: usize, worker: &str) {
    event_with(event, job, partition, worker, "");
}

/// An event with extra `key=value` fields appended (e.g. GPU phase times).
pub(crate) fn event_with(event: &str, job: &str, partition: usize, worker: &str, extra: &str) {
    let t_ms = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis())
        .unwrap_or(0);
    tracing::info!(
        target: "cuzk::timeline",
        "TIMELINE t_ms={t_ms} event={event} job={job} partition={partition} worker={worker}{}{extra}",
        if extra.is_empty() { "" } else { " " }
    );
}
