//! The oracle's constraint system for the native writers' tests: keeps the
//! values of the variables a gadget allocates (inputs and aux), in order,
//! and nothing else (no constraint, no name).

use bellperson::{ConstraintSystem, Index, SynthesisError, Variable};
use cuzk_core::Scalar;

#[derive(Default)]
pub(crate) struct Allocations {
    pub(crate) inputs: Vec<Scalar>,
    pub(crate) aux: Vec<Scalar>,
}

impl ConstraintSystem<Scalar> for Allocations {
    type Root = Self;

    fn alloc<F, A, AR>(&mut self, _: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.aux.push(f()?);
        Ok(Variable::new_unchecked(Index::Aux(self.aux.len() - 1)))
    }

    fn alloc_input<F, A, AR>(&mut self, _: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.inputs.push(f()?);
        Ok(Variable::new_unchecked(Index::Input(self.inputs.len() - 1)))
    }

    cuzk_core::enforce_without_combinations!();

    cuzk_core::flat_namespaces!();
}
