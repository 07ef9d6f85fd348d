//! Checks of untrusted Filecoin inputs before they reach filecoin-proofs and
//! storage-proofs, which `unwrap` or index where a malformed input makes
//! them panic, and the guard that turns any panic left into an error.
//!
//! What panicked there (issue 12, item 4), and what catches it here:
//!
//! - A 32-byte value that is not a canonical BLS12-381 scalar: filecoin-hashers
//!   converts domains to field elements with `from_repr(..).expect("from_repr
//!   failure")` (a request's commitments and randomness, a C1's replica id,
//!   every leaf, root, sibling, label and column row of a vanilla proof).
//!   [`field_element`] checks the request's and C1's fields, and
//!   [`field_elements`] every domain value inside a vanilla proof.
//! - A Merkle path element whose index lies past its hashes
//!   (`InclusionPath::root`'s `Vec::insert`: "insertion index (is 9) should
//!   be <= len (is 7)"), or whose hashes do not make a Poseidon arity
//!   ("unsupported arity 7"): [`field_elements`] checks every path element
//!   it meets, and [`merkle_path`] a proof's whole shape (levels, arity per
//!   level, indices, variant) against the tree it must open.
//! - Counts the verifiers index without checking: no inclusion proofs in a
//!   PoSt sector proof (`inclusion_proofs[0]`), no sector proofs (`last()`),
//!   column rows of another count ("unsupported column size: 0"). The plans
//!   check these counts.
//!
//! Whatever a check misses still cannot take the daemon down: [`guard`]
//! runs the calls into the Filecoin crates under `catch_unwind` and turns a
//! panic into [`PlanError::InvalidArgument`] (its message says the input
//! is malformed and that filecoin-proofs panicked, with the panic's text).

use blstrs::Scalar;
use cuzk_core::PlanError;
use ff::PrimeField;
use serde::ser::{self, Serialize};
use std::fmt::{self, Display, Write as _};
use std::panic::{catch_unwind, AssertUnwindSafe};
use storage_proofs_core::merkle::MerkleProofTrait;

/// The words every caught panic's message carries (the fuzz tests look for
/// them: a check that let an input reach a panic is a finding even though
/// the guard caught it).
pub const PANIC_MARK: &str = "filecoin-proofs panicked";

/// The log targets (module paths) of the Filecoin crates that report a
/// client's vanilla proofs that do not hold at ERROR, once for every
/// failing challenge (23,490 lines for one bad 32 GiB WindowPoSt
/// partition): storage-proofs' PoSt verifier, and the PoRep one's count
/// check. Nothing else logs under them in a daemon, which proves from
/// vanilla proofs and never makes them. A bad input is the client's error,
/// and the plans refuse it with one warning of their own, so a daemon turns
/// these targets off (issue 34, item 7).
pub const CLIENT_INPUT_LOG_TARGETS: &[&str] = &[
    "storage_proofs_post::fallback::vanilla",
    "storage_proofs_porep::stacked::vanilla::proof_scheme",
];

fn invalid(message: String) -> PlanError {
    PlanError::InvalidArgument(message)
}

/// Whether `bytes` (little-endian) is a canonical BLS12-381 scalar, as
/// filecoin-proofs' `from_repr` needs it.
pub fn is_field_element(bytes: &[u8; 32]) -> bool {
    Scalar::from_repr_vartime(*bytes).is_some()
}

/// `what` must be a canonical BLS12-381 scalar (below the field modulus).
pub fn field_element(what: &str, bytes: &[u8; 32]) -> Result<(), PlanError> {
    if is_field_element(bytes) {
        Ok(())
    } else {
        Err(invalid(format!(
            "{what} is not a BLS12-381 field element (32 little-endian bytes below the modulus): {}",
            hex::encode(bytes)
        )))
    }
}

/// The text of a panic's payload.
fn panic_text(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_owned()
    } else {
        "(no message)".to_owned()
    }
}

/// Runs `f`, a call into third-party code, returning a panic's text as the
/// error. (Panics inside rayon jobs reach the caller, so they are caught
/// too.)
pub fn catch<T>(f: impl FnOnce() -> T) -> Result<T, String> {
    catch_unwind(AssertUnwindSafe(f)).map_err(|payload| {
        let text = panic_text(payload.as_ref());
        tracing::warn!(panic = %text, "a panic in the Filecoin crates was caught");
        text
    })
}

/// Runs `f` on an untrusted input: a panic becomes an `InvalidArgument`
/// saying `what` is malformed.
pub fn guard<T>(what: &str, f: impl FnOnce() -> Result<T, PlanError>) -> Result<T, PlanError> {
    catch(f).unwrap_or_else(|text| Err(invalid(format!("{what} is malformed ({PANIC_MARK}: {text})"))))
}

/// Checks `proof` has the shape of an opening of a tree of `leaves` leaves
/// of its type's arities: storage-proofs' own path length for it
/// (`expected_len`), per level as many hashes as the arity there less one
/// and an index below the arity, and the proof variant (single, sub-tree,
/// top-tree) of that shape.
pub fn merkle_path<P: MerkleProofTrait>(what: &str, proof: &P, leaves: usize) -> Result<(), PlanError> {
    use typenum::Unsigned;
    let (base_arity, sub_arity, top_arity) = (
        P::Arity::to_usize(),
        P::SubTreeArity::to_usize(),
        P::TopTreeArity::to_usize(),
    );
    let levels = proof.expected_len(leaves);
    let base_levels = levels - usize::from(sub_arity > 0) - usize::from(top_arity > 0);
    let path = proof.path();
    if path.len() != levels {
        return Err(invalid(format!(
            "{what}: the Merkle path has {} levels, a tree of {leaves} leaves has {levels}",
            path.len()
        )));
    }
    for (level, (hashes, index)) in path.iter().enumerate() {
        let arity = if level < base_levels {
            base_arity
        } else if level == base_levels && sub_arity > 0 {
            sub_arity
        } else {
            top_arity
        };
        if hashes.len() + 1 != arity || *index >= arity {
            return Err(invalid(format!(
                "{what}: level {level} of the Merkle path holds {} hashes and index {index}, \
                 the tree's arity there is {arity}",
                hashes.len()
            )));
        }
    }
    let variant_len = if top_arity > 0 {
        top_arity
    } else if sub_arity > 0 {
        sub_arity
    } else {
        levels * (base_arity - 1) + 2
    };
    if proof.len() != variant_len {
        return Err(invalid(format!(
            "{what}: the Merkle proof is of another tree shape than {base_arity}-{sub_arity}-{top_arity}"
        )));
    }
    Ok(())
}

/// Walks `value` (a vanilla proof, through its `Serialize`) and checks every
/// field element and Merkle path element in it: each Poseidon or SHA-256
/// domain value is a canonical scalar, each path element holds 1, 3, 7 or
/// 15 hashes (arity 2, 4, 8, 16) and an index below its arity, and (where
/// `column_rows` is given) each SDR column holds that many rows. The error
/// names where in `what` the bad value is.
pub fn field_elements<T: Serialize + ?Sized>(
    what: &str,
    value: &T,
    column_rows: Option<usize>,
) -> Result<(), PlanError> {
    let mut walker = Walker {
        at: Vec::new(),
        domain: None,
        next: Next::Other,
        element: None,
        column_rows,
    };
    value
        .serialize(&mut walker)
        .map_err(|Stop(message)| invalid(format!("{what}: {message}")))
}

/// Where the walk is, for messages.
enum Seg {
    Field(&'static str),
    Index(usize),
}

/// What the next sequence length or integer the walk meets belongs to.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Next {
    Other,
    Hashes,
    Index,
    Rows,
}

/// A Merkle path element being walked: its hash count and index.
#[derive(Default)]
struct Element {
    hashes: Option<usize>,
    index: Option<u64>,
}

struct Walker {
    at: Vec<Seg>,
    /// The bytes of the domain value being walked.
    domain: Option<Vec<u8>>,
    next: Next,
    element: Option<Element>,
    column_rows: Option<usize>,
}

impl Walker {
    fn position(&self) -> String {
        let mut out = String::new();
        for seg in &self.at {
            match seg {
                Seg::Field(name) => {
                    if !out.is_empty() {
                        out.push('.');
                    }
                    out.push_str(name);
                }
                Seg::Index(i) => {
                    let _ = write!(out, "[{i}]");
                }
            }
        }
        if out.is_empty() {
            out.push_str("the value");
        }
        out
    }

    fn stop(&self, what: impl Display) -> Stop {
        Stop(format!("{} {what}", self.position()))
    }

    fn seq_len(&mut self, len: Option<usize>) -> Result<(), Stop> {
        match std::mem::replace(&mut self.next, Next::Other) {
            Next::Hashes => {
                if let Some(element) = self.element.as_mut() {
                    element.hashes = len;
                }
            }
            Next::Rows => {
                if let (Some(want), Some(have)) = (self.column_rows, len) {
                    if want != have {
                        return Err(self.stop(format_args!(
                            "holds {have} rows; a column of this proof type has {want} (one per layer)"
                        )));
                    }
                }
            }
            Next::Other | Next::Index => {}
        }
        Ok(())
    }

    fn integer(&mut self, value: u64) {
        if std::mem::replace(&mut self.next, Next::Other) == Next::Index {
            if let Some(element) = self.element.as_mut() {
                element.index = Some(value);
            }
        }
    }

    fn end_element(&mut self) -> Result<(), Stop> {
        let Some(element) = self.element.take() else {
            return Ok(());
        };
        let hashes = element.hashes.unwrap_or(0);
        let index = element.index.unwrap_or(u64::MAX);
        if !matches!(hashes, 1 | 3 | 7 | 15) {
            return Err(self.stop(format_args!(
                "is a Merkle path element of {hashes} hashes (a tree of arity 2, 4, 8 or 16 has 1, 3, 7 or 15)"
            )));
        }
        if index > hashes as u64 {
            return Err(self.stop(format_args!(
                "is a Merkle path element of arity {} with index {index}",
                hashes + 1
            )));
        }
        Ok(())
    }
}

/// Why the walk stopped.
#[derive(Debug)]
struct Stop(String);

impl Display for Stop {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Stop {}

impl ser::Error for Stop {
    fn custom<T: Display>(msg: T) -> Self {
        Stop(msg.to_string())
    }
}

/// A sequence, tuple, map or struct being walked.
struct Compound<'a> {
    walker: &'a mut Walker,
    index: usize,
    path_element: bool,
}

impl Compound<'_> {
    fn element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Stop> {
        if self.walker.domain.is_some() {
            return value.serialize(&mut *self.walker);
        }
        self.walker.at.push(Seg::Index(self.index));
        self.index += 1;
        value.serialize(&mut *self.walker)?;
        self.walker.at.pop();
        Ok(())
    }

    fn field<T: Serialize + ?Sized>(&mut self, key: &'static str, value: &T) -> Result<(), Stop> {
        self.walker.at.push(Seg::Field(key));
        self.walker.next = match key {
            "hashes" if self.path_element => Next::Hashes,
            "index" if self.path_element => Next::Index,
            "rows" => Next::Rows,
            _ => Next::Other,
        };
        value.serialize(&mut *self.walker)?;
        self.walker.next = Next::Other;
        self.walker.at.pop();
        Ok(())
    }

    fn end(self) -> Result<(), Stop> {
        if self.path_element {
            self.walker.end_element()?;
        }
        Ok(())
    }
}

/// `impl ser::$trait for Compound` (every compound ends alike): with the
/// trait's element method `$method`, its keyed field method (`keyed`), or
/// the methods given in braces.
macro_rules! compound {
    ($trait:ident, $method:ident) => {
        compound!($trait {
            fn $method<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Stop> {
                self.element(value)
            }
        });
    };
    ($trait:ident, keyed $method:ident) => {
        compound!($trait {
            fn $method<T: Serialize + ?Sized>(&mut self, key: &'static str, value: &T) -> Result<(), Stop> {
                self.field(key, value)
            }
        });
    };
    ($trait:ident { $($methods:tt)* }) => {
        impl ser::$trait for Compound<'_> {
            type Ok = ();
            type Error = Stop;
            $($methods)*
            fn end(self) -> Result<(), Stop> {
                Compound::end(self)
            }
        }
    };
}
compound!(SerializeSeq, serialize_element);
compound!(SerializeTuple, serialize_element);
compound!(SerializeTupleStruct, serialize_field);
compound!(SerializeTupleVariant, serialize_field);
compound!(SerializeStruct, keyed serialize_field);
compound!(SerializeStructVariant, keyed serialize_field);
compound!(SerializeMap {
    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> Result<(), Stop> {
        key.serialize(&mut *self.walker)
    }
    fn serialize_value<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Stop> {
        self.element(value)
    }
});

impl Walker {
    fn compound(&mut self, path_element: bool) -> Compound<'_> {
        Compound {
            walker: self,
            index: 0,
            path_element,
        }
    }
}

/// Serializer methods that take a value of the type given and check
/// nothing.
macro_rules! serialize_nothing {
    ($($method:ident($ty:ty)),* $(,)?) => {
        $(
            fn $method(self, _: $ty) -> Result<(), Stop> {
                Ok(())
            }
        )*
    };
}

/// Serializer methods of unsigned integers, which the walker reads (one
/// may be a path element's index).
macro_rules! serialize_integers {
    ($($method:ident($ty:ty)),* $(,)?) => {
        $(
            fn $method(self, v: $ty) -> Result<(), Stop> {
                self.integer(u64::from(v));
                Ok(())
            }
        )*
    };
}

impl<'a> ser::Serializer for &'a mut Walker {
    type Ok = ();
    type Error = Stop;
    type SerializeSeq = Compound<'a>;
    type SerializeTuple = Compound<'a>;
    type SerializeTupleStruct = Compound<'a>;
    type SerializeTupleVariant = Compound<'a>;
    type SerializeMap = Compound<'a>;
    type SerializeStruct = Compound<'a>;
    type SerializeStructVariant = Compound<'a>;

    // Values with nothing in them to check.
    serialize_nothing!(
        serialize_bool(bool),
        serialize_i8(i8),
        serialize_i16(i16),
        serialize_i32(i32),
        serialize_i64(i64),
        serialize_f32(f32),
        serialize_f64(f64),
        serialize_char(char),
        serialize_str(&str),
        serialize_unit_struct(&'static str),
    );
    serialize_integers!(serialize_u16(u16), serialize_u32(u32), serialize_u64(u64));
    fn serialize_u8(self, v: u8) -> Result<(), Stop> {
        match self.domain.as_mut() {
            Some(bytes) => bytes.push(v),
            None => self.integer(u64::from(v)),
        }
        Ok(())
    }
    fn serialize_bytes(self, v: &[u8]) -> Result<(), Stop> {
        if let Some(bytes) = self.domain.as_mut() {
            bytes.extend_from_slice(v);
        }
        Ok(())
    }
    fn serialize_none(self) -> Result<(), Stop> {
        Ok(())
    }
    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Result<(), Stop> {
        value.serialize(self)
    }
    fn serialize_unit(self) -> Result<(), Stop> {
        Ok(())
    }
    fn serialize_unit_variant(self, _: &'static str, _: u32, _: &'static str) -> Result<(), Stop> {
        Ok(())
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        name: &'static str,
        value: &T,
    ) -> Result<(), Stop> {
        if !matches!(name, "PoseidonDomain" | "Sha256Domain") || self.domain.is_some() {
            return value.serialize(self);
        }
        self.domain = Some(Vec::with_capacity(32));
        value.serialize(&mut *self)?;
        let bytes = self.domain.take().unwrap_or_default();
        match <[u8; 32]>::try_from(bytes.as_slice()) {
            Ok(repr) if is_field_element(&repr) => Ok(()),
            Ok(repr) => Err(self.stop(format_args!(
                "is not a BLS12-381 field element: {}",
                hex::encode(repr)
            ))),
            Err(_) => Err(self.stop(format_args!("is a {name} of {} bytes", bytes.len()))),
        }
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        value: &T,
    ) -> Result<(), Stop> {
        self.at.push(Seg::Field(variant));
        value.serialize(&mut *self)?;
        self.at.pop();
        Ok(())
    }
    fn serialize_seq(self, len: Option<usize>) -> Result<Compound<'a>, Stop> {
        self.seq_len(len)?;
        Ok(self.compound(false))
    }
    fn serialize_tuple(self, _: usize) -> Result<Compound<'a>, Stop> {
        self.next = Next::Other;
        Ok(self.compound(false))
    }
    fn serialize_tuple_struct(self, _: &'static str, _: usize) -> Result<Compound<'a>, Stop> {
        self.next = Next::Other;
        Ok(self.compound(false))
    }
    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Compound<'a>, Stop> {
        self.next = Next::Other;
        Ok(self.compound(false))
    }
    fn serialize_map(self, _: Option<usize>) -> Result<Compound<'a>, Stop> {
        self.next = Next::Other;
        Ok(self.compound(false))
    }
    fn serialize_struct(self, name: &'static str, _: usize) -> Result<Compound<'a>, Stop> {
        self.next = Next::Other;
        let path_element = name == "PathElement";
        if path_element {
            self.element = Some(Element::default());
        }
        Ok(self.compound(path_element))
    }
    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Compound<'a>, Stop> {
        self.next = Next::Other;
        Ok(self.compound(false))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn field_elements_are_checked_against_the_modulus() {
        let modulus_minus_one = (-Scalar::from(1u64)).to_repr();
        assert!(is_field_element(&modulus_minus_one));
        let mut modulus = modulus_minus_one;
        modulus[0] += 1;
        assert!(!is_field_element(&modulus));
        assert!(!is_field_element(&[0xff; 32]));
        assert!(is_field_element(&[0; 32]));
        let e = field_element("comm_r", &[0xff; 32]).unwrap_err();
        assert!(
            matches!(&e, PlanError::InvalidArgument(m) if m.starts_with("comm_r is not a BLS12-381 field element")),
            "{e:?}"
        );
    }

    #[test]
    fn a_panic_becomes_invalid_argument() {
        let e = guard::<()>("the vanilla proofs", || {
            panic!("insertion index (is 9) should be <= len (is 7)")
        })
        .unwrap_err();
        match e {
            PlanError::InvalidArgument(m) => {
                assert!(m.starts_with("the vanilla proofs is malformed"), "{m}");
                assert!(
                    m.contains(PANIC_MARK) && m.contains("insertion index (is 9)"),
                    "{m}"
                );
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(guard("x", || Ok(7)), Ok(7));
    }
}
