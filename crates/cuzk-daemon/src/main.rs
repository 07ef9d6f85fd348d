//! `cuzk-daemon`: the proving daemon.

use anyhow::Context;
use clap::Parser;
use cuzk_daemon::config::Config;
use std::path::PathBuf;

#[derive(Parser, Debug)]
#[command(
    name = "cuzk-daemon",
    version,
    about = "cuzk Groth16 proving daemon (gRPC cuzk.v1)"
)]
struct Cli {
    /// TOML configuration (see cuzk.example.toml); built-in defaults without it.
    #[arg(long)]
    config: Option<PathBuf>,
    /// gRPC address, overriding [daemon] listen: host:port or unix:///path
    /// (default 127.0.0.1:9820; see SECURITY.md before listening elsewhere).
    #[arg(long)]
    listen: Option<String>,
    /// HTTP /metrics and /status address, overriding [daemon] status_listen.
    #[arg(long)]
    status_listen: Option<String>,
    /// Log filter, overriding [logging] level (e.g. info, debug).
    #[arg(long)]
    log_level: Option<String>,
    /// Parameter directory, overriding [srs] param_cache.
    #[arg(long)]
    param_cache: Option<PathBuf>,
    /// File holding the bearer token clients must send, overriding [daemon]
    /// auth_token_file (CUZK_AUTH_TOKEN is the alternative).
    #[arg(long)]
    auth_token_file: Option<PathBuf>,
}

/// The log filter: `[logging] level`, with the targets that log a
/// client's bad vanilla proofs at ERROR, once a failing challenge, turned
/// off (`cuzk_filecoin::validate::CLIENT_INPUT_LOG_TARGETS`; the plan
/// refuses such a request with one warning of its own), unless the level
/// names them.
fn log_filter(level: &str) -> String {
    let mut filter = level.trim().to_string();
    for target in cuzk_filecoin::validate::CLIENT_INPUT_LOG_TARGETS {
        if !level.contains(target) {
            if !filter.is_empty() {
                filter.push(',');
            }
            filter.push_str(target);
            filter.push_str("=off");
        }
    }
    filter
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    let mut config = match &cli.config {
        Some(path) => Config::load(path)?,
        None => Config::default(),
    };
    if let Some(listen) = cli.listen {
        config.daemon.listen = listen;
    }
    if let Some(addr) = cli.status_listen {
        config.daemon.status_listen = Some(addr);
    }
    if let Some(level) = cli.log_level {
        config.logging.level = level;
    }
    if let Some(dir) = cli.param_cache {
        config.srs.param_cache = Some(dir);
    }
    if let Some(path) = cli.auth_token_file {
        config.daemon.auth_token_file = Some(path);
    }
    // One parameter directory for cuzk and filecoin-proofs (whose verifiers
    // read the .vk files), set before any thread starts.
    let param_dir = cuzk_filecoin::settings::init_with(
        config.srs.param_cache.as_deref(),
        &cuzk_core::params::default_dir(),
    );
    config.srs.param_cache = Some(param_dir);
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_new(log_filter(&config.logging.level))
                .with_context(|| format!("invalid log level {:?}", config.logging.level))?,
        )
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
    if config.gpus.gpu_threads > 0 {
        tracing::warn!(
            "[gpus] gpu_threads is deprecated: it is [pipeline] cpu_threads, the pool of every parallel pass"
        );
    }
    let (slots, pool) = config.core_split();
    rayon::ThreadPoolBuilder::new()
        .num_threads(pool)
        .build_global()
        .context("configuring the CPU thread pool")?;
    tracing::info!(
        pool_threads = rayon::current_num_threads(),
        sequential_slots = slots,
        "cores: the pool runs every parallel pass, the slots the synthesis workers' sequential parts"
    );
    match &cli.config {
        Some(path) => tracing::info!(config = %path.display(), "configuration loaded"),
        None => tracing::info!("no --config: built-in defaults"),
    }
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?
        .block_on(cuzk_daemon::server::serve(config))
}

#[cfg(test)]
mod tests {
    use super::log_filter;

    #[test]
    fn client_input_targets_are_off_unless_the_level_names_them() {
        let filter = log_filter("info");
        assert!(filter.starts_with("info,"), "{filter}");
        assert!(
            filter.contains("storage_proofs_post::fallback::vanilla=off"),
            "{filter}"
        );
        assert!(tracing_subscriber::EnvFilter::try_new(&filter).is_ok());
        let own = log_filter("info,storage_proofs_post::fallback::vanilla=debug");
        assert!(
            !own.contains("storage_proofs_post::fallback::vanilla=off"),
            "{own}"
        );
        assert!(tracing_subscriber::EnvFilter::try_new(log_filter("")).is_ok());
    }
}
