//! The `cuzk.v1.ProvingEngine` gRPC service: a thin layer that checks and
//! maps requests onto the engine and never blocks the async runtime.

use cuzk_engine::{
    Engine, EngineError, JobResult, JobStatus, Priority, ProofKind, ProofRequest, SectorFields, Tier,
};
use cuzk_proto::v1::{self as pb, proving_engine_server::ProvingEngine};
use std::sync::Arc;
use std::time::Duration;
use tonic::{Request, Response, Status};

/// The service, over a shared engine.
#[derive(Debug, Clone)]
pub struct Service {
    engine: Arc<Engine>,
}

impl Service {
    /// Serves `engine`.
    pub fn new(engine: Arc<Engine>) -> Self {
        Self { engine }
    }
}

fn to_status(error: EngineError) -> Status {
    match error {
        EngineError::InvalidArgument(m) => Status::invalid_argument(m),
        EngineError::Unsupported(m) => Status::unimplemented(m),
        EngineError::NotFound(id) => Status::not_found(format!("no job with id {id}")),
        EngineError::ShuttingDown => Status::unavailable("the daemon is shutting down"),
        EngineError::Srs(m) => Status::failed_precondition(m),
        EngineError::Internal(m) => Status::internal(m),
    }
}

/// Checks and converts a wire request (shared with the bench's embedded
/// engine, so both paths parse requests the same way).
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
    let priority = Priority::from_wire(submit.priority)
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

/// Cancels the job when dropped unless disarmed: a `Prove` call whose client
/// went away does not leave its job running for nobody.
struct CancelOnDrop {
    engine: Arc<Engine>,
    job_id: Option<String>,
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        if let Some(id) = self.job_id.take() {
            if let Ok(true) = self.engine.cancel(&id) {
                tracing::info!(job = %id, "Prove client went away; job cancelled");
            }
        }
    }
}

#[tonic::async_trait]
impl ProvingEngine for Service {
    async fn submit_proof(
        &self,
        request: Request<pb::SubmitProofRequest>,
    ) -> Result<Response<pb::SubmitProofResponse>, Status> {
        let request = to_request(request.into_inner())?;
        let engine = Arc::clone(&self.engine);
        let outcome = tokio::task::spawn_blocking(move || engine.submit(request))
            .await
            .map_err(|e| Status::internal(e.to_string()))?
            .map_err(to_status)?;
        Ok(Response::new(pb::SubmitProofResponse {
            job_id: outcome.job_id,
            queue_position: outcome.queue_position,
            assigned_gpu: outcome.assigned_device,
        }))
    }

    async fn await_proof(
        &self,
        request: Request<pb::AwaitProofRequest>,
    ) -> Result<Response<pb::AwaitProofResponse>, Status> {
        let request = request.into_inner();
        let timeout = (request.timeout_ms > 0).then(|| Duration::from_millis(request.timeout_ms));
        let result = self
            .engine
            .wait(&request.job_id, timeout)
            .await
            .map_err(to_status)?;
        Ok(Response::new(to_response(result)))
    }

    async fn prove(&self, request: Request<pb::ProveRequest>) -> Result<Response<pb::ProveResponse>, Status> {
        let submit = request
            .into_inner()
            .submit
            .ok_or_else(|| Status::invalid_argument("ProveRequest.submit is missing"))?;
        let request = to_request(submit)?;
        let engine = Arc::clone(&self.engine);
        let outcome = tokio::task::spawn_blocking(move || engine.submit(request))
            .await
            .map_err(|e| Status::internal(e.to_string()))?
            .map_err(to_status)?;
        let mut guard = CancelOnDrop {
            engine: Arc::clone(&self.engine),
            job_id: Some(outcome.job_id.clone()),
        };
        let result = self.engine.wait(&outcome.job_id, None).await.map_err(to_status)?;
        guard.job_id = None;
        Ok(Response::new(pb::ProveResponse {
            result: Some(to_response(result)),
        }))
    }

    async fn cancel_proof(
        &self,
        request: Request<pb::CancelProofRequest>,
    ) -> Result<Response<pb::CancelProofResponse>, Status> {
        let was_running = self
            .engine
            .cancel(&request.into_inner().job_id)
            .map_err(to_status)?;
        Ok(Response::new(pb::CancelProofResponse { was_running }))
    }

    async fn get_status(
        &self,
        _: Request<pb::GetStatusRequest>,
    ) -> Result<Response<pb::GetStatusResponse>, Status> {
        Ok(Response::new(to_status_response(self.engine.status())))
    }

    async fn get_metrics(
        &self,
        _: Request<pb::GetMetricsRequest>,
    ) -> Result<Response<pb::GetMetricsResponse>, Status> {
        Ok(Response::new(pb::GetMetricsResponse {
            prometheus_text: self.engine.metrics_text(),
        }))
    }

    async fn preload_srs(
        &self,
        request: Request<pb::PreloadSrsRequest>,
    ) -> Result<Response<pb::PreloadSrsResponse>, Status> {
        let circuit_id = request.into_inner().circuit_id;
        if circuit_id.is_empty() {
            return Err(Status::invalid_argument("circuit_id is empty"));
        }
        let engine = Arc::clone(&self.engine);
        let (already_loaded, took) = tokio::task::spawn_blocking(move || engine.preload_srs(&circuit_id))
            .await
            .map_err(|e| Status::internal(e.to_string()))?
            .map_err(to_status)?;
        Ok(Response::new(pb::PreloadSrsResponse {
            already_loaded,
            load_time_ms: if already_loaded {
                0
            } else {
                took.as_millis() as u64
            },
        }))
    }

    async fn evict_srs(
        &self,
        request: Request<pb::EvictSrsRequest>,
    ) -> Result<Response<pb::EvictSrsResponse>, Status> {
        let (was_loaded, freed_bytes) = self.engine.evict_srs(&request.into_inner().circuit_id);
        Ok(Response::new(pb::EvictSrsResponse {
            was_loaded,
            freed_bytes,
        }))
    }
}

/// The wire form of the engine's status (shared with the bench's embedded engine).
pub fn to_status_response(status: cuzk_engine::EngineStatus) -> pb::GetStatusResponse {
    pb::GetStatusResponse {
        gpus: status
            .devices
            .into_iter()
            .map(|d| pb::GpuStatus {
                ordinal: d.ordinal,
                name: d.name,
                vram_total_bytes: d.vram_total_bytes,
                vram_free_bytes: d.vram_free_bytes,
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
        // No pinned host memory without a GPU backend; report the budget.
        pinned_memory_bytes: status.memory_used,
        pinned_memory_limit_bytes: status.memory_budget,
    }
}
