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

/// A 32-bit word as `UInt32` holds it: its bits, least significant first.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Word(pub [Bit; 32]);

impl Word {
    /// A constant word.
    pub fn constant(value: u32) -> Word {
        Word(std::array::from_fn(|i| Bit::Constant(value >> i & 1 == 1)))
    }

    /// The word of 32 bits given most significant first (`from_bits_be`).
    pub fn from_bits_be(bits: &[Bit]) -> Word {
        assert_eq!(bits.len(), 32, "a word is 32 bits");
        Word(std::array::from_fn(|i| bits[31 - i]))
    }

    /// Its bits, most significant first (`into_bits_be`).
    pub fn bits_be(&self) -> impl Iterator<Item = Bit> + '_ {
        self.0.iter().rev().copied()
    }

    /// Its value.
    pub fn value(&self) -> u32 {
        self.0
            .iter()
            .enumerate()
            .fold(0, |v, (i, b)| v | u32::from(b.value()) << i)
    }

    /// Rotated right by `by` (allocates nothing).
    pub fn rotr(&self, by: usize) -> Word {
        Word(std::array::from_fn(|i| self.0[(i + by) % 32]))
    }

    /// Shifted right by `by`, zeros in (allocates nothing).
    pub fn shr(&self, by: usize) -> Word {
        Word(std::array::from_fn(|i| {
            self.0.get(i + by).copied().unwrap_or(Bit::Constant(false))
        }))
    }

    /// Bitwise XOR, least significant bit first (`UInt32::xor`).
    pub fn xor(aux: &mut impl Aux, a: &Word, b: &Word) -> Word {
        Word(std::array::from_fn(|i| Bit::xor(aux, a.0[i], b.0[i])))
    }

    /// Bitwise `ch` (`UInt32::sha256_ch`).
    pub fn ch(aux: &mut impl Aux, a: &Word, b: &Word, c: &Word) -> Word {
        Word(std::array::from_fn(|i| Bit::ch(aux, a.0[i], b.0[i], c.0[i])))
    }

    /// Bitwise `maj` (`UInt32::sha256_maj`).
    pub fn maj(aux: &mut impl Aux, a: &Word, b: &Word, c: &Word) -> Word {
        Word(std::array::from_fn(|i| Bit::maj(aux, a.0[i], b.0[i], c.0[i])))
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
        let sum: u64 = operands.iter().map(|w| u64::from(w.value())).sum();
        if operands.iter().all(|w| w.0.iter().all(|b| b.is_constant())) {
            return Word::constant(sum as u32);
        }
        let largest = operands.len() as u64 * u64::from(u32::MAX);
        let allocated = 64 - largest.leading_zeros() as usize;
        let mut bits = [Bit::Constant(false); 32];
        for i in 0..allocated {
            let bit = Bit::alloc(aux, sum >> i & 1 == 1);
            // The carries beyond 32 are allocated, then dropped.
            if let Some(slot) = bits.get_mut(i) {
                *slot = bit;
            }
        }
        Word(bits)
    }
}
