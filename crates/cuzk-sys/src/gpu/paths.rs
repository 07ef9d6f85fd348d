//! Inclusion paths finished on the device (issue 35; `cuda/paths.cuh`):
//! a PoSt partition's witness is mostly the Poseidon traces of its
//! challenges' paths (about 4 GB for WindowPoSt 32 GiB), each level's
//! hash taking the last one's, so the host cannot write them without
//! hashing. Here the host describes the paths (leaves, siblings, where
//! each level's values go, which value each pick and each child copies)
//! and the device hashes them and writes the picks and traces into the
//! expanded aux vector, checking that each path leads to its root.

use super::GpuError;
use crate::poseidon_lanes::PoseidonSpec;
use blstrs::Scalar;
use std::time::Duration;

/// Most permutations one set of paths uses (a PoSt uses its tree's
/// arities and 2).
pub const MAX_TABLES: usize = 4;

/// Widths the device's kernel takes (arities 2 and 8: Filecoin's replica
/// trees and `comm_r`; each width is a kernel nvcc builds).
pub const WIDTHS: [usize; 2] = [3, 9];

/// Where one level of a path goes and what it is made of (the layout of
/// `cuzk_path_level_t`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PathLevel {
    /// Aux index of the level's first pick; its hash's trace follows its
    /// picks.
    pub at: u64,
    /// Its first sibling among the paths' siblings.
    pub siblings_at: u32,
    /// Its picks' sources among the paths' sources, then its children's
    /// (0: the node, `k`: sibling `k - 1`).
    pub sources_at: u32,
    /// Which permutation of the [`PoseidonTables`] hashes it.
    pub table: u8,
    /// How many picks it writes before its hash.
    pub picks: u8,
    pad: [u8; 6],
}

impl PathLevel {
    /// A level (see the fields).
    pub fn new(at: u64, siblings_at: u32, sources_at: u32, table: u8, picks: u8) -> Self {
        Self {
            at,
            siblings_at,
            sources_at,
            table,
            picks,
            pad: [0; 6],
        }
    }
}

/// One permutation's place among the tables' constants (the layout of
/// `cuzk_poseidon_table_t`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct TableC {
    pub(super) width: u32,
    pub(super) half_full_rounds: u32,
    pub(super) partial_rounds: u32,
    pub(super) trace_len: u32,
    pub(super) state0_at: usize,
    pub(super) keys_at: usize,
    pub(super) mds_at: usize,
    pub(super) pre_sparse_at: usize,
    pub(super) sparse_at: usize,
}

/// The permutations a set of paths uses, their constants in one vector
/// as the device reads them.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PoseidonTables {
    pub(super) tables: Vec<TableC>,
    pub(super) constants: Vec<Scalar>,
}

impl PoseidonTables {
    /// The tables of `specs`, in order (a level's `table` is an index
    /// into them).
    pub fn new(specs: &[PoseidonSpec<'_>]) -> Result<Self, GpuError> {
        if specs.len() > MAX_TABLES {
            return Err(GpuError::Invalid(format!(
                "{} permutations, at most {MAX_TABLES}",
                specs.len()
            )));
        }
        let mut out = Self::default();
        for spec in specs {
            let keys = spec.check().map_err(|e| GpuError::Invalid(e.to_string()))?;
            if !WIDTHS.contains(&spec.width) {
                return Err(GpuError::Invalid(format!("no kernel for width {}", spec.width)));
            }
            let c = &mut out.constants;
            // The domain tag's element after the first round's S-box and
            // keys: the same for every hash.
            let state0_at = c.len();
            let shifted = spec.domain_tag + spec.round_constants[0];
            let square = shifted * shifted;
            c.push(square * square * shifted + spec.round_constants[spec.width]);
            let keys_at = c.len();
            c.extend_from_slice(&spec.round_constants[..keys]);
            let mds_at = c.len();
            c.extend(spec.mds.iter().flatten());
            let pre_sparse_at = c.len();
            c.extend(spec.pre_sparse.iter().flatten());
            let sparse_at = c.len();
            for (w_hat, v_rest) in spec.sparse.iter().take(spec.partial_rounds) {
                c.extend_from_slice(w_hat);
                c.extend_from_slice(v_rest);
            }
            let narrow =
                |x: usize| u32::try_from(x).map_err(|_| GpuError::Invalid("rounds out of range".into()));
            out.tables.push(TableC {
                width: narrow(spec.width)?,
                half_full_rounds: narrow(spec.half_full_rounds)?,
                partial_rounds: narrow(spec.partial_rounds)?,
                trace_len: narrow(spec.trace_len())?,
                state0_at,
                keys_at,
                mds_at,
                pre_sparse_at,
                sparse_at,
            });
        }
        Ok(out)
    }

    /// Permutations held.
    pub fn len(&self) -> usize {
        self.tables.len()
    }

    /// Whether none are.
    pub fn is_empty(&self) -> bool {
        self.tables.is_empty()
    }

    /// Table `table`'s width and trace length.
    pub fn shape(&self, table: usize) -> Option<(usize, usize)> {
        self.tables
            .get(table)
            .map(|t| (t.width as usize, t.trace_len as usize))
    }
}

/// Paths for the device to finish (cuzk-core's `InclusionPaths` lends
/// them): each path's leaf and root and its levels, in order.
#[derive(Clone, Copy, Debug)]
pub struct PathsRef<'a> {
    /// Each path's first node.
    pub leaves: &'a [Scalar],
    /// Where each path must lead.
    pub roots: &'a [Scalar],
    /// Each path's first level, then the number of levels.
    pub level_start: &'a [u32],
    /// Every path's levels.
    pub levels: &'a [PathLevel],
    /// The levels' siblings.
    pub siblings: &'a [Scalar],
    /// The levels' sources.
    pub sources: &'a [u8],
}

impl PathsRef<'_> {
    /// Paths held.
    pub fn len(&self) -> usize {
        self.leaves.len()
    }

    /// Whether none are.
    pub fn is_empty(&self) -> bool {
        self.leaves.is_empty()
    }

    /// Whether every index stays within its array and every level's
    /// values within the `aux_len` values of the vector they go into (the
    /// device trusts them).
    pub fn check(&self, tables: &PoseidonTables, aux_len: usize) -> Result<(), GpuError> {
        let bad = |why: String| Err(GpuError::Invalid(format!("paths: {why}")));
        let count = self.leaves.len();
        if self.roots.len() != count || self.level_start.len() != count + 1 {
            return bad(format!(
                "{count} leaves, {} roots, {} level starts",
                self.roots.len(),
                self.level_start.len()
            ));
        }
        if self.level_start[0] != 0
            || self.level_start.windows(2).any(|w| w[0] > w[1])
            || self.level_start[count] as usize != self.levels.len()
        {
            return bad("level starts out of order".into());
        }
        for (l, level) in self.levels.iter().enumerate() {
            let Some((width, trace_len)) = tables.shape(level.table.into()) else {
                return bad(format!("level {l}: no table {}", level.table));
            };
            let arity = width - 1;
            let siblings = level.siblings_at as usize..level.siblings_at as usize + arity - 1;
            let sources = level.sources_at as usize..level.sources_at as usize + level.picks as usize + arity;
            let end = level.at.checked_add((level.picks as usize + trace_len) as u64);
            if siblings.end > self.siblings.len()
                || sources.end > self.sources.len()
                || end.is_none_or(|end| end > aux_len as u64)
            {
                return bad(format!("level {l} reaches past its arrays or the aux vector"));
            }
            if self.sources[sources].iter().any(|&s| s as usize >= arity) {
                return bad(format!("level {l}: a source past its siblings"));
            }
        }
        Ok(())
    }
}

/// Paths a witness left to the device, with the permutations they name.
#[derive(Clone, Copy, Debug)]
pub struct LeftPathsRef<'a> {
    /// The paths.
    pub paths: PathsRef<'a>,
    /// Their permutations.
    pub tables: &'a PoseidonTables,
    /// Whether a path that does not lead to its root fails the region
    /// (not for a benchmark's input, whose paths are random).
    pub check_roots: bool,
}

/// What writing paths on the device found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PathsWritten {
    /// Paths that did not lead to their root.
    pub mismatches: u64,
    /// The first of them.
    pub first_mismatch: Option<usize>,
    /// The kernel's time (the copies not counted).
    pub kernel: Duration,
}

/// `cuzk_paths_t`.
#[cfg(any(feature = "cuda", feature = "measurement"))]
#[repr(C)]
pub(super) struct PathsC {
    count: usize,
    leaves: *const Scalar,
    roots: *const Scalar,
    level_start: *const u32,
    levels: *const PathLevel,
    nlevels: usize,
    siblings: *const Scalar,
    nsiblings: usize,
    sources: *const u8,
    nsources: usize,
    check_roots: u32,
}

#[cfg(any(feature = "cuda", feature = "measurement"))]
impl PathsC {
    /// `p`'s arrays, or none (a count of 0); a region fails on a path off
    /// its root when `check_roots`.
    pub(super) fn new(p: Option<PathsRef<'_>>, check_roots: bool) -> Self {
        let Some(p) = p else {
            return Self {
                count: 0,
                leaves: std::ptr::null(),
                roots: std::ptr::null(),
                level_start: std::ptr::null(),
                levels: std::ptr::null(),
                nlevels: 0,
                siblings: std::ptr::null(),
                nsiblings: 0,
                sources: std::ptr::null(),
                nsources: 0,
                check_roots: 0,
            };
        };
        Self {
            count: p.leaves.len(),
            leaves: p.leaves.as_ptr(),
            roots: p.roots.as_ptr(),
            level_start: p.level_start.as_ptr(),
            levels: p.levels.as_ptr(),
            nlevels: p.levels.len(),
            siblings: p.siblings.as_ptr(),
            nsiblings: p.siblings.len(),
            sources: p.sources.as_ptr(),
            nsources: p.sources.len(),
            check_roots: u32::from(check_roots),
        }
    }
}

/// `cuzk_paths_tables_t`.
#[cfg(any(feature = "cuda", feature = "measurement"))]
#[repr(C)]
pub(super) struct TablesC {
    count: u32,
    table: [TableC; MAX_TABLES],
    constants: *const Scalar,
    nconstants: usize,
}

#[cfg(any(feature = "cuda", feature = "measurement"))]
impl TablesC {
    /// `t`'s tables, or none.
    pub(super) fn new(t: Option<&PoseidonTables>) -> Self {
        let empty = PoseidonTables::default();
        let t = t.unwrap_or(&empty);
        let mut table = [TableC::default(); MAX_TABLES];
        table[..t.tables.len()].copy_from_slice(&t.tables);
        Self {
            count: t.tables.len() as u32,
            table,
            constants: t.constants.as_ptr(),
            nconstants: t.constants.len(),
        }
    }
}
