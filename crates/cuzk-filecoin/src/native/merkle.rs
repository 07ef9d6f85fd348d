//! Inclusion proofs in Poseidon Merkle trees as storage-proofs' `PoRCircuit`
//! allocates them: the leaf, then for each level of the path (base levels,
//! then the sub-tree's and the top tree's level when the tree has them) the
//! bits of the node's index, the siblings, the `insert` gadget's picks and
//! the level's hash; then the index bits packed into public inputs.

use super::poseidon::poseidon_hash;
use super::{Assignment, Aux};
use cuzk_core::Scalar;
use ff::{Field, PrimeField};
use filecoin_hashers::PoseidonArity;

/// One level of an inclusion path: the node's siblings in order, and the
/// node's place among the level's `siblings.len() + 1` children.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Level {
    /// The other children of the level's parent.
    pub siblings: Vec<Scalar>,
    /// Where the node goes among them.
    pub index: usize,
}

/// `PoRCircuit::synthesize` with the leaf given as a value (allocated) and
/// the root as a variable of the caller (nothing allocated for it; the
/// circuit's equality with it is a constraint), for a tree of base arity
/// `U`, sub-tree arity `V` and top arity `W` (0: none). Returns the root
/// the path leads to.
pub fn inclusion<U: PoseidonArity, V: PoseidonArity, W: PoseidonArity>(
    w: &mut Assignment,
    leaf: Scalar,
    path: &[Level],
) -> Scalar {
    w.element(leaf);
    let (sub, top) = (V::to_usize() > 0, W::to_usize() > 0);
    let upper = usize::from(sub) + usize::from(top);
    assert!(
        path.len() >= upper,
        "a path shorter than its tree's sub and top levels"
    );
    let (base, rest) = path.split_at(path.len() - upper);
    let mut index_bits = Vec::new();
    let mut node = leaf;
    for level in base {
        node = level_hash::<U>(w, node, level, &mut index_bits);
    }
    let mut rest = rest.iter();
    if sub {
        node = level_hash::<V>(w, node, rest.next().expect("counted"), &mut index_bits);
    }
    if top {
        node = level_hash::<W>(w, node, rest.next().expect("counted"), &mut index_bits);
    }
    pack_into_inputs(w, &index_bits);
    node
}

/// One level: the index bits (least significant first), the siblings, the
/// children in order with the node inserted, and their hash.
fn level_hash<A: PoseidonArity>(
    w: &mut Assignment,
    node: Scalar,
    level: &Level,
    bits: &mut Vec<bool>,
) -> Scalar {
    let arity = A::to_usize();
    assert_eq!(level.siblings.len() + 1, arity, "a level of the wrong arity");
    let index: Vec<bool> = (0..arity.trailing_zeros())
        .map(|i| level.index >> i & 1 == 1)
        .collect();
    for &bit in &index {
        w.bit(bit);
    }
    bits.extend_from_slice(&index);
    for &sibling in &level.siblings {
        w.element(sibling);
    }
    let children = insert(w, node, &index, &level.siblings);
    poseidon_hash(w, &children, A::PARAMETERS())
}

/// `insertion::insert`: `element` placed among `elements` at the position
/// the bits give, by picks (one allocation each), in the gadget's order for
/// its sizes 2, 4 and 8 and by `select` otherwise.
fn insert(w: &mut Assignment, element: Scalar, bits: &[bool], elements: &[Scalar]) -> Vec<Scalar> {
    let size = elements.len() + 1;
    assert_eq!(1 << bits.len(), size);
    let a = element;
    match size {
        2 => {
            let b0 = bits[0];
            vec![pick(w, b0, elements[0], a), pick(w, b0, a, elements[0])]
        }
        4 => {
            let (b0, b1) = (bits[0], bits[1]);
            let [b, c, d] = [elements[0], elements[1], elements[2]];
            let p0_x0 = pick(w, b0, b, a);
            let p0 = pick(w, b1, b, p0_x0);
            let p1_x0 = pick(w, b0, a, b);
            let p1 = pick(w, b1, c, p1_x0);
            let p2_x1 = pick(w, b0, d, a);
            let p2 = pick(w, b1, p2_x1, c);
            let p3_x1 = pick(w, b0, a, d);
            let p3 = pick(w, b1, p3_x1, d);
            vec![p0, p1, p2, p3]
        }
        8 => {
            let (b0, b1, b2) = (bits[0], bits[1], bits[2]);
            let [b, c, d, e, f, g, h] = std::array::from_fn(|i| elements[i]);
            let b0_nor_b1 = !b0 && !b1;
            w.bit(b0_nor_b1);
            let b0_and_b1 = b0 && b1;
            w.bit(b0_and_b1);
            let p0_xx0 = pick(w, b0_nor_b1, a, b);
            let p0 = pick(w, b2, b, p0_xx0);
            let p1_x00 = pick(w, b0, a, b);
            let p1_xx0 = pick(w, b1, c, p1_x00);
            let p1 = pick(w, b2, c, p1_xx0);
            let p2_x10 = pick(w, b0, d, a);
            let p2_xx0 = pick(w, b1, p2_x10, c);
            let p2 = pick(w, b2, d, p2_xx0);
            let p3_xx0 = pick(w, b0_and_b1, a, d);
            let p3 = pick(w, b2, e, p3_xx0);
            let p4_xx1 = pick(w, b0_nor_b1, a, f);
            let p4 = pick(w, b2, p4_xx1, e);
            let p5_x01 = pick(w, b0, a, f);
            let p5_xx1 = pick(w, b1, g, p5_x01);
            let p5 = pick(w, b2, p5_xx1, f);
            let p6_x11 = pick(w, b0, h, a);
            let p6_xx1 = pick(w, b1, p6_x11, g);
            let p6 = pick(w, b2, p6_xx1, g);
            let p7_xx1 = pick(w, b0_and_b1, a, h);
            let p7 = pick(w, b2, p7_xx1, h);
            vec![p0, p1, p2, p3, p4, p5, p6, p7]
        }
        _ => {
            let candidates: Vec<Vec<Scalar>> = (0..size)
                .map(|index| {
                    let mut row = elements[..index].to_vec();
                    row.push(element);
                    row.extend_from_slice(&elements[index..]);
                    row
                })
                .collect();
            (0..size)
                .map(|pos| {
                    let choices: Vec<Scalar> = candidates.iter().map(|row| row[pos]).collect();
                    select(w, &choices, bits)
                })
                .collect()
        }
    }
}

/// `insertion::select`: halves the choices by the bits, most significant
/// first, one pick a pair.
fn select(w: &mut Assignment, from: &[Scalar], bits: &[bool]) -> Scalar {
    let mut state = from.to_vec();
    for &bit in bits.iter().rev() {
        let half = state.len() / 2;
        state = (0..half)
            .map(|j| pick(w, bit, state[half + j], state[j]))
            .collect();
    }
    state[0]
}

/// `insertion::pick`: `a` if `condition`, else `b`, allocated.
fn pick(w: &mut Assignment, condition: bool, a: Scalar, b: Scalar) -> Scalar {
    let chosen = if condition { a } else { b };
    w.element(chosen);
    chosen
}

/// `multipack::pack_into_inputs`: the bits in chunks of the field's
/// capacity, each packed (least significant first) into one public input.
pub fn pack_into_inputs(w: &mut Assignment, bits: &[bool]) {
    for chunk in bits.chunks(Scalar::CAPACITY as usize) {
        let mut packed = Scalar::ZERO;
        let mut coefficient = Scalar::ONE;
        for &bit in chunk {
            if bit {
                packed += coefficient;
            }
            coefficient = coefficient.double();
        }
        w.input(packed);
    }
}
