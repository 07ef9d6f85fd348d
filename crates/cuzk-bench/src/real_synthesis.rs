//! `cuzk-bench real-synthesis`: the host side of one real-structure
//! partition at full size (circuit build, synthesis, the compiled R1CS,
//! witness sequentially and by units on all cores, a, b, c, bellperson's
//! own synthesis), its input generated in memory (`real-inputs`' requests,
//! issue 13), printed as one JSON line.

use crate::bellperson_synthesis;
use crate::real_inputs::{parse_spec, request_bytes};
use clap::{Args, ValueEnum};
use cuzk_core::PlanError;
use cuzk_core::{CompiledR1cs, Scalar, SizeHint, SpareValues};
use cuzk_filecoin::structure::{self, CircuitWork, NativeWriter, PartitionUnits, StructureSpec};
use cuzk_filecoin::PlanOptions;
use serde_json::{json, Value};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Instant;

/// The highest peak RSS of any step (each step resets the kernel's peak).
static PEAK_RSS: AtomicU64 = AtomicU64::new(0);

const ALLOW: PlanOptions = PlanOptions::UNVERIFIABLE_ALLOWED;

/// Measurement steps that can be left out.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Step {
    /// `cuzk_core::synthesize` (the bellperson-style constraint system).
    Synthesize,
    /// The witness as the engine computes it (natively where the proof
    /// type has a writer; checked equal to the gadgets' sequential one).
    Native,
    /// a, b, c from the compiled R1CS and the witness.
    Assign,
    /// The witness by units on all cores (checked equal to the sequential one).
    Units,
    /// bellperson's own synthesis (`create_proof`'s, timed by bellperson).
    Bellperson,
}

#[derive(Args, Debug)]
pub struct RealSynthesisArgs {
    /// The real-structure input whose partition is measured (see
    /// `real-inputs`).
    #[arg(long = "proof", value_parser = parse_spec, default_value = "porep-32g")]
    proof: StructureSpec,
    /// The partition.
    #[arg(long, default_value_t = 0)]
    partition: usize,
    /// Seed of the random values.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Steps to leave out (they are also left out, with the reason, when
    /// the machine's available memory cannot hold them).
    #[arg(long, value_enum)]
    skip: Vec<Step>,
    /// Runs of the witness by units (the first is checked equal to the
    /// sequential witness; each is timed).
    #[arg(long, default_value_t = 1)]
    units_runs: usize,
    /// Only the native witness (`FilecoinProof::native_witness`, no
    /// self-check, nothing recorded), timed over this many runs, and
    /// legacy Poseidon of arity 8 one hash at a time against eight at once
    /// (where the processor has AVX-512 IFMA), on one thread.
    #[arg(long)]
    native_only: Option<usize>,
    /// With --native-only: PoSt witnesses leave their paths' values to
    /// the prover (`[gpus] post_paths_on_device`): the host's part alone.
    #[arg(long)]
    paths_on_device: bool,
}

/// This process's CPU seconds (user + system) from /proc/self/stat, in
/// the kernel's fixed 100 Hz user-visible clock ticks.
pub(crate) fn cpu_seconds() -> f64 {
    let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else {
        return f64::NAN;
    };
    // Fields after the command name (which may hold spaces, in brackets):
    // utime and stime are the 14th and 15th fields of the line.
    let rest = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|v| v.parse::<f64>().ok())
            .unwrap_or(f64::NAN)
    };
    (ticks(11) + ticks(12)) / 100.0
}

/// A field of /proc/self/status or /proc/meminfo, in bytes.
fn kib_field(file: &str, field: &str) -> Option<u64> {
    let text = std::fs::read_to_string(file).ok()?;
    let line = text.lines().find(|l| l.starts_with(&format!("{field}:")))?;
    line.split_whitespace()
        .nth(1)?
        .parse::<u64>()
        .ok()
        .map(|kib| kib << 10)
}

/// Resets this process's peak RSS (Linux: `5` into /proc/self/clear_refs),
/// so each step's peak is its own; false where the kernel does not allow it.
pub(crate) fn reset_peak_rss() -> bool {
    std::fs::write("/proc/self/clear_refs", "5").is_ok()
}

/// A step's wall and CPU time, and the peak RSS while it ran.
struct Timed {
    started: Instant,
    cpu: f64,
    peak_reset: bool,
}

impl Timed {
    fn start() -> Self {
        let peak_reset = reset_peak_rss();
        Self {
            started: Instant::now(),
            cpu: cpu_seconds(),
            peak_reset,
        }
    }

    fn stop(self, mut extra: Value) -> Value {
        let wall = self.started.elapsed().as_secs_f64();
        let cpu = cpu_seconds() - self.cpu;
        let peak = kib_field("/proc/self/status", "VmHWM");
        if let Some(map) = extra.as_object_mut() {
            map.insert("wall_s".into(), json!(round(wall)));
            map.insert("cpu_s".into(), json!(round(cpu)));
            map.insert("cores_used".into(), json!(round(cpu / wall.max(1e-9))));
            if self.peak_reset {
                map.insert("peak_rss_bytes".into(), json!(peak));
            }
            PEAK_RSS.fetch_max(peak.unwrap_or(0), Ordering::Relaxed);
        }
        eprintln!("  {:.1} s wall, {:.1} CPU-s", wall, cpu);
        extra
    }
}

fn round(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

fn available_bytes() -> u64 {
    kib_field("/proc/meminfo", "MemAvailable").unwrap_or(u64::MAX)
}

/// Host bytes `cuzk_core::synthesize` holds at the end: a, b, c reserved at
/// the FFT domain size, the aux and input assignments (32-byte scalars), and
/// the density bitmaps.
fn assignment_bytes(constraints: usize, aux: usize, inputs: usize) -> u64 {
    (3 * constraints.next_power_of_two() as u64 + aux as u64 + inputs as u64) * 32 + aux as u64 / 4
}

/// Headroom kept free when deciding whether a step fits.
const MARGIN: u64 = 1 << 30;

/// The measurement, as a [`CircuitWork`] on the partition's circuit.
struct Measure {
    /// The partition's plan, as the engine runs it (for the native step).
    plan: Box<dyn cuzk_core::ProofPlan>,
    /// The plan's R1CS cache.
    r1cs_cache: std::sync::Arc<cuzk_core::R1csCache>,
    partition: usize,
    skip: Vec<Step>,
    units_runs: usize,
    out: serde_json::Map<String, Value>,
}

impl Measure {
    fn skipped(&mut self, key: &str, why: String) {
        eprintln!("{key}: skipped ({why})");
        self.out.insert(key.into(), json!({ "skipped": why }));
    }

    /// Whether `step` runs: not skipped by the flag, and its estimated
    /// `need` fits in the available memory.
    fn fits(&mut self, key: &str, step: Step, need: u64) -> bool {
        if self.skip.contains(&step) {
            self.skipped(key, "--skip".into());
            return false;
        }
        let available = available_bytes();
        if need + MARGIN > available {
            let gib = |b: u64| b as f64 / (1u64 << 30) as f64;
            self.skipped(
                key,
                format!(
                    "needs about {:.1} GiB more, {:.1} GiB available",
                    gib(need),
                    gib(available)
                ),
            );
            return false;
        }
        true
    }
}

impl CircuitWork for Measure {
    type Out = serde_json::Map<String, Value>;

    fn run<C: bellperson::Circuit<Scalar> + Send>(
        mut self,
        circuit: &dyn Fn() -> Result<C, PlanError>,
        units: Option<PartitionUnits<'_, C>>,
        _: &NativeWriter<'_>,
    ) -> Result<Self::Out, PlanError> {
        let synthesis = |e: cuzk_core::R1csError| PlanError::Synthesis(e.to_string());

        eprintln!("circuit build ...");
        let t = Timed::start();
        let built = circuit()?;
        self.out.insert("circuit_build".into(), t.stop(json!({})));

        // The compiled R1CS first: its counts size the other steps' estimates.
        eprintln!("record (CompiledR1cs::record) ...");
        let t = Timed::start();
        let r1cs = CompiledR1cs::record(built).map_err(synthesis)?;
        // Shared with the plan's cache, so its witness does not record again.
        let circuit_id = self.plan.circuit_id();
        let r1cs = self
            .r1cs_cache
            .get_or_record(&circuit_id, || Ok::<_, PlanError>(r1cs))?;
        let record = t.stop(json!({
            "constraints": r1cs.num_constraints(),
            "inputs": r1cs.num_inputs(),
            "aux": r1cs.num_aux(),
            "nonzeros": r1cs.nonzeros(),
            "memory_bytes": r1cs.memory_bytes(),
        }));
        self.out.insert("record".into(), record);
        let (constraints, inputs, aux) = (r1cs.num_constraints(), r1cs.num_inputs(), r1cs.num_aux());
        let full = assignment_bytes(constraints, aux, inputs);
        self.out.insert(
            "bytes".into(),
            json!({
                "witness": (aux + inputs) * 32,
                "assignment": full,
                "compiled_r1cs": r1cs.memory_bytes(),
            }),
        );

        eprintln!("witness (CompiledR1cs::witness) ...");
        let t = Timed::start();
        let witness = r1cs.witness(circuit()?).map_err(synthesis)?;
        self.out
            .insert("witness".into(), t.stop(json!({ "aux": witness.aux.len() })));
        // What a partition waiting for the device holds: its witness, the
        // aux variables kept as bits, against 32 bytes a variable.
        self.out.insert(
            "packed_witness".into(),
            json!({
                "bytes": witness.heap_bytes(),
                "wide_aux": witness.aux.wide_count(),
                "wide_fraction": witness.aux.wide_count() as f64 / aux.max(1) as f64,
            }),
        );

        // As the engine computes it: native where the type has a writer.
        let generated_by = if self.fits("native", Step::Native, witness.heap_bytes()) {
            eprintln!("witness as the engine computes it (ProofPlan::synthesize_witness) ...");
            let natives = cuzk_filecoin::plans::native_witnesses();
            let t = Timed::start();
            let data = self
                .plan
                .synthesize_witness(self.partition)
                .map_err(|e| PlanError::Synthesis(e.to_string()))?;
            let native = cuzk_filecoin::plans::native_witnesses() > natives;
            let mut step = t.stop(json!({ "native": native }));
            let cuzk_core::PartitionData::Witness(engine) = data else {
                return Err(PlanError::Synthesis(
                    "no witness-only form (CUZK_R1CS=off?)".into(),
                ));
            };
            let equal = engine.witness == witness;
            step["equal_to_gadgets"] = json!(equal);
            if !equal {
                return Err(PlanError::Synthesis(
                    "the engine's witness differs from the gadgets' sequential one".into(),
                ));
            }
            let cpu = step["cpu_s"].as_f64();
            self.out.insert("native".into(), step);
            Some((if native { "native" } else { "gadgets" }, cpu))
        } else {
            None
        };

        // By units: a second witness beside the first, to compare.
        let layout = units.as_ref().and_then(|u| r1cs.units(u.prefix));
        match (&units, layout) {
            (Some(units), Some(layout)) if self.fits("units", Step::Units, witness.heap_bytes()) => {
                eprintln!(
                    "witness by {} units ({} threads) ...",
                    layout.len(),
                    rayon::current_num_threads()
                );
                let run = || {
                    r1cs.witness_by_units(&layout, |unit| {
                        (units.circuit)(unit).map_err(|e| cuzk_core::R1csError::UnitMismatch(e.to_string()))
                    })
                    .map_err(synthesis)
                };
                let t = Timed::start();
                let by_units = run()?;
                let mut step = t.stop(json!({
                    "units": layout.len(),
                    "threads": rayon::current_num_threads(),
                }));
                // Compared once the timer stopped (one thread over GBs).
                let equal = by_units == witness;
                drop(by_units);
                step["equal_to_sequential"] = json!(equal);
                if !equal {
                    return Err(PlanError::Synthesis(
                        "the witness by units differs from the sequential one".into(),
                    ));
                }
                let mut again = Vec::new();
                for _ in 1..self.units_runs {
                    let t = Timed::start();
                    drop(run()?);
                    again.push(t.stop(json!({})));
                }
                step["again"] = json!(again);
                self.out.insert("units".into(), step);
            }
            (Some(units), None) => self.skipped("units", format!("no {} namespaces", units.prefix)),
            (None, _) => self.skipped("units", "the proof type has no units".into()),
            _ => {}
        }
        // The generator the engine uses and its cost for one partition
        // (the gadgets' by units where the engine would run them so).
        let gadgets_cpu = |out: &serde_json::Map<String, Value>| {
            ["units", "witness"]
                .iter()
                .find_map(|key| out.get(*key)?.get("cpu_s")?.as_f64())
        };
        let (generator, core_seconds) = match generated_by {
            Some(("native", cpu)) => ("native", cpu),
            _ => ("gadgets", gadgets_cpu(&self.out)),
        };
        self.out.insert("witness_generator".into(), json!(generator));
        self.out
            .insert("witness_core_seconds_per_partition".into(), json!(core_seconds));

        // a, b, c need the domain-sized vectors on top of the witness and
        // the compiled R1CS, both held now.
        let abc = full - (aux + inputs) as u64 * 32;
        if self.fits("assign", Step::Assign, abc) {
            eprintln!("assign (a, b, c by sparse products) ...");
            let t = Timed::start();
            let assignment = r1cs.assign(witness).map_err(synthesis)?;
            self.out.insert(
                "assign".into(),
                t.stop(json!({ "constraints": assignment.a.len() })),
            );
            drop(assignment);
        } else {
            drop(witness);
        }
        drop(r1cs);
        self.r1cs_cache.evict(&circuit_id);

        // bellperson-style synthesis last, alone in memory.
        if self.fits("synthesize", Step::Synthesize, full) {
            eprintln!("synthesize (cuzk_core::synthesize) ...");
            let hint = SizeHint {
                constraints,
                inputs,
                aux,
            };
            let t = Timed::start();
            let assignment = cuzk_core::synthesize(circuit()?, hint)
                .map_err(|e| PlanError::Synthesis(format!("synthesize: {e}")))?;
            let out = t.stop(json!({ "constraints": assignment.a.len() }));
            self.out.insert("synthesize".into(), out);
        }

        // bellperson's own synthesis last: its prover is abandoned (and the
        // process ends) once the synthesis time is logged.
        if self.fits("bellperson", Step::Bellperson, full) {
            eprintln!("bellperson synthesis (create_proof, its own timing) ...");
            return Err(bellperson_synthesis_then_exit(circuit()?, self.out));
        }
        Ok(self.out)
    }
}

/// Set once bellperson's `create_proof` has returned.
static PROVER_RETURNED: AtomicBool = AtomicBool::new(false);

/// bellperson's synthesis of `circuit` (one thread, as its prover runs one
/// circuit), with parameters that hold no points: its `create_proof` logs
/// the synthesis time, and a watcher thread then prints `out` with it and
/// ends the process (whatever of the prover follows, on empty parameters,
/// is abandoned). Returns only if no synthesis time was logged.
fn bellperson_synthesis_then_exit<C: bellperson::Circuit<Scalar> + Send>(
    circuit: C,
    mut out: serde_json::Map<String, Value>,
) -> PlanError {
    let t = Timed::start();
    let watcher = std::thread::spawn(move || loop {
        if let Some(time) = bellperson_synthesis::wait_for_one(std::time::Duration::from_secs(1)) {
            let step = t.stop(json!({ "bellperson_wall_s": round(time.as_secs_f64()) }));
            out.insert("bellperson".into(), step);
            print_output(out);
            std::process::exit(0);
        }
        if PROVER_RETURNED.load(Ordering::Acquire) {
            return;
        }
    });
    let params = bellperson_synthesis::empty_parameters();
    let result = bellperson::groth16::create_proof(circuit, &params, Scalar::from(1u64), Scalar::from(2u64));
    PROVER_RETURNED.store(true, Ordering::Release);
    let _ = watcher.join();
    PlanError::Synthesis(format!(
        "bellperson's create_proof logged no synthesis time (it returned {:?})",
        result.map(|_| ())
    ))
}

/// Prints the measurement (one JSON line), with the whole run's peak RSS.
fn print_output(mut out: serde_json::Map<String, Value>) {
    let peak = kib_field("/proc/self/status", "VmHWM").unwrap_or(0);
    out.insert(
        "peak_rss_bytes".into(),
        json!(PEAK_RSS.fetch_max(peak, Ordering::Relaxed).max(peak)),
    );
    // The build that measured (commit, profile, features), as the --json
    // reports name it.
    out.insert("tool".into(), json!(crate::report::tool()));
    println!("{}", Value::Object(out));
}

pub fn run(args: RealSynthesisArgs) -> anyhow::Result<()> {
    crate::bellperson_synthesis::capture()?;
    let spec = StructureSpec {
        seed: args.seed,
        ..args.proof
    };
    let mut out = serde_json::Map::new();
    out.insert("proof".into(), json!(spec.to_string()));
    out.insert("partition".into(), json!(args.partition));
    out.insert("seed".into(), json!(args.seed));
    out.insert(
        "cores".into(),
        json!(std::thread::available_parallelism().map_or(0, |n| n.get())),
    );
    out.insert("rayon_threads".into(), json!(rayon::current_num_threads()));
    out.insert(
        "memory_total_bytes".into(),
        json!(kib_field("/proc/meminfo", "MemTotal")),
    );

    eprintln!("generating {spec} ...");
    let t = Timed::start();
    let request = structure::generate(&spec)?.proof_request()?;
    out.insert(
        "generate".into(),
        t.stop(json!({ "request_bytes": request_bytes(&request) })),
    );

    // Planning (every check the daemon runs) is timed up to the first call
    // of the work, which starts with the circuit build.
    eprintln!("planning ...");
    let planned = Instant::now();
    let plan_cpu = cpu_seconds();
    struct Planned(Measure, Instant, f64);
    impl CircuitWork for Planned {
        type Out = serde_json::Map<String, Value>;
        fn run<C: bellperson::Circuit<Scalar> + Send>(
            self,
            circuit: &dyn Fn() -> Result<C, PlanError>,
            units: Option<PartitionUnits<'_, C>>,
            native: &NativeWriter<'_>,
        ) -> Result<Self::Out, PlanError> {
            let Planned(mut measure, started, cpu) = self;
            let (wall, cpu) = (started.elapsed().as_secs_f64(), cpu_seconds() - cpu);
            measure.out.insert(
                "plan".into(),
                json!({ "wall_s": round(wall), "cpu_s": round(cpu) }),
            );
            measure.run(circuit, units, native)
        }
    }
    if let Some(runs) = args.native_only {
        out.insert("poseidon_arity8".into(), poseidon_rates());
        let out = structure::with_partition_circuit(
            &request,
            PlanOptions {
                paths_on_device: args.paths_on_device,
                ..ALLOW.with_environment()
            },
            args.partition,
            NativeOnly { runs, out },
        )?;
        print_output(out);
        return Ok(());
    }
    let r1cs_cache = std::sync::Arc::new(cuzk_core::R1csCache::default());
    let options = PlanOptions {
        r1cs_cache: Some(r1cs_cache.clone()),
        ..ALLOW.with_environment()
    };
    let plan = cuzk_filecoin::plan_with(&request, options)?.plan;
    let measure = Measure {
        plan,
        r1cs_cache,
        partition: args.partition,
        skip: args.skip,
        units_runs: args.units_runs,
        out,
    };
    let out = structure::with_partition_circuit(
        &request,
        ALLOW.with_environment(),
        args.partition,
        Planned(measure, planned, plan_cpu),
    )?;
    print_output(out);
    Ok(())
}

/// `--native-only`: the partition's native witness, `runs` times.
struct NativeOnly {
    runs: usize,
    out: serde_json::Map<String, Value>,
}

impl CircuitWork for NativeOnly {
    type Out = serde_json::Map<String, Value>;

    fn run<C: bellperson::Circuit<Scalar> + Send>(
        mut self,
        _: &dyn Fn() -> Result<C, PlanError>,
        _: Option<PartitionUnits<'_, C>>,
        native: &NativeWriter<'_>,
    ) -> Result<Self::Out, PlanError> {
        // Each witness allocated afresh, then with the daemon's spare
        // vectors (the first of those runs fills them, the rest reuse).
        let spares = SpareValues::new(cuzk_filecoin::source::SPARE_WITNESS_BYTES);
        for (key, spares) in [("native_runs", None), ("native_runs_spare_values", Some(&spares))] {
            let mut runs = Vec::new();
            for run in 0..self.runs {
                eprintln!("{key}, run {} ...", run + 1);
                let t = Timed::start();
                let witness = native(spares)
                    .ok_or_else(|| PlanError::Synthesis("this proof type has no native writer".into()))??;
                let aux = witness.aux.len();
                let left_paths = witness.left.as_ref().map_or(0, |l| l.paths.len());
                drop(witness);
                runs.push(t.stop(json!({ "aux": aux, "paths_left_to_the_prover": left_paths })));
            }
            self.out.insert(key.into(), json!(runs));
        }
        Ok(self.out)
    }
}

/// Legacy Poseidon of arity 8 (a Merkle level of trees C and R) on one
/// thread: microseconds a hash with its circuit values written, one hash
/// at a time with blst, and eight at once where the processor has the
/// lanes (each checked equal to the first).
fn poseidon_rates() -> Value {
    use cuzk_filecoin::native::poseidon::{lanes, poseidon_hash};
    use ff::Field;
    use typenum::U8;
    const HASHES: usize = 4096;
    let constants = &neptune::poseidon::PoseidonConstants::<Scalar, U8>::new();
    let mut rng = <rand_chacha::ChaCha8Rng as rand::SeedableRng>::seed_from_u64(1);
    let preimages: Vec<Scalar> = (0..8 * HASHES).map(|_| Scalar::random(&mut rng)).collect();
    let started = Instant::now();
    let mut one_at_a_time: Vec<Scalar> = Vec::with_capacity(HASHES * 505);
    for preimage in preimages.chunks(8) {
        poseidon_hash(&mut one_at_a_time, preimage, constants);
    }
    let scalar_us = started.elapsed().as_secs_f64() * 1e6 / HASHES as f64;
    let lanes_us = lanes(constants).map(|prepared| {
        let mut traces = vec![Scalar::ZERO; HASHES * prepared.trace_len()];
        let started = Instant::now();
        prepared.hash(&preimages, &mut traces);
        let us = started.elapsed().as_secs_f64() * 1e6 / HASHES as f64;
        assert!(traces == one_at_a_time, "the lanes' traces differ from blst's");
        us
    });
    eprintln!("Poseidon arity 8: {scalar_us:.1} us a hash one at a time, {lanes_us:?} us in lanes");
    json!({
        "hashes": HASHES,
        "one_at_a_time_us": round(scalar_us),
        "lanes_us": lanes_us.map(round),
        "speedup": lanes_us.map(|l| round(scalar_us / l)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_seconds_follow_the_work_done() {
        let before = cpu_seconds();
        let started = Instant::now();
        let mut x = 1u64;
        while started.elapsed().as_millis() < 200 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
        }
        std::hint::black_box(x);
        let spent = cpu_seconds() - before;
        assert!((0.1..5.0).contains(&spent), "{spent} CPU-s for 0.2 s of work");
    }

    #[test]
    fn assignment_bytes_reserve_the_domain() {
        // 130,278,869 constraints: a, b, c at 2^27 each, plus aux and inputs.
        let bytes = assignment_bytes(130_278_869, 130_169_893, 328);
        assert_eq!(bytes, (3 << 27) * 32 + (130_169_893 + 328) * 32 + 130_169_893 / 4);
        assert!(parse_spec("porep-32g").is_ok() && parse_spec("porep-1t").is_err());
    }
}
