//! Constraints per partition of each Filecoin circuit, for the memory
//! budget (an upper estimate is enough: the engine reserves memory for a
//! partition before synthesising it). The exact counts are pinned by the
//! tests (`tests/circuits.rs`) where the circuits are small enough to build.
//!
//! Figures: storage-proofs 19.1 circuits (REFERENCE.md's workload table),
//! rounded up.

const MIB: u64 = 1 << 20;
const GIB: u64 = 1 << 30;

/// PoRep partition: 2.7 M (2 KiB) to 131.2 M (64 GiB).
pub fn porep(sector_size: u64) -> usize {
    match sector_size {
        s if s <= 8 * MIB => 3_900_000,
        s if s <= GIB => 4_500_000,
        s if s <= 32 * GIB => 130_300_000,
        _ => 131_200_000,
    }
}

/// WinningPoSt: 91 k (2 KiB) to 371 k (32 GiB).
pub fn winning(sector_size: u64) -> usize {
    if sector_size <= GIB {
        200_000
    } else {
        380_000
    }
}

/// One WindowPoSt partition: 22 k (2 KiB, 2 sectors) to 125.3 M (32 GiB,
/// 2349 sectors).
pub fn window(sector_size: u64) -> usize {
    match sector_size {
        s if s <= 8 * MIB => 1_000_000,
        s if s <= GIB => 8_000_000,
        _ => 126_000_000,
    }
}

/// SnapDeals partition: a few million constraints for test sizes, about
/// 81 M for 32 GiB.
pub fn snap(sector_size: u64) -> usize {
    match sector_size {
        s if s <= GIB => 8_000_000,
        _ => 82_000_000,
    }
}
