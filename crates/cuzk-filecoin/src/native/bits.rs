//! Bits and 32-bit words as bellpepper's `Boolean` and `UInt32` see them,
//! and the boolean operations that allocate, each allocating exactly what
//! the gadget allocates for operands of the same form.

use cuzk_core::Scalar;
use ff::{Field, PrimeField};
use std::ops::Not;

/// Where allocated auxiliary values go, in allocation order.
pub trait Aux {
    /// One allocated bit (0 or 1).
    fn bit(&mut self, value: bool);
    /// One allocated field element.
    fn element(&mut self, value: Scalar);
    /// `count` allocated bits (at most 64), bit 0 of `values` first: a
    /// word's worth at once where the destination can take it.
    fn bits(&mut self, values: u64, count: u32) {
        for i in 0..count {
            self.bit(values >> i & 1 == 1);
        }
    }
    /// Allocated field elements, in order (a Poseidon hash's trace).
    fn elements(&mut self, values: &[Scalar]) {
        values.iter().for_each(|&value| self.element(value));
    }
    /// [`elements`](Self::elements) of which the caller knows that none
    /// is 0 or 1 (a trace the Poseidon lanes told so): where the
    /// destination keeps 0s and 1s as bits, it need not look.
    fn wide_elements(&mut self, values: &[Scalar]) {
        self.elements(values);
    }
}

/// The bits of `values` at the positions set in `mask`, lowest first, as
/// allocated bits.
fn masked_bits(aux: &mut impl Aux, values: u32, mask: u32) {
    if mask == u32::MAX {
        aux.bits(u64::from(values), 32);
        return;
    }
    let (mut packed, mut count, mut rest) = (0u64, 0u32, mask);
    while rest != 0 {
        let i = rest.trailing_zeros();
        packed |= u64::from(values >> i & 1) << count;
        count += 1;
        rest &= rest - 1;
    }
    aux.bits(packed, count);
}

/// The aux assignment as the gadget path gives it: one scalar a variable.
impl Aux for Vec<Scalar> {
    fn bit(&mut self, value: bool) {
        self.push(if value { Scalar::ONE } else { Scalar::ZERO });
    }
    fn element(&mut self, value: Scalar) {
        self.push(value);
    }
}

/// A bit of a gadget's circuit: a constant, an allocated bit, or the
/// negation of one (the value held is the allocated bit's, not the
/// negation's).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Bit {
    /// Known at circuit-building time: nothing allocated.
    Constant(bool),
    /// An allocated bit of this value.
    Is(bool),
    /// The negation of an allocated bit of this value.
    Not(bool),
}

impl Bit {
    /// The bit's value.
    pub fn value(self) -> bool {
        match self {
            Bit::Constant(v) | Bit::Is(v) => v,
            Bit::Not(v) => !v,
        }
    }

    /// Whether it is a constant.
    pub fn is_constant(self) -> bool {
        matches!(self, Bit::Constant(_))
    }

    /// A new allocated bit of `value`.
    pub fn alloc(aux: &mut impl Aux, value: bool) -> Bit {
        aux.bit(value);
        Bit::Is(value)
    }

    /// `a XOR b`, as `Boolean::xor`: a constant operand folds; otherwise
    /// one bit, the XOR of the two allocated bits, negated when exactly one
    /// operand is a negation.
    pub fn xor(aux: &mut impl Aux, a: Bit, b: Bit) -> Bit {
        match (a, b) {
            (Bit::Constant(false), x) | (x, Bit::Constant(false)) => x,
            (Bit::Constant(true), x) | (x, Bit::Constant(true)) => x.not(),
            (Bit::Is(x), Bit::Not(y)) | (Bit::Not(x), Bit::Is(y)) => Bit::alloc(aux, x ^ y).not(),
            (Bit::Is(x), Bit::Is(y)) | (Bit::Not(x), Bit::Not(y)) => Bit::alloc(aux, x ^ y),
        }
    }

    /// `a AND b`, as `Boolean::and`: a constant operand folds; otherwise
    /// one bit of the conjunction's value (and, and-not or nor of the
    /// allocated bits, whichever the forms ask for).
    pub fn and(aux: &mut impl Aux, a: Bit, b: Bit) -> Bit {
        match (a, b) {
            (Bit::Constant(false), _) | (_, Bit::Constant(false)) => Bit::Constant(false),
            (Bit::Constant(true), x) | (x, Bit::Constant(true)) => x,
            _ => Bit::alloc(aux, a.value() & b.value()),
        }
    }

    /// SHA-256's `ch(a, b, c) = (a AND b) XOR (NOT a AND c)`, as
    /// `Boolean::sha256_ch`: constants fold in the gadget's order of cases;
    /// otherwise (a constant `true` for `a` included) one bit.
    pub fn ch(aux: &mut impl Aux, a: Bit, b: Bit, c: Bit) -> Bit {
        let value = (a.value() & b.value()) ^ (!a.value() & c.value());
        match (a, b, c) {
            (Bit::Constant(_), Bit::Constant(_), Bit::Constant(_)) => Bit::Constant(value),
            (Bit::Constant(false), _, c) => c,
            (a, Bit::Constant(false), c) => Bit::and(aux, a.not(), c),
            (a, b, Bit::Constant(false)) => Bit::and(aux, a, b),
            (a, b, Bit::Constant(true)) => Bit::and(aux, a, b.not()).not(),
            (a, Bit::Constant(true), c) => Bit::and(aux, a.not(), c.not()).not(),
            _ => Bit::alloc(aux, value),
        }
    }

    /// SHA-256's `maj(a, b, c)`, as `Boolean::sha256_maj`: constants fold
    /// in the gadget's order of cases; otherwise two bits, the majority and
    /// then `b AND c`.
    pub fn maj(aux: &mut impl Aux, a: Bit, b: Bit, c: Bit) -> Bit {
        let value = (a.value() & b.value()) ^ (a.value() & c.value()) ^ (b.value() & c.value());
        match (a, b, c) {
            (Bit::Constant(_), Bit::Constant(_), Bit::Constant(_)) => Bit::Constant(value),
            (Bit::Constant(false), b, c) => Bit::and(aux, b, c),
            (a, Bit::Constant(false), c) => Bit::and(aux, a, c),
            (a, b, Bit::Constant(false)) => Bit::and(aux, a, b),
            (a, b, Bit::Constant(true)) => Bit::and(aux, a.not(), b.not()).not(),
            (a, Bit::Constant(true), c) => Bit::and(aux, a.not(), c.not()).not(),
            (Bit::Constant(true), b, c) => Bit::and(aux, b.not(), c.not()).not(),
            _ => {
                let majority = Bit::alloc(aux, value);
                Bit::and(aux, b, c);
                majority
            }
        }
    }
}

/// Its negation (allocates nothing).
impl Not for Bit {
    type Output = Bit;

    fn not(self) -> Bit {
        match self {
            Bit::Constant(v) => Bit::Constant(!v),
            Bit::Is(v) => Bit::Not(v),
            Bit::Not(v) => Bit::Is(v),
        }
    }
}

/// A field element's 255 bits, least significant first, each allocated
/// (`AllocatedNum::to_bits_le`, `field_into_allocated_bits_le`).
pub fn field_bits_le(aux: &mut impl Aux, value: Scalar) -> Vec<Bit> {
    let bytes = value.to_repr();
    (0..Scalar::NUM_BITS as usize)
        .map(|i| Bit::alloc(aux, bytes.as_ref()[i / 8] >> (i % 8) & 1 == 1))
        .collect()
}

/// `multipack::pack_bits`: the first 254 bits (the field's capacity),
/// least significant first, as one allocated element.
pub fn pack_bits(aux: &mut impl Aux, bits: &[Bit]) -> Scalar {
    let mut repr = <Scalar as PrimeField>::Repr::default();
    for (i, bit) in bits.iter().take(Scalar::CAPACITY as usize).enumerate() {
        if bit.value() {
            repr.as_mut()[i / 8] |= 1 << (i % 8);
        }
    }
    let value = Scalar::from_repr(repr).expect("254 bits are below the modulus");
    aux.element(value);
    value
}

/// A 32-bit word as `UInt32` holds it, as three masks over its bits
/// (bit `i` of each is the word's bit `i`, least significant first): the
/// value, which bits are constants, and which are negations of an
/// allocated bit (never a constant). The operations work a word at a time
/// where every operand bit is allocated (SHA-256 after its first rounds)
/// and bit by bit ([`Bit`]'s operations) where constants fold.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Word {
    value: u32,
    constant: u32,
    negated: u32,
}

impl Word {
    /// A constant word.
    pub fn constant(value: u32) -> Word {
        Word {
            value,
            constant: u32::MAX,
            negated: 0,
        }
    }

    /// The word of these bits, least significant first.
    fn from_bits(bits: &[Bit; 32]) -> Word {
        let mut word = Word {
            value: 0,
            constant: 0,
            negated: 0,
        };
        for (i, bit) in bits.iter().enumerate() {
            word.value |= u32::from(bit.value()) << i;
            match bit {
                Bit::Constant(_) => word.constant |= 1 << i,
                Bit::Not(_) => word.negated |= 1 << i,
                Bit::Is(_) => {}
            }
        }
        word
    }

    /// The word of 32 bits given most significant first (`from_bits_be`).
    pub fn from_bits_be(bits: &[Bit]) -> Word {
        assert_eq!(bits.len(), 32, "a word is 32 bits");
        Word::from_bits(&std::array::from_fn(|i| bits[31 - i]))
    }

    /// Bit `i` (least significant first).
    pub fn bit(&self, i: usize) -> Bit {
        let value = self.value >> i & 1 == 1;
        if self.constant >> i & 1 == 1 {
            Bit::Constant(value)
        } else if self.negated >> i & 1 == 1 {
            Bit::Not(!value)
        } else {
            Bit::Is(value)
        }
    }

    /// Its bits, least significant first.
    fn bits(&self) -> [Bit; 32] {
        std::array::from_fn(|i| self.bit(i))
    }

    /// Its bits, most significant first (`into_bits_be`).
    pub fn bits_be(&self) -> impl Iterator<Item = Bit> + '_ {
        (0..32).rev().map(|i| self.bit(i))
    }

    /// Its value.
    pub fn value(&self) -> u32 {
        self.value
    }

    /// The values of the allocated bits (the bit a negation negates).
    fn allocated_values(&self) -> u32 {
        self.value ^ self.negated
    }

    /// Whether every bit is allocated (or a negation of one).
    fn is_allocated(&self) -> bool {
        self.constant == 0
    }

    /// Rotated right by `by` (allocates nothing).
    pub fn rotr(&self, by: usize) -> Word {
        let by = by as u32;
        Word {
            value: self.value.rotate_right(by),
            constant: self.constant.rotate_right(by),
            negated: self.negated.rotate_right(by),
        }
    }

    /// Shifted right by `by` (below 32), zeros in (allocates nothing).
    pub fn shr(&self, by: usize) -> Word {
        assert!(by < 32, "a shift within the word");
        Word {
            value: self.value >> by,
            constant: self.constant >> by | !(u32::MAX >> by),
            negated: self.negated >> by,
        }
    }

    /// Bitwise XOR, least significant bit first (`UInt32::xor`): per bit
    /// as [`Bit::xor`], a constant operand folding (the other bit, negated
    /// for a constant one), else one bit allocated (the XOR of the two
    /// allocated bits, a negation when exactly one operand is).
    pub fn xor(aux: &mut impl Aux, a: &Word, b: &Word) -> Word {
        let both = !a.constant & !b.constant;
        masked_bits(aux, a.allocated_values() ^ b.allocated_values(), both);
        let only_b = a.constant & !b.constant;
        let only_a = b.constant & !a.constant;
        Word {
            value: a.value ^ b.value,
            constant: a.constant & b.constant,
            negated: both & (a.negated ^ b.negated)
                | only_b & (b.negated ^ a.value)
                | only_a & (a.negated ^ b.value),
        }
    }

    /// Bitwise `ch` (`UInt32::sha256_ch`): with every bit allocated, one
    /// bit each, the value of `ch`; otherwise bit by bit ([`Bit::ch`]).
    pub fn ch(aux: &mut impl Aux, a: &Word, b: &Word, c: &Word) -> Word {
        if !(a.is_allocated() && b.is_allocated() && c.is_allocated()) {
            return Word::bit_by_bit(aux, [a, b, c], Bit::ch);
        }
        let value = (a.value & b.value) ^ (!a.value & c.value);
        aux.bits(u64::from(value), 32);
        Word::allocated(value)
    }

    /// Bitwise `maj` (`UInt32::sha256_maj`): with every bit allocated, two
    /// bits each, the majority then `b AND c`; otherwise bit by bit
    /// ([`Bit::maj`]).
    pub fn maj(aux: &mut impl Aux, a: &Word, b: &Word, c: &Word) -> Word {
        if !(a.is_allocated() && b.is_allocated() && c.is_allocated()) {
            return Word::bit_by_bit(aux, [a, b, c], Bit::maj);
        }
        let value = (a.value & b.value) ^ (a.value & c.value) ^ (b.value & c.value);
        let b_and_c = b.value & c.value;
        aux.bits(interleave(value as u16, b_and_c as u16), 32);
        aux.bits(interleave((value >> 16) as u16, (b_and_c >> 16) as u16), 32);
        Word::allocated(value)
    }

    /// `op` on the three words' bits, bit 0 first.
    fn bit_by_bit<A: Aux>(aux: &mut A, words: [&Word; 3], op: fn(&mut A, Bit, Bit, Bit) -> Bit) -> Word {
        let [a, b, c] = words.map(Word::bits);
        Word::from_bits(&std::array::from_fn(|i| op(aux, a[i], b[i], c[i])))
    }

    /// A word of allocated bits of `value`.
    fn allocated(value: u32) -> Word {
        Word {
            value,
            constant: 0,
            negated: 0,
        }
    }

    /// The sum modulo 2^32 (`UInt32::addmany`, 2 to 10 operands): constant
    /// when every operand bit is; otherwise every bit of the unreduced sum
    /// is allocated, as many as the largest possible sum has (33 for two
    /// operands, 34 for three or four, 35 for five to eight), and the low
    /// 32 are the word.
    pub fn add_many(aux: &mut impl Aux, operands: &[Word]) -> Word {
        assert!(
            (2..=10).contains(&operands.len()),
            "addmany takes 2 to 10 operands"
        );
        let sum: u64 = operands.iter().map(|w| u64::from(w.value)).sum();
        if operands.iter().all(|w| w.constant == u32::MAX) {
            return Word::constant(sum as u32);
        }
        let largest = operands.len() as u64 * u64::from(u32::MAX);
        // The carries beyond 32 are allocated, then dropped.
        aux.bits(sum, 64 - largest.leading_zeros());
        Word::allocated(sum as u32)
    }
}

/// `x`'s and `y`'s bits alternately, `x`'s bit 0 first.
fn interleave(x: u16, y: u16) -> u64 {
    let spread = |v: u16| {
        let mut v = u64::from(v);
        v = (v | v << 8) & 0x00ff_00ff;
        v = (v | v << 4) & 0x0f0f_0f0f;
        v = (v | v << 2) & 0x3333_3333;
        (v | v << 1) & 0x5555_5555
    };
    spread(x) | spread(y) << 1
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    /// The bit-by-bit operations the word ones must equal: [`Bit`]'s, the
    /// writers' oracle (tested against the gadgets in sha256.rs).
    fn by_bits(aux: &mut Vec<Scalar>, a: &Word, b: &Word, op: fn(&mut Vec<Scalar>, Bit, Bit) -> Bit) -> Word {
        let (a, b) = (a.bits(), b.bits());
        Word::from_bits(&std::array::from_fn(|i| op(aux, a[i], b[i])))
    }

    /// A word of random bits of random forms: constants, allocated bits,
    /// negations; all of one form when `form` says so.
    fn word(rng: &mut ChaCha8Rng, form: u8) -> Word {
        Word::from_bits(&std::array::from_fn(|_| {
            let value = rng.gen();
            match if form == 3 { rng.gen_range(0..3) } else { form } {
                0 => Bit::Constant(value),
                1 => Bit::Is(value),
                _ => Bit::Not(value),
            }
        }))
    }

    #[test]
    fn word_operations_equal_the_bit_by_bit_ones() {
        let mut rng = ChaCha8Rng::seed_from_u64(35);
        for round in 0..2000 {
            let forms = [round % 4, (round / 4) % 4, (round / 16) % 4].map(|f| f as u8);
            let [a, b, c] = forms.map(|f| word(&mut rng, f));
            for by in [0, 1, 7, 17, 31] {
                assert_eq!(
                    a.rotr(by).bits(),
                    std::array::from_fn(|i| a.bits()[(i + by) % 32])
                );
                let shifted: [Bit; 32] =
                    std::array::from_fn(|i| a.bits().get(i + by).copied().unwrap_or(Bit::Constant(false)));
                assert_eq!(a.shr(by).bits(), shifted);
            }
            let (mut ours, mut theirs) = (Vec::new(), Vec::new());
            assert_eq!(
                Word::xor(&mut ours, &a, &b),
                by_bits(&mut theirs, &a, &b, Bit::xor),
                "{forms:?}"
            );
            let ch_bits: [Bit; 32] =
                std::array::from_fn(|i| Bit::ch(&mut theirs, a.bit(i), b.bit(i), c.bit(i)));
            assert_eq!(
                Word::ch(&mut ours, &a, &b, &c),
                Word::from_bits(&ch_bits),
                "{forms:?}"
            );
            let maj_bits: [Bit; 32] =
                std::array::from_fn(|i| Bit::maj(&mut theirs, a.bit(i), b.bit(i), c.bit(i)));
            assert_eq!(
                Word::maj(&mut ours, &a, &b, &c),
                Word::from_bits(&maj_bits),
                "{forms:?}"
            );
            assert_eq!(
                ours, theirs,
                "the same bits allocated, in the same order: {forms:?}"
            );
            for bit in a.bits() {
                assert_eq!(Word::from_bits(&[bit; 32]).bit(7), bit);
            }
        }
    }

    #[test]
    fn interleaving_alternates_the_bits() {
        assert_eq!(interleave(0xffff, 0), 0x5555_5555);
        assert_eq!(interleave(0, 0xffff), 0xaaaa_aaaa);
        assert_eq!(interleave(0b10, 0b01), 0b0110);
    }
}
