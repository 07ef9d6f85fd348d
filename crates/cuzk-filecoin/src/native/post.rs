//! A PoSt partition's witness (WindowPoSt and WinningPoSt share the
//! circuit, `FallbackPoStCircuit`): for each sector, its commitments, the
//! check that `comm_r = H(comm_c, comm_r_last)`, and one inclusion proof in
//! its replica tree a challenge.

use super::merkle::{hash2_on_device, inclusion, inclusion_on_device, table_of, Leaf, Level, PreparedPaths};
use super::poseidon::poseidon_hash;
use super::{Assignment, Aux};
use cuzk_core::Scalar;
use cuzk_core::ScalarSink;
use filecoin_hashers::PoseidonArity;
use typenum::U2;

/// What the circuit of one sector needs.
#[derive(Clone, Debug)]
pub struct SectorWitness {
    /// The sector's replica commitment (a public input).
    pub comm_r: Scalar,
    /// The column commitment.
    pub comm_c: Scalar,
    /// The replica tree's root.
    pub comm_r_last: Scalar,
    /// Each challenge's leaf and its path to `comm_r_last`.
    pub challenges: Vec<(Scalar, Vec<Level>)>,
}

/// The sector's variables, in the circuit's order, for a replica tree of
/// arities `U`, `V`, `W`.
pub fn sector<U: PoseidonArity, V: PoseidonArity, W: PoseidonArity>(
    w: &mut Assignment<impl ScalarSink>,
    sector: &SectorWitness,
) {
    sectors::<U, V, W>(w, std::slice::from_ref(sector));
}

/// The variables of `sectors`, one sector after another ([`sector`]),
/// their challenge paths hashed ahead together, a level at a time, eight
/// hashes at once where the processor can: a sector's ten paths alone
/// leave six of sixteen lanes idle at each level, three sectors' thirty
/// two of thirty-two.
pub fn sectors<U: PoseidonArity, V: PoseidonArity, W: PoseidonArity>(
    w: &mut Assignment<impl ScalarSink>,
    sectors: &[SectorWitness],
) {
    let paths: Vec<(Scalar, &[Level])> = sectors
        .iter()
        .flat_map(|sector| sector.challenges.iter().map(|(leaf, path)| (*leaf, &path[..])))
        .collect();
    let mut hasher = PreparedPaths::new::<U, V, W>(&paths);
    for sector in sectors {
        w.element(sector.comm_r_last);
        w.element(sector.comm_c);
        w.element(sector.comm_r);
        w.input(sector.comm_r);
        poseidon_hash(w, &[sector.comm_c, sector.comm_r_last], U2::PARAMETERS());
        for (leaf, path) in &sector.challenges {
            inclusion::<U, V, W>(w, &mut hasher, Leaf::Value(*leaf), path);
        }
    }
}

/// Whether the paths of a replica tree of arities `U`, `V`, `W` can be
/// left to the prover ([`sectors_on_device`]): each arity has a table.
pub fn tree_on_device<U: PoseidonArity, V: PoseidonArity, W: PoseidonArity>() -> bool {
    [U::to_usize(), V::to_usize(), W::to_usize()]
        .into_iter()
        .all(|arity| arity == 0 || table_of(arity).is_some())
}

/// [`sectors`] with what the host cannot write without hashing left to
/// the prover and described in `w.paths`: each sector's `comm_r` hash and
/// every challenge's path ([`inclusion_on_device`]), to lead to the
/// sector's `comm_r` and `comm_r_last`. The tree's arities have tables
/// ([`tree_on_device`]).
pub fn sectors_on_device<U: PoseidonArity, V: PoseidonArity, W: PoseidonArity>(
    w: &mut Assignment<impl ScalarSink>,
    sectors: &[SectorWitness],
) {
    for sector in sectors {
        w.element(sector.comm_r_last);
        w.element(sector.comm_c);
        w.element(sector.comm_r);
        w.input(sector.comm_r);
        hash2_on_device(w, sector.comm_c, sector.comm_r_last, sector.comm_r);
        for (leaf, path) in &sector.challenges {
            inclusion_on_device::<U, V, W>(w, Leaf::Value(*leaf), path, sector.comm_r_last);
        }
    }
}

/// `count` sectors of random values in a tree of arities `U`, `V`, `W`,
/// for the tests and the bench: `challenges` paths each, of `base` levels
/// of arity `U` and then the tree's sub and top levels; challenge 0's path
/// leads to `comm_r_last` (the others, random, do not), and `comm_r` is
/// the hash of `comm_c` and `comm_r_last`.
#[cfg(any(test, feature = "test-inputs"))]
pub fn random_sectors<U: PoseidonArity, V: PoseidonArity, W: PoseidonArity>(
    seed: u64,
    count: usize,
    challenges: usize,
    base: usize,
) -> Vec<SectorWitness> {
    use super::merkle::Poseidon;
    use ff::Field;
    use rand::SeedableRng;
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let arities: Vec<usize> = std::iter::repeat_n(U::to_usize(), base)
        .chain([V::to_usize(), W::to_usize()].into_iter().filter(|&a| a > 0))
        .collect();
    (0..count)
        .map(|_| {
            let challenges: Vec<(Scalar, Vec<Level>)> = (0..challenges)
                .map(|_| {
                    let levels = super::merkle::random_path(&mut rng, &arities);
                    (Scalar::random(&mut rng), levels)
                })
                .collect();
            let comm_r_last = challenges.first().map_or(Scalar::ZERO, |(leaf, path)| {
                inclusion::<U, V, W>(
                    &mut Assignment::default(),
                    &mut Poseidon,
                    Leaf::Value(*leaf),
                    path,
                )
            });
            let comm_c = Scalar::random(&mut rng);
            SectorWitness {
                comm_r: poseidon_hash(&mut Vec::new(), &[comm_c, comm_r_last], U2::PARAMETERS()),
                comm_c,
                comm_r_last,
                challenges,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::native::oracle::Allocations;
    use bellperson::{Circuit, ConstraintSystem};
    use ff::Field;
    use filecoin_hashers::poseidon::PoseidonHasher;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;
    use storage_proofs_core::gadgets::por::AuthPath;
    use storage_proofs_core::merkle::{LCTree, MerkleTreeTrait};
    use storage_proofs_post::fallback::Sector;
    use typenum::{Unsigned, U0, U16, U4, U8};

    /// A sector of random values with `challenges` paths of `base` base
    /// levels (plus the tree's sub and top levels), as the gadget's
    /// `Sector` and as ours.
    fn random_sector<Tree: MerkleTreeTrait>(
        rng: &mut ChaCha8Rng,
        base: usize,
        challenges: usize,
    ) -> (Sector<Tree>, SectorWitness)
    where
        Tree::Arity: PoseidonArity,
        Tree::SubTreeArity: PoseidonArity,
        Tree::TopTreeArity: PoseidonArity,
    {
        let arities = [
            Tree::Arity::to_usize(),
            Tree::SubTreeArity::to_usize(),
            Tree::TopTreeArity::to_usize(),
        ];
        let levels: Vec<usize> = std::iter::repeat_n(arities[0], base)
            .chain(arities[1..].iter().copied().filter(|&a| a > 0))
            .collect();
        let mut ours = SectorWitness {
            comm_r: Scalar::random(&mut *rng),
            comm_c: Scalar::random(&mut *rng),
            comm_r_last: Scalar::random(&mut *rng),
            challenges: Vec::new(),
        };
        let (mut leafs, mut paths) = (Vec::new(), Vec::new());
        for _ in 0..challenges {
            let leaf = Scalar::random(&mut *rng);
            let path: Vec<Level> = levels
                .iter()
                .map(|&arity| Level {
                    siblings: (1..arity).map(|_| Scalar::random(&mut *rng)).collect(),
                    index: rng.gen_range(0..arity),
                })
                .collect();
            let options: Vec<(Vec<Option<Scalar>>, Option<usize>)> = path
                .iter()
                .map(|l| (l.siblings.iter().map(|&s| Some(s)).collect(), Some(l.index)))
                .collect();
            leafs.push(Some(leaf));
            paths.push(AuthPath::from(options));
            ours.challenges.push((leaf, path));
        }
        let theirs = Sector {
            comm_r: Some(ours.comm_r),
            comm_c: Some(ours.comm_c),
            comm_r_last: Some(ours.comm_r_last),
            leafs,
            paths,
            id: Some(Scalar::ONE),
        };
        (theirs, ours)
    }

    fn compare<Tree: 'static + MerkleTreeTrait>(seed: u64, base: usize)
    where
        Tree::Arity: PoseidonArity,
        Tree::SubTreeArity: PoseidonArity,
        Tree::TopTreeArity: PoseidonArity,
    {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let (theirs, ours) = random_sector::<Tree>(&mut rng, base, 3);
        let mut cs = Allocations::default();
        cs.alloc_input(|| "one", || Ok(Scalar::ONE)).unwrap();
        (&theirs).synthesize(&mut cs).unwrap();
        let mut w = Assignment::default();
        sector::<Tree::Arity, Tree::SubTreeArity, Tree::TopTreeArity>(&mut w, &ours);
        let shape = std::any::type_name::<Tree>();
        assert_eq!(w.inputs, cs.inputs, "{shape}: inputs differ");
        assert_eq!(w.aux.len(), cs.aux.len(), "{shape}: allocation counts differ");
        if let Some(i) = (0..w.aux.len()).find(|&i| w.aux.get(i) != cs.aux[i]) {
            panic!("{shape}, seed {seed}: allocation {i} of {} differs", w.aux.len());
        }
    }

    /// A PoSt sector's variables equal the gadget's, inputs and aux, for
    /// the tree shapes of every sector size (base arity 8; a sub-tree of 2
    /// or 8; a top of 2) and for the insert gadget's other sizes (4, and 16
    /// by `select`), with random values and indices.
    #[test]
    fn native_post_sector_equals_the_gadget_for_every_tree_shape() {
        for seed in 0..2 {
            compare::<LCTree<PoseidonHasher, U8, U0, U0>>(seed, 3);
            compare::<LCTree<PoseidonHasher, U8, typenum::U2, U0>>(seed, 2);
            compare::<LCTree<PoseidonHasher, U8, U8, U0>>(seed, 2);
            compare::<LCTree<PoseidonHasher, U8, U8, typenum::U2>>(seed, 2);
            compare::<LCTree<PoseidonHasher, U4, U0, U0>>(seed, 3);
            compare::<LCTree<PoseidonHasher, U16, U0, U0>>(seed, 2);
        }
    }

    /// Sectors whose paths are left to the prover, finished on the host,
    /// equal the sectors written whole (so the gadget's, above), inputs and
    /// aux, for every Filecoin tree shape; what the host wrote holds few
    /// wide values. Each path is checked against its root: a challenge's
    /// against `comm_r_last`, a sector's hash against `comm_r`.
    #[test]
    fn native_post_sectors_on_device_finished_on_host_equal_the_whole_writer() {
        use crate::native::merkle::finish_on_host;
        fn check<U: PoseidonArity, V: PoseidonArity, W: PoseidonArity>(seed: u64, base: usize) {
            let mut sectors = random_sectors::<U, V, W>(seed, 2, 3, base);
            let shape = std::any::type_name::<(U, V, W)>();
            let mut whole = Assignment::default();
            super::sectors::<U, V, W>(&mut whole, &sectors);
            let mut left = Assignment::default();
            assert!(tree_on_device::<U, V, W>());
            sectors_on_device::<U, V, W>(&mut left, &sectors);
            let paths = std::mem::take(&mut left.paths);
            assert_eq!(left.inputs, whole.inputs, "{shape}: inputs differ");
            assert_eq!(left.aux.len(), whole.aux.len(), "{shape}: lengths differ");
            assert_eq!(
                paths.len(),
                sectors.len() * 4,
                "{shape}: a path a challenge, one a sector"
            );
            assert!(left.aux.wide_count() * 10 < whole.aux.wide_count(), "{shape}");
            let mut aux = left.aux.to_scalars();
            assert_ne!(aux, whole.aux.to_scalars());
            let mismatched = finish_on_host(&paths, &mut aux);
            assert_eq!(aux, whole.aux.to_scalars(), "{shape}: finished values differ");
            // Random challenges 1 and 2 of each sector do not lead to its root.
            let expected: Vec<usize> = (0..paths.len()).filter(|k| k % 4 >= 2).collect();
            assert_eq!(mismatched, expected, "{shape}");
            // A comm_r that is not the commitments' hash is told.
            sectors[1].comm_r += Scalar::ONE;
            let mut left = Assignment::default();
            sectors_on_device::<U, V, W>(&mut left, &sectors);
            let paths = std::mem::take(&mut left.paths);
            let mismatched = finish_on_host(&paths, &mut left.aux.to_scalars());
            assert!(
                mismatched.contains(&4) && !mismatched.contains(&0),
                "{shape}: {mismatched:?}"
            );
        }
        for seed in 0..2 {
            check::<U8, U0, U0>(seed, 3);
            check::<U8, typenum::U2, U0>(seed, 2);
            check::<U8, U8, U0>(seed, 2);
            check::<U8, U8, typenum::U2>(seed, 2);
        }
        // Trees of no Filecoin sector size are written whole.
        assert!(!tree_on_device::<U4, U0, U0>() && !tree_on_device::<U16, U0, U0>());
    }

    /// The device's path writer, its own source built for the host
    /// (`cuzk_sys::gpu::write_paths_on_host`, over blst), writes what the
    /// host's finish writes, and tells the same paths off their roots: for
    /// a WindowPoSt 32 GiB tree's paths and a hash of each table, children
    /// in a shuffled order. (The GPU tests run it on the device.)
    #[test]
    fn native_paths_by_the_kernel_source_equal_the_host_finish() {
        use crate::native::merkle::{device_tables, finish_on_host, sample_paths};
        for (aux, paths) in sample_paths() {
            let mut host = aux.clone();
            let off = finish_on_host(&paths, &mut host);
            let mut kernel = aux;
            let written =
                cuzk_sys::gpu::write_paths_on_host(device_tables(), paths.as_ref(), &mut kernel).unwrap();
            if let Some(i) = (0..host.len()).find(|&i| kernel[i] != host[i]) {
                panic!("value {i} of {} differs from the host finish's", host.len());
            }
            assert_eq!(written.mismatches, off.len() as u64);
            assert_eq!(written.first_mismatch, off.first().copied());
        }
    }

    /// Sectors written as a group (their paths hashed ahead together)
    /// equal the same sectors written one at a time, each of which equals
    /// the gadget (above), for a whole and a cut group.
    #[test]
    fn native_post_sectors_hashed_together_equal_sectors_one_at_a_time() {
        type Tree = LCTree<PoseidonHasher, U8, U8, typenum::U2>;
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        let written: Vec<SectorWitness> = (0..4).map(|_| random_sector::<Tree>(&mut rng, 2, 10).1).collect();
        for group in [&written[..], &written[..3]] {
            let mut together = Assignment::default();
            super::sectors::<U8, U8, typenum::U2>(&mut together, group);
            let mut apart = Assignment::default();
            for sector in group {
                super::sector::<U8, U8, typenum::U2>(&mut apart, sector);
            }
            assert_eq!(together.inputs, apart.inputs);
            assert_eq!(together.aux, apart.aux);
        }
    }
}
