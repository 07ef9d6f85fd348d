//! supraseal-c2 0.1.2, the prover cuzk is measured against, called the way
//! production calls it: one `generate_groth16_proofs` per proof, with every
//! partition's assignment at once. Only with `--features supraseal`.

use cuzk_core::{Bls12, Proof, ProvingAssignment, Scalar};
use std::path::Path;

/// Its parameters, loaded from a `.params` file into its own memory.
#[cfg(feature = "supraseal")]
pub struct Srs(supraseal_c2::SRS);

#[cfg(not(feature = "supraseal"))]
pub struct Srs;

/// Whether this build has supraseal-c2.
pub const AVAILABLE: bool = cfg!(feature = "supraseal");

#[cfg(feature = "supraseal")]
impl Srs {
    pub fn load(path: &Path) -> anyhow::Result<Self> {
        supraseal_c2::SRS::try_new(path.to_path_buf(), false)
            .map(Srs)
            .map_err(|e| anyhow::anyhow!("supraseal-c2 loading {}: {}", path.display(), String::from(e)))
    }

    /// One call: a proof per assignment, with blinding factors `r[i]`, `s[i]`.
    pub fn prove(&self, assignments: &[ProvingAssignment], r: &[Scalar], s: &[Scalar]) -> Vec<Proof<Bls12>> {
        let jobs: Vec<_> = assignments.iter().map(job).collect();
        let mut proofs = vec![
            Proof::<Bls12> {
                a: Default::default(),
                b: Default::default(),
                c: Default::default(),
            };
            jobs.len()
        ];
        supraseal_c2::generate_groth16_proofs(&jobs, r, s, &mut proofs, &self.0);
        proofs
    }
}

#[cfg(not(feature = "supraseal"))]
impl Srs {
    pub fn load(_: &Path) -> anyhow::Result<Self> {
        anyhow::bail!("built without the supraseal feature (FEATURES=supraseal scripts/gpu-build.sh)")
    }

    pub fn prove(&self, _: &[ProvingAssignment], _: &[Scalar], _: &[Scalar]) -> Vec<Proof<Bls12>> {
        unreachable!("an Srs cannot be loaded without the supraseal feature")
    }
}

/// supraseal's view of an assignment: pointers into ours (no copy).
#[cfg(feature = "supraseal")]
fn job(assignment: &ProvingAssignment) -> supraseal_c2::Assignment<Scalar> {
    let words = |d: &cuzk_core::DensityBitmap| d.words().as_ptr() as *const usize;
    supraseal_c2::Assignment::<Scalar> {
        a_aux_density: words(&assignment.a_aux_density),
        a_aux_bit_len: assignment.a_aux_density.len(),
        a_aux_popcount: assignment.a_aux_density.count_ones(),
        b_inp_density: words(&assignment.b_input_density),
        b_inp_bit_len: assignment.b_input_density.len(),
        b_inp_popcount: assignment.b_input_density.count_ones(),
        b_aux_density: words(&assignment.b_aux_density),
        b_aux_bit_len: assignment.b_aux_density.len(),
        b_aux_popcount: assignment.b_aux_density.count_ones(),
        a: assignment.a.as_ptr(),
        b: assignment.b.as_ptr(),
        c: assignment.c.as_ptr(),
        abc_size: assignment.a.len(),
        inp_assignment_data: assignment.input_assignment.as_ptr(),
        inp_assignment_size: assignment.input_assignment.len(),
        aux_assignment_data: assignment.aux_assignment.as_ptr(),
        aux_assignment_size: assignment.aux_assignment.len(),
    }
}
