//! Fuzz target: op programs (format and checked invariants in
//! `tests/reliability/program.rs`, shared with the test suite so that every crash
//! found here is replayed there as a regression test).
#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "../../tests/reliability/program.rs"]
mod program;

fuzz_target!(|data: &[u8]| {
    program::execute(data);
});
