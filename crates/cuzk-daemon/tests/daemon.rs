//! The real daemon binary, on a free TCP port and on a Unix socket, driven
//! through its gRPC API. No mocks: every proof is checked with bellperson's
//! verifier against the `.vk` the daemon wrote.

use cuzk_core::ParameterCache;
use cuzk_core::ProofPlan;
use cuzk_proto::v1::{self as pb, proving_engine_client::ProvingEngineClient};
use cuzk_synthetic::SyntheticPlan;
use cuzk_synthetic::SyntheticSpec;
use std::process::{Command, Stdio};
use std::time::Duration;
use tonic::Code;

mod common;
use common::{
    await_job, check_proof, connect, free_port, http_get, preload, spec, status, Client, Daemon, Listen,
};
use pb::await_proof_response::Status;

fn submit_request(
    spec: &SyntheticSpec,
    kind: pb::ProofKind,
    priority: pb::Priority,
) -> pb::SubmitProofRequest {
    pb::SubmitProofRequest {
        proof_kind: kind as i32,
        registered_proof: cuzk_synthetic::SYNTHETIC_REGISTERED_PROOF,
        priority: priority as i32,
        vanilla_proof: spec.to_vanilla_proof(),
        ..Default::default()
    }
}

async fn submit(client: &mut Client, spec: &SyntheticSpec, priority: pb::Priority) -> String {
    client
        .submit_proof(submit_request(spec, pb::ProofKind::PorepSealCommit, priority))
        .await
        .unwrap()
        .into_inner()
        .job_id
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn fifty_concurrent_mixed_priority_jobs_complete_and_verify() {
    let daemon = Daemon::start(Listen::Tcp, "");
    let priorities = [
        pb::Priority::Low,
        pb::Priority::Normal,
        pb::Priority::High,
        pb::Priority::Critical,
    ];
    let kinds = [
        pb::ProofKind::PorepSealCommit,
        pb::ProofKind::WindowPostPartition,
        pb::ProofKind::WinningPost,
    ];
    let mut tasks = Vec::new();
    for i in 0..50u64 {
        let mut client = daemon.client();
        let s = spec(1 << 9, 1 + (i as usize % 2), i);
        let request = submit_request(&s, kinds[i as usize % 3], priorities[i as usize % 4]);
        tasks.push(tokio::spawn(async move {
            let job = client.submit_proof(request).await.unwrap().into_inner().job_id;
            (s, await_job(&mut client, &job, 0).await)
        }));
    }
    for task in tasks {
        let (s, response) = task.await.unwrap();
        check_proof(&daemon.params_dir(), &s, &response);
    }
    let status = status(&mut daemon.client()).await;
    assert_eq!(status.total_proofs_completed, 50);
    assert_eq!(status.total_proofs_failed, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn critical_job_completes_before_twenty_queued_normal_jobs() {
    let daemon = Daemon::start(
        Listen::Tcp,
        "[synthesis]\npartition_workers = 1\n[gpus]\ngpu_workers_per_device = 1\n",
    );
    let mut client = daemon.client();
    let size = 1 << 12;
    preload(&mut client, &spec(size, 1, 0)).await;

    let mut normal = Vec::new();
    for i in 0..20 {
        normal.push(submit(&mut client, &spec(size, 1, i), pb::Priority::Normal).await);
    }
    let critical_spec = spec(size, 1, 100);
    let critical = client
        .submit_proof(submit_request(
            &critical_spec,
            pb::ProofKind::WinningPost,
            pb::Priority::Unspecified,
        ))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(critical.queue_position, 0);
    let done = await_job(&mut client, &critical.job_id, 0).await;
    check_proof(&daemon.params_dir(), &critical_spec, &done);

    let mut still_waiting = 0;
    for job in &normal {
        if await_job(&mut client, job, 1).await.status == Status::Timeout as i32 {
            still_waiting += 1;
        }
    }
    // Only partitions already past the dispatcher when it arrived (one
    // synthesising, one in the hand-off, one proving) may finish first.
    assert!(
        still_waiting >= 17,
        "only {still_waiting} of 20 NORMAL jobs were still waiting"
    );
    for (i, job) in normal.iter().enumerate() {
        check_proof(
            &daemon.params_dir(),
            &spec(size, 1, i as u64),
            &await_job(&mut client, job, 0).await,
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn cancel_await_timeout_and_idempotent_resubmission() {
    let daemon = Daemon::start(
        Listen::Tcp,
        "[synthesis]\npartition_workers = 1\n[gpus]\ngpu_workers_per_device = 1\n",
    );
    let mut client = daemon.client();
    let long = submit(&mut client, &spec(1 << 13, 8, 1), pb::Priority::Normal).await;
    let queued = submit(&mut client, &spec(1 << 9, 1, 2), pb::Priority::Normal).await;

    let early = await_job(&mut client, &long, 100).await;
    assert_eq!(early.status, Status::Timeout as i32);

    let cancelled = client
        .cancel_proof(pb::CancelProofRequest {
            job_id: queued.clone(),
        })
        .await
        .unwrap();
    assert!(!cancelled.into_inner().was_running);
    assert_eq!(
        await_job(&mut client, &queued, 0).await.status,
        Status::Cancelled as i32
    );

    // Wait until the long job is running, then cancel it.
    loop {
        let status = status(&mut client).await;
        if status.queues.iter().any(|q| q.in_progress > 0) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let cancelled = client
        .cancel_proof(pb::CancelProofRequest { job_id: long.clone() })
        .await
        .unwrap();
    assert!(cancelled.into_inner().was_running);
    let result = await_job(&mut client, &long, 0).await;
    assert_eq!(result.status, Status::Cancelled as i32);
    assert!(result.proof.is_empty());

    let s = spec(1 << 9, 1, 3);
    let mut keyed = submit_request(&s, pb::ProofKind::PorepSealCommit, pb::Priority::Unspecified);
    keyed.request_id = "sector-1234-c2".into();
    let first = client
        .submit_proof(keyed.clone())
        .await
        .unwrap()
        .into_inner()
        .job_id;
    let second = client.submit_proof(keyed).await.unwrap().into_inner().job_id;
    assert_eq!(first, second, "same request_id, same job");
    check_proof(&daemon.params_dir(), &s, &await_job(&mut client, &first, 0).await);
    let status = status(&mut client).await;
    assert_eq!(
        status.total_proofs_completed, 1,
        "the resubmission did not prove twice"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn bad_requests_get_the_right_status_and_the_daemon_keeps_serving() {
    let daemon = Daemon::start(Listen::Tcp, "");
    let mut client = daemon.client();
    let good = spec(1 << 9, 1, 1);

    let mut unknown_kind = submit_request(&good, pb::ProofKind::PorepSealCommit, pb::Priority::Normal);
    unknown_kind.proof_kind = 99;
    assert_eq!(
        client.submit_proof(unknown_kind).await.unwrap_err().code(),
        Code::InvalidArgument
    );

    let unspecified = submit_request(&good, pb::ProofKind::Unspecified, pb::Priority::Normal);
    assert_eq!(
        client.submit_proof(unspecified).await.unwrap_err().code(),
        Code::InvalidArgument
    );

    let mut bad_priority = submit_request(&good, pb::ProofKind::PorepSealCommit, pb::Priority::Normal);
    bad_priority.priority = 42;
    assert_eq!(
        client.submit_proof(bad_priority).await.unwrap_err().code(),
        Code::InvalidArgument
    );

    let mut malformed = submit_request(&good, pb::ProofKind::PorepSealCommit, pb::Priority::Normal);
    malformed.vanilla_proof = b"{\"constraints\": ".to_vec();
    let error = client.submit_proof(malformed).await.unwrap_err();
    assert_eq!(error.code(), Code::InvalidArgument);
    assert!(error.message().contains("synthetic spec"), "{}", error.message());

    let mut empty = submit_request(&good, pb::ProofKind::PorepSealCommit, pb::Priority::Normal);
    empty.registered_proof = 8;
    empty.vanilla_proof.clear();
    assert_eq!(
        client.submit_proof(empty).await.unwrap_err().code(),
        Code::InvalidArgument
    );

    // A Filecoin proof type with something that is no C1 output.
    let mut not_c1 = submit_request(&good, pb::ProofKind::PorepSealCommit, pb::Priority::Normal);
    not_c1.registered_proof = 8;
    let error = client.submit_proof(not_c1).await.unwrap_err();
    assert_eq!(error.code(), Code::InvalidArgument);
    assert!(error.message().contains("C1 output"), "{}", error.message());

    // Non-interactive PoRep (an aggregate proof) is not served.
    let mut not_served = submit_request(&good, pb::ProofKind::PorepSealCommit, pb::Priority::Normal);
    not_served.registered_proof = 18;
    assert_eq!(
        client.submit_proof(not_served).await.unwrap_err().code(),
        Code::Unimplemented
    );

    let too_big = submit_request(
        &spec(1 << 30, 1, 1),
        pb::ProofKind::PorepSealCommit,
        pb::Priority::Normal,
    );
    assert_eq!(
        client.submit_proof(too_big).await.unwrap_err().code(),
        Code::InvalidArgument
    );

    let mut oversized = submit_request(&good, pb::ProofKind::PorepSealCommit, pb::Priority::Normal);
    oversized.vanilla_proof = vec![b' '; cuzk_proto::MAX_MESSAGE_BYTES + 1];
    let error = client.submit_proof(oversized).await.unwrap_err();
    assert!(
        matches!(error.code(), Code::ResourceExhausted | Code::OutOfRange),
        "{:?}: {}",
        error.code(),
        error.message()
    );

    let missing = client
        .await_proof(pb::AwaitProofRequest {
            job_id: "no-such-job".into(),
            timeout_ms: 0,
        })
        .await
        .unwrap_err();
    assert_eq!(missing.code(), Code::NotFound);
    let missing = client
        .cancel_proof(pb::CancelProofRequest {
            job_id: "nope".into(),
        })
        .await
        .unwrap_err();
    assert_eq!(missing.code(), Code::NotFound);
    let no_prove = client.prove(pb::ProveRequest { submit: None }).await.unwrap_err();
    assert_eq!(no_prove.code(), Code::InvalidArgument);
    let no_srs = client
        .preload_srs(pb::PreloadSrsRequest {
            circuit_id: "porep-32g".into(),
        })
        .await
        .unwrap_err();
    // Curio's name is the official 32 GiB PoRep file (issue 12.5), named
    // without the server's directory.
    assert_eq!(no_srs.code(), Code::FailedPrecondition);
    assert!(
        no_srs
            .message()
            .contains("v28-stacked-proof-of-replication-merkletree-poseidon_hasher-8-8-0")
            && no_srs.message().contains(".params"),
        "{}",
        no_srs.message()
    );
    assert!(
        !no_srs
            .message()
            .contains(&daemon.params_dir().display().to_string()),
        "no server path in errors: {}",
        no_srs.message()
    );
    // A path as a circuit id is refused, and does not say whether it exists.
    for id in ["/etc/hostname", "../../etc/passwd"] {
        let refused = client
            .preload_srs(pb::PreloadSrsRequest {
                circuit_id: id.into(),
            })
            .await
            .unwrap_err();
        assert_eq!(
            refused.code(),
            Code::InvalidArgument,
            "{id}: {}",
            refused.message()
        );
    }

    // Still serving: a good proof through the combined Prove call.
    let response = client
        .prove(pb::ProveRequest {
            submit: Some(submit_request(
                &good,
                pb::ProofKind::PorepSealCommit,
                pb::Priority::Normal,
            )),
        })
        .await
        .unwrap()
        .into_inner();
    check_proof(&daemon.params_dir(), &good, &response.result.unwrap());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn unix_socket_health_status_metrics_srs_and_timeline() {
    let daemon = Daemon::start(Listen::Unix, "");
    common::assert_serving(daemon.channel.clone()).await;

    let mut client = daemon.client();
    let s = spec(1 << 10, 3, 7);
    let id = SyntheticPlan::new(s.clone()).unwrap().circuit_id();
    let preload = client
        .preload_srs(pb::PreloadSrsRequest {
            circuit_id: id.clone(),
        })
        .await
        .unwrap()
        .into_inner();
    assert!(!preload.already_loaded);
    let again = client
        .preload_srs(pb::PreloadSrsRequest {
            circuit_id: id.clone(),
        })
        .await
        .unwrap()
        .into_inner();
    assert!(again.already_loaded);

    let job = submit(&mut client, &s, pb::Priority::Unspecified).await;
    let response = await_job(&mut client, &job, 0).await;
    check_proof(&daemon.params_dir(), &s, &response);
    assert!(response.total_ms >= response.gpu_compute_ms / 3);

    let status = status(&mut client).await;
    assert_eq!(status.gpus.len(), 1);
    assert!(status.gpus[0].name.contains("CPU"));
    let srs = status.loaded_srs.iter().find(|s| s.circuit_id == id).unwrap();
    assert_eq!(srs.tier, pb::srs_status::Tier::Warm as i32);
    assert!(srs.size_bytes > 0);
    let metrics = common::metrics(&mut client).await;
    assert!(
        metrics.contains("cuzk_jobs_finished_total{kind=\"porep\",status=\"completed\"} 1"),
        "{metrics}"
    );
    assert!(
        metrics.contains("cuzk_partition_phase_seconds_count{phase=\"synthesis\"} 3"),
        "{metrics}"
    );

    let evicted = client
        .evict_srs(pb::EvictSrsRequest {
            circuit_id: id.clone(),
        })
        .await
        .unwrap()
        .into_inner();
    assert!(evicted.was_loaded && evicted.freed_bytes > 0);

    // Every partition has its seven TIMELINE events, in order.
    let log = daemon.log();
    for partition in 0..3 {
        let events: Vec<&str> = log
            .lines()
            .filter(|l| l.contains("TIMELINE") && l.contains(&format!("job={job} partition={partition} ")))
            .filter_map(|l| l.split("event=").nth(1)?.split_whitespace().next())
            .collect();
        assert_eq!(
            events,
            [
                "synthesis_start",
                "synthesis_end",
                "queued_for_prover",
                "picked_up",
                "prover_start",
                "prover_gpu_end",
                "prover_end"
            ],
            "partition {partition}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sigterm_under_load_leaves_no_job_without_a_final_status() {
    let mut daemon = Daemon::start(
        Listen::Tcp,
        "[synthesis]\npartition_workers = 1\n[gpus]\ngpu_workers_per_device = 1\n",
    );
    let mut client = daemon.client();
    let mut waiters = Vec::new();
    for i in 0..10 {
        let job = submit(&mut client, &spec(1 << 12, 2, i), pb::Priority::Normal).await;
        let mut waiter = daemon.client();
        waiters.push(tokio::spawn(async move { await_job(&mut waiter, &job, 0).await }));
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    daemon.signal("TERM");
    tokio::time::sleep(Duration::from_millis(100)).await;
    let refused = client
        .submit_proof(submit_request(
            &spec(1 << 9, 1, 1),
            pb::ProofKind::PorepSealCommit,
            pb::Priority::Normal,
        ))
        .await;
    match refused {
        Err(status) => assert!(matches!(status.code(), Code::Unavailable)),
        Ok(_) => panic!("a submission during shutdown was accepted"),
    }
    let (mut completed, mut cancelled) = (0, 0);
    for waiter in waiters {
        let result = waiter.await.unwrap();
        match Status::try_from(result.status).unwrap() {
            Status::Completed => completed += 1,
            Status::Cancelled => {
                cancelled += 1;
                assert!(
                    result.error_message.contains("shutting down"),
                    "{}",
                    result.error_message
                );
            }
            other => panic!("job left as {other:?}"),
        }
    }
    assert_eq!(completed + cancelled, 10);
    let exit = daemon.child.wait().unwrap();
    assert!(exit.success(), "daemon exited with {exit}");
    assert!(daemon.log().contains("every accepted job has a final status"));
}

/// Regression (issue 12.8): a job that finished during shutdown could not
/// be collected (214 of 600 late awaits got UNAVAILABLE: the daemon exited
/// as soon as the engine stopped). Its result stays collectable until it has
/// been awaited or the grace period ends, and then the daemon exits.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_job_finished_during_shutdown_can_still_be_awaited() {
    let mut daemon = Daemon::start(Listen::Tcp, "[daemon]\nshutdown_grace_secs = 60\n");
    let mut client = daemon.client();
    let s = spec(1 << 10, 2, 41);
    let job = submit(&mut client, &s, pb::Priority::Normal).await;
    daemon.signal("TERM");
    // Long enough for the job to finish and the engine to stop; nobody has
    // awaited it yet.
    let log_says = |daemon: &Daemon| daemon.log().contains("every accepted job has a final status");
    let deadline = std::time::Instant::now() + Duration::from_secs(120);
    while !log_says(&daemon) {
        assert!(std::time::Instant::now() < deadline, "the engine never stopped");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let response = await_job(&mut client, &job, 0).await;
    assert_eq!(
        Status::try_from(response.status).unwrap(),
        Status::Completed,
        "{}",
        response.error_message
    );
    check_proof(&daemon.params_dir(), &s, &response);
    // Collected: the daemon exits well before the 60 s grace period.
    let started = std::time::Instant::now();
    let exit = daemon.child.wait().unwrap();
    assert!(exit.success(), "daemon exited with {exit}");
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "exited only after {:?}",
        started.elapsed()
    );
}

/// Regression (issue 34, item 4): jobs cancelled at the end of the grace
/// period could not be collected by a client that was not already waiting
/// (310 of 600 late awaits got UNAVAILABLE): the collect loop's deadline,
/// the end of the grace period, had passed when the engine returned, so the
/// server stopped milliseconds later. Their results stay collectable, and
/// the daemon exits as soon as all have been.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_job_cancelled_at_the_end_of_shutdown_can_still_be_awaited() {
    // No grace: every job still in flight is cancelled at once.
    let mut daemon = Daemon::start(
        Listen::Tcp,
        "[daemon]\nshutdown_grace_secs = 0\n[synthesis]\npartition_workers = 1\n",
    );
    let mut client = daemon.client();
    let mut jobs = Vec::new();
    for seed in 0..4 {
        jobs.push(submit(&mut client, &spec(1 << 13, 2, 60 + seed), pb::Priority::Normal).await);
    }
    daemon.signal("TERM");
    let log_says = |daemon: &Daemon| daemon.log().contains("every accepted job has a final status");
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while !log_says(&daemon) {
        assert!(std::time::Instant::now() < deadline, "the engine never stopped");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // Nobody was waiting; a client comes to collect a moment later.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let mut cancelled = 0;
    for job in &jobs {
        let response = client
            .await_proof(pb::AwaitProofRequest {
                job_id: job.clone(),
                timeout_ms: 0,
            })
            .await
            .unwrap_or_else(|e| panic!("awaiting {job} after the engine stopped: {e:?}"))
            .into_inner();
        match Status::try_from(response.status).unwrap() {
            Status::Completed => {}
            Status::Cancelled => {
                cancelled += 1;
                assert!(
                    response.error_message.contains("shutting down"),
                    "{}",
                    response.error_message
                );
            }
            other => panic!("job {job} left as {other:?}"),
        }
    }
    assert!(cancelled > 0, "no job was still in flight at SIGTERM");
    // All collected: the daemon exits without waiting out its collect window.
    let collected = std::time::Instant::now();
    let exit = daemon.child.wait().unwrap();
    assert!(exit.success(), "daemon exited with {exit}");
    assert!(
        collected.elapsed() < Duration::from_secs(5),
        "exited only after {:?}",
        collected.elapsed()
    );
}

/// Regression (issue 34, item 7): serde quoted a malformed value whole, so
/// a 10 KB string in a synthetic spec came back in the error, too large for
/// gRPC's metadata: the client saw a transport error instead of
/// INVALID_ARGUMENT. Client input is echoed a few dozen characters at most,
/// in every error.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn long_junk_in_a_request_is_refused_with_a_short_message() {
    let daemon = Daemon::start(Listen::Tcp, "");
    let mut client = daemon.client();
    let junk = "A".repeat(10_000);
    let short = |status: &tonic::Status| {
        assert!(
            status.message().len() < 300 && !status.message().contains(&"A".repeat(100)),
            "{} bytes: {:.300}",
            status.message().len(),
            status.message()
        );
    };
    for spec in [
        format!(r#"{{"constraints": "{junk}", "partitions": 1}}"#),
        format!(r#"{{"{junk}": 1}}"#),
        format!(r#"{{"witness": "{junk}"}}"#),
    ] {
        let mut request = submit_request(
            &SyntheticSpec::default(),
            pb::ProofKind::PorepSealCommit,
            pb::Priority::Normal,
        );
        request.vanilla_proof = spec.into_bytes();
        let status = client.submit_proof(request).await.unwrap_err();
        assert_eq!(status.code(), Code::InvalidArgument, "{:.300}", status.message());
        assert!(
            status.message().contains("synthetic spec"),
            "{:.300}",
            status.message()
        );
        short(&status);
    }
    let status = client
        .await_proof(pb::AwaitProofRequest {
            job_id: junk.clone(),
            timeout_ms: 1,
        })
        .await
        .unwrap_err();
    assert_eq!(status.code(), Code::NotFound, "{:.300}", status.message());
    short(&status);
    let status = client
        .preload_srs(pb::PreloadSrsRequest {
            circuit_id: junk.clone(),
        })
        .await
        .unwrap_err();
    assert!(
        !matches!(status.code(), Code::Internal | Code::Unknown),
        "{:?}: {:.300}",
        status.code(),
        status.message()
    );
    short(&status);
}

/// Sends raw bytes as a request message, whatever they decode to.
#[derive(Debug, Clone, Default)]
struct RawCodec;

impl tonic::codec::Codec for RawCodec {
    type Encode = Vec<u8>;
    type Decode = Vec<u8>;
    type Encoder = RawCodec;
    type Decoder = RawCodec;
    fn encoder(&mut self) -> RawCodec {
        RawCodec
    }
    fn decoder(&mut self) -> RawCodec {
        RawCodec
    }
}

impl tonic::codec::Encoder for RawCodec {
    type Item = Vec<u8>;
    type Error = tonic::Status;
    fn encode(&mut self, item: Vec<u8>, buf: &mut tonic::codec::EncodeBuf<'_>) -> Result<(), tonic::Status> {
        bytes::BufMut::put_slice(buf, &item);
        Ok(())
    }
}

impl tonic::codec::Decoder for RawCodec {
    type Item = Vec<u8>;
    type Error = tonic::Status;
    fn decode(&mut self, buf: &mut tonic::codec::DecodeBuf<'_>) -> Result<Option<Vec<u8>>, tonic::Status> {
        let n = bytes::Buf::remaining(buf);
        Ok(Some(bytes::Buf::copy_to_bytes(buf, n).to_vec()))
    }
}

/// Regression (issue 12.7): a message that does not decode was INTERNAL
/// (a server fault) instead of INVALID_ARGUMENT; the daemon keeps serving.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn undecodable_messages_are_invalid_arguments() {
    let daemon = Daemon::start(Listen::Tcp, "");
    let mut grpc = tonic::client::Grpc::new(daemon.channel.clone());
    for (method, garbage) in [
        ("/cuzk.v1.ProvingEngine/SubmitProof", vec![0xff; 16]),
        (
            "/cuzk.v1.ProvingEngine/AwaitProof",
            vec![0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f],
        ),
        ("/cuzk.v1.ProvingEngine/PreloadSRS", vec![0x12]),
    ] {
        grpc.ready().await.unwrap();
        let status = grpc
            .unary::<Vec<u8>, Vec<u8>, RawCodec>(
                tonic::Request::new(garbage),
                tonic::codegen::http::uri::PathAndQuery::from_static(method),
                RawCodec,
            )
            .await
            .unwrap_err();
        assert_eq!(status.code(), Code::InvalidArgument, "{method}: {status:?}");
    }
    let mut client = daemon.client();
    let s = spec(1 << 9, 1, 51);
    let job = submit(&mut client, &s, pb::Priority::Normal).await;
    check_proof(&daemon.params_dir(), &s, &await_job(&mut client, &job, 0).await);
}

fn rss_kib(pid: u32, field: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = status.lines().find(|l| l.starts_with(field)).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn small_memory_budget_bounds_peak_rss() {
    let size = 1 << 16;
    let per_partition = cuzk_core::plan::partition_bytes(size, size);
    // Generate the parameters here so the daemon only loads them.
    let dir = tempfile::tempdir().unwrap();
    let plan = SyntheticPlan::new(spec(size, 1, 0)).unwrap();
    let circuit = cuzk_core::SyntheticCircuit::new(size, vec![cuzk_core::Scalar::from(0u64); 2], 0).unwrap();
    let cache = ParameterCache::new(dir.path().join("params")).unwrap();
    cache.load_or_generate(&plan.circuit_id(), || circuit).unwrap();
    // The budget counts the parameters too (resident before the baseline
    // below): room for them and two partitions.
    let parameters = std::fs::metadata(cache.params_path(&plan.circuit_id()))
        .unwrap()
        .len();
    let partitions = 2 * per_partition;
    let budget = partitions + parameters;

    let daemon = Daemon::start_in(
        dir,
        Listen::Tcp,
        &format!(
            "[synthesis]\npartition_workers = 6\n[gpus]\ngpu_workers_per_device = 2\n\
             [pipeline]\nmax_gpu_queue_depth = 6\n[memory]\ntotal_budget = {budget}\n"
        ),
    );
    let mut client = daemon.client();
    let preload = client
        .preload_srs(pb::PreloadSrsRequest {
            circuit_id: plan.circuit_id(),
        })
        .await
        .unwrap();
    assert!(!preload.into_inner().already_loaded);
    // Reset the high-water mark so it covers only the proving that follows.
    std::fs::write(format!("/proc/{}/clear_refs", daemon.pid()), "5").unwrap();
    let baseline = rss_kib(daemon.pid(), "VmRSS:") * 1024;

    let mut waiters = Vec::new();
    for i in 0..12 {
        let s = spec(size, 2, i);
        let job = submit(&mut client, &s, pb::Priority::Normal).await;
        let mut waiter = daemon.client();
        waiters.push(tokio::spawn(
            async move { (s, await_job(&mut waiter, &job, 0).await) },
        ));
    }
    for waiter in waiters {
        let (s, result) = waiter.await.unwrap();
        check_proof(&daemon.params_dir(), &s, &result);
    }
    let peak = rss_kib(daemon.pid(), "VmHWM:") * 1024;
    let growth = peak.saturating_sub(baseline);
    // Allowance for thread stacks, the transient G2 MSM buffers of the
    // partitions finishing after their permit is returned, and allocator slack.
    let allowance = 48 << 20;
    println!(
        "baseline {} MiB, peak {} MiB, growth {} MiB, budget {} MiB",
        baseline >> 20,
        peak >> 20,
        growth >> 20,
        budget >> 20
    );
    assert!(
        growth <= partitions + allowance,
        "peak RSS grew {} MiB over the baseline; the budget's {} MiB for partitions + allowance {} MiB",
        growth >> 20,
        partitions >> 20,
        allowance >> 20
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn starts_without_a_config_file_and_serves_http_status() {
    let dir = tempfile::tempdir().unwrap();
    let (grpc, http) = (
        format!("127.0.0.1:{}", free_port()),
        format!("127.0.0.1:{}", free_port()),
    );
    let mut child = Command::new(env!("CARGO_BIN_EXE_cuzk-daemon"))
        .args([
            "--listen",
            &grpc,
            "--status-listen",
            &http,
            "--log-level",
            "warn",
            "--param-cache",
        ])
        .arg(dir.path())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let channel = connect(&grpc).await;
    let mut client = ProvingEngineClient::new(channel);
    let s = spec(1 << 9, 1, 5);
    let job = submit(&mut client, &s, pb::Priority::High).await;
    check_proof(dir.path(), &s, &await_job(&mut client, &job, 0).await);

    let status = http_get(&http, "/status", None).await;
    assert!(status.starts_with("HTTP/1.1 200"), "{status}");
    let body = status.split("\r\n\r\n").nth(1).unwrap();
    let json: serde_json::Value = serde_json::from_str(body).unwrap();
    assert_eq!(json["total_proofs_completed"], 1);
    assert_eq!(json["accepting"], true);
    let metrics = http_get(&http, "/metrics", None).await;
    assert!(metrics.starts_with("HTTP/1.1 200"), "{metrics}");
    assert!(
        metrics.contains("cuzk_jobs_submitted_total{kind=\"porep\"} 1"),
        "{metrics}"
    );
    assert!(http_get(&http, "/nope", None).await.starts_with("HTTP/1.1 404"));

    let _ = Command::new("kill")
        .arg("-INT")
        .arg(child.id().to_string())
        .status();
    let exit = child.wait().unwrap();
    assert!(exit.success(), "exit on SIGINT: {exit}");
}

/// The probe's case of issue 34.1, over gRPC: `{"constraints":67108864,
/// "partitions":1}` and PreloadSRS of `synthetic-v1-n134217728-i2` were
/// accepted and grew the daemon by about 100 MiB/s until the host ran out
/// of memory. Both are RESOURCE_EXHAUSTED at once, naming the sizes; the
/// daemon does not grow and goes on serving.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_request_whose_parameters_cannot_fit_is_refused_and_the_daemon_does_not_grow() {
    // The budget of a large host: a partition of the request fits it, the
    // generation of its parameters does not.
    let daemon = Daemon::start(Listen::Tcp, "[memory]\ntotal_budget = \"64GiB\"\n");
    let mut client = daemon.client();
    let before = rss_kib(daemon.pid(), "VmRSS:");
    let refused = client
        .submit_proof(submit_request(
            &spec(1 << 26, 1, 1),
            pb::ProofKind::PorepSealCommit,
            pb::Priority::Normal,
        ))
        .await
        .unwrap_err();
    assert_eq!(refused.code(), Code::ResourceExhausted, "{}", refused.message());
    assert!(refused.message().contains("MiB"), "{}", refused.message());
    let refused = client
        .preload_srs(pb::PreloadSrsRequest {
            circuit_id: "synthetic-v1-n134217728-i2".into(),
        })
        .await
        .unwrap_err();
    assert_eq!(refused.code(), Code::ResourceExhausted, "{}", refused.message());
    // Nothing is being generated: the daemon stays its size.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let after = rss_kib(daemon.pid(), "VmRSS:");
    assert!(
        after < before + 64 * 1024,
        "grew from {before} KiB to {after} KiB"
    );
    let s = spec(1 << 10, 1, 2);
    let job = submit(&mut client, &s, pb::Priority::Normal).await;
    let result = await_job(&mut client, &job, 0).await;
    check_proof(&daemon.params_dir(), &s, &result);
}

/// The probe's cases of issue 34.2, over gRPC: a tiny PreloadSRS waited
/// 13.3 s behind a large generation, and a CRITICAL 2^10 job submitted
/// during one timed out. With one synthesis worker and a 2^16 generation
/// running (seconds here), both finish while it still runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_large_generation_delays_no_other_circuit() {
    let daemon = Daemon::start(Listen::Tcp, "[synthesis]\npartition_workers = 1\n");
    let mut client = daemon.client();
    let large = submit(&mut client, &spec(1 << 16, 1, 1), pb::Priority::Normal).await;
    let tiny = cuzk_core::SyntheticCircuit::new(1 << 9, vec![cuzk_core::Scalar::from(0u64); 2], 0)
        .unwrap()
        .circuit_id();
    client
        .preload_srs(pb::PreloadSrsRequest { circuit_id: tiny })
        .await
        .unwrap();
    let s = spec(1 << 9, 1, 2);
    let urgent = submit(&mut client, &s, pb::Priority::Critical).await;
    let result = await_job(&mut client, &urgent, 0).await;
    check_proof(&daemon.params_dir(), &s, &result);
    let still = await_job(&mut client, &large, 1).await;
    assert_eq!(
        still.status,
        Status::Timeout as i32,
        "the large job finished first: the generation was too short to tell"
    );
    let done = await_job(&mut client, &large, 0).await;
    assert_eq!(done.status, Status::Completed as i32, "{}", done.error_message);
}
