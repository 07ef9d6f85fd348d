//! Cluster mode through a database restart: three daemons keep proving,
//! reconnect, and every job completes and is recorded once. A binary of its
//! own (test binaries run one after another), so no other test sees the
//! restart. The restart command comes from `CUZK_TEST_DATABASE_RESTART`
//! (`scripts/test-database.sh` prints it); without it the test says SKIPPED
//! and passes, except under CI.

use cuzk_cluster::JobState;
use cuzk_proto::v1 as pb;
use cuzk_synthetic::SyntheticSpec;
use std::time::Duration;

mod common;
use common::database::retry;
use common::pool::Pool;
use common::{check_proof, Client};

fn spec(seed: u64) -> SyntheticSpec {
    SyntheticSpec {
        constraints: 1 << 12,
        partitions: 2,
        inputs: 2,
        seed,
        ..SyntheticSpec::default()
    }
}

async fn await_until_final(client: &mut Client, job: &str) -> pb::AwaitProofResponse {
    let request = || pb::AwaitProofRequest {
        job_id: job.to_string(),
        timeout_ms: 120_000,
    };
    retry!("pool", client.await_proof(request()).await).into_inner()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn daemons_ride_out_a_database_restart_and_lose_nothing() {
    let restart = match std::env::var("CUZK_TEST_DATABASE_RESTART") {
        Ok(command) if !command.is_empty() => command,
        _ if std::env::var_os("CI").is_some() => panic!("CI must provide CUZK_TEST_DATABASE_RESTART"),
        _ => {
            eprintln!("SKIPPED: no CUZK_TEST_DATABASE_RESTART");
            return;
        }
    };
    let Some(pool) = Pool::new("restart", 5_000).await else {
        return;
    };
    let daemons = pool.three_daemons(&spec(0)).await;
    let mut jobs = Vec::new();
    for i in 0..12u64 {
        let request = pb::SubmitProofRequest {
            request_id: format!("restart-{i}"),
            ..common::synthetic_request(&spec(300 + i))
        };
        let job = daemons[i as usize % 3]
            .client()
            .submit_proof(request)
            .await
            .unwrap()
            .into_inner()
            .job_id;
        jobs.push((spec(300 + i), job));
    }
    // Restart while the pool is proving.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let (queued, running, _) = pool.queue.counts().await.unwrap();
    assert!(queued + running > 0, "the restart must come mid-run");
    eprintln!("restarting with {queued} jobs queued and {running} running");
    let status = std::process::Command::new("sh")
        .arg("-c")
        .arg(&restart)
        .status()
        .unwrap();
    assert!(status.success(), "restart command failed: {restart}");
    eprintln!("database restarted");
    for (i, (s, job)) in jobs.iter().enumerate() {
        let response = await_until_final(&mut daemons[(i + 1) % 3].client(), job).await;
        check_proof(pool.params_dir(), s, &response);
        let record = retry!("pool", pool.queue.get(job).await).unwrap();
        assert_eq!(record.state, JobState::Completed, "{job}");
    }
    pool.end().await;
}
