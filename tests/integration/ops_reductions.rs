//! Products and scans (`prod`, `prod_all`, `cumprod`, `logcumsumexp`), reductions
//! over several axes (`mean_axes`, `var_axes`, `std_dev_axes`), whole-tensor
//! positions (`argmax_all`, `argmin_all`), and selections by position
//! (`max_with_indices`, `min_with_indices`, `sort`, `argsort`, `topk`): values and
//! gradients against PyTorch, the conventions (zeros, ties, NaN, stability), and
//! the errors. The registry-wide tests gradient-check the registered ones to second
//! order.
//!
//! The constants were computed by PyTorch 2 in float64 with
//! `scripts/reference/ops_reductions.py` (its inputs are closed-form: the test
//! builds the same ones with [`wave`]).

use crate::ops_batch::{check, expect_error, ints, run, values, wave};
use autograd::ComputationGraph;
use autograd::ops;
use autograd::prelude::*;

/// The zeros case of `prod`: rows with one zero, two zeros, none.
#[rustfmt::skip]
const ZEROS: [f64; 12] = [0.7, 0.0, -1.2, 0.9, 0.0, 1.1, 0.0, -0.8, 1.3, 0.6, -0.5, 0.4];
/// The zeros case of `cumprod`: zeros inside, at the end, two in a row.
#[rustfmt::skip]
const ZEROS5: [f64; 15] = [
    0.7, 0.0, -1.2, 0.9, 0.5, 1.1, 0.0, -0.8, 0.0, 0.6, -0.5, 0.4, 1.2, 0.8, 0.0,
];
/// Ties of max and min.
const TIES: [f64; 9] = [1.0, 3.0, 3.0, 0.0, 3.0, -1.0, -1.0, 2.0, -1.0];

// ----- products and scans -----

#[test]
fn prod_matches_pytorch_with_and_without_zeros() {
    check(
        "prod axis 1",
        &|v| ops::prod(&v[0], 1, false),
        &[wave(&[2, 3, 4], 0.37, 0.1, f64::sin)],
        &[PROD1_Y, PROD1_D0],
    );
    check(
        "prod axis -1 keepdim",
        &|v| v[0].prod(-1, true),
        &[wave(&[2, 3, 4], 0.41, 0.3, f64::sin)],
        &[PROD_K_Y, PROD_K_D0],
    );
    check(
        "prod_all",
        &|v| v[0].prod_all(),
        &[wave(&[2, 3], 0.53, 0.2, f64::sin)],
        &[PROD_ALL_Y, PROD_ALL_D0],
    );
    check(
        "prod with zeros",
        &|v| ops::prod(&v[0], -1, false),
        &[values(&ZEROS, &[3, 4])],
        &[PROD_Z_Y, PROD_Z_D0],
    );
}

#[test]
fn prod_of_empty_and_integer_tensors_is_as_pytorch() -> Result<()> {
    crate::init();
    let empty = Tensor::zeros([2, 0], DType::F32)?;
    assert_eq!(ops::prod(&empty, 1, false)?.to_vec::<f32>()?, [1.0, 1.0]);
    assert_eq!(ops::prod_all(&empty)?.to_vec::<f32>()?, [1.0]);
    let ints = Tensor::from_slice(&[2i32, -3, 4, 5], [2, 2])?;
    let p = ops::prod(&ints, 1, false)?;
    assert_eq!(p.dtype(), DType::I64);
    assert_eq!(p.to_vec::<i64>()?, [-6, 20]);
    let c = ops::cumprod(&ints, 0, false)?;
    assert_eq!(c.to_vec::<i64>()?, [2, -3, 8, -15]);
    expect_error(ops::prod(&ints, 2, false), "prod", &["axis 2"]);
    Ok(())
}

#[test]
fn cumprod_matches_pytorch_with_and_without_zeros() {
    check(
        "cumprod axis 1",
        &|v| ops::cumprod(&v[0], 1, false),
        &[wave(&[2, 5, 3], 0.71, 0.4, f64::sin)],
        &[CUMPROD1_Y, CUMPROD1_D0],
    );
    check(
        "cumprod axis -1 reverse",
        &|v| v[0].cumprod(-1, true),
        &[wave(&[2, 3, 5], 0.77, 0.6, f64::sin)],
        &[CUMPROD_R_Y, CUMPROD_R_D0],
    );
    check(
        "cumprod with zeros",
        &|v| ops::cumprod(&v[0], -1, false),
        &[values(&ZEROS5, &[3, 5])],
        &[CUMPROD_Z_Y, CUMPROD_Z_D0],
    );
    check(
        "cumprod reverse with zeros",
        &|v| ops::cumprod(&v[0], 1, true),
        &[values(&ZEROS5, &[3, 5])],
        &[CUMPROD_ZR_Y, CUMPROD_ZR_D0],
    );
}

#[test]
fn logcumsumexp_matches_pytorch_even_far_apart() {
    check(
        "logcumsumexp axis 1",
        &|v| ops::logcumsumexp(&v[0], 1, false),
        &[wave(&[2, 5, 3], 0.83, 0.2, f64::sin)],
        &[LCSE1_Y, LCSE1_D0],
    );
    check(
        "logcumsumexp axis -1 reverse",
        &|v| v[0].logcumsumexp(-1, true),
        &[wave(&[2, 3, 5], 0.59, -0.3, f64::sin)],
        &[LCSE_R_Y, LCSE_R_D0],
    );
    // Far apart in f64 only: exp(±800) is outside f32's range in PyTorch too.
    crate::init();
    let far = values(
        &[-300.0, 2.0, 300.0, -1.0, 800.0, -5.0, 799.0, 0.5],
        &[2, 4],
    );
    let got = run(&|v| ops::logcumsumexp(&v[0], -1, false), &[far], DType::F64).unwrap();
    for (k, want) in [LCSE_FAR_Y, LCSE_FAR_D0].iter().enumerate() {
        for (a, b) in got[k].iter().zip(want.iter()) {
            assert!(
                (a - b).abs() <= 1e-12 * (1.0 + b.abs()),
                "far apart, result {k}: {a}, PyTorch {b}"
            );
        }
    }
}

#[test]
fn logcumsumexp_of_infinities_and_integers() -> Result<()> {
    crate::init();
    let x = values(&[f64::NEG_INFINITY, 1.0, f64::INFINITY, 0.0], &[4]);
    let y = ops::logcumsumexp(&x, 0, false)?.to_vec::<f64>()?;
    assert_eq!(y[0], f64::NEG_INFINITY);
    assert_eq!(y[1], 1.0);
    assert_eq!(y[2..], [f64::INFINITY, f64::INFINITY]);
    let ints = Tensor::from_slice(&[1i64, 2], [2])?;
    expect_error(
        ops::logcumsumexp(&ints, 0, false),
        "logcumsumexp",
        &["i64", "to_dtype"],
    );
    Ok(())
}

// ----- reductions over several axes -----

#[test]
fn mean_var_std_over_several_axes_match_pytorch() {
    let x = || wave(&[2, 3, 4], 0.47, 0.2, f64::sin);
    check(
        "mean_axes (0, 2)",
        &|v| ops::mean_axes(&v[0], &[0, 2], false),
        &[x()],
        &[MEAN_02_Y, MEAN_02_D0],
    );
    check(
        "mean_axes all keepdim",
        &|v| v[0].mean_axes(&[0, 1, 2], true),
        &[x()],
        &[MEAN_ALL_K_Y, MEAN_ALL_K_D0],
    );
    check(
        "var_axes (-1, 1)",
        &|v| ops::var_axes(&v[0], &[-1, 1], 1, false),
        &[x()],
        &[VAR_12_Y, VAR_12_D0],
    );
    check(
        "var_axes all",
        &|v| v[0].var_axes(&[], 0, false),
        &[x()],
        &[VAR_ALL_Y, VAR_ALL_D0],
    );
    check(
        "std_dev_axes (0, 1) keepdim",
        &|v| ops::std_dev_axes(&v[0], &[0, 1], 1, true),
        &[x()],
        &[STD_01_K_Y, STD_01_K_D0],
    );
    check(
        "std_dev_axes all",
        &|v| v[0].std_dev_axes(&[], 1, false),
        &[x()],
        &[STD_ALL_Y, STD_ALL_D0],
    );
}

#[test]
fn reductions_over_axes_keep_shapes_and_refuse_bad_axes() -> Result<()> {
    crate::init();
    let x = wave(&[2, 3, 4], 0.47, 0.2, f64::sin);
    assert_eq!(ops::mean_axes(&x, &[0, 2], true)?.dims(), [1, 3, 1]);
    assert_eq!(ops::var_axes(&x, &[1], 1, false)?.dims(), [2, 4]);
    assert_eq!(ops::std_dev_axes(&x, &[], 0, true)?.dims(), [1, 1, 1]);
    // One axis gives the one-axis op's values.
    let one = ops::var_axes(&x, &[1], 1, false)?.to_vec::<f64>()?;
    assert_eq!(one, ops::var(&x, 1, 1, false)?.to_vec::<f64>()?);
    expect_error(ops::mean_axes(&x, &[0, -3], false), "mean_axes", &["twice"]);
    expect_error(ops::var_axes(&x, &[3], 1, false), "var_axes", &["3"]);
    let ints = Tensor::from_slice(&[1i64, 2], [2])?;
    expect_error(
        ops::std_dev_axes(&ints, &[0], 1, false),
        "std_dev_axes",
        &["i64"],
    );
    Ok(())
}

// ----- positions and selections -----

#[test]
fn argmax_all_and_argmin_all_give_flat_first_positions() -> Result<()> {
    crate::init();
    // PyTorch: argmax, argmin of TIES 1 5; of NAN 1 1 (NaN is the extreme).
    let ties = values(&TIES, &[3, 3]);
    let amax = ops::argmax_all(&ties)?;
    assert_eq!((amax.dtype(), amax.rank()), (DType::I64, 0));
    assert_eq!(amax.to_vec::<i64>()?, [1]);
    assert_eq!(ties.argmin_all()?.to_vec::<i64>()?, [5]);
    let nan = values(&[1.0, f64::NAN, 3.0, 0.0, f64::NAN, -1.0], &[2, 3]);
    assert_eq!(ops::argmax_all(&nan)?.to_vec::<i64>()?, [1]);
    assert_eq!(ops::argmin_all(&nan)?.to_vec::<i64>()?, [1]);
    let empty = Tensor::zeros([0, 3], DType::F32)?;
    expect_error(ops::argmax_all(&empty), "argmax_all", &["empty"]);
    Ok(())
}

#[test]
fn max_and_min_with_indices_send_the_gradient_to_the_index() -> Result<()> {
    check(
        "max_with_indices axis 1",
        &|v| Ok(ops::max_with_indices(&v[0], 1, false)?.0),
        &[values(&TIES, &[3, 3])],
        &[MAXI_Y, MAXI_D0],
    );
    check(
        "min_with_indices axis 0 keepdim",
        &|v| Ok(v[0].min_with_indices(0, true)?.0),
        &[values(&TIES, &[3, 3])],
        &[MINI_K_Y, MINI_K_D0],
    );
    let ties = values(&TIES, &[3, 3]);
    let (v, i) = ops::max_with_indices(&ties, 1, false)?;
    assert_eq!(
        (v.dims(), i.dims(), i.dtype()),
        (&[3][..], &[3][..], DType::I64)
    );
    assert_eq!(i.to_vec::<i64>()?, [1, 1, 1]);
    assert_eq!(
        ops::min_with_indices(&ties, 0, true)?.1.to_vec::<i64>()?,
        [2, 2, 1]
    );
    Ok(())
}

#[test]
fn sort_is_stable_with_nan_largest_as_pytorch() -> Result<()> {
    crate::init();
    let s = values(
        &[0.5, -1.0, 0.5, 2.0, -1.0, 3.0, f64::NAN, 1.0, 1.0, -2.0],
        &[2, 5],
    );
    let (v, i) = ops::sort(&s, -1, false)?;
    assert_eq!(i.to_vec::<i64>()?, [1, 4, 0, 2, 3, 4, 2, 3, 0, 1]);
    let v = v.to_vec::<f64>()?;
    assert_eq!(v[..9], [-1.0, -1.0, 0.5, 0.5, 2.0, -2.0, 1.0, 1.0, 3.0]);
    assert!(v[9].is_nan());
    let (v, i) = s.sort(1, true)?;
    assert_eq!(i.to_vec::<i64>()?, [3, 0, 2, 1, 4, 1, 0, 2, 3, 4]);
    assert!(v.to_vec::<f64>()?[5].is_nan());
    assert_eq!(
        ops::argsort(&s, 1, true)?.to_vec::<i64>()?,
        [3, 0, 2, 1, 4, 1, 0, 2, 3, 4]
    );
    check(
        "sort axis 1 descending",
        &|v| Ok(ops::sort(&v[0], 1, true)?.0),
        &[wave(&[2, 4, 3], 0.91, 0.1, f64::sin)],
        &[SORT_D_Y, SORT_D_D0],
    );
    let x = wave(&[2, 4, 3], 0.91, 0.1, f64::sin);
    assert_eq!(
        ops::argsort(&x, 1, true)?.to_vec::<i64>()?,
        [
            3, 0, 0, 1, 3, 2, 0, 2, 3, 2, 1, 1, 1, 3, 3, 3, 1, 0, 2, 0, 1, 0, 2, 2
        ]
    );
    expect_error(
        ops::argsort(&Tensor::scalar(1.0f64), 0, false),
        "argsort",
        &["rank-0"],
    );
    Ok(())
}

#[test]
fn topk_matches_pytorch() -> Result<()> {
    check(
        "topk 2 largest",
        &|v| Ok(ops::topk(&v[0], 2, -1, true, true)?.0),
        &[wave(&[3, 5], 0.67, 0.4, f64::sin)],
        &[TOPK_Y, TOPK_D0],
    );
    check(
        "topk 3 smallest axis 0",
        &|v| Ok(v[0].topk(3, 0, false, true)?.0),
        &[wave(&[4, 3], 0.29, 0.9, f64::sin)],
        &[TOPK_S_Y, TOPK_S_D0],
    );
    let x = wave(&[3, 5], 0.67, 0.4, f64::sin);
    assert_eq!(ops::topk(&x, 2, -1, true, true)?.1.to_vec::<i64>()?, TOPK_I);
    let y = wave(&[4, 3], 0.29, 0.9, f64::sin);
    assert_eq!(
        ops::topk(&y, 3, 0, false, true)?.1.to_vec::<i64>()?,
        TOPK_S_I
    );
    // Unsorted: the chosen positions in order.
    let (_, i) = ops::topk(&x, 2, -1, true, false)?;
    for row in i.to_vec::<i64>()?.chunks(2) {
        assert!(row[0] < row[1]);
    }
    expect_error(
        ops::topk(&x, 6, -1, true, true),
        "topk",
        &["k = 6", "at most 5"],
    );
    Ok(())
}

#[test]
fn selections_record_one_gather() -> Result<()> {
    crate::init();
    let x = wave(&[3, 5], 0.67, 0.4, f64::sin).with_requires_grad(true);
    let (v, _) = ops::topk(&x, 2, -1, true, true)?;
    let g = ComputationGraph::of(&[&v]);
    assert_eq!(g.len(), 1, "{}", g.to_dot());
    Ok(())
}

// ----- masking -----

#[test]
fn masked_fill_matches_pytorch_and_checks_its_mask() -> Result<()> {
    let mask = || Tensor::from_slice(&[true, false, true, false], [4]).unwrap();
    check(
        "masked_fill broadcast mask",
        &|v| ops::masked_fill(&v[0], &mask(), -2.5),
        &[wave(&[3, 4], 0.37, 0.5, f64::sin)],
        &[MASKED_Y, MASKED_D0],
    );
    let x = values(&[f64::INFINITY, 1.0, f64::NAN, 2.0], &[4]);
    assert_eq!(
        x.masked_fill(&mask(), 0.0)?.to_vec::<f64>()?,
        [0.0, 1.0, 0.0, 2.0]
    );
    let ints = Tensor::from_slice(&[1i64, 2, 3, 4], [4])?;
    assert_eq!(
        ops::masked_fill(&ints, &mask(), 7.0)?.to_vec::<i64>()?,
        [7, 2, 7, 4]
    );
    let floats = values(&[1.0, 0.0, 1.0, 0.0], &[4]);
    expect_error(ops::masked_fill(&x, &floats, 0.0), "masked_fill", &["bool"]);
    let big = Tensor::from_slice(&[true; 8], [2, 4])?;
    expect_error(ops::masked_fill(&x, &big, 0.0), "masked_fill", &["[2, 4]"]);
    Ok(())
}

#[test]
fn tril_and_triu_match_pytorch() -> Result<()> {
    check(
        "tril",
        &|v| ops::tril(&v[0], 0),
        &[wave(&[2, 3, 4], 0.43, 0.1, f64::sin)],
        &[TRIL0_Y, TRIL0_D0],
    );
    check(
        "tril -1",
        &|v| v[0].tril(-1),
        &[wave(&[3, 4], 0.51, 0.7, f64::sin)],
        &[TRIL_M1_Y, TRIL_M1_D0],
    );
    check(
        "triu 1",
        &|v| ops::triu(&v[0], 1),
        &[wave(&[2, 4, 3], 0.61, 0.3, f64::sin)],
        &[TRIU1_Y, TRIU1_D0],
    );
    // A masked infinity becomes 0 (not inf · 0).
    let inf = values(&[1.0, f64::INFINITY, f64::NEG_INFINITY, 2.0], &[2, 2]);
    assert_eq!(
        ops::tril(&inf, 0)?.to_vec::<f64>()?,
        [1.0, 0.0, f64::NEG_INFINITY, 2.0]
    );
    assert_eq!(
        ops::triu(&inf, 0)?.to_vec::<f64>()?,
        [1.0, f64::INFINITY, 0.0, 2.0]
    );
    expect_error(ops::tril(&values(&[1.0, 2.0], &[2]), 0), "tril", &["[2]"]);
    Ok(())
}

// ----- norms -----

#[test]
fn norms_match_pytorch() {
    let x = || wave(&[2, 3, 4], 0.47, 0.2, f64::sin);
    let zrow = || values(&[0.0, 0.0, 0.0, 3.0, -4.0, 0.0, -2.0, 2.0, 1.0], &[3, 3]);
    use ops::NormOrd::*;
    check(
        "norm 1 axis -1",
        &|v| ops::norm(&v[0], L1, &[-1], false),
        &[x()],
        &[NORM1_AX_Y, NORM1_AX_D0],
    );
    check(
        "norm 2 all",
        &|v| v[0].norm(L2, &[], false),
        &[x()],
        &[NORM2_ALL_Y, NORM2_ALL_D0],
    );
    check(
        "norm 2 axes (0, 2) keepdim",
        &|v| ops::norm(&v[0], L2, &[0, 2], true),
        &[x()],
        &[NORM2_AX_K_Y, NORM2_AX_K_D0],
    );
    check(
        "norm inf axis 1",
        &|v| ops::norm(&v[0], Inf, &[1], false),
        &[x()],
        &[NORMINF_AX_Y, NORMINF_AX_D0],
    );
    check(
        "norm fro axes (1, 2)",
        &|v| ops::norm(&v[0], Frobenius, &[1, 2], false),
        &[x()],
        &[FRO_Y, FRO_D0],
    );
    check(
        "norm 2 of a zero row",
        &|v| ops::norm(&v[0], L2, &[1], false),
        &[zrow()],
        &[NORM2_ZERO_Y, NORM2_ZERO_D0],
    );
    check(
        "norm inf with ties",
        &|v| ops::norm(&v[0], Inf, &[1], false),
        &[zrow()],
        &[NORMINF_TIES_Y, NORMINF_TIES_D0],
    );
    check(
        "norm 1 with zeros",
        &|v| ops::norm(&v[0], L1, &[1], false),
        &[zrow()],
        &[NORM1_ZERO_Y, NORM1_ZERO_D0],
    );
}

#[test]
fn norm_is_twice_differentiable_and_refuses_integers() -> Result<()> {
    crate::init();
    let x = wave(&[2, 3], 0.47, 0.2, f64::sin);
    let opts = autograd::GradcheckOptions::default();
    for ord in [ops::NormOrd::L1, ops::NormOrd::L2, ops::NormOrd::Inf] {
        let f = move |v: &[Tensor]| ops::norm(&v[0], ord, &[1], false);
        let what = format!("norm {ord:?}");
        autograd::gradcheck(&what, &f, std::slice::from_ref(&x), &[true], &opts)?;
        autograd::gradgradcheck(&what, &f, std::slice::from_ref(&x), &[true], &opts)?;
    }
    // Masked and triangular: gradients reach the kept entries, twice.
    let m = Tensor::from_slice(&[true, false, true], [3])?;
    let f = move |v: &[Tensor]| ops::masked_fill(&ops::tril(&v[0], 1)?, &m, 0.5)?.square();
    autograd::gradgradcheck("masked tril", &f, std::slice::from_ref(&x), &[true], &opts)?;
    let ints = Tensor::from_slice(&[1i64, 2], [2])?;
    expect_error(
        ops::norm(&ints, ops::NormOrd::L2, &[], false),
        "norm",
        &["i64"],
    );
    Ok(())
}

// ----- writing by position -----

#[test]
fn scatter_matches_pytorch() -> Result<()> {
    let sci = || ints(&[3, 0, 1, 2, 0, 3], &[3, 2]);
    check(
        "scatter axis 1, src larger",
        &|v| ops::scatter(&v[0], &sci(), &v[1], 1),
        &[
            wave(&[3, 4], 0.31, 0.4, f64::sin),
            wave(&[3, 3], 0.27, -0.2, f64::cos),
        ],
        &[SCATTER_Y, SCATTER_D0, SCATTER_D1],
    );
    check(
        "scatter_value axis 1",
        &|v| ops::scatter_value(&v[0], &sci(), -0.75, 1),
        &[wave(&[3, 4], 0.31, 0.4, f64::sin)],
        &[SCATTER_V_Y, SCATTER_V_D0],
    );
    // Repeats: the last write stays (PyTorch's CPU order).
    let x = values(&[0.0; 3], &[3]);
    let y = x.scatter(&ints(&[1, 1, 2], &[3]), &values(&[5.0, 6.0, 7.0], &[3]), 0)?;
    assert_eq!(y.to_vec::<f64>()?, [0.0, 6.0, 7.0]);
    expect_error(
        ops::scatter(&x, &ints(&[3], &[1]), &x, 0),
        "scatter",
        &["out of range"],
    );
    expect_error(
        ops::scatter(&x, &ints(&[0, 1], &[1, 2]), &x, 0),
        "scatter",
        &["rank"],
    );
    Ok(())
}

#[test]
fn scatter_reduce_matches_pytorch_for_every_reduction() {
    use ops::ScatterReduce::*;
    let sri = || ints(&[2, 0, 2, 1, 2, 2, 0, 1, 0, 2, 2, 1], &[3, 4]);
    let inputs = || {
        [
            wave(&[3, 4], 0.53, 0.1, f64::sin),
            wave(&[3, 4], 0.41, -0.6, f64::cos),
        ]
    };
    let table: [(&str, ops::ScatterReduce, bool, &[&[f64]]); 10] = [
        (
            "sum self",
            Sum,
            true,
            &[SR_SUM_SELF_Y, SR_SUM_SELF_D0, SR_SUM_SELF_D1],
        ),
        (
            "sum",
            Sum,
            false,
            &[SR_SUM_NOSELF_Y, SR_SUM_NOSELF_D0, SR_SUM_NOSELF_D1],
        ),
        (
            "prod self",
            Prod,
            true,
            &[SR_PROD_SELF_Y, SR_PROD_SELF_D0, SR_PROD_SELF_D1],
        ),
        (
            "prod",
            Prod,
            false,
            &[SR_PROD_NOSELF_Y, SR_PROD_NOSELF_D0, SR_PROD_NOSELF_D1],
        ),
        (
            "mean self",
            Mean,
            true,
            &[SR_MEAN_SELF_Y, SR_MEAN_SELF_D0, SR_MEAN_SELF_D1],
        ),
        (
            "mean",
            Mean,
            false,
            &[SR_MEAN_NOSELF_Y, SR_MEAN_NOSELF_D0, SR_MEAN_NOSELF_D1],
        ),
        (
            "amax self",
            Amax,
            true,
            &[SR_AMAX_SELF_Y, SR_AMAX_SELF_D0, SR_AMAX_SELF_D1],
        ),
        (
            "amax",
            Amax,
            false,
            &[SR_AMAX_NOSELF_Y, SR_AMAX_NOSELF_D0, SR_AMAX_NOSELF_D1],
        ),
        (
            "amin self",
            Amin,
            true,
            &[SR_AMIN_SELF_Y, SR_AMIN_SELF_D0, SR_AMIN_SELF_D1],
        ),
        (
            "amin",
            Amin,
            false,
            &[SR_AMIN_NOSELF_Y, SR_AMIN_NOSELF_D0, SR_AMIN_NOSELF_D1],
        ),
    ];
    for (what, reduce, include_self, want) in table {
        check(
            &format!("scatter_reduce {what}"),
            &|v| ops::scatter_reduce(&v[0], &sri(), &v[1], 0, reduce, include_self),
            &inputs(),
            want,
        );
    }
    let zx = || values(&[0.0, 2.0, 1.5, -1.0], &[2, 2]);
    let zs = || values(&[2.0, 0.0, 0.0, 2.0, 3.0, 0.5], &[3, 2]);
    let zi = || ints(&[0, 0, 1, 0, 0, 1], &[3, 2]);
    check(
        "scatter_reduce prod with zeros",
        &|v| v[0].scatter_reduce(&zi(), &v[1], 0, Prod, true),
        &[zx(), zs()],
        &[SR_PROD_Z_Y, SR_PROD_Z_D0, SR_PROD_Z_D1],
    );
    check(
        "scatter_reduce amax with ties",
        &|v| ops::scatter_reduce(&v[0], &zi(), &v[1], 0, Amax, true),
        &[zx(), zs()],
        &[SR_AMAX_T_Y, SR_AMAX_T_D0, SR_AMAX_T_D1],
    );
}

#[test]
fn scatter_reduce_is_twice_differentiable() -> Result<()> {
    crate::init();
    let opts = autograd::GradcheckOptions::default();
    let inputs = [
        wave(&[3, 4], 0.53, 0.1, f64::sin),
        wave(&[3, 4], 0.41, -0.6, f64::cos),
    ];
    for reduce in [
        ops::ScatterReduce::Sum,
        ops::ScatterReduce::Prod,
        ops::ScatterReduce::Mean,
        ops::ScatterReduce::Amax,
    ] {
        let f = move |v: &[Tensor]| {
            let i = ints(&[2, 0, 2, 1, 2, 2, 0, 1, 0, 2, 2, 1], &[3, 4]);
            ops::scatter_reduce(&v[0], &i, &v[1], 0, reduce, true)
        };
        let what = format!("scatter_reduce {reduce:?}");
        autograd::gradcheck(&what, &f, &inputs, &[true, true], &opts)?;
        autograd::gradgradcheck(&what, &f, &inputs, &[true, true], &opts)?;
    }
    Ok(())
}

#[test]
fn index_put_matches_pytorch() -> Result<()> {
    check(
        "index_put broadcast indices",
        &|v| {
            let (i0, i1) = (ints(&[0, 2], &[2, 1]), ints(&[1, -1], &[2]));
            ops::index_put(&v[0], &[&i0, &i1], &v[1], false)
        },
        &[
            wave(&[3, 3, 2], 0.37, 0.2, f64::sin),
            wave(&[2], 0.5, 0.1, f64::sin),
        ],
        &[IPUT_Y, IPUT_D0, IPUT_D1],
    );
    check(
        "index_put accumulate",
        &|v| v[0].index_put(&[&ints(&[0, 2, 0, -3], &[4])], &v[1], true),
        &[
            wave(&[3, 2], 0.29, 0.6, f64::sin),
            wave(&[4, 2], 0.45, -0.3, f64::cos),
        ],
        &[IPUT_ACC_Y, IPUT_ACC_D0, IPUT_ACC_D1],
    );
    let x = values(&[0.0; 4], &[2, 2]);
    expect_error(
        ops::index_put(&x, &[&ints(&[2], &[1])], &x, false),
        "index_put",
        &["out of range"],
    );
    expect_error(
        ops::index_put(&x, &[], &x, false),
        "index_put",
        &["0 index"],
    );
    let f = values(&[0.0], &[1]);
    expect_error(ops::index_put(&x, &[&f], &x, false), "index_put", &["I64"]);
    Ok(())
}

// ----- PyTorch's values (scripts/reference/ops_reductions.py) -----

#[rustfmt::skip]
const PROD1_Y: &[f64] = &[
    0.008136293659176565, -0.11966162739208892, -0.33361619237755347, -0.3497016392588545,
    0.24041068872096927, -0.10452344823865703, -0.3585063690207791, -0.3225318826120019,
];
#[rustfmt::skip]
const PROD1_D0: &[f64] = &[
    0.024084512624897702, -0.1895398470386791, -0.4316948674227843, -0.3639913301408245,
    0.0024045410243485094, -0.09240443462750872, -0.43901230351947, -0.7803777020353533,
    0.029501542372643557, 0.3018011152759606, 0.525381167280235, 0.3976239006478505,
    -0.1819727434053176, 0.03570907233429712, -0.0670702777431843, -0.33351103793196596,
    -0.6891037527171727, -0.32842660435764687, 0.12322181693386784, 0.26341488853191775,
    0.1911252751398254, -0.03501860915564178, 0.06104478639536713, 0.2712354616443791,
];
#[rustfmt::skip]
const PROD_K_Y: &[f64] = &[
    0.17324212686171853, -0.007018460312983386, 0.3016144904250425, -0.021234165474574348,
    0.4356853022627114, -0.012355521808053507,
];
#[rustfmt::skip]
const PROD_K_D0: &[f64] = &[
    0.17324212686171853, 0.07854233918011212, 0.05687870679057581, 0.05123918293707356,
    -0.005398514047657562, -0.007076491669724261, -0.013519732118612057, 0.17725740370710918,
    -0.6846278003238491, -0.3873795485371481, -0.3054040329080111, -0.29201314453516736,
    0.023662485688651497, 0.034026973396756505, 0.085877220173799, -0.12453974630933733,
    0.5957435907225253, 0.3894317728709215, 0.32987277992348407, 0.33415672189786216,
    -0.005183494297224086, -0.008406670111643205, -0.03957450852138798, 0.013773328084303923,
];
#[rustfmt::skip]
const PROD_ALL_Y: &[f64] = &[
    0.025916975274000158,
];
#[rustfmt::skip]
const PROD_ALL_D0: &[f64] = &[
    0.03855144555205675, 0.01148498820008034, 0.008044394060562171, 0.007846755513885171,
    0.010459793759816921, 0.02664200237993609,
];
#[rustfmt::skip]
const PROD_Z_Y: &[f64] = &[
    -0.0, -0.0, -0.15600000000000003,
];
#[rustfmt::skip]
const PROD_Z_D0: &[f64] = &[
    -0.0, -0.2234132762359727, 0.0, -0.0,
    -0.0, -0.0, -0.0, 0.0,
    -0.11562698225006315, -0.25052512820847017, 0.3006301538501643, -0.37578769231270526,
];
#[rustfmt::skip]
const CUMPROD1_Y: &[f64] = &[
    0.3894183423086505, 0.8956986856800476, 0.9691091288804564, 0.22359316621203423,
    -0.08800113628740641, -0.7008482129501709, -0.2232863988939115, 0.06964891291168926,
    0.14142425253141425, -0.10838206043323964, 0.06533067869355033, 0.13255582452855172,
    -0.052414984808442866, -0.013313382621173294, -0.10507673232175742, -0.9985192864760455,
    -0.721779953842635, -0.09622151322083984, -0.5749858474355196, -0.6998446585791349,
    -0.0860981606000083, -0.22283092462700077, 0.21485066602037386, 0.07345655795863391,
    0.219940563492166, -0.13833761150367252, 0.0007671721076028332, 0.14509885152654994,
    -0.13697730746712408, 0.0006460287329536652,
];
#[rustfmt::skip]
const CUMPROD1_D0: &[f64] = &[
    1.2201125449310073, 0.5284654933922722, 0.431842262048043, 0.6270823423115724,
    1.7220507029698544, 0.7125265724724519, -0.14250305307582625, 0.13085544116415088,
    1.3901319547233357, 0.2206143721364759, -0.06497965721336951, -0.16104567363112585,
    -0.001822325178413268, 0.03228076058142982, 0.11273032745669449, 0.7721509187633955,
    1.062449342890068, 0.416812589854216, 0.39257049426620677, -0.11931102161972176,
    0.018077155639529843, 0.7679607832959242, 1.2122684112256406, 0.058512286580397414,
    -0.08007243650090004, 0.2596639267089583, 0.09794328243423933, 0.2075569573026532,
    -0.1365076766365373, 0.0006047249998506119,
];
#[rustfmt::skip]
const CUMPROD_R_Y: &[f64] = &[
    -0.054852819930751195, -0.09714611017647454, -0.09913798447358291, -0.11769488641287491,
    -0.5127693073557238, -0.1061224434307876, 0.10988341646492984, -0.12573793068665876,
    0.4350747226374042, 0.9479754081880521, -0.10859145979081837, -0.12036671477393136,
    -0.34649653267960906, 0.858955004999301, -0.92701395877128, -0.055088703760844564,
    0.136208542815087, 0.39331972423077427, 0.43620970784411106, 0.4599716480084409,
    0.02850456614199625, -0.09900742538217186, 0.11336519881122911, -0.11734673228385852,
    0.22840988531620351, 0.06327022324295706, 0.07516859751958382, 0.07669196859281914,
    0.13559638671461824, -0.8068801520221026,
];
#[rustfmt::skip]
const CUMPROD_R_D0: &[f64] = &[
    -0.028708638555697014, -0.08765972432309703, -0.21538303750579288, -1.2897800772892232,
    1.3230419774674524, 0.03680964241439778, 0.06051367074075256, -0.08321831401263244,
    -0.8160999662858245, -1.3912701034768595, 0.10017729783379371, 0.42114935753936295,
    -0.34823057718171635, -0.6096541762424782, 0.24106612848636447, 0.1360101340111771,
    0.1959979623940063, 0.33042312014566444, 0.3714096119843197, 0.39926969580726446,
    0.07600659552712008, -0.08614813490136751, 0.03407118565295445, -0.09434017259151525,
    -0.05103545793744175, 0.017402268864886827, 0.06629515217219117, 0.24284757895991274,
    -1.6135348735909132, 0.45219857899475796,
];
#[rustfmt::skip]
const CUMPROD_Z_Y: &[f64] = &[
    0.7, 0.0, -0.0, -0.0,
    -0.0, 1.1, 0.0, -0.0,
    -0.0, -0.0, -0.5, -0.2,
    -0.24, -0.192, -0.0,
];
#[rustfmt::skip]
const CUMPROD_Z_D0: &[f64] = &[
    0.29552020666133955, -1.325344991267492, 0.0, 0.0,
    0.0, 0.3349881501559051, 0.3649146804720197, 0.0,
    0.0, 0.0, -0.8202981149196908, -0.014961659130263046,
    -0.08242091627904725, -0.11858720427326595, -0.16328383116068437,
];
#[rustfmt::skip]
const CUMPROD_ZR_Y: &[f64] = &[
    -0.0, -0.0, -0.54, 0.45,
    0.5, -0.0, -0.0, -0.0,
    0.0, 0.6, -0.0, 0.0,
    0.0, 0.0, 0.0,
];
#[rustfmt::skip]
const CUMPROD_ZR_D0: &[f64] = &[
    0.0, -0.4990789272037287, 0.4336011834377369, -0.09121109581121827,
    0.5815252397165274, 0.0, 0.0, 0.0,
    -0.2560077743971678, -0.9961646088358406, 0.0, 0.0,
    0.0, 0.0, 1.2432567580165328,
];
#[rustfmt::skip]
const LCSE1_Y: &[f64] = &[
    0.19866933079506122, 0.8572989891886034, 0.9584712830789143, 1.0177292433952445,
    1.114455116117933, 1.0987030191786584, 1.1557719541606393, 1.3380068523145283,
    1.5468456853983477, 1.7663160269723552, 1.7973464412960984, 1.7571492062645042,
    1.8501209953259075, 1.8565324638929075, 1.8410297717207162, 0.0835319374911064,
    0.79172605497029, 0.985101508741494, 1.0294603729355476, 1.0915838612671849,
    1.1280868803508302, 1.1602071779285998, 1.2982830648781025, 1.5306940301606444,
    1.7561096038104889, 1.7972821261537488, 1.7672186141403823, 1.8484093050532178,
    1.8568992342652297, 1.8440968712158767,
];
#[rustfmt::skip]
const LCSE1_D0: &[f64] = &[
    0.45975086313219565, 0.7724533017552223, 0.8888432352938497, 0.2083046419557264,
    0.016157092986567062, -0.011247617708670152, -0.08900900680430872, -0.1689569231575181,
    -0.23800638193943693, -0.44812672274872045, -0.1350001428362899, 0.06020038769590058,
    0.0013516595099027763, 0.028395992300249525, 0.06842521669680669, 0.8247833947282398,
    0.48058333040182644, 0.15779537879440575, -0.2737072266300815, -0.14741553652719994,
    -0.0656541431964753, -0.07988554233724285, -0.04650228204902421, 0.13627808737285266,
    0.26813087229590854, 0.4561804987475524, 0.2947801864503544, 0.08320391883665505,
    0.05710923340527327, 0.05832861850183845,
];
#[rustfmt::skip]
const LCSE_R_Y: &[f64] = &[
    2.236284094636036, 2.1534290633356465, 1.9855865394906178, 1.6335362874951846,
    0.8827073508159741, 1.3370209867183014, 0.7904721951862982, 0.2608350655341932,
    -0.2636514121636878, -0.9560397542711181, 2.10170526110006, 2.0344689685059754,
    1.9076209760990417, 1.6344052920344296, 0.9943853150281404, 1.6186868883767938,
    1.0620516019233075, 0.4497491580594327, -0.18937686192716285, -0.9963407545137561,
    1.9013918235135565, 1.8371363446559914, 1.7310071272652219, 1.5098992015590535,
    0.9618345122584524, 1.8795761220475473, 1.3765535150956096, 0.743571508927267,
    0.02218895204049748, -0.8921293646943759,
];
#[rustfmt::skip]
const LCSE_R_D0: &[f64] = &[
    0.023498413646504724, 0.15287177640134536, 0.5341784723198448, 1.1826349129878886,
    1.8028037506773873, 0.1410486283876763, 0.014882228868911995, -0.2410260247615999,
    -0.6323626941540266, -1.629488118856319, -0.05411881650998947, -0.14805193451063273,
    -0.2576914152296758, -0.15414401749360263, 0.6785004343577641, 0.4262439482720441,
    0.6751584991451901, 0.6536977806583064, 0.4734823652381659, 0.015025072964087005,
    -0.04777662720809337, -0.17126078764749617, -0.49267210546737006, -1.132659675704219,
    -1.8150289698479076, 0.09151580519872123, 0.3796805769700672, 0.7059099872606507,
    0.9913579251381424, 1.4513349938245943,
];
#[rustfmt::skip]
const LCSE_FAR_Y: &[f64] = &[
    -300.0, 2.0, 300.0, 300.0,
    800.0, 800.0, 800.3132616875182, 800.3132616875182,
];
#[rustfmt::skip]
const LCSE_FAR_D0: &[f64] = &[
    0.29552020666134177, 0.7173560908995228, 1.937405816295434, 1.8443866038440675e-131,
    0.5180680593110099, 0.0, -0.20697828206447844, 0.0,
];
#[rustfmt::skip]
const MEAN_02_Y: &[f64] = &[
    0.4531526670867245, 0.5160907209877152, -0.7672456564446328,
];
#[rustfmt::skip]
const MEAN_02_D0: &[f64] = &[
    0.03694002583266744, 0.03694002583266744, 0.03694002583266744, 0.03694002583266744,
    0.08966951136244035, 0.08966951136244035, 0.08966951136244035, 0.08966951136244035,
    0.12044477317714912, 0.12044477317714912, 0.12044477317714912, 0.12044477317714912,
    0.03694002583266744, 0.03694002583266744, 0.03694002583266744, 0.03694002583266744,
    0.08966951136244035, 0.08966951136244035, 0.08966951136244035, 0.08966951136244035,
    0.12044477317714912, 0.12044477317714912, 0.12044477317714912, 0.12044477317714912,
];
#[rustfmt::skip]
const MEAN_ALL_K_Y: &[f64] = &[
    0.06733257720993564,
];
#[rustfmt::skip]
const MEAN_ALL_K_D0: &[f64] = &[
    0.012313341944222482, 0.012313341944222482, 0.012313341944222482, 0.012313341944222482,
    0.012313341944222482, 0.012313341944222482, 0.012313341944222482, 0.012313341944222482,
    0.012313341944222482, 0.012313341944222482, 0.012313341944222482, 0.012313341944222482,
    0.012313341944222482, 0.012313341944222482, 0.012313341944222482, 0.012313341944222482,
    0.012313341944222482, 0.012313341944222482, 0.012313341944222482, 0.012313341944222482,
    0.012313341944222482, 0.012313341944222482, 0.012313341944222482, 0.012313341944222482,
];
#[rustfmt::skip]
const VAR_12_Y: &[f64] = &[
    0.5892773468944449, 0.510547174048105,
];
#[rustfmt::skip]
const VAR_12_D0: &[f64] = &[
    0.008552896606885943, 0.031244370339433853, 0.046699943308295896, 0.05156786704560065,
    0.044792466943807015, 0.027843079465313055, 0.004395406806786261, -0.020465608463374068,
    -0.04134852145927681, -0.0537245921736945, -0.054909903540667195, -0.04464740487911012,
    -0.06834383458719163, -0.008916661626659064, 0.04975214474648806, 0.09493946632309527,
    0.11684582584232332, 0.11072053518001539, 0.07789194583980191, 0.025479378098266548,
    -0.035150799164004445, -0.09085011813187413, -0.12953943380126123, -0.1428284487189999,
];
#[rustfmt::skip]
const VAR_ALL_Y: &[f64] = &[
    0.5048614898172857,
];
#[rustfmt::skip]
const VAR_ALL_D0: &[f64] = &[
    0.0032343887134754783, 0.013634647507559933, 0.020718451784955037, 0.022949583497886384,
    0.0198441917845643, 0.012075722523587903, 0.001328872555096457, -0.010065759443727026,
    -0.019637094566849114, -0.02530946031095722, -0.02585272802081971, -0.02114908280093938,
    -0.012218573257143213, -0.0009979002636747467, 0.010079582618901586, 0.018611574527696358,
    0.02274779848716115, 0.021591258808631452, 0.01539276664633326, 0.005496548231798202,
    -0.005951268628811777, -0.016468071178252126, -0.0237731496102277, -0.026282299606245504,
];
#[rustfmt::skip]
const STD_01_K_Y: &[f64] = &[
    0.6989305629146865, 0.7503406471182096, 0.8126026162273398, 0.8370201152229337,
];
#[rustfmt::skip]
const STD_01_K_D0: &[f64] = &[
    0.006516750219632881, 0.1000059236657656, 0.2028979809372816, 0.23328740159899453,
    0.06355178271896149, 0.08790201622796073, 0.016177407102998715, -0.07866978121523677,
    -0.07201974937750844, -0.20236646828999819, -0.24557990062927212, -0.1833944947173698,
    -0.046545901061238106, -0.01360506186800644, 0.1004462602431937, 0.19229818456264375,
    0.0735222382348452, 0.16178316612253893, 0.1516119280861273, 0.06837620492310661,
    -0.025025120734693037, -0.13371957585826064, -0.22555367574032914, -0.23189751515213836,
];
#[rustfmt::skip]
const STD_ALL_Y: &[f64] = &[
    0.7258181517257329,
];
#[rustfmt::skip]
const STD_ALL_D0: &[f64] = &[
    0.0023249723788864884, 0.009800979925157868, 0.014893023813934703, 0.016496825974327816,
    0.014264580379042298, 0.008680379450208643, 0.0009552321193761794, -0.007235559715404191,
    -0.014115712894770545, -0.0181931738452888, -0.018583690425596173, -0.015202573873110982,
    -0.008783064699027388, -0.0007173196407287425, 0.007245496214482197, 0.013378539358673605,
    0.016351777058452345, 0.015520422807040041, 0.011064766933630149, 0.0039510782253553865,
    -0.004277944430016621, -0.011837727006483119, -0.01708882917276929, -0.01889247893537188,
];
#[rustfmt::skip]
const MAXI_Y: &[f64] = &[
    3.0, 3.0, 2.0,
];
#[rustfmt::skip]
const MAXI_D0: &[f64] = &[
    0.0, 0.29552020666133955, 0.0, 0.0,
    0.7173560908995228, 0.0, 0.0, 0.963558185417193,
    0.0,
];
#[rustfmt::skip]
const MINI_K_Y: &[f64] = &[
    -1.0, 2.0, -1.0,
];
#[rustfmt::skip]
const MINI_K_D0: &[f64] = &[
    0.0, 0.0, 0.0, 0.0,
    0.0, 0.963558185417193, 0.29552020666133955, 0.7173560908995228,
    0.0,
];
#[rustfmt::skip]
const SORT_D_Y: &[f64] = &[
    0.9064404220944348, 0.8468318446180152, 0.9396454736853249, 0.30657498638352293,
    0.22288991410024764, 0.8897579983503596, 0.09983341664682815, 0.18572995702797787,
    -0.6328449473285281, -0.6617760549930376, -0.56332728410037, -0.9980544387588793,
    0.9259824428086272, 0.9552323333588566, 0.819849758599025, 0.3526898101475302,
    0.866408008238286, 0.2702275685118367, -0.6975959854064472, -0.5942803996709545,
    0.13752602195000313, -0.9997017071169574, -0.9938191637573349, -0.5223085896267315,
];
#[rustfmt::skip]
const SORT_D_D0: &[f64] = &[
    -0.1577456941432482, 0.7173560908995228, 0.963558185417193, 0.9738476308781951,
    -0.8322674422239013, -0.46460217941375737, -0.9961646088358407, -0.6118578909427189,
    0.3349881501559051, 0.29552020666133955, 0.7457052121767203, -0.9161659367494549,
    -0.9809362300664916, -0.3664791292519284, 0.5849171928917617, 0.016813900484349713,
    0.9021718337562933, -0.7676858097635825, 0.1244544235070617, -0.954019249902089,
    -0.6935250847771224, 0.998543345374605, 0.49411335113860816, 0.8504366206285644,
];
#[rustfmt::skip]
const TOPK_Y: &[f64] = &[
    0.9857191788355535, 0.8772005042746817, 0.14628784007345583, -0.49964188311690166,
    0.9964756147406006, 0.8331493125853651,
];
#[rustfmt::skip]
const TOPK_D0: &[f64] = &[
    0.0, 0.7173560908995228, 0.29552020666133955, 0.0,
    0.0, 0.0, 0.0, 0.0,
    0.9738476308781951, 0.963558185417193, 0.0, 0.7457052121767203,
    0.3349881501559051, 0.0, 0.0,
];
#[rustfmt::skip]
const TOPK_S_Y: &[f64] = &[
    -0.36013009947196817, -0.6118578909427189, -0.8124880538879843, 0.48082261498864864,
    0.21001729925089957, -0.07832703347086485, 0.7833269096274834, 0.8827073508159741,
    0.7114733527908443,
];
#[rustfmt::skip]
const TOPK_S_D0: &[f64] = &[
    -0.1577456941432482, 0.0, 0.0, 0.0,
    -0.6118578909427189, -0.9161659367494549, 0.9738476308781951, 0.7457052121767203,
    0.3349881501559051, 0.29552020666133955, 0.7173560908995228, 0.963558185417193,
];
#[rustfmt::skip]
const MASKED_Y: &[f64] = &[
    -2.5, 0.7643289370255051, -2.5, 0.9992316344213905,
    -2.5, 0.7114733527908443, -2.5, 0.05156976839853464,
    -2.5, -0.6353080477042756, -2.5, -0.9898798050735039,
];
#[rustfmt::skip]
const MASKED_D0: &[f64] = &[
    0.0, 0.7173560908995228, 0.0, 0.9738476308781951,
    0.0, 0.3349881501559051, 0.0, -0.6118578909427189,
    0.0, -0.9961646088358407, 0.0, -0.46460217941375737,
];
#[rustfmt::skip]
const TRIL0_Y: &[f64] = &[
    0.09983341664682815, 0.0, 0.0, 0.0,
    0.9691091288804563, 0.7780731968879212, 0.0, 0.0,
    -0.3879509179417303, -0.7368555923643834, -0.9516020738895158, 0.0,
    -0.8537707776345433, 0.0, 0.0, 0.0,
    0.6417781658749331, 0.9030485609661845, 0.0, 0.0,
    0.6629692300821833, 0.29052739534690886, -0.13481032665699375, 0.0,
];
#[rustfmt::skip]
const TRIL0_D0: &[f64] = &[
    0.29552020666133955, 0.0, 0.0, 0.0,
    0.7457052121767203, 0.3349881501559051, 0.0, 0.0,
    -0.9161659367494549, -0.9961646088358407, -0.8322674422239013, 0.0,
    0.016813900484349713, 0.0, 0.0, 0.0,
    0.9021718337562933, 0.5849171928917617, 0.0, 0.0,
    -0.7676858097635825, -0.9809362300664916, -0.954019249902089, 0.0,
];
#[rustfmt::skip]
const TRIL_M1_Y: &[f64] = &[
    0.0, 0.0, 0.0, 0.0,
    0.3908847788984522, 0.0, 0.0, 0.0,
    -0.9977152455608933, -0.8377694801650978, 0.0, 0.0,
];
#[rustfmt::skip]
const TRIL_M1_D0: &[f64] = &[
    0.0, 0.0, 0.0, 0.0,
    0.7457052121767203, 0.0, 0.0, 0.0,
    -0.9161659367494549, -0.9961646088358407, 0.0, 0.0,
];
#[rustfmt::skip]
const TRIU1_Y: &[f64] = &[
    0.0, 0.7895037396899504, 0.998710143975583, 0.0,
    0.0, -0.20690197167339933, 0.0, 0.0,
    0.0, 0.0, 0.0, 0.0,
    0.0, 0.9301341399766526, 0.5520142519295329, 0.0,
    0.0, -0.9474671950894723, 0.0, 0.0,
    0.0, 0.0, 0.0, 0.0,
];
#[rustfmt::skip]
const TRIU1_D0: &[f64] = &[
    0.0, 0.7173560908995228, 0.963558185417193, 0.0,
    0.0, 0.3349881501559051, 0.0, 0.0,
    0.0, 0.0, 0.0, 0.0,
    0.0, 0.49411335113860816, 0.8504366206285644, 0.0,
    0.0, 0.5849171928917617, 0.0, 0.0,
    0.0, 0.0, 0.0, 0.0,
];
#[rustfmt::skip]
const NORM1_AX_Y: &[f64] = &[
    2.7275204483688946, 1.893511229806384, 3.4643581616046415, 1.7553393109916933,
    2.91801709384898, 2.673607089952421,
];
#[rustfmt::skip]
const NORM1_AX_D0: &[f64] = &[
    0.29552020666133955, 0.29552020666133955, 0.29552020666133955, 0.29552020666133955,
    0.7173560908995228, 0.7173560908995228, 0.7173560908995228, -0.7173560908995228,
    -0.963558185417193, -0.963558185417193, -0.963558185417193, -0.963558185417193,
    -0.9738476308781951, 0.9738476308781951, 0.9738476308781951, 0.9738476308781951,
    0.7457052121767203, 0.7457052121767203, 0.7457052121767203, 0.7457052121767203,
    -0.3349881501559051, -0.3349881501559051, -0.3349881501559051, -0.3349881501559051,
];
#[rustfmt::skip]
const NORM2_ALL_Y: &[f64] = &[
    3.4964959571697527,
];
#[rustfmt::skip]
const NORM2_ALL_D0: &[f64] = &[
    0.01679132549072075, 0.0524850906366801, 0.07679675933872238, 0.08445401988846661,
    0.0737962925476265, 0.047134848555231534, 0.010251579933841187, -0.028854881409406802,
    -0.061703774382369236, -0.08117137559315268, -0.08303587439372526, -0.06689292919087923,
    -0.03624335434844187, 0.0022660784010851203, 0.04028408163038568, 0.06956594100036252,
    0.08376149223839527, 0.0797922395029823, 0.05851896853149605, 0.024555073698182144,
    -0.014733918484299115, -0.05082766266109444, -0.07589874589914407, -0.08451016725384976,
];
#[rustfmt::skip]
const NORM2_AX_K_Y: &[f64] = &[
    1.82713236987282, 1.9083670329267843, 2.2902415918643992,
];
#[rustfmt::skip]
const NORM2_AX_K_D0: &[f64] = &[
    0.03213275768187127, 0.10043821140096913, 0.146962290734454, 0.16161562455779363,
    0.3282111093977357, 0.2096335791614828, 0.045594193244790575, -0.1283329055156729,
    -0.30715262176612146, -0.40405957456183245, -0.4133407846759302, -0.3329834971078338,
    -0.069357176328948, 0.004336486014188089, 0.07708972315385344, 0.13312501900527765,
    0.3725316183686485, 0.3548782539678676, 0.2602647764471095, 0.10920938846111088,
    -0.07334335276309922, -0.25301288293735186, -0.37781317310054047, -0.42067960506043667,
];
#[rustfmt::skip]
const NORMINF_AX_Y: &[f64] = &[
    0.8731329795075164, 0.9603924882355434, 0.9824526126243326, 0.9992316344213905,
    0.9910378795642898, 0.9440750126282197, 0.8980085023246196, 0.9998959512147693,
];
#[rustfmt::skip]
const NORMINF_AX_D0: &[f64] = &[
    0.0, 0.0, 0.0, 0.9738476308781951,
    0.29552020666133955, 0.0, 0.0, -0.0,
    -0.0, -0.7173560908995228, -0.963558185417193, -0.0,
    -0.0, 0.0, -0.0, -0.0,
    0.7457052121767203, 0.3349881501559051, -0.0, -0.0,
    -0.0, -0.0, 0.1577456941432482, 0.6118578909427189,
];
#[rustfmt::skip]
const FRO_Y: &[f64] = &[
    2.549659511215376, 2.392638784976411,
];
#[rustfmt::skip]
const FRO_D0: &[f64] = &[
    0.02302691847110211, 0.07197584870277926, 0.10531584996758367, 0.11581669544809009,
    0.10120113584260314, 0.06463875144513521, 0.014058586111441916, -0.039570372337485435,
    -0.08461796436780923, -0.11131501494647664, -0.11387191028472604, -0.09173415330569387,
    -0.12856770318875108, 0.008038563221057834, 0.14290155928984824, 0.24677443397192855,
    0.2971309600435989, 0.2830506488598839, 0.2075870049095689, 0.08710533237775525,
    -0.052266300748127624, -0.18030328495437653, -0.2692390814974084, -0.2997867690574775,
];
#[rustfmt::skip]
const NORM2_ZERO_Y: &[f64] = &[
    0.0, 5.0, 3.0,
];
#[rustfmt::skip]
const NORM2_ZERO_D0: &[f64] = &[
    0.0, 0.0, 0.0, 0.43041365453971364,
    -0.5738848727196183, 0.0, -0.6423721236114619, 0.6423721236114619,
    0.32118606180573095,
];
#[rustfmt::skip]
const NORMINF_TIES_Y: &[f64] = &[
    0.0, 4.0, 2.0,
];
#[rustfmt::skip]
const NORMINF_TIES_D0: &[f64] = &[
    0.0, 0.0, 0.0, 0.0,
    -0.7173560908995228, 0.0, -0.4817790927085965, 0.4817790927085965,
    0.0,
];
#[rustfmt::skip]
const NORM1_ZERO_Y: &[f64] = &[
    0.0, 7.0, 5.0,
];
#[rustfmt::skip]
const NORM1_ZERO_D0: &[f64] = &[
    0.0, 0.0, 0.0, 0.7173560908995228,
    -0.7173560908995228, 0.0, -0.963558185417193, 0.963558185417193,
    0.963558185417193,
];
#[rustfmt::skip]
const SCATTER_Y: &[f64] = &[
    0.9975510002532796, 0.6518337710215366, 0.852108021949363, 0.9800665778412416,
    0.9976063813191737, 0.8196480178454795, 0.6371511441985801, 0.5409722203769886,
    0.15022546991168562, -0.04838844336841415, -0.35078322768961984, -0.11892156929661243,
];
#[rustfmt::skip]
const SCATTER_D0: &[f64] = &[
    0.0, 0.7173560908995228, 0.963558185417193, 0.0,
    0.7457052121767203, 0.0, 0.0, -0.6118578909427189,
    0.0, -0.9961646088358407, -0.8322674422239013, 0.0,
];
#[rustfmt::skip]
const SCATTER_D1: &[f64] = &[
    0.9738476308781951, 0.29552020666133955, 0.0, 0.3349881501559051,
    -0.1577456941432482, 0.0, -0.9161659367494549, -0.46460217941375737,
    0.0,
];
#[rustfmt::skip]
const SCATTER_V_Y: &[f64] = &[
    -0.75, 0.6518337710215366, 0.852108021949363, -0.75,
    0.9976063813191737, -0.75, -0.75, 0.5409722203769886,
    -0.75, -0.04838844336841415, -0.35078322768961984, -0.75,
];
#[rustfmt::skip]
const SCATTER_V_D0: &[f64] = &[
    0.0, 0.7173560908995228, 0.963558185417193, 0.0,
    0.7457052121767203, 0.0, 0.0, -0.6118578909427189,
    0.0, -0.9961646088358407, -0.8322674422239013, 0.0,
];
#[rustfmt::skip]
const SR_SUM_SELF_Y: &[f64] = &[
    -0.7955108891926637, 1.57114899305954, 0.6316140495267464, 0.9929036510941185,
    0.7965654722360865, 0.3816609920523313, -0.13796586727122728, -1.174336214919033,
    0.4000950783892142, -1.865771698790662, -0.7333237255161781, -0.34588825349182883,
];
#[rustfmt::skip]
const SR_SUM_SELF_D0: &[f64] = &[
    0.29552020666133955, 0.7173560908995228, 0.963558185417193, 0.9738476308781951,
    0.7457052121767203, 0.3349881501559051, -0.1577456941432482, -0.6118578909427189,
    -0.9161659367494549, -0.9961646088358407, -0.8322674422239013, -0.46460217941375737,
];
#[rustfmt::skip]
const SR_SUM_SELF_D1: &[f64] = &[
    -0.9161659367494549, 0.7173560908995228, -0.8322674422239013, -0.6118578909427189,
    -0.9161659367494549, -0.9961646088358407, 0.963558185417193, -0.6118578909427189,
    0.29552020666133955, -0.9961646088358407, -0.8322674422239013, -0.6118578909427189,
];
#[rustfmt::skip]
const SR_SUM_NOSELF_Y: &[f64] = &[
    -0.8953443058394919, 0.9820042351172703, -0.28518905924502064, 0.9929036510941185,
    0.7965654722360865, 0.3816609920523313, -0.13796586727122728, -0.5545993713240698,
    1.3315558721424567, -0.8781666248704467, 0.03944076203980906, -0.34588825349182883,
];
#[rustfmt::skip]
const SR_SUM_NOSELF_D0: &[f64] = &[
    0.0, 0.0, 0.0, 0.9738476308781951,
    0.7457052121767203, 0.3349881501559051, -0.1577456941432482, 0.0,
    0.0, 0.0, 0.0, -0.46460217941375737,
];
#[rustfmt::skip]
const SR_SUM_NOSELF_D1: &[f64] = &[
    -0.9161659367494549, 0.7173560908995228, -0.8322674422239013, -0.6118578909427189,
    -0.9161659367494549, -0.9961646088358407, 0.963558185417193, -0.6118578909427189,
    0.29552020666133955, -0.9961646088358407, -0.8322674422239013, -0.6118578909427189,
];
#[rustfmt::skip]
const SR_PROD_SELF_Y: &[f64] = &[
    -0.08938528112723913, 0.5785426473964477, -0.26146221610353054, 0.9929036510941185,
    0.7965654722360865, 0.3816609920523313, -0.13796586727122728, -0.23173691403294597,
    -0.38916581675115774, 0.11885079219263152, 0.7062184088770807, -0.34588825349182883,
];
#[rustfmt::skip]
const SR_PROD_SELF_D0: &[f64] = &[
    -0.2645923342947403, 0.7044467193505008, -0.2747962524269684, 0.9738476308781951,
    0.7457052121767203, 0.3349881501559051, -0.1577456941432482, -0.22879075359031123,
    -0.3827756009118124, 0.11988086740425882, 0.7605973078116862, -0.46460217941375737,
];
#[rustfmt::skip]
const SR_PROD_SELF_D1: &[f64] = &[
    0.431994522729653, 0.422626580531412, -0.602279050130445, 0.175476772777143,
    0.7043188413748938, -0.982508149281297, 0.8833931398729651, -0.2203048551744954,
    0.029502791919178276, 0.1185526998199057, 0.627645247008679, -0.19719947008289634,
];
#[rustfmt::skip]
const SR_PROD_NOSELF_Y: &[f64] = &[
    -0.8953443058394919, 0.9820042351172703, -0.28518905924502064, 0.9929036510941185,
    0.7965654722360865, 0.3816609920523313, -0.13796586727122728, 0.37392792832630184,
    0.41780160728295074, -0.1203424276880872, -0.9138856925356768, -0.34588825349182883,
];
#[rustfmt::skip]
const SR_PROD_NOSELF_D0: &[f64] = &[
    0.0, 0.0, 0.0, 0.9738476308781951,
    0.7457052121767203, 0.3349881501559051, -0.1577456941432482, 0.0,
    0.0, 0.0, 0.0, -0.46460217941375737,
];
#[rustfmt::skip]
const SR_PROD_NOSELF_D1: &[f64] = &[
    -0.4637817561692185, 0.7173560908995228, 0.7793824118849789, -0.2831472335245377,
    -0.7561443767664129, 0.9948391064672375, 0.963558185417193, 0.35548129411921553,
    0.29552020666133955, -0.12004059411047852, -0.8122076740272124, 0.3181987195387378,
];
#[rustfmt::skip]
const SR_MEAN_SELF_Y: &[f64] = &[
    -0.39775544459633183, 0.78557449652977, 0.3158070247633732, 0.9929036510941185,
    0.7965654722360865, 0.3816609920523313, -0.13796586727122728, -0.29358405372975827,
    0.13336502612973808, -0.6219238995968873, -0.24444124183872604, -0.34588825349182883,
];
#[rustfmt::skip]
const SR_MEAN_SELF_D0: &[f64] = &[
    0.14776010333066977, 0.3586780454497614, 0.4817790927085965, 0.9738476308781951,
    0.7457052121767203, 0.3349881501559051, -0.1577456941432482, -0.15296447273567973,
    -0.30538864558315165, -0.3320548696119469, -0.27742248074130044, -0.46460217941375737,
];
#[rustfmt::skip]
const SR_MEAN_SELF_D1: &[f64] = &[
    -0.30538864558315165, 0.3586780454497614, -0.27742248074130044, -0.15296447273567973,
    -0.30538864558315165, -0.3320548696119469, 0.4817790927085965, -0.15296447273567973,
    0.14776010333066977, -0.3320548696119469, -0.27742248074130044, -0.15296447273567973,
];
#[rustfmt::skip]
const SR_MEAN_NOSELF_Y: &[f64] = &[
    -0.8953443058394919, 0.9820042351172703, -0.28518905924502064, 0.9929036510941185,
    0.7965654722360865, 0.3816609920523313, -0.13796586727122728, -0.18486645710802327,
    0.6657779360712284, -0.43908331243522336, 0.01972038101990453, -0.34588825349182883,
];
#[rustfmt::skip]
const SR_MEAN_NOSELF_D0: &[f64] = &[
    0.0, 0.0, 0.0, 0.9738476308781951,
    0.7457052121767203, 0.3349881501559051, -0.1577456941432482, 0.0,
    0.0, 0.0, 0.0, -0.46460217941375737,
];
#[rustfmt::skip]
const SR_MEAN_NOSELF_D1: &[f64] = &[
    -0.45808296837472745, 0.7173560908995228, -0.4161337211119506, -0.20395263031423963,
    -0.45808296837472745, -0.49808230441792034, 0.963558185417193, -0.20395263031423963,
    0.29552020666133955, -0.49808230441792034, -0.4161337211119506, -0.20395263031423963,
];
#[rustfmt::skip]
const SR_AMAX_SELF_Y: &[f64] = &[
    0.09983341664682815, 0.9820042351172703, 0.916803108771767, 0.9929036510941185,
    0.7965654722360865, 0.3816609920523313, -0.13796586727122728, 0.8080275083121519,
    0.8253356149096783, 0.12050276936736684, 0.9758974493306055, -0.34588825349182883,
];
#[rustfmt::skip]
const SR_AMAX_SELF_D0: &[f64] = &[
    0.29552020666133955, 0.0, 0.963558185417193, 0.9738476308781951,
    0.7457052121767203, 0.3349881501559051, -0.1577456941432482, -0.0,
    -0.0, -0.0, -0.0, -0.46460217941375737,
];
#[rustfmt::skip]
const SR_AMAX_SELF_D1: &[f64] = &[
    -0.9161659367494549, 0.7173560908995228, -0.8322674422239013, -0.6118578909427189,
    -0.0, -0.9961646088358407, 0.0, -0.0,
    0.0, -0.0, -0.0, -0.0,
];
#[rustfmt::skip]
const SR_AMAX_NOSELF_Y: &[f64] = &[
    -0.8953443058394919, 0.9820042351172703, -0.28518905924502064, 0.9929036510941185,
    0.7965654722360865, 0.3816609920523313, -0.13796586727122728, 0.8080275083121519,
    0.8253356149096783, 0.12050276936736684, 0.9758974493306055, -0.34588825349182883,
];
#[rustfmt::skip]
const SR_AMAX_NOSELF_D0: &[f64] = &[
    0.0, 0.0, 0.0, 0.9738476308781951,
    0.7457052121767203, 0.3349881501559051, -0.1577456941432482, 0.0,
    0.0, 0.0, 0.0, -0.46460217941375737,
];
#[rustfmt::skip]
const SR_AMAX_NOSELF_D1: &[f64] = &[
    -0.9161659367494549, 0.7173560908995228, -0.8322674422239013, -0.6118578909427189,
    -0.0, -0.9961646088358407, 0.963558185417193, -0.0,
    0.29552020666133955, -0.0, -0.0, -0.0,
];
#[rustfmt::skip]
const SR_AMIN_SELF_Y: &[f64] = &[
    -0.8953443058394919, 0.5891447579422695, -0.28518905924502064, 0.9929036510941185,
    0.7965654722360865, 0.3816609920523313, -0.13796586727122728, -0.7190184609226814,
    -0.9314607937532425, -0.9986693942378135, -0.9364566872907965, -0.34588825349182883,
];
#[rustfmt::skip]
const SR_AMIN_SELF_D0: &[f64] = &[
    0.0, 0.7173560908995228, 0.0, 0.9738476308781951,
    0.7457052121767203, 0.3349881501559051, -0.1577456941432482, -0.0,
    -0.9161659367494549, -0.0, -0.0, -0.46460217941375737,
];
#[rustfmt::skip]
const SR_AMIN_SELF_D1: &[f64] = &[
    -0.0, 0.0, -0.0, -0.0,
    -0.0, -0.0, 0.963558185417193, -0.0,
    0.29552020666133955, -0.9961646088358407, -0.8322674422239013, -0.6118578909427189,
];
#[rustfmt::skip]
const SR_AMIN_NOSELF_Y: &[f64] = &[
    -0.8953443058394919, 0.9820042351172703, -0.28518905924502064, 0.9929036510941185,
    0.7965654722360865, 0.3816609920523313, -0.13796586727122728, -0.7190184609226814,
    0.5062202572327784, -0.9986693942378135, -0.9364566872907965, -0.34588825349182883,
];
#[rustfmt::skip]
const SR_AMIN_NOSELF_D0: &[f64] = &[
    0.0, 0.0, 0.0, 0.9738476308781951,
    0.7457052121767203, 0.3349881501559051, -0.1577456941432482, 0.0,
    0.0, 0.0, 0.0, -0.46460217941375737,
];
#[rustfmt::skip]
const SR_AMIN_NOSELF_D1: &[f64] = &[
    -0.0, 0.7173560908995228, -0.0, -0.0,
    -0.9161659367494549, -0.0, 0.963558185417193, -0.0,
    0.29552020666133955, -0.9961646088358407, -0.8322674422239013, -0.6118578909427189,
];
#[rustfmt::skip]
const SR_PROD_Z_Y: &[f64] = &[
    0.0, 0.0, 0.0, -0.5,
];
#[rustfmt::skip]
const SR_PROD_Z_D0: &[f64] = &[
    1.7731212399680372, 0.0, 0.0, 0.4869238154390976,
];
#[rustfmt::skip]
const SR_PROD_Z_D1: &[f64] = &[
    0.0, 2.869424363598091, 1.4453372781257894, 0.0,
    0.0, -0.9738476308781951,
];
#[rustfmt::skip]
const SR_AMAX_T_Y: &[f64] = &[
    3.0, 2.0, 1.5, 0.5,
];
#[rustfmt::skip]
const SR_AMAX_T_D0: &[f64] = &[
    0.0, 0.3586780454497614, 0.963558185417193, 0.0,
];
#[rustfmt::skip]
const SR_AMAX_T_D1: &[f64] = &[
    0.0, 0.0, 0.0, 0.3586780454497614,
    0.29552020666133955, 0.9738476308781951,
];
#[rustfmt::skip]
const IPUT_Y: &[f64] = &[
    0.19866933079506122, 0.5396320487339693, 0.09983341664682815, 0.5646424733950354,
    0.09983341664682815, 0.5646424733950354, 0.6605812012792007, 0.34439346725839,
    -0.01840630693305381, -0.37871487382899804, -0.6877661591839741, -0.9037315213503057,
    -0.9973810616980933, -0.9560397542711181, 0.09983341664682815, 0.5646424733950354,
    0.09983341664682815, 0.5646424733950354,
];
#[rustfmt::skip]
const IPUT_D0: &[f64] = &[
    0.29552020666133955, 0.7173560908995228, 0.0, 0.0,
    0.0, 0.0, -0.1577456941432482, -0.6118578909427189,
    -0.9161659367494549, -0.9961646088358407, -0.8322674422239013, -0.46460217941375737,
    0.016813900484349713, 0.49411335113860816, 0.0, 0.0,
    0.0, 0.0,
];
#[rustfmt::skip]
const IPUT_D1: &[f64] = &[
    3.461871851978771, 2.892296319300467,
];
#[rustfmt::skip]
const IPUT_ACC_Y: &[f64] = &[
    0.8533224486470985, 0.43787475655848895, 0.9246060124080203, 0.9949243497775808,
    1.8074899320472966, 1.3849334165251024,
];
#[rustfmt::skip]
const IPUT_ACC_D0: &[f64] = &[
    0.29552020666133955, 0.7173560908995228, 0.963558185417193, 0.9738476308781951,
    0.7457052121767203, 0.3349881501559051,
];
#[rustfmt::skip]
const IPUT_ACC_D1: &[f64] = &[
    0.29552020666133955, 0.7173560908995228, 0.7457052121767203, 0.3349881501559051,
    0.29552020666133955, 0.7173560908995228, 0.29552020666133955, 0.7173560908995228,
];

/// PyTorch's `topk(x, 2, -1).indices` and `topk(y, 3, 0, largest=False).indices`.
const TOPK_I: [i64; 6] = [2, 1, 4, 3, 1, 2];
const TOPK_S_I: [i64; 9] = [3, 3, 3, 2, 2, 2, 0, 1, 1];

// ----- sampling -----

/// The frequency of each of `c` categories among `samples`.
fn frequencies(samples: &[i64], c: usize) -> Vec<f64> {
    let mut f = vec![0.0; c];
    for &s in samples {
        f[s as usize] += 1.0 / samples.len() as f64;
    }
    f
}

#[test]
fn multinomial_draws_from_the_distribution_as_pytorch() -> Result<()> {
    use autograd::random::Rng;
    crate::init();
    // With replacement: PyTorch's 400,000 draws from [0.1, 0, 0.6, 0.3] gave
    // frequencies [0.1003, 0, 0.5995, 0.3001]; ours are within 4σ of the weights.
    let q = values(&[0.1, 0.0, 0.6, 0.3], &[4]).to_dtype(DType::F32)?;
    let s = ops::multinomial(&q, 40_000, true, &mut Rng::new(3))?;
    assert_eq!((s.dims(), s.dtype()), (&[40_000][..], DType::I64));
    let f = frequencies(&s.to_vec::<i64>()?, 4);
    assert_eq!(f[1], 0.0, "a category of weight 0 is never drawn");
    for (got, want) in f.iter().zip([0.1, 0.0, 0.6, 0.3]) {
        assert!((got - want).abs() < 0.01, "{f:?}");
    }
    // The same seed draws the same samples.
    let again = q.multinomial(40_000, true, &mut Rng::new(3))?;
    assert_eq!(again.to_vec::<i64>()?, s.to_vec::<i64>()?);
    // Without replacement, rows of [0.5, 0.3, 0.2], two draws each: distinct, the
    // first from p, the second from p renormalised without the first
    // (Σ_i p_i p_j / (1 - p_i) = [0.3393, 0.375, 0.2857]; PyTorch's 400,000 rows
    // gave [0.3387, 0.3759, 0.2855]).
    let rows = 40_000;
    let p = [0.5, 0.3, 0.2];
    let probs = values(&p.repeat(rows), &[rows, 3]);
    let s = ops::multinomial(&probs, 2, false, &mut Rng::new(11))?;
    assert_eq!(s.dims(), [rows, 2]);
    let v = s.to_vec::<i64>()?;
    assert!(
        v.chunks(2).all(|r| r[0] != r[1]),
        "draws without replacement repeat"
    );
    let first: Vec<i64> = v.iter().step_by(2).copied().collect();
    let second: Vec<i64> = v.iter().skip(1).step_by(2).copied().collect();
    let want2: Vec<f64> = (0..3)
        .map(|j| {
            (0..3)
                .filter(|&i| i != j)
                .map(|i| p[i] * p[j] / (1.0 - p[i]))
                .sum()
        })
        .collect();
    for (got, want) in frequencies(&first, 3).iter().zip(p) {
        assert!((got - want).abs() < 0.01);
    }
    for (got, want) in frequencies(&second, 3).iter().zip(&want2) {
        assert!((got - want).abs() < 0.01);
    }
    // Past the categories of positive weight, those of weight 0 (index order).
    let z = values(&[0.0, 0.5, 0.0, 0.5], &[4]);
    let s = ops::multinomial(&z, 4, false, &mut Rng::new(5))?.to_vec::<i64>()?;
    assert_eq!(s[2..], [0, 2]);
    Ok(())
}

#[test]
fn multinomial_refuses_what_pytorch_refuses() {
    use autograd::random::Rng;
    crate::init();
    let rng = &mut Rng::new(1);
    let bad = |v: &[f64]| values(v, &[v.len()]);
    expect_error(
        ops::multinomial(&bad(&[0.0, 0.0]), 1, true, rng),
        "multinomial",
        &["sums to 0"],
    );
    expect_error(
        ops::multinomial(&bad(&[-1.0, 2.0]), 1, true, rng),
        "multinomial",
        &["-1"],
    );
    expect_error(
        ops::multinomial(&bad(&[f64::INFINITY, 1.0]), 1, true, rng),
        "multinomial",
        &["inf"],
    );
    expect_error(
        ops::multinomial(&bad(&[0.5, 0.5]), 3, false, rng),
        "multinomial",
        &["at most 2"],
    );
    let ints = Tensor::from_slice(&[1i64, 2], [2]).unwrap();
    expect_error(
        ops::multinomial(&ints, 1, true, rng),
        "multinomial",
        &["i64"],
    );
}

#[test]
fn autocast_runs_prod_and_cumprod_in_f32_as_pytorch() -> Result<()> {
    crate::init();
    let x = values(&[0.5, 1.5, 2.0, -1.0], &[2, 2]).to_dtype(DType::BF16)?;
    let (p, c, l) = autograd::autocast(DType::BF16, || {
        Ok((
            ops::prod(&x, 1, false)?,
            ops::cumprod(&x, 0, false)?,
            ops::logcumsumexp(&x, 0, false)?,
        ))
    })?;
    // PyTorch's autocast lists prod and cumprod as float32 ops, not logcumsumexp.
    assert_eq!(
        (p.dtype(), c.dtype(), l.dtype()),
        (DType::F32, DType::F32, DType::BF16)
    );
    assert_eq!(p.to_vec::<f32>()?, [0.75, -2.0]);
    Ok(())
}
