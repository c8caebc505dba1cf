//! Threads: tensors cross threads, independent graphs differentiate in parallel with
//! the same results as on one thread, and two passes through the same nodes at the
//! same time are defined: the later one fails with `ConcurrentBackward`, and never
//! mixes its gradients into the other pass.

use autograd::ops;
use autograd::prelude::*;
use std::sync::{Arc, Barrier};
use std::thread;

fn assert_send_sync<T: Send + Sync>() {}

#[test]
fn tensors_and_errors_are_send_and_sync() {
    assert_send_sync::<Tensor>();
    assert_send_sync::<Error>();
    assert_send_sync::<autograd::NodeRef>();
}

/// One graph, chosen by `seed`: a small MLP layer with a softmax cross-entropy loss.
/// Returns the gradients of the weights, the bias and the input, as raw values.
fn graph_gradients(seed: u64) -> Result<Vec<Vec<f64>>> {
    let mut rng = Rng::new(seed);
    let x = rng
        .normal([4, 5], 0.0, 1.0, DType::F64)?
        .with_requires_grad(true);
    let w = rng
        .normal([5, 3], 0.0, 1.0, DType::F64)?
        .with_requires_grad(true);
    let b = rng
        .normal([3], 0.0, 1.0, DType::F64)?
        .with_requires_grad(true);
    let targets = Tensor::from_slice(&[(seed % 3) as i64, 1, 0, 2], [4])?;
    let h = ops::tanh(&(x.matmul(&w)? + &b)?)?;
    let loss = (ops::cross_entropy(&h, &targets)? + ops::mean_all(&ops::square(&h)?)?)?;
    loss.backward()?;
    [&w, &b, &x]
        .iter()
        .map(|t| t.grad().expect("gradient").to_vec::<f64>())
        .collect()
}

#[test]
fn four_threads_times_100_graphs_match_one_thread_bit_for_bit() -> Result<()> {
    crate::init();
    const THREADS: u64 = 4;
    const GRAPHS: u64 = 100;
    let expected: Vec<_> = (0..THREADS * GRAPHS)
        .map(graph_gradients)
        .collect::<Result<_>>()?;
    let start = Arc::new(Barrier::new(THREADS as usize));
    let workers: Vec<_> = (0..THREADS)
        .map(|t| {
            let start = start.clone();
            thread::spawn(move || {
                start.wait(); // all four differentiate at the same time
                (t * GRAPHS..(t + 1) * GRAPHS)
                    .map(graph_gradients)
                    .collect::<Result<Vec<_>>>()
            })
        })
        .collect();
    for (t, worker) in workers.into_iter().enumerate() {
        let got = worker.join().expect("worker panicked")?;
        let from = t * GRAPHS as usize;
        assert!(
            got == expected[from..from + GRAPHS as usize],
            "thread {t} computed different gradients"
        );
    }
    Ok(())
}

#[test]
fn a_graph_built_on_one_thread_is_differentiated_on_another() -> Result<()> {
    crate::init();
    let x = Tensor::from_slice(&[0.5f64, -1.0, 2.0], [3])?.with_requires_grad(true);
    let loss = ops::sum_all(&(ops::sin(&x)? * &x)?)?;
    let handle = loss.clone();
    thread::spawn(move || handle.backward())
        .join()
        .expect("backward thread panicked")?;
    let expected: Vec<f64> = [0.5f64, -1.0, 2.0]
        .iter()
        .map(|v| v.sin() + v * v.cos())
        .collect();
    assert_eq!(x.grad().unwrap().to_vec::<f64>()?, expected);
    Ok(())
}

#[test]
fn graphs_sharing_only_a_leaf_differentiate_concurrently() -> Result<()> {
    crate::init();
    const THREADS: usize = 4;
    const GRAPHS: usize = 100;
    let w = Tensor::zeros([3], DType::F64)?.with_requires_grad(true);
    let start = Arc::new(Barrier::new(THREADS));
    let workers: Vec<_> = (0..THREADS)
        .map(|t| {
            let (w, start) = (w.clone(), start.clone());
            thread::spawn(move || -> Result<()> {
                start.wait();
                for _ in 0..GRAPHS {
                    // d/dw sum(w * c) = c: integers, so any summation order is exact.
                    let c = Tensor::from_slice(&[1.0f64, t as f64, 2.0], [3])?;
                    ops::sum_all(&(&w * &c)?)?.backward()?;
                }
                Ok(())
            })
        })
        .collect();
    for worker in workers {
        worker.join().expect("worker panicked")?;
    }
    let n = GRAPHS as f64;
    let expected = [4.0 * n, 6.0 * n, 8.0 * n];
    assert_eq!(w.grad().unwrap().to_vec::<f64>()?, expected);
    Ok(())
}

/// Where the test holds the first pass: inside the backward of `test_gate`.
pub struct GateState {
    reached: Barrier,
    release: Barrier,
}

/// The identity, whose backward waits until the test lets it go on.
#[differentiable(name = "test_gate")]
mod gate {
    use super::GateState;
    use autograd::prelude::*;
    use std::sync::Arc;

    pub struct Gate {
        pub state: Arc<GateState>,
    }

    pub fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let _ = &self.state;
        Ok(x.clone())
    }

    pub fn backward(&self, grad: &Tensor) -> Result<Tensor> {
        self.state.reached.wait();
        self.state.release.wait();
        Ok(grad.clone())
    }
}

/// Pass 1 runs `sum(gate(h)) + sum(2h)` with `h = exp(x)`: when it blocks in the
/// gate's backward, `h`'s node already holds pass 1's gradient from `2h`. Pass 2,
/// `sum(3h)`, reaches that node meanwhile. Adding its gradient there would make
/// pass 1 report 5 exp(x) and pass 2 succeed with nothing delivered; instead pass 2
/// fails and pass 1 gets exactly 3 exp(x).
#[test]
fn a_second_pass_reaching_a_claimed_node_fails_without_touching_the_first() -> Result<()> {
    crate::init();
    let values = [0.25f64, -0.5];
    let x = Tensor::from_slice(&values, [2])?.with_requires_grad(true);
    let state = Arc::new(GateState {
        reached: Barrier::new(2),
        release: Barrier::new(2),
    });
    let h = ops::exp(&x)?;
    let gated = gate(&h, state.clone())?;
    let twice = ops::mul_scalar(&h, 2.0)?;
    let loss1 = (ops::sum_all(&gated)? + ops::sum_all(&twice)?)?;
    let loss2 = ops::sum_all(&ops::mul_scalar(&h, 3.0)?)?;

    let first = {
        let loss1 = loss1.clone();
        thread::spawn(move || loss1.backward_with(BackwardOptions::default().retain_graph(true)))
    };
    state.reached.wait(); // pass 1 is inside the gate; h's node holds its gradient
    let second = loss2.backward_with(BackwardOptions::default().retain_graph(true));
    state.release.wait();
    first.join().expect("pass 1 panicked")?;

    let err = second.expect_err("pass 2 ran through a node pass 1 held");
    assert!(
        matches!(err, Error::ConcurrentBackward { op: "exp" }),
        "{err}"
    );
    let expected: Vec<f64> = values.iter().map(|v| 3.0 * v.exp()).collect();
    assert_eq!(x.grad().unwrap().to_vec::<f64>()?, expected);

    // Both passes released their claims: pass 2 runs now, adding its 3 exp(x).
    loss2.backward()?;
    let expected: Vec<f64> = values.iter().map(|v| 6.0 * v.exp()).collect();
    assert_eq!(x.grad().unwrap().to_vec::<f64>()?, expected);
    Ok(())
}

/// While pass 1 runs the gate's backward, the gate's node is claimed: pass 2
/// (retaining the graph) reaching it fails at once instead of waiting.
#[test]
fn a_pass_reaching_a_node_whose_backward_is_running_fails() -> Result<()> {
    crate::init();
    let x = Tensor::from_slice(&[1.0f64, 2.0], [2])?.with_requires_grad(true);
    let state = Arc::new(GateState {
        reached: Barrier::new(2),
        release: Barrier::new(2),
    });
    let gated = gate(&x, state.clone())?;
    let loss1 = ops::sum_all(&gated)?;
    let loss2 = ops::sum_all(&ops::mul_scalar(&gated, 2.0)?)?;
    let first = {
        let loss1 = loss1.clone();
        thread::spawn(move || loss1.backward_with(BackwardOptions::default().retain_graph(true)))
    };
    state.reached.wait();
    let second = loss2.backward_with(BackwardOptions::default().retain_graph(true));
    state.release.wait();
    first.join().expect("pass 1 panicked")?;
    let err = second.expect_err("pass 2 ran a node pass 1 was running");
    assert!(
        matches!(err, Error::ConcurrentBackward { op: "test_gate" }),
        "{err}"
    );
    assert_eq!(x.grad().unwrap().to_vec::<f64>()?, vec![1.0, 1.0]);
    Ok(())
}
