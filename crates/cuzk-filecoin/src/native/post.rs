//! A PoSt partition's witness (WindowPoSt and WinningPoSt share the
//! circuit, `FallbackPoStCircuit`): for each sector, its commitments, the
//! check that `comm_r = H(comm_c, comm_r_last)`, and one inclusion proof in
//! its replica tree a challenge.

use super::merkle::{inclusion, Leaf, Level, PreparedPaths};
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
