//! Who may use the daemon: the bearer token (checked on every gRPC call but
//! the health service, and on HTTP `/status`), TLS for a TCP listener, the
//! Unix socket's mode, and the warnings about listeners open to the network.
//! SECURITY.md describes the model.

use crate::config::{DaemonSection, TlsSection};
use anyhow::{bail, Context};
use axum::extract::{Request, State};
use axum::http::{header, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use std::net::SocketAddr;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::sync::Arc;
use subtle::ConstantTimeEq;
use tonic::transport::{Certificate, Identity, ServerTlsConfig};
use tonic::Status;

/// The environment variable holding the token when `[daemon]
/// auth_token_file` is not set.
pub const TOKEN_ENV: &str = "CUZK_AUTH_TOKEN";

/// The shared secret clients present as `authorization: Bearer <token>`.
/// Its `Debug` never shows it.
#[derive(Clone)]
pub struct Token(Arc<[u8]>);

impl std::fmt::Debug for Token {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Token(<redacted>)")
    }
}

impl Token {
    /// A token from its text (surrounding whitespace, such as a file's
    /// final newline, is dropped). It must be visible ASCII without spaces,
    /// so that it fits in an HTTP header.
    pub fn new(text: &str) -> anyhow::Result<Self> {
        let text = text.trim();
        if text.is_empty() {
            bail!("the token is empty");
        }
        if !text.bytes().all(|b| b.is_ascii_graphic()) {
            bail!("the token must be visible ASCII characters without spaces");
        }
        if text.len() < 16 {
            tracing::warn!(
                length = text.len(),
                "the auth token is short; use at least 32 random characters (e.g. `openssl rand -hex 32`)"
            );
        }
        Ok(Self(text.as_bytes().into()))
    }

    /// Whether `presented` is the token; the time taken does not depend on
    /// where the two differ.
    pub fn matches(&self, presented: &[u8]) -> bool {
        bool::from(self.0.ct_eq(presented))
    }

    /// Whether an `authorization` header value is `Bearer <token>` (the
    /// scheme in any case).
    pub fn accepts(&self, header: Option<&[u8]>) -> bool {
        let Some(value) = header else { return false };
        match value.split_at_checked(7) {
            Some((scheme, token)) if scheme.eq_ignore_ascii_case(b"bearer ") => {
                self.matches(token.trim_ascii())
            }
            _ => false,
        }
    }
}

/// Warns when a secret file can be read by other users.
fn warn_if_readable_by_others(path: &Path, what: &str) {
    if let Ok(meta) = std::fs::metadata(path) {
        if meta.permissions().mode() & 0o077 != 0 {
            tracing::warn!(
                file = %path.display(),
                mode = format!("{:04o}", meta.permissions().mode() & 0o7777),
                "{what} is readable by other users; chmod 600 it"
            );
        }
    }
}

/// The token from `[daemon] auth_token_file` or `env` (the value of
/// `CUZK_AUTH_TOKEN`), if either is set; both at once is an error.
pub fn load_token(daemon: &DaemonSection, env: Option<String>) -> anyhow::Result<Option<Token>> {
    match (&daemon.auth_token_file, env) {
        (Some(_), Some(_)) => bail!("both [daemon] auth_token_file and {TOKEN_ENV} are set; set only one"),
        (Some(path), None) => {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("reading [daemon] auth_token_file {}", path.display()))?;
            warn_if_readable_by_others(path, "the auth token file");
            Token::new(&text)
                .with_context(|| format!("[daemon] auth_token_file {}", path.display()))
                .map(Some)
        }
        (None, Some(text)) => Token::new(&text).context(TOKEN_ENV).map(Some),
        (None, None) => Ok(None),
    }
}

/// The gRPC side of the token: a tonic interceptor on the
/// `cuzk.v1.ProvingEngine` service (the health service is not wrapped).
/// With no token it lets everything through.
#[derive(Clone, Debug)]
pub struct AuthInterceptor {
    token: Option<Token>,
}

impl AuthInterceptor {
    /// Requires `token` when it is set.
    pub fn new(token: Option<Token>) -> Self {
        Self { token }
    }
}

impl tonic::service::Interceptor for AuthInterceptor {
    fn call(&mut self, mut request: tonic::Request<()>) -> Result<tonic::Request<()>, Status> {
        let Some(token) = &self.token else {
            return Ok(request);
        };
        let header = request.metadata().get("authorization");
        if header.is_none() {
            return Err(Status::unauthenticated(
                "this daemon requires a bearer token: send `authorization: Bearer <token>` metadata",
            ));
        }
        if !token.accepts(header.map(|v| v.as_bytes())) {
            return Err(Status::unauthenticated("invalid bearer token"));
        }
        // The handlers have no use for it; keep it out of anything they log.
        request.metadata_mut().remove("authorization");
        Ok(request)
    }
}

/// The HTTP side of the token: every path but `/metrics` (counts and
/// durations, no job ids) requires it.
async fn require_token(State(token): State<Token>, request: Request, next: Next) -> Response {
    let header = request.headers().get(header::AUTHORIZATION).map(|v| v.as_bytes());
    if request.uri().path() == "/metrics" || token.accepts(header) {
        return next.run(request).await;
    }
    (
        StatusCode::UNAUTHORIZED,
        [(header::WWW_AUTHENTICATE, "Bearer")],
        "missing or invalid bearer token (send `Authorization: Bearer <token>`)\n",
    )
        .into_response()
}

/// `router` with the token required (see [`require_token`]) when one is set.
pub fn protect_http(router: axum::Router, token: Option<Token>) -> axum::Router {
    match token {
        Some(token) => router.layer(axum::middleware::from_fn_with_state(token, require_token)),
        None => router,
    }
}

/// A `[daemon.tls]` file, by its key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum TlsFile {
    Cert,
    Key,
    ClientCa,
}

impl TlsFile {
    fn key(self) -> &'static str {
        match self {
            TlsFile::Cert => "cert",
            TlsFile::Key => "key",
            TlsFile::ClientCa => "client_ca",
        }
    }
}

fn read_tls_file(path: &Path, file: TlsFile) -> anyhow::Result<Vec<u8>> {
    std::fs::read(path).with_context(|| format!("reading [daemon.tls] {} {}", file.key(), path.display()))
}

/// Checks that a `[daemon.tls]` file holds what its key needs (PEM
/// certificates, or one PEM private key). rustls, handed all three files at
/// once, says only "Error parsing TLS certificate" or "no RSA or
/// PKCS8-encoded keys found", whichever file it was; this names the file.
fn check_tls_file(path: &Path, file: TlsFile, bytes: &[u8]) -> anyhow::Result<()> {
    use rustls_pki_types::pem::{self, PemObject};
    use rustls_pki_types::{CertificateDer, PrivateKeyDer};
    let problem = match file {
        TlsFile::Key => match PrivateKeyDer::from_pem_slice(bytes) {
            Ok(_) => return Ok(()),
            Err(pem::Error::NoItemsFound) => "holds no PEM private key (PKCS#8, PKCS#1 or SEC1)".to_string(),
            Err(e) => format!("is not a valid PEM private key: {e}"),
        },
        TlsFile::Cert | TlsFile::ClientCa => {
            match CertificateDer::pem_slice_iter(bytes).collect::<Result<Vec<_>, _>>() {
                Ok(certs) if certs.is_empty() => {
                    "holds no PEM certificate (-----BEGIN CERTIFICATE-----)".to_string()
                }
                Ok(_) => return Ok(()),
                Err(e) => format!("is not valid PEM: {e}"),
            }
        }
    };
    bail!("[daemon.tls] {} {} {problem}", file.key(), path.display())
}

/// Reads the `[daemon.tls]` files into tonic's server configuration, and
/// has rustls load them now (not at the first connection): an error names
/// the file, or the files, at fault.
pub fn server_tls(tls: &TlsSection) -> anyhow::Result<ServerTlsConfig> {
    let cert = read_tls_file(&tls.cert, TlsFile::Cert)?;
    let key = read_tls_file(&tls.key, TlsFile::Key)?;
    let ca = match &tls.client_ca {
        Some(path) => Some((path, read_tls_file(path, TlsFile::ClientCa)?)),
        None => None,
    };
    warn_if_readable_by_others(&tls.key, "the TLS key");
    check_tls_file(&tls.cert, TlsFile::Cert, &cert)?;
    check_tls_file(&tls.key, TlsFile::Key, &key)?;
    if let Some((path, ca)) = &ca {
        check_tls_file(path, TlsFile::ClientCa, ca)?;
    }
    let config = ServerTlsConfig::new().identity(Identity::from_pem(cert, key));
    tonic::transport::Server::builder()
        .tls_config(config.clone())
        .with_context(|| {
            format!(
                "[daemon.tls] cert {} and key {} are not a usable certificate chain and its key",
                tls.cert.display(),
                tls.key.display()
            )
        })?;
    let Some((path, ca)) = ca else {
        return Ok(config);
    };
    let config = config.client_ca_root(Certificate::from_pem(ca));
    tonic::transport::Server::builder()
        .tls_config(config.clone())
        .with_context(|| {
            format!(
                "[daemon.tls] client_ca {} holds no usable CA certificate",
                path.display()
            )
        })?;
    Ok(config)
}

/// What is missing on a gRPC TCP listener at `addr`: nothing on loopback;
/// elsewhere a line for each of a missing token and missing TLS.
pub fn exposure_warnings(addr: SocketAddr, tls: bool, token: bool) -> Vec<&'static str> {
    let mut warnings = Vec::new();
    if addr.ip().is_loopback() {
        return warnings;
    }
    if !token {
        warnings.push(
            "no auth token: anyone who can reach this address can submit, cancel and read proofs \
             (set [daemon] auth_token_file or CUZK_AUTH_TOKEN)",
        );
    }
    if !tls {
        warnings.push("no TLS: requests, proofs and any token cross the network in clear (set [daemon.tls])");
    }
    warnings
}

/// Logs [`exposure_warnings`] for a gRPC listener.
pub fn warn_if_exposed(addr: SocketAddr, tls: bool, token: bool) {
    for warning in exposure_warnings(addr, tls, token) {
        tracing::warn!(addr = %addr, "gRPC listens beyond loopback with {warning}");
    }
}

/// Logs a warning for an HTTP listener beyond loopback (always plain HTTP).
pub fn warn_if_http_exposed(addr: SocketAddr, token: bool) {
    if addr.ip().is_loopback() {
        return;
    }
    if token {
        tracing::warn!(
            addr = %addr,
            "HTTP /status listens beyond loopback over plain HTTP: its bearer token crosses the network in clear"
        );
    } else {
        tracing::warn!(
            addr = %addr,
            "HTTP /status listens beyond loopback with no auth token: anyone who can reach it reads the job ids"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tonic::service::Interceptor;

    #[test]
    fn the_default_listen_address_is_loopback() {
        let listen = crate::config::Config::default().daemon.listen;
        let addr: SocketAddr = listen.parse().unwrap();
        assert!(addr.ip().is_loopback(), "{listen}");
        assert_eq!(addr.port(), 9820);
    }

    #[test]
    fn tokens_are_checked_whole_and_only_as_bearer() {
        let token = Token::new("s3cr3t-token-0123456789\n").unwrap();
        assert!(token.accepts(Some(b"Bearer s3cr3t-token-0123456789")));
        assert!(token.accepts(Some(b"bearer s3cr3t-token-0123456789")));
        assert!(!token.accepts(Some(b"Bearer s3cr3t-token-012345678")));
        assert!(!token.accepts(Some(b"Bearer s3cr3t-token-01234567890")));
        assert!(!token.accepts(Some(b"Basic s3cr3t-token-0123456789")));
        assert!(!token.accepts(Some(b"s3cr3t-token-0123456789")));
        assert!(!token.accepts(Some(b"Bearer ")));
        assert!(!token.accepts(None));
        assert!(Token::new(" \n").is_err());
        assert!(Token::new("two words").is_err());
        assert!(!format!("{token:?}").contains("s3cr3t"));
    }

    #[test]
    fn the_interceptor_rejects_without_echoing_the_token() {
        let mut interceptor = AuthInterceptor::new(Some(Token::new("right-token-0123456789").unwrap()));
        let mut request = tonic::Request::new(());
        request
            .metadata_mut()
            .insert("authorization", "Bearer wrong-token".parse().unwrap());
        let status = interceptor.call(request).unwrap_err();
        assert_eq!(status.code(), tonic::Code::Unauthenticated);
        assert!(!status.message().contains("wrong-token") && !status.message().contains("right-token"));
        let status = interceptor.call(tonic::Request::new(())).unwrap_err();
        assert_eq!(status.code(), tonic::Code::Unauthenticated);

        let mut request = tonic::Request::new(());
        request
            .metadata_mut()
            .insert("authorization", "Bearer right-token-0123456789".parse().unwrap());
        let passed = interceptor.call(request).unwrap();
        assert!(passed.metadata().get("authorization").is_none());
        assert!(AuthInterceptor::new(None).call(tonic::Request::new(())).is_ok());
    }

    #[test]
    fn token_from_file_or_environment_not_both() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("token");
        std::fs::write(&file, "from-the-file-0123456789\n").unwrap();
        let mut daemon = DaemonSection {
            auth_token_file: Some(file),
            ..DaemonSection::default()
        };
        let token = load_token(&daemon, None).unwrap().unwrap();
        assert!(token.matches(b"from-the-file-0123456789"));
        assert!(load_token(&daemon, Some("x".repeat(20))).is_err());
        daemon.auth_token_file = None;
        let token = load_token(&daemon, Some("from-the-env-0123456789".into()))
            .unwrap()
            .unwrap();
        assert!(token.matches(b"from-the-env-0123456789"));
        assert!(load_token(&daemon, Some(String::new())).is_err());
        assert!(load_token(&daemon, None).unwrap().is_none());
        daemon.auth_token_file = Some(dir.path().join("missing"));
        let error = format!("{:#}", load_token(&daemon, None).unwrap_err());
        assert!(error.contains("auth_token_file"), "{error}");
    }

    /// Regression (issue 34, item 7): a file rustls could not parse was
    /// reported without its name ("loading [daemon.tls] cert and key: Error
    /// parsing TLS certificate"), whichever of the three it was.
    #[test]
    fn a_bad_tls_file_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let path = |name: &str| dir.path().join(name);
        let write = |name: &str, text: &str| std::fs::write(path(name), text).unwrap();
        let key = rcgen::KeyPair::generate().unwrap();
        let cert = rcgen::CertificateParams::new(vec!["localhost".to_string()])
            .unwrap()
            .self_signed(&key)
            .unwrap();
        write("cert.pem", &cert.pem());
        write("key.pem", &key.serialize_pem());
        write("other.key", &rcgen::KeyPair::generate().unwrap().serialize_pem());
        write("garbage.pem", "hello");
        write("broken.pem", "-----BEGIN CERTIFICATE-----\nAAAA\n");
        let section = |cert: &str, key: &str, ca: Option<&str>| TlsSection {
            cert: path(cert),
            key: path(key),
            client_ca: ca.map(path),
        };
        let error = |tls: TlsSection| format!("{:#}", server_tls(&tls).unwrap_err());

        assert!(server_tls(&section("cert.pem", "key.pem", Some("cert.pem"))).is_ok());
        for (tls, names) in [
            (section("garbage.pem", "key.pem", None), "[daemon.tls] cert "),
            (section("broken.pem", "key.pem", None), "[daemon.tls] cert "),
            (section("cert.pem", "garbage.pem", None), "[daemon.tls] key "),
            (section("cert.pem", "cert.pem", None), "[daemon.tls] key "),
            (
                section("cert.pem", "key.pem", Some("garbage.pem")),
                "[daemon.tls] client_ca ",
            ),
            (
                section("cert.pem", "key.pem", Some("key.pem")),
                "[daemon.tls] client_ca ",
            ),
        ] {
            let bad = if names.ends_with("cert ") {
                &tls.cert
            } else if names.ends_with("key ") {
                &tls.key
            } else {
                tls.client_ca.as_ref().unwrap()
            };
            let named = format!("{names}{}", bad.display());
            let message = error(tls.clone());
            assert!(message.contains(&named), "{message:?} does not name {named:?}");
        }
        // A key that is not the certificate's: both files are named.
        let message = error(section("cert.pem", "other.key", None));
        assert!(
            message.contains("cert.pem") && message.contains("other.key"),
            "{message}"
        );
    }

    #[test]
    fn only_non_loopback_listeners_without_token_or_tls_are_flagged() {
        let local: SocketAddr = "127.0.0.1:9820".parse().unwrap();
        let local6: SocketAddr = "[::1]:9820".parse().unwrap();
        let any: SocketAddr = "0.0.0.0:9820".parse().unwrap();
        assert!(exposure_warnings(local, false, false).is_empty());
        assert!(exposure_warnings(local6, false, false).is_empty());
        assert_eq!(exposure_warnings(any, false, false).len(), 2);
        assert_eq!(exposure_warnings(any, true, false).len(), 1);
        assert_eq!(exposure_warnings(any, false, true).len(), 1);
        assert!(exposure_warnings(any, true, true).is_empty());
    }
}
