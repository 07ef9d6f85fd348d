//! The shared job queue against a real PostgreSQL server
//! (`CUZK_TEST_DATABASE_URL`; `.ci/run` starts one with
//! `scripts/test-database.sh`). Several `JobQueue`s stand for several
//! daemons on one database; each test has a schema of its own, dropped at
//! the end.
//!
//! Without the variable the tests say SKIPPED and pass, except under CI
//! (`CI` set), where a missing database is a failure.

use cuzk_cluster::{ClusterError, Expired, JobQueue, JobState, NewJob, Outcome, Released, Submitted};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

mod database;
use database::{database_url, drop_schema};

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
    assert_eq!(alive.requeue_expired(3).await.unwrap(), Expired::default());
    assert!(alive.claim(lease).await.unwrap().is_none());
    let taken = loop {
        alive.requeue_expired(3).await.unwrap();
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
        other.requeue_expired(3).await.unwrap();
        assert!(
            other.claim(lease).await.unwrap().is_none(),
            "claimed while renewed"
        );
    }
    assert_eq!(
        other.release(&claimed.job_id, 3).await.unwrap(),
        Released::NotHeld,
        "only the holder releases"
    );
    assert_eq!(
        holder.release(&claimed.job_id, 3).await.unwrap(),
        Released::Requeued
    );
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

#[tokio::test]
async fn a_job_whose_daemons_keep_losing_it_fails_after_its_last_attempt() {
    let Some(cluster) = Cluster::start("attempts", 2).await else {
        return;
    };
    let (a, b) = (&cluster.daemons[0], &cluster.daemons[1]);
    let lease = Duration::from_millis(300);
    let max_attempts = 3;
    let submitted = a.submit(&job("poison", 1, 1)).await.unwrap();
    let id = submitted.job_id();
    let lapse = || tokio::time::sleep(lease + Duration::from_millis(100));
    // 1: daemon a claims it and dies (its lease runs out).
    assert_eq!(a.claim(lease).await.unwrap().unwrap().attempts, 1);
    lapse().await;
    assert_eq!(
        b.requeue_expired(max_attempts).await.unwrap(),
        Expired {
            requeued: 1,
            failed: 0
        }
    );
    // 2: daemon b claims it and gives it back unfinished (it shuts down).
    assert_eq!(b.claim(LEASE).await.unwrap().unwrap().attempts, 2);
    assert_eq!(b.release(id, max_attempts).await.unwrap(), Released::Requeued);
    // 3: daemon a claims it again and dies again: that was its last attempt.
    assert_eq!(a.claim(lease).await.unwrap().unwrap().attempts, 3);
    lapse().await;
    assert_eq!(
        b.requeue_expired(max_attempts).await.unwrap(),
        Expired {
            requeued: 0,
            failed: 1
        }
    );
    let record = b.get(id).await.unwrap().unwrap();
    assert_eq!((record.state, record.attempts), (JobState::Failed, 3));
    let error = record.error.unwrap();
    assert!(
        error.contains("3 attempts") && error.contains("daemon-0") && error.contains("lease"),
        "the message names the attempts, the last daemon and why: {error}"
    );
    assert_eq!(record.request_bytes, 0, "the request is dropped once failed");
    assert_eq!(record.finished_by.as_deref(), Some(b.owner()), "who recorded it");
    assert!(b.claim(LEASE).await.unwrap().is_none(), "never claimed again");
    assert!(!a.finish(id, &Outcome::Completed(vec![1])).await.unwrap());

    // Given back on its last attempt: failed too, saying so.
    let given_back = a.submit(&job("given-back", 1, 2)).await.unwrap();
    a.claim(LEASE).await.unwrap().unwrap();
    assert_eq!(a.release(given_back.job_id(), 1).await.unwrap(), Released::Failed);
    let record = a.get(given_back.job_id()).await.unwrap().unwrap();
    assert_eq!(record.state, JobState::Failed);
    assert!(
        record.error.as_deref().unwrap().contains("1 attempts")
            && record.error.as_deref().unwrap().contains("gave it back"),
        "{record:?}"
    );
    cluster.end().await;
}

#[tokio::test]
async fn a_declined_claim_spends_no_attempt() {
    let Some(cluster) = Cluster::start("decline", 2).await else {
        return;
    };
    let (a, b) = (&cluster.daemons[0], &cluster.daemons[1]);
    let submitted = a.submit(&job("declined", 1, 1)).await.unwrap();
    for _ in 0..5 {
        let claimed = a.claim(LEASE).await.unwrap().unwrap();
        assert_eq!(claimed.attempts, 1);
        assert!(!b.decline(&claimed.job_id).await.unwrap(), "only the holder");
        assert!(a.decline(&claimed.job_id).await.unwrap());
    }
    let claimed = b.claim(LEASE).await.unwrap().unwrap();
    assert_eq!(
        (claimed.job_id.as_str(), claimed.attempts),
        (submitted.job_id(), 1)
    );
    cluster.end().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 3)]
async fn the_pools_bound_refuses_new_jobs_and_still_returns_existing_ones() {
    let Some(cluster) = Cluster::start("bound", 2).await else {
        return;
    };
    let (a, b) = (&cluster.daemons[0], &cluster.daemons[1]);
    let first = a.submit_bounded(&job("q1", 1, 1), 2).await.unwrap();
    b.submit_bounded(&job("q2", 1, 2), 2).await.unwrap();
    // Running jobs count as well as queued ones.
    let running = a.claim(LEASE).await.unwrap().unwrap();
    match b.submit_bounded(&job("q3", 1, 3), 2).await {
        Err(ClusterError::QueueFull { live: 2, limit: 2 }) => {}
        other => panic!("expected QueueFull, got {other:?}"),
    }
    assert_eq!(
        b.submit_bounded(&job("q1", 1, 9), 2).await.unwrap(),
        Submitted::Existing(first.job_id().to_owned()),
        "a repeated request_id is its job, full or not"
    );
    assert!(a
        .finish(&running.job_id, &Outcome::Completed(vec![1]))
        .await
        .unwrap());
    assert!(matches!(
        b.submit_bounded(&job("q3", 1, 3), 2).await.unwrap(),
        Submitted::New(_)
    ));
    assert_eq!(a.counts().await.unwrap(), (2, 0, 1));

    // Submissions racing on both daemons: the bound holds to within one
    // job per other daemon submitting at the same instant.
    let mut tasks = Vec::new();
    for i in 0..40u8 {
        let daemon = Arc::clone(&cluster.daemons[i as usize % 2]);
        tasks.push(tokio::spawn(async move {
            daemon.submit_bounded(&job("", 1, i), 7).await
        }));
    }
    let mut accepted = 0;
    for task in tasks {
        match task.await.unwrap() {
            Ok(Submitted::New(_)) => accepted += 1,
            Err(ClusterError::QueueFull { limit: 7, .. }) => {}
            other => panic!("{other:?}"),
        }
    }
    assert!(
        (5..=6).contains(&accepted),
        "{accepted} accepted beyond 2 live, bound 7"
    );
    cluster.end().await;
}
