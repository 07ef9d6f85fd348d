//! `cuzk-bench compare-synthesis`: one PoRep partition's synthesis by cuzk
//! against bellperson's own (the synthesis filecoin-proofs' C2 runs), on the
//! same C1 output, side by side in one run.
//!
//! cuzk is measured twice: `cuzk_core::synthesize` (a constraint system that
//! evaluates every linear combination as it goes), and the pre-compiled
//! evaluator (`CompiledR1cs`, what the Filecoin plans use unless
//! `CUZK_R1CS=off`): the witness alone, then a, b, c by sparse products over
//! all cores. The evaluator's one-time recording is timed and reported
//! apart, with the compiled R1CS's size. The evaluator's output is checked
//! equal to `cuzk_core::synthesize`'s.
//!
//! The witness is also computed by units on all cores (the plan's parallel
//! witness: a PoRep partition by challenges), timed by wall clock and by the
//! process's CPU seconds, and checked equal to the sequential one.
//!
//! bellperson's synthesis time is its own (see [`crate::bellperson_synthesis`]);
//! it synthesises one circuit on one thread, so its CPU seconds are its wall
//! time.

use crate::bellperson_synthesis;
use crate::real_synthesis::cpu_seconds;
use clap::Args;
use cuzk_core::Scalar;
use cuzk_filecoin::plans::FilecoinProof;
use cuzk_filecoin::plans::PorepPlan;
use cuzk_filecoin::request::PorepInput;
use serde::Serialize;
use std::path::PathBuf;
use std::time::{Duration, Instant};

#[derive(Args, Debug)]
pub struct CompareSynthesisArgs {
    /// The C1 output (raw or enveloped) of a 2 KiB, 8 MiB or 512 MiB sector.
    #[arg(long)]
    c1: PathBuf,
    /// Miner actor id the sector was sealed for.
    #[arg(long, default_value_t = cuzk_filecoin::fixtures::MINER_ID)]
    miner_id: u64,
    /// Sector number (0 = the envelope's).
    #[arg(long, default_value_t = cuzk_filecoin::fixtures::SECTOR_NUMBER)]
    sector_number: u64,
    /// Parameter directory holding the PoRep parameters (bellperson's
    /// `create_proof` needs them to run its synthesis).
    #[arg(long)]
    param_cache: Option<PathBuf>,
    /// Runs of each (the median is reported).
    #[arg(long, default_value_t = 3)]
    repeat: usize,
    /// Also write the figures, with the build and the host, as JSON
    /// (docs/bench/SCHEMA.md).
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
}

/// `compare-synthesis`'s figures in the JSON report (medians, seconds).
#[derive(Debug, Serialize)]
struct SynthesisResults {
    circuit_id: String,
    constraints: usize,
    runs: usize,
    /// rayon's threads (the sparse products and the witness by units).
    threads: usize,
    cuzk_synthesis_seconds: f64,
    evaluator_seconds: f64,
    evaluator_witness_seconds: f64,
    evaluator_products_seconds: f64,
    units: usize,
    units_wall_seconds: f64,
    units_cpu_seconds: f64,
    bellperson_synthesis_seconds: f64,
    /// The evaluator's one-time recording (per circuit id and process).
    record_seconds: f64,
    r1cs_nonzeros: usize,
    r1cs_distinct_coefficients: usize,
    r1cs_bytes: usize,
    /// bellperson / cuzk: above 1, cuzk is faster.
    ratio_synthesis: f64,
    ratio_evaluator: f64,
    ratio_units_latency: f64,
    ratio_units_core_seconds: f64,
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

pub fn run(args: CompareSynthesisArgs) -> anyhow::Result<()> {
    anyhow::ensure!(args.repeat > 0, "--repeat must be at least 1");
    let json = crate::report::start("compare-synthesis", args.json.as_deref());
    bellperson_synthesis::capture()?;
    let dir =
        cuzk_filecoin::settings::init_with(args.param_cache.as_deref(), &cuzk_core::params::default_dir());

    let c1 = std::fs::read(&args.c1)?;
    let request = cuzk_filecoin::request::porep_request(c1, args.miner_id, args.sector_number)?;
    let input = PorepInput::parse(&request)?;
    let size = u64::from(input.registered.sector_size());
    anyhow::ensure!(
        size <= 512 << 20,
        "compare-synthesis takes 2 KiB, 8 MiB or 512 MiB sectors (the base tree shape)"
    );
    let plan = PorepPlan::<filecoin_proofs::SectorShape2KiB>::new(
        input,
        &cuzk_filecoin::PlanOptions::default().with_environment(),
    )?;
    let circuit_id = cuzk_core::ProofPlan::circuit_id(&plan);
    println!("circuit: {circuit_id} (partition 0)");

    let circuit = || plan.circuit(0).map_err(anyhow::Error::msg);
    let hint = cuzk_core::SizeHint {
        constraints: cuzk_filecoin::constraints::porep(size),
        inputs: 0,
        aux: cuzk_filecoin::constraints::porep(size),
    };

    // The evaluator's one-time recording (per circuit id and process).
    let started = Instant::now();
    let r1cs = cuzk_core::CompiledR1cs::record(circuit()?)?;
    let record = started.elapsed();
    let prefix = plan
        .proof()
        .unit_prefix()
        .expect("PoRep partitions are made of challenges");
    let layout = r1cs
        .units(prefix)
        .ok_or_else(|| anyhow::anyhow!("no {prefix} units in {circuit_id}"))?;

    // bellperson's create_proof needs the parameters; it times its own
    // synthesis (the rest of its proof is not counted).
    let path = dir.join(format!("{circuit_id}.params"));
    let file = std::fs::File::open(&path).map_err(|e| {
        anyhow::anyhow!(
            "{}: {e} (generate it with `cuzk-bench gen-params --type porep`)",
            path.display()
        )
    })?;
    let params =
        bellperson::groth16::Parameters::<blstrs::Bls12>::read(std::io::BufReader::new(file), false)?;

    // Rounds of all three in turn, so a change in the machine's load hits
    // each alike. Building the circuit from the C1 is counted for cuzk (as
    // in the plans), not for bellperson (its timer starts inside).
    let (mut ours, mut evaluated) = (Vec::new(), Vec::new());
    let (mut witness_times, mut product_times) = (Vec::new(), Vec::new());
    let (mut unit_times, mut unit_cpu) = (Vec::new(), Vec::new());
    let mut constraints = 0;
    for _ in 0..args.repeat {
        let started = Instant::now();
        let reference = cuzk_core::synthesize(circuit()?, hint)?;
        ours.push(started.elapsed());
        constraints = reference.a.len();

        let started = Instant::now();
        let witness = r1cs.witness(circuit()?)?;
        let witnessed = started.elapsed();
        let sequential = witness.clone();
        let assignment = r1cs.assign(witness)?;
        let total = started.elapsed();

        let started = Instant::now();
        let cpu = cpu_seconds();
        let by_units = r1cs.witness_by_units(&layout, |unit| {
            plan.proof()
                .unit_circuit(0, unit)
                .map_err(|e| cuzk_core::R1csError::UnitMismatch(e.to_string()))
        })?;
        unit_times.push(started.elapsed());
        unit_cpu.push(Duration::from_secs_f64(cpu_seconds() - cpu));
        anyhow::ensure!(
            by_units == sequential,
            "the witness by units differs from the sequential one"
        );
        drop((by_units, sequential));
        evaluated.push(total);
        witness_times.push(witnessed);
        product_times.push(total - witnessed);
        anyhow::ensure!(
            assignment == reference,
            "the evaluator's assignment differs from cuzk_core::synthesize's"
        );
        drop((assignment, reference));

        let _ =
            bellperson::groth16::create_proof(circuit()?, &params, Scalar::from(1u64), Scalar::from(2u64))?;
    }
    let theirs = bellperson_synthesis::take();
    anyhow::ensure!(
        theirs.len() == args.repeat,
        "captured {} bellperson synthesis times for {} runs",
        theirs.len(),
        args.repeat
    );
    let (ours, theirs, evaluated) = (median(ours), median(theirs), median(evaluated));
    let (witness, products) = (median(witness_times), median(product_times));
    let (units, units_cpu) = (median(unit_times), median(unit_cpu));
    let mib = |bytes: usize| bytes as f64 / f64::from(1 << 20);
    println!("constraints: {constraints}");
    println!(
        "cuzk synthesis:       {:.3} s (median of {}, cuzk_core::synthesize)",
        ours.as_secs_f64(),
        args.repeat
    );
    println!(
        "cuzk evaluator:       {:.3} s (median of {}: witness {:.3} s + sparse products {:.3} s on {} threads; \
         equal to cuzk_core::synthesize)",
        evaluated.as_secs_f64(),
        args.repeat,
        witness.as_secs_f64(),
        products.as_secs_f64(),
        rayon::current_num_threads()
    );
    println!(
        "cuzk witness by units: {:.3} s wall, {:.3} CPU-s (medians of {}: {} units on {} threads; equal to \
         the sequential witness)",
        units.as_secs_f64(),
        units_cpu.as_secs_f64(),
        args.repeat,
        layout.len(),
        rayon::current_num_threads()
    );
    println!(
        "bellperson synthesis: {:.3} s (median of {}, its own timing, one thread per circuit)",
        theirs.as_secs_f64(),
        args.repeat
    );
    println!(
        "evaluator recording (once per circuit id): {:.3} s; compiled R1CS: {} nonzeros, {} distinct \
         coefficients, {} bytes ({:.1} MiB, {:.2} bytes per nonzero all included)",
        record.as_secs_f64(),
        r1cs.nonzeros(),
        r1cs.distinct_coefficients(),
        r1cs.memory_bytes(),
        mib(r1cs.memory_bytes()),
        r1cs.memory_bytes() as f64 / r1cs.nonzeros() as f64
    );
    println!(
        "ratio bellperson/cuzk synthesis: {:.2}x",
        theirs.as_secs_f64() / ours.as_secs_f64()
    );
    println!(
        "ratio bellperson/cuzk evaluator: {:.2}x",
        theirs.as_secs_f64() / evaluated.as_secs_f64()
    );
    // What the host computes per partition once a, b, c are on the device.
    println!(
        "ratio bellperson synthesis / cuzk witness by units: {:.2}x in latency, {:.2}x in core-seconds",
        theirs.as_secs_f64() / units.as_secs_f64(),
        theirs.as_secs_f64() / units_cpu.as_secs_f64()
    );
    json.write(&SynthesisResults {
        circuit_id,
        constraints,
        runs: args.repeat,
        threads: rayon::current_num_threads(),
        cuzk_synthesis_seconds: ours.as_secs_f64(),
        evaluator_seconds: evaluated.as_secs_f64(),
        evaluator_witness_seconds: witness.as_secs_f64(),
        evaluator_products_seconds: products.as_secs_f64(),
        units: layout.len(),
        units_wall_seconds: units.as_secs_f64(),
        units_cpu_seconds: units_cpu.as_secs_f64(),
        bellperson_synthesis_seconds: theirs.as_secs_f64(),
        record_seconds: record.as_secs_f64(),
        r1cs_nonzeros: r1cs.nonzeros(),
        r1cs_distinct_coefficients: r1cs.distinct_coefficients(),
        r1cs_bytes: r1cs.memory_bytes(),
        ratio_synthesis: theirs.as_secs_f64() / ours.as_secs_f64(),
        ratio_evaluator: theirs.as_secs_f64() / evaluated.as_secs_f64(),
        ratio_units_latency: theirs.as_secs_f64() / units.as_secs_f64(),
        ratio_units_core_seconds: theirs.as_secs_f64() / units_cpu.as_secs_f64(),
    })
}
