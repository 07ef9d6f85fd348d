//! The `cuzk.v1.ProvingEngine` gRPC service: a thin layer that checks and
//! maps requests onto the engine and never blocks the async runtime.

use crate::cluster::ClusterNode;
use crate::wire::{to_request, to_response, to_status, to_status_response};
use cuzk_engine::Engine;
use cuzk_proto::v1::{self as pb, proving_engine_server::ProvingEngine};
use std::sync::Arc;
use std::time::Duration;
use tonic::{Request, Response, Status};

/// The service, over a shared engine, and in cluster mode the pool's queue
/// (where submissions, results and cancellations then go).
#[derive(Debug, Clone)]
pub struct Service {
    engine: Arc<Engine>,
    jobs: Jobs,
}

impl Service {
    /// Serves `engine`.
    pub fn new(engine: Arc<Engine>) -> Self {
        Self {
            jobs: Jobs::Local(Arc::clone(&engine)),
            engine,
        }
    }

    /// Serves the pool's queue, `engine` proving what this daemon claims.
    pub fn clustered(engine: Arc<Engine>, cluster: Arc<ClusterNode>) -> Self {
        Self {
            engine,
            jobs: Jobs::Pool(cluster),
        }
    }
}

/// Where jobs are submitted, awaited and cancelled: this daemon's engine,
/// or the pool's queue in cluster mode. Each RPC is written once over it.
#[derive(Debug, Clone)]
enum Jobs {
    Local(Arc<Engine>),
    Pool(Arc<ClusterNode>),
}

impl Jobs {
    async fn submit(&self, request: pb::SubmitProofRequest) -> Result<pb::SubmitProofResponse, Status> {
        match self {
            Jobs::Pool(cluster) => Ok(pb::SubmitProofResponse {
                job_id: cluster.submit(request).await?,
                ..Default::default()
            }),
            Jobs::Local(engine) => {
                let request = to_request(request)?;
                let engine = Arc::clone(engine);
                let outcome = tokio::task::spawn_blocking(move || engine.submit(request))
                    .await
                    .map_err(|e| Status::internal(e.to_string()))?
                    .map_err(to_status)?;
                Ok(pb::SubmitProofResponse {
                    job_id: outcome.job_id,
                    queue_position: outcome.queue_position,
                    assigned_gpu: outcome.assigned_device,
                })
            }
        }
    }

    async fn await_result(
        &self,
        job_id: &str,
        timeout: Option<Duration>,
    ) -> Result<pb::AwaitProofResponse, Status> {
        match self {
            Jobs::Pool(cluster) => cluster.await_result(job_id, timeout).await,
            Jobs::Local(engine) => Ok(to_response(
                engine.wait(job_id, timeout).await.map_err(to_status)?,
            )),
        }
    }

    async fn cancel(&self, job_id: &str) -> Result<bool, Status> {
        match self {
            Jobs::Pool(cluster) => cluster.cancel(job_id).await,
            Jobs::Local(engine) => engine.cancel(job_id).map_err(to_status),
        }
    }
}

/// Cancels the job when dropped unless disarmed: a `Prove` call whose client
/// went away does not leave its job running (or queued in the pool) for
/// nobody.
struct CancelOnDrop {
    jobs: Jobs,
    job_id: Option<String>,
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        let Some(id) = self.job_id.take() else { return };
        match &self.jobs {
            Jobs::Local(engine) => {
                if let Ok(true) = engine.cancel(&id) {
                    tracing::info!(job = %id, "Prove client went away; job cancelled");
                }
            }
            Jobs::Pool(cluster) => {
                let cluster = Arc::clone(cluster);
                tokio::spawn(async move {
                    if let Ok(true) = cluster.cancel(&id).await {
                        tracing::info!(job = %id, "Prove client went away; job cancelled in the pool");
                    }
                });
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
        Ok(Response::new(self.jobs.submit(request.into_inner()).await?))
    }

    async fn await_proof(
        &self,
        request: Request<pb::AwaitProofRequest>,
    ) -> Result<Response<pb::AwaitProofResponse>, Status> {
        let request = request.into_inner();
        let timeout = (request.timeout_ms > 0).then(|| Duration::from_millis(request.timeout_ms));
        Ok(Response::new(
            self.jobs.await_result(&request.job_id, timeout).await?,
        ))
    }

    async fn prove(&self, request: Request<pb::ProveRequest>) -> Result<Response<pb::ProveResponse>, Status> {
        let submit = request
            .into_inner()
            .submit
            .ok_or_else(|| Status::invalid_argument("ProveRequest.submit is missing"))?;
        let job_id = self.jobs.submit(submit).await?.job_id;
        let mut guard = CancelOnDrop {
            jobs: self.jobs.clone(),
            job_id: Some(job_id.clone()),
        };
        let result = self.jobs.await_result(&job_id, None).await?;
        guard.job_id = None;
        Ok(Response::new(pb::ProveResponse { result: Some(result) }))
    }

    async fn cancel_proof(
        &self,
        request: Request<pb::CancelProofRequest>,
    ) -> Result<Response<pb::CancelProofResponse>, Status> {
        let was_running = self.jobs.cancel(&request.into_inner().job_id).await?;
        Ok(Response::new(pb::CancelProofResponse { was_running }))
    }

    async fn get_status(
        &self,
        _: Request<pb::GetStatusRequest>,
    ) -> Result<Response<pb::GetStatusResponse>, Status> {
        // Off the async workers: status asks every backend (a GPU query)
        // and must not take a runtime thread from awaits and submissions.
        let engine = Arc::clone(&self.engine);
        let status = tokio::task::spawn_blocking(move || engine.status())
            .await
            .map_err(|e| Status::internal(e.to_string()))?;
        Ok(Response::new(to_status_response(status)))
    }

    async fn get_metrics(
        &self,
        _: Request<pb::GetMetricsRequest>,
    ) -> Result<Response<pb::GetMetricsResponse>, Status> {
        let engine = Arc::clone(&self.engine);
        let prometheus_text = tokio::task::spawn_blocking(move || engine.metrics_text())
            .await
            .map_err(|e| Status::internal(e.to_string()))?;
        Ok(Response::new(pb::GetMetricsResponse { prometheus_text }))
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
