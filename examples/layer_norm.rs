//! An op that is not elementwise, with its own kernels: a fused row-wise layer norm
//! (`examples/layer_norm/op.rs`) whose forward and backward are raw kernels
//! (`autograd::raw`), a CPU kernel over the inputs' storages and a CUDA program
//! (`examples/layer_norm/layer_norm.cu`), inside an ordinary `#[differentiable]`
//! op: recorded, saving `x` and `gamma`, registered as `fused_layer_norm`.
//!
//! The example checks the op against layer norm composed of standard ops and
//! against the standard `layer_norm` op (`autograd::ops::layer_norm`, whose
//! backward is recorded ops; values and gradients, f32 and f64, on a transposed
//! input too), runs a
//! finite-difference gradient check, and shows that a second derivative is an
//! error. With `--cuda` (or where a CUDA device is available) it runs the same on
//! `Device::Cuda(0)` and compares with the CPU.
//!
//! Run with `cargo run --release --example layer_norm` (`-- --cuda` for the GPU).

#[path = "layer_norm/op.rs"]
mod op;

use autograd::prelude::*;
use autograd::{BackwardOptions, GradcheckOptions};
use op::{fused_layer_norm, layer_norm_composed};

const EPS: f64 = 1e-5;

/// The largest difference between two tensors' elements, relative to 1 + |b|.
fn max_diff(a: &Tensor, b: &Tensor) -> Result<f64> {
    let (a, b) = (a.to_vec::<f64>()?, b.to_vec::<f64>()?);
    Ok(a.iter()
        .zip(&b)
        .map(|(x, y)| (x - y).abs() / (1.0 + y.abs()))
        .fold(0.0, f64::max))
}

/// The output and the gradients of `Σ y · w` (a fixed weighting, so that every
/// gradient is non-trivial) with respect to x, gamma and beta.
fn run(
    f: &dyn Fn(&Tensor, &Tensor, &Tensor) -> Result<Tensor>,
    inputs: &[Tensor; 3],
    w: &Tensor,
) -> Result<Vec<Tensor>> {
    let leaves: Vec<Tensor> = inputs
        .iter()
        .map(|t| t.detach().with_requires_grad(true))
        .collect();
    let y = f(&leaves[0], &leaves[1], &leaves[2])?;
    let loss = (&y * w)?.sum_all()?;
    let refs: Vec<&Tensor> = leaves.iter().collect();
    let grads = grad(&loss, &refs, BackwardOptions::default())?;
    let mut out = vec![y.detach()];
    out.extend(grads.into_iter().map(|g| g.expect("every input is used")));
    Ok(out)
}

/// Compares two lists of tensors (output, then gradients), printing each difference.
fn compare(what: &str, a: &[Tensor], b: &[Tensor], tol: f64) -> Result<()> {
    for (name, (x, y)) in ["y", "dx", "dgamma", "dbeta"].iter().zip(a.iter().zip(b)) {
        let d = max_diff(x, y)?;
        println!("{what:<46} {name:<7} max rel. difference {d:.2e}");
        if d > tol {
            return Err(Error::InvalidArgument {
                op: "fused_layer_norm example",
                msg: format!("{what}: {name} differs by {d:.2e} (tolerance {tol:.0e})"),
            });
        }
    }
    Ok(())
}

/// Inputs `x [rows, cols]`, `gamma`, `beta` and a weighting `w` of y, in `dtype`.
fn inputs(rows: usize, cols: usize, dtype: DType) -> Result<([Tensor; 3], Tensor)> {
    let mut rng = Rng::new(42);
    let x = rng.normal([rows, cols], 0.5, 2.0, dtype)?;
    let gamma = rng.uniform([cols], 0.5, 1.5, dtype)?;
    let beta = rng.uniform([cols], -1.0, 1.0, dtype)?;
    let w = rng.normal([rows, cols], 0.0, 1.0, dtype)?;
    Ok(([x, gamma, beta], w))
}

fn fused(x: &Tensor, g: &Tensor, b: &Tensor) -> Result<Tensor> {
    fused_layer_norm(x, g, b, EPS)
}

fn composed(x: &Tensor, g: &Tensor, b: &Tensor) -> Result<Tensor> {
    layer_norm_composed(x, g, b, EPS)
}

fn standard(x: &Tensor, g: &Tensor, b: &Tensor) -> Result<Tensor> {
    autograd::ops::layer_norm(x, Some(g), Some(b), EPS)
}

fn main() -> Result<()> {
    autograd::init()?;
    let reg = autograd::registry()?.get("fused_layer_norm")?;
    println!("registered `{}`, saving {:?}", reg.name, reg.saved_names());

    // 1. Against the composed layer norm and the standard op, f64 and f32.
    for (dtype, tol) in [(DType::F64, 1e-12), (DType::F32, 2e-5)] {
        let (ins, w) = inputs(64, 300, dtype)?;
        let mine = run(&fused, &ins, &w)?;
        let what = format!("fused vs composed, {dtype}, [64, 300]");
        compare(&what, &mine, &run(&composed, &ins, &w)?, tol)?;
        let what = format!("fused vs standard layer_norm, {dtype}, [64, 300]");
        compare(&what, &mine, &run(&standard, &ins, &w)?, tol)?;
    }

    // 2. A view read in place: x transposed (strides [1, rows]), never copied.
    let (ins, w) = inputs(40, 24, DType::F64)?;
    let xt = ins[0].t()?; // [24, 40], not contiguous
    let (g, b) = (
        Rng::new(1).uniform([40], 0.5, 1.5, DType::F64)?,
        Rng::new(2).uniform([40], -1.0, 1.0, DType::F64)?,
    );
    let wt = w.t()?;
    let tins = [xt, g, b];
    compare(
        "fused vs composed, transposed x",
        &run(&fused, &tins, &wt)?,
        &run(&composed, &tins, &wt)?,
        1e-12,
    )?;

    // 3. Backward against central finite differences (f64).
    let (ins, _) = inputs(4, 7, DType::F64)?;
    let report = autograd::gradcheck(
        "fused_layer_norm",
        &|v| fused_layer_norm(&v[0], &v[1], &v[2], EPS),
        &ins,
        &[true, true, true],
        &GradcheckOptions::default(),
    )?;
    println!(
        "gradcheck: max abs. error {:.2e} over {} elements",
        report.max_abs_error, report.elements
    );

    // 4. The backward is raw kernels: a second derivative is an error, not a wrong number.
    let x = ins[0].detach().with_requires_grad(true);
    let y = fused_layer_norm(&x, &ins[1], &ins[2], EPS)?;
    let dx = grad(
        &(&y * &y)?.sum_all()?,
        &[&x],
        BackwardOptions::default().create_graph(true),
    )?
    .remove(0)
    .expect("dx");
    match dx.sum_all()?.backward() {
        Err(e) => println!("second order: {e}"),
        Ok(()) => {
            return Err(Error::InvalidArgument {
                op: "fused_layer_norm example",
                msg: "a second derivative through fused_layer_norm did not fail".into(),
            });
        }
    }

    // 5. On a GPU: the CUDA kernels against the CPU.
    let want_cuda = std::env::args().any(|a| a == "--cuda");
    let gpu = Device::Cuda(0);
    let available = autograd::compute::to_device(&Tensor::scalar(0.0f32), gpu).is_ok();
    if want_cuda || available {
        for (dtype, tol) in [(DType::F64, 1e-12), (DType::F32, 1e-5)] {
            let (ins, w) = inputs(200, 1000, dtype)?;
            let cpu = run(&fused, &ins, &w)?;
            let on_gpu: Vec<Tensor> = ins.iter().map(|t| t.to(gpu)).collect::<Result<_>>()?;
            let on_gpu = [on_gpu[0].clone(), on_gpu[1].clone(), on_gpu[2].clone()];
            let out = run(&fused, &on_gpu, &w.to(gpu)?)?;
            let back: Vec<Tensor> = out
                .iter()
                .map(|t| t.to(Device::Cpu))
                .collect::<Result<_>>()?;
            compare(
                &format!("{gpu} vs cpu, {dtype}, [200, 1000]"),
                &back,
                &cpu,
                tol,
            )?;
        }
    } else {
        println!("no CUDA device: the GPU comparison was skipped (pass --cuda to require it)");
    }
    println!("fused_layer_norm: all checks passed");
    Ok(())
}
