//! Generates the tonic services from `proto/dragoman.proto` with a vendored
//! protoc, so a machine with only Rust can build the workspace.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut config = prost_build::Config::new();
    config.protoc_executable(protoc_bin_vendored::protoc_bin_path()?);
    let out = std::path::PathBuf::from(std::env::var("OUT_DIR")?);
    tonic_prost_build::configure()
        .file_descriptor_set_path(out.join("dragoman_descriptor.bin"))
        .compile_with_config(config, &["proto/dragoman.proto"], &["proto"])?;
    Ok(())
}
