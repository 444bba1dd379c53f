//! Generates the tonic services and messages from every `.proto` file under
//! `proto/` (the services in `dragoman.proto`, the documents in files of
//! their own that it imports) with a vendored protoc, so a machine with only
//! Rust can build the workspace.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut config = prost_build::Config::new();
    config.protoc_executable(protoc_bin_vendored::protoc_bin_path()?);
    let out = std::path::PathBuf::from(std::env::var("OUT_DIR")?);
    let mut files = Vec::new();
    for entry in std::fs::read_dir("proto")? {
        let path = entry?.path();
        if path.extension().is_some_and(|e| e == "proto") {
            println!("cargo:rerun-if-changed={}", path.display());
            files.push(path);
        }
    }
    files.sort();
    println!("cargo:rerun-if-changed=proto");
    tonic_prost_build::configure()
        .file_descriptor_set_path(out.join("dragoman_descriptor.bin"))
        .compile_with_config(config, &files, &[std::path::PathBuf::from("proto")])?;
    Ok(())
}
