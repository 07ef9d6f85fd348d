//! The shared job queue against a real PostgreSQL server
//! (`CUZK_TEST_DATABASE_URL`; `.ci/run` starts one with
//! `scripts/test-database.sh`). Several `JobQueue`s stand for several
//! daemons on one database; each test has a schema of its own, dropped at
//! the end.
//!
//! Without the variable the tests say SKIPPED and pass, except under CI
//! (`CI` set), where a missing database is a failure.

use cuzk_cluster::{JobQueue, JobState, NewJob, Outcome, Submitted};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

fn database_url() -> Option<String> {
    match std::env::var("CUZK_TEST_DATABASE_URL") {
        Ok(url) if !url.is_empty() => Some(url),
        _ if std::env::var_os("CI").is_some() => {
            panic!("CI must provide CUZK_TEST_DATABASE_URL (eval \"$(scripts/test-database.sh)\")")
        }
        _ => {
            eprintln!("SKIPPED: no CUZK_TEST_DATABASE_URL (eval \"$(scripts/test-database.sh)\")");
            None
        }
    }
}

/// A schema of this test's own, and `daemons` queues on it.
struct Cluster {
    url: String,
    schema: String,
    daemons: Vec<Arc<JobQueue>>,
}

impl Cluster {
    async fn start(name: &str, daemons: usize) -> Option<Self> {
        let url = database_url()?;
        let schema = format!("cuzk_test_{name}_{}", std::process::id());
        drop_schema(&url, &schema).await;
        let mut queues = Vec::new();
        for d in 0..daemons {
            let queue = JobQueue::connect(&url, &schema, &format!("daemon-{d}"))
                .await
                .unwrap();
            queues.push(Arc::new(queue));
        }
        Some(Self {
            url,
            schema,
            daemons: queues,
        })
    }

    async fn end(self) {
        drop(self.daemons);
        drop_schema(&self.url, &self.schema).await;
    }
}

async fn drop_schema(url: &str, schema: &str) {
    let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls).await.unwrap();
    tokio::spawn(connection);
    client
        .batch_execute(&format!("DROP SCHEMA IF EXISTS {schema} CASCADE"))
        .await
        .unwrap();
}

fn job(request_id: &str, priority: i16, payload: u8) -> NewJob {
    NewJob {
        request_id: request_id.into(),
        kind: "porep".into(),
        priority,
        request: vec![payload; 16],
    }
}

const LEASE: Duration = Duration::from_secs(30);

#[tokio::test]
async fn migrations_apply_once_and_a_newer_schema_is_refused() {
    let Some(cluster) = Cluster::start("migrate", 3).await else {
        return;
    };
    let (client, connection) = tokio_postgres::connect(&cluster.url, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    let versions: Vec<i32> = client
        .query(
            &format!("SELECT version FROM {}.cuzk_schema_version", cluster.schema),
            &[],
        )
        .await
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert_eq!(
        versions,
        (1..=cuzk_cluster::schema::VERSION).collect::<Vec<_>>(),
        "three daemons, each migration once"
    );
    client
        .execute(
            &format!(
                "INSERT INTO {}.cuzk_schema_version (version) VALUES (999)",
                cluster.schema
            ),
            &[],
        )
        .await
        .unwrap();
    let err = JobQueue::connect(&cluster.url, &cluster.schema, "late")
        .await
        .unwrap_err();
    assert!(err.to_string().contains("version 999"), "{err}");
    assert!(JobQueue::connect(&cluster.url, "Bad; DROP", "x").await.is_err());
    cluster.end().await;
}

#[tokio::test]
async fn a_request_id_is_one_job_across_daemons() {
    let Some(cluster) = Cluster::start("idem", 2).await else {
        return;
    };
    let (a, b) = (&cluster.daemons[0], &cluster.daemons[1]);
    let first = a.submit(&job("sector-7", 1, 1)).await.unwrap();
    assert!(matches!(first, Submitted::New(_)));
    let again = b.submit(&job("sector-7", 1, 2)).await.unwrap();
    assert_eq!(again, Submitted::Existing(first.job_id().to_owned()));
    // Empty request ids are never merged.
    let x = a.submit(&job("", 1, 3)).await.unwrap();
    let y = a.submit(&job("", 1, 3)).await.unwrap();
    assert_ne!(x.job_id(), y.job_id());
    assert_eq!(a.counts().await.unwrap(), (3, 0, 0));
    cluster.end().await;
}

#[tokio::test]
async fn claims_follow_priority_then_submission_order_across_daemons() {
    let Some(cluster) = Cluster::start("prio", 2).await else {
        return;
    };
    let (a, b) = (&cluster.daemons[0], &cluster.daemons[1]);
    let porep1 = a.submit(&job("p1", 1, 1)).await.unwrap();
    let porep2 = b.submit(&job("p2", 1, 2)).await.unwrap();
    let winning = b.submit(&job("w", 3, 3)).await.unwrap();
    let claimed: Vec<String> = vec![
        a.claim(LEASE).await.unwrap().unwrap().job_id,
        b.claim(LEASE).await.unwrap().unwrap().job_id,
        a.claim(LEASE).await.unwrap().unwrap().job_id,
    ];
    assert_eq!(
        claimed,
        vec![
            winning.job_id().to_owned(),
            porep1.job_id().to_owned(),
            porep2.job_id().to_owned()
        ]
    );
    assert!(b.claim(LEASE).await.unwrap().is_none());
    cluster.end().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 3)]
async fn fifty_jobs_over_three_daemons_finish_exactly_once() {
    let Some(cluster) = Cluster::start("fifty", 3).await else {
        return;
    };
    let mut ids = Vec::new();
    for i in 0..50u8 {
        let daemon = &cluster.daemons[i as usize % 3];
        ids.push(
            daemon
                .submit(&job(&format!("job-{i}"), (i % 4) as i16, i))
                .await
                .unwrap(),
        );
    }
    // Each daemon claims and finishes as fast as it can, all at once.
    let mut tasks = Vec::new();
    for daemon in &cluster.daemons {
        let daemon = Arc::clone(daemon);
        tasks.push(tokio::spawn(async move {
            let mut done = Vec::new();
            while let Some(claimed) = daemon.claim(LEASE).await.unwrap() {
                let proof = claimed.request.iter().rev().copied().collect();
                assert!(daemon
                    .finish(&claimed.job_id, &Outcome::Completed(proof))
                    .await
                    .unwrap());
                done.push(claimed.job_id);
            }
            done
        }));
    }
    let mut finished: HashMap<String, usize> = HashMap::new();
    for task in tasks {
        for id in task.await.unwrap() {
            *finished.entry(id).or_default() += 1;
        }
    }
    assert_eq!(finished.len(), 50, "every job finished");
    assert!(finished.values().all(|&n| n == 1), "none finished twice");
    for (i, submitted) in ids.iter().enumerate() {
        let record = cluster.daemons[0].get(submitted.job_id()).await.unwrap().unwrap();
        assert_eq!(record.state, JobState::Completed);
        assert_eq!(record.attempts, 1);
        assert_eq!(record.request_bytes, 0, "the request is dropped once proved");
        assert_eq!(
            record.proof,
            Some(vec![i as u8; 16]),
            "the result of its own request"
        );
    }
    cluster.end().await;
}

#[tokio::test]
async fn a_dead_daemons_job_is_requeued_after_its_lease_and_finished_once() {
    let Some(cluster) = Cluster::start("lease", 2).await else {
        return;
    };
    let (dead, alive) = (&cluster.daemons[0], &cluster.daemons[1]);
    let lease = Duration::from_millis(600);
    let submitted = dead.submit(&job("orphan", 1, 9)).await.unwrap();
    let claimed = dead.claim(lease).await.unwrap().unwrap();
    assert_eq!(claimed.job_id, submitted.job_id());
    // The holder stops renewing (it died): nothing to requeue before the
    // lease ends, the job is back in the queue after it.
    let died = Instant::now();
    assert_eq!(alive.requeue_expired().await.unwrap(), 0);
    assert!(alive.claim(lease).await.unwrap().is_none());
    let taken = loop {
        alive.requeue_expired().await.unwrap();
        if let Some(job) = alive.claim(LEASE).await.unwrap() {
            break job;
        }
        assert!(
            died.elapsed() < 2 * lease + Duration::from_secs(5),
            "never requeued"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let recovery = died.elapsed();
    eprintln!("recovered after {recovery:?} (lease {lease:?})");
    assert!(recovery >= lease && recovery < 2 * lease + Duration::from_millis(500));
    assert_eq!((taken.job_id.as_str(), taken.attempts), (submitted.job_id(), 2));
    // The old holder's late result does not count; the new holder's does.
    assert!(!dead.renew(&taken.job_id, lease).await.unwrap());
    assert!(!dead
        .finish(&taken.job_id, &Outcome::Completed(vec![1]))
        .await
        .unwrap());
    assert!(alive
        .finish(&taken.job_id, &Outcome::Completed(vec![2]))
        .await
        .unwrap());
    let record = dead.get(&taken.job_id).await.unwrap().unwrap();
    assert_eq!((record.state, record.proof), (JobState::Completed, Some(vec![2])));
    assert_eq!(
        record.finished_by.as_deref(),
        Some(alive.owner()),
        "the new holder's result"
    );
    cluster.end().await;
}

#[tokio::test]
async fn a_renewed_lease_keeps_the_job_and_release_gives_it_back() {
    let Some(cluster) = Cluster::start("renew", 2).await else {
        return;
    };
    let (holder, other) = (&cluster.daemons[0], &cluster.daemons[1]);
    let lease = Duration::from_millis(400);
    holder.submit(&job("held", 1, 1)).await.unwrap();
    let claimed = holder.claim(lease).await.unwrap().unwrap();
    for _ in 0..6 {
        tokio::time::sleep(Duration::from_millis(150)).await;
        assert!(holder.renew(&claimed.job_id, lease).await.unwrap());
        other.requeue_expired().await.unwrap();
        assert!(
            other.claim(lease).await.unwrap().is_none(),
            "claimed while renewed"
        );
    }
    assert!(
        !other.release(&claimed.job_id).await.unwrap(),
        "only the holder releases"
    );
    assert!(holder.release(&claimed.job_id).await.unwrap());
    let again = other.claim(lease).await.unwrap().unwrap();
    assert_eq!((again.job_id, again.attempts), (claimed.job_id, 2));
    cluster.end().await;
}

#[tokio::test]
async fn cancelled_and_expired_jobs_leave_the_queue() {
    let Some(cluster) = Cluster::start("expire", 1).await else {
        return;
    };
    let q = &cluster.daemons[0];
    let queued = q.submit(&job("c1", 1, 1)).await.unwrap();
    let running = q.submit(&job("c2", 1, 2)).await.unwrap();
    let claimed = q.claim(LEASE).await.unwrap().unwrap();
    assert_eq!(claimed.job_id, queued.job_id());
    assert_eq!(q.get(running.job_id()).await.unwrap().unwrap().request_bytes, 16);
    assert!(q.cancel(running.job_id()).await.unwrap());
    assert!(q.cancel(&claimed.job_id).await.unwrap());
    // The holder learns at its next renewal; its result is dropped.
    assert!(!q.renew(&claimed.job_id, LEASE).await.unwrap());
    assert!(!q
        .finish(&claimed.job_id, &Outcome::Failed("late".into()))
        .await
        .unwrap());
    assert!(!q.cancel(&claimed.job_id).await.unwrap(), "already ended");
    assert_eq!(q.get(&claimed.job_id).await.unwrap().unwrap().request_bytes, 0);
    assert_eq!(
        q.get(running.job_id()).await.unwrap().unwrap().state,
        JobState::Cancelled
    );
    assert_eq!(q.expire_finished(Duration::from_secs(3600)).await.unwrap(), 0);
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert_eq!(q.expire_finished(Duration::from_millis(10)).await.unwrap(), 2);
    assert!(q.get(running.job_id()).await.unwrap().is_none());
    assert_eq!(q.counts().await.unwrap(), (0, 0, 0));
    cluster.end().await;
}
