//! Compiles the cuzk.v1 proto with protox (pure Rust), so building needs no
//! protoc on the machine.
fn main() -> Result<(), Box<dyn std::error::Error>> {
    let proto = "proto/cuzk/v1/proving.proto";
    println!("cargo:rerun-if-changed={proto}");
    let descriptors = protox::compile([proto], ["proto"])?;
    // Our codec: prost's, with undecodable messages as INVALID_ARGUMENT.
    tonic_prost_build::configure()
        .codec_path("crate::codec::ProtoCodec")
        .compile_fds(descriptors)?;
    Ok(())
}
