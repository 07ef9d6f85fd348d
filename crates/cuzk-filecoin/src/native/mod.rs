//! The witness without the gadget code (issue 35): native writers that
//! produce, value for value and in the same order, the auxiliary variables
//! bellperson's gadgets allocate, without building a linear combination or
//! a constraint. The gadget path stays the oracle: every writer here is
//! tested against the gadget it stands for, on random inputs.
//!
//! A gadget decides what to allocate from the *form* of its operands (a
//! constant folds; an operand that is the negation of an allocated bit
//! changes which bit is allocated), so the writers carry that form
//! ([`Bit`]) beside each value, not the value alone.

pub mod bits;
pub mod merkle;
#[cfg(test)]
mod oracle;
pub mod porep;
pub mod poseidon;
pub mod post;
pub mod sha256;
pub mod snap;

pub use bits::{Aux, Bit, Word};

use cuzk_core::Scalar;
use ff::Field;

/// A circuit's variables as it allocates them: the public inputs (the
/// constant one first) and the aux variables.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Assignment {
    /// Public inputs.
    pub inputs: Vec<Scalar>,
    /// Aux variables.
    pub aux: Vec<Scalar>,
}

impl Default for Assignment {
    fn default() -> Self {
        Self::with_capacity(0)
    }
}

impl Assignment {
    /// An assignment holding only the constant one, with room for `aux`
    /// aux variables.
    pub fn with_capacity(aux: usize) -> Self {
        Self {
            inputs: vec![Scalar::ONE],
            aux: Vec::with_capacity(aux),
        }
    }

    /// One public input.
    pub fn input(&mut self, value: Scalar) {
        self.inputs.push(value);
    }
}

impl Aux for Assignment {
    fn bit(&mut self, value: bool) {
        self.aux.bit(value);
    }
    fn element(&mut self, value: Scalar) {
        self.aux.push(value);
    }
}
