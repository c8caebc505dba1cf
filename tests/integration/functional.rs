//! `autograd::functional` (vjp, jvp, jacobian, hessian, hvp), backward and grad from
//! several roots, `allow_unused`, tensor hooks and `retain_grad`, against values
//! computed by PyTorch (`scripts/functional_reference.py`, float64, run once; the
//! printed constants are pasted here).

use crate::{grad_vec, leaf};
use autograd::prelude::*;
use autograd::{Error, functional};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

// ---- scripts/functional_reference.py (PyTorch 2.x, float64) ----
const QUAD_HESSIAN: [f64; 9] = [2.0, 2.5, 1.0, 2.5, -6.0, 4.0, 1.0, 4.0, 3.0];
const TANH_JACOBIAN: [f64; 6] = [
    0.17251588888512598,
    -0.34503177777025196,
    0.08625794444256299,
    1.0213327427912025,
    0.20426654855824047,
    -0.544710796155308,
];
const CUBE_DERIVATIVES: [f64; 3] = [8.669999999999998, 10.2, 6.0];
const F_VALUE: [f64; 3] = [0.5125656626599707, -0.3891455356665852, -0.9629841124518144];
const F_VJP_X: [f64; 3] = [
    2.4900204679057523,
    -1.4709004358851914,
    -0.41357184989519813,
];
const F_VJP_W: [f64; 3] = [0.38573608721231323, 1.9198940601745225, 0.7322967439347399];
const F_JVP: [f64; 3] = [0.5927117054868004, -0.6944126022755495, 1.7058997925120842];
const F2_VJP_X: [f64; 3] = [5.979404673536801, -0.04099759471773301, -4.654374459496508];
const F2_VJP_W: [f64; 3] = [3.851275030897762, 2.780634962104017, 7.719442622591847];
const G_VALUE: f64 = -1.021671654846886;
const G_HVP_X: [f64; 3] = [0.20175219355049914, 0.23468702122174867, 4.31360177973677];
const G_HVP_W: [f64; 3] = [0.3752474318461382, 0.07056327298035212, -1.6540271352113214];
const G_HESSIAN_XW: [f64; 9] = [
    1.2198368139383473,
    0.0,
    0.0,
    0.0,
    0.24543082694996204,
    0.0,
    0.0,
    0.0,
    2.5461859928509067,
];
const HOOK_X_GRAD: [f64; 2] = [18.0, -18.0];
const HOOK_H_GRAD: [f64; 2] = [6.0, 6.0];
// ----

fn t(v: &[f64], shape: &[usize]) -> Tensor {
    Tensor::from_slice(v, shape).unwrap()
}

#[track_caller]
fn assert_close(got: &Tensor, want: &[f64]) {
    let got = got.to_vec::<f64>().unwrap();
    assert_eq!(got.len(), want.len(), "{got:?} vs {want:?}");
    for (g, w) in got.iter().zip(want) {
        assert!(
            (g - w).abs() <= 1e-12 * w.abs().max(1.0),
            "{got:?} vs {want:?}"
        );
    }
}

fn xv() -> Tensor {
    t(&[0.2, -0.5, 0.9], &[3])
}
fn wv() -> Tensor {
    t(&[1.3, 0.4, -0.6], &[3])
}

/// tanh(w x) + sin(x) w
fn f(xs: &[Tensor]) -> Result<Tensor> {
    (&xs[1] * &xs[0])?.tanh()? + (xs[0].sin()? * &xs[1])?
}

/// sum(exp(x) tanh(w x))
fn g(xs: &[Tensor]) -> Result<Tensor> {
    (xs[0].exp()? * (&xs[1] * &xs[0])?.tanh()?)?.sum_all()
}

#[test]
fn hessian_of_a_quadratic_form_is_a_plus_a_transposed() -> Result<()> {
    crate::init();
    let a = t(&[1.0, 2.0, -1.0, 0.5, -3.0, 4.0, 2.0, 0.0, 1.5], &[3, 3]);
    let x = t(&[0.3, -0.7, 1.1], &[3, 1]);
    let quad = move |xs: &[Tensor]| (&xs[0] * &a.matmul(&xs[0])?)?.sum_all();
    let h = functional::hessian(quad, &[x], false)?;
    assert_eq!(h[0][0].dims(), [3, 1, 3, 1]);
    assert_close(&h[0][0], &QUAD_HESSIAN);
    assert!(!h[0][0].requires_grad());
    Ok(())
}

#[test]
fn jacobian_of_tanh_of_a_linear_map() -> Result<()> {
    crate::init();
    let b = t(&[0.5, -1.0, 0.25, 1.5, 0.3, -0.8], &[2, 3]);
    let x = t(&[0.3, -0.7, 1.1], &[3, 1]);
    let j = functional::jacobian(move |xs| b.matmul(&xs[0])?.tanh(), &[x], false)?;
    assert_eq!(j[0][0].dims(), [2, 1, 3, 1]);
    assert_close(&j[0][0], &TANH_JACOBIAN);
    // f32 stays f32.
    let x32 = Tensor::from_slice(&[0.5f32, 2.0], [2])?;
    let j = functional::jacobian(|xs| &xs[0] * &xs[0], &[x32], false)?;
    assert_eq!(j[0][0].dtype(), DType::F32);
    assert_eq!(j[0][0].to_vec::<f32>()?, [1.0, 0.0, 0.0, 4.0]);
    Ok(())
}

#[test]
fn third_derivative_of_a_cube() -> Result<()> {
    crate::init();
    let s = Tensor::scalar(1.7f64).with_requires_grad(true);
    let y = ((&s * &s)? * &s)?;
    let keep = BackwardOptions::default().create_graph(true);
    let d1 = grad(&y, &[&s], keep.clone())?.remove(0).unwrap();
    let d2 = grad(&d1, &[&s], keep)?.remove(0).unwrap();
    let d3 = grad(&d2, &[&s], BackwardOptions::default())?
        .remove(0)
        .unwrap();
    assert_close(&d1, &CUBE_DERIVATIVES[..1]);
    assert_close(&d2, &CUBE_DERIVATIVES[1..2]);
    assert_close(&d3, &CUBE_DERIVATIVES[2..]);
    // The same through the helpers: the Jacobian of a recorded Hessian.
    let cube = |xs: &[Tensor]| (&(&xs[0] * &xs[0])? * &xs[0])?.sum_all();
    let third = functional::jacobian(
        |xs| Ok(functional::hessian(cube, xs, true)?.remove(0).remove(0)),
        &[t(&[1.7], &[1])],
        false,
    )?;
    assert_eq!(third[0][0].dims(), [1, 1, 1]);
    assert_close(&third[0][0], &CUBE_DERIVATIVES[2..]);
    Ok(())
}

#[test]
fn vjp_and_jvp_of_a_nonlinear_function() -> Result<()> {
    crate::init();
    let v_out = t(&[1.0, -2.0, 0.5], &[3]);
    let (y, vj): (Tensor, _) = functional::vjp(f, &[xv(), wv()], &[v_out], false)?;
    assert_close(&y, &F_VALUE);
    assert_close(&vj[0], &F_VJP_X);
    assert_close(&vj[1], &F_VJP_W);
    assert!(!y.requires_grad() && !vj[0].requires_grad());

    let v_in = [t(&[0.3, 0.1, -1.0], &[3]), t(&[-0.4, 0.8, 0.6], &[3])];
    let (y, jv) = functional::jvp(f, &[xv(), wv()], &v_in, false)?;
    assert_close(&y, &F_VALUE);
    assert_close(&jv, &F_JVP);

    // Two outputs.
    let f2 = |xs: &[Tensor]| -> Result<Vec<Tensor>> {
        let a = (&xs[1] * &xs[0])?.tanh()?;
        let b = (xs[0].exp()? * &xs[1])?.sum_all()?;
        Ok(vec![a, b])
    };
    let seeds = [t(&[1.0, -2.0, 0.5], &[3]), Tensor::scalar(3.0f64)];
    let (ys, vj) = functional::vjp(f2, &[xv(), wv()], &seeds, false)?;
    assert_eq!(ys.len(), 2);
    assert_close(&vj[0], &F2_VJP_X);
    assert_close(&vj[1], &F2_VJP_W);
    Ok(())
}

#[test]
fn hvp_and_hessian_blocks_of_a_scalar_function() -> Result<()> {
    crate::init();
    let v = [t(&[0.3, 0.1, -1.0], &[3]), t(&[-0.4, 0.8, 0.6], &[3])];
    let (y, hv) = functional::hvp(g, &[xv(), wv()], &v, false)?;
    assert_close(&y, &[G_VALUE]);
    assert_close(&hv[0], &G_HVP_X);
    assert_close(&hv[1], &G_HVP_W);
    let h = functional::hessian(g, &[xv(), wv()], false)?;
    assert_eq!(h[0][1].dims(), [3, 3]);
    assert_close(&h[0][1], &G_HESSIAN_XW);
    // H v from the full Hessian agrees with hvp.
    let hv_x =
        (h[0][0].matmul(&v[0].reshape([3, 1])?)? + h[0][1].matmul(&v[1].reshape([3, 1])?)?)?;
    assert_close(&hv_x, &G_HVP_X);
    Ok(())
}

#[test]
fn create_graph_results_are_differentiable_and_reach_the_inputs() -> Result<()> {
    crate::init();
    // vjp of x² with v = 1 is 2x, recorded: its gradient is 2.
    let x = leaf(&[1.5, -2.0], &[2]);
    let (_, g): (Tensor, _) = functional::vjp(
        |xs| &xs[0] * &xs[0],
        std::slice::from_ref(&x),
        &[t(&[1.0, 1.0], &[2])],
        true,
    )?;
    assert!(g[0].requires_grad());
    g[0].sum_all()?.backward()?;
    assert_eq!(grad_vec(&x), [2.0, 2.0]);
    // The helpers leave the inputs' .grad() alone otherwise.
    let y = leaf(&[1.0], &[1]);
    functional::vjp(|xs| xs[0].exp(), std::slice::from_ref(&y), &[], false)?;
    assert!(y.grad().is_none());
    Ok(())
}

#[test]
fn outputs_independent_of_an_input_give_zeros_and_bad_vectors_are_errors() -> Result<()> {
    crate::init();
    let (_, vj): (Tensor, _) = functional::vjp(
        |xs| xs[0].exp(),
        &[xv(), wv()],
        &[t(&[1.0; 3], &[3])],
        false,
    )?;
    assert_eq!(vj[1].to_vec::<f64>()?, [0.0; 3]);
    let j = functional::jacobian(|xs| xs[0].exp(), &[xv(), wv()], false)?;
    assert_eq!(j[0][1].to_vec::<f64>()?, [0.0; 9]);
    let (_, jv) = functional::jvp(|_| Ok(t(&[1.0], &[1])), &[xv()], &[xv()], false)?;
    assert_eq!(jv.to_vec::<f64>()?, [0.0]);

    let err = functional::vjp(f, &[xv(), wv()], &[t(&[1.0; 2], &[2])], false).unwrap_err();
    assert!(err.to_string().contains("v[0] has shape [2]"), "{err}");
    let err = functional::jvp(f, &[xv(), wv()], &[xv()], false).unwrap_err();
    assert!(
        err.to_string().contains("1 tensors in v for 2 inputs"),
        "{err}"
    );
    let err = functional::hessian(f, &[xv(), wv()], false).unwrap_err();
    assert!(err.to_string().contains("must return one element"), "{err}");
    let err = functional::jacobian(f, &[], false).unwrap_err();
    assert!(err.to_string().contains("no inputs"), "{err}");
    Ok(())
}

#[test]
fn backward_and_grad_from_several_roots_with_seeds() -> Result<()> {
    crate::init();
    let x = leaf(&[1.0, 2.0], &[2]);
    let shared = x.exp()?; // reached from both roots: its backward runs once
    let a = (&shared * &x)?;
    let b = (&shared * 3.0)?.sum_all()?;
    let seed_a = t(&[1.0, 10.0], &[2]);
    autograd::backward_many(
        &[&a, &b],
        &[Some(seed_a.clone()), None],
        BackwardOptions::default(),
    )?;
    let e: Vec<f64> = [1.0f64, 2.0].iter().map(|v| v.exp()).collect();
    // d/dx [seed_a ⊙ x eˣ + 3 Σ eˣ] = seed_a ⊙ (x + 1) eˣ + 3 eˣ
    let want = [e[0] * 2.0 + 3.0 * e[0], 10.0 * e[1] * 3.0 + 3.0 * e[1]];
    let got = grad_vec(&x);
    assert!(
        got.iter().zip(&want).all(|(g, w)| (g - w).abs() < 1e-12),
        "{got:?}"
    );

    // grad_many: the same sum, without touching .grad().
    let x2 = leaf(&[1.0, 2.0], &[2]);
    let shared = x2.exp()?;
    let a = (&shared * &x2)?;
    let b = (&shared * 3.0)?.sum_all()?;
    let g = autograd::grad_many(
        &[&a, &b],
        &[Some(seed_a), None],
        &[&x2],
        BackwardOptions::default(),
    )?;
    assert_eq!(g[0].as_ref().unwrap().to_vec::<f64>()?, got);
    assert!(x2.grad().is_none());

    // The same root twice: the seeds add up.
    let y = leaf(&[3.0], &[1]);
    let z = (&y * 2.0)?;
    let one = Some(t(&[1.0], &[1]));
    autograd::backward_many(&[&z, &z], &[one.clone(), one], BackwardOptions::default())?;
    assert_eq!(grad_vec(&y), [4.0]);

    // Errors, before any gradient moves.
    let w = leaf(&[1.0, 1.0], &[2]);
    let c = (&w * 2.0)?;
    let err = autograd::backward_many(&[&c], &[], BackwardOptions::default()).unwrap_err();
    assert!(err.to_string().contains("shape [2]"), "{err}");
    let err = autograd::backward_many(&[&c, &c], &[None], BackwardOptions::default()).unwrap_err();
    assert!(err.to_string().contains("1 seeds for 2 roots"), "{err}");
    let constant = t(&[1.0], &[1]);
    let err = autograd::backward_many(&[&c.sum_all()?, &constant], &[], BackwardOptions::default())
        .unwrap_err();
    assert!(matches!(err, Error::NoGradRoot), "{err}");
    assert!(w.grad().is_none());
    Ok(())
}

#[test]
fn grad_of_an_unused_input_is_an_error_naming_it_unless_allowed() -> Result<()> {
    crate::init();
    let x = leaf(&[1.0, 2.0], &[2]);
    let unused = leaf(&[1.0, 2.0, 3.0], &[3]);
    let y = x.exp()?.sum_all()?;
    let keep = BackwardOptions::default().retain_graph(true);
    let err = grad(&y, &[&x, &unused], keep.clone()).unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err, Error::UnusedInput { index: 1, .. }), "{msg}");
    assert!(
        msg.contains("input 1 (shape [3])") && msg.contains("allow_unused(true)"),
        "{msg}"
    );
    let g = grad(&y, &[&x, &unused], keep.clone().allow_unused(true))?;
    assert!(g[0].is_some() && g[1].is_none());
    let g = grad(&y, &[&x, &unused], keep.materialize_grads(true))?;
    assert_eq!(g[1].as_ref().unwrap().to_vec::<f64>()?, [0.0; 3]);
    Ok(())
}

#[test]
fn hooks_and_retain_grad_match_pytorch() -> Result<()> {
    crate::init();
    let x = leaf(&[1.0, -2.0], &[2]);
    let h = (&x * &x)?;
    let calls = Arc::new(AtomicUsize::new(0));
    let seen = calls.clone();
    h.register_hook(|g| Ok(Some((g * 2.0)?)))?;
    h.retain_grad()?;
    assert!(h.retains_grad() && !x.retains_grad());
    // x is used twice: its hook runs once per pass, on the sum.
    x.register_hook(move |g| {
        seen.fetch_add(1, Ordering::Relaxed);
        Ok(Some((g + 1.0)?))
    })?;
    let y = ((&h * 3.0)?.sum_all()? + (&x * 5.0)?.sum_all()?)?;
    y.backward()?;
    assert_eq!(grad_vec(&x), HOOK_X_GRAD);
    assert_eq!(grad_vec(&h), HOOK_H_GRAD);
    assert_eq!(calls.load(Ordering::Relaxed), 1);
    h.zero_grad();
    assert!(h.grad().is_none());
    Ok(())
}

#[test]
fn hooks_read_gradients_are_removed_by_their_handle_and_run_for_grad() -> Result<()> {
    crate::init();
    let x = leaf(&[1.0, 2.0], &[2]);
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let log = seen.clone();
    let handle = x.register_hook(move |g| {
        log.lock().unwrap().push(g.to_vec::<f64>()?);
        Ok(None) // read only
    })?;
    (&x * 3.0)?.sum_all()?.backward()?;
    assert_eq!(grad_vec(&x), [3.0, 3.0]);
    // grad() runs the input's hooks too, and gives what they return.
    let doubled = x.register_hook(|g| Ok(Some((g * 2.0)?)))?;
    let g = grad(&(&x * 4.0)?.sum_all()?, &[&x], BackwardOptions::default())?;
    assert_eq!(g[0].as_ref().unwrap().to_vec::<f64>()?, [8.0, 8.0]);
    assert!(handle.remove());
    assert!(doubled.remove());
    x.zero_grad();
    (&x * 3.0)?.sum_all()?.backward()?;
    assert_eq!(grad_vec(&x), [3.0, 3.0]);
    assert_eq!(*seen.lock().unwrap(), [vec![3.0, 3.0], vec![4.0, 4.0]]);

    // A retained gradient accumulates across passes through a kept graph.
    let h = (&x * &x)?;
    h.retain_grad()?;
    let y = h.sum_all()?;
    y.backward_with(BackwardOptions::default().retain_graph(true))?;
    y.backward()?;
    assert_eq!(grad_vec(&h), [2.0, 2.0]);
    Ok(())
}

#[test]
fn hook_errors_are_values() -> Result<()> {
    crate::init();
    let constant = t(&[1.0], &[1]);
    let err = constant.register_hook(|_| Ok(None)).unwrap_err();
    assert!(err.to_string().contains("does not require grad"), "{err}");
    assert!(constant.retain_grad().is_err());
    let x = leaf(&[1.0, 2.0], &[2]);
    let y = (&x * 2.0)?;
    y.register_hook(|g| Ok(Some(g.sum_all()?)))?;
    let err = y.sum_all()?.backward().unwrap_err();
    let msg = err.to_string();
    assert!(
        msg.contains("returned a gradient of shape []") && msg.contains("mul_scalar"),
        "{msg}"
    );
    let z = (&x * 2.0)?;
    z.register_hook(|_| {
        Err(Error::InvalidArgument {
            op: "my hook",
            msg: "stop".into(),
        })
    })?;
    let err = z.sum_all()?.backward().unwrap_err();
    assert!(err.to_string().contains("stop"), "{err}");
    Ok(())
}

#[test]
fn hooks_and_retained_gradients_go_with_their_tensors() -> Result<()> {
    crate::init();
    use autograd::{Device, memory};
    let live = || memory::thread_stats(Device::Cpu).live_bytes;
    let before = live();
    {
        let x = leaf(&[0.5; 1000], &[1000]);
        let held = Tensor::zeros([1000], DType::F64)?; // kept alive by the hooks
        let (a, b) = (held.clone(), held);
        x.register_hook(move |_| {
            let _ = &a;
            Ok(None)
        })?;
        let h = (&x * &x)?;
        h.retain_grad()?;
        h.register_hook(move |_| {
            let _ = &b;
            Ok(None)
        })?;
        // create_graph: the gradients are recorded, the retained one is not.
        let y = (&h * &x)?.sum_all()?;
        y.backward_with(BackwardOptions::default().create_graph(true))?;
        assert!(x.grad().unwrap().requires_grad());
        assert!(!h.grad().unwrap().requires_grad());
        assert_eq!(h.grad().unwrap().to_vec::<f64>()?, [0.5; 1000]);
    }
    assert_eq!(live(), before, "leaked");
    Ok(())
}
