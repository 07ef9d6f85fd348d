//! The cuzk daemon: configuration, what the engine is started with, the
//! gRPC service and its wire conversions, the HTTP status endpoints, and
//! the serve loop with graceful shutdown, and the cluster mode on a shared
//! PostgreSQL queue.

pub mod access;
pub mod authority_fix;
pub mod cluster;
pub mod config;
pub mod http;
pub mod server;
pub mod service;
pub mod setup;
pub mod uds;
pub mod wire;
