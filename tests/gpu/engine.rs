//! The engine's rules on a GPU: ops run where their inputs live, mixing devices
//! is an error naming both and the op, gradients stay on the device, device memory
//! is accounted like the CPU's.

use autograd::prelude::*;
use autograd::{compute, memory, ops};

#[test]
#[ignore = "needs a CUDA GPU"]
fn mixing_devices_is_an_error_naming_both_devices_and_the_op() -> Result<()> {
    let d = crate::gpu();
    let a = Tensor::ones([2, 3], DType::F32)?;
    let b = compute::to_device(&a, d)?;
    for (op, r) in [
        ("add", &a + &b),
        ("mul", &b * &a),
        ("matmul", ops::matmul(&a, &ops::transpose(&b, -2, -1)?)),
    ] {
        let e = r.expect_err("devices differ");
        let msg = e.to_string();
        assert!(
            matches!(e.root_cause(), Error::DeviceMismatch { .. }),
            "{op}: {e:?}"
        );
        assert!(
            msg.contains(&format!("`{op}`")) && msg.contains("cpu") && msg.contains("cuda:0"),
            "{op}: {msg}"
        );
    }
    Ok(())
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn forward_and_backward_stay_on_the_device() -> Result<()> {
    let d = crate::gpu();
    let mut rng = Rng::new(5);
    let w = compute::to_device(&rng.uniform([4, 3], -1.0, 1.0, DType::F32)?, d)?
        .with_requires_grad(true);
    let x = compute::to_device(&rng.uniform([5, 4], -1.0, 1.0, DType::F32)?, d)?;
    let y = ops::relu(&ops::matmul(&x, &w)?)?;
    let loss = ops::sum_all(&ops::exp(&y)?)?;
    for t in [&y, &loss] {
        assert_eq!(t.device(), d);
    }
    // Every recorded node's output lives on the GPU.
    loss.backward()?;
    let g = w.grad().expect("gradient");
    assert_eq!(g.device(), d);
    // The same computation on the CPU gives the same gradient.
    let wc = compute::to_device(&w, Device::Cpu)?.with_requires_grad(true);
    let xc = compute::to_device(&x, Device::Cpu)?;
    ops::sum_all(&ops::exp(&ops::relu(&ops::matmul(&xc, &wc)?)?)?)?.backward()?;
    crate::compare(
        "grad w",
        &wc.grad().unwrap().to_vec::<f64>()?,
        &g.to_vec::<f64>()?,
        (1e-5, 1e-6),
    )
    .map_err(|m| Error::InvalidArgument { op: "test", msg: m })?;
    Ok(())
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gradients_cross_devices_through_to_device() -> Result<()> {
    let d = crate::gpu();
    // A CPU leaf, used on the GPU: its gradient arrives on the CPU.
    let x = Tensor::from_slice(&[1.0f64, -2.0, 3.0], [3])?.with_requires_grad(true);
    let on_gpu = x.to(d)?;
    assert_eq!(on_gpu.device(), d);
    let back = (&on_gpu * &on_gpu)?.to(Device::Cpu)?;
    ops::sum_all(&back)?.backward()?;
    let g = x.grad().unwrap();
    assert_eq!(g.device(), Device::Cpu);
    assert_eq!(g.to_vec::<f64>()?, vec![2.0, -4.0, 6.0]);
    // Second order through the transfer: d²/dx² sum(x³) = 6x, on the GPU.
    let x =
        compute::to_device(&Tensor::from_slice(&[1.0f64, 2.0], [2])?, d)?.with_requires_grad(true);
    let y = ops::sum_all(&(&(&x * &x)? * &x)?)?;
    let g = autograd::grad(&y, &[&x], BackwardOptions::default().create_graph(true))?;
    let g = g[0].clone().unwrap();
    let gg = autograd::grad(&ops::sum_all(&g)?, &[&x], BackwardOptions::default())?;
    let gg = gg[0].clone().unwrap();
    assert_eq!(gg.device(), d);
    assert_eq!(gg.to_vec::<f64>()?, vec![6.0, 12.0]);
    Ok(())
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn device_memory_is_accounted_from_allocation_to_last_drop() -> Result<()> {
    let d = crate::gpu();
    let before = memory::thread_stats(d).live_bytes;
    let host = Tensor::zeros([1024, 256], DType::F32)?;
    let x = compute::to_device(&host, d)?;
    let bytes = 1024 * 256 * 4;
    assert_eq!(memory::thread_stats(d).live_bytes, before + bytes);
    let view = compute::transpose(&x, 0, 1)?; // a view: no new buffer
    assert_eq!(memory::thread_stats(d).live_bytes, before + bytes);
    let y = compute::contiguous(&view)?; // a copy on the device
    assert_eq!(y.device(), d);
    assert_eq!(memory::thread_stats(d).live_bytes, before + 2 * bytes);
    drop((x, view));
    assert_eq!(memory::thread_stats(d).live_bytes, before + bytes);
    drop(y);
    assert_eq!(memory::thread_stats(d).live_bytes, before);
    assert!(memory::thread_stats(d).peak_bytes >= before + 2 * bytes);
    // W5's add chain on the GPU: y = x + x + ... (50 adds) keeps at most three
    // tensors alive at a time (fused: the chain is computed where it is cut, every
    // 16 adds), saving nothing for backward; and two scalars (the loss, its seed).
    let n = 1 << 20;
    let x = compute::to_device(&Tensor::ones([n], DType::F32)?, d)?.with_requires_grad(true);
    memory::reset_thread_peak(d);
    let base = memory::thread_stats(d).live_bytes;
    let mut y = x.clone();
    for _ in 0..50 {
        y = (&y + &x)?;
    }
    ops::sum_all(&y)?.backward()?;
    drop(y);
    let peak = memory::thread_stats(d).peak_bytes - base;
    assert!(
        peak <= 3 * 4 * n as isize + 16,
        "add chain peak {peak} bytes"
    );
    assert_eq!(x.grad().unwrap().to_vec::<f32>()?[..3], [51.0; 3]);
    Ok(())
}
