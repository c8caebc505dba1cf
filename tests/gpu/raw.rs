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

/// A raw program with more dynamic shared memory than the 48 KiB a kernel gets
/// without opting in: 64 KiB, every byte written and then read (a row staged in
/// shared memory and written out reversed). Past 48 KiB the launch sets the
/// kernel's `CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES` (the emulated device
/// refuses the launch otherwise, as a GPU does, and fences the shared memory's
/// end); past the device's opt-in maximum, a clear error.
#[test]
#[ignore = "needs a CUDA GPU (or the emulated device)"]
fn raw_kernels_with_more_than_48_kib_of_dynamic_shared_memory() {
    let dev = gpu();
    const BYTES: u32 = 64 * 1024;
    let kernel = |config| raw::CudaKernel {
        program: raw::CudaProgram {
            name: "raw_test_big_shared",
            source: r#"
template <typename T>
__device__ void reverse_rows(const RawParams& p, const T* x, T* out, T* s) {
    const RawView& v = p.in[0];
    const u64 rows = v.dims[0], n = v.dims[1];
    for (u64 r = blockIdx.x; r < rows; r += gridDim.x) {
        for (u64 c = threadIdx.x; c < n; c += blockDim.x) s[c] = x[raw_at2(v, r, c)];
        __syncthreads();
        for (u64 c = threadIdx.x; c < n; c += blockDim.x) out[r * n + c] = s[n - 1 - c] * (T)2;
        __syncthreads();
    }
}
extern "C" __global__ void reverse_rows_f32(RAW_PARAMS(float)) {
    extern __shared__ __align__(16) unsigned char smem[];
    reverse_rows<float>(p, in0, out0, reinterpret_cast<float*>(smem));
}
extern "C" __global__ void reverse_rows_f64(RAW_PARAMS(double)) {
    extern __shared__ __align__(16) unsigned char smem[];
    reverse_rows<double>(p, in0, out0, reinterpret_cast<double*>(smem));
}
"#,
        },
        entry: "reverse_rows",
        config,
        scalars: &[],
    };
    let big = raw::LaunchConfig {
        grid: (2, 1, 1),
        block: (256, 1, 1),
        shared_mem_bytes: BYTES,
    };
    for dtype in [DType::F32, DType::F64] {
        let n = BYTES as usize / dtype.size_in_bytes();
        let rows = 3;
        let host: Vec<f64> = (0..rows * n).map(|i| (i % 1000) as f64 - 500.0).collect();
        let x = Tensor::from_vec(host.clone(), [rows, n]).unwrap();
        let x = autograd::compute::cast(&x, dtype).unwrap().to(dev).unwrap();
        // SAFETY: the kernel reads its input's view and writes every element of
        // its output, within 64 KiB of shared memory (one row of `n`).
        let y = unsafe { raw::cuda("big_shared", &kernel(big), &[&x], &[Shape::from([rows, n])]) }
            .unwrap_or_else(|e| panic!("{dtype}: {e}"));
        let got = y[0].to(Device::Cpu).unwrap().to_vec::<f64>().unwrap();
        let want: Vec<f64> = (0..rows * n)
            .map(|i| 2.0 * host[(i / n) * n + (n - 1 - i % n)])
            .collect();
        assert_eq!(got, want, "{dtype}");
    }
    // Past any device's opt-in maximum (227 KiB on an H100/H200): an error
    // naming it, not a failed launch.
    let too_big = raw::LaunchConfig {
        shared_mem_bytes: 256 * 1024,
        ..big
    };
    let x = Tensor::ones([1, 16], DType::F32).unwrap().to(dev).unwrap();
    // SAFETY: refused before launching.
    let err = unsafe {
        raw::cuda(
            "big_shared",
            &kernel(too_big),
            &[&x],
            &[Shape::from([1, 16])],
        )
    }
    .unwrap_err();
    let msg = err.to_string();
    assert!(
        msg.contains("dynamic shared memory") && msg.contains("at most"),
        "{msg}"
    );
}
