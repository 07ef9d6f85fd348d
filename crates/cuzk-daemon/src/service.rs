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
    cluster: Option<Arc<ClusterNode>>,
}

impl Service {
    /// Serves `engine`.
    pub fn new(engine: Arc<Engine>) -> Self {
        Self {
            engine,
            cluster: None,
        }
    }

    /// Serves the pool's queue, `engine` proving what this daemon claims.
    pub fn clustered(engine: Arc<Engine>, cluster: Arc<ClusterNode>) -> Self {
        Self {
            engine,
            cluster: Some(cluster),
        }
    }
}

/// Cancels a pool job when dropped unless disarmed (a `Prove` client that
/// went away, in cluster mode).
struct CancelInPoolOnDrop {
    cluster: Arc<ClusterNode>,
    job_id: Option<String>,
}

impl Drop for CancelInPoolOnDrop {
    fn drop(&mut self) {
        if let Some(id) = self.job_id.take() {
            let cluster = Arc::clone(&self.cluster);
            tokio::spawn(async move {
                if let Ok(true) = cluster.cancel(&id).await {
                    tracing::info!(job = %id, "Prove client went away; job cancelled in the pool");
                }
            });
        }
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
        if let Some(cluster) = &self.cluster {
            let job_id = cluster.submit(request.into_inner()).await?;
            return Ok(Response::new(pb::SubmitProofResponse {
                job_id,
                ..Default::default()
            }));
        }
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
        if let Some(cluster) = &self.cluster {
            return Ok(Response::new(
                cluster.await_result(&request.job_id, timeout).await?,
            ));
        }
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
        if let Some(cluster) = &self.cluster {
            let job_id = cluster.submit(submit).await?;
            let mut guard = CancelInPoolOnDrop {
                cluster: Arc::clone(cluster),
                job_id: Some(job_id.clone()),
            };
            let result = cluster.await_result(&job_id, None).await?;
            guard.job_id = None;
            return Ok(Response::new(pb::ProveResponse { result: Some(result) }));
        }
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
        if let Some(cluster) = &self.cluster {
            let was_running = cluster.cancel(&request.into_inner().job_id).await?;
            return Ok(Response::new(pb::CancelProofResponse { was_running }));
        }
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
