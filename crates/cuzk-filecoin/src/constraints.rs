//! Constraints per partition of each Filecoin circuit, for the memory
//! budget (an upper estimate is enough: the engine reserves memory for a
//! partition before synthesising it). The exact counts are pinned by the
//! tests: `tests/circuits.rs` on sealed 2 KiB sectors, `tests/structure.rs`
//! on real-structure inputs (`cuzk_filecoin::structure`) at every size, by a
//! counting constraint system (the full-size ones with `--ignored`).
//!
//! Figures: storage-proofs 19.1 circuits, the circuit's own constraints
//! (cuzk's synthesis adds one per public input, the constant one
//! included), rounded up. Counted on real-structure inputs (issue 13), they
//! equal REFERENCE.md's workload table.

use cuzk_core::ProofKind;

const MIB: u64 = 1 << 20;
const GIB: u64 = 1 << 30;

/// Constraints per partition and partitions per proof of `kind` at
/// `sector_size` (a WindowPoSt job is one partition).
pub fn partition_shape(kind: ProofKind, sector_size: u64) -> (usize, usize) {
    match kind {
        ProofKind::PorepSealCommit => (porep(sector_size), porep_partitions(sector_size)),
        ProofKind::WinningPost => (winning(sector_size), 1),
        ProofKind::WindowPostPartition => (window(sector_size), 1),
        ProofKind::SnapDealsUpdate => (snap(sector_size), snap_partitions(sector_size)),
    }
}

/// PoRep partition: 2,687,921 (2 KiB), 3,844,929 (8 MiB), 4,423,433
/// (512 MiB), 130,278,541 (32 GiB) and 131,185,849 (64 GiB), with 40
/// inputs (328 at 32 and 64 GiB).
pub fn porep(sector_size: u64) -> usize {
    match sector_size {
        s if s <= 8 * MIB => 3_900_000,
        s if s <= GIB => 4_500_000,
        s if s <= 32 * GIB => 130_300_000,
        _ => 131_200_000,
    }
}

/// WinningPoSt: 90,750 (2 KiB) to 370,590 (32 GiB), 133 inputs.
pub fn winning(sector_size: u64) -> usize {
    if sector_size <= GIB {
        200_000
    } else {
        380_000
    }
}

/// One WindowPoSt partition: 21,866 (2 KiB, 2 sectors, 23 inputs) to
/// 125,279,217 (32 GiB, 2349 sectors, 25,840 inputs).
pub fn window(sector_size: u64) -> usize {
    match sector_size {
        s if s <= 8 * MIB => 1_000_000,
        s if s <= GIB => 8_000_000,
        _ => 126_000_000,
    }
}

/// SnapDeals partition: 1,705,039 (2 KiB) to 81,049,499 (32 GiB), 5
/// inputs.
pub fn snap(sector_size: u64) -> usize {
    match sector_size {
        s if s <= GIB => 8_000_000,
        _ => 82_000_000,
    }
}

/// Partitions of a PoRep proof of `sector_size` (filecoin-proofs' table: 10
/// from 32 GiB, else 1; 1 for a size it does not know).
pub fn porep_partitions(sector_size: u64) -> usize {
    let partitions = filecoin_proofs::constants::POREP_PARTITIONS
        .read()
        .map(|table| table.get(&sector_size).copied())
        .unwrap_or(None);
    usize::from(partitions.unwrap_or(1))
}

/// Partitions of a SnapDeals proof of `sector_size` (storage-proofs-update's
/// count from the sector's nodes: 1 for 2 KiB, 4 for 8 MiB, 16 from 512 MiB).
pub fn snap_partitions(sector_size: u64) -> usize {
    filecoin_proofs::partition_count(sector_size as usize / 32)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The counts filecoin-proofs and storage-proofs-update give are the
    /// ones the Filecoin network uses (REFERENCE.md's workload table).
    #[test]
    fn partitions_per_proof_are_the_networks() {
        assert_eq!(porep_partitions(2 << 10), 1);
        assert_eq!(porep_partitions(512 * MIB), 1);
        assert_eq!(porep_partitions(32 * GIB), 10);
        assert_eq!(porep_partitions(64 * GIB), 10);
        assert_eq!(snap_partitions(2 << 10), 1);
        assert_eq!(snap_partitions(8 * MIB), 4);
        assert_eq!(snap_partitions(512 * MIB), 16);
        assert_eq!(snap_partitions(32 * GIB), 16);
    }
}
