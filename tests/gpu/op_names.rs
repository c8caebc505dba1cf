//! Two generated ops of one short name (a user's `gelu` and `tanh`, and the
//! standard library's) each run their own program on the GPU: alone, fused, and
//! both in one fused chain, values and gradients, against the CPU. Programs are
//! compiled and cached, and included in a chain's kernel, by the op's full path
//! (`ElementwiseKernel::program`), never by its short name.

use autograd::fusion::{FusionConfig, with_config};
use autograd::prelude::*;
use autograd::{BackwardOptions, compute, ops};

use crate::cases::FUSE_ALL;

/// A user's `gelu`, registered as `gpu::gelu` beside the standard `gelu` (the tanh
/// approximation): the sigmoid approximation `x σ(1.702 x)`, up to 0.02 away.
#[differentiable]
mod gelu {
    use autograd::prelude::*;

    #[elementwise]
    pub fn forward(x: f32) -> f32 {
        x / (1.0 + (-1.702 * x).exp())
    }

    pub fn check_cases() -> Vec<CheckCase> {
        vec![CheckCase::new(
            "gpu::gelu",
            vec![Tensor::from_vec(vec![0.5f64, -1.0, 2.5], [3]).unwrap()],
            |x| gelu(&x[0]),
        )]
    }
}

/// A user's `tanh` which, like the standard one, has a backward reading `output`
/// (its gradient runs as an op of its own, from the op's program): `2 tanh x`.
#[differentiable]
mod tanh {
    use autograd::prelude::*;

    #[elementwise]
    pub fn forward(x: f32) -> f32 {
        2.0 * x.tanh()
    }

    /// d/dx 2 tanh x = 2 (1 - tanh² x) = 2 - y² / 2.
    #[elementwise]
    pub fn backward(output: f32, grad: f32) -> f32 {
        grad * (2.0 - 0.5 * output * output)
    }

    pub fn check_cases() -> Vec<CheckCase> {
        vec![CheckCase::new(
            "gpu::tanh",
            vec![Tensor::from_vec(vec![0.5f64, -1.0, 1.5], [3]).unwrap()],
            |x| tanh(&x[0]),
        )]
    }
}

/// An op of one tensor.
type UnaryFn = fn(&Tensor) -> Result<Tensor>;

/// Each op alone, then both of one name in one chain.
const PROGRAMS: [(&str, UnaryFn); 6] = [
    ("the standard gelu", |x| ops::gelu(x)),
    ("the user's gelu", |x| gelu(x)),
    ("the user's tanh", |x| tanh(x)),
    ("the standard tanh", |x| ops::tanh(x)),
    ("both gelus in one chain", |x| {
        (gelu(x)? * 3.0)? + ops::gelu(&(x * 0.5)?)?
    }),
    ("both tanhs in one chain", |x| {
        ops::tanh(&(tanh(x)? * 0.25)?)? - tanh(&(x * 0.5)?)?
    }),
];

/// `f(x)` and its first and second derivatives (the gradient of the sum, then of
/// the gradient's sum), on `x`'s device, brought to the host.
fn value_and_derivatives(f: UnaryFn, x: &Tensor) -> Result<Vec<Vec<f64>>> {
    let host = |t: &Tensor| compute::to_device(t, Device::Cpu)?.to_vec::<f64>();
    let x = x.detach().with_requires_grad(true);
    let y = f(&x)?;
    let opts = BackwardOptions::default().create_graph(true);
    let g = autograd::grad(&y.sum_all()?, &[&x], opts.clone())?[0]
        .clone()
        .expect("a gradient");
    let gg = autograd::grad(&g.sum_all()?, &[&x], opts)?[0]
        .clone()
        .expect("a second derivative");
    Ok(vec![host(&y)?, host(&g)?, host(&gg)?])
}

#[test]
#[ignore = "needs a CUDA GPU (or the emulated device)"]
fn ops_of_one_name_from_two_crates_each_run_their_own_program() -> Result<()> {
    let dev = crate::gpu();
    for dtype in [DType::F32, DType::F64] {
        let tol = if dtype == DType::F64 { 1e-12 } else { 1e-5 };
        let x = Rng::new(90).uniform([257], -3.0, 3.0, dtype)?;
        let cpu: Vec<Vec<Vec<f64>>> = with_config(FusionConfig::OFF, || {
            PROGRAMS
                .iter()
                .map(|&(_, f)| value_and_derivatives(f, &x))
                .collect::<Result<_>>()
        })?;
        // The two ops of each name compute other values (else this test would
        // see nothing).
        for (a, b) in [(0, 1), (2, 3)] {
            let far = cpu[a][0]
                .iter()
                .zip(&cpu[b][0])
                .any(|(p, q)| (p - q).abs() > 1e-3);
            assert!(far, "{} and {}", PROGRAMS[a].0, PROGRAMS[b].0);
        }
        let on_gpu = compute::to_device(&x, dev)?;
        for (config, how) in [(FusionConfig::OFF, "one by one"), (FUSE_ALL, "fused")] {
            for (&(name, f), want) in PROGRAMS.iter().zip(&cpu) {
                let got = with_config(config, || value_and_derivatives(f, &on_gpu))?;
                for (order, (w, g)) in want.iter().zip(&got).enumerate() {
                    let what = format!("{name} ({dtype}, {how}): derivative {order}");
                    crate::compare(&what, w, g, (tol, tol)).unwrap_or_else(|e| panic!("{e}"));
                }
            }
        }
        // Fused, each chain of both is one kernel holding both programs, which
        // NVRTC compiles too.
        #[cfg(feature = "cuda")]
        for (name, f) in &PROGRAMS[4..] {
            use autograd_kernels::cuda::compile::{Output, compile_source, nvrtc_available};
            let y = with_config(FUSE_ALL, || f(&on_gpu))?;
            let (kernel, source) = autograd::fusion::cuda_kernel(&y).expect("deferred")?;
            assert_eq!(
                source.matches("namespace op_").count(),
                2,
                "{name}:\n{source}"
            );
            if nvrtc_available() {
                let ptx =
                    compile_source(&format!("{kernel}.cu"), &source, "compute_90", Output::Ptx)
                        .unwrap_or_else(|e| panic!("{name}: {e}"));
                let ptx = String::from_utf8_lossy(&ptx);
                assert!(ptx.contains(&format!(".entry {kernel}(")), "{name}");
            }
        }
    }
    Ok(())
}
