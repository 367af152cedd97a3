//! Compiles `kernels-gpu` to PTX with rustc's own `nvptx64-nvidia-cuda` target (no CUDA toolkit
//! needed) and leaves it in `$OUT_DIR/kernels.ptx` for `src/gpu.rs` to embed.
//!
//! `FERROCOMP_PTX_ARCH` picks the PTX target; the default, sm_75, is the oldest GPU CUDA 13
//! supports, so the PTX loads on every one of them (the driver compiles it for the GPU at hand).

use std::env;
use std::path::PathBuf;
use std::process::Command;

const DEFAULT_ARCH: &str = "sm_75";

fn main() {
    let manifest = PathBuf::from(env::var("CARGO_MANIFEST_DIR").unwrap());
    let kernels = manifest.join("../kernels-gpu");
    let out_dir = PathBuf::from(env::var("OUT_DIR").unwrap());
    let arch = env::var("FERROCOMP_PTX_ARCH").unwrap_or_else(|_| DEFAULT_ARCH.to_owned());
    println!("cargo:rerun-if-env-changed=FERROCOMP_PTX_ARCH");
    println!("cargo:rerun-if-changed={}", kernels.join("src").display());
    println!("cargo:rerun-if-changed={}", kernels.join("Cargo.toml").display());
    println!("cargo:rerun-if-changed={}", manifest.join("../format/src").display());

    let target_dir = out_dir.join("kernels-target");
    let cargo = env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let status = Command::new(cargo)
        .current_dir(&kernels)
        .args(["build", "--release", "--target", "nvptx64-nvidia-cuda", "-Zbuild-std=core"])
        .arg("--target-dir")
        .arg(&target_dir)
        // The outer build's flags and wrappers are for the host, not for the GPU.
        .env_remove("CARGO_ENCODED_RUSTFLAGS")
        .env_remove("CARGO_TARGET_DIR")
        .env_remove("RUSTC_WRAPPER")
        .env_remove("RUSTC_WORKSPACE_WRAPPER")
        .env_remove("CARGO_BUILD_TARGET")
        .env("RUSTFLAGS", format!("-C target-cpu={arch}"))
        .status()
        .expect("could not run cargo to build kernels-gpu");
    assert!(status.success(), "building kernels-gpu to PTX failed");
    let ptx = target_dir.join("nvptx64-nvidia-cuda/release/ferrocomp_kernels_gpu.ptx");
    let ptx = std::fs::read_to_string(&ptx).expect("kernels-gpu produced no PTX");
    std::fs::write(out_dir.join("kernels.ptx"), with_launch_bounds(ptx)).unwrap();
}

/// `ptx` with `.maxntid` and `.minnctapersm` after the parameters of each kernel in
/// `LAUNCH_BOUNDS` (rustc's NVPTX target has no attribute for them).
fn with_launch_bounds(mut ptx: String) -> String {
    for &(kernel, threads, blocks) in ferrocomp_kernels_gpu::LAUNCH_BOUNDS {
        let entry = format!(".entry {kernel}(");
        let start = ptx.find(&entry).unwrap_or_else(|| panic!("no kernel {kernel} in the PTX"));
        let body = start + ptx[start..].find("\n{").expect("a kernel body");
        ptx.insert_str(body, &format!("\n.maxntid {threads}, 1, 1\n.minnctapersm {blocks}"));
    }
    ptx
}
