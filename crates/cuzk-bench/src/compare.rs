//! `cuzk-bench compare-cpu`: our CPU prover and bellperson's, side by side in
//! one process, on the same circuit, parameters, r and s.

use anyhow::{bail, Context};
use clap::Args;
use cuzk_core::{
    finish, proof_to_bytes, prove_start, synthesize, ParameterCache, Randomness, Scalar, SyntheticCircuit,
    Verifier,
};
use ff::Field;
use rand::SeedableRng;
use serde::Serialize;
use std::path::PathBuf;
use std::time::{Duration, Instant};

#[derive(Args, Debug)]
pub struct CompareArgs {
    /// Circuit sizes (powers of two); repeat the flag for several.
    #[arg(long = "log2", default_values_t = [16u32, 18, 20])]
    log2: Vec<u32>,
    /// Runs per size and prover (the median is reported).
    #[arg(long, default_value_t = 3)]
    repeat: usize,
    /// Parameter cache directory.
    #[arg(long)]
    param_cache: Option<PathBuf>,
    /// Also write the figures, with the build and the host, as JSON
    /// (docs/bench/SCHEMA.md).
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
}

/// `compare-cpu`'s figures in the JSON report: one row per size, medians.
#[derive(Debug, Serialize)]
struct CompareResults {
    /// rayon's threads (both provers use them).
    threads: usize,
    rows: Vec<CompareRow>,
}

#[derive(Debug, Serialize)]
struct CompareRow {
    log2: u32,
    runs: usize,
    ours_synthesis_seconds: f64,
    ours_prove_seconds: f64,
    ours_total_seconds: f64,
    bellperson_seconds: f64,
    /// bellperson / ours (both with synthesis): above 1, ours is faster.
    ratio: f64,
    /// Always true in a written report: a difference fails the run.
    bytes_equal: bool,
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

pub fn run(args: CompareArgs) -> anyhow::Result<()> {
    if args.repeat == 0 {
        bail!("--repeat must be at least 1");
    }
    let json = crate::report::start("compare-cpu", args.json.as_deref());
    let mut rows = Vec::new();
    let cache = ParameterCache::new(
        args.param_cache
            .clone()
            .unwrap_or_else(cuzk_core::params::default_dir),
    )?;
    println!("threads: {} (rayon)", rayon::current_num_threads());
    println!(
        "{:>4} {:>9} {:>12} {:>12} {:>12} {:>14} {:>9} {:>9}",
        "k", "runs", "ours synth", "ours prove", "ours total", "bellperson", "ratio", "bytes=="
    );
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(2026);
    for &k in &args.log2 {
        let inputs = vec![Scalar::ONE, Scalar::ZERO];
        let template = SyntheticCircuit::new(1 << k, inputs.clone(), 0).map_err(anyhow::Error::msg)?;
        let (params, _) = cache
            .load_or_generate(&template.circuit_id(), || template.clone())
            .with_context(|| format!("parameters for k = {k}"))?;
        let bellperson_params = params.to_bellperson();
        let params = std::sync::Arc::new(params);
        let verifier = Verifier::new(&params.vk);
        let (mut synth, mut prove, mut total, mut theirs) = (vec![], vec![], vec![], vec![]);
        for run in 0..args.repeat {
            let circuit =
                SyntheticCircuit::new(1 << k, inputs.clone(), run as u64 + 1).map_err(anyhow::Error::msg)?;
            let (r, s) = (Scalar::random(&mut rng), Scalar::random(&mut rng));
            // Alternate which prover goes first so neither always runs on a
            // cold cache.
            let mut ours_bytes = [0u8; 192];
            let mut their_bytes = Vec::new();
            for turn in 0..2 {
                if (turn + run) % 2 == 0 {
                    let t = Instant::now();
                    let assignment = synthesize(circuit.clone(), circuit.size_hint())?;
                    let synthesized = t.elapsed();
                    let (proof, _) = finish(prove_start(assignment, &params, Randomness::Fixed { r, s })?)?;
                    let elapsed = t.elapsed();
                    synth.push(synthesized);
                    prove.push(elapsed - synthesized);
                    total.push(elapsed);
                    if !verifier
                        .verify(&proof, circuit.public_inputs())
                        .map_err(anyhow::Error::msg)?
                    {
                        bail!("our proof failed verification at k = {k}");
                    }
                    ours_bytes = proof_to_bytes(&proof);
                } else {
                    let t = Instant::now();
                    let proof = bellperson::groth16::create_proof::<blstrs::Bls12, _, _>(
                        circuit.clone(),
                        &bellperson_params,
                        r,
                        s,
                    )?;
                    theirs.push(t.elapsed());
                    proof.write(&mut their_bytes)?;
                }
            }
            if ours_bytes.as_slice() != their_bytes.as_slice() {
                bail!("proof bytes differ from bellperson's at k = {k}");
            }
        }
        let (ours_total, bellperson) = (median(total), median(theirs));
        let (synth, prove) = (median(synth), median(prove));
        println!(
            "{:>4} {:>9} {:>11.3}s {:>11.3}s {:>11.3}s {:>13.3}s {:>8.2}x {:>9}",
            k,
            args.repeat,
            synth.as_secs_f64(),
            prove.as_secs_f64(),
            ours_total.as_secs_f64(),
            bellperson.as_secs_f64(),
            bellperson.as_secs_f64() / ours_total.as_secs_f64(),
            "yes"
        );
        rows.push(CompareRow {
            log2: k,
            runs: args.repeat,
            ours_synthesis_seconds: synth.as_secs_f64(),
            ours_prove_seconds: prove.as_secs_f64(),
            ours_total_seconds: ours_total.as_secs_f64(),
            bellperson_seconds: bellperson.as_secs_f64(),
            ratio: bellperson.as_secs_f64() / ours_total.as_secs_f64(),
            bytes_equal: true,
        });
    }
    println!("ratio = bellperson time / ours (both include synthesis); > 1 means ours is faster");
    json.write(&CompareResults {
        threads: rayon::current_num_threads(),
        rows,
    })
}
