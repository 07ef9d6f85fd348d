//! The `cuzk.v1` wire forms and the engine's types: requests in,
//! results, status and errors out. The one place wire enum numbers are
//! known; the service and the bench's embedded engine both use it.

use cuzk_core::request::cut_echoes;
use cuzk_core::{Priority, ProofKind, ProofRequest, SectorFields};
use cuzk_engine::{EngineError, JobResult, JobStatus, Tier};
use cuzk_proto::v1 as pb;
use std::time::Duration;
use tonic::Status;

/// An engine error as a gRPC status. Messages may quote the request (a job
/// id, a circuit id, a parser's echo of a value); they travel as metadata,
/// which has a size limit, so every echo is cut here, whatever the source
/// did already.
pub fn to_status(error: EngineError) -> Status {
    let cut = |m: String| cut_echoes(&m);
    match error {
        EngineError::InvalidArgument(m) => Status::invalid_argument(cut(m)),
        EngineError::Unsupported(m) => Status::unimplemented(cut(m)),
        EngineError::NotFound(id) => Status::not_found(cut(format!("no job with id {id:?}"))),
        EngineError::ShuttingDown => Status::unavailable("the daemon is shutting down"),
        EngineError::ResourceExhausted(m) => Status::resource_exhausted(cut(m)),
        EngineError::Srs(m) => Status::failed_precondition(cut(m)),
        EngineError::Internal(m) => Status::internal(cut(m)),
    }
}

/// A `cuzk.v1` priority number: `Some(None)` for unspecified (the kind's
/// default), `None` for a number the API does not define.
pub fn priority_from_wire(value: i32) -> Option<Option<Priority>> {
    match pb::Priority::try_from(value).ok()? {
        pb::Priority::Unspecified => Some(None),
        pb::Priority::Low => Some(Some(Priority::Low)),
        pb::Priority::Normal => Some(Some(Priority::Normal)),
        pb::Priority::High => Some(Some(Priority::High)),
        pb::Priority::Critical => Some(Some(Priority::Critical)),
    }
}

/// Checks and converts a wire request: the one conversion into the
/// request type that flows on to the plan sources.
pub fn to_request(submit: pb::SubmitProofRequest) -> Result<ProofRequest, Status> {
    let kind = match pb::ProofKind::try_from(submit.proof_kind) {
        Ok(pb::ProofKind::PorepSealCommit) => ProofKind::PorepSealCommit,
        Ok(pb::ProofKind::SnapDealsUpdate) => ProofKind::SnapDealsUpdate,
        Ok(pb::ProofKind::WindowPostPartition) => ProofKind::WindowPostPartition,
        Ok(pb::ProofKind::WinningPost) => ProofKind::WinningPost,
        Ok(pb::ProofKind::Unspecified) => return Err(Status::invalid_argument("proof_kind is unspecified")),
        Err(_) => {
            return Err(Status::invalid_argument(format!(
                "unknown proof_kind {}",
                submit.proof_kind
            )))
        }
    };
    let priority = priority_from_wire(submit.priority)
        .ok_or_else(|| Status::invalid_argument(format!("unknown priority {}", submit.priority)))?;
    if submit.request_id.len() > 256 {
        return Err(Status::invalid_argument("request_id longer than 256 bytes"));
    }
    Ok(ProofRequest {
        request_id: submit.request_id,
        kind,
        registered_proof: submit.registered_proof,
        priority,
        vanilla_proof: submit.vanilla_proof,
        vanilla_proofs: submit.vanilla_proofs,
        sector: SectorFields {
            sector_size: submit.sector_size,
            sector_number: submit.sector_number,
            miner_id: submit.miner_id,
            randomness: submit.randomness,
            partition_index: submit.partition_index,
            comm_r_old: submit.comm_r_old,
            comm_r_new: submit.comm_r_new,
            comm_d_new: submit.comm_d_new,
        },
    })
}

/// An engine result in wire form.
pub fn to_response(result: JobResult) -> pb::AwaitProofResponse {
    let status = match result.status {
        JobStatus::Completed => pb::await_proof_response::Status::Completed,
        JobStatus::Failed => pb::await_proof_response::Status::Failed,
        JobStatus::Cancelled => pb::await_proof_response::Status::Cancelled,
        JobStatus::Timeout => pb::await_proof_response::Status::Timeout,
    };
    let ms = |d: Duration| d.as_millis() as u64;
    pb::AwaitProofResponse {
        job_id: result.job_id,
        status: status as i32,
        proof: result.proof,
        error_message: result.error,
        queue_wait_ms: ms(result.queue_wait),
        srs_load_ms: ms(result.srs_load),
        synthesis_ms: ms(result.synthesis),
        gpu_compute_ms: ms(result.prove),
        total_ms: ms(result.total),
    }
}

/// The wire form of the engine's status (shared with the bench's embedded engine).
pub fn to_status_response(status: cuzk_engine::EngineStatus) -> pb::GetStatusResponse {
    pb::GetStatusResponse {
        gpus: status
            .devices
            .into_iter()
            .map(|d| pb::GpuStatus {
                ordinal: d.backend.ordinal,
                name: d.backend.name,
                // Zero for backends without memory of their own (the CPU).
                vram_total_bytes: d.backend.memory_total_bytes,
                vram_free_bytes: d.backend.memory_free_bytes,
                current_job_id: d.current_job_id,
                current_proof_kind: d.current_proof_kind,
            })
            .collect(),
        loaded_srs: status
            .srs
            .into_iter()
            .map(|s| pb::SrsStatus {
                circuit_id: s.circuit_id,
                tier: match s.tier {
                    Tier::Hot => pb::srs_status::Tier::Hot,
                    Tier::Warm => pb::srs_status::Tier::Warm,
                    Tier::Cold => pb::srs_status::Tier::Cold,
                } as i32,
                size_bytes: s.size_bytes,
                ref_count: s.ref_count,
            })
            .collect(),
        queues: status
            .queues
            .into_iter()
            .map(|q| pb::QueueStatus {
                proof_kind: q.kind.name().to_string(),
                pending: q.pending,
                in_progress: q.in_progress,
            })
            .collect(),
        total_proofs_completed: status.completed,
        total_proofs_failed: status.failed,
        uptime_seconds: status.uptime.as_secs(),
        // The reference daemon's pinned pool is its budget for partitions in
        // flight; cuzk's equivalent is the memory budget (granted / total).
        pinned_memory_bytes: status.memory_used,
        pinned_memory_limit_bytes: status.memory_budget,
    }
}
