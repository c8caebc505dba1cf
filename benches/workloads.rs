//! Criterion benchmarks of the workloads in `benches/WORKLOADS.md`, one group per
//! workload, on the CPU. The graphs are shared with `examples/workloads.rs`
//! (`benches/common`), which prints the figures compared with peers; each
//! workload's correctness check runs before it is timed.
//!
//! The CPU kernels use `autograd::num_threads()` threads: every core by default,
//! `AUTOGRAD_NUM_THREADS=n` to choose (`AUTOGRAD_NUM_THREADS=1` for the one-thread
//! figures). Results are the same bits for every thread count.
//!
//! `cargo bench --bench workloads` (all), `cargo bench --bench workloads -- W3` (one).

mod common;

use common::{
    Chain, W1, W1_NODES, W2, W3, W3_LEN, W4, W4_COLS, W4_ROWS, W5, W5_SEGMENTS, W6, W7, W7_BATCH,
    W8, W8_BATCH, W8_SEQ,
};
use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use std::hint::black_box;
use std::time::Duration;

/// Panics with the workload's error: a benchmark of a wrong result is worthless.
fn ok<T>(r: autograd::Result<T>) -> T {
    r.unwrap_or_else(|e| panic!("{e}"))
}

fn w1(c: &mut Criterion) {
    let w = ok(W1::new());
    ok(w.check());
    let mut g = c.benchmark_group("W1 chain-overhead");
    g.throughput(Throughput::Elements(W1_NODES as u64));
    g.bench_function(BenchmarkId::new("cpu", W1_NODES), |b| {
        b.iter(|| black_box(ok(w.step())))
    });
    g.finish();
}

fn w2(c: &mut Criterion) {
    let w = ok(W2::new());
    ok(w.check());
    let mut g = c.benchmark_group("W2 mlp-step");
    g.bench_function(BenchmarkId::new("cpu", 64), |b| {
        b.iter(|| black_box(ok(w.step())))
    });
    // The step's five matrix products alone: its floor with `gemm`.
    g.bench_function(BenchmarkId::new("cpu products alone", 64), |b| {
        b.iter(|| black_box(ok(w.products())))
    });
    g.finish();
}

fn w3(c: &mut Criterion) {
    let w = ok(W3::new());
    ok(w.check());
    let mut g = c.benchmark_group("W3 elementwise-bandwidth");
    g.sample_size(20).measurement_time(Duration::from_secs(4));
    g.throughput(Throughput::Elements(W3_LEN as u64));
    g.bench_function(BenchmarkId::new("cpu", W3_LEN), |b| {
        b.iter(|| black_box(ok(w.step())))
    });
    g.finish();
}

fn w4(c: &mut Criterion) {
    let w = ok(W4::new());
    ok(w.check());
    let mut g = c.benchmark_group("W4 broadcast-reduce");
    g.sample_size(30);
    g.throughput(Throughput::Elements((W4_ROWS * W4_COLS) as u64));
    g.bench_function(BenchmarkId::new("cpu", W4_ROWS * W4_COLS), |b| {
        b.iter(|| black_box(ok(w.step())))
    });
    g.finish();
}

/// W5's metric is memory (printed by the example); this times the two chains, and
/// the mul chain in checkpointed segments (the price of recomputing them).
fn w5(c: &mut Criterion) {
    let w = ok(W5::new());
    ok(w.check());
    let mut g = c.benchmark_group("W5 saved-tensor chains");
    g.sample_size(20);
    for (name, chain) in [("add", Chain::Add), ("mul", Chain::Mul)] {
        g.bench_function(BenchmarkId::new("cpu", name), |b| {
            b.iter(|| black_box(ok(w.step(chain))))
        });
    }
    ok(w.check_checkpointed(W5_SEGMENTS));
    g.bench_function(BenchmarkId::new("cpu", "mul-checkpointed"), |b| {
        b.iter(|| black_box(ok(w.step_checkpointed(W5_SEGMENTS))))
    });
    g.finish();
}

/// W6: the user-defined activation as one generated op, and composed of standard
/// ops for comparison.
fn w6(c: &mut Criterion) {
    let w = ok(W6::new());
    ok(w.check());
    let mut g = c.benchmark_group("W6 mish(x) * a, forward + backward");
    g.sample_size(10);
    g.throughput(Throughput::Elements(W3_LEN as u64));
    g.bench_function("generated op", |b| b.iter(|| black_box(ok(w.step()))));
    g.bench_function("composed", |b| b.iter(|| black_box(ok(w.step_composed()))));
    g.finish();
}

/// W7: one CNN training step (forward and backward) on a batch of 32 images.
fn w7(c: &mut Criterion) {
    let w = ok(W7::new());
    ok(w.check());
    let mut g = c.benchmark_group("W7 cnn-step");
    g.sample_size(10).measurement_time(Duration::from_secs(3));
    g.bench_function(BenchmarkId::new("cpu", W7_BATCH), |b| {
        b.iter(|| black_box(ok(w.step())))
    });
    g.finish();
}

/// W8: one transformer-block training step (forward and backward) on 8 sequences
/// of 128 tokens.
fn w8(c: &mut Criterion) {
    let w = ok(W8::new());
    ok(w.check());
    let mut g = c.benchmark_group("W8 transformer-block-step");
    g.sample_size(10).measurement_time(Duration::from_secs(3));
    g.bench_function(BenchmarkId::new("cpu", W8_BATCH * W8_SEQ), |b| {
        b.iter(|| black_box(ok(w.step())))
    });
    g.finish();
}

fn init(c: &mut Criterion) {
    ok(autograd::init());
    let _ = c;
}

criterion_group!(benches, init, w1, w2, w3, w4, w5, w6, w7, w8);
criterion_main!(benches);
