//! Inferred reshapes, `flatten`, `matmul` with vectors and `dot`,
//! `max_all`/`min_all`, `argmax`/`argmin`, `var`/`std_dev`, `stack`,
//! `gather`/`scatter_add`, `cumsum`, the comparisons, `dropout`, `layer_norm` and
//! `embedding`: values and gradients against PyTorch, the conventions (ties,
//! constants, masks), and the errors. The registry-wide tests
//! gradient-check the registered ones to second order.
//!
//! The constants were computed by PyTorch 2 in float64 with
//! `scripts/reference/ops_batch.py` (its inputs are closed-form: the test builds
//! the same ones with [`wave`]).

use autograd::ops;
use autograd::prelude::*;
use autograd::{BackwardOptions, ComputationGraph, registry};

/// Element `i` of a tensor of `shape` is `f(a * i + b)`, as the script's `wave`.
pub(crate) fn wave(shape: &[usize], a: f64, b: f64, f: fn(f64) -> f64) -> Tensor {
    let n = shape.iter().product::<usize>();
    let v: Vec<f64> = (0..n).map(|i| f(a * i as f64 + b)).collect();
    Tensor::from_slice(&v, shape).unwrap()
}

pub(crate) fn values(v: &[f64], shape: &[usize]) -> Tensor {
    Tensor::from_slice(v, shape).unwrap()
}

/// An `i64` index tensor.
pub(crate) fn ints(v: &[i64], shape: &[usize]) -> Tensor {
    Tensor::from_slice(v, shape).unwrap()
}

/// The output and the gradients of `Σ y · sin(0.5 j + 0.3)` of `f` at `inputs`, in
/// `dtype`, as f64 values.
pub(crate) fn run(
    f: &dyn Fn(&[Tensor]) -> Result<Tensor>,
    inputs: &[Tensor],
    dtype: DType,
) -> Result<Vec<Vec<f64>>> {
    let leaves: Vec<Tensor> = inputs
        .iter()
        .map(|t| Ok(t.to_dtype(dtype)?.detach().with_requires_grad(true)))
        .collect::<Result<_>>()?;
    let y = f(&leaves)?;
    assert_eq!(y.dtype(), dtype);
    let r = wave(y.dims(), 0.5, 0.3, f64::sin).to_dtype(dtype)?;
    let loss = (&y * &r)?.sum_all()?;
    let refs: Vec<&Tensor> = leaves.iter().collect();
    let grads = grad(&loss, &refs, BackwardOptions::default())?;
    let mut out = vec![y.to_vec::<f64>()?];
    for (g, x) in grads.into_iter().zip(&leaves) {
        let g = g.expect("every input is used");
        assert_eq!(g.dims(), x.dims(), "a gradient has its input's shape");
        out.push(g.to_vec::<f64>()?);
    }
    Ok(out)
}

/// Checks `f` against PyTorch's values (output, then each gradient) in f64 and f32.
pub(crate) fn check(
    what: &str,
    f: &dyn Fn(&[Tensor]) -> Result<Tensor>,
    inputs: &[Tensor],
    want: &[&[f64]],
) {
    crate::init();
    for (dtype, tol) in [(DType::F64, 1e-12), (DType::F32, 2e-5)] {
        let got = run(f, inputs, dtype).unwrap();
        assert_eq!(got.len(), want.len(), "{what}");
        for (k, (g, w)) in got.iter().zip(want).enumerate() {
            assert_eq!(
                g.len(),
                w.len(),
                "{what} ({dtype}): result {k} has {} elements",
                g.len()
            );
            for (i, (a, b)) in g.iter().zip(w.iter()).enumerate() {
                assert!(
                    (a - b).abs() <= tol * (1.0 + b.abs()),
                    "{what} ({dtype}): result {k} (0: output, then gradients), element {i}: \
                     {a}, PyTorch {b}"
                );
            }
        }
    }
}

/// The error's message, checked to name `op` and every string in `mentions`.
pub(crate) fn expect_error<T: std::fmt::Debug>(result: Result<T>, op: &str, mentions: &[&str]) {
    let err = result.expect_err("an error");
    let msg = err.to_string();
    assert_eq!(err.op(), Some(op), "{msg}");
    assert!(
        msg.contains(&format!("`{op}`")),
        "does not name `{op}`: {msg}"
    );
    for m in mentions {
        assert!(msg.contains(m), "does not mention {m}: {msg}");
    }
}

// ----- shapes -----

#[test]
fn reshape_infer_fills_in_the_one_missing_size() -> Result<()> {
    crate::init();
    let x = wave(&[2, 3, 4], 0.1, 0.0, f64::sin).with_requires_grad(true);
    assert_eq!(ops::reshape_infer(&x, &[-1, 4])?.dims(), [6, 4]);
    assert_eq!(x.reshape_infer(&[3, -1, 2])?.dims(), [3, 4, 2]);
    assert_eq!(x.reshape_infer(&[-1])?.dims(), [24]);
    assert_eq!(x.reshape_infer(&[24])?.dims(), [24]);
    let y = x.reshape_infer(&[4, -1])?;
    assert_eq!(y.to_vec::<f64>()?, x.to_vec::<f64>()?);
    y.sum_all()?.backward()?;
    assert_eq!(x.grad().unwrap().dims(), [2, 3, 4]);
    // Empty tensors: -1 is fine where the known sizes are not 0.
    let e = Tensor::zeros([0, 3], DType::F32)?;
    assert_eq!(e.reshape_infer(&[3, -1])?.dims(), [3, 0]);
    expect_error(
        x.reshape_infer(&[-1, -1]),
        "reshape_infer",
        &["more than one -1"],
    );
    expect_error(
        x.reshape_infer(&[-1, 5]),
        "reshape_infer",
        &["[2, 3, 4]", "[-1, 5]"],
    );
    expect_error(x.reshape_infer(&[-2, 12]), "reshape_infer", &["-2"]);
    expect_error(
        x.reshape_infer(&[5, 5]),
        "reshape_infer",
        &["24 elements", "25"],
    );
    expect_error(e.reshape_infer(&[0, -1]), "reshape_infer", &["[0, -1]"]);
    Ok(())
}

#[test]
fn flatten_matches_pytorch() {
    check(
        "flatten 1..=2",
        &|v| ops::flatten(&v[0], 1, 2),
        &[wave(&[2, 3, 4], 0.37, 0.1, f64::sin)],
        &[FLATTEN_Y, FLATTEN_D0],
    );
}

#[test]
fn flatten_merges_the_axes_asked_for() -> Result<()> {
    crate::init();
    let x = Tensor::zeros([2, 3, 4, 5], DType::F64)?;
    assert_eq!(x.flatten(0, -1)?.dims(), [120]);
    assert_eq!(x.flatten(1, 2)?.dims(), [2, 12, 5]);
    assert_eq!(x.flatten(-2, -1)?.dims(), [2, 3, 20]);
    assert_eq!(x.flatten(2, 2)?.dims(), [2, 3, 4, 5]);
    assert_eq!(Tensor::scalar(1.0f64).flatten(0, -1)?.dims(), [1]);
    expect_error(x.flatten(2, 1), "flatten", &["start axis 2", "end axis 1"]);
    expect_error(x.flatten(0, 4), "flatten", &["axis 4"]);
    Ok(())
}

#[test]
fn stack_matches_pytorch() {
    check(
        "stack axis 1",
        &|v| ops::stack(&[&v[0], &v[1], &v[2]], 1),
        &[
            wave(&[2, 3], 0.3, 0.0, f64::sin),
            wave(&[2, 3], 0.5, 1.0, f64::sin),
            wave(&[2, 3], 0.7, 2.0, f64::cos),
        ],
        &[STACK_Y, STACK_D0, STACK_D1, STACK_D2],
    );
}

#[test]
fn stack_places_the_new_axis_and_checks_its_inputs() -> Result<()> {
    crate::init();
    let a = Tensor::zeros([2, 3], DType::F32)?;
    assert_eq!(ops::stack(&[&a, &a], 0)?.dims(), [2, 2, 3]);
    assert_eq!(ops::stack(&[&a, &a, &a, &a], -1)?.dims(), [2, 3, 4]);
    assert_eq!(ops::stack(&[&a], 2)?.dims(), [2, 3, 1]);
    expect_error(ops::stack(&[], 0), "stack", &["at least one"]);
    let b = Tensor::zeros([3, 2], DType::F32)?;
    expect_error(ops::stack(&[&a, &b], 0), "stack", &["[3, 2]", "[2, 3]"]);
    expect_error(ops::stack(&[&a, &a], 3), "stack", &["axis 3"]);
    // Tensors of several dtypes join in their common one (as PyTorch's `stack`),
    // and each gradient comes back in its input's dtype.
    let (a, c) = (
        Tensor::ones([2, 3], DType::F32)?.with_requires_grad(true),
        Tensor::zeros([2, 3], DType::F64)?.with_requires_grad(true),
    );
    let s = ops::stack(&[&a, &c], 0)?;
    assert_eq!((s.dims(), s.dtype()), ([2, 2, 3].as_slice(), DType::F64));
    assert_eq!(s.sum_all()?.to_scalar::<f64>()?, 6.0);
    s.sum_all()?.backward()?;
    assert_eq!(a.grad().unwrap().dtype(), DType::F32);
    assert_eq!(c.grad().unwrap().dtype(), DType::F64);
    Ok(())
}

// ----- linear algebra -----

#[test]
fn matmul_takes_vectors_as_numpy_does() {
    let v3 = wave(&[3], 0.7, 0.2, f64::sin);
    let mm = |v: &[Tensor]| ops::matmul(&v[0], &v[1]);
    check(
        "[3] @ [3]",
        &mm,
        &[v3.clone(), wave(&[3], 0.3, -0.4, f64::cos)],
        &[MM_VV_Y, MM_VV_D0, MM_VV_D1],
    );
    check(
        "[2, 3] @ [3]",
        &mm,
        &[wave(&[2, 3], 0.41, 0.3, f64::sin), v3.clone()],
        &[MM_MV_Y, MM_MV_D0, MM_MV_D1],
    );
    check(
        "[3] @ [3, 4]",
        &mm,
        &[v3.clone(), wave(&[3, 4], 0.23, 0.5, f64::cos)],
        &[MM_VM_Y, MM_VM_D0, MM_VM_D1],
    );
    check(
        "[2, 2, 3] @ [3]",
        &mm,
        &[wave(&[2, 2, 3], 0.29, -0.1, f64::sin), v3.clone()],
        &[MM_BV_Y, MM_BV_D0, MM_BV_D1],
    );
    check(
        "[3] @ [2, 3, 4]",
        &mm,
        &[v3, wave(&[2, 3, 4], 0.17, 0.6, f64::cos)],
        &[MM_VB_Y, MM_VB_D0, MM_VB_D1],
    );
}

#[test]
fn matmul_result_shapes_with_vectors() -> Result<()> {
    crate::init();
    let z = |s: &[usize]| Tensor::zeros(s, DType::F64).unwrap();
    assert_eq!(ops::matmul(&z(&[3]), &z(&[3]))?.dims(), [] as [usize; 0]);
    assert_eq!(ops::matmul(&z(&[2, 3]), &z(&[3]))?.dims(), [2]);
    assert_eq!(ops::matmul(&z(&[3]), &z(&[3, 4]))?.dims(), [4]);
    assert_eq!(ops::matmul(&z(&[5, 2, 3]), &z(&[3]))?.dims(), [5, 2]);
    assert_eq!(ops::matmul(&z(&[3]), &z(&[5, 3, 4]))?.dims(), [5, 4]);
    // The 2-D and batched behaviour is unchanged.
    assert_eq!(ops::matmul(&z(&[5, 2, 3]), &z(&[3, 4]))?.dims(), [5, 2, 4]);
    assert_eq!(ops::matmul(&z(&[0]), &z(&[0]))?.to_vec::<f64>()?, [0.0]);
    Ok(())
}

#[test]
fn dot_is_the_vector_product() -> Result<()> {
    crate::init();
    let a = values(&[1.0, 2.0, 3.0], &[3]).with_requires_grad(true);
    let b = values(&[4.0, -5.0, 6.0], &[3]).with_requires_grad(true);
    let d = a.dot(&b)?;
    assert_eq!(d.rank(), 0);
    assert_eq!(d.to_scalar::<f64>()?, 12.0);
    d.backward()?;
    assert_eq!(crate::grad_vec(&a), [4.0, -5.0, 6.0]);
    assert_eq!(crate::grad_vec(&b), [1.0, 2.0, 3.0]);
    expect_error(
        ops::dot(&a, &values(&[1.0, 2.0], &[2])),
        "dot",
        &["[3]", "[2]"],
    );
    let m = values(&[1.0; 6], &[2, 3]);
    expect_error(ops::dot(&m, &a), "dot", &["[2, 3]"]);
    Ok(())
}

// ----- reductions -----

#[test]
fn max_all_and_min_all_split_ties_as_pytorch() {
    let ties = values(&[1.0, 3.0, 3.0, 0.0, 3.0, -1.0, -1.0, 2.0, -1.0], &[3, 3]);
    check(
        "max_all",
        &|v| ops::max_all(&v[0]),
        std::slice::from_ref(&ties),
        &[MAX_ALL_Y, MAX_ALL_D0],
    );
    check(
        "min_all",
        &|v| v[0].min_all(),
        &[ties],
        &[MIN_ALL_Y, MIN_ALL_D0],
    );
}

#[test]
fn max_all_and_min_all_of_special_values() -> Result<()> {
    crate::init();
    let x = values(&[1.0, f64::NAN, 2.0], &[3]);
    assert!(ops::max_all(&x)?.to_scalar::<f64>()?.is_nan());
    assert!(ops::min_all(&x)?.to_scalar::<f64>()?.is_nan());
    let s = Tensor::scalar(2.5f32);
    assert_eq!(ops::max_all(&s)?.to_scalar::<f32>()?, 2.5);
    expect_error(
        ops::max_all(&Tensor::zeros([2, 0], DType::F64)?),
        "max_all",
        &["[2, 0]", "empty"],
    );
    expect_error(
        ops::min_all(&Tensor::zeros([0], DType::F64)?),
        "min_all",
        &["[0]"],
    );
    Ok(())
}

#[test]
fn argmax_and_argmin_give_first_positions_as_constants() -> Result<()> {
    crate::init();
    let x = values(
        &[
            1.0,
            3.0,
            3.0,
            0.0,
            -2.0,
            5.0,
            -2.0,
            5.0,
            f64::NAN,
            1.0,
            7.0,
            f64::NAN,
        ],
        &[3, 4],
    )
    .with_requires_grad(true);
    let am = ops::argmax(&x, 1, false)?;
    assert_eq!(am.to_vec::<i64>()?, [1, 1, 0]); // ties: the first; NaN is the max
    assert_eq!(am.dtype(), DType::I64);
    assert!(!am.requires_grad(), "positions are constants");
    assert!(
        ComputationGraph::of(&[&am]).nodes().is_empty(),
        "not recorded"
    );
    assert_eq!(ops::argmin(&x, 1, true)?.to_vec::<i64>()?, [3, 0, 0]);
    assert_eq!(ops::argmin(&x, 1, true)?.dims(), [3, 1]);
    assert_eq!(x.argmax(0, false)?.to_vec::<i64>()?, [2, 1, 2, 2]);
    assert_eq!(x.argmin(-2, false)?.to_vec::<i64>()?, [2, 2, 1, 2]);
    let f = x.to_dtype(DType::F32)?;
    assert_eq!(f.argmax(1, false)?.dtype(), DType::I64);
    assert_eq!(f.argmax(1, false)?.to_vec::<i64>()?, [1, 1, 0]);
    // Of integers too, and the positions index what they came from.
    let i = ints(&[4, 9, 9, -3, 0, 2], &[2, 3]);
    assert_eq!(i.argmax(1, true)?.to_vec::<i64>()?, [1, 2]);
    assert_eq!(i.argmin(1, false)?.to_vec::<i64>()?, [0, 0]);
    let top = ops::gather(&x, &x.argmax(1, true)?, 1)?;
    assert_eq!(top.to_vec::<f64>()?[..2], [3.0, 5.0]);
    expect_error(ops::argmax(&x, 2, false), "argmax", &["axis 2"]);
    expect_error(
        ops::argmin(&Tensor::zeros([2, 0], DType::F64)?, 1, false),
        "argmin",
        &["empty"],
    );
    Ok(())
}

#[test]
fn var_and_std_dev_match_pytorch() {
    let x = wave(&[2, 3, 4], 0.53, 0.2, f64::sin);
    let one = std::slice::from_ref(&x);
    check(
        "var correction 1",
        &|v| ops::var(&v[0], 1, 1, false),
        one,
        &[VAR1_Y, VAR1_D0],
    );
    check(
        "var correction 0 keepdim",
        &|v| v[0].var(-1, 0, true),
        one,
        &[VAR0K_Y, VAR0K_D0],
    );
    check(
        "std_dev correction 1",
        &|v| ops::std_dev(&v[0], 2, 1, false),
        one,
        &[STD1_Y, STD1_D0],
    );
    check(
        "std_dev correction 0 keepdim",
        &|v| v[0].std_dev(0, 0, true),
        one,
        &[STD0K_Y, STD0K_D0],
    );
}

#[test]
fn var_over_too_few_elements_divides_by_zero_as_pytorch() -> Result<()> {
    crate::init();
    let x = values(&[1.0, 2.0], &[2, 1]);
    // One element, correction 1: 0 / 0.
    assert!(
        ops::var(&x, 1, 1, false)?
            .to_vec::<f64>()?
            .iter()
            .all(|v| v.is_nan())
    );
    assert_eq!(ops::var(&x, 1, 0, false)?.to_vec::<f64>()?, [0.0, 0.0]);
    assert_eq!(ops::var(&x, 0, 1, false)?.to_vec::<f64>()?, [0.5]);
    expect_error(ops::var(&x, 2, 1, false), "var", &["axis 2"]);
    expect_error(ops::std_dev(&x, -3, 1, false), "std_dev", &["axis -3"]);
    Ok(())
}

#[test]
fn cumsum_matches_pytorch_both_ways() {
    let x = wave(&[2, 5, 3], 0.39, 0.1, f64::sin);
    let one = std::slice::from_ref(&x);
    check(
        "cumsum",
        &|v| ops::cumsum(&v[0], 1, false),
        one,
        &[CUMSUM_Y, CUMSUM_D0],
    );
    check(
        "cumsum reverse",
        &|v| v[0].cumsum(-1, true),
        one,
        &[CUMSUM_REV_Y, CUMSUM_REV_D0],
    );
}

#[test]
fn cumsum_of_long_axes_and_special_values() -> Result<()> {
    crate::init();
    let n = 37;
    let v: Vec<f64> = (0..n).map(|i| i as f64).collect();
    let x = values(&v, &[n]);
    let want: Vec<f64> = (0..n).map(|i| (i * (i + 1) / 2) as f64).collect();
    assert_eq!(ops::cumsum(&x, 0, false)?.to_vec::<f64>()?, want);
    let total = (n * (n - 1) / 2) as f64;
    // Entry i of the reversed sums: total - (0 + 1 + .. + i-1).
    let rev: Vec<f64> = (0..n)
        .map(|i| total - (i * i.saturating_sub(1) / 2) as f64)
        .collect();
    assert_eq!(ops::cumsum(&x, 0, true)?.to_vec::<f64>()?, rev);
    let inf = values(&[1.0, f64::INFINITY, 2.0, f64::NEG_INFINITY], &[4]);
    let got = ops::cumsum(&inf, 0, false)?.to_vec::<f64>()?;
    assert_eq!(got[..3], [1.0, f64::INFINITY, f64::INFINITY]);
    assert!(got[3].is_nan());
    assert_eq!(
        ops::cumsum(&Tensor::zeros([0, 2], DType::F32)?, 0, false)?.dims(),
        [0, 2]
    );
    expect_error(ops::cumsum(&x, 1, false), "cumsum", &["axis 1"]);
    Ok(())
}

// ----- indexing -----

#[test]
fn gather_matches_pytorch() {
    let i1 = ints(&[3, 0, 3, 1, 1, 2, 0, 2, 3], &[3, 3]);
    check(
        "gather axis 1",
        &move |v| ops::gather(&v[0], &i1, 1),
        &[wave(&[3, 4], 0.61, 0.2, f64::sin)],
        &[GATHER1_Y, GATHER1_D0],
    );
    let i0 = ints(&[1, 0, 2, 2, 0, 1, 1, 1], &[4, 2]);
    check(
        "gather axis 0, index smaller off the axis",
        &move |v| v[0].gather(&i0, 0),
        &[wave(&[3, 3], 0.43, -0.5, f64::sin)],
        &[GATHER0_Y, GATHER0_D0],
    );
}

#[test]
fn scatter_add_matches_pytorch() {
    let index = ints(&[2, 0, 2, 1, 2, 2, 0, 1], &[2, 4]);
    check(
        "scatter_add axis 0, src larger than the index",
        &move |v| ops::scatter_add(&v[0], &index, &v[1], 0),
        &[
            wave(&[3, 4], 0.31, 0.4, f64::sin),
            wave(&[3, 5], 0.27, -0.2, f64::cos),
        ],
        &[SCATTER_Y, SCATTER_D0, SCATTER_D1],
    );
}

#[test]
fn gather_and_scatter_add_read_views_and_refuse_bad_indices() -> Result<()> {
    crate::init();
    let base = wave(&[4, 3], 0.2, 0.1, f64::sin);
    let xt = base.t()?; // [3, 4], strided
    let index = ints(&[3, 0, 1, 1, 2, 3], &[3, 2]);
    let got = ops::gather(&xt, &index, 1)?.to_vec::<f64>()?;
    let b = base.to_vec::<f64>()?;
    assert_eq!(got, [b[9], b[0], b[4], b[4], b[8], b[11]]);
    // An index of another integer dtype is read as positions all the same.
    for d in [DType::I32, DType::U8] {
        assert_eq!(
            ops::gather(&xt, &index.to_dtype(d)?, 1)?.to_vec::<f64>()?,
            got
        );
    }
    // A float index is refused, with the conversion to write.
    let floats = index.to_dtype(DType::F64)?;
    expect_error(
        ops::gather(&xt, &floats, 1),
        "gather",
        &["integer", "f64", ".to_dtype(DType::I64)"],
    );
    // The index gets no gradient and is not saved as a differentiable input.
    assert!(!ops::gather(&xt, &index, 1)?.requires_grad());

    let bad = ints(&[4, 0, 1, 1, 2, 3], &[3, 2]);
    expect_error(ops::gather(&xt, &bad, 1), "gather", &["index 4", "0..4"]);
    let negative = ints(&[-1, 0, 1, 1, 2, 3], &[3, 2]);
    expect_error(ops::gather(&xt, &negative, 1), "gather", &["-1"]);
    expect_error(ops::gather(&xt, &ints(&[0], &[1]), 1), "gather", &["rank"]);
    let big = Tensor::zeros([4, 1], DType::I64)?;
    expect_error(ops::gather(&xt, &big, 1), "gather", &["axis 0", "[4, 1]"]);
    expect_error(ops::gather(&xt, &index, 2), "gather", &["axis 2"]);

    let x = Tensor::zeros([3, 4], DType::F64)?;
    let src = Tensor::ones([3, 2], DType::F64)?;
    let s = ops::scatter_add(&x, &index, &src, 1)?;
    assert_eq!(
        s.to_vec::<f64>()?,
        [1.0, 0.0, 0.0, 1.0, 0.0, 2.0, 0.0, 0.0, 0.0, 0.0, 1.0, 1.0]
    );
    expect_error(
        ops::scatter_add(&x, &bad, &src, 1),
        "scatter_add",
        &["index 4"],
    );
    let small = Tensor::ones([3, 1], DType::F64)?;
    expect_error(
        ops::scatter_add(&x, &index, &small, 1),
        "scatter_add",
        &["src", "[3, 1]"],
    );
    // An f32 src meets the f64 x in f64 (promotion, as PyTorch's), and each
    // gradient comes back in its input's dtype.
    let f32src = src.to_dtype(DType::F32)?.with_requires_grad(true);
    let xg = x.detach().with_requires_grad(true);
    let mixed = ops::scatter_add(&xg, &index, &f32src, 1)?;
    assert_eq!(mixed.dtype(), DType::F64);
    assert_eq!(mixed.to_vec::<f64>()?, s.to_vec::<f64>()?);
    mixed.sum_all()?.backward()?;
    assert_eq!(f32src.grad().unwrap().dtype(), DType::F32);
    assert_eq!(xg.grad().unwrap().dtype(), DType::F64);
    Ok(())
}

#[test]
fn gather_reads_positions_past_what_f32_holds_exactly() -> Result<()> {
    crate::init();
    // 2^25 f32 elements: positions above 2^24 are not all f32 numbers (2^24 + 1
    // rounds to 2^24, 2^25 - 1 to 2^25), so an index read through f32 would pick
    // the wrong elements or refuse; the i64 positions pick exactly.
    let n = 1usize << 25;
    let x = Tensor::from_vec((0..n).map(|i| (i % 4096) as f32).collect::<Vec<f32>>(), [n])?
        .with_requires_grad(true);
    let at = [n - 1, n - 2, (1 << 24) + 1, 1 << 24, (1 << 24) + 3, 5];
    let index = Tensor::from_vec(at.iter().map(|&i| i as i64).collect::<Vec<i64>>(), [6])?;
    let y = ops::gather(&x, &index, 0)?;
    let want: Vec<f32> = at.iter().map(|&i| (i % 4096) as f32).collect();
    assert_eq!(y.to_vec::<f32>()?, want);
    assert_eq!(want[..4], [4095.0, 4094.0, 1.0, 0.0]);
    // The gradient goes back to exactly those positions.
    let seed = Tensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0], [6])?;
    let g = grad(&y, &[&x], BackwardOptions::default().seed(seed))?;
    let g = g[0].as_ref().unwrap().to_vec::<f32>()?;
    for (k, &i) in at.iter().enumerate() {
        assert_eq!(g[i], (k + 1) as f32, "position {i}");
    }
    assert_eq!(g.iter().sum::<f32>(), 21.0, "nothing anywhere else");
    // index_select reads the same positions.
    let rows = ops::index_select(&x.detach(), &index, 0)?;
    assert_eq!(rows.to_vec::<f32>()?, want);
    Ok(())
}

#[test]
fn one_hot_gives_i64_rows_of_the_indices_shape() -> Result<()> {
    crate::init();
    let idx = ints(&[1, 0, 2, 2], &[2, 2]);
    let hot = ops::one_hot(&idx, 3)?;
    assert_eq!(
        (hot.dims(), hot.dtype()),
        ([2, 2, 3].as_slice(), DType::I64)
    );
    assert_eq!(hot.to_vec::<i64>()?, [0, 1, 0, 1, 0, 0, 0, 0, 1, 0, 0, 1]);
    assert!(!hot.requires_grad());
    let u8s = ops::one_hot(&idx.to_dtype(DType::U8)?, 4)?;
    assert_eq!(u8s.sum(-1, false)?.to_vec::<i64>()?, [1; 4]);
    assert_eq!(
        ops::one_hot(&Tensor::scalar(1i64), 2)?.to_vec::<i64>()?,
        [0, 1]
    );
    expect_error(ops::one_hot(&idx, 2), "one_hot", &["index 2", "0..2"]);
    expect_error(
        ops::one_hot(&values(&[1.0], &[1]), 2),
        "one_hot",
        &["integer", "f64", ".to_dtype(DType::I64)"],
    );
    Ok(())
}

#[test]
fn embedding_matches_pytorch_and_adds_repeated_rows() -> Result<()> {
    let idx = ints(&[1, 4, 1, 0], &[2, 2]);
    let i = idx.clone();
    check(
        "embedding",
        &move |v| ops::embedding(&v[0], &i),
        &[wave(&[5, 3], 0.35, 0.25, f64::sin)],
        &[EMBEDDING_Y, EMBEDDING_D0],
    );
    let w = Tensor::ones([5, 3], DType::F32)?.with_requires_grad(true);
    let y = ops::embedding(&w, &idx)?;
    assert_eq!(y.dims(), [2, 2, 3]);
    y.sum_all()?.backward()?;
    let g = w.grad().unwrap().to_vec::<f32>()?;
    assert_eq!(
        g,
        [
            1.0, 1.0, 1.0, 2.0, 2.0, 2.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 1.0, 1.0
        ]
    );
    let scalar_index = ops::embedding(&w, &Tensor::scalar(2i64))?;
    assert_eq!(scalar_index.dims(), [3]);
    expect_error(
        ops::embedding(&w, &ints(&[5], &[1])),
        "embedding",
        &["index 5", "0..5"],
    );
    expect_error(
        ops::embedding(&w, &values(&[1.0], &[1])),
        "embedding",
        &["integer", ".to_dtype(DType::I64)"],
    );
    expect_error(
        ops::embedding(&values(&[1.0; 3], &[3]), &idx),
        "embedding",
        &["[3]", "[V, D]"],
    );
    Ok(())
}

// ----- comparisons -----

#[test]
fn comparisons_are_constant_masks_that_broadcast() -> Result<()> {
    crate::init();
    let a = values(&[1.0, 2.0, f64::NAN, 4.0, -1.0, 2.0], &[2, 3]).with_requires_grad(true);
    let b = values(&[2.0, 2.0, 0.0], &[3]);
    type Compare = fn(&Tensor, &Tensor) -> Result<Tensor>;
    let (t, f) = (true, false);
    let want: [(&str, Compare, [bool; 6]); 6] = [
        ("eq", ops::eq, [f, t, f, f, f, f]),
        ("ne", ops::ne, [t, f, t, t, t, t]),
        ("lt", ops::lt, [t, f, f, f, t, f]),
        ("le", ops::le, [t, t, f, f, t, f]),
        ("gt", ops::gt, [f, f, f, t, f, t]),
        ("ge", ops::ge, [f, t, f, t, f, t]),
    ];
    for (name, f, w) in want {
        let m = f(&a, &b)?;
        assert_eq!(m.to_vec::<bool>()?, w, "{name}");
        assert_eq!(
            (m.dims(), m.dtype()),
            ([2, 3].as_slice(), DType::Bool),
            "{name}"
        );
        // Against an integer tensor: compared in the common dtype (f64 here).
        let bi = ints(&[2, 2, 0], &[3]);
        assert_eq!(f(&a, &bi)?.to_vec::<bool>()?, w, "{name} against i64");
        assert!(!m.requires_grad(), "{name}: a constant");
        assert!(
            ComputationGraph::of(&[&m]).nodes().is_empty(),
            "{name}: not recorded"
        );
        let c = Tensor::zeros([2], DType::F64)?;
        expect_error(f(&a, &c), name, &["[2, 3]", "[2]"]);
    }
    // The methods are the functions.
    assert_eq!(
        a.gt(&b)?.to_vec::<bool>()?,
        ops::gt(&a, &b)?.to_vec::<bool>()?
    );
    assert_eq!(
        a.ne(&b)?.to_vec::<bool>()?,
        ops::ne(&a, &b)?.to_vec::<bool>()?
    );
    assert_eq!(a.le(&b)?.dtype(), DType::Bool);
    // Mixed float dtypes compare in the wider one (promotion, as PyTorch's).
    let f32s = a.to_dtype(DType::F32)?;
    assert_eq!(
        ops::lt(&f32s, &b)?.to_vec::<bool>()?,
        ops::lt(&a, &b)?.to_vec::<bool>()?
    );
    // Integers and booleans compare exactly.
    let big = ints(&[(1 << 53) + 1, 5], &[2]);
    let near = ints(&[1 << 53, 5], &[2]);
    assert_eq!(ops::ne(&big, &near)?.to_vec::<bool>()?, [true, false]);
    let m = ops::eq(&a, &a)?;
    assert_eq!(ops::ne(&m, &m)?.to_vec::<bool>()?, [false; 6]);
    Ok(())
}

#[test]
fn where_of_a_comparison_is_a_leaky_relu() -> Result<()> {
    crate::init();
    for dtype in [DType::F64, DType::F32] {
        let v = [-1.5, -0.3, 0.4, 1.3, -0.7, 2.1];
        let x = values(&v, &[2, 3])
            .to_dtype(dtype)?
            .with_requires_grad(true);
        let zero = Tensor::zeros([], dtype)?;
        let y = ops::r#where(&ops::gt(&x, &zero)?, &x, &x.mul_scalar(0.1)?)?;
        let want: Vec<f64> = v
            .iter()
            .map(|&v| if v > 0.0 { v } else { 0.1 * v })
            .collect();
        for (g, w) in y.to_vec::<f64>()?.iter().zip(&want) {
            assert!((g - w).abs() < 1e-6, "{dtype}: {g} vs {w}");
        }
        let reference = ops::leaky_relu(&x, 0.1)?;
        let seed = wave(&[2, 3], 0.5, 0.3, f64::sin).to_dtype(dtype)?;
        let g = grad(&y, &[&x], BackwardOptions::default().seed(seed.clone()))?;
        let r = grad(&reference, &[&x], BackwardOptions::default().seed(seed))?;
        let (g, r) = (g[0].as_ref().unwrap(), r[0].as_ref().unwrap());
        for (a, b) in g.to_vec::<f64>()?.iter().zip(r.to_vec::<f64>()?) {
            assert!((a - b).abs() < 1e-6, "{dtype}: {a} vs leaky_relu's {b}");
        }
    }
    Ok(())
}

#[test]
fn where_takes_a_bool_condition_and_promotes_its_values() -> Result<()> {
    crate::init();
    let cond = Tensor::from_slice(&[true, false, true], [3])?;
    // f32 and f64 values meet in f64; each gradient comes back in its dtype.
    let a = values(&[1.0, 2.0, 3.0], &[3])
        .to_dtype(DType::F32)?
        .with_requires_grad(true);
    let b = values(&[-1.0, -2.0, -3.0], &[3]).with_requires_grad(true);
    let y = ops::r#where(&cond, &a, &b)?;
    assert_eq!(y.dtype(), DType::F64);
    assert_eq!(y.to_vec::<f64>()?, [1.0, -2.0, 3.0]);
    y.sum_all()?.backward()?;
    let (ga, gb) = (a.grad().unwrap(), b.grad().unwrap());
    assert_eq!(
        (ga.dtype(), ga.to_vec::<f64>()?),
        (DType::F32, vec![1.0, 0.0, 1.0])
    );
    assert_eq!(
        (gb.dtype(), gb.to_vec::<f64>()?),
        (DType::F64, vec![0.0, 1.0, 0.0])
    );
    // Integer values are selected exactly, in their common dtype.
    let big = ints(&[i64::MAX, i64::MIN, 7], &[3]);
    let small = Tensor::from_slice(&[1i32, 2, 3], [3])?;
    let picked = ops::r#where(&cond, &big, &small)?;
    assert_eq!(picked.dtype(), DType::I64);
    assert_eq!(picked.to_vec::<i64>()?, [i64::MAX, 2, 7]);
    let bools = ops::r#where(&cond, &cond, &ops::eq(&cond, &cond)?)?;
    assert_eq!(bools.to_vec::<bool>()?, [true, true, true]);
    // A float condition is refused, with the conversion to write.
    let mask = values(&[1.0, 0.0, 1.0], &[3]);
    expect_error(
        ops::r#where(&mask, &a, &b),
        "where",
        &["bool", "f64", ".to_dtype(DType::Bool)"],
    );
    assert_eq!(
        ops::r#where(&mask.to_dtype(DType::Bool)?, &a, &b)?.to_vec::<f64>()?,
        [1.0, -2.0, 3.0]
    );
    Ok(())
}

#[test]
fn sums_of_integers_are_i64_and_their_means_are_refused() -> Result<()> {
    crate::init();
    let i = Tensor::from_slice(&[1i32, 2, 3, 4, 5, i32::MAX], [2, 3])?;
    let total = ops::sum_all(&i)?;
    assert_eq!(total.dtype(), DType::I64);
    assert_eq!(total.to_scalar::<i64>()?, 15 + i32::MAX as i64);
    assert_eq!(
        ops::sum(&i, 1, false)?.to_vec::<i64>()?,
        [6, 9 + i32::MAX as i64]
    );
    let mask = Tensor::from_slice(&[true, false, true, true], [4])?;
    assert_eq!(ops::sum_all(&mask)?.to_scalar::<i64>()?, 3);
    assert_eq!(ops::sum(&mask, 0, true)?.dtype(), DType::I64);
    expect_error(
        ops::mean_all(&i),
        "mean_all",
        &["i32", ".to_dtype(DType::F32)"],
    );
    expect_error(ops::mean(&i, 0, false), "mean", &["i32", "floating"]);
    expect_error(ops::var(&mask, 0, 1, false), "var", &["bool"]);
    let mean = ops::mean_all(&i.to_dtype(DType::F64)?)?.to_scalar::<f64>()?;
    assert!(
        (mean - (15.0 + i32::MAX as f64) / 6.0).abs() < 1e-6,
        "{mean}"
    );
    Ok(())
}

// ----- dropout -----

#[test]
fn dropout_is_deterministic_scaled_and_saves_only_its_mask() -> Result<()> {
    crate::init();
    let x = Rng::new(5)
        .uniform([40, 50], 1.0, 2.0, DType::F64)?
        .with_requires_grad(true);
    let p = 0.3;
    let y1 = ops::dropout(&x, p, true, &mut Rng::new(11))?;
    let y2 = x.dropout(p, true, &mut Rng::new(11))?;
    assert_eq!(
        y1.to_vec::<f64>()?,
        y2.to_vec::<f64>()?,
        "same seed, same mask"
    );
    let y3 = ops::dropout(&x, p, true, &mut Rng::new(12))?;
    assert_ne!(
        y1.to_vec::<f64>()?,
        y3.to_vec::<f64>()?,
        "another seed, another mask"
    );

    // Kept elements are scaled by 1 / (1 - p); the others are 0.
    let (xs, ys) = (x.to_vec::<f64>()?, y1.to_vec::<f64>()?);
    let mut dropped = 0;
    for (a, b) in xs.iter().zip(&ys) {
        if *b == 0.0 {
            dropped += 1;
        } else {
            assert!((b - a / (1.0 - p)).abs() < 1e-12);
        }
    }
    let n = xs.len() as f64;
    let rate = dropped as f64 / n;
    // 2000 draws: the rate is within 4 standard deviations of p.
    assert!(
        (rate - p).abs() < 4.0 * (p * (1.0 - p) / n).sqrt(),
        "drop rate {rate}"
    );

    // One node, keeping the mask, not x.
    let graph = ComputationGraph::of(&[&y1]);
    let node = graph
        .nodes()
        .iter()
        .find(|n| n.op_name() == "dropout")
        .unwrap();
    assert_eq!(node.saved_tensor_count(), 1);
    assert_eq!(registry()?.get("dropout")?.saved_names(), ["mask"]);
    // The gradient is the mask: 1 / (1 - p) where kept, 0 where dropped.
    y1.sum_all()?.backward()?;
    for (g, y) in crate::grad_vec(&x).iter().zip(&ys) {
        let want = if *y == 0.0 { 0.0 } else { 1.0 / (1.0 - p) };
        assert!((g - want).abs() < 1e-12, "{g} vs {want}");
    }
    Ok(())
}

#[test]
fn dropout_preserves_the_mean() -> Result<()> {
    crate::init();
    let x = Tensor::ones([200, 500], DType::F32)?;
    let mut rng = Rng::new(3);
    for p in [0.1, 0.5, 0.9] {
        let m = ops::dropout(&x, p, true, &mut rng)?
            .mean_all()?
            .to_scalar::<f32>()? as f64;
        // The mean of 100000 draws of 0 or 1/(1-p): standard deviation √(p/(1-p)/n).
        let sd = (p / (1.0 - p) / 1e5).sqrt();
        assert!((m - 1.0).abs() < 5.0 * sd, "p = {p}: mean {m}");
    }
    Ok(())
}

#[test]
fn dropout_in_evaluation_and_at_the_ends() -> Result<()> {
    crate::init();
    let x = wave(&[3, 4], 0.3, 0.1, f64::sin).with_requires_grad(true);
    let mut rng = Rng::new(1);
    let before = rng.clone().next_u64();
    let y = ops::dropout(&x, 0.5, false, &mut rng)?;
    assert_eq!(y.id(), x.id(), "evaluation: x itself");
    assert_eq!(rng.next_u64(), before, "evaluation draws nothing");
    assert_eq!(ops::dropout(&x, 0.0, true, &mut rng)?.id(), x.id());
    let zeros = ops::dropout(&x, 1.0, true, &mut rng)?;
    assert!(zeros.to_vec::<f64>()?.iter().all(|&v| v == 0.0));
    for p in [-0.1, 1.5, f64::NAN] {
        expect_error(
            ops::dropout(&x, p, true, &mut rng),
            "dropout",
            &["probability"],
        );
    }
    Ok(())
}

// ----- layer norm -----

#[test]
fn layer_norm_matches_pytorch() {
    check(
        "layer_norm with weight and bias",
        &|v| ops::layer_norm(&v[0], Some(&v[1]), Some(&v[2]), 1e-5),
        &[
            wave(&[3, 5], 0.83, 0.1, f64::sin),
            wave(&[5], 0.5, 0.3, f64::cos),
            wave(&[5], 0.9, -0.7, f64::sin),
        ],
        &[LAYER_NORM_Y, LAYER_NORM_D0, LAYER_NORM_D1, LAYER_NORM_D2],
    );
    check(
        "layer_norm without affine",
        &|v| v[0].layer_norm(None, None, 1e-5),
        &[wave(&[2, 2, 4], 0.47, 0.9, f64::sin)],
        &[LAYER_NORM_PLAIN_Y, LAYER_NORM_PLAIN_D0],
    );
}

#[test]
fn layer_norm_checks_its_arguments() -> Result<()> {
    crate::init();
    let x = Tensor::ones([2, 4], DType::F64)?;
    let w = Tensor::ones([3], DType::F64)?;
    expect_error(
        ops::layer_norm(&x, Some(&w), None, 1e-5),
        "layer_norm",
        &["weight", "[3]", "[4]"],
    );
    expect_error(
        ops::layer_norm(&x, None, Some(&w), 1e-5),
        "layer_norm",
        &["bias"],
    );
    expect_error(
        ops::layer_norm(&Tensor::scalar(1.0f64), None, None, 1e-5),
        "layer_norm",
        &["last axis"],
    );
    expect_error(
        ops::layer_norm(&Tensor::zeros([2, 0], DType::F64)?, None, None, 1e-5),
        "layer_norm",
        &["[2, 0]"],
    );
    expect_error(
        ops::layer_norm(&x, None, None, -1.0),
        "layer_norm",
        &["eps"],
    );
    // Constant rows normalise to 0 (the variance is 0, eps keeps it finite).
    let y = ops::layer_norm(&x, None, None, 1e-5)?;
    assert!(y.to_vec::<f64>()?.iter().all(|&v| v == 0.0));
    Ok(())
}

// ----- the CUDA program -----

/// index.cu compiles with NVRTC, its entry points as the raw-kernel ABI wants them
/// (see `assert_raw_program_compiles`).
#[test]
fn index_cuda_program_compiles_with_nvrtc() {
    crate::assert_raw_program_compiles(ops::INDEX_PROGRAM, &["index_gather", "index_scatter"]);
}

// ----- computed by scripts/reference/ops_batch.py (PyTorch, float64) -----

#[rustfmt::skip]
const FLATTEN_Y: &[f64] = &[
    0.09983341664682815, 0.4528862853790683, 0.7446431199708593, 0.9356160015533859,
    0.9999576464987401, 0.9289597150038692, 0.7322314440302514, 0.4363990821601263,
    0.08150215176026912, -0.28442571253646254, -0.6118578909427193, -0.8564779741650012,
    -0.9851777815038593, -0.980538397794069, -0.8431877418564172, -0.59171558063101,
    -0.2601574914304689, 0.10661169378122266, 0.4589514863776903, 0.7491743483316894,
    0.9379999767747389, 0.999871708718139, 0.9264154954967662, 0.7275732909714597,
];
#[rustfmt::skip]
const FLATTEN_D0: &[f64] = &[
    0.29552020666133955, 0.7173560908995228, 0.963558185417193, 0.9738476308781951,
    0.7457052121767203, 0.3349881501559051, -0.1577456941432482, -0.6118578909427189,
    -0.9161659367494549, -0.9961646088358407, -0.8322674422239013, -0.46460217941375737,
    0.016813900484349713, 0.49411335113860816, 0.8504366206285644, 0.998543345374605,
    0.9021718337562933, 0.5849171928917617, 0.1244544235070617, -0.3664791292519284,
    -0.7676858097635825, -0.9809362300664916, -0.954019249902089, -0.6935250847771224,
];
#[rustfmt::skip]
const MM_VV_Y: &[f64] = &[
    1.9420487895870244,
];
#[rustfmt::skip]
const MM_VV_D0: &[f64] = &[
    0.2721921352954314, 0.2940438365518558, 0.28962947762551555,
];
#[rustfmt::skip]
const MM_VV_D1: &[f64] = &[
    0.05871080169382652, 0.23148893021650233, 0.2953941977440454,
];
#[rustfmt::skip]
const MM_MV_Y: &[f64] = &[
    1.4690263772245764, 1.6402164465623275,
];
#[rustfmt::skip]
const MM_MV_D0: &[f64] = &[
    0.05871080169382652, 0.23148893021650233, 0.2953941977440454, 0.1425166545207693,
    0.5619243297867752, 0.7170502124442055,
];
#[rustfmt::skip]
const MM_MV_D1: &[f64] = &[
    0.8040914039172151, 0.8616471114942941, 0.7763776118251813,
];
#[rustfmt::skip]
const MM_VM_Y: &[f64] = &[
    -0.40324234699462475, -0.7546160652282194, -1.0662462606931773, -1.3217202404459547,
];
#[rustfmt::skip]
const MM_VM_D0: &[f64] = &[
    1.7084587395306179, -0.8055989150673089, -2.684554861366379,
];
#[rustfmt::skip]
const MM_VM_D1: &[f64] = &[
    0.05871080169382652, 0.1425166545207693, 0.19142945987893722, 0.19347365712292683,
    0.23148893021650233, 0.5619243297867752, 0.7547810556291153, 0.7628410551438627,
    0.2953941977440454, 0.7170502124442055, 0.9631473271375983, 0.9734323852103514,
];
#[rustfmt::skip]
const MM_BV_Y: &[f64] = &[
    0.5896866907869295, 1.7969475584373973, 1.727752288570145, 0.43125352701199643,
];
#[rustfmt::skip]
const MM_BV_D0: &[f64] = &[
    0.05871080169382652, 0.23148893021650233, 0.2953941977440454, 0.1425166545207693,
    0.5619243297867752, 0.7170502124442055, 0.19142945987893722, 0.7547810556291153,
    0.9631473271375983, 0.19347365712292683, 0.7628410551438627, 0.9734323852103514,
];
#[rustfmt::skip]
const MM_BV_D1: &[f64] = &[
    2.0061156069469357, 1.9098896165237682, 1.6541644489314538,
];
#[rustfmt::skip]
const MM_VB_Y: &[f64] = &[
    0.00927064568987851, -0.29326523496980245, -0.5873461421906593, -0.8644935863226184,
    -1.5984553462792683, -1.4400730819145804, -1.2401728392637605, -1.0045178355121027,
];
#[rustfmt::skip]
const MM_VB_D0: &[f64] = &[
    1.557168122909391, -0.5271817488245216, -2.377012414328095,
];
#[rustfmt::skip]
const MM_VB_D1: &[f64] = &[
    0.05871080169382652, 0.1425166545207693, 0.19142945987893722, 0.19347365712292683,
    0.23148893021650233, 0.5619243297867752, 0.7547810556291153, 0.7628410551438627,
    0.2953941977440454, 0.7170502124442055, 0.9631473271375983, 0.9734323852103514,
    0.14814875547353815, 0.06655187161574914, -0.03133923149124153, -0.12155739773526751,
    0.584130959347497, 0.2624052324234525, -0.12356644710027281, -0.4792847508433497,
    0.7453872457423144, 0.3348453122275468, -0.1576784318590499, -0.6115969965989899,
];
#[rustfmt::skip]
const MAX_ALL_Y: &[f64] = &[
    3.0,
];
#[rustfmt::skip]
const MAX_ALL_D0: &[f64] = &[
    0.0, 0.09850673555377985, 0.09850673555377985, 0.0,
    0.09850673555377985, 0.0, 0.0, 0.0,
    0.0,
];
#[rustfmt::skip]
const MIN_ALL_Y: &[f64] = &[
    -1.0,
];
#[rustfmt::skip]
const MIN_ALL_D0: &[f64] = &[
    0.0, 0.0, 0.0, 0.0,
    0.0, 0.09850673555377985, 0.09850673555377985, 0.0,
    0.09850673555377985,
];
#[rustfmt::skip]
const VAR1_Y: &[f64] = &[
    0.75145365953618, 0.7311985073724929, 0.7299982442428761, 0.749079846136651,
    0.7480263555647362, 0.7295362263475431, 0.7318002626437116, 0.7525040401359353,
];
#[rustfmt::skip]
const VAR1_D0: &[f64] = &[
    0.06188568912295232, 0.4814087386280625, 0.914055810641655, 0.9406140416415374,
    0.2195640750928767, 0.20924984727583026, -0.23088802354185553, -0.6867456260488318,
    -0.281449764215829, -0.6906585859038927, -0.6831677870997995, -0.2538684155927057,
    0.2112119645523165, 0.24293820182417827, -0.15272972741173632, -0.5785294318524068,
    0.5128613412746772, 0.07244372382741954, 0.049623062878793214, 0.4644582349125887,
    -0.7240733058269936, -0.3153819256515978, 0.10310666453294312, 0.11407119693981806,
];
#[rustfmt::skip]
const VAR0K_Y: &[f64] = &[
    0.09804620837006797, 0.28890685627916907, 0.0851906293689304, 0.07971783097306895,
    0.2884144678428704, 0.10396709494582117,
];
#[rustfmt::skip]
const VAR0K_D0: &[f64] = &[
    -0.07384395779480997, -0.004662632465490786, 0.03748160861182406, 0.04102498164847667,
    0.2546939276591777, 0.09517063607435694, -0.09264514435257389, -0.25721941938096077,
    -0.1163932643363979, -0.11825796606700119, 0.007708503632169947, 0.2269427267712293,
    -0.22294595432799197, -0.004417348484633459, 0.11763678498491394, 0.10972651782771146,
    0.26830858280951536, 0.09505214989974685, -0.10000870125369711, -0.2633520314555651,
    -0.049145901222903646, -0.04305962410583301, 0.006438537452710325, 0.08576698787602627,
];
#[rustfmt::skip]
const STD1_Y: &[f64] = &[
    0.3615636566730087, 0.6206521906072343, 0.33702745559559466, 0.32602214847679484,
    0.6201230714870185, 0.37232082034328257,
];
#[rustfmt::skip]
const STD1_D0: &[f64] = &[
    -0.13615667473200166, -0.008597162868257308, 0.0691102067737627, 0.07564363082649625,
    0.2735766574942078, 0.10222648316791169, -0.09951375424608495, -0.27628938641603457,
    -0.2302349801753447, -0.2339235060400164, 0.015248023079796244, 0.44891046313556515,
    -0.4558912236885659, -0.009032818793184683, 0.24054967949166176, 0.22437436299008875,
    0.2884465951423989, 0.10218632856412131, -0.10751489594249106, -0.2831180277640291,
    -0.08799919950325055, -0.07710129141874958, 0.011528655039622273, 0.15357183588237774,
];
#[rustfmt::skip]
const STD0K_Y: &[f64] = &[
    0.03731183209097602, 0.027608802200010524, 0.010330307402249023, 0.009782677665507555,
    0.027211434318982125, 0.0371737581930239, 0.03693612849411278, 0.026563747451299857,
    0.008902649746587471, 0.011201209155955794, 0.028231614662733717, 0.03751566433015494,
];
#[rustfmt::skip]
const STD0K_D0: &[f64] = &[
    -0.14776010333066977, -0.3586780454497625, -0.4817790927085926, 0.4869238154390976,
    0.37285260608836124, 0.16749407507795247, -0.07887284707162419, -0.30592894547135946,
    -0.4580829683747232, 0.49808230441792034, 0.4161337211119506, 0.23230108970687882,
    0.14776010333066977, 0.35867804544976106, 0.48177909270859776, -0.4869238154390976,
    -0.37285260608835974, -0.16749407507795258, 0.07887284707162408, 0.30592894547135946,
    0.4580829683747289, -0.49808230441792034, -0.4161337211119506, -0.23230108970687866,
];
#[rustfmt::skip]
const STACK_Y: &[f64] = &[
    0.0, 0.29552020666133955, 0.5646424733950354, 0.8414709848078965,
    0.9974949866040544, 0.9092974268256817, -0.4161468365471424, -0.9040721420170612,
    -0.9667981925794611, 0.7833269096274833, 0.9320390859672263, 0.9974949866040544,
    0.5984721441039565, 0.1411200080598672, -0.35078322768961984, -0.5748239465332692,
    0.0874989834394464, 0.70866977429126,
];
#[rustfmt::skip]
const STACK_D0: &[f64] = &[
    0.29552020666133955, 0.7173560908995228, 0.963558185417193, -0.9961646088358407,
    -0.8322674422239013, -0.46460217941375737,
];
#[rustfmt::skip]
const STACK_D1: &[f64] = &[
    0.9738476308781951, 0.7457052121767203, 0.3349881501559051, 0.016813900484349713,
    0.49411335113860816, 0.8504366206285644,
];
#[rustfmt::skip]
const STACK_D2: &[f64] = &[
    -0.1577456941432482, -0.6118578909427189, -0.9161659367494549, 0.998543345374605,
    0.9021718337562933, 0.5849171928917617,
];
#[rustfmt::skip]
const GATHER1_Y: &[f64] = &[
    0.8964057411515598, 0.19866933079506122, 0.8964057411515598, -0.10819513453010837,
    -0.10819513453010837, -0.6581864701049053, -0.9331885764572976, 0.016813900484349713,
    0.5865679576887464,
];
#[rustfmt::skip]
const GATHER1_D0: &[f64] = &[
    0.7173560908995228, 0.0, 0.0, 1.2590783920785324,
    0.0, 1.7195528430549154, 0.3349881501559051, 0.0,
    -0.1577456941432482, 0.0, -0.6118578909427189, -0.9161659367494549,
];
#[rustfmt::skip]
const GATHER0_Y: &[f64] = &[
    0.7103532724176078, -0.06994284733753277, 0.8731329795075164, 0.590430918113913,
    -0.479425538604203, 0.9390993563190676, 0.7103532724176078, 0.9390993563190676,
];
#[rustfmt::skip]
const GATHER0_D0: &[f64] = &[
    0.7457052121767203, 0.7173560908995228, 0.0, 0.13777451251809134,
    -0.2768697407868138, 0.0, 0.963558185417193, 0.9738476308781951,
    0.0,
];
#[rustfmt::skip]
const SCATTER_Y: &[f64] = &[
    0.3894183423086505, 1.6493847712748162, 0.7331864526527505, 0.9711483779210446,
    0.9976063813191737, 0.9289597150038692, 0.7717526620201259, 0.9811684734343132,
    1.6471733683865097, 0.10183702654327147, 0.5919714378387264, -0.6197368435949633,
];
#[rustfmt::skip]
const SCATTER_D0: &[f64] = &[
    0.29552020666133955, 0.7173560908995228, 0.963558185417193, 0.9738476308781951,
    0.7457052121767203, 0.3349881501559051, -0.1577456941432482, -0.6118578909427189,
    -0.9161659367494549, -0.9961646088358407, -0.8322674422239013, -0.46460217941375737,
];
#[rustfmt::skip]
const SCATTER_D1: &[f64] = &[
    -0.9161659367494549, 0.7173560908995228, -0.8322674422239013, -0.6118578909427189,
    0.0, -0.9161659367494549, -0.9961646088358407, 0.963558185417193,
    -0.6118578909427189, 0.0, 0.0, 0.0,
    0.0, 0.0, 0.0,
];
#[rustfmt::skip]
const CUMSUM_Y: &[f64] = &[
    0.09983341664682815, 0.470625888171158, 0.7707388788989693, 1.0549342722315205,
    1.4666498780876949, 1.6581012475323447, 1.7003692705658913, 1.7732248644712179,
    1.5797742140614794, 1.2489035184044677, 1.0164223691632897, 0.6312929973570538,
    0.25118827284357437, 0.11931184631364722, -0.0304830576359838, -0.32705481486974064,
    0.05678413230707805, 0.43209513172364633, 0.4154584569260612, 0.9982035048798963,
    1.4310364735634185, 1.321898879020496, 1.6760120802721832, 1.7784186359275926,
    1.2866841220351086, 1.2634890223550905, 1.050540765577856, 0.3527655064399654,
    0.26378731523813315, 0.135193049038407,
];
#[rustfmt::skip]
const CUMSUM_D0: &[f64] = &[
    0.1322714350447955, 0.5130493210482311, 0.7682148400384502, -0.16324877161654405,
    -0.2043067698512917, -0.19534334537874276, -1.1370964024947392, -0.950011982028012,
    -0.5303314955346479, -0.979350708351491, -0.3381540910852931, 0.38583444121480703,
    0.016813900484349713, 0.49411335113860816, 0.8504366206285644, 0.822525416893479,
    0.7999552439784281, 0.5815281279229756, -0.17601792848112596, -0.10221658977786519,
    -0.003389064968786104, -0.30047235198818767, 0.2642625394740632, 0.7642967447947964,
    0.6804638780783039, 1.2182817893761522, 1.4578218295719187, 0.9436956694441048,
    0.9867719642746133, 0.7882520673753163,
];
#[rustfmt::skip]
const CUMSUM_REV_Y: &[f64] = &[
    1.3411981837169555, 1.2413647670701273, 0.7707388788989693, 2.838487214134604,
    1.883386358549912, 0.8873623686333753, 0.8736829512470283, 0.22824795291265765,
    -0.0783270334708653, -2.156749464173777, -1.7052837120123538, -0.9484812167044256,
    -2.5566018234035734, -1.5588865778426801, -0.6617760549930376, 0.16182444916098376,
    0.4888792640307244, 0.43209513172364633, 2.682873986208392, 1.9403607144125903,
    0.998941341839772, 1.931631159850896, 1.025190737756461, 0.34738216236417424,
    -1.1756156852522166, -1.1404009282668293, -0.7278778703497366, -2.8489680392515497,
    -1.9150494236564064, -0.915347716539449,
];
#[rustfmt::skip]
const CUMSUM_REV_D0: &[f64] = &[
    0.29552020666133955, 1.0128762975608623, 1.9764344829780551, 0.9738476308781951,
    1.7195528430549154, 2.0545409932108205, -0.1577456941432482, -0.7696035850859672,
    -1.685769521835422, -0.9961646088358407, -1.828432051059742, -2.2930342304734994,
    0.016813900484349713, 0.5109272516229578, 1.3613638722515222, 0.998543345374605,
    1.9007151791308983, 2.48563237202266, 0.1244544235070617, -0.24202470574486667,
    -1.0097105155084491, -0.9809362300664916, -1.9349554799685804, -2.628480564745703,
    -0.26323179136580094, -0.03172196626426199, 0.6378477959323403, 0.9436956694441048,
    1.930467633718718, 2.7187197010940345,
];
#[rustfmt::skip]
const LAYER_NORM_Y: &[f64] = &[
    -1.322909500317604, 0.7668269617269838, 1.2143541958801316, 0.8611417677007058,
    1.2553537553152854, -1.5853891024264504, -0.5232996003957984, 0.8174260004512757,
    0.7271557320167991, -0.7572190533984601, 0.9098900558353978, 0.6584721228660624,
    0.7598928222564307, 1.154102899464175, 0.7178715630125759,
];
#[rustfmt::skip]
const LAYER_NORM_D0: &[f64] = &[
    0.8536829855833606, 0.510873308348978, -0.22521778271086612, -0.7343055148093593,
    -0.40503299641211377, 0.44673683609091547, -0.11453144534325352, -0.39050460502349094,
    -0.1823773796639387, 0.24067659393976776, -0.1714096925087264, 0.24053294746536996,
    0.39018996402325623, 0.05106117585683312, -0.5103743948367327,
];
#[rustfmt::skip]
const LAYER_NORM_D1: &[f64] = &[
    -1.893868509239315, 0.4418407974459583, 1.3245163654647913, -1.0604541066464264,
    -3.23799552949135,
];
#[rustfmt::skip]
const LAYER_NORM_D2: &[f64] = &[
    -0.20175908540665655, 0.09500821734251719, 0.36851419495882376, 0.5517950452673483,
    0.599977223969444,
];
#[rustfmt::skip]
const LAYER_NORM_PLAIN_Y: &[f64] = &[
    -0.779706937655127, 1.061909192686013, 0.9127196250706024, -1.1949218801014863,
    1.4041131267402875, 0.39955816578525416, -0.5539740454395142, -1.2496972470860273,
    -1.0078291538439377, -0.7326691097156552, 0.1874659308332284, 1.5530323327263649,
    -1.5675111836822764, -0.16011165344153344, 0.7532166402845518, 0.9744061968392583,
];
#[rustfmt::skip]
const LAYER_NORM_PLAIN_D0: &[f64] = &[
    -3.68992958527125, -0.804009365121449, 1.5888181756806485, 2.905120774712049,
    -0.09933725258478643, 0.11774693623046395, 0.10009224947023154, -0.11850193311590929,
    0.26537654218136275, -0.16852321947934157, -0.215782973745958, 0.11892965104393616,
    0.06109842907768881, -0.12170785955981867, -0.08063320985394618, 0.1412426403360768,
];
#[rustfmt::skip]
const EMBEDDING_Y: &[f64] = &[
    0.963558185417193, 0.9968650284539189, 0.9092974268256817, -0.9657730606206386,
    -0.9961646088358407, -0.9057666414687049, 0.963558185417193, 0.9968650284539189,
    0.9092974268256817, 0.24740395925452294, 0.5646424733950354, 0.8134155047893737,
];
#[rustfmt::skip]
const EMBEDDING_D0: &[f64] = &[
    -0.9961646088358407, -0.8322674422239013, -0.46460217941375737, 0.13777451251809134,
    0.10549819995680387, 0.04739224866773806, 0.0, 0.0,
    0.0, 0.0, 0.0, 0.0,
    0.9738476308781951, 0.7457052121767203, 0.3349881501559051,
];
