//! cuzk's Groth16 (BLS12-381) proving core.
//!
//! - [`assignment`]: synthesis of any bellperson circuit into the contiguous
//!   layout provers consume (a/b/c evaluations, assignments, density bitmaps).
//! - [`r1cs`]: the same synthesis from a constraint system recorded once as
//!   sparse matrices (witness only per proof, then sparse products).
//! - [`params`]: bellperson/Filecoin `.params` and `.vk` files.
//! - [`groth16`]: the Groth16 frame every backend proves through (the
//!   checks, r and s, the inputs' MSMs and B G2 added to a backend's H and
//!   aux MSMs, [`PendingProof`], [`finish`], proof bytes).
//! - [`backend`]: where partitions are proved ([`ProverBackend`]: CPU,
//!   CUDA, fallback and dual combinators), with the split
//!   `prove_start` / `finish` API.
//! - [`request`]: the proof request, from the wire to a plan source.
//! - [`verify`]: verification with bellperson's (independent) verifier.
//! - [`plan`]: how a request becomes partitions ([`PlanSource`],
//!   [`ProofPlan`]) and parameters are obtained ([`ParameterRecipe`]).
//! - [`cores`]: one budget of cores (sequential slots beside rayon's pool).
//! - [`domain`], [`msm`]: the FFTs and witness-shaped MSMs the prover uses.
//!
//! Benchmark-only, behind the `bench-circuits` feature (off by default, so
//! that a production build does not compile them):
//!
//! - `synthetic`: a PoRep-shaped synthetic circuit of any size
//!   (`SyntheticCircuit`).
//! - `shaped`: proving inputs of a production shape (2^27-constraint
//!   partitions) without a real circuit: circuits, witnesses, parameters.
//! - `param_cache`: parameters generated per circuit and cached on disk
//!   (`ParameterCache`; test parameters, never for anything real).

pub mod assignment;
pub mod backend;
pub mod constraint_system;
pub mod cores;
pub mod domain;
pub mod groth16;
pub mod msm;
pub mod packed;
#[cfg(feature = "bench-circuits")]
pub mod param_cache;
pub mod params;
pub mod paths;
pub mod plan;
pub mod r1cs;
pub mod r1cs_cache;
pub mod r1cs_store;
pub mod request;
#[cfg(feature = "bench-circuits")]
pub mod shaped;
mod sync;
#[cfg(feature = "bench-circuits")]
pub mod synthetic;
pub mod verify;

pub use assignment::{synthesize, DensityBitmap, ProvingAssignment, SizeHint};
pub use backend::cpu::{prove, prove_start};
pub use backend::{BackendError, CpuBackend, PartitionData, PartitionWitness, ProverBackend, ProverInput};
pub use groth16::{finish, proof_to_bytes, PendingProof, ProveError, ProveTimings, Randomness, PROOF_BYTES};
pub use packed::{PackedScalars, Piece, ScalarSink, SpareValues};
#[cfg(feature = "bench-circuits")]
pub use param_cache::{CacheError, CacheOutcome, ParameterCache};
pub use params::{CircuitCounts, ParamsError, PointCheck, ProvingParameters};
pub use plan::{ParameterFile, ParameterRecipe, PlanError, PlanSource, Prepared, ProofPlan};
pub use r1cs::{CompiledR1cs, R1csError, R1csFileError, UnitLayout, Witness};
pub use r1cs_cache::{CachedR1cs, R1csCache};
pub use r1cs_store::R1csStore;
pub use request::{Priority, ProofKind, ProofRequest, SectorFields};
#[cfg(feature = "bench-circuits")]
pub use synthetic::SyntheticCircuit;
pub use verify::Verifier;

/// Re-exported so users name the same types as the core.
pub use bellperson::groth16::{Proof, VerifyingKey};
pub use blstrs::{Bls12, G1Affine as Bls12G1Affine, Scalar};
