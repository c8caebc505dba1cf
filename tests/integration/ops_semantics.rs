//! Documented behaviour of the standard ops: ties, numerical stability, the gelu
//! formula, n-ary concat, index repeats, method forms.

use crate::{grad_vec, leaf};
use autograd::prelude::*;
use autograd::{ComputationGraph, ops};

fn assert_all_close(got: &[f64], want: &[f64], tol: f64) {
    assert_eq!(got.len(), want.len(), "{got:?} vs {want:?}");
    for (g, w) in got.iter().zip(want) {
        assert!(
            (g - w).abs() <= tol * (1.0 + w.abs()),
            "{got:?} vs {want:?}"
        );
    }
}

#[test]
fn max_and_min_split_the_gradient_equally_among_ties() -> Result<()> {
    crate::init();
    let x = leaf(&[1.0, 3.0, 3.0, 2.0, -1.0, -1.0], &[2, 3]);
    let loss = ops::sum_all(&x.max(-1, false)?)?;
    loss.backward()?;
    assert_eq!(grad_vec(&x), vec![0.0, 0.5, 0.5, 1.0, 0.0, 0.0]);
    x.zero_grad();
    ops::sum_all(&x.min(1, true)?)?.backward()?;
    assert_eq!(grad_vec(&x), vec![1.0, 0.0, 0.0, 0.0, 0.5, 0.5]);
    // Three-way tie along axis 0.
    let y = leaf(&[5.0, 5.0, 5.0], &[3, 1]);
    ops::sum_all(&y.max(0, false)?)?.backward()?;
    assert_all_close(&grad_vec(&y), &[1.0 / 3.0; 3], 1e-15);
    Ok(())
}

#[test]
fn maximum_and_minimum_split_ties_half_and_half() -> Result<()> {
    crate::init();
    let a = leaf(&[1.0, 2.0, 3.0], &[3]);
    let b = leaf(&[2.0, 2.0, 1.0], &[3]);
    ops::sum_all(&a.maximum(&b)?)?.backward()?;
    assert_eq!(grad_vec(&a), vec![0.0, 0.5, 1.0]);
    assert_eq!(grad_vec(&b), vec![1.0, 0.5, 0.0]);
    a.zero_grad();
    b.zero_grad();
    ops::sum_all(&a.minimum(&b)?)?.backward()?;
    assert_eq!(grad_vec(&a), vec![1.0, 0.5, 0.0]);
    assert_eq!(grad_vec(&b), vec![0.0, 0.5, 1.0]);
    Ok(())
}

#[test]
fn maximum_broadcasts_and_reduces_the_gradient_to_each_shape() -> Result<()> {
    crate::init();
    // relu-like clamp against a broadcast scalar-ish threshold [1].
    let x = leaf(&[-1.0, 0.5, 2.0, -3.0], &[2, 2]);
    let floor = leaf(&[0.0], &[1]);
    let y = x.maximum(&floor)?;
    assert_eq!(y.to_vec::<f64>()?, vec![0.0, 0.5, 2.0, 0.0]);
    ops::sum_all(&y)?.backward()?;
    assert_eq!(grad_vec(&x), vec![0.0, 1.0, 1.0, 0.0]);
    assert_eq!(grad_vec(&floor), vec![2.0]);
    Ok(())
}

#[test]
fn softmax_logsumexp_and_log_softmax_are_stable_for_large_inputs() -> Result<()> {
    crate::init();
    let x = Tensor::from_slice(&[1000.0f32, 1001.0, 999.0, -1e4, 0.0, 1e4], [2, 3])?;
    let p = x.softmax(-1)?.to_vec::<f32>()?;
    assert!(p.iter().all(|v| v.is_finite()), "{p:?}");
    let row_sums = [p[0] + p[1] + p[2], p[3] + p[4] + p[5]];
    assert!(row_sums.iter().all(|s| (s - 1.0).abs() < 1e-6), "{p:?}");
    let lse = x.logsumexp(-1, false)?.to_vec::<f32>()?;
    let want0 = 1001.0 + ((-1.0f64).exp() + 1.0 + (-2.0f64).exp()).ln();
    assert!((lse[0] as f64 - want0).abs() < 1e-3, "{lse:?}");
    assert_eq!(lse[1], 1e4);
    let lp = x.log_softmax(1)?.to_vec::<f32>()?;
    assert!(lp.iter().all(|v| v.is_finite()), "{lp:?}");
    assert_eq!(lp[3], -2e4);
    // A row of -inf has logsumexp -inf, not NaN.
    let ninf = Tensor::from_slice(&[f64::NEG_INFINITY; 3], [3])?;
    assert_eq!(
        ninf.logsumexp(0, false)?.to_scalar::<f64>()?,
        f64::NEG_INFINITY
    );
    Ok(())
}

#[test]
fn gelu_is_the_tanh_approximation() -> Result<()> {
    crate::init();
    let v = [-3.0, -0.5, 0.0, 0.7, 2.5];
    let x = leaf(&v, &[5]);
    let y = x.gelu()?;
    let c = (2.0 / std::f64::consts::PI).sqrt();
    let want: Vec<f64> = v
        .iter()
        .map(|&x: &f64| 0.5 * x * (1.0 + (c * (x + 0.044715 * x.powi(3))).tanh()))
        .collect();
    assert_all_close(&y.to_vec::<f64>()?, &want, 1e-15);
    Ok(())
}

#[test]
fn cross_entropy_matches_the_definition_and_its_gradient() -> Result<()> {
    crate::init();
    let logits = leaf(&[1.0, 2.0, 0.5, -1.0, 0.0, 3.0], &[2, 3]);
    let targets = Tensor::from_slice(&[1i64, 2], [2])?;
    let loss = logits.cross_entropy(&targets)?;
    let row = |r: [f64; 3], t: usize| {
        let lse = r.iter().map(|v| v.exp()).sum::<f64>().ln();
        (lse - r[t], r.map(|v| (v - lse).exp()))
    };
    let (l0, p0) = row([1.0, 2.0, 0.5], 1);
    let (l1, p1) = row([-1.0, 0.0, 3.0], 2);
    assert_all_close(&[loss.to_scalar::<f64>()?], &[(l0 + l1) / 2.0], 1e-14);
    loss.backward()?;
    let want = [
        p0[0] / 2.0,
        (p0[1] - 1.0) / 2.0,
        p0[2] / 2.0,
        p1[0] / 2.0,
        p1[1] / 2.0,
        (p1[2] - 1.0) / 2.0,
    ];
    assert_all_close(&grad_vec(&logits), &want, 1e-14);
    Ok(())
}

#[test]
fn concat_all_joins_in_order_and_routes_each_gradient_back() -> Result<()> {
    crate::init();
    let parts: Vec<Tensor> = (0..5)
        .map(|k| leaf(&[k as f64, 10.0 + k as f64], &[2, 1]))
        .collect();
    let refs: Vec<&Tensor> = parts.iter().collect();
    let joined = ops::concat_all(&refs, -1)?;
    assert_eq!(joined.dims(), &[2, 5]);
    assert_eq!(
        joined.to_vec::<f64>()?,
        vec![0.0, 1.0, 2.0, 3.0, 4.0, 10.0, 11.0, 12.0, 13.0, 14.0]
    );
    // n - 1 concat nodes.
    let graph = ComputationGraph::of(&[&joined]);
    assert_eq!(graph.nodes().len(), 4);
    let weights = Tensor::from_slice(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0], [2, 5])?;
    ops::sum_all(&(&joined * &weights)?)?.backward()?;
    for (k, p) in parts.iter().enumerate() {
        assert_eq!(grad_vec(p), vec![1.0 + k as f64, 6.0 + k as f64]);
    }
    assert!(ops::concat_all(&[], 0).is_err());
    let one = ops::concat_all(&[&parts[0]], 0)?;
    assert_eq!(one.id(), parts[0].id());
    Ok(())
}

#[test]
fn index_select_repeats_add_up_in_the_gradient() -> Result<()> {
    crate::init();
    let x = leaf(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], &[3, 2]);
    let idx = Tensor::from_slice(&[2i64, 0, 2, 2], [4])?;
    let y = x.index_select(&idx, 0)?;
    assert_eq!(
        y.to_vec::<f64>()?,
        vec![5.0, 6.0, 1.0, 2.0, 5.0, 6.0, 5.0, 6.0]
    );
    ops::sum_all(&y)?.backward()?;
    assert_eq!(grad_vec(&x), vec![1.0, 1.0, 0.0, 0.0, 3.0, 3.0]);
    Ok(())
}

#[test]
fn narrow_pad_permute_squeeze_round_trip() -> Result<()> {
    crate::init();
    let x = leaf(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]);
    let padded = x.pad(1, 1, 2)?;
    assert_eq!(padded.dims(), &[2, 6]);
    assert_eq!(
        padded.narrow(-1, 1, 3)?.to_vec::<f64>()?,
        x.to_vec::<f64>()?
    );
    let p = x.unsqueeze(0)?.permute(&[2, 0, 1])?;
    assert_eq!(p.dims(), &[3, 1, 2]);
    let back = p.squeeze(1)?.t()?;
    assert_eq!(back.to_vec::<f64>()?, x.to_vec::<f64>()?);
    ops::sum_all(&(&back * &back)?)?.backward()?;
    assert_eq!(grad_vec(&x), vec![2.0, 4.0, 6.0, 8.0, 10.0, 12.0]);
    Ok(())
}

#[test]
fn pow_differentiates_base_and_exponent() -> Result<()> {
    crate::init();
    let a = leaf(&[2.0, 3.0], &[2]);
    let b = leaf(&[2.0, -1.0], &[2]);
    ops::sum_all(&a.pow(&b)?)?.backward()?;
    // d/da = b a^(b-1), d/db = a^b ln a.
    assert_all_close(&grad_vec(&a), &[4.0, -1.0 / 9.0], 1e-15);
    assert_all_close(
        &grad_vec(&b),
        &[4.0 * 2.0f64.ln(), 3.0f64.ln() / 3.0],
        1e-15,
    );
    Ok(())
}

#[test]
fn ops_keep_the_dtype_of_their_inputs() -> Result<()> {
    crate::init();
    let x = Tensor::from_slice(&[0.5f32, 1.5, -0.25, 2.0], [2, 2])?.with_requires_grad(true);
    let t = Tensor::from_slice(&[1i64, 0], [2])?;
    let loss = (x.gelu()?.softmax(-1)?.cross_entropy(&t)? + x.mean_all()?)?;
    assert_eq!(loss.dtype(), DType::F32);
    loss.backward()?;
    assert_eq!(x.grad().unwrap().dtype(), DType::F32);
    Ok(())
}

/// `to_dtype` is recorded: the gradient comes back in the input's dtype, through
/// any number of conversions, and twice differentiable.
#[test]
fn to_dtype_sends_the_gradient_back_in_the_inputs_dtype() -> Result<()> {
    crate::init();
    let x = leaf(&[0.5, -1.25, 2.0], &[3]);
    let y = x.to_dtype(DType::F32)?;
    assert_eq!(y.dtype(), DType::F32);
    let node = y.grad_fn().expect("recorded");
    assert_eq!(node.saved_tensor_count(), 0, "saves nothing");
    let opts = autograd::BackwardOptions::default().create_graph(true);
    // d/dx Σ (f32(x))² = 2x, in f64.
    let g = autograd::grad(&(&y * &y)?.sum_all()?, &[&x], opts)?[0]
        .clone()
        .expect("a gradient");
    assert_eq!(g.dtype(), DType::F64);
    assert_eq!(g.to_vec::<f64>()?, [1.0, -2.5, 4.0]);
    // And again: d/dx Σ 2x = 2.
    g.sum_all()?.backward()?;
    assert_eq!(grad_vec(&x), [2.0, 2.0, 2.0]);
    // Converting to the dtype it has is the identity, still recorded.
    let z = ops::to_dtype(&x, DType::F64)?;
    assert!(z.grad_fn().is_some());
    Ok(())
}

/// `where`, `embedding` and attention as methods give what their functions give.
#[test]
fn where_embedding_and_attention_are_methods_too() -> Result<()> {
    crate::init();
    let x = Tensor::from_slice(&[1.0f64, 2.0, 3.0, 4.0], [2, 2])?;
    let y = Tensor::from_slice(&[-1.0f64, -2.0, -3.0, -4.0], [2, 2])?;
    let c = Tensor::from_slice(&[true, false, false, true], [2, 2])?;
    assert_eq!(x.r#where(&c, &y)?.to_vec::<f64>()?, [1.0, -2.0, -3.0, 4.0]);
    let idx = Tensor::from_slice(&[1i64, 0, 1], [3])?;
    assert_eq!(
        x.embedding(&idx)?.to_vec::<f64>()?,
        [3.0, 4.0, 1.0, 2.0, 3.0, 4.0]
    );
    let opts = || autograd::ops::AttentionOptions {
        is_causal: true,
        ..Default::default()
    };
    assert_eq!(
        x.scaled_dot_product_attention(&x, &y, opts())?
            .to_vec::<f64>()?,
        autograd::ops::scaled_dot_product_attention(&x, &x, &y, opts())?.to_vec::<f64>()?
    );
    Ok(())
}
