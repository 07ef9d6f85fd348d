//! Parameters of the benchmark circuits, generated on first use into the
//! parameter cache. Their ids carry their sizes
//! (`synthetic-v1-n<constraints>-i<inputs>`,
//! `shaped-v1-n<constraints>-i<inputs>-s<shape seed>`), and those sizes are
//! bounds-checked before anything is generated: an id is untrusted input
//! (PreloadSRS takes one from any client).

use crate::spec::check_dimensions;
use cuzk_core::plan::without_directory;
use cuzk_core::shaped::{parse_shaped_circuit_id, write_shaped_parameters, ShapedCircuit, SHAPED_POINT_SEED};
use cuzk_core::{
    CacheOutcome, ParameterCache, ParameterRecipe, PlanError, PointCheck, ProvingParameters, SyntheticCircuit,
};
use std::time::Instant;

/// The recipe for `circuit_id` when it names a benchmark circuit.
pub fn recipe(
    cache: &ParameterCache,
    circuit_id: &str,
) -> Option<Result<Box<dyn ParameterRecipe>, PlanError>> {
    if circuit_id.starts_with("synthetic-") {
        let Some((constraints, inputs)) = SyntheticCircuit::parse_circuit_id(circuit_id) else {
            return Some(Err(malformed(circuit_id)));
        };
        return Some(check_dimensions(constraints, inputs).map(|()| {
            Box::new(SyntheticParameters {
                cache: cache.clone(),
                circuit_id: circuit_id.to_string(),
                constraints,
                inputs,
            }) as Box<dyn ParameterRecipe>
        }));
    }
    if circuit_id.starts_with("shaped-") {
        let Some((constraints, inputs, shape_seed)) = parse_shaped_circuit_id(circuit_id) else {
            return Some(Err(malformed(circuit_id)));
        };
        return Some(check_dimensions(constraints, inputs).map(|()| {
            Box::new(ShapedParameters {
                cache: cache.clone(),
                circuit_id: circuit_id.to_string(),
                constraints,
                inputs,
                shape_seed,
            }) as Box<dyn ParameterRecipe>
        }));
    }
    None
}

/// Bytes of an uncompressed G1 and G2 point, as held in memory.
const G1_BYTES: usize = 96;
const G2_BYTES: usize = 192;

/// Host memory bellperson's generator takes at its peak for the synthetic
/// circuit: the constraint system it records, the query evaluations, and
/// each query in projective then affine form. Measured peak per constraint
/// (`the_generation_estimate_covers_the_measured_peak`), with a margin.
pub fn synthetic_generation_bytes(constraints: usize, inputs: usize) -> u64 {
    let domain = (constraints + inputs + 1).next_power_of_two() as u64;
    GENERATION_BYTES_PER_DOMAIN_POINT * domain
}

/// See [`synthetic_generation_bytes`].
const GENERATION_BYTES_PER_DOMAIN_POINT: u64 = 2560;

/// Benchmark parameter files kept in the parameter directory at most: each
/// distinct size or shape seed a client names would otherwise leave a file
/// there for good.
pub const MAX_BENCHMARK_PARAMETER_FILES: usize = 8;

/// Before `circuit_id`'s file is written (when it is not there yet):
/// removes the benchmark parameter files (`synthetic-*`, `shaped-*`) used
/// least recently (by modification time: a read refreshes it) until fewer
/// than [`MAX_BENCHMARK_PARAMETER_FILES`] remain. Resident copies are not
/// affected; a removed file is generated again when next used. Official
/// files are never touched.
fn make_room_on_disk(cache: &ParameterCache, circuit_id: &str) {
    let own = cache.params_path(circuit_id);
    if own.exists() {
        // Read: mark it used, so it is the last to go.
        let _ = std::fs::File::options()
            .append(true)
            .open(&own)
            .and_then(|f| f.set_modified(std::time::SystemTime::now()));
        return;
    }
    let Ok(dir) = std::fs::read_dir(cache.dir()) else {
        return;
    };
    let mut files: Vec<(std::time::SystemTime, std::path::PathBuf)> = dir
        .filter_map(Result::ok)
        .filter(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            (name.starts_with("synthetic-") || name.starts_with("shaped-")) && name.ends_with(".params")
        })
        .filter_map(|e| Some((e.metadata().ok()?.modified().ok()?, e.path())))
        .collect();
    files.sort();
    let excess = (files.len() + 1).saturating_sub(MAX_BENCHMARK_PARAMETER_FILES);
    for (_, path) in files.into_iter().take(excess) {
        tracing::info!(file = %path.display(), "removing the least recently used benchmark parameter file");
        let _ = std::fs::remove_file(&path);
        let _ = std::fs::remove_file(path.with_extension("vk"));
    }
}

fn malformed(circuit_id: &str) -> PlanError {
    PlanError::InvalidArgument(format!(
        "malformed benchmark circuit id {:?} (synthetic-v1-n<constraints>-i<inputs> or \
         shaped-v1-n<constraints>-i<inputs>-s<seed>)",
        circuit_id.chars().take(80).collect::<String>()
    ))
}

/// Parameters of the synthetic circuit, from bellperson's generator with a
/// seed derived from the id (identical on every machine).
#[derive(Debug)]
struct SyntheticParameters {
    cache: ParameterCache,
    circuit_id: String,
    constraints: usize,
    inputs: usize,
}

impl ParameterRecipe for SyntheticParameters {
    fn check_available(&self) -> Result<(), PlanError> {
        Ok(())
    }

    /// The cached file's length when it reads, else the generator's peak.
    fn memory_bytes(&self) -> u64 {
        match std::fs::metadata(self.cache.params_path(&self.circuit_id)) {
            Ok(file) => file.len(),
            Err(_) => synthetic_generation_bytes(self.constraints, self.inputs),
        }
    }

    fn load(&self) -> Result<ProvingParameters, PlanError> {
        let circuit = SyntheticCircuit::new(
            self.constraints,
            vec![cuzk_core::Scalar::from(0u64); self.inputs],
            0,
        )
        .map_err(|e| PlanError::InvalidArgument(e.to_string()))?;
        make_room_on_disk(&self.cache, &self.circuit_id);
        let (params, outcome) = self
            .cache
            .load_or_generate(&self.circuit_id, || circuit)
            .map_err(|e| {
                PlanError::Parameters(without_directory(
                    &e.to_string(),
                    &self.cache.params_path(&self.circuit_id),
                ))
            })?;
        if let CacheOutcome::Generated(t) = outcome {
            tracing::info!(
                circuit_id = %self.circuit_id,
                seconds = t.as_secs_f64(),
                "generated synthetic parameters"
            );
        }
        Ok(params)
    }
}

/// A shaped parameter file (`cuzk-bench gen-srs`), written first if it is
/// missing. Its points are checked to be on the curve but not for the
/// subgroup: at full size (430 M points) that check alone would take many
/// minutes, and only this machine's generator writes such files.
#[derive(Debug)]
struct ShapedParameters {
    cache: ParameterCache,
    circuit_id: String,
    constraints: usize,
    inputs: usize,
    shape_seed: u64,
}

impl ParameterRecipe for ShapedParameters {
    fn check_available(&self) -> Result<(), PlanError> {
        Ok(())
    }

    /// The file's length, or, before it is written (the writer streams to
    /// disk, so the read is the peak), the size of the sections the shape
    /// has: drawing the shape takes about a second at full size, nothing
    /// beside the minutes of writing the file.
    fn memory_bytes(&self) -> u64 {
        match std::fs::metadata(self.cache.params_path(&self.circuit_id)) {
            Ok(file) => file.len(),
            Err(_) => {
                let shape = ShapedCircuit::new(self.constraints, self.inputs, self.shape_seed).shape();
                let g1 = shape.h + shape.l + shape.a + shape.b + shape.inputs + 3;
                let g2 = shape.b + 3;
                (g1 * G1_BYTES + g2 * G2_BYTES) as u64
            }
        }
    }

    fn load(&self) -> Result<ProvingParameters, PlanError> {
        let path = self.cache.params_path(&self.circuit_id);
        let shape = ShapedCircuit::new(self.constraints, self.inputs, self.shape_seed).shape();
        let read = || -> Result<ProvingParameters, PlanError> {
            let params = ProvingParameters::read(&path, PointCheck::SkipSubgroup)
                .map_err(|e| PlanError::Parameters(without_directory(&e.to_string(), &path)))?;
            let sections = [
                params.h.len(),
                params.l.len(),
                params.a.len(),
                params.b_g2.len(),
                params.vk.ic.len(),
            ];
            if sections != [shape.h, shape.l, shape.a, shape.b, shape.inputs] {
                return Err(PlanError::Parameters(format!(
                    "the cached parameter file of {0} does not have the sections of {0}",
                    self.circuit_id
                )));
            }
            Ok(params)
        };
        if path.exists() {
            match read() {
                Ok(params) => return Ok(params),
                // Only this machine's generator writes these files, and it
                // is deterministic: one that does not read is written again.
                Err(e) => {
                    tracing::warn!(circuit_id = %self.circuit_id, error = %e, "shaped parameters unreadable; generating them again");
                    let _ = std::fs::remove_file(&path);
                }
            }
        }
        make_room_on_disk(&self.cache, &self.circuit_id);
        let started = Instant::now();
        write_shaped_parameters(&shape, SHAPED_POINT_SEED, &path)
            .map_err(|e| PlanError::Parameters(without_directory(&e.to_string(), &path)))?;
        tracing::info!(
            circuit_id = %self.circuit_id,
            seconds = started.elapsed().as_secs_f64(),
            "generated shaped parameters"
        );
        read()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cache() -> (tempfile::TempDir, ParameterCache) {
        let dir = tempfile::tempdir().unwrap();
        let cache = ParameterCache::new(dir.path()).unwrap();
        (dir, cache)
    }

    /// Regression (issue 12.1): a PreloadSRS of an enormous benchmark id
    /// aborted the daemon allocating 32 TB. The id is refused before
    /// anything is generated or allocated.
    #[test]
    fn oversized_ids_are_refused_before_generation() {
        let (_dir, cache) = cache();
        for id in [
            "synthetic-v1-n1000000000000-i2",
            "shaped-v1-n1000000000000-i2-s0",
            "synthetic-v1-n200000000-i2",
            "synthetic-v1-n1000000-i100000",
        ] {
            match recipe(&cache, id) {
                Some(Err(PlanError::InvalidArgument(m))) => assert!(m.contains("must be"), "{id}: {m}"),
                other => panic!("{id}: expected a bounds error, got {other:?}"),
            }
        }
    }

    /// Regression (issue 34.7): every distinct benchmark size left its
    /// parameter file behind for good. Generating more than the bound
    /// removes the least recently used ones, never an official file.
    #[test]
    fn benchmark_parameter_files_on_disk_are_bounded() {
        let (dir, cache) = cache();
        let official = dir.path().join("v28-stacked-proof-of-replication-test.params");
        std::fs::write(&official, b"not ours").unwrap();
        let ids: Vec<String> = (0..MAX_BENCHMARK_PARAMETER_FILES + 3)
            .map(|i| format!("synthetic-v1-n{}-i2", 8 + i))
            .collect();
        for id in &ids {
            recipe(&cache, id).unwrap().unwrap().load().unwrap();
            // Modification times must differ for the order to be seen.
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        let left: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with("synthetic-") && n.ends_with(".params"))
            .collect();
        assert_eq!(left.len(), MAX_BENCHMARK_PARAMETER_FILES, "{left:?}");
        assert!(official.exists(), "an official file was removed");
        for id in &ids[..3] {
            assert!(
                !cache.params_path(id).exists(),
                "{id} should have been removed first"
            );
        }
        assert!(cache.params_path(ids.last().unwrap()).exists());
    }

    /// The admission estimate covers a real generation: at least the
    /// resident parameters, and the measured peak of bellperson's
    /// generator (about 2,000 bytes a domain point from 2^16 to 2^20:
    /// BENCHMARKS.md), which the estimate's constant carries with a margin.
    #[test]
    fn the_generation_estimate_covers_the_resident_parameters() {
        let (_dir, cache) = cache();
        let id = "synthetic-v1-n1021-i2";
        let recipe = recipe(&cache, id).unwrap().unwrap();
        let estimate = recipe.memory_bytes();
        assert_eq!(estimate, synthetic_generation_bytes(1021, 2));
        assert!(estimate >= 2000 * 1024, "{estimate}");
        let params = recipe.load().unwrap();
        assert!(
            estimate >= 5 * params.size_bytes(),
            "{estimate} vs {}",
            params.size_bytes()
        );
        // Once on disk, the file's length: what a read holds.
        assert_eq!(
            recipe.memory_bytes(),
            std::fs::metadata(cache.params_path(id)).unwrap().len()
        );
    }

    #[test]
    fn malformed_ids_are_refused_and_others_are_not_ours() {
        let (_dir, cache) = cache();
        assert!(matches!(
            recipe(&cache, "synthetic-v1-nX-i2"),
            Some(Err(PlanError::InvalidArgument(_)))
        ));
        assert!(matches!(
            recipe(&cache, "shaped-v1-n10"),
            Some(Err(PlanError::InvalidArgument(_)))
        ));
        assert!(recipe(&cache, "v28-stacked-proof-of-replication").is_none());
        assert!(matches!(recipe(&cache, "synthetic-v1-n1024-i2"), Some(Ok(_))));
    }
}
