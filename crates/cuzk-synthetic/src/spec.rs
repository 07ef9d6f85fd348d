//! A synthetic request's shape, from its `vanilla_proof` as JSON.

use cuzk_core::request::cut_echoes;
use cuzk_core::{PlanError, SyntheticCircuit};
use serde::{Deserialize, Serialize};

/// Largest synthetic partition served (2^27, the size of a 32 GiB PoRep
/// partition's domain).
pub const MAX_SYNTHETIC_CONSTRAINTS: usize = 1 << 27;
/// Most partitions a synthetic request may ask for.
pub const MAX_SYNTHETIC_PARTITIONS: usize = 64;
/// Most public inputs of a synthetic partition.
pub const MAX_SYNTHETIC_INPUTS: usize = 1024;

/// Shape of a synthetic request, from the `vanilla_proof` field as JSON,
/// e.g. `{"constraints": 65536, "partitions": 2}`. Every field is optional.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq, Eq)]
#[serde(deny_unknown_fields, default)]
pub struct SyntheticSpec {
    /// Constraints per partition (R1CS total, as `SyntheticCircuit` counts).
    pub constraints: usize,
    /// Partitions in the proof.
    pub partitions: usize,
    /// Public inputs per partition.
    pub inputs: usize,
    /// Witness seed; partition p uses `seed + p` (shaped witnesses:
    /// `seed * 2^20 + p`, see `ShapedPlan::value_seed`).
    pub seed: u64,
    /// Where the witness comes from.
    pub witness: WitnessSource,
    /// Shaped witnesses: seed of the A/B densities (the "circuit"), which
    /// the parameter file `shaped-v1-n<constraints>-i<inputs>-s<shape_seed>`
    /// was made for.
    pub shape_seed: u64,
}

/// How a synthetic request's partitions get their witness.
#[derive(Clone, Copy, Debug, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum WitnessSource {
    /// Synthesised from cuzk's synthetic circuit (proofs verify).
    #[default]
    Circuit,
    /// Generated directly in the shape of a PoRep partition, without a
    /// circuit (`cuzk_core::shaped`), to measure the proving pipeline at full
    /// size. The proofs cannot verify: no setup stands behind the parameters.
    Shaped,
}

impl SyntheticSpec {
    /// The JSON a client puts in `vanilla_proof` for this spec.
    pub fn to_vanilla_proof(&self) -> Vec<u8> {
        serde_json::to_vec(self).expect("a plain struct serialises")
    }

    /// Parses the JSON spec of a `vanilla_proof` (empty means all defaults)
    /// and checks its bounds.
    pub fn from_vanilla_proof(bytes: &[u8]) -> Result<Self, PlanError> {
        let spec: SyntheticSpec = if bytes.is_empty() {
            SyntheticSpec::default()
        } else {
            serde_json::from_slice(bytes).map_err(|e| {
                PlanError::InvalidArgument(cut_echoes(&format!("synthetic spec in vanilla_proof: {e}")))
            })?
        };
        spec.check()?;
        Ok(spec)
    }

    /// Checks the bounds every synthetic request must keep.
    pub fn check(&self) -> Result<(), PlanError> {
        if self.partitions == 0 || self.partitions > MAX_SYNTHETIC_PARTITIONS {
            return Err(PlanError::InvalidArgument(format!(
                "partitions must be 1..={MAX_SYNTHETIC_PARTITIONS}, got {}",
                self.partitions
            )));
        }
        check_dimensions(self.constraints, self.inputs)
    }
}

/// The bounds on a synthetic or shaped circuit's size, wherever it is named
/// (a request's spec, or a circuit id in PreloadSRS): an out-of-range size
/// must never reach parameter generation.
pub fn check_dimensions(constraints: usize, inputs: usize) -> Result<(), PlanError> {
    if inputs > MAX_SYNTHETIC_INPUTS {
        return Err(PlanError::InvalidArgument(format!(
            "inputs must be at most {MAX_SYNTHETIC_INPUTS}, got {inputs}"
        )));
    }
    let min = SyntheticCircuit::min_constraints(inputs);
    if constraints < min || constraints > MAX_SYNTHETIC_CONSTRAINTS {
        return Err(PlanError::InvalidArgument(format!(
            "constraints must be {min}..={MAX_SYNTHETIC_CONSTRAINTS} for {inputs} inputs, got {constraints}"
        )));
    }
    Ok(())
}

impl Default for SyntheticSpec {
    fn default() -> Self {
        Self {
            constraints: 1 << 16,
            partitions: 1,
            inputs: 2,
            seed: 1,
            witness: WitnessSource::Circuit,
            shape_seed: 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Regression (issue 34, item 7): serde's error quoted the whole value.
    #[test]
    fn a_long_junk_value_is_refused_with_a_short_message() {
        let junk = "A".repeat(10_000);
        for json in [
            format!(r#"{{"constraints": "{junk}"}}"#),
            format!(r#"{{"{junk}": 1}}"#),
            format!(r#"{{"witness": "{junk}"}}"#),
        ] {
            let Err(PlanError::InvalidArgument(message)) = SyntheticSpec::from_vanilla_proof(json.as_bytes())
            else {
                panic!("accepted");
            };
            assert!(message.len() < 300, "{} bytes: {message:.300}", message.len());
            assert!(
                message.starts_with("synthetic spec in vanilla_proof: "),
                "{message}"
            );
        }
    }
}
