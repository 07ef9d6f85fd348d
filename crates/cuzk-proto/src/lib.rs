//! Generated types and service stubs of the `cuzk.v1` gRPC API.
#![allow(missing_docs, clippy::all, missing_debug_implementations)]

/// The `cuzk.v1` package.
pub mod v1 {
    tonic::include_proto!("cuzk.v1");
}

/// Largest message the daemon and clients accept (PoRep C1 outputs reach
/// about 50 MB at 32 GiB).
pub const MAX_MESSAGE_BYTES: usize = 256 << 20;

/// Opens a channel to a daemon at `http://host:port` or `unix:///path`.
pub async fn connect(address: &str) -> Result<tonic::transport::Channel, tonic::transport::Error> {
    use tonic::transport::{Endpoint, Uri};
    match address.strip_prefix("unix://") {
        Some(path) => {
            let path = std::path::PathBuf::from(path);
            // The URI is required by the API but unused: the connector dials the socket.
            Endpoint::from_static("http://[::]:0")
                .connect_with_connector(tower::service_fn(move |_: Uri| {
                    let path = path.clone();
                    async move {
                        let stream = tokio::net::UnixStream::connect(path).await?;
                        Ok::<_, std::io::Error>(hyper_util::rt::TokioIo::new(stream))
                    }
                }))
                .await
        }
        None => Endpoint::from_shared(address.to_string())?.connect().await,
    }
}
