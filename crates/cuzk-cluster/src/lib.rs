//! The cluster's shared job queue (issue 16): proof jobs stored in a
//! PostgreSQL database that several daemons share, so a job survives the
//! daemon that held it.
//!
//! A job row holds the request, its priority and status, and, once proved,
//! its result. Any daemon submits ([`JobQueue::submit`], idempotent by
//! `request_id` across daemons and restarts); daemons claim queued jobs
//! highest priority first with row locks that skip rows another daemon is
//! claiming (`FOR UPDATE SKIP LOCKED`), and hold each under a lease they
//! renew ([`JobQueue::renew`]). A lease that runs out puts the job back in
//! the queue ([`JobQueue::requeue_expired`]) for another daemon; the daemon
//! that lost it can no longer finish it ([`JobQueue::finish`] only counts
//! for the lease holder), so a job completes exactly once. A claim lost
//! with its work (the lease ran out, the job was given back unfinished)
//! counts as an attempt, and a job out of attempts fails, so a request
//! that crashes daemons is not passed around the pool for ever. Finished
//! rows expire after the result TTL ([`JobQueue::expire_finished`]).
//!
//! The schema is created and migrated by the first daemon to connect
//! ([`schema`]), in a schema of the database named by the configuration.
//!
//! The daemon's `[cluster]` mode runs on it (`cuzk-daemon`'s `cluster`
//! module).

pub mod queue;
pub mod schema;

pub use queue::{ClaimedJob, Expired, JobQueue, JobRecord, JobState, NewJob, Outcome, Released, Submitted};

/// Errors of the cluster queue.
#[derive(Debug, thiserror::Error)]
pub enum ClusterError {
    /// The database refused a statement or the connection failed.
    #[error("database: {0}")]
    Database(#[from] tokio_postgres::Error),
    /// The configuration cannot be used (a bad URL or schema name).
    #[error("cluster configuration: {0}")]
    Config(String),
    /// The database holds a schema newer than this build knows.
    #[error("the database's cuzk schema is version {found}, newer than this build's {known}")]
    SchemaTooNew {
        /// The version found.
        found: i32,
        /// The newest version this build knows.
        known: i32,
    },
    /// The pool holds as many unfinished jobs as it accepts
    /// ([`JobQueue::submit_bounded`]).
    #[error("{live} jobs are queued or running in the pool, the most it accepts is {limit}")]
    QueueFull {
        /// Jobs queued or running now.
        live: i64,
        /// The bound.
        limit: i64,
    },
    /// A stored value this build cannot read.
    #[error("unreadable job row: {0}")]
    Corrupt(String),
}
