//! How the tools reach a daemon: its address and the client's TLS and
//! token settings (flags over the environment's `CUZK_TLS_*` and
//! `CUZK_AUTH_TOKEN*`).

use anyhow::Context;
use clap::Args;
use cuzk_proto::v1::proving_engine_client::ProvingEngineClient;
use std::path::PathBuf;

/// A daemon to talk to.
#[derive(Args, Debug, Clone)]
pub struct DaemonArgs {
    /// Daemon address: http://host:port, https://host:port or unix:///path.
    #[arg(long, default_value = "http://127.0.0.1:9820")]
    pub addr: String,
    /// CA certificate (PEM) to trust for an `https://` daemon address
    /// (default: $CUZK_TLS_CA, else the system's roots).
    #[arg(long)]
    pub tls_ca: Option<PathBuf>,
    /// Client certificate and key (PEM) for a daemon that requires them.
    #[arg(long, requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// Client key (PEM), with --tls-cert.
    #[arg(long, requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
    /// Name to check the daemon's certificate against (default: the host).
    #[arg(long)]
    pub tls_domain: Option<String>,
    /// File holding the daemon's bearer token (default: $CUZK_AUTH_TOKEN,
    /// $CUZK_AUTH_TOKEN_FILE).
    #[arg(long)]
    pub auth_token_file: Option<PathBuf>,
}

/// A gRPC client of one daemon.
pub type DaemonClient = ProvingEngineClient<cuzk_proto::AuthChannel>;

impl DaemonArgs {
    /// TLS and token settings: the flags, over the environment's.
    pub fn client_options(&self) -> anyhow::Result<cuzk_proto::ClientOptions> {
        let mut options = cuzk_proto::ClientOptions::from_env()?;
        if let Some(path) = &self.auth_token_file {
            options = options.token_file(path)?;
        }
        options.tls_ca = self.tls_ca.clone().or(options.tls_ca);
        options.tls_cert = self.tls_cert.clone().or(options.tls_cert);
        options.tls_key = self.tls_key.clone().or(options.tls_key);
        options.tls_domain = self.tls_domain.clone().or(options.tls_domain);
        Ok(options)
    }

    /// Connects, with the message limits the daemon uses.
    pub async fn connect(&self) -> anyhow::Result<DaemonClient> {
        let channel = cuzk_proto::connect_with(&self.addr, &self.client_options()?)
            .await
            .with_context(|| format!("connecting to {}", self.addr))?;
        Ok(ProvingEngineClient::new(channel)
            .max_decoding_message_size(cuzk_proto::MAX_MESSAGE_BYTES)
            .max_encoding_message_size(cuzk_proto::MAX_MESSAGE_BYTES))
    }
}
