//! Runs the workloads W1–W8 of `benches/WORKLOADS.md` once each and prints one line per
//! workload, for side-by-side comparison with peers run in the same sitting:
//!
//! ```text
//! W1 ns_per_node <median>
//! W2 ms_per_step <median>
//! W3 ms <median>
//! W3-bf16 ms <median>
//! W4 ms <median>
//! W4-bf16 ms <median>
//! W6 ms <median>
//! W7 ms <median>
//! W8 ms <median>
//! W5 add_peak_bytes <n> mul_peak_bytes <n>
//! W5-checkpointed segments <k> mul_peak_bytes <n>
//! W5-bf16 mul_peak_bytes <n>
//! ```
//!
//! The `-bf16` lines run W3, W4 and W5's mul chain on the same values rounded to
//! bf16 (half the bytes; each step computes in f32 and rounds).
//!
//! Every workload's correctness check runs first; then 3 warm-ups and at least 10
//! timed repetitions, of which the median is printed (the minimum and the number of
//! repetitions go to stderr). W5 comes from the library's own storage accounting; its
//! second line is the mul chain cut into k ≈ √50 segments with `autograd::checkpoint`
//! (the segments' products recomputed in backward instead of kept). W6
//! also times the same activation composed of standard ops (stderr), for comparison,
//! and W2 its five matrix products alone (stderr): the step's floor with `gemm`,
//! timed in pairs with the step (step, then products, each repetition), and the
//! median of the pairs' ratios (how far the step is above its floor). W3 and W4
//! are timed in pairs the same way with their one-pass floor (stderr): one thread
//! reading the inputs once and writing the gradient into a new `Vec`, the bytes
//! they must move and nothing else. W7 and W8
//! print their loss on stderr beside the float64 reference it was checked against,
//! and a fingerprint of the bits of the loss and every gradient: the same for every
//! thread count.
//! The first line on stderr says which compiled copy of the CPU loops runs
//! (`avx512`, `avx2` or `baseline`; `AUTOGRAD_SIMD` narrows it) and how many
//! threads the CPU kernels use.
//!
//! Run with `cargo run --release --example workloads`. The CPU kernels use
//! `autograd::num_threads()` threads: every core by default,
//! `AUTOGRAD_NUM_THREADS=n` to choose (`AUTOGRAD_NUM_THREADS=1` for the one-thread
//! figures that `WORKLOADS.md` compares, except W7's and W8's all-core ones). Pass
//! workload ids (`W1 W3`) to run only those; `WORKLOADS_REPS=n` overrides the number
//! of timed repetitions (for runs under a profiler).

#[path = "../benches/common/mod.rs"]
mod common;

use autograd::{DType, Result};
use common::{Chain, W1, W1_NODES, W2, W3, W4, W5, W5_SEGMENTS, W6, W7, W8};
use std::hint::black_box;
use std::time::Instant;

const WARMUPS: usize = 3;

/// Median and minimum, in seconds, of `reps` timed runs of `f` after the warm-ups.
fn time<T>(reps: usize, mut f: impl FnMut() -> Result<T>) -> Result<(f64, f64)> {
    for _ in 0..WARMUPS {
        black_box(f()?);
    }
    let mut secs = Vec::with_capacity(reps);
    for _ in 0..reps {
        let start = Instant::now();
        let out = f()?;
        secs.push(start.elapsed().as_secs_f64());
        drop(black_box(out));
    }
    secs.sort_by(f64::total_cmp);
    Ok((secs[reps / 2], secs[0]))
}

/// `reps` timed pairs, each `f` then `g` back to back, after the warm-ups: the
/// times of each in the order they ran. Paired, a repetition that the machine slowed
/// down slows both, and their ratio stays honest on a noisy machine.
fn time_pairs<T, U>(
    reps: usize,
    mut f: impl FnMut() -> Result<T>,
    mut g: impl FnMut() -> Result<U>,
) -> Result<(Vec<f64>, Vec<f64>)> {
    for _ in 0..WARMUPS {
        black_box(f()?);
        black_box(g()?);
    }
    let (mut fs, mut gs) = (Vec::with_capacity(reps), Vec::with_capacity(reps));
    for _ in 0..reps {
        let start = Instant::now();
        let out = f()?;
        fs.push(start.elapsed().as_secs_f64());
        drop(black_box(out));
        let start = Instant::now();
        let out = g()?;
        gs.push(start.elapsed().as_secs_f64());
        drop(black_box(out));
    }
    Ok((fs, gs))
}

/// The median of `xs` (the upper one of an even count, as `time` takes).
fn median(xs: &[f64]) -> f64 {
    let mut xs = xs.to_vec();
    xs.sort_by(f64::total_cmp);
    xs[xs.len() / 2]
}

fn minimum(xs: &[f64]) -> f64 {
    xs.iter().copied().fold(f64::INFINITY, f64::min)
}

/// The median over repetitions of `a[i] / b[i]`.
fn median_ratio(a: &[f64], b: &[f64]) -> f64 {
    let ratios: Vec<f64> = a.iter().zip(b).map(|(x, y)| x / y).collect();
    median(&ratios)
}

/// `default` timed repetitions, unless `WORKLOADS_REPS` says otherwise.
fn reps(default: usize) -> usize {
    std::env::var("WORKLOADS_REPS")
        .ok()
        .and_then(|r| r.parse::<usize>().ok())
        .map_or(default, |r| r.max(1))
}

/// FNV-1a over the bits of every value of `outputs`: equal for two runs exactly
/// when (barring a collision) their losses and gradients are the same bits, to
/// compare runs with different `AUTOGRAD_NUM_THREADS`.
fn fingerprint(outputs: &[(String, Vec<f32>)]) -> u64 {
    let mut h = 0xcbf2_9ce4_8422_2325u64;
    for v in outputs.iter().flat_map(|(_, v)| v) {
        for b in v.to_bits().to_le_bytes() {
            h = (h ^ b as u64).wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    h
}

/// W3's one-pass floor: one thread reads `x` and `a` once and writes the
/// gradient `2x(a + 1)` into a new `Vec` (which the allocator may serve from the
/// block the previous repetition freed, as the library's pool serves its
/// result), summing the loss `(xa + x)x` on the way: the bytes W3 must move, with
/// nothing else.
fn w3_floor(x: &[f32], a: &[f32]) -> (Vec<f32>, f32) {
    // 16 lanes at a time (16 partial sums), so that the loop vectorizes.
    const L: usize = 16;
    let mut grad = Vec::with_capacity(x.len());
    let mut lanes = [0.0f32; L];
    let (xc, ac) = (x.chunks_exact(L), a.chunks_exact(L));
    let (xr, ar) = (xc.remainder(), ac.remainder());
    for (x, a) in xc.zip(ac) {
        let mut g = [0.0f32; L];
        for i in 0..L {
            lanes[i] += (x[i] * a[i] + x[i]) * x[i];
            g[i] = 2.0 * x[i] * (a[i] + 1.0);
        }
        grad.extend_from_slice(&g);
    }
    let mut loss: f32 = lanes.iter().sum();
    for (&x, &a) in xr.iter().zip(ar) {
        loss += (x * a + x) * x;
        grad.push(2.0 * x * (a + 1.0));
    }
    (grad, loss)
}

/// W4's one-pass floor: one thread reads `x` once and writes the gradient `2x`
/// into a new `Vec` (the bias's gradient, a column count, is a constant).
fn w4_floor(x: &[f32]) -> Vec<f32> {
    x.iter().map(|&x| 2.0 * x).collect()
}

/// The floor's median and the median of the (step / floor) ratios of the pairs.
fn floor_note(id: &str, steps: &[f64], floors: &[f64]) {
    eprintln!(
        "# {id} one-pass floor (one thread, the same bytes): median {:.4} ms, min {:.4} ms; \
         {id} / floor, each repetition's pair: median {:.2}",
        median(floors) * 1e3,
        minimum(floors) * 1e3,
        median_ratio(steps, floors)
    );
}

fn note(id: &str, reps: usize, median: f64, min: f64, unit: &str) {
    eprintln!(
        "# {id}: median {median:.4} {unit}, min {min:.4} {unit}, {reps} repetitions after {WARMUPS} warm-ups"
    );
}

fn main() -> Result<()> {
    autograd::init()?;
    // Which compiled copy of the CPU loops runs (`AUTOGRAD_SIMD` narrows it).
    eprintln!(
        "# CPU loops: {} (this CPU has {}), {} thread(s)",
        autograd::elementwise::simd::active().name(),
        autograd::elementwise::simd::detect().name(),
        autograd::num_threads()
    );
    let wanted: Vec<String> = std::env::args().skip(1).map(|a| a.to_uppercase()).collect();
    let runs = |id: &str| wanted.is_empty() || wanted.iter().any(|w| w.eq_ignore_ascii_case(id));

    if runs("W1") {
        let w = W1::new()?;
        w.check()?;
        let reps = reps(50);
        let (med, min) = time(reps, || w.step())?;
        let per_node = |s: f64| s * 1e9 / W1_NODES as f64;
        note("W1", reps, per_node(med), per_node(min), "ns/node");
        println!("W1 ns_per_node {:.1}", per_node(med));
    }
    if runs("W2") {
        let w = W2::new()?;
        w.check()?;
        let reps = reps(100);
        let (steps, products) = time_pairs(reps, || w.step(), || w.products())?;
        let (med, min) = (median(&steps), minimum(&steps));
        note("W2", reps, med * 1e3, min * 1e3, "ms/step");
        note(
            "W2 matrix products alone (the step's floor)",
            reps,
            median(&products) * 1e3,
            minimum(&products) * 1e3,
            "ms",
        );
        eprintln!(
            "# W2: step / its products, each repetition's pair: median {:.3}",
            median_ratio(&steps, &products)
        );
        println!("W2 ms_per_step {:.3}", med * 1e3);
    }
    if runs("W3") {
        let w = W3::new()?;
        w.check()?;
        let reps = reps(20);
        let (xs, a) = (w.x.to_vec::<f32>()?, w.a.to_vec::<f32>()?);
        let (steps, floors) = time_pairs(reps, || w.step(), || Ok(w3_floor(&xs, &a)))?;
        let (med, min) = (median(&steps), minimum(&steps));
        note("W3", reps, med * 1e3, min * 1e3, "ms");
        floor_note("W3", &steps, &floors);
        println!("W3 ms {:.3}", med * 1e3);
    }
    if runs("W3-bf16") {
        let w = W3::in_dtype(DType::BF16)?;
        w.check()?;
        let reps = reps(20);
        let (med, min) = time(reps, || w.step())?;
        note("W3-bf16", reps, med * 1e3, min * 1e3, "ms");
        println!("W3-bf16 ms {:.3}", med * 1e3);
    }
    if runs("W4") {
        let w = W4::new()?;
        w.check()?;
        let reps = reps(30);
        let xs = w.x.to_vec::<f32>()?;
        let (steps, floors) = time_pairs(reps, || w.step(), || Ok(w4_floor(&xs)))?;
        let (med, min) = (median(&steps), minimum(&steps));
        note("W4", reps, med * 1e3, min * 1e3, "ms");
        floor_note("W4", &steps, &floors);
        println!("W4 ms {:.3}", med * 1e3);
    }
    if runs("W4-bf16") {
        let w = W4::in_dtype(DType::BF16)?;
        w.check()?;
        let reps = reps(30);
        let (med, min) = time(reps, || w.step())?;
        note("W4-bf16", reps, med * 1e3, min * 1e3, "ms");
        println!("W4-bf16 ms {:.3}", med * 1e3);
    }
    if runs("W6") {
        let w = W6::new()?;
        w.check()?;
        let reps = reps(20);
        let (cmed, cmin) = time(reps, || w.step_composed())?;
        note(
            "W6 composed of standard ops",
            reps,
            cmed * 1e3,
            cmin * 1e3,
            "ms",
        );
        let (med, min) = time(reps, || w.step())?;
        note("W6", reps, med * 1e3, min * 1e3, "ms");
        println!("W6 ms {:.3}", med * 1e3);
    }
    if runs("W7") {
        let w = W7::new()?;
        w.check()?;
        let outputs = w.outputs()?;
        eprintln!(
            "# W7: loss {:?} (float64 {}), outputs' bits {:016x}",
            outputs[0].1,
            common::W7_LOSS_F64,
            fingerprint(&outputs)
        );
        let reps = reps(20);
        let (med, min) = time(reps, || w.step())?;
        note("W7", reps, med * 1e3, min * 1e3, "ms/step");
        println!("W7 ms {:.3}", med * 1e3);
    }
    if runs("W8") {
        let w = W8::new()?;
        w.check()?;
        let outputs = w.outputs()?;
        eprintln!(
            "# W8: loss {:?} (float64 {}), outputs' bits {:016x}",
            outputs[0].1,
            common::W8_LOSS_F64,
            fingerprint(&outputs)
        );
        let reps = reps(20);
        let (med, min) = time(reps, || w.step())?;
        note("W8", reps, med * 1e3, min * 1e3, "ms/step");
        println!("W8 ms {:.3}", med * 1e3);
    }
    if runs("W5") {
        let w = W5::new()?;
        w.check()?;
        let add = w.peak_bytes(Chain::Add)?;
        let mul = w.peak_bytes(Chain::Mul)?;
        let mib = |b: usize| b as f64 / (1 << 20) as f64;
        eprintln!(
            "# W5: add chain peak {:.1} MiB ({:.2} tensors), mul chain peak {:.1} MiB ({:.2} tensors) beyond the input",
            mib(add),
            add as f64 / common::W5_TENSOR_BYTES as f64,
            mib(mul),
            mul as f64 / common::W5_TENSOR_BYTES as f64
        );
        println!("W5 add_peak_bytes {add} mul_peak_bytes {mul}");
        w.check_checkpointed(W5_SEGMENTS)?;
        let ck = w.peak_bytes_checkpointed(W5_SEGMENTS)?;
        eprintln!(
            "# W5-checkpointed: mul chain in {W5_SEGMENTS} segments peak {:.1} MiB ({:.2} tensors) beyond the input",
            mib(ck),
            ck as f64 / common::W5_TENSOR_BYTES as f64
        );
        println!("W5-checkpointed segments {W5_SEGMENTS} mul_peak_bytes {ck}");
    }
    if runs("W5-bf16") {
        let w = W5::in_dtype(DType::BF16)?;
        let mul = w.peak_bytes(Chain::Mul)?;
        println!("W5-bf16 mul_peak_bytes {mul}");
    }
    Ok(())
}
