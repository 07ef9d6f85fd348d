//! Inclusion paths a witness leaves for its prover to finish (issue 35):
//! the insert picks and Poseidon traces of each level, which the host
//! cannot write without hashing every level (a WindowPoSt 32 GiB
//! partition's 23,490 paths of ten arity-8 hashes: most of its witness).
//! The witness holds zeros in their place; the device hashes the paths
//! and writes the values (`cuzk_sys::gpu::PathsRef`, `cuda/paths.cuh`),
//! and a prover without one has the writer finish them on the host.

use blstrs::Scalar;
use cuzk_sys::gpu::{LeftPathsRef, PathLevel, PathsRef, PoseidonTables};
use std::ops::Range;

/// Paths described for the prover: each path's leaf and the root it must
/// lead to, and for each of its levels where its values go, the
/// permutation that hashes it, its siblings, and which value each pick and
/// each child copies (0: the node, `k`: sibling `k - 1`).
#[derive(Clone, Debug, PartialEq)]
pub struct InclusionPaths {
    leaves: Vec<Scalar>,
    roots: Vec<Scalar>,
    /// Each path's first level, then the number of levels.
    level_start: Vec<u32>,
    levels: Vec<PathLevel>,
    siblings: Vec<Scalar>,
    sources: Vec<u8>,
}

impl Default for InclusionPaths {
    fn default() -> Self {
        Self {
            leaves: Vec::new(),
            roots: Vec::new(),
            level_start: vec![0],
            levels: Vec::new(),
            siblings: Vec::new(),
            sources: Vec::new(),
        }
    }
}

/// One level of a path, as [`InclusionPaths::path`] lends it.
#[derive(Clone, Copy, Debug)]
pub struct LevelRef<'a> {
    /// Aux index of its first pick (its trace follows the picks).
    pub at: usize,
    /// The permutation that hashes it.
    pub table: usize,
    /// Each pick's source.
    pub picks: &'a [u8],
    /// Each child's source.
    pub children: &'a [u8],
    /// The siblings.
    pub siblings: &'a [Scalar],
}

impl LevelRef<'_> {
    /// The value `source` stands for, the level's node being `node`.
    pub fn value(&self, source: u8, node: Scalar) -> Scalar {
        match source {
            0 => node,
            k => self.siblings[k as usize - 1],
        }
    }
}

impl InclusionPaths {
    /// Paths held.
    pub fn len(&self) -> usize {
        self.leaves.len()
    }

    /// Whether none are.
    pub fn is_empty(&self) -> bool {
        self.leaves.is_empty()
    }

    /// Starts a path from `leaf` that must lead to `root`; its levels
    /// follow ([`push_level`](Self::push_level)).
    pub fn start_path(&mut self, leaf: Scalar, root: Scalar) {
        self.leaves.push(leaf);
        self.roots.push(root);
        self.level_start.push(self.levels.len() as u32);
    }

    /// A level of the last path started: its values from aux index `at`,
    /// hashed by permutation `table`, with these picks' and children's
    /// sources and these siblings.
    ///
    /// # Panics
    /// Without a path started, or past the description's limits (255
    /// picks, 4 billion levels, siblings or sources: far beyond a
    /// partition's).
    pub fn push_level(&mut self, at: usize, table: u8, picks: &[u8], children: &[u8], siblings: &[Scalar]) {
        assert!(!self.leaves.is_empty(), "a level before any path");
        let narrow = |n: usize| u32::try_from(n).expect("paths past the description's limits");
        self.levels.push(PathLevel::new(
            at as u64,
            narrow(self.siblings.len()),
            narrow(self.sources.len()),
            table,
            u8::try_from(picks.len()).expect("at most 255 picks a level"),
        ));
        self.siblings.extend_from_slice(siblings);
        self.sources.extend_from_slice(picks);
        self.sources.extend_from_slice(children);
        *self.level_start.last_mut().expect("a start per path") = narrow(self.levels.len());
    }

    /// Appends `other`'s paths, their values `base` aux values further on
    /// (a unit's paths placed at the unit's offset in its partition).
    pub fn append(&mut self, other: &InclusionPaths, base: usize) {
        let narrow = |n: usize| u32::try_from(n).expect("paths past the description's limits");
        let (levels, siblings, sources) = (
            narrow(self.levels.len()),
            narrow(self.siblings.len()),
            narrow(self.sources.len()),
        );
        self.leaves.extend_from_slice(&other.leaves);
        self.roots.extend_from_slice(&other.roots);
        self.level_start.pop();
        self.level_start
            .extend(other.level_start.iter().map(|&start| start + levels));
        self.levels.extend(other.levels.iter().map(|level| {
            PathLevel::new(
                level.at + base as u64,
                level.siblings_at + siblings,
                level.sources_at + sources,
                level.table,
                level.picks,
            )
        }));
        self.siblings.extend_from_slice(&other.siblings);
        self.sources.extend_from_slice(&other.sources);
    }

    /// Path `k`: its leaf, its root and its levels (each level's arity
    /// from `arity(table)`).
    pub fn path(
        &self,
        k: usize,
        arity: impl Fn(usize) -> usize,
    ) -> (Scalar, Scalar, impl Iterator<Item = LevelRef<'_>>) {
        let levels = &self.levels[self.level_start[k] as usize..self.level_start[k + 1] as usize];
        let iter = levels.iter().map(move |level| {
            let arity = arity(level.table.into());
            let picks = level.picks as usize;
            let sources = &self.sources[level.sources_at as usize..level.sources_at as usize + picks + arity];
            LevelRef {
                at: level.at as usize,
                table: level.table.into(),
                picks: &sources[..picks],
                children: &sources[picks..],
                siblings: &self.siblings[level.siblings_at as usize..level.siblings_at as usize + arity - 1],
            }
        });
        (self.leaves[k], self.roots[k], iter)
    }

    /// The paths as the device takes them.
    pub fn as_ref(&self) -> PathsRef<'_> {
        PathsRef {
            leaves: &self.leaves,
            roots: &self.roots,
            level_start: &self.level_start,
            levels: &self.levels,
            siblings: &self.siblings,
            sources: &self.sources,
        }
    }

    /// Host bytes held.
    pub fn bytes(&self) -> usize {
        use std::mem::size_of;
        (self.leaves.len() + self.roots.len() + self.siblings.len()) * size_of::<Scalar>()
            + self.level_start.len() * 4
            + self.levels.len() * size_of::<PathLevel>()
            + self.sources.len()
    }
}

/// What a witness leaves to its prover: its paths, the permutations that
/// hash them, and its writer's way of finishing them on the host (for a
/// prover without a device, or the device's host path).
#[derive(Clone)]
pub struct LeftPaths {
    /// The paths.
    pub paths: InclusionPaths,
    /// The permutations their levels name.
    pub tables: &'static PoseidonTables,
    /// Writes the paths' values into a whole aux vector; returns the paths
    /// that did not lead to their roots.
    pub finish_on_host: fn(&InclusionPaths, &mut [Scalar]) -> Vec<usize>,
    /// Whether a path that does not lead to its root is an error (it is,
    /// but for a benchmark's input planned unverifiable, whose paths are
    /// random).
    pub check_roots: bool,
}

/// Paths of a witness that do not lead to their roots: the witness is not
/// one of a valid proof.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{count} of the witness's paths do not lead to their roots (the first: path {first})")]
pub struct PathsOffTheirRoots {
    /// How many.
    pub count: usize,
    /// The first.
    pub first: usize,
}

impl LeftPaths {
    /// Writes the paths' values into `aux`, the whole aux vector, on the
    /// host.
    pub fn finish(&self, aux: &mut [Scalar]) -> Result<(), PathsOffTheirRoots> {
        let off = (self.finish_on_host)(&self.paths, aux);
        match off.first().filter(|_| self.check_roots) {
            None => Ok(()),
            Some(&first) => Err(PathsOffTheirRoots {
                count: off.len(),
                first,
            }),
        }
    }

    /// The aux ranges the paths' values fill, in the order of their levels
    /// (ascending, as a writer describes them).
    pub fn ranges(&self) -> Vec<Range<usize>> {
        self.paths
            .levels
            .iter()
            .map(|level| {
                let (_, trace_len) = self.tables.shape(level.table.into()).unwrap_or_default();
                let at = level.at as usize;
                at..at + level.picks as usize + trace_len
            })
            .collect()
    }

    /// The paths as the device takes them.
    pub fn device_view(&self) -> LeftPathsRef<'_> {
        LeftPathsRef {
            paths: self.paths.as_ref(),
            tables: self.tables,
            check_roots: self.check_roots,
        }
    }

    /// Host bytes held.
    pub fn bytes(&self) -> usize {
        self.paths.bytes()
    }
}

impl std::fmt::Debug for LeftPaths {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LeftPaths")
            .field("paths", &self.paths.len())
            .field("levels", &self.paths.levels.len())
            .finish_non_exhaustive()
    }
}

impl PartialEq for LeftPaths {
    fn eq(&self, other: &Self) -> bool {
        self.paths == other.paths && self.tables == other.tables && self.check_roots == other.check_roots
    }
}

impl Eq for LeftPaths {}

#[cfg(test)]
mod tests {
    use super::*;
    use ff::Field;

    /// Paths appended at an offset keep their levels, siblings and
    /// sources, their values moved by the offset.
    #[test]
    fn paths_appended_keep_their_levels_at_the_offset() {
        let s = |x: u64| Scalar::from(x);
        let mut first = InclusionPaths::default();
        first.start_path(s(1), s(2));
        first.push_level(10, 0, &[0, 1], &[1, 0], &[s(3)]);
        let mut second = InclusionPaths::default();
        second.start_path(s(4), s(5));
        second.push_level(0, 1, &[], &[2, 0, 1], &[s(6), s(7)]);
        second.push_level(3, 0, &[1], &[0, 1], &[s(8)]);
        let mut all = first.clone();
        all.append(&second, 100);
        assert_eq!(all.len(), 2);
        let arity = |table: usize| [2, 3][table];
        let (leaf, root, levels) = all.path(1, arity);
        assert_eq!((leaf, root), (s(4), s(5)));
        let levels: Vec<_> = levels
            .map(|l| {
                (
                    l.at,
                    l.table,
                    l.picks.to_vec(),
                    l.children.to_vec(),
                    l.siblings.to_vec(),
                )
            })
            .collect();
        assert_eq!(
            levels,
            vec![
                (100, 1, vec![], vec![2, 0, 1], vec![s(6), s(7)]),
                (103, 0, vec![1], vec![0, 1], vec![s(8)]),
            ]
        );
        let (_, _, levels) = all.path(0, arity);
        let level = levels.collect::<Vec<_>>()[0];
        assert_eq!(
            (level.at, level.picks, level.children),
            (10, &[0u8, 1][..], &[1u8, 0][..])
        );
        assert_eq!(level.value(1, Scalar::ZERO), s(3));
        assert_eq!(all.as_ref().level_start, &[0, 1, 3]);
    }
}
