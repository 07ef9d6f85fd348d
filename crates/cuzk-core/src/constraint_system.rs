//! The parts of bellperson's `ConstraintSystem` that cuzk's own
//! constraint systems share: most of them keep no namespaces, and several
//! keep only values (the recorded matrices, or nothing, stand for each
//! constraint). Written once here, as macros to use inside an
//! `impl ConstraintSystem<Scalar> for ...` block.

/// `push_namespace` and `pop_namespace` that do nothing, and `get_root`
/// returning the system itself: a constraint system without namespaces.
#[macro_export]
macro_rules! flat_namespaces {
    () => {
        fn push_namespace<NR, N>(&mut self, _: N)
        where
            NR: Into<String>,
            N: FnOnce() -> NR,
        {
        }

        fn pop_namespace(&mut self) {}

        fn get_root(&mut self) -> &mut Self::Root {
            self
        }
    };
}

/// `enforce` that never builds the constraint's linear combinations: with
/// no argument it does nothing; `this => statement` runs the statement for
/// each constraint with `this` the system (to count them).
#[macro_export]
macro_rules! enforce_without_combinations {
    ($($this:ident => $each:expr)?) => {
        fn enforce<A, AR, LA, LB, LC>(&mut self, _: A, _: LA, _: LB, _: LC)
        where
            A: FnOnce() -> AR,
            AR: Into<String>,
            LA: FnOnce(::bellperson::LinearCombination<::blstrs::Scalar>) -> ::bellperson::LinearCombination<::blstrs::Scalar>,
            LB: FnOnce(::bellperson::LinearCombination<::blstrs::Scalar>) -> ::bellperson::LinearCombination<::blstrs::Scalar>,
            LC: FnOnce(::bellperson::LinearCombination<::blstrs::Scalar>) -> ::bellperson::LinearCombination<::blstrs::Scalar>,
        {
            $(
                let $this = self;
                $each;
            )?
        }
    };
}
