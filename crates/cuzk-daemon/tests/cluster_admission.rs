//! Cluster mode refuses at submission what a daemon would refuse, bounds
//! the pool's queue and stored requests, and ends a job FAILED rather than
//! passing it around the pool for ever (issue 34 items 3 and 5). Real
//! daemons on one PostgreSQL queue (see `common/pool.rs`); the test's own
//! `JobQueue` stands for daemons that stored or held jobs.

use cuzk_cluster::{JobState, NewJob, Outcome};
use cuzk_proto::v1 as pb;
use cuzk_synthetic::SyntheticSpec;
use prost::Message;
use std::time::{Duration, Instant};
use tonic::Code;

mod common;
use common::pool::{completed_here, Pool};
use common::{await_job, check_proof, spec, Daemon};

fn request(spec: &SyntheticSpec, request_id: &str) -> pb::SubmitProofRequest {
    pb::SubmitProofRequest {
        request_id: request_id.into(),
        ..common::synthetic_request(spec)
    }
}

/// Stores `request` in the pool as another daemon would have after its
/// own checks (none of this test's daemons checked it).
async fn store(pool: &Pool, request: &pb::SubmitProofRequest) -> String {
    let job = NewJob {
        request_id: request.request_id.clone(),
        kind: "porep".into(),
        priority: 1,
        request: request.encode_to_vec(),
    };
    pool.queue.submit(&job).await.unwrap().job_id().to_string()
}

/// A memory budget no partition fits: every request is beyond it.
const TINY_BUDGET: &str = "[memory]\ntotal_budget = 4096\n";

/// Waits until daemon `node` holds `job`; panics after `limit`.
async fn until_held_by(pool: &Pool, job: &str, node: &str, limit: Duration) {
    let deadline = Instant::now() + limit;
    loop {
        let record = pool.record(job).await;
        if record.state == JobState::Running && record.owner.as_deref() == Some(node) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{node} never claimed {job}: {record:?}"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn what_a_daemon_would_refuse_is_refused_at_submission_and_never_stored() {
    let Some(pool) = Pool::new("refuse", 3_000).await else {
        return;
    };
    let daemon = pool.daemon_with("a", "", TINY_BUDGET);
    let mut client = daemon.client();
    let beyond_budget = client
        .submit_proof(request(&spec(1 << 9, 1, 1), "beyond-budget"))
        .await
        .unwrap_err();
    assert_eq!(
        beyond_budget.code(),
        Code::ResourceExhausted,
        "{}",
        beyond_budget.message()
    );
    let mut garbage = request(&spec(1 << 9, 1, 2), "");
    garbage.vanilla_proof = b"{not a spec".to_vec();
    let malformed = client.submit_proof(garbage).await.unwrap_err();
    assert_eq!(malformed.code(), Code::InvalidArgument, "{}", malformed.message());
    assert_eq!(pool.queue.counts().await.unwrap(), (0, 0, 0), "nothing stored");
    pool.end().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_claim_the_engine_refuses_for_good_fails_at_once_with_its_message() {
    let Some(pool) = Pool::new("claimfail", 3_000).await else {
        return;
    };
    // Accepted by a daemon with room for it; claimed by one without.
    let job = store(&pool, &request(&spec(1 << 9, 1, 3), "")).await;
    let small = pool.daemon_with("small", "", TINY_BUDGET);
    let response = await_job(&mut small.client(), &job, 10_000).await;
    assert_eq!(
        response.status,
        pb::await_proof_response::Status::Failed as i32,
        "not claimed and given back for ever: {response:?}"
    );
    assert!(
        response.error_message.contains("budget"),
        "the engine's message: {}",
        response.error_message
    );
    let record = pool.record(&job).await;
    assert_eq!((record.state, record.attempts), (JobState::Failed, 1));
    pool.end().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_pool_bounds_its_queued_jobs_and_stored_requests_at_submission() {
    let Some(pool) = Pool::new("bounds", 3_000).await else {
        return;
    };
    // The default bound, 1000 jobs, held by another daemon (the test).
    let mut held = Vec::new();
    for i in 0..1000 {
        let job = NewJob {
            request_id: format!("fill-{i}"),
            kind: "porep".into(),
            priority: 1,
            request: vec![0; 16],
        };
        pool.queue.submit(&job).await.unwrap();
        held.push(pool.queue.claim(Duration::from_secs(600)).await.unwrap().unwrap());
    }
    let daemon = pool.daemon("a");
    let mut client = daemon.client();
    let s = spec(1 << 9, 1, 4);
    let full = client.submit_proof(request(&s, "")).await.unwrap_err();
    assert_eq!(full.code(), Code::ResourceExhausted, "{}", full.message());
    assert!(
        full.message().contains("1000 jobs") && full.message().contains("max_queued_jobs = 1000"),
        "{}",
        full.message()
    );
    // A repeat of a job the pool holds is that job, however full the pool.
    let repeat = client
        .submit_proof(request(&s, "fill-7"))
        .await
        .unwrap()
        .into_inner()
        .job_id;
    assert_eq!(repeat, held[7].job_id);
    // Larger than the pool stores (64 MiB by default): refused, naming both.
    let mut oversized = request(&s, "");
    oversized.vanilla_proof = vec![b' '; 64 << 20];
    let too_large = client.submit_proof(oversized).await.unwrap_err();
    assert_eq!(
        too_large.code(),
        Code::ResourceExhausted,
        "{}",
        too_large.message()
    );
    assert!(
        too_large.message().contains(&(64u64 << 20).to_string())
            && too_large.message().contains("max_request_bytes"),
        "{}",
        too_large.message()
    );
    assert_eq!(pool.queue.counts().await.unwrap(), (0, 1000, 0), "nothing stored");
    // Room again once a job ends.
    assert!(pool
        .queue
        .finish(&held[0].job_id, &Outcome::Completed(vec![1]))
        .await
        .unwrap());
    let job = client
        .submit_proof(request(&s, ""))
        .await
        .unwrap()
        .into_inner()
        .job_id;
    check_proof(
        pool.params_dir(),
        &s,
        &await_job(&mut client, &job, 120_000).await,
    );
    pool.end().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_job_that_crashes_every_daemon_ends_failed_after_its_attempts() {
    let lease = Duration::from_millis(1_000);
    let Some(pool) = Pool::new("poison", lease.as_millis() as u64).await else {
        return;
    };
    // Long enough to be in flight when its daemon dies (its parameters are
    // generated by the first daemon that claims it).
    let job = store(&pool, &request(&spec(1 << 14, 4, 5), "")).await;
    // Attempt 1: a daemon (the test) claims it and dies at once.
    pool.queue.claim(Duration::from_millis(1)).await.unwrap().unwrap();
    // Attempts 2 and 3 (the default max_attempts): each daemon that claims
    // it dies (kill -9) while proving it.
    for node in ["a", "b"] {
        let mut daemon = pool.daemon(node);
        until_held_by(&pool, &job, node, Duration::from_secs(30)).await;
        daemon.child.kill().unwrap();
        daemon.child.wait().unwrap();
    }
    let last = pool.daemon("c");
    let response = await_job(&mut last.client(), &job, 30_000).await;
    assert_eq!(
        response.status,
        pb::await_proof_response::Status::Failed as i32,
        "not proved a fourth time: {response:?}"
    );
    assert!(
        response.error_message.contains("3 attempts") && response.error_message.contains(", b,"),
        "names the attempts and the last daemon: {}",
        response.error_message
    );
    let record = pool.record(&job).await;
    assert_eq!((record.state, record.attempts), (JobState::Failed, 3));
    assert_eq!(completed_here(&last).await, 0);
    pool.end().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_daemon_whose_engine_is_full_gives_jobs_back_without_spending_attempts() {
    let Some(pool) = Pool::new("full", 3_000).await else {
        return;
    };
    // Queued before the daemon starts, so it claims two at once
    // (max_claimed) while its engine takes one (max_queued_jobs).
    let mut jobs = Vec::new();
    for seed in 10..14 {
        let s = spec(1 << 9, 1, seed);
        let job = store(&pool, &request(&s, "")).await;
        jobs.push((s, job));
    }
    let daemon: Daemon = pool.daemon_with(
        "a",
        "max_attempts = 1\nmax_claimed = 2\n",
        "[pipeline]\nmax_queued_jobs = 1\n",
    );
    let mut client = daemon.client();
    for (s, job) in &jobs {
        check_proof(pool.params_dir(), s, &await_job(&mut client, job, 120_000).await);
        assert_eq!(pool.record(job).await.attempts, 1, "{job}");
    }
    assert!(
        daemon.log().contains("declining the job"),
        "the engine was full at some claim"
    );
    pool.end().await;
}
