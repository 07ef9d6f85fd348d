//! Filecoin proofs on cuzk: the registered proof types of the Go ABI, their
//! request formats (C1 output, PoSt and SnapDeals vanilla proofs), their
//! circuits per partition (from the storage-proofs crates), their official
//! parameter files, and filecoin-proofs' own verifiers.
//!
//! - [`registry`]: Go ABI numbers to proof types.
//! - [`request`]: request fields parsed and checked.
//! - [`plans`]: the partition plans the engine runs.
//! - [`params`]: official parameter file names, and generating test-size ones.
//! - [`fixtures`]: sealing test sectors to get C1 outputs and vanilla proofs.
//! - [`settings`]: the `FIL_PROOFS_*` settings, set before filecoin-proofs reads them.

pub mod constraints;
pub mod fixtures;
pub mod params;
pub mod plans;
pub mod registry;
pub mod request;
pub mod settings;

pub use plans::plan_for;
pub use request::{FilecoinRequest, Kind};

use filecoin_proofs::{MerkleTreeTrait, TreeRHasher};

/// Why a Filecoin request cannot be served.
#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
pub enum FilecoinError {
    /// The request is malformed or inconsistent.
    #[error("{0}")]
    InvalidArgument(String),
    /// A proof type cuzk does not serve.
    #[error("unsupported proof type: {0}")]
    Unsupported(String),
    /// Something that should not fail did (a bug, or filecoin-proofs').
    #[error("{0}")]
    Internal(String),
}

/// Work generic over a sector's Merkle tree shape, picked at run time from
/// the sector size (filecoin-proofs' `with_shape`, as a trait).
pub(crate) trait ShapeDispatch {
    type Out;
    fn run<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(self) -> Result<Self::Out, FilecoinError>;
}

/// Runs `work` with the tree shape of `sector_size`.
pub(crate) fn dispatch_shape<W: ShapeDispatch>(sector_size: u64, work: W) -> Result<W::Out, FilecoinError> {
    use filecoin_proofs::*;
    match sector_size {
        SECTOR_SIZE_2_KIB | SECTOR_SIZE_8_MIB | SECTOR_SIZE_512_MIB => work.run::<SectorShapeBase>(),
        SECTOR_SIZE_4_KIB | SECTOR_SIZE_16_MIB | SECTOR_SIZE_1_GIB => work.run::<SectorShapeSub2>(),
        SECTOR_SIZE_16_KIB | SECTOR_SIZE_32_GIB => work.run::<SectorShapeSub8>(),
        SECTOR_SIZE_32_KIB | SECTOR_SIZE_64_GIB => work.run::<SectorShapeTop2>(),
        other => Err(FilecoinError::InvalidArgument(format!(
            "no Filecoin sector shape for {other} bytes"
        ))),
    }
}
