//! Fused elementwise chains: deferred arithmetic gives the same bits as the ops run
//! one by one (every registered op, values and gradients, first and second order),
//! stays eager in what a program can observe, and is explained in the graph.

use autograd::fusion::{Fusion, FusionConfig, MAX_DEPTH, with_config};
use autograd::prelude::*;
use autograd::{BackwardOptions, CheckCase, ComputationGraph, memory, ops};

use crate::cases::{FUSE_ALL as ALWAYS, bits, case_inputs, same_bits_fused_and_not};

/// Output and gradients of a check case in `dtype`, as bits, the gradients
/// computed with `create_graph` when `second` is set and then differentiated once
/// more (the sum of the first gradients). With `together`, all are computed at
/// once (`fusion::realize_all`: the output and its gradients in one pass, a
/// generated op's value and derivative in one loop) before any is read.
fn bits_of(case: &CheckCase, dtype: DType, second: bool, together: bool) -> Result<Vec<Vec<u64>>> {
    let xs = case_inputs(case, dtype, Device::Cpu)?;
    let y = (case.run)(&xs)?;
    let wrt: Vec<&Tensor> = xs.iter().filter(|x| x.requires_grad()).collect();
    let opts = BackwardOptions::default()
        .seed(y.ones_like()?)
        .create_graph(second);
    let mut all = vec![y.clone()];
    all.extend(grad(&y, &wrt, opts)?.into_iter().flatten());
    if second {
        let mut total: Option<Tensor> = None;
        for g in all[1..].iter().filter(|g| g.requires_grad()) {
            let s = ops::sum_all(g)?;
            total = Some(match total {
                Some(t) => (t + &s)?,
                None => s,
            });
        }
        if let Some(t) = total {
            let seconds = grad(&t, &wrt, BackwardOptions::default().allow_unused(true))?;
            all.extend(seconds.into_iter().flatten());
        }
    }
    if together {
        // (The gradients first with `second`: the pass is planned in that order.)
        let mut order: Vec<&Tensor> = all.iter().collect();
        if second {
            order.reverse();
        }
        autograd::fusion::realize_all(&order)?;
    }
    all.iter().map(|t| Ok(bits(t.to_vec::<f64>()?))).collect()
}

#[test]
fn every_registered_op_gives_the_same_bits_fused_and_one_by_one() {
    crate::init();
    // Halves too: their fused chains round every step as the ops one by one.
    let dtypes = [DType::F32, DType::F64, DType::F16, DType::BF16];
    let mut compared = 0;
    for (second, together) in [(false, false), (true, false), (false, true), (true, true)] {
        compared += same_bits_fused_and_not(&dtypes, |case, dtype| {
            bits_of(case, dtype, second, together)
        });
    }
    assert!(compared > 800, "only {compared} cases compared");
}

/// `n` f32 values uniform in [-1, 1), from `seed`.
fn uniform(seed: u64, n: usize) -> Result<Tensor> {
    autograd::random::Rng::new(seed).uniform([n], -1.0, 1.0, DType::F32)
}

fn big(seed: u64) -> Result<Tensor> {
    uniform(seed, 1 << 14)
}

#[test]
fn a_deferred_op_is_eager_in_all_but_the_moment_its_arithmetic_runs() -> Result<()> {
    crate::init();
    with_config(ALWAYS, || {
        let (x, a) = (big(1)?, big(2)?);
        let before = memory::thread_stats(Device::Cpu).live_bytes;
        let y = ((&x * &a)? + &x)?;
        // Shape, dtype and device at once; no buffer yet.
        assert!(y.is_deferred());
        assert_eq!((y.dims(), y.dtype()), (&[1 << 14][..], DType::F32));
        assert_eq!(memory::thread_stats(Device::Cpu).live_bytes, before);
        // Errors at the call that causes them.
        {
            let short = Tensor::zeros([3], DType::F32)?;
            assert!(matches!(&y * &short, Err(Error::Broadcast { .. })));
            // Another dtype is no error: the sum is in the wider one (promotion).
            let wide = Tensor::zeros([1 << 14], DType::F64)?;
            let mixed = (&y + &wide)?;
            assert_eq!(mixed.dtype(), DType::F64);
            assert_eq!(mixed.to_vec::<f32>()?, y.to_vec::<f32>()?);
        }
        // Values whenever read, the same as computed at once.
        let want = with_config(FusionConfig::OFF, || ((&x * &a)? + &x)?.to_vec::<f32>())?;
        assert_eq!(y.to_vec::<f32>()?, want);
        assert!(!y.is_deferred());
        assert_eq!(
            memory::thread_stats(Device::Cpu).live_bytes,
            before + 4 * (1 << 14)
        );
        Ok(())
    })
}

#[test]
fn a_sum_of_a_chain_stores_nothing_and_adds_as_the_reduction_does() -> Result<()> {
    crate::init();
    let (x, a) = (big(3)?, big(4)?);
    let chain = || ((&x * &a)? * &x)?.tanh();
    let unfused = with_config(FusionConfig::OFF, || {
        ops::sum_all(&chain()?)?.to_vec::<f32>()
    })?;
    with_config(ALWAYS, || {
        let y = chain()?;
        let before = memory::thread_stats(Device::Cpu);
        let s = ops::sum_all(&y)?;
        // The sum is deferred too: nothing allocated until it is read.
        assert!(s.is_deferred());
        assert_eq!(
            memory::thread_stats(Device::Cpu).live_bytes,
            before.live_bytes
        );
        assert_eq!(s.to_vec::<f32>()?, unfused);
        // Reading it ran the chain with the sum at its end: one element stored.
        assert!(y.is_deferred(), "the sum computed its input");
        let after = memory::thread_stats(Device::Cpu);
        assert_eq!(after.live_bytes - before.live_bytes, 4);
        // A loss nobody reads is never computed: backward needs only its shape.
        let xg = x.detach().with_requires_grad(true);
        let loss = ops::sum_all(&((&xg * &a)? * &xg)?)?;
        loss.backward()?;
        assert!(loss.is_deferred());
        assert_eq!(loss.to_vec::<f32>()?.len(), 1);
        Ok(())
    })
}

#[test]
fn a_buffer_read_by_a_deferred_op_is_never_written_in_place() -> Result<()> {
    crate::init();
    with_config(ALWAYS, || {
        // `a` has one handle, but the deferred `y` reads its buffer: `a + 1` with `a`
        // owned must not write into it.
        let a = big(5)?;
        let copy = a.to_vec::<f32>()?;
        let y = (&a * 2.0)?;
        let one = a.ones_like()?;
        let b = (a + &one)?;
        let plus: Vec<f32> = copy.iter().map(|v| v + 1.0).collect();
        assert_eq!(b.to_vec::<f32>()?, plus);
        let want: Vec<f32> = copy.iter().map(|v| v * 2.0).collect();
        assert_eq!(y.to_vec::<f32>()?, want);
        // A parameter updated by `set_data` with a value computed from itself.
        let mut p = big(6)?.with_requires_grad(true);
        let old = p.to_vec::<f32>()?;
        let later = (&p * 3.0)?; // deferred, reads p's buffer
        let new = no_grad(|| &p - 1.0)?;
        p.set_data(&new)?;
        let tripled: Vec<f32> = old.iter().map(|v| v * 3.0).collect();
        assert_eq!(later.to_vec::<f32>()?, tripled);
        let moved: Vec<f32> = old.iter().map(|v| v - 1.0).collect();
        assert_eq!(p.to_vec::<f32>()?, moved);
        Ok(())
    })
}

#[test]
fn long_chains_are_cut_and_deferred_values_cross_threads() -> Result<()> {
    crate::init();
    let x = big(7)?;
    let run = || -> Result<Tensor> {
        let mut y = x.clone();
        for _ in 0..(3 * MAX_DEPTH) {
            y = ((&y * 0.5)? + &x)?;
        }
        Ok(y)
    };
    let want = with_config(FusionConfig::OFF, || run()?.to_vec::<f32>())?;
    let y = with_config(ALWAYS, run)?;
    assert!(y.is_deferred());
    let got = std::thread::spawn(move || y.to_vec::<f32>())
        .join()
        .expect("thread")?;
    assert_eq!(got, want);
    Ok(())
}

#[test]
fn the_graph_shows_which_ops_ran_in_which_kernel() -> Result<()> {
    crate::init();
    with_config(ALWAYS, || {
        let x = big(8)?.with_requires_grad(true);
        let a = big(9)?;
        let t = (&x * &a)?;
        let y = (&t + &x)?;
        let z = y.matmul(&Tensor::ones([1 << 14, 1], DType::F32)?)?; // reads y
        let (nt, ny) = (t.grad_fn().unwrap(), y.grad_fn().unwrap());
        // `z` read `y`, which ran with `t` in one kernel; `t` itself was never stored.
        let (Some(Fusion::Kernel(k1)), Some(Fusion::Kernel(k2))) = (nt.fusion(), ny.fusion())
        else {
            panic!("{:?} {:?}", nt.fusion(), ny.fusion());
        };
        assert_eq!(k1, k2);
        assert!(t.is_deferred());
        assert_eq!(z.grad_fn().unwrap().fusion(), None);
        let w = (&y * 2.0)?;
        assert_eq!(w.grad_fn().unwrap().fusion(), Some(Fusion::Deferred));
        let dot = ComputationGraph::of(&[&z, &w]).to_dot();
        assert!(dot.contains(&format!("fused: kernel {k1}")), "{dot}");
        assert!(dot.contains("deferred"), "{dot}");
        // Off, nothing is deferred and the picture says nothing of kernels.
        let plain = with_config(FusionConfig::OFF, || &x * &a)?;
        assert!(!plain.is_deferred());
        assert_eq!(plain.grad_fn().unwrap().fusion(), None);
        Ok(())
    })
}

#[test]
fn w3_gradient_is_one_deferred_chain_with_the_bits_of_the_ops_one_by_one() -> Result<()> {
    crate::init();
    let x = uniform(10, 1 << 16)?.with_requires_grad(true);
    let a = uniform(11, 1 << 16)?;
    let step = || -> Result<Vec<f32>> {
        x.zero_grad();
        let y = ((&x * &a + &x)? * &x)?;
        ops::sum_all(&y)?.backward()?;
        let g = x.grad().expect("gradient");
        // Before it is read, the whole gradient is one deferred chain.
        assert_eq!(g.is_deferred(), autograd::fusion::config().enabled);
        g.to_vec::<f32>()
    };
    let off = with_config(FusionConfig::OFF, step)?;
    let on = with_config(ALWAYS, step)?;
    assert_eq!(off, on);
    Ok(())
}

#[test]
fn a_loss_and_its_gradients_realized_together_run_in_one_kernel() -> Result<()> {
    crate::init();
    let x = uniform(12, 1 << 16)?.with_requires_grad(true);
    let a = uniform(13, 1 << 16)?;
    let b = uniform(14, 1 << 8)?.with_requires_grad(true);
    // The loss (reading two sums), the gradients of x (a chain over x and a, as
    // long as the loss's first sum) and of b (256 elements), and `t`, which the
    // loss reads and backward saved.
    let step = |together: bool| -> Result<[Tensor; 5]> {
        x.zero_grad();
        b.zero_grad();
        let t = (&x * &a + &x)?;
        let y = (&t * &x)?;
        let sum = ops::sum_all(&y)?;
        let loss = (&sum + ops::sum_all(&b.tanh()?)?)?;
        loss.backward_with(autograd::BackwardOptions::default().create_graph(true))?;
        let (gx, gb) = (x.grad().expect("grad x"), b.grad().expect("grad b"));
        if together {
            assert!(gx.is_deferred() && sum.is_deferred());
            autograd::fusion::realize_all(&[&loss, &gx, &t, &gb, &a])?;
            for v in [&loss, &gx, &t, &gb, &sum] {
                assert!(!v.is_deferred());
            }
        }
        Ok([loss, gx, t, gb, sum])
    };
    let words = |v: &[Tensor; 5]| -> Result<Vec<Vec<u64>>> {
        v.iter().map(|t| Ok(bits(t.to_vec::<f64>()?))).collect()
    };
    let alone = words(&with_config(FusionConfig::OFF, || step(false))?)?;
    let fused = with_config(ALWAYS, || step(true))?;
    assert_eq!(words(&fused)?, alone);
    // One kernel computed the product the loss sums, the sum, `t`, and the gradient
    // of x.
    let [_, gx, t, _, sum] = &fused;
    let kernel = |t: &Tensor| t.grad_fn().and_then(|n| n.fusion());
    let Some(Fusion::Kernel(k)) = kernel(gx) else {
        panic!("grad x: {:?}", kernel(gx));
    };
    assert_eq!(kernel(t), Some(Fusion::Kernel(k)));
    assert_eq!(kernel(sum), Some(Fusion::Kernel(k)));
    Ok(())
}

#[test]
fn after_backward_the_first_read_of_the_loss_or_a_gradient_computes_them_all() -> Result<()> {
    crate::init();
    let x = uniform(15, 1 << 16)?.with_requires_grad(true);
    let a = uniform(16, 1 << 16)?;
    let step = |read_loss_first: bool| -> Result<(Vec<f32>, Vec<f32>)> {
        x.zero_grad();
        let y = ((&x * &a + &x)? * &x)?;
        let loss = ops::sum_all(&y)?;
        loss.backward_with(BackwardOptions::default().create_graph(true))?;
        let gx = x.grad().expect("grad x");
        let fused = autograd::fusion::config().enabled;
        assert_eq!((loss.is_deferred(), gx.is_deferred()), (fused, fused));
        let (first, second) = if read_loss_first {
            (&loss, &gx)
        } else {
            (&gx, &loss)
        };
        first.realize()?;
        // One read computed both, in one kernel (with the product the loss sums).
        assert!(!second.is_deferred());
        if fused {
            let kernel = |t: &Tensor| t.grad_fn().and_then(|n| n.fusion());
            assert!(matches!(kernel(&gx), Some(Fusion::Kernel(_))));
            assert_eq!(kernel(&gx), kernel(&y));
        }
        Ok((loss.to_vec::<f32>()?, gx.to_vec::<f32>()?))
    };
    let alone = with_config(FusionConfig::OFF, || step(true))?;
    assert_eq!(with_config(ALWAYS, || step(true))?, alone);
    assert_eq!(with_config(ALWAYS, || step(false))?, alone);
    // A loss dropped before the gradient is read: the gradient alone.
    let g = with_config(ALWAYS, || -> Result<Vec<f32>> {
        x.zero_grad();
        ops::sum_all(&((&x * &a + &x)? * &x)?)?.backward()?;
        x.grad().expect("grad x").to_vec::<f32>()
    })?;
    assert_eq!(g, alone.1);
    Ok(())
}

#[test]
fn the_w5_mul_chain_holds_recipes_not_products() -> Result<()> {
    crate::init();
    const N: usize = 1 << 16;
    const T: isize = (N * 4) as isize;
    let x = uniform(12, N)?.with_requires_grad(true);
    let chain = || -> Result<(isize, Vec<f32>)> {
        x.zero_grad();
        memory::reset_thread_peak(Device::Cpu);
        let base = memory::thread_stats(Device::Cpu).live_bytes;
        let mut y = x.clone();
        for _ in 0..50 {
            y = (&y * &x)?;
        }
        ops::sum_all(&y)?.backward()?;
        drop(y);
        let g = x.grad().expect("gradient").to_vec::<f32>()?;
        Ok((memory::thread_stats(Device::Cpu).peak_bytes - base, g))
    };
    let (plain, g_plain) = with_config(FusionConfig::OFF, chain)?;
    let (fused, g_fused) = with_config(ALWAYS, chain)?;
    assert!(plain >= 50 * T, "unfused peak {} tensors", plain / T);
    // Fused: a product is computed where the chain is cut (every MAX_DEPTH ops) and
    // where backward reads it, and dropped again.
    assert!(fused <= 8 * T + 16, "fused peak {} tensors", fused / T);
    assert_eq!(g_plain, g_fused);
    Ok(())
}

/// The CUDA kernels fused chains run as compile with NVRTC (for the H200's `sm_90`,
/// and to PTX, where the kernel is found by name): a forward chain of fixed and
/// generated ops, and a gradient chain of their derivatives. Needs the NVRTC
/// library, not a GPU: skipped loudly without it, a failure with
/// `AUTOGRAD_REQUIRE_NVRTC=1` (CI).
#[cfg(feature = "cuda")]
#[test]
fn fused_cuda_kernels_compile_with_nvrtc() -> Result<()> {
    use autograd_kernels::cuda::compile::{Output, compile_source};
    crate::init();
    let (x, a) = (big(20)?.with_requires_grad(true), big(21)?);
    let (y, g) = with_config(ALWAYS, || -> Result<(Tensor, Tensor)> {
        let t = ((&x * &a)? - 0.5)?;
        let y = (((t.tanh()? * &a)? + x.exp()?)? / 3.0)?;
        let y = (-(y.pow_scalar(3.0)? + x.sigmoid()?)?)?;
        let g = grad(&y.sum_all()?, &[&x], BackwardOptions::default())?
            .remove(0)
            .expect("gradient");
        Ok((y, g))
    })?;
    // And kernels with three results (a loss's chain and two gradients, as
    // `fusion::realize_all` runs them on a GPU), one a step later steps read, and
    // one a sum over one block or split into chunks (double partial sums).
    let many = |wide: bool| {
        use autograd_kernels::BinaryOp;
        use autograd_kernels::program::{FusedOp, Operand, Sink, Step};
        let step = |op: BinaryOp, a: Operand, b: Operand| Step {
            op: FusedOp::Binary(op),
            args: [a, b].into_iter().collect(),
        };
        let (l0, l1) = (Operand::Leaf(0), Operand::Leaf(1));
        let steps = [
            step(BinaryOp::Mul, l0, l1),
            step(BinaryOp::Add, Operand::Step(0), l0),
            step(BinaryOp::Mul, Operand::Step(1), l1),
        ];
        let dense = autograd_kernels::Layout::contiguous(Shape::from([64]));
        let (_, name, source) = autograd_kernels::cuda::fused::kernel_source_wide(
            &steps,
            &[&dense, &dense],
            DType::F32,
            &[(2, Sink::Store), (0, Sink::Sum), (1, Sink::Store)],
            wide,
        );
        (name, source)
    };
    let (one, split) = (many(false), many(true));
    assert!(one.1.contains("out2[i] = v1;"), "{}", one.1);
    assert!(split.1.contains("double* __restrict__ out1"), "{}", split.1);
    let loss = with_config(ALWAYS, || y.sum_all())?;
    let kernels = [
        autograd::fusion::cuda_kernel(&y).expect("y is deferred")?,
        autograd::fusion::cuda_kernel(&g).expect("the gradient is deferred")?,
        autograd::fusion::cuda_kernel(&loss).expect("the sum is deferred")?,
        one,
        split,
    ];
    assert!(kernels[0].1.contains("tanh_at<T>("), "{}", kernels[0].1);
    if !crate::nvrtc_or_skip("the fused CUDA kernels") {
        return Ok(());
    }
    for (name, source) in kernels {
        let file = format!("{name}.cu");
        compile_source(&file, &source, "sm_90", Output::Cubin).unwrap_or_else(|e| panic!("{e}"));
        let ptx = compile_source(&file, &source, "compute_90", Output::Ptx)
            .unwrap_or_else(|e| panic!("{e}"));
        let ptx = String::from_utf8_lossy(&ptx);
        assert!(
            ptx.contains(&format!(".entry {name}(")),
            "{file}: no entry `{name}`"
        );
    }
    Ok(())
}

/// A fused kernel embeds of the prelude and of each generated op's program only its
/// dtype and the derivative orders its steps evaluate: an f32 gradient chain of
/// first-order steps holds no f64 function or entry point and no second- or
/// third-order code, a value chain no dual numbers; the op's own program keeps all.
/// Each compiles with NVRTC.
#[cfg(feature = "cuda")]
#[test]
fn fused_cuda_kernels_embed_only_their_dtype_and_orders() -> Result<()> {
    use autograd_kernels::cuda::compile::{Output, compile_source};
    crate::init();
    let kernels = |dtype: DType| -> Result<[(String, String); 2]> {
        let uniform = |seed| autograd::random::Rng::new(seed).uniform([1 << 14], -1.0, 1.0, dtype);
        let (x, a) = (uniform(30)?.with_requires_grad(true), uniform(31)?);
        let (y, g) = with_config(ALWAYS, || -> Result<(Tensor, Tensor)> {
            let y = ((x.mish()? * &a)?.tanh()? * &x)?;
            let g = grad(&y.sum_all()?, &[&x], BackwardOptions::default())?
                .remove(0)
                .expect("gradient");
            Ok((y, g))
        })?;
        Ok([
            autograd::fusion::cuda_kernel(&y).expect("y is deferred")?,
            autograd::fusion::cuda_kernel(&g).expect("the gradient is deferred")?,
        ])
    };
    let [value, gradient] = kernels(DType::F32)?;
    for (name, source) in [&value, &gradient] {
        assert!(name.ends_with("_f32"), "{name}");
        // No guard is left either: the kernel's text is all it compiles.
        assert!(!source.lines().any(|l| l.starts_with("#if")), "{source}");
        for f64_text in ["double ew_", "double fz_", "_f64(", "__dmul_rn"] {
            assert!(
                !source.contains(f64_text),
                "{f64_text} in {name}:\n{source}"
            );
        }
        assert!(source.contains("float ew_mul("), "{source}");
        assert!(source.contains("mish_at<T>("));
    }
    // The value chain evaluates order 0 alone: no dual numbers.
    assert!(!value.1.contains("Dual<"), "{}", value.1);
    assert!(!value.1.contains("case 1:"), "{}", value.1);
    // The gradient chain evaluates first derivatives: no higher order.
    let (_, source) = &gradient;
    assert!(
        source.contains("case 1:") && source.contains("ew_seed1"),
        "{source}"
    );
    for second in ["case 2:", "case 3:", "ew_seed2", "ew_seed3", "Dual<Dual<"] {
        assert!(!source.contains(second), "{second} in:\n{source}");
    }
    // The f64 twin holds the double functions alone.
    let [_, gradient64] = kernels(DType::F64)?;
    assert!(gradient64.0.ends_with("_f64"));
    assert!(gradient64.1.contains("double ew_mul(") && !gradient64.1.contains("float ew_"));
    // The op's own program (compiled for its own kernels) keeps every order and
    // both dtypes.
    let own = autograd::registry()?
        .get("tanh")?
        .cuda_source
        .expect("a CUDA source");
    for all in [
        "tanh_f32(",
        "tanh_f64(",
        "case 3:",
        "#if AUTOGRAD_ORDERS & 0x8",
    ] {
        assert!(own.contains(all), "{all} in:\n{own}");
    }
    if !crate::nvrtc_or_skip("the fused CUDA kernels of one dtype and order") {
        return Ok(());
    }
    for (name, source) in [value, gradient, gradient64] {
        compile_source(&format!("{name}.cu"), &source, "sm_90", Output::Cubin)
            .unwrap_or_else(|e| panic!("{e}"));
    }
    Ok(())
}

/// The distance the fused-against-unfused comparisons report, in units in the last
/// place of the dtype the values were computed in.
#[test]
fn mismatches_are_measured_in_ulps_of_their_dtype() {
    use crate::cases::ulps;
    let one = 1.0f64.to_bits();
    let next32 = (f32::from_bits(1.0f32.to_bits() + 1) as f64).to_bits();
    assert_eq!(ulps(one, next32, DType::F32), 1);
    assert_eq!(ulps(one, next32, DType::F64), 1 << 29);
    let below = (-f32::from_bits(1)) as f64;
    assert_eq!(
        ulps(
            below.to_bits(),
            (f32::from_bits(1) as f64).to_bits(),
            DType::F32
        ),
        2
    );
    assert_eq!(ulps(0.0f64.to_bits(), (-0.0f64).to_bits(), DType::F64), 0);
    assert_eq!(
        ulps(f64::NAN.to_bits(), (-f64::NAN).to_bits(), DType::F32),
        0
    );
}
