//! Access to the real daemon binary: the Unix socket's mode and path
//! handling, grpc-core's `:authority` on the socket, the bearer token on
//! gRPC and HTTP, and TLS (with and without client certificates).

use cuzk_proto::v1::{self as pb, proving_engine_client::ProvingEngineClient};
use cuzk_proto::ClientOptions;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use tonic::Code;

mod common;
use common::{free_port, http_get};

/// A daemon started the way an operator would, under a chosen umask and
/// environment; killed when dropped.
struct Proc {
    child: Child,
    dir: PathBuf,
}

impl Proc {
    /// `config` is appended to a `[daemon]` table that already has `listen`
    /// (so it may add `[daemon]` keys first), then `[srs]` and `[logging]`.
    fn start(dir: &Path, listen: &str, config: &str, umask: &str, env: &[(&str, &str)]) -> Self {
        let text = format!(
            "[daemon]\nlisten = \"{listen}\"\nshutdown_grace_secs = 2\n{config}\n\
             [srs]\nparam_cache = \"{}\"\n[logging]\nlevel = \"info\"\n",
            dir.join("params").display()
        );
        let config_path = dir.join("cuzk.toml");
        std::fs::write(&config_path, text).unwrap();
        let log = std::fs::File::create(dir.join("daemon.log")).unwrap();
        let mut command = Command::new("sh");
        command
            .arg("-c")
            .arg(format!("umask {umask} && exec \"$0\" --config \"$1\""))
            .arg(env!("CARGO_BIN_EXE_cuzk-daemon"))
            .arg(&config_path)
            .env_remove("CUZK_AUTH_TOKEN")
            .stdout(Stdio::null())
            .stderr(log);
        for (key, value) in env {
            command.env(key, value);
        }
        Proc {
            child: command.spawn().unwrap(),
            dir: dir.to_path_buf(),
        }
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("daemon.log")).unwrap_or_default()
    }

    /// Waits for the daemon to exit by itself (it should refuse to start).
    fn exit_status(&mut self) -> std::process::ExitStatus {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            assert!(Instant::now() < deadline, "daemon kept running:\n{}", self.log());
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Retries until the daemon answers GetStatus through `options` (or the
/// deadline passes); returns the client.
async fn client_with(address: &str, options: &ClientOptions) -> ProvingEngineClient<cuzk_proto::AuthChannel> {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        match cuzk_proto::connect_with(address, options).await {
            Ok(channel) => return ProvingEngineClient::new(channel),
            Err(e) if Instant::now() > deadline => panic!("no daemon at {address}: {e}"),
            Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
        }
    }
}

/// A client's options that send the daemon's token.
fn with_token() -> ClientOptions {
    ClientOptions {
        token: Some(TOKEN.into()),
        ..ClientOptions::default()
    }
}

fn socket_mode(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o7777
}

/// A daemon (see [`Proc::start`]) listening on `cuzk.sock` in a directory
/// of its own; [`OnASocket::serving`] returns once it serves there.
struct OnASocket {
    /// Killed (dropped) before its directory is removed.
    daemon: Proc,
    socket: PathBuf,
    _dir: tempfile::TempDir,
}

impl OnASocket {
    async fn serving(config: &str, umask: &str, env: &[(&str, &str)]) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let socket = dir.path().join("cuzk.sock");
        let listen = format!("unix://{}", socket.display());
        let daemon = Proc::start(dir.path(), &listen, config, umask, env);
        let _ = common::connect(&listen).await;
        Self {
            daemon,
            socket,
            _dir: dir,
        }
    }
}

/// The mode of the socket of a daemon started with `config` under
/// `umask`, once it serves.
async fn mode_of_a_started_socket(config: &str, umask: &str) -> u32 {
    let served = OnASocket::serving(config, umask, &[]).await;
    socket_mode(&served.socket)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unix_socket_gets_its_mode_whatever_the_umask() {
    // Default 0600 under a umask that would leave it open to everyone.
    assert_eq!(mode_of_a_started_socket("", "000").await, 0o600);

    // 0660 on request, under a umask that would take the group's bits away.
    assert_eq!(
        mode_of_a_started_socket("socket_mode = \"0660\"", "077").await,
        0o660
    );

    // A mode the daemon's own user could not connect through is refused.
    let dir = tempfile::tempdir().unwrap();
    let listen = format!("unix://{}", dir.path().join("cuzk.sock").display());
    let mut daemon = Proc::start(dir.path(), &listen, "socket_mode = \"0400\"", "022", &[]);
    assert!(!daemon.exit_status().success());
    assert!(daemon.log().contains("socket_mode"), "{}", daemon.log());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_at_the_socket_path_is_never_deleted() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cuzk.sock");
    std::fs::write(&path, "operator's data\n").unwrap();
    let listen = format!("unix://{}", path.display());
    let mut daemon = Proc::start(dir.path(), &listen, "", "022", &[]);
    assert!(!daemon.exit_status().success(), "started over a regular file");
    let log = daemon.log();
    assert!(log.contains("is a regular file, not a socket"), "{log}");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "operator's data\n");

    // A directory is left alone too.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cuzk.sock");
    std::fs::create_dir(&path).unwrap();
    std::fs::write(path.join("keep"), "x").unwrap();
    let listen = format!("unix://{}", path.display());
    let mut daemon = Proc::start(dir.path(), &listen, "", "022", &[]);
    assert!(!daemon.exit_status().success());
    assert!(path.join("keep").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stale_socket_is_replaced_and_a_live_one_is_not() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cuzk.sock");
    let listen = format!("unix://{}", path.display());

    // Somebody is listening there: refuse, and leave their socket alone.
    let live = std::os::unix::net::UnixListener::bind(&path).unwrap();
    let mut daemon = Proc::start(dir.path(), &listen, "", "022", &[]);
    assert!(!daemon.exit_status().success());
    assert!(
        daemon.log().contains("another process is listening"),
        "{}",
        daemon.log()
    );
    assert!(std::fs::symlink_metadata(&path).is_ok());

    // The listener is gone, its file is left: stale, replaced.
    drop(live);
    let daemon = Proc::start(dir.path(), &listen, "", "022", &[]);
    let mut client = ProvingEngineClient::new(common::connect(&listen).await);
    client.get_status(pb::GetStatusRequest {}).await.unwrap();
    assert!(
        daemon.log().contains("removed a stale socket"),
        "{}",
        daemon.log()
    );
}

/// One HTTP/2 frame.
fn frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
    let mut out = (payload.len() as u32).to_be_bytes()[1..].to_vec();
    out.extend_from_slice(&[kind, flags]);
    out.extend_from_slice(&stream.to_be_bytes());
    out.extend_from_slice(payload);
    out
}

/// An HPACK string literal (no Huffman); lengths under 127.
fn hpack_string(text: &[u8], out: &mut Vec<u8>) {
    assert!(text.len() < 127);
    out.push(text.len() as u8);
    out.extend_from_slice(text);
}

/// What a grpc-core client (Python, C++) sends for GetStatus: the first
/// request adds `:path`, `:authority`, content-type and te to the HPACK
/// dynamic table; a repeat refers to them by index, as grpc-core's encoder
/// does.
fn get_status_headers(authority: &[u8], repeat: bool) -> Vec<u8> {
    let mut block = vec![0x83, 0x86]; // :method POST, :scheme http
    if repeat {
        // Newest entry is 62: te, content-type, :authority, :path.
        block.extend_from_slice(&[0x80 | 65, 0x80 | 64, 0x80 | 63, 0x80 | 62]);
        return block;
    }
    block.push(0x44); // :path, with incremental indexing
    hpack_string(b"/cuzk.v1.ProvingEngine/GetStatus", &mut block);
    block.push(0x41); // :authority, with incremental indexing
    hpack_string(authority, &mut block);
    block.push(0x40 | 31); // content-type (static 31), with incremental indexing
    hpack_string(b"application/grpc", &mut block);
    block.push(0x40); // te, new name, with incremental indexing
    hpack_string(b"te", &mut block);
    hpack_string(b"trailers", &mut block);
    block.push(0x00); // user-agent, new name, without indexing
    hpack_string(b"user-agent", &mut block);
    hpack_string(b"grpc-python/1.85.3 grpc-c/52.0.0 (linux; chttp2)", &mut block);
    block
}

/// GetStatus calls over one raw HTTP/2 connection to the socket, each with
/// `:authority` as given (`None`: the previous request's, by index).
/// Returns each call's grpc-status and decoded response, or the first
/// stream reset the daemon sent.
async fn raw_get_status(
    socket: &Path,
    authorities: &[Option<&str>],
) -> Result<Vec<(String, pb::GetStatusResponse)>, String> {
    use prost::Message;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = tokio::net::UnixStream::connect(socket).await.unwrap();
    let mut out = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".to_vec();
    out.extend(frame(0x4, 0, 0, &[])); // SETTINGS
    for (i, authority) in authorities.iter().enumerate() {
        let id = 1 + 2 * i as u32;
        let block = get_status_headers(authority.unwrap_or("").as_bytes(), authority.is_none());
        out.extend(frame(0x1, 0x4, id, &block)); // HEADERS, END_HEADERS
        out.extend(frame(0x0, 0x1, id, &[0, 0, 0, 0, 0])); // an empty GetStatusRequest, END_STREAM
    }
    stream.write_all(&out).await.unwrap();

    let mut decoder = fluke_hpack::Decoder::new();
    let mut results: Vec<(Option<String>, Vec<u8>)> = vec![(None, Vec::new()); authorities.len()];
    let mut buf = Vec::new();
    let mut open = authorities.len();
    while open > 0 {
        while buf.len() < 9 || buf.len() < 9 + (u32::from_be_bytes([0, buf[0], buf[1], buf[2]]) as usize) {
            let mut chunk = [0u8; 16 << 10];
            let n = stream.read(&mut chunk).await.unwrap();
            assert!(n > 0, "the daemon closed the connection");
            buf.extend_from_slice(&chunk[..n]);
        }
        let len = u32::from_be_bytes([0, buf[0], buf[1], buf[2]]) as usize;
        let (kind, flags) = (buf[3], buf[4]);
        let id = u32::from_be_bytes([buf[5], buf[6], buf[7], buf[8]]) & 0x7fff_ffff;
        let payload: Vec<u8> = buf.drain(..9 + len).skip(9).collect();
        let index = (id as usize).saturating_sub(1) / 2;
        match kind {
            0x4 if flags & 0x1 == 0 => stream.write_all(&frame(0x4, 0x1, 0, &[])).await.unwrap(),
            0x1 => {
                assert_eq!(flags & 0x4, 0x4, "the daemon's headers fit one frame");
                for (name, value) in decoder.decode(&payload).unwrap() {
                    if name == b":status" {
                        assert_eq!(value, b"200");
                    }
                    if name == b"grpc-status" {
                        results[index].0 = Some(String::from_utf8(value).unwrap());
                    }
                }
            }
            0x0 => results[index].1.extend_from_slice(&payload),
            0x3 => {
                return Err(format!(
                    "stream {id} reset with error {} (1 = PROTOCOL_ERROR)",
                    u32::from_be_bytes(payload[..4].try_into().unwrap())
                ))
            }
            0x7 => panic!("GOAWAY: {payload:?}"),
            _ => {}
        }
        if matches!(kind, 0x0 | 0x1) && flags & 0x1 != 0 {
            open -= 1;
        }
    }
    Ok(results
        .into_iter()
        .map(|(status, body)| {
            assert!(body.len() >= 5, "no response message");
            let len = u32::from_be_bytes(body[1..5].try_into().unwrap()) as usize;
            let response = pb::GetStatusResponse::decode(&body[5..5 + len]).unwrap();
            (status.expect("no grpc-status"), response)
        })
        .collect())
}

/// The `:authority` a grpc-core client sends on `socket` (for
/// `unix:///tmp/d/cuzk.sock`, `tmp%2Fd%2Fcuzk.sock`).
fn grpc_core_authority(socket: &Path) -> String {
    socket
        .to_str()
        .unwrap()
        .trim_start_matches('/')
        .replace('/', "%2F")
}

/// grpc-core clients send the percent-encoded socket path as `:authority`,
/// which h2 alone rejects with PROTOCOL_ERROR; with `[daemon]
/// unix_authority_fix` the daemon rewrites it (`localhost` is what older
/// clients and grpc-go send).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grpc_core_authorities_on_the_unix_socket_get_a_real_status() {
    let served = OnASocket::serving("unix_authority_fix = true", "022", &[]).await;
    let socket = &served.socket;

    let grpc_core = grpc_core_authority(socket);
    let calls = raw_get_status(
        socket,
        &[Some(grpc_core.as_str()), None, Some("localhost"), Some("")],
    )
    .await
    .unwrap();
    assert_eq!(calls.len(), 4);
    for (status, response) in calls {
        assert_eq!(status, "0");
        assert_eq!(response.gpus.len(), 1, "{response:?}");
        assert!(response.gpus[0].name.contains("CPU"), "{response:?}");
    }
}

/// The rewriter is opt-in: without `[daemon] unix_authority_fix` a
/// grpc-core `:authority` is refused (the client sets
/// `grpc.default_authority` instead, docs/OPERATING.md) and `localhost`
/// is answered.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_the_authority_fix_a_grpc_core_authority_is_refused_and_localhost_answered() {
    let served = OnASocket::serving("", "022", &[]).await;
    let socket = &served.socket;

    let localhost = raw_get_status(socket, &[Some("localhost")]).await.unwrap();
    assert_eq!(localhost[0].0, "0");
    let grpc_core = grpc_core_authority(socket);
    let refused = raw_get_status(socket, &[Some(grpc_core.as_str())]).await;
    assert!(
        refused.as_ref().is_err_and(|e| e.contains("error 1 ")),
        "{refused:?}"
    );
}

/// Regression (issue 34, item 6): a header block with a cut-off HPACK
/// integer panicked the socket's header rewriter (fluke-hpack's decoder)
/// before the token check; one client made 5,000 panics and 10.9 MB of log
/// in 1.9 s. Such a connection is closed with one warning, no panic, and
/// the daemon keeps serving, the token still guarding it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_malformed_header_block_on_the_unix_socket_closes_that_connection_only() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let served = OnASocket::serving("unix_authority_fix = true", "022", &[("CUZK_AUTH_TOKEN", TOKEN)]).await;
    let (socket, daemon) = (&served.socket, &served.daemon);

    // A dynamic table size update whose integer is cut off, then one that
    // runs past fluke-hpack's five octets.
    const CONNECTIONS: usize = 20;
    for i in 0..CONNECTIONS {
        let block: &[u8] = if i % 2 == 0 {
            &[0x3f]
        } else {
            &[0x3f, 0xff, 0xff, 0xff, 0xff, 0x0f, 0x82]
        };
        let mut stream = tokio::net::UnixStream::connect(socket).await.unwrap();
        let mut out = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".to_vec();
        out.extend(frame(0x4, 0, 0, &[])); // SETTINGS
        out.extend(frame(0x1, 0x5, 1, block)); // HEADERS, END_HEADERS | END_STREAM
        stream.write_all(&out).await.unwrap();
        // The daemon closes the connection (after its own SETTINGS, maybe).
        let mut sink = Vec::new();
        let closed = tokio::time::timeout(Duration::from_secs(10), stream.read_to_end(&mut sink)).await;
        assert!(closed.is_ok(), "the connection stayed open");
    }

    // Still serving on the socket, and still asking for the token.
    let socket_address = format!("unix://{}", socket.display());
    let mut client = client_with(&socket_address, &with_token()).await;
    assert!(client.get_status(pb::GetStatusRequest {}).await.is_ok());
    let mut tokenless = client_with(&socket_address, &ClientOptions::default()).await;
    assert_eq!(
        tokenless
            .get_status(pb::GetStatusRequest {})
            .await
            .unwrap_err()
            .code(),
        Code::Unauthenticated
    );
    let log = daemon.log();
    assert!(!log.contains("panicked"), "{log}");
    let warnings = log
        .lines()
        .filter(|l| l.contains("broke the HTTP/2 protocol"))
        .count();
    assert_eq!(warnings, CONNECTIONS, "{log}");
}

const TOKEN: &str = "0123456789abcdef-test-token-fedcba9876543210";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_token_guards_every_call_but_health_and_metrics() {
    let dir = tempfile::tempdir().unwrap();
    let token_file = dir.path().join("token");
    std::fs::write(&token_file, format!("{TOKEN}\n")).unwrap();
    std::fs::set_permissions(&token_file, std::fs::Permissions::from_mode(0o600)).unwrap();
    let (grpc, http) = (
        format!("127.0.0.1:{}", free_port()),
        format!("127.0.0.1:{}", free_port()),
    );
    let config = format!(
        "status_listen = \"{http}\"\nauth_token_file = \"{}\"",
        token_file.display()
    );
    let daemon = Proc::start(dir.path(), &grpc, &config, "022", &[]);
    let address = format!("http://{grpc}");
    let good = with_token();
    let mut client = client_with(&address, &good).await;
    // Up: wait for the first answer.
    let deadline = Instant::now() + Duration::from_secs(60);
    while client.get_status(pb::GetStatusRequest {}).await.is_err() {
        assert!(Instant::now() < deadline, "{}", daemon.log());
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    // No token, a wrong one, the right one with another scheme: UNAUTHENTICATED,
    // and no message repeats what was sent or expected.
    let none = ClientOptions::default();
    let wrong = ClientOptions {
        token: Some("not-the-token".into()),
        ..ClientOptions::default()
    };
    for options in [&none, &wrong] {
        let mut client = client_with(&address, options).await;
        let calls = [
            client.get_status(pb::GetStatusRequest {}).await.map(|_| ()),
            client
                .cancel_proof(pb::CancelProofRequest { job_id: "any".into() })
                .await
                .map(|_| ()),
            client
                .preload_srs(pb::PreloadSrsRequest {
                    circuit_id: "x".into(),
                })
                .await
                .map(|_| ()),
        ];
        for call in calls {
            let status = call.unwrap_err();
            assert_eq!(status.code(), Code::Unauthenticated, "{status:?}");
            assert!(!status.message().contains(TOKEN) && !status.message().contains("not-the-token"));
        }
    }
    let mut basic = ProvingEngineClient::new(common::connect(&grpc).await);
    let mut request = tonic::Request::new(pb::GetStatusRequest {});
    request
        .metadata_mut()
        .insert("authorization", format!("Basic {TOKEN}").parse().unwrap());
    assert_eq!(
        basic.get_status(request).await.unwrap_err().code(),
        Code::Unauthenticated
    );

    // Health checks need no token.
    common::assert_serving(common::connect(&grpc).await).await;

    // With the token, a proof goes through.
    let spec = common::spec(1 << 9, 1, 1);
    let job = client
        .submit_proof(common::synthetic_request(&spec))
        .await
        .unwrap()
        .into_inner()
        .job_id;
    let done = client
        .await_proof(pb::AwaitProofRequest {
            job_id: job,
            timeout_ms: 0,
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(
        done.status,
        pb::await_proof_response::Status::Completed as i32,
        "{}",
        done.error_message
    );
    assert!(!done.proof.is_empty());

    // HTTP: /status needs the token, /metrics does not.
    let bearer = format!("Bearer {TOKEN}");
    let refused = http_get(&http, "/status", None).await;
    assert!(refused.starts_with("HTTP/1.1 401"), "{refused}");
    assert!(!refused.contains(TOKEN));
    let refused = http_get(&http, "/status", Some("Bearer nope")).await;
    assert!(refused.starts_with("HTTP/1.1 401"), "{refused}");
    let status = http_get(&http, "/status", Some(&bearer)).await;
    assert!(status.starts_with("HTTP/1.1 200"), "{status}");
    assert!(status.contains("\"total_proofs_completed\":1"), "{status}");
    let metrics = http_get(&http, "/metrics", None).await;
    assert!(metrics.starts_with("HTTP/1.1 200"), "{metrics}");
    assert!(!daemon.log().contains(TOKEN), "the token reached the log");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_token_can_come_from_the_environment_and_guards_the_socket_too() {
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("cuzk.sock");
    let listen = format!("unix://{}", socket.display());
    let _daemon = Proc::start(dir.path(), &listen, "", "022", &[("CUZK_AUTH_TOKEN", TOKEN)]);
    let mut anonymous = ProvingEngineClient::new(common::connect(&listen).await);
    let status = anonymous.get_status(pb::GetStatusRequest {}).await.unwrap_err();
    assert_eq!(status.code(), Code::Unauthenticated);
    let mut client = client_with(&listen, &with_token()).await;
    client.get_status(pb::GetStatusRequest {}).await.unwrap();

    // A file and the environment at once is ambiguous: refused.
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("token"), TOKEN).unwrap();
    let config = format!("auth_token_file = \"{}\"", dir.path().join("token").display());
    let listen = format!("unix://{}", dir.path().join("cuzk.sock").display());
    let mut daemon = Proc::start(dir.path(), &listen, &config, "022", &[("CUZK_AUTH_TOKEN", TOKEN)]);
    assert!(!daemon.exit_status().success());
    assert!(daemon.log().contains("set only one"), "{}", daemon.log());
}

struct Pki {
    dir: tempfile::TempDir,
}

impl Pki {
    /// A CA, a server certificate for `localhost` / 127.0.0.1 and a client
    /// certificate, all signed by the CA, as PEM files; plus an unrelated CA.
    fn new() -> Self {
        use rcgen::{CertificateParams, DnType, IsCa, KeyPair};
        let dir = tempfile::tempdir().unwrap();
        let write = |name: &str, text: String| std::fs::write(dir.path().join(name), text).unwrap();
        let ca_key = KeyPair::generate().unwrap();
        let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
        ca_params.is_ca = IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        ca_params
            .distinguished_name
            .push(DnType::CommonName, "cuzk test CA");
        let ca = ca_params.self_signed(&ca_key).unwrap();
        let issuer = rcgen::Issuer::new(ca_params, ca_key);
        write("ca.pem", ca.pem());

        let server_key = KeyPair::generate().unwrap();
        let server = CertificateParams::new(vec!["localhost".to_string(), "127.0.0.1".to_string()])
            .unwrap()
            .signed_by(&server_key, &issuer)
            .unwrap();
        write("server.pem", server.pem());
        write("server.key", server_key.serialize_pem());

        let client_key = KeyPair::generate().unwrap();
        let mut client_params = CertificateParams::new(vec!["curio".to_string()]).unwrap();
        client_params.distinguished_name.push(DnType::CommonName, "curio");
        let client = client_params.signed_by(&client_key, &issuer).unwrap();
        write("client.pem", client.pem());
        write("client.key", client_key.serialize_pem());

        let other_key = KeyPair::generate().unwrap();
        let mut other = CertificateParams::new(Vec::<String>::new()).unwrap();
        other.is_ca = IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        write("other-ca.pem", other.self_signed(&other_key).unwrap().pem());
        Pki { dir }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_with_and_without_client_certificates() {
    let pki = Pki::new();
    let trusting = ClientOptions {
        tls_ca: Some(pki.path("ca.pem")),
        tls_domain: Some("localhost".into()),
        token: Some(TOKEN.into()),
        ..ClientOptions::default()
    };

    // Server TLS and the token.
    let (_dir, daemon, port) = tls_daemon(&pki, "");
    let address = format!("https://127.0.0.1:{port}");
    let mut client = client_with(&address, &trusting).await;
    let status = client.get_status(pb::GetStatusRequest {}).await;
    assert!(status.is_ok(), "{status:?}\n{}", daemon.log());
    // TLS alone is not enough: the token is still required.
    let mut tokenless = client_with(
        &address,
        &ClientOptions {
            token: None,
            ..trusting.clone()
        },
    )
    .await;
    assert_eq!(
        tokenless
            .get_status(pb::GetStatusRequest {})
            .await
            .unwrap_err()
            .code(),
        Code::Unauthenticated
    );
    // A client that trusts another CA, or speaks plain HTTP/2, gets nothing.
    let distrusting = ClientOptions {
        tls_ca: Some(pki.path("other-ca.pem")),
        ..trusting.clone()
    };
    assert!(cuzk_proto::connect_with(&address, &distrusting).await.is_err());
    let plain = cuzk_proto::connect_with(&format!("http://127.0.0.1:{port}"), &trusting).await;
    if let Ok(channel) = plain {
        let mut client = ProvingEngineClient::new(channel);
        assert!(client.get_status(pb::GetStatusRequest {}).await.is_err());
    }
    drop(daemon);

    // Mutual TLS: a client certificate signed by client_ca is required.
    let client_ca = format!("client_ca = \"{}\"", pki.path("ca.pem").display());
    let (_dir, daemon, port) = tls_daemon(&pki, &client_ca);
    let address = format!("https://127.0.0.1:{port}");
    let with_cert = ClientOptions {
        tls_cert: Some(pki.path("client.pem")),
        tls_key: Some(pki.path("client.key")),
        ..trusting.clone()
    };
    let mut client = client_with(&address, &with_cert).await;
    let status = client.get_status(pb::GetStatusRequest {}).await;
    assert!(status.is_ok(), "{status:?}\n{}", daemon.log());
    // Without a certificate the handshake or the first call fails.
    match cuzk_proto::connect_with(&address, &trusting).await {
        Err(_) => {}
        Ok(channel) => {
            let mut client = ProvingEngineClient::new(channel);
            assert!(client.get_status(pb::GetStatusRequest {}).await.is_err());
        }
    }
}

/// A daemon on a free loopback port serving TLS with the test PKI's server
/// certificate (and `extra`, more `[daemon.tls]` lines), its token
/// `TOKEN`: its directory (kept while it runs), the process and the port.
fn tls_daemon(pki: &Pki, extra: &str) -> (tempfile::TempDir, Proc, u16) {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let config = format!(
        "[daemon.tls]\ncert = \"{}\"\nkey = \"{}\"\n{extra}",
        pki.path("server.pem").display(),
        pki.path("server.key").display()
    );
    let listen = format!("127.0.0.1:{port}");
    let daemon = Proc::start(dir.path(), &listen, &config, "022", &[("CUZK_AUTH_TOKEN", TOKEN)]);
    (dir, daemon, port)
}

#[test]
fn bad_tls_files_stop_the_daemon_at_start_with_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("not-a-cert.pem"), "hello").unwrap();
    let config = format!(
        "[daemon.tls]\ncert = \"{0}/not-a-cert.pem\"\nkey = \"{0}/missing.key\"",
        dir.path().display()
    );
    // The daemon with these files stops at start; its log.
    let start_failing = || {
        let mut daemon = Proc::start(
            dir.path(),
            &format!("127.0.0.1:{}", free_port()),
            &config,
            "022",
            &[],
        );
        assert!(!daemon.exit_status().success());
        daemon.log()
    };
    let log = start_failing();
    assert!(
        log.contains("[daemon.tls] key") && log.contains("missing.key"),
        "{log}"
    );

    // Files that are there but hold no certificate or key.
    std::fs::write(dir.path().join("missing.key"), "not a key").unwrap();
    let log = start_failing();
    // The file at fault is named (issue 34, item 7).
    assert!(
        log.contains(&format!(
            "[daemon.tls] cert {}/not-a-cert.pem",
            dir.path().display()
        )),
        "{log}"
    );
}
