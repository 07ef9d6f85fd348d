//! Generated types and service stubs of the `cuzk.v1` gRPC API, and the
//! client's way to a daemon: TCP (`http://`), TLS (`https://`) or a Unix
//! socket, with an optional bearer token.
#![allow(missing_docs, clippy::all, missing_debug_implementations)]

use std::path::PathBuf;
use tonic::metadata::{Ascii, MetadataValue};
use tonic::service::interceptor::InterceptedService;
use tonic::transport::{Certificate, Channel, ClientTlsConfig, Endpoint, Identity, Uri};

pub mod codec;

/// The `cuzk.v1` package.
pub mod v1 {
    tonic::include_proto!("cuzk.v1");
}

/// Largest message the daemon and clients accept (PoRep C1 outputs reach
/// about 50 MB at 32 GiB).
pub const MAX_MESSAGE_BYTES: usize = 256 << 20;

/// Environment variables read by [`ClientOptions::from_env`].
pub const ENV_TOKEN: &str = "CUZK_AUTH_TOKEN";
pub const ENV_TOKEN_FILE: &str = "CUZK_AUTH_TOKEN_FILE";
pub const ENV_TLS_CA: &str = "CUZK_TLS_CA";
pub const ENV_TLS_CERT: &str = "CUZK_TLS_CERT";
pub const ENV_TLS_KEY: &str = "CUZK_TLS_KEY";
pub const ENV_TLS_DOMAIN: &str = "CUZK_TLS_DOMAIN";

/// How to reach a daemon beyond its address.
#[derive(Clone, Default)]
pub struct ClientOptions {
    /// PEM CA certificates to trust for `https://` addresses (default: the
    /// system's roots).
    pub tls_ca: Option<PathBuf>,
    /// PEM client certificate and key, for a daemon that requires client
    /// certificates (`[daemon.tls] client_ca`).
    pub tls_cert: Option<PathBuf>,
    pub tls_key: Option<PathBuf>,
    /// The name to verify the server's certificate against (default: the
    /// address's host).
    pub tls_domain: Option<String>,
    /// Sent as `authorization: Bearer <token>` on every call.
    pub token: Option<String>,
}

impl std::fmt::Debug for ClientOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientOptions")
            .field("tls_ca", &self.tls_ca)
            .field("tls_cert", &self.tls_cert)
            .field("tls_key", &self.tls_key)
            .field("tls_domain", &self.tls_domain)
            .field("token", &self.token.as_ref().map(|_| "<redacted>"))
            .finish()
    }
}

impl ClientOptions {
    /// Options from the environment: `CUZK_TLS_CA`, `CUZK_TLS_CERT`,
    /// `CUZK_TLS_KEY`, `CUZK_TLS_DOMAIN`, and the token from
    /// `CUZK_AUTH_TOKEN` or the file named by `CUZK_AUTH_TOKEN_FILE`.
    pub fn from_env() -> Result<Self, ConnectError> {
        let var = |name| std::env::var_os(name).filter(|v| !v.is_empty());
        let mut options = Self {
            tls_ca: var(ENV_TLS_CA).map(PathBuf::from),
            tls_cert: var(ENV_TLS_CERT).map(PathBuf::from),
            tls_key: var(ENV_TLS_KEY).map(PathBuf::from),
            tls_domain: var(ENV_TLS_DOMAIN).map(|v| v.to_string_lossy().into_owned()),
            token: var(ENV_TOKEN).map(|v| v.to_string_lossy().into_owned()),
        };
        if options.token.is_none() {
            if let Some(path) = var(ENV_TOKEN_FILE) {
                options = options.token_file(PathBuf::from(path))?;
            }
        }
        Ok(options)
    }

    /// Sets the token to the contents of `path` (surrounding whitespace dropped).
    pub fn token_file(mut self, path: impl Into<PathBuf>) -> Result<Self, ConnectError> {
        let path = path.into();
        let text = std::fs::read_to_string(&path).map_err(|source| ConnectError::Read {
            path: path.clone(),
            source,
        })?;
        self.token = Some(text.trim().to_string());
        Ok(self)
    }
}

/// Why a connection could not be opened.
#[derive(Debug, thiserror::Error)]
pub enum ConnectError {
    #[error("reading {}: {source}", path.display())]
    Read { path: PathBuf, source: std::io::Error },
    #[error("the token must be visible ASCII characters without spaces")]
    InvalidToken,
    #[error("a client certificate needs both tls_cert and tls_key")]
    HalfIdentity,
    #[error(transparent)]
    Transport(#[from] tonic::transport::Error),
}

/// Adds `authorization: Bearer <token>` to every call (nothing without a token).
#[derive(Clone)]
pub struct BearerToken(Option<MetadataValue<Ascii>>);

impl std::fmt::Debug for BearerToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() {
            "BearerToken(<redacted>)"
        } else {
            "BearerToken(None)"
        })
    }
}

impl BearerToken {
    /// The interceptor for `token`.
    pub fn new(token: Option<&str>) -> Result<Self, ConnectError> {
        let Some(token) = token.map(str::trim) else {
            return Ok(Self(None));
        };
        if token.is_empty() || !token.bytes().all(|b| b.is_ascii_graphic()) {
            return Err(ConnectError::InvalidToken);
        }
        let mut value: MetadataValue<Ascii> = format!("Bearer {token}")
            .parse()
            .map_err(|_| ConnectError::InvalidToken)?;
        value.set_sensitive(true);
        Ok(Self(Some(value)))
    }
}

impl tonic::service::Interceptor for BearerToken {
    fn call(&mut self, mut request: tonic::Request<()>) -> Result<tonic::Request<()>, tonic::Status> {
        if let Some(value) = &self.0 {
            request.metadata_mut().insert("authorization", value.clone());
        }
        Ok(request)
    }
}

/// A channel that carries the bearer token: what [`connect_with`] returns,
/// for `ProvingEngineClient::new` (or any other generated client).
pub type AuthChannel = InterceptedService<Channel, BearerToken>;

fn read(path: &PathBuf) -> Result<Vec<u8>, ConnectError> {
    std::fs::read(path).map_err(|source| ConnectError::Read {
        path: path.clone(),
        source,
    })
}

/// Dials `address`; `tls` is used for `https://` addresses.
async fn open(address: &str, tls: ClientTlsConfig) -> Result<Channel, tonic::transport::Error> {
    if let Some(path) = address.strip_prefix("unix://") {
        let path = PathBuf::from(path);
        // The URI is required by the API but unused: the connector dials the socket.
        return Endpoint::from_static("http://[::]:0")
            .connect_with_connector(tower::service_fn(move |_: Uri| {
                let path = path.clone();
                async move {
                    let stream = tokio::net::UnixStream::connect(path).await?;
                    Ok::<_, std::io::Error>(hyper_util::rt::TokioIo::new(stream))
                }
            }))
            .await;
    }
    let mut endpoint = Endpoint::from_shared(address.to_string())?;
    if address.starts_with("https://") {
        endpoint = endpoint.tls_config(tls)?;
    }
    endpoint.connect().await
}

/// Opens a channel to a daemon at `http://host:port`, `https://host:port`
/// or `unix:///path`, with TLS as `options` say (TLS applies to `https://`
/// only). The token is not part of a [`Channel`]: see [`connect_with`].
pub async fn channel(address: &str, options: &ClientOptions) -> Result<Channel, ConnectError> {
    let mut tls = ClientTlsConfig::new();
    if address.starts_with("https://") {
        tls = match &options.tls_ca {
            Some(ca) => tls.ca_certificate(Certificate::from_pem(read(ca)?)),
            None => tls.with_native_roots(),
        };
        match (&options.tls_cert, &options.tls_key) {
            (Some(cert), Some(key)) => tls = tls.identity(Identity::from_pem(read(cert)?, read(key)?)),
            (None, None) => {}
            _ => return Err(ConnectError::HalfIdentity),
        }
        if let Some(domain) = &options.tls_domain {
            tls = tls.domain_name(domain.clone());
        }
    }
    Ok(open(address, tls).await?)
}

/// Opens a channel (see [`channel`]) that sends `options.token` with every call.
pub async fn connect_with(address: &str, options: &ClientOptions) -> Result<AuthChannel, ConnectError> {
    let token = BearerToken::new(options.token.as_deref())?;
    Ok(InterceptedService::new(channel(address, options).await?, token))
}

/// Opens a channel to a daemon at `http://host:port`, `https://host:port`
/// (trusting the system's CA roots) or `unix:///path`, with no token.
pub async fn connect(address: &str) -> Result<Channel, tonic::transport::Error> {
    open(address, ClientTlsConfig::new().with_native_roots()).await
}
