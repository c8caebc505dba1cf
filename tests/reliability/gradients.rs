//! No false `NotDifferentiable` under `create_graph` (and the true ones still
//! caught), and `std`/`var` where the spread is zero.

use autograd::fusion::{FusionConfig, with_config};
use autograd::ops::{layer_norm, std_dev, var};
use autograd::prelude::*;

/// Each case runs with fusion off, with the default settings, and with every
/// elementwise op deferred: the rule must not depend on which path an op took.
fn each_fusion_setting(case: impl Fn() -> Result<()>) -> Result<()> {
    let all = FusionConfig {
        enabled: true,
        min_elements: 1,
    };
    for config in [FusionConfig::OFF, FusionConfig::from_env(), all] {
        with_config(config, &case).map_err(|e| Error::InvalidArgument {
            op: "test",
            msg: format!("with {config:?}: {e}"),
        })?;
    }
    Ok(())
}

fn leaf(values: &[f64]) -> Tensor {
    Tensor::from_slice(values, [values.len()])
        .unwrap()
        .with_requires_grad(true)
}

fn close(got: &[f64], want: &[f64]) {
    assert_eq!(got.len(), want.len(), "{got:?} against {want:?}");
    for (g, w) in got.iter().zip(want) {
        assert!(
            (g - w).abs() <= 1e-12 * w.abs().max(1.0),
            "{got:?} against {want:?}"
        );
    }
}

// ----- gradients that are legitimately constant are not `NotDifferentiable` -----

/// `mean(exp(x) / c)`: div's backward writes `grad / c` into the gradient it owns
/// (neither requires grad), which records nothing and is still a graph computation.
#[test]
fn hvp_of_a_mean_of_exp_over_a_constant_is_not_refused() -> Result<()> {
    crate::init();
    each_fusion_setting(|| {
        let x = Tensor::from_slice(&[0.5f64, -1.0, 2.0], [3])?;
        let c = Tensor::from_slice(&[2.0f64, 4.0, 8.0], [3])?;
        let v = Tensor::from_slice(&[1.0f64, 1.0, 1.0], [3])?;
        let (_, hv) =
            autograd::functional::hvp(|xs| (&xs[0].exp()? / &c)?.mean_all(), &[x], &[v], false)?;
        // The Hessian is diagonal: exp(x) / (3 c).
        let want: Vec<f64> = [0.5f64, -1.0, 2.0]
            .iter()
            .zip([2.0, 4.0, 8.0])
            .map(|(x, c)| x.exp() / (3.0 * c))
            .collect();
        close(&hv[0].to_vec::<f64>()?, &want);
        Ok(())
    })
}

/// `sum(x·x·x)` three times, each time with a constant direction.
#[test]
fn a_third_derivative_of_a_cube_with_constant_directions_is_six() -> Result<()> {
    crate::init();
    each_fusion_setting(|| {
        let x = leaf(&[0.5, -1.5]);
        let y = (&(&x * &x)? * &x)?.sum_all()?;
        let create = BackwardOptions::default().create_graph(true);
        let g1 = grad(&y, &[&x], create.clone())?.remove(0).unwrap();
        close(&g1.to_vec::<f64>()?, &[0.75, 6.75]);
        let ones = Tensor::from_slice(&[1.0f64, 1.0], [2])?;
        let g2 = grad(&(&g1 * &ones)?.sum_all()?, &[&x], create)?
            .remove(0)
            .unwrap();
        close(&g2.to_vec::<f64>()?, &[3.0, -9.0]);
        let g3 = grad(
            &(&g2 * &ones)?.sum_all()?,
            &[&x],
            BackwardOptions::default(),
        )?
        .remove(0)
        .unwrap();
        close(&g3.to_vec::<f64>()?, &[6.0, 6.0]);
        Ok(())
    })
}

/// `exp(x) * w` with a constant `w`, then a reshape: mul's backward writes
/// `grad * w` in place, reshape's passes it on.
#[test]
fn a_second_derivative_through_a_product_with_a_constant_and_a_reshape() -> Result<()> {
    crate::init();
    each_fusion_setting(|| {
        let x = leaf(&[0.5, -1.0, 2.0, 0.25]);
        let w = Tensor::from_slice(&[1.0f64, 2.0, 3.0, 4.0], [4])?;
        let y = (&x.exp()? * &w)?.reshape([2, 2])?.sum_all()?;
        let create = BackwardOptions::default().create_graph(true);
        let g = grad(&y, &[&x], create)?.remove(0).unwrap();
        let gg = grad(&g.sum_all()?, &[&x], BackwardOptions::default())?
            .remove(0)
            .unwrap();
        let want: Vec<f64> = [0.5f64, -1.0, 2.0, 0.25]
            .iter()
            .zip([1.0, 2.0, 3.0, 4.0])
            .map(|(x, w)| x.exp() * w)
            .collect();
        close(&gg.to_vec::<f64>()?, &want);
        Ok(())
    })
}

/// `layer_norm` with a constant weight, then a reshape.
#[test]
fn a_second_derivative_through_layer_norm_with_a_constant_weight() -> Result<()> {
    crate::init();
    each_fusion_setting(|| {
        let x = Tensor::from_slice(&[0.5f64, -1.0, 2.0, 0.25, 1.0, -2.0], [2, 3])?
            .with_requires_grad(true);
        let w = Tensor::from_slice(&[1.0f64, 2.0, 3.0], [3])?;
        let y = layer_norm(&x, Some(&w), None, 1e-5)?.reshape([6])?;
        let y = (&y * &y)?.sum_all()?;
        let create = BackwardOptions::default().create_graph(true);
        let g = grad(&y, &[&x], create)?.remove(0).unwrap();
        let gg = grad(&g.sum_all()?, &[&x], BackwardOptions::default())?.remove(0);
        let gg = gg.expect("a second derivative").to_vec::<f64>()?;
        assert!(gg.iter().all(|v| v.is_finite()), "{gg:?}");
        Ok(())
    })
}

/// `jvp` with `create_graph`, through a product with a constant.
#[test]
fn jvp_with_create_graph_through_a_product_with_a_constant() -> Result<()> {
    crate::init();
    each_fusion_setting(|| {
        let x = Tensor::from_slice(&[0.5f64, -1.0], [2])?;
        let c = Tensor::from_slice(&[3.0f64, 5.0], [2])?;
        let v = Tensor::from_slice(&[1.0f64, 10.0], [2])?;
        let (_, jv): (Tensor, Tensor) = autograd::functional::jvp(
            |xs| (&xs[0].exp()? * &c)?.reshape([2, 1]),
            &[x],
            &[v],
            true,
        )?;
        let want = [0.5f64.exp() * 3.0, (-1.0f64).exp() * 5.0 * 10.0];
        close(&jv.to_vec::<f64>()?, &want);
        Ok(())
    })
}

#[differentiable(name = "test_cube_escapes_in_backward")]
mod cube_escapes {
    use autograd::prelude::*;

    /// x³.
    pub fn forward(x: &Tensor) -> Result<Tensor> {
        x.pow_scalar(3.0)
    }

    /// 3x²·grad, with a recorded op on the way (so "some op was recorded" would not
    /// tell), but the square of `x` taken with recording off: outside the graph.
    pub fn backward(grad: &Tensor, x: &Tensor) -> Result<Tensor> {
        let g3 = (grad * 3.0)?;
        let sq = autograd::no_grad(|| x * x)?;
        &g3 * &sq
    }
}

/// The other way: a backward that records some ops but computes from a tensor that
/// requires grad with recording off is still refused, naming the op.
#[test]
fn a_backward_that_leaves_the_graph_is_refused_even_when_it_records_ops() -> Result<()> {
    crate::init();
    let x = Tensor::scalar(2.0f64).with_requires_grad(true);
    let y = cube_escapes(&x)?;
    let create = BackwardOptions::default().create_graph(true);
    let g = grad(&y, &[&x], create)?.remove(0).unwrap();
    assert_eq!(g.to_scalar::<f64>()?, 12.0, "the first derivative is right");
    let err = grad(&g, &[&x], BackwardOptions::default()).unwrap_err();
    assert!(
        matches!(
            err.root_cause(),
            Error::NotDifferentiable {
                op: "test_cube_escapes_in_backward"
            }
        ),
        "{err}"
    );
    Ok(())
}

// ----- std and var where the spread is zero -----

/// PyTorch's `std_backward` gives 0 where the standard deviation is 0.
#[test]
fn std_of_equal_values_has_a_zero_gradient_as_pytorch() -> Result<()> {
    crate::init();
    for values in [[0.1f64, 0.1, 0.1, 0.1], [3.0, 3.0, 3.0, 3.0]] {
        let x = Tensor::from_slice(&values, [2, 2])?.with_requires_grad(true);
        for correction in [0, 1] {
            let s = std_dev(&x, 1, correction, false)?;
            let g = grad(&s.sum_all()?, &[&x], BackwardOptions::default())?
                .remove(0)
                .unwrap();
            assert_eq!(g.to_vec::<f64>()?, [0.0; 4], "std of {values:?}");
            let v = var(&x, 1, correction, false)?;
            let g = grad(&v.sum_all()?, &[&x], BackwardOptions::default())?
                .remove(0)
                .unwrap();
            assert!(
                g.to_vec::<f64>()?.iter().all(|v| v.abs() < 1e-12),
                "var of {values:?}"
            );
        }
    }
    Ok(())
}

/// A repeated index in a `gather` feeding a `std` left every upstream parameter NaN.
#[test]
fn a_repeated_gather_index_feeding_std_leaves_the_parameters_finite() -> Result<()> {
    crate::init();
    let w = Tensor::from_slice(&[0.5f64, -1.0, 2.0], [3])?.with_requires_grad(true);
    let h = (&w * 2.0)?;
    let idx = Tensor::from_slice(&[1i64, 1], [2])?;
    let picked = h.gather(&idx, 0)?;
    let s = std_dev(&picked, 0, 1, false)?;
    let loss = (&s + &(&w * &w)?.sum_all()?)?;
    loss.backward()?;
    assert_eq!(w.grad().unwrap().to_vec::<f64>()?, [1.0, -2.0, 4.0]);
    Ok(())
}

/// The gradient of `std` stays twice differentiable, and right where the spread
/// is not zero.
#[test]
fn std_with_a_nonzero_spread_keeps_its_gradient_and_second_derivative() -> Result<()> {
    crate::init();
    let x = Tensor::from_slice(&[1.0f64, 3.0, 2.0, 2.0], [2, 2])?.with_requires_grad(true);
    let s = std_dev(&x, 1, 0, false)?.sum_all()?;
    let create = BackwardOptions::default().create_graph(true);
    let g = grad(&s, &[&x], create)?.remove(0).unwrap();
    // Row 0: σ = 1, (x - x̄)/(n σ) = ∓0.5; row 1: σ = 0, gradient 0.
    assert_eq!(g.to_vec::<f64>()?, [-0.5, 0.5, 0.0, 0.0]);
    let gg = grad(&(&g * &g)?.sum_all()?, &[&x], BackwardOptions::default())?
        .remove(0)
        .unwrap()
        .to_vec::<f64>()?;
    assert!(gg.iter().all(|v| v.is_finite()), "{gg:?}");
    Ok(())
}
