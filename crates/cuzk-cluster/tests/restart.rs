//! A database restart in the middle of a run: the daemons' queues
//! reconnect, and every job still finishes exactly once. A binary of its
//! own (test binaries run one after another), so no other test's
//! connection sees the restart. The restart command comes from
//! `CUZK_TEST_DATABASE_RESTART` (`scripts/test-database.sh` prints it);
//! without it the test says SKIPPED and passes, except under CI.

use cuzk_cluster::{JobQueue, JobState, NewJob, Outcome};
use std::time::Duration;

mod database;
use database::{drop_schema, retry};

const LEASE: Duration = Duration::from_secs(30);

#[tokio::test]
async fn daemons_reconnect_after_a_database_restart_and_lose_nothing() {
    let (url, restart) = match (
        std::env::var("CUZK_TEST_DATABASE_URL"),
        std::env::var("CUZK_TEST_DATABASE_RESTART"),
    ) {
        (Ok(url), Ok(restart)) if !url.is_empty() && !restart.is_empty() => (url, restart),
        _ if std::env::var_os("CI").is_some() => {
            panic!("CI must provide CUZK_TEST_DATABASE_URL and CUZK_TEST_DATABASE_RESTART")
        }
        _ => {
            eprintln!("SKIPPED: no CUZK_TEST_DATABASE_URL / CUZK_TEST_DATABASE_RESTART");
            return;
        }
    };
    let schema = format!("cuzk_test_restart_{}", std::process::id());
    let a = JobQueue::connect(&url, &schema, "daemon-a").await.unwrap();
    let b = JobQueue::connect(&url, &schema, "daemon-b").await.unwrap();
    let mut ids = Vec::new();
    for i in 0..10u8 {
        let job = NewJob {
            request_id: format!("r{i}"),
            kind: "porep".into(),
            priority: 1,
            request: vec![i],
        };
        ids.push(a.submit(&job).await.unwrap().job_id().to_owned());
    }
    let held = a.claim(LEASE).await.unwrap().unwrap();

    let status = std::process::Command::new("sh")
        .arg("-c")
        .arg(&restart)
        .status()
        .unwrap();
    assert!(status.success(), "{restart}: {status}");

    // The holder finishes its job on a new connection; both drain the rest.
    assert!(retry!(
        "database",
        a.finish(&held.job_id, &Outcome::Completed(vec![0])).await
    ));
    let mut finished = 1;
    for queue in [&a, &b] {
        while let Some(job) = retry!("database", queue.claim(LEASE).await) {
            assert!(retry!(
                "database",
                queue
                    .finish(&job.job_id, &Outcome::Completed(job.request.clone()))
                    .await
            ));
            finished += 1;
        }
    }
    assert_eq!(finished, 10);
    for id in &ids {
        let record = retry!("database", b.get(id).await).unwrap();
        assert_eq!((record.state, record.attempts), (JobState::Completed, 1), "{id}");
    }
    drop_schema(&url, &schema).await;
}
