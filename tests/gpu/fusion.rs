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

/// The gradients backward leaves over the same elements run as one kernel with a
/// result each: whichever is read first computes the others, in the kernel that
/// computes them all, with the bits of fusion off.
#[test]
#[ignore = "needs a CUDA GPU (or the emulated device)"]
fn the_gradients_backward_leaves_run_as_one_kernel_with_several_results() -> Result<()> {
    let device = crate::gpu();
    let on_gpu = |seed: u64| -> Result<Tensor> {
        let t = Rng::new(seed).uniform([3000], -1.0, 1.0, DType::F32)?;
        compute::to_device(&t, device)
    };
    let (x, w, a) = (
        on_gpu(70)?.with_requires_grad(true),
        on_gpu(71)?.with_requires_grad(true),
        on_gpu(72)?,
    );
    let step = |read_x_first: bool| -> Result<[Tensor; 2]> {
        x.zero_grad();
        w.zero_grad();
        let loss = ((&x * &w)? + &a)?.tanh()?.sum_all()?;
        loss.backward_with(BackwardOptions::default().create_graph(true))?;
        let (gx, gw) = (x.grad().expect("grad x"), w.grad().expect("grad w"));
        if autograd::fusion::config().enabled {
            assert!(gx.is_deferred() && gw.is_deferred());
            let (first, second) = if read_x_first { (&gx, &gw) } else { (&gw, &gx) };
            first.realize()?;
            assert!(
                !second.is_deferred(),
                "reading one gradient computed the other"
            );
        }
        Ok([gx, gw])
    };
    let words = |g: &[Tensor; 2]| -> Result<Vec<Vec<u64>>> {
        g.iter().map(|t| Ok(bits(t.to_vec::<f64>()?))).collect()
    };
    let want = words(&with_config(FusionConfig::OFF, || step(true))?)?;
    for read_x_first in [true, false] {
        let [gx, gw] = with_config(ALWAYS, || step(read_x_first))?;
        assert_eq!(words(&[gx.clone(), gw.clone()])?, want);
        assert_eq!(gx.device(), device);
        let kernel = |t: &Tensor| t.grad_fn().and_then(|n| n.fusion());
        assert!(
            matches!(kernel(&gx), Some(Fusion::Kernel(_))),
            "{:?}",
            kernel(&gx)
        );
        assert_eq!(kernel(&gx), kernel(&gw));
    }
    Ok(())
}

/// More chains than one kernel writes results for are realized together in
/// kernels that fit (halves of the group), each with the bits of fusion off.
#[test]
#[ignore = "needs a CUDA GPU (or the emulated device)"]
fn more_results_than_a_kernel_takes_run_in_kernels_that_fit() -> Result<()> {
    let device = crate::gpu();
    let x = compute::to_device(
        &Rng::new(73).uniform([2500], -1.0, 1.0, DType::F64)?,
        device,
    )?
    .with_requires_grad(true);
    // Nine chains of fixed ops (one scalar each): a kernel writes at most four
    // results (`autograd_kernels::cuda::fused::MAX_RESULTS`).
    let n = 9;
    let run = || -> Result<Vec<Tensor>> {
        (0..n)
            .map(|k| ((&x * (k as f64 + 0.5))? - &x)? * &x)
            .collect()
    };
    let want: Vec<Vec<u64>> = with_config(FusionConfig::OFF, || -> Result<_> {
        run()?
            .iter()
            .map(|t| Ok(bits(t.to_vec::<f64>()?)))
            .collect()
    })?;
    let ys = with_config(ALWAYS, run)?;
    let refs: Vec<&Tensor> = ys.iter().collect();
    autograd::fusion::realize_all(&refs)?;
    let mut kernels = Vec::new();
    for (y, want) in ys.iter().zip(&want) {
        assert!(!y.is_deferred());
        assert_eq!(&bits(y.to_vec::<f64>()?), want);
        match y.grad_fn().and_then(|n| n.fusion()) {
            Some(Fusion::Kernel(k)) => kernels.push(k),
            other => panic!("{other:?}"),
        }
    }
    kernels.dedup();
    // Nine results in halves: 4 + (2 + 3), three kernels of at most four results.
    assert_eq!(kernels.len(), 3, "{kernels:?}");
    Ok(())
}

/// A loss summed over a deferred chain is deferred on the GPU too, and after
/// backward the first read of the loss or the gradient computes both in one
/// kernel: the chain's values summed in the order the sum reduction adds them
/// (the same bits, over one block and split over several), and the gradient
/// stored.
#[test]
#[ignore = "needs a CUDA GPU (or the emulated device)"]
fn a_loss_and_its_gradient_run_as_one_kernel_on_the_gpu() -> Result<()> {
    let device = crate::gpu();
    for (n, dtype) in [(3000, DType::F32), (20000, DType::F32), (20000, DType::F64)] {
        let on_gpu = |seed: u64| -> Result<Tensor> {
            compute::to_device(&Rng::new(seed).uniform([n], -1.0, 1.0, dtype)?, device)
        };
        let (x, a) = (on_gpu(80)?.with_requires_grad(true), on_gpu(81)?);
        let step = |read_loss_first: bool| -> Result<(Tensor, Tensor, Tensor)> {
            x.zero_grad();
            let y = ((&x * &a + &x)? * &x)?;
            let loss = y.sum_all()?;
            loss.backward_with(BackwardOptions::default().create_graph(true))?;
            let gx = x.grad().expect("grad x");
            if autograd::fusion::config().enabled {
                assert!(
                    loss.is_deferred() && gx.is_deferred(),
                    "{} {}",
                    loss.is_deferred(),
                    gx.is_deferred()
                );
                let (first, second) = if read_loss_first {
                    (&loss, &gx)
                } else {
                    (&gx, &loss)
                };
                first.realize()?;
                assert!(!second.is_deferred(), "reading one computed the other");
            }
            Ok((loss, gx, y))
        };
        let words = |(loss, gx, _): &(Tensor, Tensor, Tensor)| -> Result<Vec<Vec<u64>>> {
            Ok(vec![bits(loss.to_vec::<f64>()?), bits(gx.to_vec::<f64>()?)])
        };
        let want = words(&with_config(FusionConfig::OFF, || step(true))?)?;
        for read_loss_first in [true, false] {
            let got = with_config(ALWAYS, || step(read_loss_first))?;
            assert_eq!(words(&got)?, want, "{n} {dtype}");
            let (loss, gx, y) = &got;
            assert_eq!(loss.device(), device);
            // The product the loss sums and the gradient: one kernel.
            let kernel = |t: &Tensor| t.grad_fn().and_then(|n| n.fusion());
            assert!(
                matches!(kernel(gx), Some(Fusion::Kernel(_))),
                "{:?}",
                kernel(gx)
            );
            assert_eq!(kernel(gx), kernel(y));
        }
    }
    #[cfg(feature = "cuda")]
    {
        let x = compute::to_device(&Rng::new(82).uniform([64], -1.0, 1.0, DType::F32)?, device)?;
        let loss = with_config(ALWAYS, || ((&x * &x)? + 1.0)?.sum_all())?;
        let (_, source) = autograd::fusion::cuda_kernel(&loss).expect("deferred")?;
        assert!(source.contains("block_reduce<ReduceSum<T> >"), "{source}");
    }
    Ok(())
}
