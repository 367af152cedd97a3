//! The README's Rust example is `host/examples/quickstart.rs` (less its doc comment), which CI
//! runs, the crate's documentation includes and scripts/packaging.sh builds in a new project.

const README: &str = include_str!("../../README.md");
const QUICKSTART: &str = include_str!("../../host/examples/quickstart.rs");

#[test]
fn readme_example_is_the_quickstart_example() {
    let start = README.find("```rust\n").expect("a Rust block in the README") + "```rust\n".len();
    let block = &README[start..start + README[start..].find("```\n").unwrap()];
    let code: String = QUICKSTART.split_inclusive('\n').filter(|line| !line.starts_with("//!")).collect();
    assert_eq!(block, code);
}
