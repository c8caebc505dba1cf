//! Gradient checkpointing (`autograd::checkpoint`): gradients identical to the plain
//! computation, peak memory as theory says on W5's mul chain, higher order and
//! errors.

use crate::leaf;
use autograd::prelude::*;
use autograd::{Device, Error, checkpoint, memory};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// `y ← tanh(wᵢ ⊙ y)` from `y = xs[0]`, one layer per weight in `xs[1..]`.
fn layers(xs: &[Tensor]) -> Result<Tensor> {
    let mut y = xs[0].clone();
    for w in &xs[1..] {
        y = (w * &y)?.tanh()?;
    }
    Ok(y)
}

#[test]
fn checkpointed_chain_gives_bit_identical_gradients() -> Result<()> {
    crate::init();
    const LAYERS: usize = 12;
    let mut rng = Rng::new(7);
    let x0 = rng.normal([5], 0.0, 1.0, DType::F32)?;
    let w0: Vec<Tensor> = (0..LAYERS)
        .map(|_| rng.normal([5], 0.0, 1.5, DType::F32))
        .collect::<Result<_>>()?;
    let fresh = || -> (Tensor, Vec<Tensor>) {
        (
            x0.detach().with_requires_grad(true),
            w0.iter()
                .map(|w| w.detach().with_requires_grad(true))
                .collect(),
        )
    };
    // Plain.
    let (x, ws) = fresh();
    let inputs: Vec<Tensor> = std::iter::once(x.clone())
        .chain(ws.iter().cloned())
        .collect();
    layers(&inputs)?.sum_all()?.backward()?;
    // In segments of 1 + 11, 3 + 4 + 5 and 12 layers.
    for segments in [vec![1, 11], vec![3, 4, 5], vec![12]] {
        let (cx, cws) = fresh();
        let mut y = cx.clone();
        let mut at = 0;
        for len in segments {
            let seg: Vec<Tensor> = std::iter::once(y)
                .chain(cws[at..at + len].iter().cloned())
                .collect();
            y = checkpoint(layers, &seg)?;
            assert_eq!(y.grad_fn().unwrap().op_name(), "checkpoint");
            at += len;
        }
        y.sum_all()?.backward()?;
        let bits = |t: &Tensor| -> Vec<u32> {
            t.grad()
                .unwrap()
                .to_vec::<f32>()
                .unwrap()
                .iter()
                .map(|v| v.to_bits())
                .collect()
        };
        assert_eq!(bits(&cx), bits(&x), "input gradient");
        for (i, (c, p)) in cws.iter().zip(&ws).enumerate() {
            assert_eq!(bits(c), bits(p), "weight {i}");
        }
    }
    Ok(())
}

/// W5's mul chain (`y ← y ⊙ x`, `N` times, then a sum) on small tensors: peak bytes
/// of live storage during forward and backward beyond the input, and the gradient.
fn mul_chain(n: usize, segments: usize, len: usize) -> Result<(usize, Vec<f32>)> {
    let x = Rng::new(2026)
        .uniform([len], -1.0, 1.0, DType::F32)?
        .with_requires_grad(true);
    let before = memory::thread_stats(Device::Cpu).live_bytes;
    memory::reset_thread_peak(Device::Cpu);
    let steps = |y: &Tensor, x: &Tensor, k: usize| -> Result<Tensor> {
        let mut y = y.clone();
        for _ in 0..k {
            y = (&y * x)?;
        }
        Ok(y)
    };
    let mut y = x.clone();
    if segments == 0 {
        y = steps(&y, &x, n)?;
    } else {
        for s in 0..segments {
            let k = n * (s + 1) / segments - n * s / segments;
            y = checkpoint(move |xs| steps(&xs[0], &xs[1], k), &[y, x.clone()])?;
        }
    }
    y.sum_all()?.backward()?;
    drop(y);
    let peak = memory::thread_stats(Device::Cpu).peak_bytes;
    let g = x.grad().unwrap().to_vec::<f32>()?;
    Ok(((peak - before).max(0) as usize, g))
}

#[test]
fn checkpointing_w5_mul_chain_in_sqrt_n_segments_cuts_peak_memory_to_sqrt_n() -> Result<()> {
    crate::init();
    const N: usize = 64;
    const K: usize = 8; // √N
    const LEN: usize = 4096;
    const T: usize = LEN * 4; // bytes of one f32 tensor
    // (Fusion off: the theory counts stored products; fused, the plain chain
    // keeps its products as recipes over `x`, see tests/integration/fusion.rs.)
    let off = autograd::fusion::FusionConfig::OFF;
    let (plain, g_plain) = autograd::fusion::with_config(off, || mul_chain(N, 0, LEN))?;
    let (ck, g_ck) = autograd::fusion::with_config(off, || mul_chain(N, K, LEN))?;
    // Plain: every one of the N products is saved for backward.
    assert!(plain >= N * T, "plain peak {} tensors", plain / T);
    // Checkpointed: the K segment inputs (the last one's output among them), plus
    // one segment's N/K products while it is differentiated, plus a few gradient
    // buffers and the scalar loss (measured: 20 tensors and 8 bytes, against 67
    // tensors and 8 bytes plain).
    assert!(
        ck <= (K + N / K + 5) * T,
        "checkpointed peak {} tensors, theory {} + a few",
        ck / T,
        K + N / K
    );
    // The gradient: 65 x^64 (x is also the chain's start), the same up to the
    // order the contributions to x are summed in.
    for (a, b) in g_plain.iter().zip(&g_ck) {
        assert!((a - b).abs() <= 1e-5 * a.abs().max(1e-30), "{a} vs {b}");
    }
    Ok(())
}

#[test]
fn checkpoint_saves_only_its_inputs_and_reaches_captured_parameters() -> Result<()> {
    crate::init();
    let x = leaf(&[0.5, -1.0, 2.0], &[3]);
    let w = leaf(&[1.5, 0.5, -0.5], &[3]);
    let w_in = w.clone();
    // w captured, not passed: the inner pass accumulates into its .grad().
    let y = checkpoint(
        move |xs| (&xs[0] * &w_in)?.exp()?.tanh(),
        std::slice::from_ref(&x),
    )?;
    let node = y.grad_fn().unwrap();
    assert_eq!(node.saved_bytes(), 3 * 8); // x only, nothing of the segment
    y.sum_all()?.backward()?;
    let (x2, w2) = (leaf(&[0.5, -1.0, 2.0], &[3]), leaf(&[1.5, 0.5, -0.5], &[3]));
    (&x2 * &w2)?.exp()?.tanh()?.sum_all()?.backward()?;
    assert_eq!(crate::grad_vec(&x), crate::grad_vec(&x2));
    assert_eq!(crate::grad_vec(&w), crate::grad_vec(&w2));
    // No input requires grad: nothing is recorded.
    let c = checkpoint(|xs| xs[0].exp(), &[x.detach()])?;
    assert!(!c.requires_grad());
    Ok(())
}

#[test]
fn checkpoint_under_create_graph_gives_first_order_and_refuses_a_second() -> Result<()> {
    crate::init();
    let x = leaf(&[0.5, 1.5], &[2]);
    let y = checkpoint(|xs| (&xs[0] * &xs[0])?.sum_all(), std::slice::from_ref(&x))?;
    let g = grad(&y, &[&x], BackwardOptions::default().create_graph(true))?
        .remove(0)
        .unwrap();
    assert_eq!(g.to_vec::<f64>()?, [1.0, 3.0]);
    let err = g.sum_all()?.backward().unwrap_err();
    assert!(
        matches!(err, Error::NotDifferentiable { op: "checkpoint" }),
        "{err}"
    );
    Ok(())
}

#[test]
fn checkpoint_errors_are_values() -> Result<()> {
    crate::init();
    let err = checkpoint(|xs| xs[0].exp(), &[]).unwrap_err();
    assert!(
        err.to_string()
            .contains("takes 1 to 32 tensor inputs, got 0"),
        "{err}"
    );
    // A segment that computes something else the second time.
    let calls = Arc::new(AtomicUsize::new(0));
    let x = leaf(&[1.0, 2.0], &[2]);
    let y = checkpoint(
        move |xs| match calls.fetch_add(1, Ordering::Relaxed) {
            0 => xs[0].exp(),
            _ => xs[0].sum_all(),
        },
        &[x],
    )?;
    let err = y.sum_all()?.backward().unwrap_err();
    let msg = err.to_string();
    assert!(
        msg.contains("checkpoint") && msg.contains("recomputing"),
        "{msg}"
    );
    Ok(())
}

#[test]
fn a_kept_checkpoint_node_recomputes_in_every_pass() -> Result<()> {
    crate::init();
    let x = leaf(&[0.5, -1.0], &[2]);
    let y = checkpoint(|xs| xs[0].exp()?.sum_all(), std::slice::from_ref(&x))?;
    y.backward_with(BackwardOptions::default().retain_graph(true))?;
    y.backward()?;
    let e: Vec<f64> = [0.5f64, -1.0].iter().map(|v| 2.0 * v.exp()).collect();
    assert_eq!(crate::grad_vec(&x), e);
    let err = y.backward().unwrap_err(); // the saved inputs are gone now
    assert!(
        matches!(err, Error::GraphConsumed { op: "checkpoint" }),
        "{err}"
    );
    Ok(())
}

#[test]
fn checkpoint_frees_everything_after_backward_after_an_error_and_unused() -> Result<()> {
    crate::init();
    let live = || memory::thread_stats(Device::Cpu).live_bytes;
    let before = live();
    {
        let x = leaf(&[0.5; 500], &[500]);
        let w = leaf(&[1.5; 500], &[500]);
        let seg = |xs: &[Tensor]| (&xs[0] * &xs[1])?.exp()?.tanh();
        // Differentiated.
        checkpoint(seg, &[x.clone(), w.clone()])?
            .sum_all()?
            .backward()?;
        // Recorded, never differentiated.
        let unused = checkpoint(seg, &[x.clone(), w.clone()])?;
        drop(unused);
        // A recomputation that fails half-way.
        let fails = checkpoint(
            // Recording is off in the forward, on in the recomputation.
            |xs: &[Tensor]| match autograd::is_grad_enabled() {
                false => xs[0].exp(),
                true => Err(Error::InvalidArgument {
                    op: "segment",
                    msg: "fails when recomputed".into(),
                }),
            },
            std::slice::from_ref(&x),
        )?;
        let err = fails.sum_all()?.backward().unwrap_err();
        assert!(err.to_string().contains("fails when recomputed"), "{err}");
    }
    assert_eq!(live(), before, "leaked");
    Ok(())
}
