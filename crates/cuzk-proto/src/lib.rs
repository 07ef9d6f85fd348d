//! Generated types and service stubs of the `cuzk.v1` gRPC API.
#![allow(missing_docs, clippy::all, missing_debug_implementations)]

/// The `cuzk.v1` package.
pub mod v1 {
    tonic::include_proto!("cuzk.v1");
}

/// Largest message the daemon and clients accept (PoRep C1 outputs reach
/// about 50 MB at 32 GiB).
pub const MAX_MESSAGE_BYTES: usize = 256 << 20;
