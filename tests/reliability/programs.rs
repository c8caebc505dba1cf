//! Random op programs (the fuzz target's format, see `program.rs`) run as a normal
//! test, and every crash the fuzzer found, replayed as a regression test.

use crate::program::{Report, execute, fused_matches_unfused};

/// A deterministic xorshift stream, so the run is the same everywhere.
struct Bytes(u64);

impl Bytes {
    fn next(&mut self) -> u8 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 >> 24) as u8
    }
}

/// Programs per run; `RELIABILITY_PROGRAMS` raises it for a longer local run.
fn programs() -> u64 {
    std::env::var("RELIABILITY_PROGRAMS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1500)
}

/// Random program `seed`: two leaves that require grad ([2, 3] and [3], values
/// from the table), then random instructions. A leaf's flags byte gives its rank
/// (flags % 5), its view (flags / 8 % 3; 0: contiguous) and requires_grad (0x20 or
/// 0x40).
fn random_program(seed: u64) -> Vec<u8> {
    let mut bytes = Bytes(0x9e37_79b9_7f4a_7c15 ^ (seed + 1).wrapping_mul(0x2545_f491_4f6c_dd1d));
    let mut program = vec![bytes.next(), 0, 0x34, 2, 3];
    program.extend((0..6).map(|_| bytes.next()));
    program.extend([0, 0x33, 3]);
    program.extend((0..3).map(|_| bytes.next()));
    let len = 8 + bytes.next() as usize % 120;
    program.extend((0..len).map(|_| bytes.next()));
    program
}

/// Runs `run` on programs `0..n`, adding up their reports.
fn run_programs(n: u64, run: impl Fn(&[u8]) -> Report + std::panic::RefUnwindSafe) -> Report {
    let mut total = Report::default();
    for seed in 0..n {
        let program = random_program(seed);
        let r = std::panic::catch_unwind(|| run(&program))
            .unwrap_or_else(|_| panic!("program {seed} failed: {program:?}"));
        total.ops_ok += r.ops_ok;
        total.ops_rejected += r.ops_rejected;
        total.backward_ok += r.backward_ok;
        total.backward_failed += r.backward_failed;
        total.read_deferred += r.read_deferred;
    }
    total
}

#[test]
fn random_programs_never_panic_or_leak() {
    crate::init();
    let n = programs();
    let total = run_programs(n, execute);
    eprintln!("{n} random programs, each leaving 0 bytes: {total:?}");
    assert!(total.ops_ok > 0 && total.ops_rejected > 0 && total.backward_ok > 0);
}

/// The same programs with every elementwise op deferred (chains fused across the
/// whole program: through backward passes, in-place updates, views and misuse)
/// observe what they observe with fusion off, bit for bit: every shape, error,
/// value and gradient.
#[test]
fn random_programs_observe_the_same_fused_and_unfused() {
    crate::init();
    let n = programs();
    let total = run_programs(n, fused_matches_unfused);
    eprintln!("{n} random programs, the same fused and unfused: {total:?}");
    assert!(total.ops_ok > 0 && total.ops_rejected > 0 && total.backward_ok > 0);
    // Fused chains were there to compare: read deferred when the programs ended.
    assert!(total.read_deferred > n as usize, "{total:?}");
}

/// Programs that crashed before the fix named with each, found by the fuzzer or by
/// the random-program run above, minimised (`cargo fuzz tmin`, or by removing bytes
/// while it still fails). Each must now run to completion.
const REGRESSIONS: &[(&str, &[u8])] = &[
    (
        "an op parameter whose Drop panicked at an unrecorded call leaked the op's output \
         (rustc does not drop a finished return value when a later local's Drop panics; \
         found by the random-program run, program 11; minimised)",
        &[
            // f64; a [3] leaf that requires grad; 0xf9: misuse 121 under no_grad.
            1, 0, 51, 3, 2, 2, 2, 0xf9, 0,
        ],
    ),
    (
        "backward(create_graph) into a leaf already dropped leaked the recorded gradient's graph \
     (random-program run, program 848)",
        &[
            241, 0, 34, 2, 3, 165, 198, 130, 64, 0, 33, 90, 30, 78, 212, 240, 141, 252, 70, 137,
            59, 173, 245, 131, 4, 138, 114, 125, 98, 149, 173, 3, 203, 191, 248, 101, 100, 183,
            146, 153, 105, 184, 114, 174, 19,
        ],
    ),
];

/// Runs `check` on every program of `regressions`, each named by what it found.
fn replay<R>(regressions: &[(&str, &[u8])], check: fn(&[u8]) -> R) {
    crate::init();
    for (what, program) in regressions {
        let result = std::panic::catch_unwind(|| check(program));
        assert!(result.is_ok(), "regression `{what}` fails again");
    }
}

#[test]
fn fuzzer_regressions() {
    replay(REGRESSIONS, execute);
}

/// The fuzzer's seed corpus (`fuzz/seeds/op_program`), among them programs that use
/// each misuse instruction, runs in the test suite too.
#[test]
fn fuzz_seed_corpus_runs() {
    crate::init();
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/seeds/op_program");
    let mut count = 0;
    for entry in std::fs::read_dir(&dir).expect("the seed corpus") {
        let path = entry.expect("a seed").path();
        let program = std::fs::read(&path).expect("a readable seed");
        let result = std::panic::catch_unwind(|| execute(&program));
        assert!(result.is_ok(), "seed {} fails", path.display());
        count += 1;
    }
    assert!(count >= 100, "{count} seeds");
}

/// Programs the fuzzer found observing something different fused and unfused.
const FUSED_REGRESSIONS: &[(&str, &[u8])] = &[(
    "the sign of a zero of a matmul (an outer product of a transposed view) \
     differed: gemm's kernels for a contiguous operand and for a view disagree on \
     whether a sum of -0 products is -0, so matmul now gives +0 for every zero",
    &[
        1, 13, 64, 26, 96, 19, 63, 0, 128, 109, 126, 216, 195, 178, 236, 178, 77, 255, 255, 255,
        255, 245, 255, 255, 3, 0, 0, 0, 0, 0, 0, 0, 157, 156, 157, 157, 50, 77, 77, 77, 77, 77, 30,
        30, 30, 30, 30, 30, 30, 30, 77, 77, 77, 77, 77, 35, 35, 35, 43, 35, 35, 35, 35, 35, 35, 35,
        35, 35, 157, 157, 156, 3, 0, 0, 0, 157, 157, 157, 77, 77, 77, 77, 77, 30, 30, 126, 216, 24,
        255, 21, 136, 211, 2, 109, 75, 115, 15, 0, 255, 255, 77, 77, 179, 178, 98, 98, 98, 98, 99,
        102, 157, 50, 77, 77, 77, 77, 77, 30, 30, 30, 30, 30, 30, 30, 30, 77, 77, 77, 77, 77, 35,
        35, 35, 43, 35, 35, 35, 35, 35, 35, 35, 35, 252, 252, 252, 252, 252, 252, 252, 252, 252, 6,
        252, 252, 252, 252, 35, 157, 157, 156, 157, 157, 157, 77, 77, 77, 157, 157,
    ],
)];

#[test]
fn fused_fuzzer_regressions() {
    replay(FUSED_REGRESSIONS, fused_matches_unfused);
}
