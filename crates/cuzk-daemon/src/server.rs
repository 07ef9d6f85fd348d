//! Serving: gRPC on TCP (optionally TLS) or a Unix socket, the health
//! service, the optional HTTP endpoints, the bearer token on both, and
//! shutdown on SIGINT/SIGTERM.

use crate::access::{self, AuthInterceptor, Token};
use crate::authority_fix::FixedStream;
use crate::config::Config;
use crate::service::Service;
use crate::setup::EngineSetup;
use crate::uds;
use anyhow::Context;
use cuzk_proto::v1::proving_engine_server::ProvingEngineServer;
use cuzk_proto::MAX_MESSAGE_BYTES;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;
use tokio_stream::StreamExt;
use tonic::service::interceptor::InterceptedService;
use tonic::transport::{Server, ServerTlsConfig};

/// How long, at least, results of jobs that ended during shutdown stay
/// collectable after the engine has stopped (unless all are collected
/// sooner): long enough for a client that polls AwaitProof to come back,
/// short enough to fit between the grace period and systemd's
/// `TimeoutStopSec` (deploy/systemd allows 30 s more than the grace).
const COLLECT_WINDOW: Duration = Duration::from_secs(10);

/// Resolves on SIGINT or SIGTERM.
async fn termination_signal() {
    use tokio::signal::unix::{signal, SignalKind};
    let mut term = signal(SignalKind::terminate()).expect("SIGTERM handler");
    let mut int = signal(SignalKind::interrupt()).expect("SIGINT handler");
    tokio::select! {
        _ = term.recv() => tracing::info!("SIGTERM received"),
        _ = int.recv() => tracing::info!("SIGINT received"),
    }
}

/// Where gRPC listens, and how it is protected.
enum Listen {
    Tcp {
        addr: String,
        tls: Option<ServerTlsConfig>,
    },
    Unix {
        path: PathBuf,
        mode: u32,
        /// `[daemon] unix_authority_fix`.
        rewrite_authority: bool,
    },
}

/// Everything about access that can be wrong in the configuration, checked
/// before the engine starts (which may take minutes to load parameters).
fn access_config(config: &Config) -> anyhow::Result<(Listen, Option<Token>)> {
    let daemon = &config.daemon;
    let env = std::env::var_os(access::TOKEN_ENV).map(|v| v.to_string_lossy().into_owned());
    let token = access::load_token(daemon, env)?;
    let listen = match daemon.listen.strip_prefix("unix://") {
        Some(path) => {
            let path = PathBuf::from(path);
            let mode = uds::parse_mode(&daemon.socket_mode)?;
            if mode & 0o007 != 0 {
                tracing::warn!(
                    socket = %path.display(),
                    mode = format!("{mode:04o}"),
                    "the socket is open to every user of this machine"
                );
            }
            if daemon.tls.is_some() {
                tracing::warn!(
                    "[daemon.tls] applies to TCP listeners; the Unix socket is served without TLS"
                );
            }
            uds::check_path(&path)?;
            Listen::Unix {
                path,
                mode,
                rewrite_authority: daemon.unix_authority_fix,
            }
        }
        None => {
            // Loaded now, not at the first connection.
            let tls = daemon.tls.as_ref().map(access::server_tls).transpose()?;
            Listen::Tcp {
                addr: daemon.listen.clone(),
                tls,
            }
        }
    };
    Ok((listen, token))
}

/// Runs the daemon until a termination signal, then shuts down cleanly:
/// new submissions are refused, jobs in flight get `shutdown_grace_secs` to
/// finish (clients can still await them), the rest are cancelled, and only
/// once every result of a job that ended during shutdown has been
/// collected (or a short collect window has passed) does the gRPC server stop.
pub async fn serve(config: Config) -> anyhow::Result<()> {
    let (listen, token) = access_config(&config)?;
    let param_dir = config.param_dir();
    let setup = EngineSetup::from_config(&config, &param_dir)?;
    tracing::info!(
        param_cache = %param_dir.display(),
        memory_budget = setup.config.memory_budget,
        partition_workers = setup.config.partition_workers,
        workers_per_backend = setup.config.workers_per_backend,
        "starting engine"
    );
    let engine = Arc::new(
        tokio::task::spawn_blocking(move || setup.start())
            .await?
            .context("starting the engine")?,
    );

    let cluster = match config.cluster.database.as_str() {
        "" => None,
        _ => {
            let ttl = Duration::from_secs(config.pipeline.result_ttl_secs);
            let node = crate::cluster::ClusterNode::connect(&config.cluster, ttl, Arc::clone(&engine))
                .await
                .context("connecting to the [cluster] database")?;
            node.spawn_claimer();
            Some(node)
        }
    };
    let (health_reporter, health_service) = tonic_health::server::health_reporter();
    health_reporter
        .set_serving::<ProvingEngineServer<Service>>()
        .await;
    // The token guards the engine's service; health checks stay open (they
    // reveal only SERVING / NOT_SERVING).
    let service = InterceptedService::new(
        ProvingEngineServer::new(match &cluster {
            Some(node) => Service::clustered(Arc::clone(&engine), Arc::clone(node)),
            None => Service::new(Arc::clone(&engine)),
        })
        .max_decoding_message_size(MAX_MESSAGE_BYTES)
        .max_encoding_message_size(MAX_MESSAGE_BYTES),
        AuthInterceptor::new(token.clone()),
    );

    // Fires once the engine has finished shutting down.
    let (stopped_tx, stopped_rx) = watch::channel(false);
    {
        let engine = Arc::clone(&engine);
        let grace = Duration::from_secs(config.daemon.shutdown_grace_secs);
        let reporter = health_reporter.clone();
        let cluster = cluster.clone();
        tokio::spawn(async move {
            termination_signal().await;
            if let Some(node) = &cluster {
                // Claim nothing more; what the engine cancels at the end of
                // the grace period goes back to the pool.
                node.stop();
            }
            reporter.set_not_serving::<ProvingEngineServer<Service>>().await;
            tracing::info!(
                grace_secs = grace.as_secs(),
                "shutting down: no new jobs accepted"
            );
            let began = std::time::Instant::now();
            let had_work = engine.unfinished_jobs() > 0;
            {
                let engine = Arc::clone(&engine);
                let _ = tokio::task::spawn_blocking(move || engine.shutdown(grace)).await;
            }
            tracing::info!("engine stopped; every accepted job has a final status");
            if let Some(node) = &cluster {
                // The held jobs' outcomes (or their release) reach the pool.
                let deadline = std::time::Instant::now() + Duration::from_secs(5);
                while node.held() > 0 && std::time::Instant::now() < deadline {
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
            }
            // Results of jobs that ended during shutdown (completed, or
            // cancelled at the end of the grace period) stay collectable
            // until every one has been awaited, or the grace period and at
            // least COLLECT_WINDOW after the engine stopped have passed.
            // Without the window, jobs cancelled at the end of the grace
            // period had none: the deadline had passed when the engine
            // returned, and the server stopped milliseconds later.
            if had_work {
                let deadline = (began + grace).max(std::time::Instant::now() + COLLECT_WINDOW);
                while std::time::Instant::now() < deadline && engine.uncollected_since(began) > 0 {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            }
            let _ = stopped_tx.send(true);
        });
    }
    let stopped = |mut rx: watch::Receiver<bool>| async move {
        let _ = rx.wait_for(|done| *done).await;
    };

    if let Some(addr) = &config.daemon.status_listen {
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .with_context(|| format!("binding status address {addr}"))?;
        let local = listener.local_addr()?;
        tracing::info!(
            addr = %local,
            token_required = token.is_some(),
            "HTTP /metrics and /status listening (/status needs the token when one is set)"
        );
        access::warn_if_http_exposed(local, token.is_some());
        let app = access::protect_http(crate::http::router(Arc::clone(&engine)), token.clone());
        let rx = stopped_rx.clone();
        tokio::spawn(async move {
            let _ = axum::serve(listener, app)
                .with_graceful_shutdown(stopped(rx))
                .await;
        });
    }

    match listen {
        Listen::Unix {
            path,
            mode,
            rewrite_authority,
        } => {
            let (listener, socket) = uds::bind(&path, mode)?;
            tracing::info!(
                socket = %path.display(),
                mode = format!("{mode:04o}"),
                token_required = token.is_some(),
                rewrite_authority,
                "gRPC listening"
            );
            let incoming = tokio_stream::wrappers::UnixListenerStream::new(listener)
                .map(move |connection| connection.map(|c| FixedStream::new(c, rewrite_authority)));
            let served = Server::builder()
                .add_service(health_service)
                .add_service(service)
                .serve_with_incoming_shutdown(incoming, stopped(stopped_rx))
                .await;
            socket.remove();
            served?;
        }
        Listen::Tcp { addr, tls } => {
            let mut builder = Server::builder();
            let tls_on = tls.is_some();
            if let Some(tls) = tls {
                builder = builder.tls_config(tls).context("loading [daemon.tls]")?;
            }
            let listener = tokio::net::TcpListener::bind(&addr)
                .await
                .with_context(|| format!("binding {addr}"))?;
            let local = listener.local_addr()?;
            tracing::info!(
                addr = %local,
                tls = tls_on,
                token_required = token.is_some(),
                "gRPC listening"
            );
            access::warn_if_exposed(local, tls_on, token.is_some());
            builder
                .add_service(health_service)
                .add_service(service)
                .serve_with_incoming_shutdown(
                    tokio_stream::wrappers::TcpListenerStream::new(listener),
                    stopped(stopped_rx),
                )
                .await?;
        }
    }
    tracing::info!("daemon stopped");
    Ok(())
}
