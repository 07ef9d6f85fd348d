//! A SnapDeals partition's witness (storage-proofs-update's
//! `EmptySectorUpdateCircuit`): the prologue (the packed partition index
//! and h-select and its bits, the commitments, `phi`, the apex tree of
//! tree D and its path to comm_d_new, every challenge's bits from the
//! Poseidon digests of comm_r_new), then each challenge: its high bits and
//! `rho`, the new replica leaf `leaf_r_old + leaf_d_new * rho`, its paths
//! in the old and new replica trees, and the data leaf's path to its apex
//! leaf.
//!
//! Every challenge depends only on the prologue, so the challenges are
//! written apart (in parallel) and laid end to end.

use super::bits::{field_bits_le, pack_bits, Bit};
use super::merkle::{path_to_root, select, Level, Poseidon, PreparedPaths, Sha256, TreeHash};
use super::poseidon::poseidon_hash;
use super::{Assignment, Aux};
use cuzk_core::Scalar;
use cuzk_core::ScalarSink;
use ff::{Field, PrimeField};
use filecoin_hashers::PoseidonArity;
use storage_proofs_update::constants::POSEIDON_CONSTANTS_GEN_RANDOMNESS;
use typenum::{U0, U2};

/// What the circuit of one partition needs, with the shape of the sector.
#[derive(Clone, Debug)]
pub struct SnapWitness {
    /// The partition index (low bits) and the one-hot h-select above it.
    pub k_and_h_select: Scalar,
    /// Bits of the partition index (log2 of the partition count).
    pub partition_bit_len: usize,
    /// Bits of a challenge (log2 of the sector's nodes).
    pub challenge_bit_len: usize,
    /// Bits that pick an apex leaf (log2 of the apex leaf count).
    pub apex_leaf_bit_len: usize,
    /// The high-bit counts h-select chooses from.
    pub hs: Vec<usize>,
    /// The old replica commitment (a public input).
    pub comm_r_old: Scalar,
    /// The new data commitment (a public input).
    pub comm_d_new: Scalar,
    /// The new replica commitment (a public input).
    pub comm_r_new: Scalar,
    /// The column commitment both replicas share.
    pub comm_c: Scalar,
    /// The old replica tree's root.
    pub root_r_old: Scalar,
    /// The new replica tree's root.
    pub root_r_new: Scalar,
    /// The partition's apex leaves (a row of tree D).
    pub apex_leafs: Vec<Scalar>,
    /// The apex root's siblings up to comm_d_new, lowest first.
    pub partition_path: Vec<Scalar>,
    /// The challenges, in order.
    pub challenges: Vec<SnapChallenge>,
}

/// What the circuit of one challenge needs.
#[derive(Clone, Debug)]
pub struct SnapChallenge {
    /// The old replica's leaf.
    pub leaf_r_old: Scalar,
    /// Its siblings in the old replica tree, a list a level.
    pub path_r_old: Vec<Vec<Scalar>>,
    /// The new data's leaf.
    pub leaf_d_new: Scalar,
    /// Its siblings in tree D up to the apex leaf, lowest first.
    pub path_to_apex_leaf: Vec<Scalar>,
    /// Its siblings in the new replica tree, a list a level.
    pub path_r_new: Vec<Vec<Scalar>>,
}

/// What every challenge takes from the prologue.
#[derive(Clone, Debug)]
pub struct Shared {
    phi: Scalar,
    partition_bits: Vec<bool>,
    h_select_bits: Vec<bool>,
    /// Each challenge's generated bits (without the partition's).
    generated: Vec<Vec<bool>>,
}

/// The prologue, up to and with every challenge's generated bits; what
/// the challenges share is returned.
pub fn prologue(w: &mut Assignment<impl ScalarSink>, s: &SnapWitness) -> Shared {
    let gen = &*POSEIDON_CONSTANTS_GEN_RANDOMNESS;
    w.element(s.k_and_h_select);
    w.input(s.k_and_h_select);
    let packed = s.k_and_h_select.to_repr();
    let bits: Vec<bool> = (0..s.partition_bit_len + s.hs.len())
        .map(|i| packed.as_ref()[i / 8] >> (i % 8) & 1 == 1)
        .collect();
    for &bit in &bits {
        w.bit(bit);
    }
    let (partition_bits, h_select_bits) = bits.split_at(s.partition_bit_len);
    let partition = pack_bits(w, &as_bits(partition_bits));
    for value in [s.comm_r_old, s.comm_d_new, s.comm_r_new] {
        w.element(value);
        w.input(value);
    }
    let phi = poseidon_hash(w, &[s.comm_d_new, s.comm_r_old], gen);
    for value in [s.comm_c, s.root_r_old, s.root_r_new] {
        w.element(value);
    }
    for &leaf in &s.apex_leafs {
        w.element(leaf);
    }
    for &sibling in &s.partition_path {
        w.element(sibling);
    }
    Poseidon.hash::<U2>(w, &[s.comm_c, s.root_r_old]);
    Poseidon.hash::<U2>(w, &[s.comm_c, s.root_r_new]);

    // The apex tree, row by row, and its root's path to comm_d_new.
    let mut row = s.apex_leafs.clone();
    while row.len() > 1 {
        row = row.chunks(2).map(|pair| Sha256.hash::<U2>(w, pair)).collect();
    }
    let apex_root = row.first().copied().unwrap_or(Scalar::ZERO);
    let partition_path: Vec<Vec<Scalar>> = s.partition_path.iter().map(|&x| vec![x]).collect();
    path_to_root::<U2, U0, U0>(w, &mut Sha256, apex_root, partition_bits, &partition_path);

    // `gen_challenge_bits`: digests of comm_r_new and the digest's index,
    // each cut into challenges.
    let per_challenge = s.challenge_bit_len - s.partition_bit_len;
    let per_digest = Scalar::CAPACITY as usize / per_challenge;
    let count = s.challenges.len();
    let digests = count.div_ceil(per_digest);
    let mut generated = Vec::with_capacity(count);
    for j in 0..digests {
        let index = partition * Scalar::from(digests as u64) + Scalar::from(j as u64);
        w.element(index);
        let digest = poseidon_hash(w, &[s.comm_r_new, index], gen);
        let digest_bits: Vec<bool> = field_bits_le(w, digest).into_iter().map(Bit::value).collect();
        let take = if j + 1 == digests {
            count - generated.len()
        } else {
            per_digest
        };
        generated.extend(digest_bits.chunks(per_challenge).take(take).map(<[bool]>::to_vec));
    }
    Shared {
        phi,
        partition_bits: partition_bits.to_vec(),
        h_select_bits: h_select_bits.to_vec(),
        generated,
    }
}

/// Challenge `index`'s variables, for a replica tree of arities `U`, `V`,
/// `W`.
pub fn challenge<U: PoseidonArity, V: PoseidonArity, W: PoseidonArity>(
    w: &mut Assignment<impl ScalarSink>,
    s: &SnapWitness,
    shared: &Shared,
    index: usize,
) {
    let c = &s.challenges[index];
    let c_bits: Vec<bool> = shared.generated[index]
        .iter()
        .chain(&shared.partition_bits)
        .copied()
        .collect();

    // `get_challenge_high_bits`: each h's high bits packed and kept where
    // h-select picks it, then their sum.
    let mut c_high = Scalar::ZERO;
    for (&h, &selected) in s.hs.iter().zip(&shared.h_select_bits) {
        let high = pack_bits(w, &as_bits(&c_bits[c_bits.len() - h..]));
        let kept = if selected { high } else { Scalar::ZERO };
        w.element(kept);
        c_high += kept;
    }
    w.element(c_high);
    let rho = poseidon_hash(w, &[shared.phi, c_high], &*POSEIDON_CONSTANTS_GEN_RANDOMNESS);

    w.element(c.leaf_r_old);
    w.element(c.leaf_d_new);
    let product = c.leaf_d_new * rho;
    w.element(product);
    let leaf_r_new = c.leaf_r_old + product;
    w.element(leaf_r_new);

    // Both replica paths hashed ahead, eight hashes at a time where the
    // processor can (each level's index from the challenge's bits).
    let levels_old = levels(&c.path_r_old, &c_bits);
    let levels_new = levels(&c.path_r_new, &c_bits);
    let mut prepared =
        PreparedPaths::new::<U, V, W>(&[(c.leaf_r_old, &levels_old), (leaf_r_new, &levels_new)]);
    for (leaf, path) in [(c.leaf_r_old, &c.path_r_old), (leaf_r_new, &c.path_r_new)] {
        for &sibling in path.iter().flatten() {
            w.element(sibling);
        }
        path_to_root::<U, V, W>(w, &mut prepared, leaf, &c_bits, path);
    }

    let to_apex = s.challenge_bit_len - s.partition_bit_len - s.apex_leaf_bit_len;
    // The selected apex leaf is the path's root: only a constraint uses it.
    select(w, &s.apex_leafs, &c_bits[to_apex..to_apex + s.apex_leaf_bit_len]);
    for &sibling in &c.path_to_apex_leaf {
        w.element(sibling);
    }
    let path: Vec<Vec<Scalar>> = c.path_to_apex_leaf.iter().map(|&x| vec![x]).collect();
    path_to_root::<U2, U0, U0>(w, &mut Sha256, c.leaf_d_new, &c_bits[..to_apex], &path);
}

/// A path given as siblings per level, its indices from `bits` (least
/// significant first, as many a level as its arity takes), as [`Level`]s;
/// empty where the bits run out (the path is then hashed on the spot).
fn levels(path: &[Vec<Scalar>], bits: &[bool]) -> Vec<Level> {
    let mut bits = bits.iter();
    let mut levels = Vec::with_capacity(path.len());
    for siblings in path {
        let width = (siblings.len() + 1).trailing_zeros();
        let mut index = 0;
        for i in 0..width {
            let Some(&bit) = bits.next() else {
                return Vec::new();
            };
            index |= usize::from(bit) << i;
        }
        levels.push(Level {
            siblings: siblings.clone(),
            index,
        });
    }
    levels
}

fn as_bits(bits: &[bool]) -> Vec<Bit> {
    bits.iter().map(|&b| Bit::Is(b)).collect()
}
