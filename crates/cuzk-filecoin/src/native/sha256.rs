//! SHA-256 as bellpepper's gadget allocates it (`sha256` and
//! `sha256_compression_function`): the message schedule for words 16 to 63,
//! the 64 rounds with their deferred additions, then the eight output
//! additions, each step allocating what the gadget allocates for operands
//! of the same form. `MultiEq` packs the additions' equalities into
//! constraints and allocates nothing, so it has no counterpart here.

use super::bits::{field_bits_le, pack_bits, Aux, Bit, Word};
use cuzk_core::Scalar;
use ff::PrimeField;

const ROUND_CONSTANTS: [u32; 64] = [
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
];

/// SHA-256's initial state.
pub const IV: [u32; 8] = [
    0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19,
];

/// The initial state as the gadget holds it (constant words).
pub fn iv() -> [Word; 8] {
    IV.map(Word::constant)
}

/// A working variable the gadget keeps as the operands of a sum not yet
/// computed, so that the sum is allocated once, with the operands of the
/// step that needs it (fewer constraints). At most seven operands, and one
/// more at the end: held inline (two sums a round, 5,040 compressions a
/// PoRep partition).
enum Deferred {
    Sum { operands: [Word; 8], len: usize },
    Word(Word),
}

impl Deferred {
    /// The deferred sum of `first` and `then` (at most seven in all).
    fn sum(first: &[Word], then: &[Word]) -> Self {
        let mut held = [Word::constant(0); 8];
        let len = first.len() + then.len();
        held[..first.len()].copy_from_slice(first);
        held[first.len()..len].copy_from_slice(then);
        Deferred::Sum { operands: held, len }
    }

    /// The word, allocating the sum of the operands and `more` if deferred.
    fn compute(self, aux: &mut impl Aux, more: Option<Word>) -> Word {
        match self {
            Deferred::Word(word) => word,
            Deferred::Sum {
                mut operands,
                mut len,
            } => {
                if let Some(word) = more {
                    operands[len] = word;
                    len += 1;
                }
                Word::add_many(aux, &operands[..len])
            }
        }
    }
}

/// One compression of a 512-bit block (most significant bit of each word
/// first, as the gadget takes it) into `state`; returns the new state.
pub fn compress(aux: &mut impl Aux, block: &[Bit], state: &[Word; 8]) -> [Word; 8] {
    assert_eq!(block.len(), 512, "a block is 512 bits");
    let mut w = [Word::constant(0); 64];
    for (word, bits) in w.iter_mut().zip(block.chunks(32)) {
        *word = Word::from_bits_be(bits);
    }
    for i in 16..64 {
        let s0 = Word::xor(aux, &w[i - 15].rotr(7), &w[i - 15].rotr(18));
        let s0 = Word::xor(aux, &s0, &w[i - 15].shr(3));
        let s1 = Word::xor(aux, &w[i - 2].rotr(17), &w[i - 2].rotr(19));
        let s1 = Word::xor(aux, &s1, &w[i - 2].shr(10));
        w[i] = Word::add_many(aux, &[w[i - 16], s0, w[i - 7], s1]);
    }

    let [a0, b0, c0, d0, e0, f0, g0, h0] = *state;
    let (mut a, mut b, mut c, mut d) = (Deferred::Word(a0), b0, c0, d0);
    let (mut e, mut f, mut g, mut h) = (Deferred::Word(e0), f0, g0, h0);
    for (i, &k) in ROUND_CONSTANTS.iter().enumerate() {
        let new_e = e.compute(aux, None);
        let s1 = Word::xor(aux, &new_e.rotr(6), &new_e.rotr(11));
        let s1 = Word::xor(aux, &s1, &new_e.rotr(25));
        let ch = Word::ch(aux, &new_e, &f, &g);
        let temp1 = [h, s1, ch, Word::constant(k), w[i]];

        let new_a = a.compute(aux, None);
        let s0 = Word::xor(aux, &new_a.rotr(2), &new_a.rotr(13));
        let s0 = Word::xor(aux, &s0, &new_a.rotr(22));
        let maj = Word::maj(aux, &new_a, &b, &c);

        h = g;
        g = f;
        f = new_e;
        e = Deferred::sum(&temp1, &[d]);
        d = c;
        c = b;
        b = new_a;
        a = Deferred::sum(&temp1, &[s0, maj]);
    }

    let h0 = a.compute(aux, Some(state[0]));
    let h1 = Word::add_many(aux, &[state[1], b]);
    let h2 = Word::add_many(aux, &[state[2], c]);
    let h3 = Word::add_many(aux, &[state[3], d]);
    let h4 = e.compute(aux, Some(state[4]));
    let h5 = Word::add_many(aux, &[state[5], f]);
    let h6 = Word::add_many(aux, &[state[6], g]);
    let h7 = Word::add_many(aux, &[state[7], h]);
    [h0, h1, h2, h3, h4, h5, h6, h7]
}

/// SHA-256 of `message` (a whole number of bytes, most significant bit of
/// each byte first), padded with constant bits as the gadget pads it;
/// returns the digest's 256 bits, most significant first.
pub fn sha256(aux: &mut impl Aux, message: &[Bit]) -> Vec<Bit> {
    assert!(message.len().is_multiple_of(8), "SHA-256 takes whole bytes");
    let length = message.len() as u64;
    let mut padded = message.to_vec();
    padded.push(Bit::Constant(true));
    while !(padded.len() + 64).is_multiple_of(512) {
        padded.push(Bit::Constant(false));
    }
    padded.extend((0..64).rev().map(|i| Bit::Constant(length >> i & 1 == 1)));
    let mut state = iv();
    for block in padded.chunks(512) {
        state = compress(aux, block, &state);
    }
    state
        .iter()
        .flat_map(|w| w.bits_be().collect::<Vec<_>>())
        .collect()
}

/// filecoin-hashers' SHA-256 of field elements (`hash2_circuit`,
/// `hash_multi_leaf_circuit`): each element's 255 bits allocated, padded
/// to 256 and taken byte by byte most significant bit first, the digest's
/// bytes read back least significant bit first, its first 254 bits packed
/// into one allocated element.
pub fn sha256_leaves(aux: &mut impl Aux, leaves: &[Scalar]) -> Scalar {
    let mut message = Vec::with_capacity(leaves.len() * 256);
    for &leaf in leaves {
        let mut bits = field_bits_le(aux, leaf);
        while !bits.len().is_multiple_of(8) {
            bits.push(Bit::Constant(false));
        }
        message.extend(bits.chunks_exact(8).flat_map(|byte| byte.iter().rev().copied()));
    }
    let digest = sha256(aux, &message);
    let le: Vec<Bit> = digest
        .chunks(8)
        .flat_map(|byte| byte.iter().rev().copied())
        .take(Scalar::CAPACITY as usize)
        .collect();
    pack_bits(aux, &le)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::native::oracle::Allocations;
    use bellperson::gadgets::boolean::{AllocatedBit, Boolean};
    use bellperson::gadgets::sha256::{sha256 as sha256_gadget, sha256_compression_function};
    use bellperson::gadgets::uint32::UInt32;
    use cuzk_core::Scalar;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    /// Bits of a chosen form, as the gadget's `Boolean`s (allocated in
    /// `cs` as needed) and as ours. Forms: 0 constant, 1 allocated, 2 the
    /// negation of an allocated bit.
    fn inputs(rng: &mut ChaCha8Rng, forms: &[u8]) -> (Allocations, Vec<Boolean>, Vec<Bit>, Vec<Scalar>) {
        let mut cs = Allocations::default();
        let (mut gadget, mut native) = (Vec::new(), Vec::new());
        for &form in forms {
            let value: bool = rng.gen();
            match form {
                0 => {
                    gadget.push(Boolean::constant(value));
                    native.push(Bit::Constant(value));
                }
                1 => {
                    let bit = AllocatedBit::alloc(&mut cs, Some(value)).unwrap();
                    gadget.push(Boolean::from(bit));
                    native.push(Bit::Is(value));
                }
                _ => {
                    let bit = AllocatedBit::alloc(&mut cs, Some(value)).unwrap();
                    gadget.push(Boolean::from(bit).not());
                    native.push(Bit::Not(value));
                }
            }
        }
        let before = cs.aux.clone();
        (cs, gadget, native, before)
    }

    /// The gadget's and the native compression of one block of the given
    /// forms (512 message bits then 256 state bits), compared allocation
    /// for allocation and output bit for output bit.
    fn compare_compression(seed: u64, forms: &[u8]) -> usize {
        assert_eq!(forms.len(), 768);
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let (mut cs, gadget, native, before) = inputs(&mut rng, forms);
        let state_gadget: Vec<UInt32> = gadget[512..].chunks(32).map(UInt32::from_bits_be).collect();
        let out_gadget = sha256_compression_function(&mut cs, &gadget[..512], &state_gadget).unwrap();
        let state: [Word; 8] = std::array::from_fn(|i| Word::from_bits_be(&native[512 + 32 * i..][..32]));
        let mut aux = before;
        let out = compress(&mut aux, &native[..512], &state);
        assert_eq!(aux.len(), cs.aux.len(), "seed {seed}: allocation counts differ");
        if let Some(i) = (0..aux.len()).find(|&i| aux[i] != cs.aux[i]) {
            panic!("seed {seed}: allocation {i} of {} differs", aux.len());
        }
        for (word, (ours, theirs)) in out.iter().zip(&out_gadget).enumerate() {
            let theirs: Vec<Option<bool>> = theirs
                .clone()
                .into_bits_be()
                .iter()
                .map(|b| b.get_value())
                .collect();
            let ours: Vec<Option<bool>> = ours.bits_be().map(|b| Some(b.value())).collect();
            assert_eq!(ours, theirs, "seed {seed}: output word {word}");
        }
        aux.len()
    }

    /// The block types of Filecoin's circuits (WITNESS.md): a variable
    /// block into a variable state (26,166 aux), into the IV (25,814),
    /// constant padding into a variable state (19,014), and a last label
    /// block of eight variable words and padding (25,570).
    #[test]
    fn native_sha256_block_types_equal_the_gadget() {
        let variable = [1u8; 512];
        let padding = [0u8; 512];
        let mut last_label = [0u8; 512];
        last_label[..256].fill(1);
        let state_variable = [1u8; 256];
        let state_iv = [0u8; 256];
        for (name, message, state, expected) in [
            ("variable", &variable, &state_variable, 26_166),
            ("first", &variable, &state_iv, 25_814),
            ("padding", &padding, &state_variable, 19_014),
            ("last label", &last_label, &state_variable, 25_570),
        ] {
            for seed in 0..3 {
                let forms: Vec<u8> = message.iter().chain(state.iter()).copied().collect();
                let before = forms[..512]
                    .iter()
                    .chain(&forms[512..])
                    .filter(|&&f| f != 0)
                    .count();
                let aux = compare_compression(seed, &forms) - before;
                assert_eq!(aux, expected, "{name} block, seed {seed}");
            }
        }
    }

    /// Every form anywhere: constants, allocated bits and negations mixed
    /// at random in the block and the state, so every folding case of xor,
    /// and, ch, maj and addmany is reached.
    #[test]
    fn native_sha256_compression_equals_the_gadget_on_mixed_forms() {
        for seed in 0..24 {
            let mut rng = ChaCha8Rng::seed_from_u64(1000 + seed);
            // Runs of one form, as circuits have, and single bits of others.
            let forms: Vec<u8> = (0..768)
                .map(|i| match (seed % 4, i % 7) {
                    (0, _) => rng.gen_range(0..3),
                    (1, 0) => 2,
                    (2, _) if i < 384 => 0,
                    _ => rng.gen_range(0..3),
                })
                .collect();
            compare_compression(seed, &forms);
        }
    }

    /// Whole hashes with the gadget's padding, of the lengths Filecoin
    /// hashes: a tree-D node (64 bytes) and a label (1,248 bytes).
    #[test]
    fn native_sha256_equals_the_gadget_with_padding() {
        for (bytes, seed) in [(64usize, 1u64), (1248, 2), (3, 3)] {
            let mut rng = ChaCha8Rng::seed_from_u64(seed);
            let forms: Vec<u8> = (0..bytes * 8).map(|i| u8::from(i % 9 != 0)).collect();
            let (mut cs, gadget, native, before) = inputs(&mut rng, &forms);
            let digest_gadget = sha256_gadget(&mut cs, &gadget).unwrap();
            let mut aux = before;
            let digest = sha256(&mut aux, &native);
            assert_eq!(aux, cs.aux, "{bytes} bytes");
            let theirs: Vec<bool> = digest_gadget.iter().map(|b| b.get_value().unwrap()).collect();
            let ours: Vec<bool> = digest.iter().map(|b| b.value()).collect();
            assert_eq!(ours, theirs, "{bytes} bytes");
            // And the digest is SHA-256's.
            let message: Vec<u8> = native
                .chunks(8)
                .map(|byte| byte.iter().fold(0u8, |v, b| v << 1 | u8::from(b.value())))
                .collect();
            use sha2::Digest;
            let expected = sha2::Sha256::digest(&message);
            let ours_bytes: Vec<u8> = digest
                .chunks(8)
                .map(|byte| byte.iter().fold(0u8, |v, b| v << 1 | u8::from(b.value())))
                .collect();
            assert_eq!(ours_bytes, expected.to_vec());
        }
    }

    /// filecoin-hashers' SHA-256 of two field elements (tree D's node
    /// hash), against its circuit on random elements: the decompositions,
    /// the hash and the packed result, allocation for allocation.
    #[test]
    fn native_sha256_of_two_elements_equals_filecoin_hashers() {
        use bellperson::gadgets::num::AllocatedNum;
        use ff::Field;
        use filecoin_hashers::sha256::Sha256Function;
        use filecoin_hashers::HashFunction;
        for seed in 0..3 {
            let mut rng = ChaCha8Rng::seed_from_u64(seed);
            let (a, b) = (Scalar::random(&mut rng), Scalar::random(&mut rng));
            let mut cs = Allocations::default();
            let a_num = AllocatedNum::alloc(&mut cs, || Ok(a)).unwrap();
            let b_num = AllocatedNum::alloc(&mut cs, || Ok(b)).unwrap();
            let before = cs.aux.len();
            let theirs = <Sha256Function as HashFunction<_>>::hash2_circuit(&mut cs, &a_num, &b_num).unwrap();
            let mut aux: Vec<Scalar> = Vec::new();
            let ours = sha256_leaves(&mut aux, &[a, b]);
            assert_eq!(aux, cs.aux[before..], "seed {seed}");
            assert_eq!(Some(ours), theirs.get_value());
            // And the value is filecoin-hashers' native hash of the two.
            let native = <Sha256Function as HashFunction<_>>::hash2(&a.into(), &b.into());
            assert_eq!(ours, Scalar::from(native), "seed {seed}");
        }
    }
}
