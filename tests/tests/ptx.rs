//! The PTX the host loads: the file kernels-gpu ships (scripts/ptx.sh --check proves it is what
//! the kernel source builds to), with the launch bounds written in.

use ferrocomp_kernels_gpu::{LAUNCH_BOUNDS, PTX, with_launch_bounds};

#[test]
fn shipped_ptx_targets_the_oldest_gpu_cuda_13_supports() {
    assert!(PTX.lines().any(|line| line == ".target sm_75"), "the shipped PTX is not for sm_75");
}

#[test]
fn every_launch_bound_lands_after_its_kernels_parameters() {
    let ptx = with_launch_bounds(PTX);
    for &(kernel, threads, blocks) in LAUNCH_BOUNDS {
        let entry = ptx.find(&format!(".entry {kernel}(")).unwrap_or_else(|| panic!("no kernel {kernel}"));
        let body = entry + ptx[entry..].find("\n{").unwrap();
        let bounds = format!("\n.maxntid {threads}, 1, 1\n.minnctapersm {blocks}");
        assert!(ptx[entry..body].ends_with(&bounds), "{kernel}: {:?}", &ptx[entry..body]);
    }
    assert_eq!(ptx.matches(".maxntid").count(), LAUNCH_BOUNDS.len());
    // Nothing else changed.
    let bound = |line: &str| line.starts_with(".maxntid ") || line.starts_with(".minnctapersm ");
    let unbound: String = ptx.split_inclusive('\n').filter(|line| !bound(line)).collect();
    assert!(unbound == PTX, "with_launch_bounds changed more than the bounds");
    // A PTX that states its bounds (a variant under trial) keeps them.
    assert!(with_launch_bounds(&ptx) == ptx, "bounds written twice");
}
