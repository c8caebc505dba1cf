//! Fused chains on the GPU: one generated kernel per chain gives the same bits as
//! the ops' own kernels, for every registered op's check cases (values and
//! gradients, f32 and f64), and a long chain is cut into kernels that fit.

use autograd::fusion::{Fusion, FusionConfig, with_config};
use autograd::prelude::*;
use autograd::{BackwardOptions, CheckCase, compute};

use crate::cases::{FUSE_ALL as ALWAYS, bits, case_inputs, same_bits_fused_and_not};

/// Output and gradients of `case` on the GPU, as bits.
fn bits_on_gpu(case: &CheckCase, dtype: DType) -> Result<Vec<Vec<u64>>> {
    let device = crate::gpu();
    let xs = case_inputs(case, dtype, device)?;
    let y = (case.run)(&xs)?;
    let wrt: Vec<&Tensor> = xs.iter().filter(|x| x.requires_grad()).collect();
    let mut out = vec![bits(y.to_vec::<f64>()?)];
    if y.requires_grad() {
        let seed = y.ones_like()?;
        for g in grad(&y, &wrt, BackwardOptions::default().seed(seed))?
            .into_iter()
            .flatten()
        {
            assert_eq!(
                g.device(),
                device,
                "{}: a gradient left the GPU",
                case.label
            );
            out.push(bits(g.to_vec::<f64>()?));
        }
    }
    Ok(out)
}

#[test]
#[ignore = "needs a CUDA GPU (or the emulated device)"]
fn every_registered_op_gives_the_same_bits_fused_on_the_gpu() {
    crate::init();
    let compared = same_bits_fused_and_not(&[DType::F32, DType::F64], bits_on_gpu);
    assert!(compared > 100, "only {compared} cases compared");
}

#[test]
#[ignore = "needs a CUDA GPU (or the emulated device)"]
fn a_chain_of_many_buffers_and_scalars_runs_in_kernels_that_fit() -> Result<()> {
    let device = crate::gpu();
    let xs: Vec<Tensor> = (0..12)
        .map(|k| {
            let t = Rng::new(40 + k).uniform([3000], -1.0, 1.0, DType::F32)?;
            compute::to_device(&t, device)
        })
        .collect::<Result<_>>()?;
    // Twelve buffers and twelve scalars, a generated op in the middle: more than
    // one fused CUDA kernel takes.
    let run = || -> Result<Tensor> {
        let mut y = xs[0].clone();
        for (k, x) in xs.iter().enumerate().skip(1) {
            y = ((&y * (k as f64 * 0.25))? + x)?;
            if k == 6 {
                y = y.tanh()?;
            }
        }
        Ok(y)
    };
    let want = with_config(FusionConfig::OFF, || run()?.to_vec::<f32>())?;
    let y = with_config(ALWAYS, run)?;
    assert!(y.is_deferred());
    assert_eq!(y.to_vec::<f32>()?, want);
    // A recorded chain shows its kernel.
    let x = compute::to_device(
        &Rng::new(50).uniform([3000], -1.0, 1.0, DType::F64)?,
        device,
    )?
    .with_requires_grad(true);
    let z = with_config(ALWAYS, || ((&x * &x)? + 1.0)?.exp())?;
    z.realize()?;
    assert!(matches!(
        z.grad_fn().unwrap().fusion(),
        Some(Fusion::Kernel(_))
    ));
    Ok(())
}

#[test]
#[ignore = "needs a CUDA GPU (or the emulated device)"]
fn a_bias_row_is_read_in_place_by_index_modulo_its_length() -> Result<()> {
    let device = crate::gpu();
    let on_gpu = |t: Tensor| compute::to_device(&t, device);
    let x = on_gpu(Rng::new(60).uniform([48, 256], -1.0, 1.0, DType::F32)?)?;
    let b = on_gpu(Rng::new(61).uniform([256], -1.0, 1.0, DType::F32)?)?;
    let c = on_gpu(Rng::new(62).uniform([3, 1, 4], -1.0, 1.0, DType::F32)?)?;
    let y = on_gpu(Rng::new(63).uniform([5, 3, 2, 4], -1.0, 1.0, DType::F32)?)?;
    // A row over a batch (period 256), and a [3, 1, 4] view stretched on its middle
    // axis (no period: copied first).
    let run =
        || -> Result<(Tensor, Tensor)> { Ok((((&x + &b)? * 2.0)?.tanh()?, ((&y * &c)? - 1.0)?)) };
    let want = with_config(FusionConfig::OFF, || -> Result<_> {
        let (p, q) = run()?;
        Ok((p.to_vec::<f32>()?, q.to_vec::<f32>()?))
    })?;
    let (p, q) = with_config(ALWAYS, run)?;
    #[cfg(feature = "cuda")]
    {
        let (_, source) = autograd::fusion::cuda_kernel(&p).expect("deferred")?;
        assert!(source.contains("% 256ull"), "{source}");
    }
    assert_eq!((p.to_vec::<f32>()?, q.to_vec::<f32>()?), want);
    Ok(())
}
