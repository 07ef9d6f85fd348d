//! Cluster mode: three real daemon processes on one PostgreSQL queue
//! (see `common/pool.rs` for the database). Every proof is checked with
//! bellperson's verifier; "exactly once" is read from the queue (each job's
//! attempts and the daemon whose result it recorded) and from the daemons'
//! own counts of proofs completed.

use cuzk_cluster::JobState;
use cuzk_proto::v1 as pb;
use cuzk_synthetic::SyntheticSpec;
use std::collections::HashMap;
use std::time::{Duration, Instant};

mod common;
use common::pool::{completed_here, Pool};
use common::{await_job, check_proof, preload, spec};

fn request(spec: &SyntheticSpec, request_id: &str) -> pb::SubmitProofRequest {
    pb::SubmitProofRequest {
        request_id: request_id.into(),
        ..common::synthetic_request(spec)
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn fifty_jobs_round_robin_complete_once_and_any_daemon_returns_them() {
    let Some(pool) = Pool::new("fifty", 3_000).await else {
        return;
    };
    let daemons = pool.three_daemons(&spec(1 << 9, 1, 0)).await;
    let mut tasks = Vec::new();
    for i in 0..50u64 {
        // Submitted to one daemon, awaited on the next.
        let mut submit_to = daemons[i as usize % 3].client();
        let mut await_on = daemons[(i as usize + 1) % 3].client();
        let s = spec(1 << 9, 1, 100 + i);
        tasks.push(tokio::spawn(async move {
            let job = submit_to
                .submit_proof(request(&s, ""))
                .await
                .unwrap()
                .into_inner()
                .job_id;
            (s, job.clone(), await_job(&mut await_on, &job, 120_000).await)
        }));
    }
    let mut by_daemon: HashMap<String, u64> = HashMap::new();
    for task in tasks {
        let (s, job, response) = task.await.unwrap();
        check_proof(pool.params_dir(), &s, &response);
        let record = pool.record(&job).await;
        assert_eq!((record.state, record.attempts), (JobState::Completed, 1), "{job}");
        *by_daemon.entry(record.finished_by.unwrap()).or_default() += 1;
    }
    // Each daemon proved exactly what the queue says it recorded: nothing
    // was proved twice.
    for (daemon, name) in daemons.iter().zip(["a", "b", "c"]) {
        let recorded = by_daemon.get(name).copied().unwrap_or(0);
        assert_eq!(completed_here(daemon).await, recorded, "daemon {name}");
    }
    eprintln!("jobs by daemon: {by_daemon:?}");
    pool.end().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_resubmission_to_another_daemon_returns_the_first_job() {
    let Some(pool) = Pool::new("idem", 3_000).await else {
        return;
    };
    let s = spec(1 << 9, 1, 7);
    let daemons = pool.three_daemons(&s).await;
    let submit = |d: usize| {
        let mut client = daemons[d].client();
        let request = request(&s, "sector-7-commit");
        async move { client.submit_proof(request).await.unwrap().into_inner().job_id }
    };
    let first = submit(0).await;
    assert_eq!(submit(1).await, first, "while queued or running");
    let response = await_job(&mut daemons[2].client(), &first, 120_000).await;
    check_proof(pool.params_dir(), &s, &response);
    assert_eq!(submit(2).await, first, "after it completed");
    assert_eq!(pool.record(&first).await.attempts, 1);
    // Unknown ids are NOT_FOUND on every daemon, as on a single one.
    let unknown = daemons[1]
        .client()
        .await_proof(pb::AwaitProofRequest {
            job_id: "no-such-job".into(),
            timeout_ms: 100,
        })
        .await
        .unwrap_err();
    assert_eq!(unknown.code(), tonic::Code::NotFound);
    // Regression (issue 34.7): a hostile id came back whole in the message.
    let long = daemons[1]
        .client()
        .await_proof(pb::AwaitProofRequest {
            job_id: "x".repeat(10_000),
            timeout_ms: 100,
        })
        .await
        .unwrap_err();
    assert_eq!(long.code(), tonic::Code::NotFound);
    assert!(long.message().len() < 200, "{} bytes", long.message().len());
    pool.end().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn kill_9_of_the_daemon_holding_jobs_loses_none_and_others_prove_them() {
    let lease = Duration::from_millis(1_500);
    let Some(pool) = Pool::new("kill", lease.as_millis() as u64).await else {
        return;
    };
    // Proofs long enough to be in flight when the daemon dies.
    let big = |seed| spec(1 << 14, 4, seed);
    let mut victim = pool.daemon("victim");
    preload(&mut victim.client(), &big(0)).await;
    let mut jobs = Vec::new();
    for i in 0..6u64 {
        let job = victim
            .client()
            .submit_proof(request(&big(200 + i), ""))
            .await
            .unwrap()
            .into_inner()
            .job_id;
        jobs.push((big(200 + i), job));
    }
    // Wait until the victim holds jobs, then start the others and kill it.
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut held = Vec::new();
    while held.is_empty() {
        assert!(Instant::now() < deadline, "the victim never claimed a job");
        for (_, job) in &jobs {
            let record = pool.record(job).await;
            if record.state == JobState::Running && record.owner.as_deref() == Some("victim") {
                held.push(job.clone());
            }
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let others = [pool.daemon("b"), pool.daemon("c")];
    victim.child.kill().unwrap(); // SIGKILL
    let killed = Instant::now();
    victim.child.wait().unwrap();

    // Each job the victim held is claimed again by another daemon.
    let mut recovered_after = Vec::new();
    for job in &held {
        loop {
            let record = pool.record(job).await;
            if record.attempts >= 2 && record.owner.as_deref() != Some("victim") {
                recovered_after.push(killed.elapsed());
                break;
            }
            assert!(
                killed.elapsed() < Duration::from_secs(60),
                "{job} was not recovered: {record:?}"
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
    // Every job completes, verifies, and was recorded once.
    let mut by_daemon: HashMap<String, u64> = HashMap::new();
    for (s, job) in &jobs {
        let response = await_job(&mut others[0].client(), job, 180_000).await;
        check_proof(pool.params_dir(), s, &response);
        let record = pool.record(job).await;
        assert_eq!(record.state, JobState::Completed);
        *by_daemon.entry(record.finished_by.clone().unwrap()).or_default() += 1;
        if held.contains(job) {
            assert_ne!(record.finished_by.as_deref(), Some("victim"));
            assert!(record.attempts >= 2);
        }
    }
    for (daemon, name) in others.iter().zip(["b", "c"]) {
        let recorded = by_daemon.get(name).copied().unwrap_or(0);
        assert_eq!(
            completed_here(daemon).await,
            recorded,
            "daemon {name} proved nothing twice"
        );
    }
    eprintln!(
        "lease {} ms: {} held jobs recovered after {:?} (measured from the kill); results by daemon {by_daemon:?}",
        lease.as_millis(),
        held.len(),
        recovered_after
    );
    pool.end().await;
}
