//! Generates the tonic services and messages from every `.proto` file under
//! `dragoman/` with a vendored protoc, so a machine with only Rust can build
//! the workspace: the documents (`dragoman.v1`), the internal services
//! (`dragoman.internal.v1`) and the public services (`dragoman.api.v1`).
//! Two descriptor sets are written for reflection: every file, for the
//! internal listener, and the public services with what they import, for
//! the public one (which names no internal service).

use std::path::{Path, PathBuf};

fn proto_files(dir: &Path, files: &mut Vec<PathBuf>) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if path.is_dir() {
            proto_files(&path, files)?;
        } else if path.extension().is_some_and(|e| e == "proto") {
            files.push(path);
        }
    }
    Ok(())
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let protoc = protoc_bin_vendored::protoc_bin_path()?;
    let out = PathBuf::from(std::env::var("OUT_DIR")?);
    let mut files = Vec::new();
    proto_files(Path::new("dragoman"), &mut files)?;
    files.sort();
    println!("cargo:rerun-if-changed=dragoman");
    for file in &files {
        println!("cargo:rerun-if-changed={}", file.display());
    }
    let mut config = prost_build::Config::new();
    config.protoc_executable(&protoc);
    tonic_prost_build::configure()
        .file_descriptor_set_path(out.join("dragoman_descriptor.bin"))
        .compile_with_config(config, &files, &[PathBuf::from(".")])?;

    let public: Vec<&PathBuf> = files
        .iter()
        .filter(|f| f.starts_with("dragoman/api"))
        .collect();
    let status = std::process::Command::new(&protoc)
        .arg("--include_imports")
        .arg(format!(
            "--descriptor_set_out={}",
            out.join("dragoman_public_descriptor.bin").display()
        ))
        .arg("-I.")
        .args(public)
        .status()?;
    if !status.success() {
        return Err(format!("protoc of the public descriptor set: {status}").into());
    }
    Ok(())
}
