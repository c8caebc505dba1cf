//! Saved-tensor pruning: a node keeps exactly what its backward declares it reads,
//! only while an input needs a gradient, and only until its backward has run.

use autograd::memory::thread_stats;
use autograd::prelude::*;
use autograd::{ComputationGraph, ops};

#[test]
fn add_saves_nothing_mul_saves_its_inputs_until_backward() -> Result<()> {
    crate::init();
    let x = Tensor::ones([500, 8], DType::F32)?.with_requires_grad(true);
    let y = Tensor::ones([500, 8], DType::F32)?.with_requires_grad(true);
    let s = (&x + &y)?;
    let p = (&x * &y)?;
    let (add, mul) = (s.grad_fn().unwrap(), p.grad_fn().unwrap());
    assert_eq!(add.saved_tensor_count(), 0);
    assert_eq!(add.saved_bytes(), 0);
    assert_eq!(mul.saved_tensor_count(), 2);
    assert_eq!(mul.saved_bytes(), 2 * 500 * 8 * 4); // 16,000 bytes per input, as worked out by hand
    ops::sum_all(&(&s + &p)?)?.backward()?;
    assert!(add.is_consumed() && mul.is_consumed());
    assert_eq!(
        mul.saved_tensor_count(),
        0,
        "released right after its backward ran"
    );
    Ok(())
}

#[test]
fn nothing_is_saved_when_no_input_needs_a_gradient() -> Result<()> {
    crate::init();
    let x = Tensor::ones([4], DType::F32)?;
    let y = Tensor::ones([4], DType::F32)?;
    let p = (&x * &y)?;
    assert!(p.grad_fn().is_none());
    assert_eq!(ComputationGraph::of(&[&p]).saved_bytes(), 0);
    Ok(())
}

#[test]
fn exp_saves_its_output_not_its_input() -> Result<()> {
    crate::init();
    let x = Tensor::ones([3], DType::F64)?.with_requires_grad(true);
    let y = ops::exp(&x)?;
    let node = y.grad_fn().unwrap();
    assert_eq!(node.entry().saved_names(), ["output"]);
    assert_eq!(node.saved_tensor_count(), 1);
    Ok(())
}

#[test]
fn storage_returns_to_baseline_after_backward_and_drop() -> Result<()> {
    crate::init();
    let x = Tensor::ones([1024], DType::F32)?.with_requires_grad(true);
    let baseline = thread_stats(Device::Cpu).live_bytes;
    {
        let mut y = x.clone();
        for _ in 0..10 {
            y = (&y * &x)?;
        }
        // Ten saved intermediates of 4 KiB (x itself is shared, counted in the baseline).
        let held = ComputationGraph::of(&[&y]).saved_bytes();
        assert_eq!(held, 10 * 4096);
        ops::sum_all(&y)?.backward()?;
        assert_eq!(ComputationGraph::of(&[&y]).saved_bytes(), 0);
    }
    x.zero_grad();
    assert_eq!(thread_stats(Device::Cpu).live_bytes, baseline);
    Ok(())
}

#[test]
fn add_chain_keeps_memory_flat_mul_chain_keeps_what_it_must() -> Result<()> {
    crate::init();
    const N: usize = 1 << 16; // 256 KiB per f32 tensor
    let tensor_bytes = (N * 4) as isize;
    let x = Tensor::ones([N], DType::F32)?.with_requires_grad(true);
    // Fusion off: this counts stored tensors (tests/integration/fusion.rs has the
    // fused chain).
    let off = autograd::fusion::FusionConfig::OFF;
    autograd::fusion::with_config(off, || add_and_mul_chains(&x, tensor_bytes))
}

fn add_and_mul_chains(x: &Tensor, tensor_bytes: isize) -> Result<()> {
    for (op, expect_saved) in [("add", 0isize), ("mul", 20)] {
        autograd::memory::reset_thread_peak(Device::Cpu);
        let base = thread_stats(Device::Cpu).live_bytes;
        {
            let mut y = x.clone();
            for _ in 0..20 {
                y = if op == "add" { (&y + x)? } else { (&y * x)? };
            }
            ops::sum_all(&y)?.backward()?;
        }
        let peak = thread_stats(Device::Cpu).peak_bytes - base;
        // Saved intermediates plus at most two live tensors: the mul chain's
        // backward writes its gradients into the buffers it owns (the incoming
        // gradient, the saved product the user dropped), the add chain's passes its
        // gradient on. (And two scalars: the loss, its seed.)
        assert!(
            peak <= (expect_saved + 2) * tensor_bytes + 16,
            "{op} chain peak {peak} B"
        );
        assert!(
            peak >= expect_saved * tensor_bytes,
            "{op} chain peak {peak} B"
        );
        x.zero_grad();
        assert_eq!(
            thread_stats(Device::Cpu).live_bytes,
            base,
            "{op} chain leaked"
        );
    }
    Ok(())
}
