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

async fn metrics(State(engine): State<Arc<Engine>>) -> impl IntoResponse {
    (
        [(header::CONTENT_TYPE, "text/plain; version=0.0.4")],
        engine.metrics_text(),
    )
}

async fn status(State(engine): State<Arc<Engine>>) -> impl IntoResponse {
    let s = engine.status();
    let body = serde_json::json!({
        "accepting": engine.is_accepting(),
        "uptime_seconds": s.uptime.as_secs(),
        "total_proofs_completed": s.completed,
        "total_proofs_failed": s.failed,
        "memory_budget_bytes": s.memory_budget,
        "memory_used_bytes": s.memory_used,
        "partitions_waiting_for_synthesis": s.queued_partitions.0,
        "partitions_waiting_for_prover": s.queued_partitions.1,
        "devices": s.devices.iter().map(|d| serde_json::json!({
            "ordinal": d.ordinal,
            "name": d.name,
            "vram_total_bytes": d.vram_total_bytes,
            "vram_free_bytes": d.vram_free_bytes,
            "current_job_id": d.current_job_id,
            "current_proof_kind": d.current_proof_kind,
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
