//! Serving: gRPC on TCP or a Unix socket, the health service, the optional
//! HTTP endpoints, and shutdown on SIGINT/SIGTERM.

use crate::config::Config;
use crate::service::Service;
use anyhow::Context;
use cuzk_engine::Engine;
use cuzk_proto::v1::proving_engine_server::ProvingEngineServer;
use cuzk_proto::MAX_MESSAGE_BYTES;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;
use tonic::transport::Server;

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

/// Runs the daemon until a termination signal, then shuts down cleanly:
/// new submissions are refused, jobs in flight get `shutdown_grace_secs` to
/// finish (clients can still await them), the rest are cancelled, and only
/// then does the gRPC server stop.
pub async fn serve(config: Config) -> anyhow::Result<()> {
    let engine_config = config.engine_config()?;
    tracing::info!(
        param_cache = %engine_config.param_cache.display(),
        memory_budget = engine_config.memory_budget,
        partition_workers = engine_config.partition_workers,
        gpu_workers_per_device = engine_config.gpu_workers_per_device,
        "starting engine"
    );
    let engine = Arc::new(
        tokio::task::spawn_blocking(move || Engine::start(engine_config))
            .await?
            .context("starting the engine")?,
    );

    let (health_reporter, health_service) = tonic_health::server::health_reporter();
    health_reporter
        .set_serving::<ProvingEngineServer<Service>>()
        .await;
    let service = ProvingEngineServer::new(Service::new(Arc::clone(&engine)))
        .max_decoding_message_size(MAX_MESSAGE_BYTES)
        .max_encoding_message_size(MAX_MESSAGE_BYTES);

    // Fires once the engine has finished shutting down.
    let (stopped_tx, stopped_rx) = watch::channel(false);
    {
        let engine = Arc::clone(&engine);
        let grace = Duration::from_secs(config.daemon.shutdown_grace_secs);
        let reporter = health_reporter.clone();
        tokio::spawn(async move {
            termination_signal().await;
            reporter.set_not_serving::<ProvingEngineServer<Service>>().await;
            tracing::info!(
                grace_secs = grace.as_secs(),
                "shutting down: no new jobs accepted"
            );
            let _ = tokio::task::spawn_blocking(move || engine.shutdown(grace)).await;
            tracing::info!("engine stopped; every accepted job has a final status");
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
        tracing::info!(addr = %listener.local_addr()?, "HTTP /metrics and /status listening");
        let app = crate::http::router(Arc::clone(&engine));
        let rx = stopped_rx.clone();
        tokio::spawn(async move {
            let _ = axum::serve(listener, app)
                .with_graceful_shutdown(stopped(rx))
                .await;
        });
    }

    let router = Server::builder().add_service(health_service).add_service(service);
    let listen = config.daemon.listen.clone();
    if let Some(path) = listen.strip_prefix("unix://") {
        // A socket file left by a previous run would make bind fail.
        let _ = std::fs::remove_file(path);
        let listener =
            tokio::net::UnixListener::bind(path).with_context(|| format!("binding Unix socket {path}"))?;
        tracing::info!(socket = path, "gRPC listening");
        router
            .serve_with_incoming_shutdown(
                tokio_stream::wrappers::UnixListenerStream::new(listener),
                stopped(stopped_rx),
            )
            .await?;
        let _ = std::fs::remove_file(path);
    } else {
        let listener = tokio::net::TcpListener::bind(&listen)
            .await
            .with_context(|| format!("binding {listen}"))?;
        tracing::info!(addr = %listener.local_addr()?, "gRPC listening");
        router
            .serve_with_incoming_shutdown(
                tokio_stream::wrappers::TcpListenerStream::new(listener),
                stopped(stopped_rx),
            )
            .await?;
    }
    tracing::info!("daemon stopped");
    Ok(())
}
