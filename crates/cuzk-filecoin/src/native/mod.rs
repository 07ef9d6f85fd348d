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
#[cfg(test)]
mod oracle;
pub mod poseidon;
pub mod sha256;

pub use bits::{Aux, Bit, Word};
