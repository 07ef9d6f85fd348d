//! The cuzk daemon: configuration, the gRPC service, the HTTP status
//! endpoints, and the serve loop with graceful shutdown.

pub mod config;
pub mod http;
pub mod server;
pub mod service;
