//! The Go ABI's registered proof numbers (filecoin-project/go-state-types
//! `abi.RegisteredSealProof`, `RegisteredPoStProof`, `RegisteredUpdateProof`)
//! and what they mean: sector size, API version, partitions, parameter file.
//!
//! The numbers are the positions in filecoin-proofs-api's enums, which follow
//! the Go ABI order; the `proof_kind` of a request says which table applies.

use cuzk_core::PlanError;
use filecoin_proofs_api::{RegisteredPoStProof, RegisteredSealProof, RegisteredUpdateProof};

/// Seal (PoRep) proofs by Go ABI number.
pub const SEAL_PROOFS: [RegisteredSealProof; 20] = {
    use RegisteredSealProof::*;
    [
        StackedDrg2KiBV1,
        StackedDrg8MiBV1,
        StackedDrg512MiBV1,
        StackedDrg32GiBV1,
        StackedDrg64GiBV1,
        StackedDrg2KiBV1_1,
        StackedDrg8MiBV1_1,
        StackedDrg512MiBV1_1,
        StackedDrg32GiBV1_1,
        StackedDrg64GiBV1_1,
        StackedDrg2KiBV1_1_Feat_SyntheticPoRep,
        StackedDrg8MiBV1_1_Feat_SyntheticPoRep,
        StackedDrg512MiBV1_1_Feat_SyntheticPoRep,
        StackedDrg32GiBV1_1_Feat_SyntheticPoRep,
        StackedDrg64GiBV1_1_Feat_SyntheticPoRep,
        StackedDrg2KiBV1_2_Feat_NonInteractivePoRep,
        StackedDrg8MiBV1_2_Feat_NonInteractivePoRep,
        StackedDrg512MiBV1_2_Feat_NonInteractivePoRep,
        StackedDrg32GiBV1_2_Feat_NonInteractivePoRep,
        StackedDrg64GiBV1_2_Feat_NonInteractivePoRep,
    ]
};

/// PoSt proofs by Go ABI number (Winning 0-4, Window V1 5-9, Window V1_2 10-14).
pub const POST_PROOFS: [RegisteredPoStProof; 15] = {
    use RegisteredPoStProof::*;
    [
        StackedDrgWinning2KiBV1,
        StackedDrgWinning8MiBV1,
        StackedDrgWinning512MiBV1,
        StackedDrgWinning32GiBV1,
        StackedDrgWinning64GiBV1,
        StackedDrgWindow2KiBV1,
        StackedDrgWindow8MiBV1,
        StackedDrgWindow512MiBV1,
        StackedDrgWindow32GiBV1,
        StackedDrgWindow64GiBV1,
        StackedDrgWindow2KiBV1_2,
        StackedDrgWindow8MiBV1_2,
        StackedDrgWindow512MiBV1_2,
        StackedDrgWindow32GiBV1_2,
        StackedDrgWindow64GiBV1_2,
    ]
};

/// SnapDeals update proofs by Go ABI number.
pub const UPDATE_PROOFS: [RegisteredUpdateProof; 5] = {
    use RegisteredUpdateProof::*;
    [
        StackedDrg2KiBV1,
        StackedDrg8MiBV1,
        StackedDrg512MiBV1,
        StackedDrg32GiBV1,
        StackedDrg64GiBV1,
    ]
};

/// Looks `number` up in `table`, naming the table in the error (an
/// `InvalidArgument`).
pub fn lookup<T: Copy>(table: &[T], number: u64, what: &str) -> Result<T, PlanError> {
    usize::try_from(number)
        .ok()
        .and_then(|i| table.get(i).copied())
        .ok_or_else(|| {
            PlanError::InvalidArgument(format!(
                "unknown {what} registered_proof {number} (known: 0..={})",
                table.len() - 1
            ))
        })
}

/// Human-readable sector size, e.g. "2KiB", "32GiB".
pub fn sector_size_name(bytes: u64) -> String {
    const UNITS: [(u64, &str); 3] = [(1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")];
    for (unit, name) in UNITS {
        #[allow(clippy::manual_is_multiple_of)] // is_multiple_of is newer than rust-version
        if bytes >= unit && bytes % unit == 0 {
            return format!("{}{name}", bytes / unit);
        }
    }
    format!("{bytes}B")
}

#[cfg(test)]
mod tests {
    use super::*;

    // The tables must agree with the API's own view of each proof: the
    // Go ABI orders sizes 2KiB, 8MiB, 512MiB, 32GiB, 64GiB in every block.
    #[test]
    fn tables_follow_the_go_abi_order() {
        let sizes = [2u64 << 10, 8 << 20, 512 << 20, 32 << 30, 64 << 30];
        for (i, p) in SEAL_PROOFS.iter().enumerate() {
            assert_eq!(u64::from(p.sector_size()), sizes[i % 5], "{p:?}");
        }
        for (i, p) in POST_PROOFS.iter().enumerate() {
            assert_eq!(u64::from(p.sector_size()), sizes[i % 5], "{p:?}");
            let winning = matches!(p.typ(), filecoin_proofs::PoStType::Winning);
            assert_eq!(winning, i < 5, "{p:?}");
        }
        for (i, p) in UPDATE_PROOFS.iter().enumerate() {
            assert_eq!(u64::from(p.sector_size()), sizes[i], "{p:?}");
        }
        assert_eq!(sector_size_name(2048), "2KiB");
        assert_eq!(sector_size_name(32 << 30), "32GiB");
        let err = lookup(&UPDATE_PROOFS, 5, "update").unwrap_err();
        assert!(
            matches!(&err, PlanError::InvalidArgument(m) if m.contains("unknown update")),
            "{err:?}"
        );
    }
}
