//! `cuzk-bench cluster-claims`: the cluster queue's coordination cost
//! (issue 16 item 4). N simulated daemons, each a `JobQueue` with a
//! connection of its own, drain a queue of jobs: claim, wait `--prove-ms`
//! (a stated simulation of GPU time: no proof is made), finish. Prints per
//! call latencies and the claim rate against N times one daemon's.

use clap::Args;
use cuzk_cluster::{JobQueue, NewJob, Outcome};
use std::sync::Arc;
use std::time::{Duration, Instant};

#[derive(Args, Debug)]
pub struct ClusterClaimsArgs {
    /// The database (`postgres://...`); default: `CUZK_TEST_DATABASE_URL`
    /// (what `scripts/test-database.sh` exports).
    #[arg(long)]
    database: Option<String>,
    /// Simulated daemon counts to measure, in turn.
    #[arg(long, value_delimiter = ',', default_value = "1,4,16,64")]
    daemons: Vec<usize>,
    /// Jobs per daemon in each run.
    #[arg(long, default_value_t = 20)]
    jobs_per_daemon: usize,
    /// Simulated proving time per job, milliseconds.
    #[arg(long, default_value_t = 100)]
    prove_ms: u64,
}

/// Median and 99th percentile of `v`, milliseconds.
fn percentiles(mut v: Vec<Duration>) -> (f64, f64) {
    v.sort();
    let at = |q: f64| v[((v.len() - 1) as f64 * q).round() as usize].as_secs_f64() * 1e3;
    (at(0.5), at(0.99))
}

pub fn run(args: ClusterClaimsArgs) -> anyhow::Result<()> {
    let database = match &args.database {
        Some(url) => url.clone(),
        None => std::env::var("CUZK_TEST_DATABASE_URL")
            .map_err(|_| anyhow::anyhow!("--database or CUZK_TEST_DATABASE_URL"))?,
    };
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    runtime.block_on(async {
        let mut one_daemon_rate = None;
        for &n in &args.daemons {
            anyhow::ensure!(n > 0, "--daemons: at least 1");
            let schema = format!("cuzk_bench_claims_{}_{n}", std::process::id());
            let mut queues = Vec::new();
            for d in 0..n {
                queues.push(Arc::new(JobQueue::connect(&database, &schema, &format!("sim-{d}")).await?));
            }
            let jobs = n * args.jobs_per_daemon;
            let mut submits = Vec::with_capacity(jobs);
            for i in 0..jobs {
                let job = NewJob {
                    request_id: format!("job-{i}"),
                    kind: "porep".into(),
                    priority: (i % 4) as i16,
                    request: vec![0; 256],
                };
                let t = Instant::now();
                queues[i % n].submit(&job).await?;
                submits.push(t.elapsed());
            }
            let prove = Duration::from_millis(args.prove_ms);
            let started = Instant::now();
            let mut tasks = Vec::new();
            for queue in &queues {
                let queue = Arc::clone(queue);
                tasks.push(tokio::spawn(async move {
                    let (mut claims, mut finishes) = (Vec::new(), Vec::new());
                    loop {
                        let t = Instant::now();
                        let Some(job) = queue.claim(Duration::from_secs(60)).await? else {
                            break;
                        };
                        claims.push(t.elapsed());
                        tokio::time::sleep(prove).await;
                        let t = Instant::now();
                        anyhow::ensure!(queue.finish(&job.job_id, &Outcome::Completed(vec![1])).await?);
                        finishes.push(t.elapsed());
                    }
                    Ok::<_, anyhow::Error>((claims, finishes))
                }));
            }
            let (mut claims, mut finishes) = (Vec::new(), Vec::new());
            for task in tasks {
                let (c, f) = task.await??;
                claims.extend(c);
                finishes.extend(f);
            }
            let wall = started.elapsed().as_secs_f64();
            anyhow::ensure!(claims.len() == jobs, "{} of {jobs} jobs claimed", claims.len());
            let (_, running, finished) = queues[0].counts().await?;
            anyhow::ensure!(running == 0 && finished == jobs as i64, "queue left {running} running, {finished} finished");
            let rate = jobs as f64 / wall;
            let one = *one_daemon_rate.get_or_insert(rate / n as f64);
            let ((s50, s99), (c50, c99), (f50, f99)) =
                (percentiles(submits), percentiles(claims), percentiles(finishes));
            println!(
                "{n:>3} daemons: {jobs:>5} jobs in {wall:.2} s = {rate:.1} claims/s ({:.2}x of {n} x one daemon's); \
                 ms median/p99: submit {s50:.2}/{s99:.2}, claim {c50:.2}/{c99:.2}, finish {f50:.2}/{f99:.2}",
                rate / (n as f64 * one)
            );
            drop(queues);
            let (client, connection) = tokio_postgres::connect(&database, tokio_postgres::NoTls).await?;
            tokio::spawn(connection);
            client.batch_execute(&format!("DROP SCHEMA {schema} CASCADE")).await?;
        }
        Ok(())
    })
}
