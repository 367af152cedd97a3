//! The README's Rust example is `host/examples/quickstart.rs` (less its doc comment), which CI
//! runs, the crate's documentation includes and scripts/packaging.sh builds in a new project.

#[test]
fn readme_example_is_the_quickstart_example() {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/..");
    let readme = std::fs::read_to_string(format!("{root}/README.md")).unwrap();
    let start = readme.find("```rust\n").expect("a Rust block in the README") + "```rust\n".len();
    let block = &readme[start..start + readme[start..].find("```\n").unwrap()];
    let example = std::fs::read_to_string(format!("{root}/host/examples/quickstart.rs")).unwrap();
    let code: String = example.split_inclusive('\n').filter(|line| !line.starts_with("//!")).collect();
    assert_eq!(block, code);
}
