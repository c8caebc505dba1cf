//! Paths of the CUDA backend that only a device shows: many host threads using
//! one device at once, long f64 sums of generated ops in fused chains, a real
//! out-of-memory answered by trimming the pool and retrying, and views of more than
//! 2^32 elements through each kernel family. The last two need a real GPU's
//! memory; the first two run on the emulated device in CI too.

use crate::cases::FUSE_ALL;
use autograd::fusion::{FusionConfig, with_config};
use autograd::prelude::*;
#[cfg(not(feature = "cuda-emulator"))]
use autograd::{BinaryOp, UnaryOp, compute};

/// Eight threads at once, each launching elementwise ops, a matrix product and a
/// sum on the device, reading the results back and dropping everything, 12 times:
/// every result is the CPU's (the products within rounding), and nothing fails.
#[test]
#[ignore = "needs a CUDA GPU (or the emulated device)"]
fn many_threads_launch_read_drop_and_multiply_at_once() {
    let device = crate::gpu();
    let threads: Vec<_> = (0..8u64)
        .map(|t| {
            std::thread::spawn(move || -> Result<()> {
                for round in 0..12u64 {
                    let seed = 1000 + 100 * t + round;
                    let a = Rng::new(seed).uniform([48, 40], -1.0, 1.0, DType::F32)?;
                    let b = Rng::new(seed + 50).uniform([40, 24], -1.0, 1.0, DType::F32)?;
                    let run = |a: &Tensor, b: &Tensor| -> Result<(Vec<f64>, Vec<f64>)> {
                        let h = (&a.tanh()? * 2.0)?.exp()?;
                        let p = h.matmul(b)?;
                        let s = p.sum_all()?;
                        Ok((p.to_vec::<f64>()?, vec![s.to_scalar::<f64>()?]))
                    };
                    let want = run(&a, &b)?;
                    let got = run(&a.to(device)?, &b.to(device)?)?;
                    crate::compare("thread product", &want.0, &got.0, (1e-5, 1e-5))
                        .map_err(|msg| Error::InvalidArgument { op: "stress", msg })?;
                    crate::compare("thread sum", &want.1, &got.1, (1e-4, 1e-3))
                        .map_err(|msg| Error::InvalidArgument { op: "stress", msg })?;
                }
                Ok(())
            })
        })
        .collect();
    for (t, h) in threads.into_iter().enumerate() {
        h.join()
            .unwrap_or_else(|_| panic!("thread {t} panicked"))
            .unwrap_or_else(|e| panic!("thread {t}: {e}"));
    }
    device.synchronize().unwrap();
}

/// f64 sums over 10^6 elements of chains of generated ops (their value and
/// derivative arithmetic), fused into one kernel and run op by op: the same bits
/// (the sum sink of a fused chain must not contract its last product into the
/// accumulator), and the CPU's value within rounding.
#[test]
#[ignore = "needs a CUDA GPU (or the emulated device)"]
fn f64_fused_sums_of_generated_ops_over_a_million_elements() -> Result<()> {
    let device = crate::gpu();
    let n = 1_000_000;
    let x = Rng::new(70).uniform([n], -3.0, 3.0, DType::F64)?;
    let w = Rng::new(71).uniform([n], 0.5, 1.5, DType::F64)?;
    let loss = |x: &Tensor, w: &Tensor| -> Result<(Tensor, Tensor)> {
        let x = x.detach().with_requires_grad(true);
        let y = (&(&x.mish()? * w)? + &x.softplus()?.silu()?)?;
        let s = (&y * &x.gelu()?)?.sum_all()?;
        let g = grad(&s, &[&x], BackwardOptions::default())?
            .remove(0)
            .unwrap();
        autograd::fusion::realize_all(&[&s, &g])?;
        Ok((s, g))
    };
    let on_gpu = |config: FusionConfig| -> Result<(Vec<u64>, Vec<u64>)> {
        let (s, g) = with_config(config, || loss(&x.to(device)?, &w.to(device)?))?;
        let bits = |v: Vec<f64>| v.into_iter().map(f64::to_bits).collect::<Vec<_>>();
        Ok((bits(vec![s.to_scalar::<f64>()?]), bits(g.to_vec::<f64>()?)))
    };
    let unfused = on_gpu(FusionConfig::OFF)?;
    let fused = on_gpu(FUSE_ALL)?;
    if fused != unfused {
        let s = crate::cases::describe_difference(
            &[unfused.0.clone(), unfused.1.clone()],
            &[fused.0.clone(), fused.1.clone()],
            DType::F64,
        );
        panic!("fused and op by op differ: {s}");
    }
    let (cs, cg) = loss(&x, &w)?;
    let gs = f64::from_bits(unfused.0[0]);
    let gg: Vec<f64> = unfused.1.iter().map(|&b| f64::from_bits(b)).collect();
    crate::compare("sum", &[cs.to_scalar::<f64>()?], &[gs], (1e-10, 1e-8)).map_err(|msg| {
        Error::InvalidArgument {
            op: "f64 sums",
            msg,
        }
    })?;
    crate::compare("gradient", &cg.to_vec::<f64>()?, &gg, (1e-12, 1e-12)).map_err(|msg| {
        Error::InvalidArgument {
            op: "f64 sums",
            msg,
        }
    })?;
    Ok(())
}

/// The device filled with 1 GiB tensors until an allocation fails: the failure is
/// an error value naming the size, not a crash. With everything dropped (the pool
/// keeps the memory), one tensor of most of it is allocated: the pool is trimmed
/// and the allocation retried.
#[cfg(not(feature = "cuda-emulator"))]
#[test]
#[ignore = "needs a CUDA GPU"]
fn out_of_memory_is_an_error_and_the_pool_is_trimmed_for_the_next() -> Result<()> {
    let device = crate::gpu();
    let chunk = 1usize << 28; // f32 elements: 1 GiB
    let one = Tensor::scalar(1.0f32).to(device)?;
    let mut held = Vec::new();
    let err = loop {
        match compute::broadcast_to(&one, [chunk]).and_then(|v| compute::contiguous(&v)) {
            Ok(t) => held.push(t),
            Err(e) => break e,
        }
        assert!(held.len() < 4096, "no allocation failed");
    };
    let filled = held.len();
    eprintln!("allocation {} of 1 GiB failed: {err}", filled + 1);
    assert!(filled > 1, "only {filled} GiB could be allocated");
    assert!(err.to_string().contains("cuda:0"), "{err}");
    drop(held);
    // Most of what was held, as one tensor of a new size.
    let n = (filled - 1) * chunk + 7;
    let big = compute::contiguous(&compute::broadcast_to(&one, [n])?)?;
    // An f32 sum: the exact count rounded once to f32 (past 2^24, f32 steps by
    // more than 1; on an H200 the count is about 3.7e10, where the step is 4,096).
    assert_eq!(big.sum_all()?.to_scalar::<f64>()?, n as f32 as f64);
    Ok(())
}

/// A view of 65,537 × 65,536 f64 elements (more than 2^32; one row of memory)
/// through each kernel family: a sum, a unary and a binary kernel writing 32 GiB
/// results, and a fused chain. Every index past 2^32 must be computed in 64 bits.
#[cfg(not(feature = "cuda-emulator"))]
#[test]
#[ignore = "needs a CUDA GPU with 80 GB of memory"]
fn a_view_of_more_than_2_pow_32_elements_through_each_kernel_family() -> Result<()> {
    let device = crate::gpu();
    let rows = 65_537usize;
    let cols = 65_536usize;
    let col: Vec<f64> = (0..rows).map(|k| (k % 7) as f64).collect();
    let a = Tensor::from_vec(col.clone(), [rows, 1])?.to(device)?;
    let view = compute::broadcast_to(&a, [rows, cols])?;
    assert!(view.numel() > 1 << 32);
    let expected: f64 = col.iter().sum::<f64>() * cols as f64;
    assert_eq!(view.sum_all()?.to_scalar::<f64>()?, expected, "reduce");
    let neg = compute::unary(&view, UnaryOp::Neg)?;
    assert_eq!(neg.sum_all()?.to_scalar::<f64>()?, -expected, "unary");
    drop(neg);
    let twice = compute::binary(&view, &view, BinaryOp::Add)?;
    assert_eq!(
        twice.sum_all()?.to_scalar::<f64>()?,
        2.0 * expected,
        "binary"
    );
    drop(twice);
    let fused = with_config(FUSE_ALL, || ((&view * 2.0)? + 1.0)?.sum_all())?;
    assert_eq!(
        fused.to_scalar::<f64>()?,
        2.0 * expected + (rows * cols) as f64,
        "fused"
    );
    Ok(())
}
