// Compiles the cuzk.v1 protocol (proto/cuzk.proto) with protoc (Debian: protobuf-compiler).
fn main() -> Result<(), Box<dyn std::error::Error>> {
    println!("cargo:rerun-if-changed=proto/cuzk.proto");
    tonic_build::configure()
        .build_client(true)
        .build_server(true)
        .compile_protos(&["proto/cuzk.proto"], &["proto"])?;
    Ok(())
}
