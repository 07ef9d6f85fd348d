//! `cuzk-bench status`, `preload` and `metrics`.

use crate::client::{Client, Target};
use cuzk_proto::v1 as pb;

pub async fn status(target: Target) -> anyhow::Result<()> {
    let s = Client::connect(&target).await?.status().await?;
    println!("uptime:      {}s", s.uptime_seconds);
    println!("completed:   {}", s.total_proofs_completed);
    println!("failed:      {}", s.total_proofs_failed);
    println!(
        "memory:      {} of {} bytes granted",
        s.pinned_memory_bytes, s.pinned_memory_limit_bytes
    );
    for gpu in &s.gpus {
        let busy = if gpu.current_job_id.is_empty() {
            "idle".to_string()
        } else {
            format!("proving {} ({})", gpu.current_job_id, gpu.current_proof_kind)
        };
        println!(
            "device {}:    {} (vram {} / {} bytes free), {busy}",
            gpu.ordinal, gpu.name, gpu.vram_free_bytes, gpu.vram_total_bytes
        );
    }
    for srs in &s.loaded_srs {
        let tier = pb::srs_status::Tier::try_from(srs.tier)
            .map(|t| t.as_str_name())
            .unwrap_or("?");
        println!(
            "srs:         {} {tier} {} bytes, {} in use",
            srs.circuit_id, srs.size_bytes, srs.ref_count
        );
    }
    for q in &s.queues {
        println!(
            "queue:       {:<8} pending={} in_progress={}",
            q.proof_kind, q.pending, q.in_progress
        );
    }
    Ok(())
}

pub async fn preload(target: Target, circuit_id: String) -> anyhow::Result<()> {
    let (already, ms) = Client::connect(&target).await?.preload(&circuit_id).await?;
    if already {
        println!("{circuit_id}: already resident");
    } else {
        println!("{circuit_id}: loaded in {ms} ms");
    }
    Ok(())
}

pub async fn metrics(target: Target) -> anyhow::Result<()> {
    print!("{}", Client::connect(&target).await?.metrics().await?);
    Ok(())
}
