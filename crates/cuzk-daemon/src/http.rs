//! Optional HTTP endpoints: `/metrics` (Prometheus text) and `/status` (JSON).

use axum::{extract::State, http::header, response::IntoResponse, routing::get, Router};
use cuzk_engine::Engine;
use std::sync::Arc;

/// The router.
pub fn router(engine: Arc<Engine>) -> Router {
    Router::new()
        .route("/metrics", get(metrics))
        .route("/status", get(status))
        .with_state(engine)
}

/// Runs `f` on the blocking pool: engine status and metrics ask every
/// backend, and the async workers must stay free for gRPC.
async fn off_runtime<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    tokio::task::spawn_blocking(f)
        .await
        .expect("status task panicked")
}

async fn metrics(State(engine): State<Arc<Engine>>) -> impl IntoResponse {
    let text = off_runtime(move || engine.metrics_text()).await;
    ([(header::CONTENT_TYPE, "text/plain; version=0.0.4")], text)
}

async fn status(State(engine): State<Arc<Engine>>) -> impl IntoResponse {
    let (s, accepting) = {
        let engine = Arc::clone(&engine);
        off_runtime(move || (engine.status(), engine.is_accepting())).await
    };
    let body = serde_json::json!({
        "accepting": accepting,
        "uptime_seconds": s.uptime.as_secs(),
        "total_proofs_completed": s.completed,
        "total_proofs_failed": s.failed,
        "memory_budget_bytes": s.memory_budget,
        "memory_used_bytes": s.memory_used,
        "partitions_waiting_for_synthesis": s.queued_partitions.0,
        "partitions_waiting_for_prover": s.queued_partitions.1,
        "sequential_slots": {
            "total": s.sequential_slots.total,
            "in_use": s.sequential_slots.in_use,
            "waiting": s.sequential_slots.waiting,
        },
        "devices": s.devices.iter().map(|d| serde_json::json!({
            "ordinal": d.backend.ordinal,
            "name": d.backend.name,
            "kind": format!("{:?}", d.backend.kind).to_lowercase(),
            "memory_total_bytes": d.backend.memory_total_bytes,
            "memory_free_bytes": d.backend.memory_free_bytes,
            "current_job_id": d.current_job_id,
            "current_proof_kind": d.current_proof_kind,
            "in_service": d.quarantine_left.is_none(),
            "quarantine_left_ms": d.quarantine_left.map_or(0, |q| q.as_millis() as u64),
            "failed_partitions": d.failures,
            "preloads_in_progress": d.preparing,
        })).collect::<Vec<_>>(),
        "srs": s.srs.iter().map(|e| serde_json::json!({
            "circuit_id": e.circuit_id,
            "tier": format!("{:?}", e.tier).to_uppercase(),
            "size_bytes": e.size_bytes,
            "ref_count": e.ref_count,
        })).collect::<Vec<_>>(),
        "queues": s.queues.iter().map(|q| serde_json::json!({
            "proof_kind": q.kind.name(),
            "pending": q.pending,
            "in_progress": q.in_progress,
        })).collect::<Vec<_>>(),
    });
    ([(header::CONTENT_TYPE, "application/json")], body.to_string())
}
