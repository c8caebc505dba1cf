//! Results do not depend on the thread count: every registered op (forward, and
//! backward from a weighted sum of its output), W7 (a CNN training step) and W8 (a
//! transformer-block training step) give the same bits with 1, 2, 3 and 8 threads.
//!
//! The registry's ops run with every job, however small, on the pool, cut into the
//! smallest pieces its kernel allows (`set_min_parallel_work(0)`,
//! `set_smallest_pieces`): one row of a reduction or of a convolution's columns,
//! one block of a sum, one entry of a batched product. W7 and W8 run as in
//! training. Its own binary: it changes the process's thread count, which would
//! slow the other suites' tests down (their results would not change: that is
//! what this suite checks).

#[path = "../../benches/common/mod.rs"]
mod common;

use autograd::parallel::{self, MIN_PARALLEL_WORK};
use autograd::prelude::*;
use std::sync::Mutex;

/// The thread counts compared: one, this machine's two, an odd count, and more
/// threads than the machine has cores.
const THREADS: [usize; 4] = [1, 2, 3, 8];

/// The tests here change the process's thread count: one at a time.
static LOCK: Mutex<()> = Mutex::new(());

/// A result's bits (values widened to f64, exactly), or the error it gave.
type Bits = std::result::Result<Vec<u64>, String>;

fn bits(t: &Tensor) -> Bits {
    t.to_vec::<f64>()
        .map(|v| v.iter().map(|x| x.to_bits()).collect())
        .map_err(|e| e.to_string())
}

/// Runs `f` with each thread count (jobs of any size on the pool) and requires the
/// same results as with one thread; `what` names the results in a failure.
fn same_for_every_thread_count<R: PartialEq + std::fmt::Debug>(
    what: &str,
    min_work: usize,
    f: impl Fn() -> R,
) {
    let _guard = LOCK.lock().unwrap_or_else(|e| e.into_inner());
    parallel::set_min_parallel_work(min_work);
    parallel::set_smallest_pieces(min_work == 0);
    let mut first = None;
    for n in THREADS {
        autograd::set_num_threads(n).expect("thread count");
        let got = f();
        match &first {
            None => first = Some(got),
            Some(want) => assert!(
                *want == got,
                "{what}: {n} threads differ from 1 thread:\n1: {want:?}\n{n}: {got:?}"
            ),
        }
    }
    parallel::set_min_parallel_work(MIN_PARALLEL_WORK);
    parallel::set_smallest_pieces(false);
}

/// The output of `case` at its inputs and the gradients of `sum(output * w)` for
/// a fixed `w`, as bits (or the errors they gave).
fn case_results(case: &autograd::CheckCase) -> Vec<(String, Bits)> {
    let diff = case
        .differentiable
        .clone()
        .unwrap_or_else(|| vec![true; case.inputs.len()]);
    let inputs: Vec<Tensor> = case
        .inputs
        .iter()
        .zip(&diff)
        .map(|(t, &d)| {
            let leaf = t.detach();
            if d && matches!(t.dtype(), DType::F32 | DType::F64) {
                leaf.with_requires_grad(true)
            } else {
                leaf
            }
        })
        .collect();
    let out = match (case.run)(&inputs) {
        Ok(out) => out,
        Err(e) => return vec![("forward".into(), Err(e.to_string()))],
    };
    let mut results = vec![("output".to_string(), bits(&out))];
    if !out.requires_grad() {
        return results;
    }
    let weighted = Rng::new(7)
        .uniform(out.shape().dims(), -1.0, 1.0, out.dtype())
        .and_then(|w| (&out * &w)?.sum_all())
        .and_then(|loss| loss.backward());
    if let Err(e) = weighted {
        results.push(("backward".into(), Err(e.to_string())));
        return results;
    }
    for (i, t) in inputs.iter().enumerate() {
        if let Some(g) = t.grad() {
            results.push((format!("grad {i}"), bits(&g)));
        }
    }
    results
}

#[test]
fn every_registered_op_gives_the_same_bits_for_any_thread_count() {
    let registry = autograd::init().expect("op registry");
    let mut cases = 0;
    for entry in registry {
        let Some(check_cases) = entry.check_cases else {
            continue;
        };
        for case in check_cases() {
            cases += 1;
            same_for_every_thread_count(&format!("`{}`: {}", entry.name, case.label), 0, || {
                case_results(&case)
            });
        }
    }
    assert!(cases >= registry.len(), "{cases} cases");
}

#[test]
fn the_thread_count_is_what_was_set_and_zero_is_refused() {
    let _guard = LOCK.lock().unwrap_or_else(|e| e.into_inner());
    autograd::set_num_threads(3).unwrap();
    assert_eq!(autograd::num_threads(), 3);
    let e = autograd::set_num_threads(0).unwrap_err().to_string();
    assert!(e.contains("at least 1"), "{e}");
    assert_eq!(autograd::num_threads(), 3);
    autograd::set_num_threads(1).unwrap();
}

/// The loss and every gradient of `outputs`, as bits.
fn output_bits(outputs: Result<Vec<(String, Vec<f32>)>>) -> Vec<(String, Vec<u32>)> {
    outputs
        .expect("workload step")
        .into_iter()
        .map(|(name, v)| (name, v.iter().map(|x| x.to_bits()).collect()))
        .collect()
}

/// W7, a CNN training step (convolutions, pooling, a product, cross-entropy), at
/// its own size: its jobs split as they do in training.
#[test]
fn w7_gives_the_same_bits_for_any_thread_count() {
    autograd::init().expect("op registry");
    let w = common::W7::new().expect("W7 inputs");
    same_for_every_thread_count("W7", MIN_PARALLEL_WORK, || output_bits(w.outputs()));
}

/// W8, a transformer-block training step (embedding, layer norms, attention with
/// a causal mask, GELU, tied output, cross-entropy), at its own size.
#[test]
fn w8_gives_the_same_bits_for_any_thread_count() {
    autograd::init().expect("op registry");
    let w = common::W8::new().expect("W8 inputs");
    same_for_every_thread_count("W8", MIN_PARALLEL_WORK, || output_bits(w.outputs()));
}
