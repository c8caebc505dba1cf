//! W2 and W3 of WORKLOADS.md: the same results as the CPU at the CPU sizes, and a
//! run at the GPU sizes (W3 checked element by element against its closed form).

use crate::workloads::{W2, W3};
use autograd::prelude::*;

/// The "GPU sizes" runs: the full sizes on a GPU; on the emulated device (CI),
/// sizes the host runs in seconds (the same kernels and launch planning, fewer
/// elements).
#[cfg(not(feature = "cuda-emulator"))]
const W2_BIG: [usize; 4] = W2::GPU_SIZES;
#[cfg(feature = "cuda-emulator")]
const W2_BIG: [usize; 4] = [256, 512, 256, 128];
#[cfg(not(feature = "cuda-emulator"))]
const W3_BIG: usize = W3::GPU_SIZE;
#[cfg(feature = "cuda-emulator")]
const W3_BIG: usize = 1 << 20;

fn close(what: &str, want: &Tensor, got: &Tensor, rtol: f64, atol: f64) -> Result<()> {
    crate::compare(
        what,
        &want.to_vec::<f64>()?,
        &got.to_vec::<f64>()?,
        (rtol, atol),
    )
    .map_err(|msg| Error::InvalidArgument { op: "parity", msg })
}

/// A step returns computed values (on any device: this runs on the CPU), so that
/// `gpu_workloads` times the work and not the recording of a deferred chain.
#[test]
fn a_workload_step_returns_computed_values() -> Result<()> {
    crate::init();
    let (loss, gx) = W3::new(W3::CPU_SIZE, 3)?.to(Device::Cpu)?.step()?;
    assert!(!loss.is_deferred() && !gx.is_deferred());
    let (loss, grads) = W2::new(W2::CPU_SIZES, 2)?.to(Device::Cpu)?.step()?;
    assert!(!loss.is_deferred() && grads.iter().all(|g| !g.is_deferred()));
    Ok(())
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn w2_on_the_gpu_matches_the_cpu_at_cpu_sizes() -> Result<()> {
    let d = crate::gpu();
    let w = W2::new(W2::CPU_SIZES, 2)?;
    let (loss_c, grads_c) = w.to(Device::Cpu)?.step()?;
    let (loss_g, grads_g) = w.to(d)?.step()?;
    close("W2 loss", &loss_c, &loss_g, 1e-4, 1e-5)?;
    for (i, (c, g)) in grads_c.iter().zip(&grads_g).enumerate() {
        assert_eq!(g.device(), d);
        close(&format!("W2 grad {i}"), c, g, 1e-3, 1e-4)?;
    }
    Ok(())
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn w3_on_the_gpu_matches_the_cpu_at_cpu_sizes() -> Result<()> {
    let d = crate::gpu();
    let w = W3::new(W3::CPU_SIZE, 3)?;
    let (loss_c, gx_c) = w.to(Device::Cpu)?.step()?;
    let (loss_g, gx_g) = w.to(d)?.step()?;
    assert_eq!(gx_g.device(), d);
    close("W3 loss", &loss_c, &loss_g, 1e-4, 1e-3)?;
    close("W3 grad x", &gx_c, &gx_g, 1e-6, 1e-6)?;
    Ok(())
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn w2_runs_at_gpu_sizes() -> Result<()> {
    let d = crate::gpu();
    let (loss, grads) = W2::new(W2_BIG, 2)?.to(d)?.step()?;
    let [_, input, hidden, output] = W2_BIG;
    let loss = loss.to_scalar::<f64>()?;
    assert!(loss.is_finite() && loss > 0.0, "loss {loss}");
    for (g, dims) in grads.iter().zip([
        &[input, hidden][..],
        &[hidden],
        &[hidden, output],
        &[output],
    ]) {
        assert_eq!((g.device(), g.dims()), (d, dims));
        assert!(g.to_vec::<f32>()?.iter().all(|v| v.is_finite()));
    }
    Ok(())
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn w3_runs_at_gpu_sizes_and_its_gradient_is_2x_times_a_plus_1() -> Result<()> {
    let d = crate::gpu();
    let w = W3::new(W3_BIG, 3)?;
    let (loss, gx) = w.to(d)?.step()?;
    let (x, a) = (w.x.to_vec::<f32>()?, w.a.to_vec::<f32>()?);
    let g = gx.to_vec::<f32>()?;
    assert_eq!(g.len(), W3_BIG);
    let mut want_loss = 0.0f64;
    for i in 0..x.len() {
        let (xi, ai) = (x[i] as f64, a[i] as f64);
        want_loss += xi * xi * (ai + 1.0);
        let want = 2.0 * xi * (ai + 1.0);
        assert!(
            (g[i] as f64 - want).abs() <= 1e-6 + 1e-6 * want.abs(),
            "grad x[{i}] = {}, expected {want}",
            g[i]
        );
    }
    let got = loss.to_scalar::<f64>()?;
    assert!(
        (got - want_loss).abs() <= 1e-4 * want_loss.abs() + 1.0,
        "loss {got}, expected {want_loss}"
    );
    Ok(())
}
