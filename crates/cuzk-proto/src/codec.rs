//! The protobuf codec of the `cuzk.v1` service: prost's, except that a
//! message that does not decode is INVALID_ARGUMENT (the client sent bad
//! bytes) rather than tonic's INTERNAL (which says the server failed).

use tonic::codec::{BufferSettings, Codec, DecodeBuf, Decoder};
use tonic::{Code, Status};

/// prost's codec with decode errors as INVALID_ARGUMENT.
#[derive(Debug, Clone, Default)]
pub struct ProtoCodec<T, U>(tonic_prost::ProstCodec<T, U>);

impl<T, U> Codec for ProtoCodec<T, U>
where
    T: prost::Message + Send + 'static,
    U: prost::Message + Default + Send + 'static,
{
    type Encode = T;
    type Decode = U;
    type Encoder = <tonic_prost::ProstCodec<T, U> as Codec>::Encoder;
    type Decoder = InvalidArgumentDecoder<<tonic_prost::ProstCodec<T, U> as Codec>::Decoder>;

    fn encoder(&mut self) -> Self::Encoder {
        self.0.encoder()
    }

    fn decoder(&mut self) -> Self::Decoder {
        InvalidArgumentDecoder(self.0.decoder())
    }
}

/// A decoder whose INTERNAL errors (undecodable bytes) are INVALID_ARGUMENT.
#[derive(Debug)]
pub struct InvalidArgumentDecoder<D>(D);

impl<D: Decoder<Error = Status>> Decoder for InvalidArgumentDecoder<D> {
    type Item = D::Item;
    type Error = Status;

    fn decode(&mut self, buf: &mut DecodeBuf<'_>) -> Result<Option<Self::Item>, Status> {
        self.0.decode(buf).map_err(|status| match status.code() {
            Code::Internal => Status::invalid_argument(format!("undecodable message: {}", status.message())),
            _ => status,
        })
    }

    fn buffer_settings(&self) -> BufferSettings {
        self.0.buffer_settings()
    }
}
