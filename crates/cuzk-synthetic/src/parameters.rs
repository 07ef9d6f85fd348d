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

    fn load(&self) -> Result<ProvingParameters, PlanError> {
        let circuit = SyntheticCircuit::new(
            self.constraints,
            vec![cuzk_core::Scalar::from(0u64); self.inputs],
            0,
        )
        .map_err(|e| PlanError::InvalidArgument(e.to_string()))?;
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
