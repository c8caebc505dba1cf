//! The `#[differentiable]` UI suite: every malformed definition fails to compile
//! with its reviewed message (`tests/ui/fail/*.stderr`), and every feature compiles
//! and runs (`tests/ui/pass`). The messages are rustc's rendering, so the toolchain
//! is pinned (`rust-toolchain.toml`).
//!
//! After changing a message: `TRYBUILD=overwrite cargo test --test ui`, then read
//! the diff of the `.stderr` files before committing.

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/fail/*.rs");
    t.pass("tests/ui/pass/*.rs");
}
