//! Picks the PTX that `PTX` embeds: `kernels.ptx`, shipped with the crate, or a fresh build of the
//! kernels from their Rust source.
//!
//! The shipped file is what the rebuild below writes for the default arch; CI rebuilds it and
//! fails if the two differ (`scripts/ptx.sh --check`), so a stable-Rust build needs no nightly.
//! The rebuild runs when `FERROCOMP_REBUILD_PTX=1`, or when `FERROCOMP_PTX_ARCH` names another
//! arch than the default: the pinned nightly of `rust-toolchain.toml`, through rustup (installed
//! when missing), compiles the crate with rustc's own `nvptx64-nvidia-cuda` target, which needs
//! no CUDA toolkit.

use std::env;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The arch of the shipped PTX: sm_75, the oldest GPU CUDA 13 supports, so it loads on every one
/// of them (the driver compiles it for the GPU at hand).
const DEFAULT_ARCH: &str = "sm_75";

fn main() {
    // The rebuild compiles this very crate for the GPU; there the script has nothing to do.
    if env::var("TARGET").is_ok_and(|target| target.starts_with("nvptx64")) {
        return;
    }
    println!("cargo:rerun-if-env-changed=FERROCOMP_REBUILD_PTX");
    println!("cargo:rerun-if-env-changed=FERROCOMP_PTX_ARCH");
    let manifest = PathBuf::from(env::var("CARGO_MANIFEST_DIR").unwrap());
    let arch = env::var("FERROCOMP_PTX_ARCH").unwrap_or_else(|_| DEFAULT_ARCH.to_owned());
    let rebuild = env::var("FERROCOMP_REBUILD_PTX").is_ok_and(|v| !v.is_empty() && v != "0");
    let ptx = if rebuild || arch != DEFAULT_ARCH {
        build_ptx(&manifest, &arch)
    } else {
        let shipped = manifest.join("kernels.ptx");
        println!("cargo:rerun-if-changed={}", shipped.display());
        shipped
    };
    println!("cargo:rustc-env=FERROCOMP_KERNELS_PTX={}", ptx.display());
}

/// Compiles the crate in `manifest` to PTX for `arch` with the pinned nightly; the path of the PTX.
fn build_ptx(manifest: &Path, arch: &str) -> PathBuf {
    // The format crate's source is beside this one in a checkout (a package has none to watch).
    let inputs = ["src", "Cargo.toml", "rust-toolchain.toml", "../format/src"].map(|input| manifest.join(input));
    for input in inputs.iter().filter(|input| input.exists()) {
        println!("cargo:rerun-if-changed={}", input.display());
    }
    let toolchain = pinned_toolchain(manifest);
    ensure_installed(manifest, &toolchain);
    let target_dir = PathBuf::from(env::var("OUT_DIR").unwrap()).join("kernels-target");
    let status = Command::new("rustup")
        .current_dir(manifest)
        .args(["run", &toolchain, "cargo", "build", "--release", "--target", "nvptx64-nvidia-cuda"])
        .args(["-Zbuild-std=core", "--package", "ferrocomp-kernels-gpu"])
        // The kernels' profile, stated here because a workspace member's own is ignored.
        .args(["--config", "profile.release.panic=\"abort\"", "--config", "profile.release.opt-level=3"])
        .args(["--config", "profile.release.lto=true", "--config", "profile.release.codegen-units=1"])
        .args(["--config", "profile.release.debug=false"])
        .arg("--target-dir")
        .arg(&target_dir)
        // The outer build's toolchain, flags and wrappers are for the host, not for the GPU.
        .env_remove("RUSTUP_TOOLCHAIN")
        .env_remove("RUSTC")
        .env_remove("RUSTDOC")
        .env_remove("RUSTC_WRAPPER")
        .env_remove("RUSTC_WORKSPACE_WRAPPER")
        .env_remove("CARGO_ENCODED_RUSTFLAGS")
        .env_remove("CARGO_TARGET_DIR")
        .env_remove("CARGO_BUILD_TARGET")
        .env("RUSTFLAGS", format!("-C target-cpu={arch}"))
        .status()
        .unwrap_or_else(|e| panic!("could not run rustup ({e}) to build the kernels with {toolchain}: {NO_RUSTUP}"));
    assert!(status.success(), "building the kernels to PTX with {toolchain} failed");
    target_dir.join("nvptx64-nvidia-cuda/release/ferrocomp_kernels_gpu.ptx")
}

/// What to do without rustup.
const NO_RUSTUP: &str = "rebuilding the PTX (FERROCOMP_REBUILD_PTX or FERROCOMP_PTX_ARCH is set) \
    needs rustup (https://rustup.rs); unset both to use the PTX shipped with the crate";

/// The nightly that `rust-toolchain.toml` pins, e.g. "nightly-2026-10-01".
fn pinned_toolchain(manifest: &Path) -> String {
    let file = manifest.join("rust-toolchain.toml");
    let text = std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    text.lines()
        .find_map(|line| line.strip_prefix("channel")?.trim_start().strip_prefix('=')?.trim().strip_prefix('"'))
        .and_then(|rest| rest.split('"').next())
        .unwrap_or_else(|| panic!("{} names no channel", file.display()))
        .to_owned()
}

/// Installs `toolchain` with the components `rust-toolchain.toml` lists, unless rustup has it.
fn ensure_installed(manifest: &Path, toolchain: &str) {
    let present = Command::new("rustup")
        .args(["run", toolchain, "rustc", "--version"])
        .env_remove("RUSTUP_TOOLCHAIN")
        .output()
        .unwrap_or_else(|e| panic!("could not run rustup ({e}): {NO_RUSTUP}"));
    if present.status.success() {
        return;
    }
    // With no argument, rustup installs what the toolchain file in the current folder names.
    let status = Command::new("rustup")
        .current_dir(manifest)
        .args(["toolchain", "install"])
        .env_remove("RUSTUP_TOOLCHAIN")
        .status()
        .unwrap_or_else(|e| panic!("could not run rustup ({e}): {NO_RUSTUP}"));
    assert!(status.success(), "rustup could not install {toolchain}, which builds the kernels");
}
