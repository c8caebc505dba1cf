//! Raw kernels on the GPU: the fused layer norm of `examples/layer_norm` (its CUDA
//! program compiled at first use) against its CPU kernel, values and gradients,
//! f32 and f64, over views read in place; the launch skipped for empty outputs;
//! the errors of a mixed-device call and of a program that does not compile.
//! (`ops_parity` covers the op too, through the registry, at its check case.)

use crate::gpu;
use autograd::prelude::*;
use autograd::raw;

#[path = "../../examples/layer_norm/op.rs"]
pub mod layer_norm_op;
use layer_norm_op::{fused_layer_norm, layer_norm_composed};

const EPS: f64 = 1e-5;

/// The output and the gradients of `Σ y · w` on `device`, copied to the host.
fn run(x: &Tensor, gamma: &Tensor, beta: &Tensor, w: &Tensor, device: Device) -> Vec<Vec<f64>> {
    let leaf = |t: &Tensor| t.to(device).unwrap().detach().with_requires_grad(true);
    let (x, gamma, beta) = (leaf(x), leaf(gamma), leaf(beta));
    let y = fused_layer_norm(&x, &gamma, &beta, EPS).unwrap();
    assert_eq!(y.device(), device);
    let loss = (&y * &w.to(device).unwrap()).unwrap().sum_all().unwrap();
    let grads = autograd::grad(&loss, &[&x, &gamma, &beta], BackwardOptions::default()).unwrap();
    let host = |t: &Tensor| t.to(Device::Cpu).unwrap().to_vec::<f64>().unwrap();
    let mut out = vec![host(&y)];
    out.extend(grads.iter().map(|g| host(g.as_ref().unwrap())));
    out
}

#[test]
#[ignore = "needs a CUDA GPU (or the emulated device)"]
fn raw_layer_norm_on_the_gpu_matches_the_cpu() {
    let dev = gpu();
    for dtype in [DType::F64, DType::F32] {
        let tol = if dtype == DType::F64 { 1e-12 } else { 1e-5 };
        // Fewer columns than threads, not a multiple of the block, more than it.
        for (rows, cols) in [(1, 1), (5, 37), (3, 128), (70, 300)] {
            let mut rng = Rng::new(rows as u64 * 1000 + cols as u64);
            let x = rng.normal([rows, cols], 0.5, 2.0, dtype).unwrap();
            let gamma = rng.uniform([cols], 0.5, 1.5, dtype).unwrap();
            let beta = rng.uniform([cols], -1.0, 1.0, dtype).unwrap();
            let w = rng.normal([rows, cols], 0.0, 1.0, dtype).unwrap();
            let cpu = run(&x, &gamma, &beta, &w, Device::Cpu);
            let gpu = run(&x, &gamma, &beta, &w, dev);
            for (k, (c, g)) in cpu.iter().zip(&gpu).enumerate() {
                let what = format!("fused_layer_norm {dtype} [{rows}, {cols}], output {k}");
                crate::compare(&what, c, g, (tol, tol)).unwrap_or_else(|e| panic!("{e}"));
            }
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU (or the emulated device)"]
fn raw_layer_norm_on_the_gpu_reads_views_in_place() {
    let dev = gpu();
    let base = Rng::new(3).normal([9, 12], 0.0, 2.0, DType::F64).unwrap();
    let params = Rng::new(4).uniform([30], 0.5, 1.5, DType::F64).unwrap();
    let (gb, pb) = (base.to(dev).unwrap(), params.to(dev).unwrap());
    // Views made on each device: transposed, and narrowed (an offset).
    let views = |b: &Tensor, p: &Tensor| {
        let xt = b.t().unwrap();
        let xn = b.narrow(0, 2, 5).unwrap().narrow(1, 3, 8).unwrap();
        [xt, xn].map(|x| {
            let cols = x.shape().dims()[1];
            (
                x,
                p.narrow(0, 1, cols).unwrap(),
                p.narrow(0, 13, cols).unwrap(),
            )
        })
    };
    for ((x, g, b), (gx, gg, gbeta)) in views(&base, &params).into_iter().zip(views(&gb, &pb)) {
        assert!(!gx.layout().is_contiguous() || gx.layout().offset() > 0);
        let cpu = fused_layer_norm(&x, &g, &b, EPS)
            .unwrap()
            .to_vec::<f64>()
            .unwrap();
        let composed = layer_norm_composed(&x, &g, &b, EPS).unwrap();
        crate::compare(
            "fused_layer_norm of a view, cpu",
            &composed.to_vec::<f64>().unwrap(),
            &cpu,
            (1e-12, 1e-12),
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let on_gpu = fused_layer_norm(&gx, &gg, &gbeta, EPS).unwrap();
        let on_gpu = on_gpu.to(Device::Cpu).unwrap().to_vec::<f64>().unwrap();
        crate::compare("fused_layer_norm of a view", &cpu, &on_gpu, (1e-12, 1e-12))
            .unwrap_or_else(|e| panic!("{e}"));
    }
}

#[test]
#[ignore = "needs a CUDA GPU (or the emulated device)"]
fn raw_kernels_on_the_gpu_empty_outputs_and_errors() {
    let dev = gpu();
    // No rows: nothing to launch, an empty result.
    let x = Tensor::zeros([0, 4], DType::F32).unwrap().to(dev).unwrap();
    let g = Tensor::ones([4], DType::F32).unwrap().to(dev).unwrap();
    let y = fused_layer_norm(&x, &g, &g, EPS).unwrap();
    assert_eq!((y.shape().dims(), y.device()), (&[0, 4][..], dev));

    // Inputs on two devices.
    let x = Tensor::ones([2, 4], DType::F32).unwrap().to(dev).unwrap();
    let cpu_g = Tensor::ones([4], DType::F32).unwrap();
    let err = fused_layer_norm(&x, &cpu_g, &g, EPS).unwrap_err();
    assert!(
        matches!(
            err.root_cause(),
            Error::DeviceMismatch {
                op: "fused_layer_norm",
                ..
            }
        ),
        "{err}"
    );

    // A program that does not compile: the compiler's message, naming the file.
    let kernel = raw::CudaKernel {
        program: raw::CudaProgram {
            name: "raw_test_broken",
            source: "extern \"C\" __global__ void broken_f32(RAW_PARAMS(float)) { \
                     out0[0] = undefined_name; }",
        },
        entry: "broken",
        config: raw::LaunchConfig::linear(1, 32),
        scalars: &[],
    };
    // SAFETY: the program does not compile, so nothing is launched.
    let err = unsafe { raw::cuda("broken", &kernel, &[&x], &[Shape::from([1])]) }.unwrap_err();
    let msg = err.to_string();
    assert!(
        msg.contains("broken") && msg.contains("undefined_name"),
        "{msg}"
    );
}
