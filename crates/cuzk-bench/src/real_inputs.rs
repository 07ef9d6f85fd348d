//! `cuzk-bench real-inputs` (issue 13): requests with the exact structure
//! of production sectors (random values, see `cuzk_filecoin::structure`)
//! written for the bench client to submit.

use anyhow::Context;
use clap::Args;
use cuzk_core::{PlanError, ProofRequest};
use cuzk_filecoin::structure::{self, StructureInput, StructureSpec};
use cuzk_filecoin::PlanOptions;
use std::path::PathBuf;
use std::time::Instant;

pub(crate) fn parse_spec(s: &str) -> Result<StructureSpec, String> {
    s.parse().map_err(|e: PlanError| e.to_string())
}

#[derive(Args, Debug)]
pub struct RealInputsArgs {
    /// What to make: <kind>-<size>, kind porep, window-post, winning-post or
    /// snap, size 2k, 8m, 512m, 32g or 64g (porep-32g, porep-64g,
    /// window-post-32g, winning-post-32g, snap-32g, porep-2k, ...).
    #[arg(long = "proof", value_parser = parse_spec)]
    proof: StructureSpec,
    /// Output directory (created if missing).
    #[arg(long)]
    out: PathBuf,
    /// Seed of the random values (the same seed writes the same bytes).
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// WindowPoSt: sectors in the partition (default: a full partition,
    /// 2349 for 32 GiB).
    #[arg(long)]
    sectors: Option<usize>,
}

/// The bytes a request carries in its SubmitProof message (vanilla proofs,
/// and a few fields).
pub(crate) fn request_bytes(request: &ProofRequest) -> usize {
    request.vanilla_proof.len() + request.vanilla_proofs.iter().map(Vec::len).sum::<usize>() + 256
}

pub fn run(args: RealInputsArgs) -> anyhow::Result<()> {
    let spec = StructureSpec {
        seed: args.seed,
        sectors: args.sectors,
        ..args.proof
    };
    let started = Instant::now();
    let input = structure::generate(&spec).with_context(|| format!("generating {spec}"))?;
    let made = started.elapsed();
    let path = input.write(&args.out)?;
    let request = input.proof_request()?;
    // Plan it as a daemon with the switch on would: every structural check.
    let planned = cuzk_filecoin::plan_with(&request, PlanOptions::UNVERIFIABLE_ALLOWED.with_environment())
        .context("planning the written request")?;
    let file_len = std::fs::metadata(&path)?.len();
    let message = request_bytes(&request);
    println!(
        "{spec} (seed {}): {} in {:.1}s",
        args.seed,
        path.display(),
        made.as_secs_f64()
    );
    println!(
        "  file {:.1} MiB; SubmitProof message about {:.1} MiB (limit {} MiB, daemon and client)",
        file_len as f64 / f64::from(1 << 20),
        message as f64 / f64::from(1 << 20),
        cuzk_proto::MAX_MESSAGE_BYTES >> 20
    );
    anyhow::ensure!(
        message < cuzk_proto::MAX_MESSAGE_BYTES,
        "the request exceeds the gRPC message limit"
    );
    println!(
        "  circuit {} x {} partition(s)",
        planned.plan.circuit_id(),
        planned.plan.partitions()
    );
    if let Some(reason) = &planned.unverifiable {
        println!("  unverifiable ({reason}): the daemon needs [benchmark] allow_unverifiable = true");
    }
    let submit = match &input {
        StructureInput::Porep(_) => format!("--type porep --c1 {}", path.display()),
        StructureInput::Vanilla(file) => {
            let kind = match file.proof_kind {
                cuzk_filecoin::fixtures::RequestKind::Winning => "winning",
                cuzk_filecoin::fixtures::RequestKind::Wpost => "wpost",
                cuzk_filecoin::fixtures::RequestKind::Snap => "snap",
            };
            format!("--type {kind} --vanilla {}", path.display())
        }
    };
    println!("  submit: cuzk-bench batch {submit} [--embedded --allow-unverifiable]");
    Ok(())
}
