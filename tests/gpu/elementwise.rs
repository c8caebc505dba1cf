//! Ops generated from one scalar function on the GPU: their program compiled at
//! first use, the value and the derivatives of every order against the CPU, over
//! broadcast and strided views, in f32 and f64.

use crate::gpu;
use autograd::prelude::*;
use autograd::{BackwardOptions, compute, ops};

/// An op of one tensor.
type UnaryFn<'a> = &'a dyn Fn(&Tensor) -> Result<Tensor>;

/// The first three derivatives of `f` at `x` on `device`, and the value.
fn derivatives(f: UnaryFn<'_>, x: &Tensor, device: Device) -> Result<Vec<Vec<f64>>> {
    let x = x.to(device)?.detach().with_requires_grad(true);
    let opts = BackwardOptions::default().create_graph(true);
    let mut y = f(&x)?;
    let mut out = vec![compute::to_device(&y, Device::Cpu)?.to_vec::<f64>()?];
    for _ in 0..3 {
        y = autograd::grad(&y.sum_all()?, &[&x], opts.clone())?[0]
            .clone()
            .expect("a gradient");
        assert_eq!(y.device(), device);
        out.push(compute::to_device(&y, Device::Cpu)?.to_vec::<f64>()?);
    }
    Ok(out)
}

#[test]
#[ignore = "needs a CUDA GPU (or the emulated device)"]
fn generated_ops_and_their_derivatives_match_the_cpu() {
    let dev = gpu();
    for dtype in [DType::F64, DType::F32] {
        let tol = if dtype == DType::F64 { 1e-12 } else { 2e-4 };
        let base = Rng::new(7).uniform([3, 4], -2.0, 2.0, dtype).unwrap();
        // A strided view (the transpose).
        let x = base.t().unwrap();
        let fs: [(&str, UnaryFn<'_>); 16] = [
            ("mish", &|v| ops::mish(v)),
            ("erf", &|v| ops::erf(v)),
            ("silu", &|v| ops::silu(v)),
            ("elu", &|v| ops::elu(v, 0.5)),
            // The standard functions written once (the last five with a backward
            // reading the output: their gradients run as ops of their own).
            ("log", &|v| ops::log(&(v * v)?)),
            ("square", &|v| ops::square(v)),
            ("abs", &|v| ops::abs(v)),
            ("gelu", &|v| ops::gelu(v)),
            ("sin", &|v| ops::sin(v)),
            ("cos", &|v| ops::cos(v)),
            ("pow", &|v| ops::pow(&(v * v)?, v)),
            ("exp", &|v| ops::exp(v)),
            ("tanh", &|v| ops::tanh(v)),
            ("sigmoid", &|v| ops::sigmoid(v)),
            ("sqrt", &|v| ops::sqrt(&(v * v)?)),
            ("relu", &|v| ops::relu(v)),
        ];
        for (name, f) in fs {
            let cpu = derivatives(f, &x, Device::Cpu).unwrap();
            let gpu = derivatives(f, &x, dev).unwrap();
            for (order, (c, g)) in cpu.iter().zip(&gpu).enumerate() {
                let what = format!("{name} ({dtype}) order {order}");
                crate::compare(&what, c, g, (tol, tol)).unwrap_or_else(|e| panic!("{e}"));
            }
        }
        // Three inputs broadcast to one shape, one of them a bool mask (on the
        // host: `where` converts it to the values' dtype on their device).
        let mask = Tensor::from_vec(vec![true, false, true, false], [4]).unwrap();
        let b = Rng::new(8).uniform([3, 1], -1.0, 1.0, dtype).unwrap();
        let on = |t: &Tensor, d: Device| t.to(d).unwrap();
        let run = |d: Device| -> Vec<f64> {
            let a = on(&base, d).detach().with_requires_grad(true);
            let bb = on(&b, d).detach().with_requires_grad(true);
            let y = ops::r#where(&mask, &a, &bb).unwrap();
            let w = on(&base, d);
            (y * &w).unwrap().sum_all().unwrap().backward().unwrap();
            let mut v = compute::to_device(&grad_of(&a), Device::Cpu)
                .unwrap()
                .to_vec::<f64>()
                .unwrap();
            v.extend(
                compute::to_device(&grad_of(&bb), Device::Cpu)
                    .unwrap()
                    .to_vec::<f64>()
                    .unwrap(),
            );
            v
        };
        crate::compare(
            &format!("where ({dtype})"),
            &run(Device::Cpu),
            &run(dev),
            (tol, tol),
        )
        .unwrap_or_else(|e| panic!("{e}"));
    }
}

fn grad_of(t: &Tensor) -> Tensor {
    t.grad().expect("a gradient")
}

/// A generated op whose entry point is named like one of the fixed kernels
/// (`unary_exp_f32`): each call launches its own kernel.
#[differentiable]
mod unary_exp {
    use autograd::prelude::*;

    #[elementwise]
    pub fn forward(x: f32) -> f32 {
        x * 2.0
    }

    pub fn check_cases() -> Vec<CheckCase> {
        vec![CheckCase::new(
            "unary_exp (doubles)",
            vec![Tensor::from_vec(vec![0.5f64, -1.0], [2]).unwrap()],
            |x| unary_exp(&x[0]),
        )]
    }
}

#[test]
#[ignore = "needs a CUDA GPU (or the emulated device)"]
fn a_generated_op_named_like_a_fixed_kernel_runs_its_own() {
    let dev = gpu();
    let x = Tensor::from_vec(vec![0.5f32, -1.0, 2.0], [3])
        .unwrap()
        .to(dev)
        .unwrap();
    let e = compute::to_device(&ops::exp(&x).unwrap(), Device::Cpu).unwrap();
    let d = compute::to_device(&unary_exp(&x).unwrap(), Device::Cpu).unwrap();
    assert_eq!(d.to_vec::<f32>().unwrap(), vec![1.0, -2.0, 4.0]);
    assert!((e.to_vec::<f32>().unwrap()[0] - 0.5f32.exp()).abs() < 1e-6);
}
