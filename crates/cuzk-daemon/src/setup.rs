//! What the engine is started with, built from the configuration: its
//! prover backends (from `[gpus]`) and its plan sources (the Filecoin proof
//! types, and the benchmark circuits).

use crate::config::Config;
use anyhow::Context;
use cuzk_core::backend::{CudaBackend, Fallback, Residency, Tuning};
use cuzk_core::{CpuBackend, ParameterCache, PlanSource, ProverBackend, R1csStore};
use cuzk_engine::{Engine, EngineConfig, EngineError};
use std::path::Path;
use std::sync::Arc;

/// The engine's settings, backends and plan sources.
#[derive(Debug)]
pub struct EngineSetup {
    /// Settings.
    pub config: EngineConfig,
    /// Where partitions are proved.
    pub backends: Vec<Arc<dyn ProverBackend>>,
    /// How requests become plans.
    pub sources: Vec<Arc<dyn PlanSource>>,
}

impl EngineSetup {
    /// Everything `config` asks for, with parameters in `param_dir`.
    pub fn from_config(config: &Config, param_dir: &Path) -> anyhow::Result<Self> {
        let residency: Residency = config
            .gpus
            .srs_residency
            .parse()
            .context("[gpus] srs_residency")?;
        let backends = if config.gpus.enabled {
            gpu_backends(&config.gpus.devices, residency, config.gpu_memory_cap()?)
        } else {
            tracing::warn!("[gpus] enabled = false: proving on the CPU");
            vec![Arc::new(CpuBackend) as Arc<dyn ProverBackend>]
        };
        // Paths left to the provers only where every one writes them on
        // its device (a CPU prover would write them slower than the host's
        // own writer).
        let paths_on_device = config.gpus.post_paths_on_device && backends.iter().all(|b| b.takes_witness());
        if config.gpus.post_paths_on_device && !paths_on_device {
            tracing::warn!(
                "[gpus] post_paths_on_device: not every prover is a GPU with the witness path; off"
            );
        }
        let sources = plan_sources(
            param_dir,
            config.benchmark.synthetic,
            config.srs.verify_points == crate::config::VerifyPoints::Full,
            config.benchmark.allow_unverifiable,
            paths_on_device,
            Arc::new(config.r1cs_store(param_dir)),
        )?;
        Ok(Self {
            config: config.engine_config()?,
            backends,
            sources,
        })
    }

    /// Starts the engine.
    pub fn start(self) -> Result<Engine, EngineError> {
        Engine::start(self.config, self.backends, self.sources)
    }
}

/// One backend per visible GPU (restricted to `devices` when not empty),
/// each falling back to the CPU for what it declines; the CPU backend alone
/// when there is no GPU or the build has no CUDA.
/// `memory_cap` (bytes) caps each device's memory (`[gpus] memory_cap`, or
/// the environment's: [`Config::gpu_memory_cap`](crate::config::Config::gpu_memory_cap)).
pub fn gpu_backends(
    devices: &[u32],
    residency: Residency,
    memory_cap: Option<u64>,
) -> Vec<Arc<dyn ProverBackend>> {
    let cpu: Arc<dyn ProverBackend> = Arc::new(CpuBackend);
    let gpus = CudaBackend::detect_capped(devices, residency, Tuning::default(), memory_cap);
    if gpus.is_empty() {
        tracing::warn!(
            "no GPU backend (no CUDA device, or a build without --features cuda): proving on the CPU"
        );
        return vec![cpu];
    }
    gpus.into_iter()
        .map(|gpu| Arc::new(Fallback::new(Arc::new(gpu), Arc::clone(&cpu))) as Arc<dyn ProverBackend>)
        .collect()
}

/// The plan sources, asked in this order: the benchmark circuits when
/// `benchmark` (they claim only their reserved registered proof and their
/// own circuit ids), then the Filecoin proof types (everything else).
/// Without the benchmark source its requests are refused as unknown
/// Filecoin proof types and its ids as missing files: nothing is generated.
/// `full_point_check` reads every official file with the full point check
/// instead of trusting those whose digest matches the published one.
/// `allow_unverifiable` (`[benchmark] allow_unverifiable`) lets the Filecoin
/// source prove requests whose vanilla proofs do not verify, skipping their
/// verification (`cuzk_filecoin::PlanOptions`); off, they are refused.
/// `paths_on_device` (`[gpus] post_paths_on_device`, where every prover
/// is a GPU) has PoSt witnesses leave their paths' values to the GPUs.
/// `r1cs_store` keeps the Filecoin circuits' compiled R1CS files
/// (`[srs] r1cs_cache`).
pub fn plan_sources(
    param_dir: &Path,
    benchmark: bool,
    full_point_check: bool,
    allow_unverifiable: bool,
    paths_on_device: bool,
    r1cs_store: Arc<R1csStore>,
) -> anyhow::Result<Vec<Arc<dyn PlanSource>>> {
    let mut sources: Vec<Arc<dyn PlanSource>> = Vec::new();
    // One cache of compiled R1CS for every source's plans; the engine
    // finds it through the sources, counts it and evicts from it.
    let r1cs_cache = Arc::new(cuzk_core::R1csCache::default());
    if benchmark {
        // On by default so that a fresh daemon proves something with no
        // parameter files; bounded (sizes, memory admission, files on
        // disk), but a production daemon has no use for it.
        tracing::info!(
            "[benchmark] synthetic = true: serving benchmark requests (registered proof 9000) and \
             generating their parameters on first use; set it false in production"
        );
        let cache = ParameterCache::new(param_dir)
            .with_context(|| format!("parameter directory {}", param_dir.display()))?;
        sources.push(Arc::new(
            cuzk_synthetic::SyntheticPlans::new(cache).with_r1cs_cache(Arc::clone(&r1cs_cache)),
        ));
    }
    if allow_unverifiable {
        tracing::warn!(
            "[benchmark] allow_unverifiable = true: Filecoin requests whose vanilla proofs do not verify \
             are proved WITHOUT verification (benchmarks only)"
        );
    }
    sources.push(Arc::new(
        cuzk_filecoin::FilecoinPlans::new(param_dir.to_path_buf())
            .with_environment()
            .with_full_point_check(full_point_check)
            .with_allow_unverifiable(allow_unverifiable)
            .with_paths_on_device(paths_on_device)
            .with_r1cs_store(r1cs_store)
            .with_r1cs_cache(r1cs_cache),
    ));
    Ok(sources)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `[benchmark] allow_unverifiable` reaches the Filecoin source: a
    /// real-structure request (its vanilla proofs do not verify) is refused
    /// by default and planned with the switch on.
    #[test]
    fn the_benchmark_switch_reaches_the_filecoin_source() {
        let spec = "window-post-2k"
            .parse::<cuzk_filecoin::structure::StructureSpec>()
            .unwrap();
        let request = cuzk_filecoin::structure::generate(&spec)
            .unwrap()
            .proof_request()
            .unwrap();
        let dir = tempfile::tempdir().unwrap();
        for (text, allowed) in [("", false), ("[benchmark]\nallow_unverifiable = true", true)] {
            let config: Config = toml::from_str(text).unwrap();
            let sources = EngineSetup::from_config(&config, dir.path()).unwrap().sources;
            let planned = sources
                .iter()
                .find_map(|source| source.plan(&request))
                .expect("claimed");
            match planned {
                Ok(_) => assert!(allowed, "planned with the switch off"),
                Err(cuzk_core::PlanError::InvalidArgument(m)) => {
                    assert!(!allowed, "refused with the switch on: {m}")
                }
                Err(e) => panic!("{e:?}"),
            }
        }
    }
}
