//! Filecoin proofs on cuzk: the registered proof types of the Go ABI, their
//! request formats (C1 output, PoSt and SnapDeals vanilla proofs), their
//! circuits per partition (from the storage-proofs crates), their official
//! parameter files, and filecoin-proofs' own verifiers.
//!
//! - [`registry`]: Go ABI numbers to proof types.
//! - [`request`]: the fields of a [`cuzk_core::ProofRequest`] parsed and checked.
//! - [`plans`]: the partition plans the engine runs ([`plan_for`]).
//! - [`source`]: [`FilecoinPlans`], the engine's plan source for all of them.
//! - [`params`]: official parameter file names, and generating test-size ones.
//! - `fixtures` (feature `test-inputs`): sealing test sectors to get C1
//!   outputs and vanilla proofs.
//! - `structure` (feature `test-inputs`): real-structure inputs: requests
//!   of production sectors' exact structure with random values, made in
//!   memory without sealing, for measurements and tests.
//! - [`settings`]: the `FIL_PROOFS_*` settings, set before filecoin-proofs reads them.
//! - [`validate`]: checks of untrusted inputs before the Filecoin crates see
//!   them, and the guard that turns a panic in them into an error.

pub mod constraints;
#[cfg(feature = "test-inputs")]
pub mod fixtures;
pub mod names;
pub mod native;
pub mod params;
pub mod plans;
pub mod registry;
pub mod request;
pub mod settings;
pub mod source;
#[cfg(feature = "test-inputs")]
pub mod structure;
pub mod trust;
pub mod validate;

pub use plans::{plan_for, plan_with, FilecoinPlanned, PlanOptions};
pub use source::FilecoinPlans;

pub(crate) use cuzk_core::PlanError;
use filecoin_proofs::{MerkleTreeTrait, TreeRHasher};

/// Work generic over a sector's Merkle tree shape, picked at run time from
/// the sector size (filecoin-proofs' `with_shape`, as a trait).
pub(crate) trait ShapeDispatch {
    type Out;
    fn run<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(self) -> Result<Self::Out, PlanError>;
}

/// Runs `work` with the tree shape of `sector_size`.
pub(crate) fn dispatch_shape<W: ShapeDispatch>(sector_size: u64, work: W) -> Result<W::Out, PlanError> {
    use filecoin_proofs::*;
    match sector_size {
        SECTOR_SIZE_2_KIB | SECTOR_SIZE_8_MIB | SECTOR_SIZE_512_MIB => work.run::<SectorShapeBase>(),
        SECTOR_SIZE_4_KIB | SECTOR_SIZE_16_MIB | SECTOR_SIZE_1_GIB => work.run::<SectorShapeSub2>(),
        SECTOR_SIZE_16_KIB | SECTOR_SIZE_32_GIB => work.run::<SectorShapeSub8>(),
        SECTOR_SIZE_32_KIB | SECTOR_SIZE_64_GIB => work.run::<SectorShapeTop2>(),
        other => Err(PlanError::InvalidArgument(format!(
            "no Filecoin sector shape for {other} bytes"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cuzk_core::{ProofKind, ProofRequest, SectorFields};

    fn request(kind: ProofKind, registered_proof: u64) -> ProofRequest {
        ProofRequest {
            request_id: String::new(),
            kind,
            registered_proof,
            priority: None,
            vanilla_proof: Vec::new(),
            vanilla_proofs: Vec::new(),
            sector: SectorFields::default(),
        }
    }

    fn refusal(request: &ProofRequest) -> PlanError {
        plan_for(request).expect_err("refused")
    }

    #[test]
    fn refusals_are_typed() {
        // Not in the Go ABI tables.
        let e = refusal(&request(ProofKind::PorepSealCommit, 20));
        assert!(
            matches!(&e, PlanError::InvalidArgument(m) if m.contains("unknown seal")),
            "{e:?}"
        );
        let e = refusal(&request(ProofKind::SnapDealsUpdate, 5));
        assert!(
            matches!(&e, PlanError::InvalidArgument(m) if m.contains("unknown update")),
            "{e:?}"
        );
        // No C1 output.
        let e = refusal(&request(ProofKind::PorepSealCommit, 5));
        assert!(
            matches!(&e, PlanError::InvalidArgument(m) if m.contains("no C1 output")),
            "{e:?}"
        );
        // Non-interactive PoRep makes an aggregate.
        let e = refusal(&request(ProofKind::PorepSealCommit, 15));
        assert!(
            matches!(&e, PlanError::Unsupported(m) if m.contains("non-interactive")),
            "{e:?}"
        );
        // A WindowPoSt number for a WinningPoSt request, and the reverse.
        let e = refusal(&request(ProofKind::WinningPost, 10));
        assert!(
            matches!(&e, PlanError::InvalidArgument(m) if m.contains("not a WinningPoSt")),
            "{e:?}"
        );
        let e = refusal(&request(ProofKind::WindowPostPartition, 0));
        assert!(
            matches!(&e, PlanError::InvalidArgument(m) if m.contains("not a WindowPoSt")),
            "{e:?}"
        );
        // A sector size the registered proof is not of.
        let mut r = request(ProofKind::WinningPost, 0);
        r.sector.sector_size = 4096;
        let e = refusal(&r);
        assert!(
            matches!(&e, PlanError::InvalidArgument(m) if m.contains("does not match")),
            "{e:?}"
        );
    }
}
