//! Fuzz target: op programs (format and checked invariants in
//! `tests/reliability/program.rs`, shared with the test suite so that every crash
//! found here is replayed there as a regression test). Each input runs as is, then
//! fused and unfused, which must observe the same.
#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "../../tests/reliability/program.rs"]
mod program;

fuzz_target!(|data: &[u8]| {
    program::execute(data);
    // The same program fused and unfused observes the same.
    program::fused_matches_unfused(data);
});
