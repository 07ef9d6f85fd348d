//! The parts of bellperson's `ConstraintSystem` that cuzk's own
//! constraint systems share: most of them keep no namespaces, and several
//! keep only values (the recorded matrices, or nothing, stand for each
//! constraint). Written once here, as macros to use inside an
//! `impl ConstraintSystem<Scalar> for ...` block.

/// `alloc` and `alloc_input` from their bodies alone: in each, `$this` is
/// the system and `$value` the closure that computes the variable's value
/// (`_` in a system that keeps no values); each body returns the
/// `Result<Variable, SynthesisError>` of its call.
#[macro_export]
macro_rules! allocate {
    ($this:ident, $value:tt; aux => $aux:block input => $input:block) => {
        $crate::allocate!(@one alloc, $this, $value, $aux);
        $crate::allocate!(@one alloc_input, $this, $value, $input);
    };
    (@one $name:ident, $this:ident, $value:tt, $body:block) => {
        fn $name<F, A, AR>(&mut self, _: A, f: F) -> Result<::bellperson::Variable, ::bellperson::SynthesisError>
        where
            F: FnOnce() -> Result<::blstrs::Scalar, ::bellperson::SynthesisError>,
            A: FnOnce() -> AR,
            AR: Into<String>,
        {
            let ($this, $value) = (self, f);
            $body
        }
    };
}

/// `enforce` from its body alone, for a system that keeps the constraint:
/// `$this` is the system and `$a`, `$b`, `$c` the constraint's three
/// linear combinations, built.
#[macro_export]
macro_rules! enforce_combinations {
    ($this:ident, $a:ident, $b:ident, $c:ident => $body:block) => {
        fn enforce<A, AR, LA, LB, LC>(&mut self, _: A, a: LA, b: LB, c: LC)
        where
            A: FnOnce() -> AR,
            AR: Into<String>,
            LA: FnOnce(
                ::bellperson::LinearCombination<::blstrs::Scalar>,
            ) -> ::bellperson::LinearCombination<::blstrs::Scalar>,
            LB: FnOnce(
                ::bellperson::LinearCombination<::blstrs::Scalar>,
            ) -> ::bellperson::LinearCombination<::blstrs::Scalar>,
            LC: FnOnce(
                ::bellperson::LinearCombination<::blstrs::Scalar>,
            ) -> ::bellperson::LinearCombination<::blstrs::Scalar>,
        {
            let zero = ::bellperson::LinearCombination::zero;
            let ($this, $a, $b, $c) = (self, a(zero()), b(zero()), c(zero()));
            $body
        }
    };
}

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
