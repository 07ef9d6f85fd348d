//! The daemon test harness: the real binary on a free TCP port or a Unix
//! socket, its own parameter directory and log file.

#![allow(dead_code)] // each test binary uses part of it

#[path = "../../../cuzk-cluster/tests/database/mod.rs"]
pub mod database;
pub mod pool;

use cuzk_proto::v1::{self as pb, proving_engine_client::ProvingEngineClient};
use std::collections::BTreeSet;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};
use tonic::transport::Channel;

pub type Client = ProvingEngineClient<Channel>;

pub enum Listen {
    Tcp,
    Unix,
}

/// A free TCP port on 127.0.0.1 for a daemon to bind, never the same one
/// twice in this test process. The tests run in parallel, and between a
/// probe's bind here and its daemon's the kernel may hand the same free
/// port to another test's probe: two daemons then race for one port, one
/// fails to bind, and its test talks to the other test's daemon (the
/// likely cause of a failure seen once in a full test run on a loaded
/// machine: a malformed request answered Unavailable, as a daemon that
/// another test was stopping answers, instead of InvalidArgument).
pub fn free_port() -> u16 {
    static GIVEN: Mutex<BTreeSet<u16>> = Mutex::new(BTreeSet::new());
    let mut given = GIVEN.lock().unwrap_or_else(|e| e.into_inner());
    loop {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        if given.insert(port) {
            return port;
        }
    }
}

/// A daemon process with its own parameter directory and log file.
pub struct Daemon {
    pub child: Child,
    pub dir: tempfile::TempDir,
    pub channel: Channel,
    pub params: PathBuf,
}

impl Daemon {
    pub fn start(listen: Listen, extra_config: &str) -> Self {
        Self::start_in(tempfile::tempdir().unwrap(), listen, extra_config)
    }

    pub fn start_in(dir: tempfile::TempDir, listen: Listen, extra_config: &str) -> Self {
        let params = dir.path().join("params");
        Self::start_with_params(dir, &params, listen, extra_config)
    }

    /// A daemon over an existing parameter directory (e.g. generated
    /// Filecoin parameters kept between test runs).
    pub fn start_with_params(
        dir: tempfile::TempDir,
        params: &std::path::Path,
        listen: Listen,
        extra_config: &str,
    ) -> Self {
        let params = params.to_path_buf();
        let address = match listen {
            Listen::Tcp => format!("127.0.0.1:{}", free_port()),
            Listen::Unix => format!("unix://{}", dir.path().join("cuzk.sock").display()),
        };
        // Keys of a leading `[daemon]` table in `extra_config` join the
        // harness's own `[daemon]` table (TOML allows a table once).
        let (daemon_keys, extra_config) = match extra_config.strip_prefix("[daemon]\n") {
            Some(rest) => rest.split_at(rest.find("\n[").map_or(rest.len(), |i| i + 1)),
            None => ("", extra_config),
        };
        let grace = if daemon_keys.contains("shutdown_grace_secs") {
            ""
        } else {
            "shutdown_grace_secs = 2\n"
        };
        let config = format!(
            "[daemon]\nlisten = \"{address}\"\n{grace}{daemon_keys}\
             [srs]\nparam_cache = \"{}\"\n\
             [logging]\nlevel = \"info\"\n{extra_config}",
            params.display()
        );
        let config_path = dir.path().join("cuzk.toml");
        std::fs::write(&config_path, config).unwrap();
        let log = std::fs::File::create(dir.path().join("daemon.log")).unwrap();
        let child = Command::new(env!("CARGO_BIN_EXE_cuzk-daemon"))
            .arg("--config")
            .arg(&config_path)
            // Small test partitions would otherwise sit in glibc's heap arenas
            // after being freed; real partitions (GBs) are mmapped anyway.
            .env("MALLOC_MMAP_THRESHOLD_", "65536")
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap();
        let runtime = tokio::runtime::Handle::current();
        let channel = std::thread::scope(|s| s.spawn(|| runtime.block_on(connect(&address))).join().unwrap());
        Daemon {
            child,
            dir,
            channel,
            params,
        }
    }

    pub fn client(&self) -> Client {
        ProvingEngineClient::new(self.channel.clone())
            .max_decoding_message_size(cuzk_proto::MAX_MESSAGE_BYTES)
            .max_encoding_message_size(512 << 20)
    }

    pub fn params_dir(&self) -> PathBuf {
        self.params.clone()
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("daemon.log")).unwrap()
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    pub fn signal(&self, name: &str) {
        let status = Command::new("kill")
            .arg(format!("-{name}"))
            .arg(self.pid().to_string())
            .status()
            .unwrap();
        assert!(status.success());
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub async fn connect(address: &str) -> Channel {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let target = if address.starts_with("unix://") {
            address.to_string()
        } else {
            format!("http://{address}")
        };
        let attempt = cuzk_proto::connect(&target).await;
        match attempt {
            Ok(channel) => return channel,
            Err(e) if Instant::now() > deadline => panic!("daemon did not come up at {address}: {e}"),
            Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
        }
    }
}

pub async fn await_job(client: &mut Client, job_id: &str, timeout_ms: u64) -> pb::AwaitProofResponse {
    client
        .await_proof(pb::AwaitProofRequest {
            job_id: job_id.to_string(),
            timeout_ms,
        })
        .await
        .unwrap()
        .into_inner()
}

/// bellperson's verifier over every partition of a returned proof.
pub fn check_proof(
    params_dir: &std::path::Path,
    spec: &cuzk_synthetic::SyntheticSpec,
    response: &pb::AwaitProofResponse,
) {
    assert_eq!(
        response.status,
        pb::await_proof_response::Status::Completed as i32,
        "{}",
        response.error_message
    );
    let plan = cuzk_synthetic::SyntheticPlan::new(spec.clone()).unwrap();
    let cache = cuzk_core::ParameterCache::new(params_dir).unwrap();
    let vk = cuzk_core::params::read_vk(
        &cache
            .params_path(&cuzk_core::ProofPlan::circuit_id(&plan))
            .with_extension("vk"),
    )
    .unwrap();
    let verifier = cuzk_core::Verifier::new(&vk);
    assert_eq!(response.proof.len(), cuzk_core::PROOF_BYTES * spec.partitions);
    for (index, chunk) in response.proof.chunks(cuzk_core::PROOF_BYTES).enumerate() {
        let proof = cuzk_core::Proof::<cuzk_core::Bls12>::read(chunk).unwrap();
        assert!(
            verifier
                .verify(&proof, &cuzk_core::ProofPlan::public_inputs(&plan, index))
                .unwrap(),
            "partition {index}"
        );
    }
}

/// A synthetic proof's spec (two public inputs).
pub fn spec(constraints: usize, partitions: usize, seed: u64) -> cuzk_synthetic::SyntheticSpec {
    cuzk_synthetic::SyntheticSpec {
        constraints,
        partitions,
        inputs: 2,
        seed,
        ..cuzk_synthetic::SyntheticSpec::default()
    }
}

/// `GET path` on the daemon's HTTP endpoint (waiting up to 30 s for it to
/// listen), with an optional `Authorization` header; the raw response.
pub async fn http_get(addr: &str, path: &str, authorization: Option<&str>) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut stream = loop {
        match tokio::net::TcpStream::connect(addr).await {
            Ok(s) => break s,
            Err(e) if Instant::now() > deadline => panic!("{addr}: {e}"),
            Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
        }
    };
    let auth = authorization.map_or(String::new(), |a| format!("Authorization: {a}\r\n"));
    stream
        .write_all(
            format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\n{auth}Connection: close\r\n\r\n").as_bytes(),
        )
        .await
        .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).await.unwrap();
    response
}

/// The request for a synthetic proof of `spec` (a PoRep commit, normal
/// priority, no request id).
pub fn synthetic_request(spec: &cuzk_synthetic::SyntheticSpec) -> pb::SubmitProofRequest {
    pb::SubmitProofRequest {
        proof_kind: pb::ProofKind::PorepSealCommit as i32,
        registered_proof: cuzk_synthetic::SYNTHETIC_REGISTERED_PROOF,
        vanilla_proof: spec.to_vanilla_proof(),
        ..Default::default()
    }
}

/// Submits `request`; its job id.
pub async fn submit_job(client: &mut Client, request: pb::SubmitProofRequest) -> String {
    client.submit_proof(request).await.unwrap().into_inner().job_id
}

/// The daemon's GetStatus answer.
pub async fn status(client: &mut Client) -> pb::GetStatusResponse {
    client
        .get_status(pb::GetStatusRequest {})
        .await
        .unwrap()
        .into_inner()
}

/// The daemon's metrics, as GetMetrics returns them (Prometheus text).
pub async fn metrics(client: &mut Client) -> String {
    client
        .get_metrics(pb::GetMetricsRequest {})
        .await
        .unwrap()
        .into_inner()
        .prometheus_text
}

/// Loads the parameters of `spec`'s circuit (generating them on first
/// use), as a PreloadSRS call does.
pub async fn preload(client: &mut Client, spec: &cuzk_synthetic::SyntheticSpec) {
    let circuit_id =
        cuzk_core::ProofPlan::circuit_id(&cuzk_synthetic::SyntheticPlan::new(spec.clone()).unwrap());
    client
        .preload_srs(pb::PreloadSrsRequest { circuit_id })
        .await
        .unwrap();
}

/// The health service at `channel` says the engine is serving (a check
/// that needs no token).
pub async fn assert_serving(channel: Channel) {
    let mut health = tonic_health::pb::health_client::HealthClient::new(channel);
    let serving = health
        .check(tonic_health::pb::HealthCheckRequest {
            service: "cuzk.v1.ProvingEngine".into(),
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(
        serving.status,
        tonic_health::pb::health_check_response::ServingStatus::Serving as i32
    );
}
