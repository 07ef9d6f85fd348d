//! One interface over the two ways the bench reaches an engine: a daemon
//! over gRPC (TCP or Unix socket) or an engine in this process.

use clap::Args;
use cuzk_core::backend::Residency;
use cuzk_ctl::daemon::{DaemonArgs, DaemonClient};
use cuzk_daemon::setup::{gpu_backends, plan_sources, EngineSetup};
use cuzk_daemon::wire;
use cuzk_engine::{Engine, EngineConfig};
use cuzk_proto::v1 as pb;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// Where the engine is.
#[derive(Args, Debug, Clone)]
pub struct Target {
    /// The daemon (address, TLS, token), unless `--embedded`.
    #[command(flatten)]
    pub daemon: DaemonArgs,
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
    /// Embedded engine: every partition synthesised in full on the host
    /// (its a, b, c computed there and uploaded), as with `[pipeline]
    /// witness_only = false`; by default a GPU computes them from the
    /// witness where the plan allows.
    #[arg(long)]
    pub host_abc: bool,
    /// Embedded engine: prove Filecoin requests whose vanilla proofs do not
    /// verify (`cuzk-bench real-inputs` files) without verifying their
    /// proofs, as a daemon with `[benchmark] allow_unverifiable = true` does.
    #[arg(long)]
    pub allow_unverifiable: bool,
}

impl Target {
    /// The parameter directory: `--param-cache`, else
    /// FIL_PROOFS_PARAMETER_CACHE, else cuzk's default (the daemon's rule).
    pub fn param_cache(&self) -> PathBuf {
        self.param_cache
            .clone()
            .or_else(|| std::env::var_os(cuzk_filecoin::settings::PARAMETER_CACHE_VAR).map(PathBuf::from))
            .unwrap_or_else(cuzk_core::params::default_dir)
    }
}

/// A proof request as the bench builds it: the wire request, whichever way
/// it travels.
pub type Submission = pb::SubmitProofRequest;

/// A final (or timed-out) result, in wire terms.
pub type Outcome = pb::AwaitProofResponse;

#[derive(Clone, Debug)]
pub enum Client {
    Remote(DaemonClient),
    Embedded(Arc<Engine>),
}

impl Client {
    pub async fn connect(target: &Target) -> anyhow::Result<Self> {
        if target.embedded {
            // filecoin-proofs reads the same directory (its .vk files).
            let param_cache =
                cuzk_filecoin::settings::init_with(Some(&target.param_cache()), &target.param_cache());
            let setup = EngineSetup {
                config: EngineConfig {
                    partition_workers: target.partition_workers,
                    workers_per_backend: target.prover_workers,
                    memory_budget: target.memory_budget_gib << 30,
                    witness_only: !target.host_abc,
                    ..EngineConfig::default()
                },
                backends: gpu_backends(&[], Residency::Auto, cuzk_daemon::config::memory_cap_from_env()),
                sources: plan_sources(
                    &param_cache,
                    true,
                    false,
                    target.allow_unverifiable,
                    false,
                    Arc::new(cuzk_core::R1csStore::in_dir(&param_cache)),
                )?,
            };
            let engine = tokio::task::spawn_blocking(move || setup.start()).await??;
            return Ok(Client::Embedded(Arc::new(engine)));
        }
        Ok(Client::Remote(target.daemon.connect().await?))
    }

    pub async fn submit(&self, s: &Submission) -> anyhow::Result<(String, u32)> {
        match self {
            Client::Remote(client) => {
                let response = client.clone().submit_proof(s.clone()).await?.into_inner();
                Ok((response.job_id, response.queue_position))
            }
            Client::Embedded(engine) => {
                let request = wire::to_request(s.clone()).map_err(|e| anyhow::anyhow!("{}", e.message()))?;
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
            Client::Embedded(engine) => Ok(wire::to_response(engine.wait(job_id, timeout).await?)),
        }
    }

    pub async fn status(&self) -> anyhow::Result<pb::GetStatusResponse> {
        match self {
            Client::Remote(client) => Ok(client
                .clone()
                .get_status(pb::GetStatusRequest {})
                .await?
                .into_inner()),
            Client::Embedded(engine) => Ok(wire::to_status_response(engine.status())),
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
