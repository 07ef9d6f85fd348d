//! One interface over the two ways the bench reaches an engine: a daemon
//! over gRPC (TCP or Unix socket) or an engine in this process.

use anyhow::Context;
use clap::Args;
use cuzk_engine::{Engine, EngineConfig};
use cuzk_proto::v1::{self as pb, proving_engine_client::ProvingEngineClient};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use tonic::transport::Channel;

/// Where the engine is.
#[derive(Args, Debug, Clone)]
pub struct Target {
    /// Daemon address: http://host:port or unix:///path.
    #[arg(long, default_value = "http://127.0.0.1:9820")]
    pub addr: String,
    /// Run an engine in this process instead of talking to a daemon.
    #[arg(long)]
    pub embedded: bool,
    /// Parameter directory (embedded engine, and local verification).
    #[arg(long)]
    pub param_cache: Option<PathBuf>,
    /// Synthesis workers of the embedded engine.
    #[arg(long, default_value_t = 2)]
    pub partition_workers: usize,
    /// Prover workers of the embedded engine.
    #[arg(long, default_value_t = 2)]
    pub prover_workers: usize,
    /// Memory budget of the embedded engine's partitions in flight, GiB
    /// (a 2^27 partition needs about 25).
    #[arg(long, default_value_t = 4)]
    pub memory_budget_gib: u64,
}

impl Target {
    /// The parameter directory: `--param-cache`, else
    /// FIL_PROOFS_PARAMETER_CACHE, else cuzk's default (the daemon's rule).
    pub fn param_cache(&self) -> PathBuf {
        self.param_cache
            .clone()
            .or_else(|| std::env::var_os(cuzk_filecoin::settings::PARAMETER_CACHE_VAR).map(PathBuf::from))
            .unwrap_or_else(cuzk_core::ParameterCache::default_dir)
    }
}

/// A proof request as the bench builds it: the wire request, whichever way
/// it travels.
pub type Submission = pb::SubmitProofRequest;

/// A final (or timed-out) result, in wire terms.
pub type Outcome = pb::AwaitProofResponse;

#[derive(Clone, Debug)]
pub enum Client {
    Remote(ProvingEngineClient<Channel>),
    Embedded(Arc<Engine>),
}

impl Client {
    pub async fn connect(target: &Target) -> anyhow::Result<Self> {
        if target.embedded {
            // filecoin-proofs reads the same directory (its .vk files).
            let param_cache =
                cuzk_filecoin::settings::init_with(Some(&target.param_cache()), &target.param_cache());
            let config = EngineConfig {
                param_cache,
                partition_workers: target.partition_workers,
                gpu_workers_per_device: target.prover_workers,
                memory_budget: target.memory_budget_gib << 30,
                ..EngineConfig::default()
            };
            let engine = tokio::task::spawn_blocking(move || Engine::start(config)).await??;
            return Ok(Client::Embedded(Arc::new(engine)));
        }
        let channel = cuzk_proto::connect(&target.addr)
            .await
            .with_context(|| format!("connecting to {}", target.addr))?;
        Ok(Client::Remote(
            ProvingEngineClient::new(channel)
                .max_decoding_message_size(cuzk_proto::MAX_MESSAGE_BYTES)
                .max_encoding_message_size(cuzk_proto::MAX_MESSAGE_BYTES),
        ))
    }

    pub async fn submit(&self, s: &Submission) -> anyhow::Result<(String, u32)> {
        match self {
            Client::Remote(client) => {
                let response = client.clone().submit_proof(s.clone()).await?.into_inner();
                Ok((response.job_id, response.queue_position))
            }
            Client::Embedded(engine) => {
                let request = cuzk_daemon::service::to_request(s.clone())
                    .map_err(|e| anyhow::anyhow!("{}", e.message()))?;
                let outcome = engine.submit(request)?;
                Ok((outcome.job_id, outcome.queue_position))
            }
        }
    }

    pub async fn wait(&self, job_id: &str, timeout: Option<Duration>) -> anyhow::Result<Outcome> {
        match self {
            Client::Remote(client) => Ok(client
                .clone()
                .await_proof(pb::AwaitProofRequest {
                    job_id: job_id.to_string(),
                    timeout_ms: timeout.map(|t| t.as_millis() as u64).unwrap_or(0),
                })
                .await?
                .into_inner()),
            Client::Embedded(engine) => Ok(cuzk_daemon::service::to_response(
                engine.wait(job_id, timeout).await?,
            )),
        }
    }

    pub async fn status(&self) -> anyhow::Result<pb::GetStatusResponse> {
        match self {
            Client::Remote(client) => Ok(client
                .clone()
                .get_status(pb::GetStatusRequest {})
                .await?
                .into_inner()),
            Client::Embedded(engine) => Ok(cuzk_daemon::service::to_status_response(engine.status())),
        }
    }

    pub async fn metrics(&self) -> anyhow::Result<String> {
        match self {
            Client::Remote(client) => Ok(client
                .clone()
                .get_metrics(pb::GetMetricsRequest {})
                .await?
                .into_inner()
                .prometheus_text),
            Client::Embedded(engine) => Ok(engine.metrics_text()),
        }
    }

    pub async fn preload(&self, circuit_id: &str) -> anyhow::Result<(bool, u64)> {
        match self {
            Client::Remote(client) => {
                let r = client
                    .clone()
                    .preload_srs(pb::PreloadSrsRequest {
                        circuit_id: circuit_id.to_string(),
                    })
                    .await?
                    .into_inner();
                Ok((r.already_loaded, r.load_time_ms))
            }
            Client::Embedded(engine) => {
                let (already, took) = engine.preload_srs(circuit_id)?;
                Ok((already, took.as_millis() as u64))
            }
        }
    }
}
