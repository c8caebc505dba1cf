//! Raw kernels (`autograd::raw`) on the CPU: the fused layer norm of
//! `examples/layer_norm` against layer norm composed of standard ops (values and
//! gradients, f32 and f64, views read in place), its gradient check, the error on
//! a second derivative, the views a kernel gets, and the errors of the runner.

use autograd::prelude::*;
use autograd::raw::{self, CpuKernel, Float, View};
use autograd::{BackwardOptions, GradcheckOptions};

#[path = "../../examples/layer_norm/op.rs"]
pub mod layer_norm_op;
use layer_norm_op::{Forward, fused_layer_norm, layer_norm_composed};

const EPS: f64 = 1e-5;

/// The output and the gradients of `Σ y · w` with respect to the three inputs
/// (`w` `None`: `Σ y`, whose incoming gradient is a broadcast scalar).
fn outputs(
    f: fn(&Tensor, &Tensor, &Tensor, f64) -> Result<Tensor>,
    ins: &[Tensor; 3],
    w: Option<&Tensor>,
) -> Vec<Vec<f64>> {
    let leaves: Vec<Tensor> = ins
        .iter()
        .map(|t| t.detach().with_requires_grad(true))
        .collect();
    // `detach` keeps the view: the op reads the leaves' layouts as given.
    for (l, v) in leaves.iter().zip(ins) {
        assert_eq!(l.layout(), v.layout());
    }
    let y = f(&leaves[0], &leaves[1], &leaves[2], EPS).unwrap();
    let loss = match w {
        Some(w) => (&y * w).unwrap().sum_all().unwrap(),
        None => y.sum_all().unwrap(),
    };
    let refs: Vec<&Tensor> = leaves.iter().collect();
    let grads = grad(&loss, &refs, BackwardOptions::default()).unwrap();
    let mut out = vec![y.to_vec::<f64>().unwrap()];
    out.extend(
        grads
            .into_iter()
            .map(|g| g.unwrap().to_vec::<f64>().unwrap()),
    );
    out
}

fn assert_close(a: &[Vec<f64>], b: &[Vec<f64>], tol: f64, what: &str) {
    for (k, (x, y)) in a.iter().zip(b).enumerate() {
        assert_eq!(x.len(), y.len(), "{what}: output {k}");
        for (i, (p, q)) in x.iter().zip(y).enumerate() {
            assert!(
                (p - q).abs() <= tol * (1.0 + q.abs()),
                "{what}: output {k} (y, dx, dgamma, dbeta) element {i}: {p} vs {q}"
            );
        }
    }
}

fn inputs(rows: usize, cols: usize, dtype: DType, seed: u64) -> [Tensor; 3] {
    let mut rng = Rng::new(seed);
    [
        rng.normal([rows, cols], 0.3, 1.7, dtype).unwrap(),
        rng.uniform([cols], 0.5, 1.5, dtype).unwrap(),
        rng.uniform([cols], -1.0, 1.0, dtype).unwrap(),
    ]
}

#[test]
fn raw_layer_norm_matches_the_composed_op_in_f64_and_f32() {
    crate::init();
    for (dtype, tol) in [(DType::F64, 1e-12), (DType::F32, 2e-5)] {
        for (rows, cols) in [(1, 1), (3, 5), (17, 64), (2, 300)] {
            let ins = inputs(rows, cols, dtype, rows as u64);
            let w = Rng::new(5).normal([rows, cols], 0.0, 1.0, dtype).unwrap();
            let what = format!("{dtype} [{rows}, {cols}]");
            assert_close(
                &outputs(fused_layer_norm, &ins, Some(&w)),
                &outputs(layer_norm_composed, &ins, Some(&w)),
                tol,
                &what,
            );
        }
    }
}

#[test]
fn raw_layer_norm_reads_views_in_place() {
    crate::init();
    let base = Rng::new(3).normal([9, 12], 0.0, 2.0, DType::F64).unwrap();
    // Transposed: strides [1, 12]; narrowed: an offset; gamma and beta narrowed
    // out of one tensor (offsets 1 and 13), beta broadcast from a scalar.
    let xt = base.t().unwrap(); // [12, 9]
    let xn = base.narrow(0, 2, 5).unwrap().narrow(1, 3, 8).unwrap(); // [5, 8], offset 27
    let params = Rng::new(4).uniform([30], 0.5, 1.5, DType::F64).unwrap();
    for (x, what) in [(xt, "transposed"), (xn, "narrowed")] {
        let cols = x.shape().dims()[1];
        let gamma = params.narrow(0, 1, cols).unwrap();
        let beta = params.narrow(0, 13, cols).unwrap();
        let ins = [x.clone(), gamma.clone(), beta];
        assert_close(
            &outputs(fused_layer_norm, &ins, None),
            &outputs(layer_norm_composed, &ins, None),
            1e-12,
            what,
        );
        let scalar_beta =
            autograd::compute::broadcast_to(&Tensor::scalar(0.25f64), Shape::from([cols])).unwrap();
        assert_eq!(scalar_beta.layout().strides(), [0]);
        let ins = [x, gamma, scalar_beta];
        assert_close(
            &outputs(fused_layer_norm, &ins, None),
            &outputs(layer_norm_composed, &ins, None),
            1e-12,
            &format!("{what}, broadcast beta"),
        );
    }
}

#[test]
fn raw_layer_norm_passes_gradcheck_and_refuses_a_second_derivative() {
    crate::init();
    let ins = inputs(4, 6, DType::F64, 11);
    let report = autograd::gradcheck(
        "fused_layer_norm",
        &|v| fused_layer_norm(&v[0], &v[1], &v[2], EPS),
        &ins,
        &[true, true, true],
        &GradcheckOptions::default(),
    )
    .unwrap();
    assert!(report.max_abs_error < 1e-6, "{report:?}");

    // Saved: x and gamma (what backward reads), not beta.
    let entry = autograd::registry()
        .unwrap()
        .get("fused_layer_norm")
        .unwrap();
    assert_eq!(entry.saved_names(), ["x", "gamma"]);

    let x = ins[0].detach().with_requires_grad(true);
    let y = fused_layer_norm(&x, &ins[1], &ins[2], EPS).unwrap();
    let dx = grad(
        &(&y * &y).unwrap().sum_all().unwrap(),
        &[&x],
        BackwardOptions::default().create_graph(true),
    )
    .unwrap()
    .remove(0)
    .unwrap();
    let err = dx.sum_all().unwrap().backward().unwrap_err();
    assert!(
        matches!(
            err.root_cause(),
            Error::NotDifferentiable {
                op: "fused_layer_norm"
            }
        ),
        "{err}"
    );
}

#[test]
fn raw_layer_norm_errors_name_the_op() {
    crate::init();
    let [x, g, b] = inputs(3, 4, DType::F64, 1);
    // Mixed dtypes.
    let g32 = Rng::new(1).uniform([4], 0.5, 1.5, DType::F32).unwrap();
    let err = fused_layer_norm(&x, &g32, &b, EPS).unwrap_err();
    assert!(
        matches!(
            err.root_cause(),
            Error::DTypeMismatch {
                op: "fused_layer_norm",
                ..
            }
        ),
        "{err}"
    );
    // Shapes the op does not take.
    let err = fused_layer_norm(&g, &g, &b, EPS).unwrap_err();
    assert!(err.to_string().contains("[rows, cols]"), "{err}");
    let err = fused_layer_norm(&x, &x, &b, EPS).unwrap_err();
    assert!(
        matches!(
            err.root_cause(),
            Error::Shape {
                op: "fused_layer_norm",
                ..
            }
        ) && err.to_string().contains("gamma must be [4]"),
        "{err}"
    );
    // The kernel given an output of the wrong size says so (no panic).
    let fwd = Forward { eps: EPS };
    let err = raw::cpu(
        "fused_layer_norm",
        &fwd,
        &[&x, &g, &b],
        &[Shape::from([4, 3, 2])],
    )
    .unwrap_err();
    assert!(
        matches!(
            err,
            Error::Shape {
                op: "fused_layer_norm",
                ..
            }
        ) && err.to_string().contains("an output of 24 elements"),
        "{err}"
    );
    // Two outputs for a kernel that writes one.
    let err = raw::cpu(
        "fused_layer_norm",
        &fwd,
        &[&x, &g, &b],
        &[x.shape().clone(), x.shape().clone()],
    )
    .unwrap_err();
    assert!(err.to_string().contains("writes 1 output"), "{err}");
    // The runner's own checks.
    let err = raw::cpu("fused_layer_norm", &fwd, &[], &[Shape::from([1])]).unwrap_err();
    assert!(
        matches!(
            err,
            Error::InvalidArgument {
                op: "fused_layer_norm",
                ..
            }
        ),
        "{err}"
    );
    let err = raw::cpu("fused_layer_norm", &fwd, &[&x, &g, &b], &[]).unwrap_err();
    assert!(err.to_string().contains("no output shape"), "{err}");
    let err = raw::cpu(
        "fused_layer_norm",
        &fwd,
        &[&x, &g32, &b],
        &[Shape::from([3, 4])],
    )
    .unwrap_err();
    assert!(
        matches!(
            err,
            Error::DTypeMismatch {
                op: "fused_layer_norm",
                ..
            }
        ),
        "{err}"
    );
    // A CUDA launch for CPU tensors is refused before anything reaches a device.
    let kernel = raw::CudaKernel {
        program: layer_norm_op::PROGRAM,
        entry: "fused_layer_norm_forward",
        config: raw::LaunchConfig::linear(3, 128),
        scalars: &[raw::Scalar::F64(EPS)],
    };
    // SAFETY: the launch is refused (the inputs are on the CPU); were it not, the
    // entry point and its arguments match layer_norm.cu.
    let err = unsafe {
        raw::cuda(
            "fused_layer_norm",
            &kernel,
            &[&x, &g, &b],
            &[x.shape().clone()],
        )
    }
    .unwrap_err();
    assert!(
        matches!(
            err,
            Error::InvalidArgument {
                op: "fused_layer_norm",
                ..
            }
        ) && err.to_string().contains("raw::cpu"),
        "{err}"
    );
}

/// Copies each input's logical elements (row-major) into its output, through
/// `View::get`, and records what the views looked like.
struct Gather;

impl CpuKernel for Gather {
    fn run<T: Float>(&self, inputs: &[View<'_, T>], outputs: &mut [&mut [T]]) -> Result<()> {
        for (v, out) in inputs.iter().zip(outputs.iter_mut()) {
            let dims = v.dims();
            let n = dims.iter().product::<usize>();
            for (k, o) in out.iter_mut().enumerate().take(n) {
                let mut index = vec![0; dims.len()];
                let mut r = k;
                for (a, &d) in dims.iter().enumerate().rev() {
                    index[a] = r % d;
                    r /= d;
                }
                *o = v.get(&index).ok_or(Error::InvalidArgument {
                    op: "gather",
                    msg: format!("{index:?} outside {}", v.shape()),
                })?;
            }
            // Zero-copy: the whole storage, not the view's elements.
            assert!(v.data().len() >= n);
            assert_eq!(v.as_contiguous().is_some(), v.layout().is_contiguous());
            assert_eq!(v.get(&vec![usize::MAX; dims.len()]), None);
        }
        Ok(())
    }
}

#[test]
fn raw_cpu_kernels_get_the_storage_and_layout_of_each_view() {
    crate::init();
    let base = Tensor::from_vec((0..24).map(f64::from).collect(), [2, 3, 4]).unwrap();
    let narrowed = base.narrow(2, 1, 2).unwrap(); // offset 1, strides [12, 4, 1]
    let transposed = base.t().unwrap();
    let outs = raw::cpu(
        "gather",
        &Gather,
        &[&narrowed, &transposed, &base],
        &[
            narrowed.shape().clone(),
            transposed.shape().clone(),
            base.shape().clone(),
        ],
    )
    .unwrap();
    for (o, v) in outs.iter().zip([&narrowed, &transposed, &base]) {
        assert_eq!(o.shape(), v.shape());
        assert_eq!(o.to_vec::<f64>().unwrap(), v.to_vec::<f64>().unwrap());
    }
    // f32 through the same kernel; outputs start zeroed.
    let x = Tensor::from_slice(&[1.0f32, 2.0, 3.0], [3]).unwrap();
    let outs = raw::cpu(
        "gather",
        &Gather,
        &[&x],
        &[Shape::from([3]), Shape::from([2])],
    )
    .unwrap();
    assert_eq!(outs[0].to_vec::<f32>().unwrap(), [1.0, 2.0, 3.0]);
    assert_eq!(outs[1].to_vec::<f32>().unwrap(), [0.0, 0.0]);
}

/// The layer norm's CUDA program compiles with NVRTC, its entry points as the
/// raw-kernel ABI wants them (see `assert_raw_program_compiles`).
#[cfg(feature = "cuda")]
#[test]
fn raw_layer_norm_cuda_program_compiles_with_nvrtc() {
    crate::assert_raw_program_compiles(
        layer_norm_op::PROGRAM,
        &["fused_layer_norm_forward", "fused_layer_norm_backward"],
    );
}
