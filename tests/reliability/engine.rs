//! The engine's rules and what it refuses: dropout inside `checkpoint` recomputes
//! the same masks, gradient handles are snapshots, a wrong-shaped gradient and a
//! second backward through an unrecorded one are errors naming the op, gradcheck
//! that checks nothing is an error, `no_grad` guards dropped out of order, a
//! backward started inside a backward, a second backward through nodes that saved
//! nothing, `grad` with respect to an unused input, and a refused `grad` call that
//! leaves the graph as it was.

use autograd::prelude::*;
use autograd::{CheckpointOptions, NoGradGuard, checkpoint, checkpoint_with, is_grad_enabled};
use std::cell::RefCell;
use std::sync::{Arc, Mutex};

// ----- dropout inside `checkpoint` -----

/// `x ⊙ w`, dropped out, through `tanh`, times `w`, dropped out again: two masks
/// drawn from `rng`, and gradients for `x` and `w` that depend on both.
fn dropout_segment(xs: &[Tensor], rng: &Mutex<Rng>) -> Result<Tensor> {
    let mut rng = rng.lock().unwrap();
    let h = (&xs[0] * &xs[1])?.dropout(0.5, true, &mut rng)?;
    (&h.tanh()? * &xs[1])?.dropout(0.3, true, &mut rng)
}

/// The model, checkpointed or not, from the same seed: the gradients of `x` and `w`
/// as bits, and the generator's next draws after backward.
fn dropout_model(checkpointed: Option<CheckpointOptions>) -> Result<(Vec<u64>, Vec<u64>)> {
    let mut init = Rng::new(11);
    let x = init
        .normal([64], 0.0, 1.0, DType::F64)?
        .with_requires_grad(true);
    let w = init
        .normal([64], 0.0, 1.0, DType::F64)?
        .with_requires_grad(true);
    let rng = Arc::new(Mutex::new(Rng::new(2024)));
    let y = match checkpointed {
        None => dropout_segment(&[x.clone(), w.clone()], &rng)?,
        Some(opts) => {
            let inner = rng.clone();
            let y = checkpoint_with(
                move |xs| dropout_segment(xs, &inner),
                &[x.clone(), w.clone()],
                opts,
            )?;
            assert_eq!(y.grad_fn().unwrap().op_name(), "checkpoint");
            y
        }
    };
    // The generator moves on between forward and backward (another dropout,
    // outside the segment): the recomputation must not start from where it is now.
    let y = y.dropout(0.2, true, &mut rng.lock().unwrap())?;
    y.square()?.sum_all()?.backward()?;
    let bits = |t: &Tensor| -> Result<Vec<u64>> {
        let g = t.grad().expect("a gradient").to_vec::<f64>()?;
        Ok(g.iter().map(|v| v.to_bits()).collect())
    };
    let grads = [bits(&x)?, bits(&w)?].concat();
    let mut rng = rng.lock().unwrap();
    let after = (0..4).map(|_| rng.next_u64()).collect();
    Ok((grads, after))
}

/// The recomputation draws the masks the first forward drew (the generator's state
/// is replayed, as PyTorch's `preserve_rng_state`), so the gradients are those of
/// the plain model bit for bit, and the generator's stream after backward is the
/// plain model's: recomputing does not advance it.
#[test]
fn dropout_inside_checkpoint_recomputes_the_same_mask() -> Result<()> {
    crate::init();
    let (plain_grads, plain_after) = dropout_model(None)?;
    let (ck_grads, ck_after) = dropout_model(Some(CheckpointOptions::default()))?;
    assert_eq!(ck_grads, plain_grads, "gradients of x and w, as bits");
    assert_eq!(ck_after, plain_after, "the stream after backward");

    // Turned off, the recomputation draws anew: other masks, and a stream moved on
    // by the recomputation's draws.
    let off = CheckpointOptions::default().preserve_rng_state(false);
    let (off_grads, off_after) = dropout_model(Some(off))?;
    assert_ne!(off_grads, plain_grads);
    assert_ne!(off_after, plain_after);
    Ok(())
}

/// Replaying works through nested segments and clones made inside the segment,
/// and generators made inside it are deterministic anyway.
#[test]
fn nested_checkpoints_with_dropout_recompute_the_same_masks() -> Result<()> {
    crate::init();
    let run = |checkpointed: bool| -> Result<(Vec<u64>, u64)> {
        let x = Rng::new(5)
            .normal([32], 0.0, 1.0, DType::F64)?
            .with_requires_grad(true);
        let rng = Arc::new(Mutex::new(Rng::new(77)));
        let inner_rng = rng.clone();
        let inner = move |xs: &[Tensor]| -> Result<Tensor> {
            // A fork of the shared generator, and a generator of its own.
            let mut fork = inner_rng.lock().unwrap().clone();
            let h = xs[0].dropout(0.4, true, &mut fork)?.exp()?;
            h.dropout(0.4, true, &mut Rng::new(3))
        };
        let outer_rng = rng.clone();
        let outer = move |xs: &[Tensor]| -> Result<Tensor> {
            let h = xs[0].dropout(0.5, true, &mut outer_rng.lock().unwrap())?;
            let h = if checkpointed {
                checkpoint(inner.clone(), &[h.sin()?])?
            } else {
                inner(&[h.sin()?])?
            };
            h.dropout(0.5, true, &mut outer_rng.lock().unwrap())
        };
        let y = if checkpointed {
            checkpoint(outer, std::slice::from_ref(&x))?
        } else {
            outer(std::slice::from_ref(&x))?
        };
        y.sum_all()?.backward()?;
        let g = x.grad().unwrap().to_vec::<f64>()?;
        let next = rng.lock().unwrap().next_u64();
        Ok((g.iter().map(|v| v.to_bits()).collect(), next))
    };
    assert_eq!(run(true)?, run(false)?);
    Ok(())
}

// ----- a refused `grad` call leaves the graph as it was -----

/// `grad` refuses an input the output does not depend on before running backward,
/// so the retry its message advises (`allow_unused(true)`) finds the graph whole:
/// it used to fail with "a second time" (`GraphConsumed`), the refused call having
/// consumed the graph.
#[test]
fn a_refused_grad_call_leaves_the_graph_for_the_advised_retry() -> Result<()> {
    crate::init();
    let x = Tensor::from_slice(&[1.0f64, 2.0], [2])?.with_requires_grad(true);
    let unused = Tensor::from_slice(&[3.0f64], [1])?.with_requires_grad(true);
    let h = x.exp()?; // saves its output: a second pass through it is refused
    let y = (&h * &x)?.sum_all()?; // Σ x eˣ
    let opts = BackwardOptions::default();
    let err = grad(&y, &[&x, &unused], opts.clone()).unwrap_err();
    assert!(matches!(err, Error::UnusedInput { index: 1, .. }), "{err}");
    assert!(err.to_string().contains("allow_unused(true)"), "{err}");
    // An interior tensor the output was not computed from is refused the same way.
    let other = x.sin()?;
    let err = grad(&y, &[&other], opts.clone()).unwrap_err();
    assert!(matches!(err, Error::UnusedInput { index: 0, .. }), "{err}");

    let g = grad(&y, &[&x, &unused], opts.allow_unused(true))?;
    let dx = g[0].as_ref().expect("y depends on x").to_vec::<f64>()?;
    for (got, x) in dx.iter().zip([1.0f64, 2.0]) {
        let want = (x + 1.0) * x.exp();
        assert!((got - want).abs() <= 1e-14 * want, "{got} vs {want}");
    }
    assert!(g[1].is_none());
    assert!(x.grad().is_none() && unused.grad().is_none());
    // That pass (without retain_graph) is the one that consumed the graph.
    let err = grad(&y, &[&x], BackwardOptions::default()).unwrap_err();
    assert!(matches!(err, Error::GraphConsumed { .. }), "{err}");
    Ok(())
}

// ----- gradient handles are snapshots -----

/// The rule (documented on `Tensor::grad`): a handle from `x.grad()` is a snapshot;
/// a later backward accumulates into a new tensor, never into the buffer the
/// caller holds.
#[test]
fn a_gradient_handle_is_a_snapshot() -> Result<()> {
    crate::init();
    let x = Tensor::from_slice(&[1.0f64, 2.0], [2])?.with_requires_grad(true);
    x.square()?.sum_all()?.backward()?;
    let first = x.grad().unwrap();
    x.square()?.sum_all()?.backward()?;
    assert_eq!(first.to_vec::<f64>()?, [2.0, 4.0], "the earlier handle");
    assert_eq!(
        x.grad().unwrap().to_vec::<f64>()?,
        [4.0, 8.0],
        "accumulated"
    );
    Ok(())
}

// ----- a wrong-shaped gradient is an error, not summed -----

#[differentiable(name = "test_wrong_grad_shape")]
mod wrong_grad_shape {
    use autograd::prelude::*;

    pub fn forward(x: &Tensor) -> Result<Tensor> {
        x.mul_scalar(2.0)
    }

    /// Wrong: a `[2, 3]` gradient for a `[3]` input whose output is `[3]`.
    pub fn backward(grad: &Tensor) -> Result<Tensor> {
        let g = grad.mul_scalar(2.0)?;
        g.unsqueeze(0)?.broadcast_to([2, 3])
    }
}

#[test]
fn a_backward_returning_a_wrong_shape_is_an_error() -> Result<()> {
    crate::init();
    let x = Tensor::from_slice(&[1.0f64, 2.0, 3.0], [3])?.with_requires_grad(true);
    let err = wrong_grad_shape(&x)?.sum_all()?.backward().unwrap_err();
    assert!(
        matches!(
            &err,
            Error::BadGradient { op: "test_wrong_grad_shape", input: 0, expected, got, output }
                if expected.dims() == [3] && got.dims() == [2, 3] && output.dims() == [3]
        ),
        "{err}"
    );
    let msg = err.to_string();
    assert!(
        msg.contains("[2, 3]") && msg.contains("test_wrong_grad_shape"),
        "{msg}"
    );
    assert!(x.grad().is_none(), "nothing was summed into the leaf");

    // What broadcasting produced is still reduced: `[3] + [2, 3]`.
    let b = Tensor::from_slice(&[1.0f64; 6], [2, 3])?;
    (&x + &b)?.sum_all()?.backward()?;
    assert_eq!(x.grad().unwrap().to_vec::<f64>()?, [2.0; 3]);
    Ok(())
}

// ----- an unrecorded backward fails the second backward, naming the op -----

#[differentiable(name = "test_unrecorded_backward")]
mod unrecorded_backward {
    use autograd::prelude::*;

    /// x³.
    pub fn forward(x: &Tensor) -> Result<Tensor> {
        x.pow_scalar(3.0)
    }

    use autograd::{BinaryOp, UnaryOp, compute, ops};

    /// 3x², computed outside the graph.
    pub fn backward(grad: &Tensor, x: &Tensor) -> Result<Tensor> {
        let d = compute::unary(
            &autograd::no_grad(|| ops::square(x))?,
            UnaryOp::MulScalar(3.0),
        )?;
        compute::binary(grad, &d, BinaryOp::Mul)
    }
}

#[test]
fn second_order_through_an_unrecorded_backward_is_an_error() -> Result<()> {
    crate::init();
    let x = Tensor::scalar(2.0f64).with_requires_grad(true);
    let y = unrecorded_backward(&x)?;
    let opts = BackwardOptions::default().create_graph(true);
    let dy = grad(&y, &[&x], opts)?.remove(0).unwrap();
    assert_eq!(
        dy.to_scalar::<f64>()?,
        12.0,
        "the first derivative is right"
    );
    assert!(
        dy.requires_grad(),
        "and marked, so the next backward sees it"
    );
    let err = grad(&dy, &[&x], BackwardOptions::default()).unwrap_err();
    assert!(
        matches!(
            err,
            Error::NotDifferentiable {
                op: "test_unrecorded_backward"
            }
        ),
        "{err}"
    );
    assert!(err.to_string().contains("is not differentiable"), "{err}");

    // Standard ops whose second derivative is zero are not flagged: it comes out 0.
    let r = x.relu()?;
    let dr = grad(&r, &[&x], BackwardOptions::default().create_graph(true))?
        .remove(0)
        .expect("relu's gradient");
    let ddr = grad(
        &dr.sum_all()?,
        &[&x],
        BackwardOptions::default().allow_unused(true),
    )?
    .remove(0);
    if let Some(ddr) = ddr {
        assert!(
            ddr.to_vec::<f64>()?.iter().all(|&v| v == 0.0),
            "relu's second derivative is 0"
        );
    }
    Ok(())
}

// ----- gradcheck that checks nothing is an error -----

#[test]
fn gradcheck_with_an_empty_or_all_false_mask_is_an_error() -> Result<()> {
    crate::init();
    // A deliberately wrong "derivative" would pass a check of nothing.
    let f = |xs: &[Tensor]| unrecorded_backward(&xs[0]);
    let x = Tensor::from_slice(&[1.0f64, 2.0], [2])?;
    let opts = autograd::GradcheckOptions::default();
    for mask in [vec![], vec![false]] {
        let err =
            autograd::gradcheck("nothing", &f, std::slice::from_ref(&x), &mask, &opts).unwrap_err();
        assert!(
            matches!(&err, Error::NothingChecked { what, .. } if what == "nothing"),
            "{err}"
        );
        let err = autograd::gradgradcheck("nothing", &f, std::slice::from_ref(&x), &mask, &opts)
            .unwrap_err();
        assert!(matches!(err, Error::NothingChecked { .. }), "{err}");
    }
    let empty = Tensor::from_vec(Vec::<f64>::new(), [0])?;
    let err = autograd::gradcheck("empty", &f, &[empty], &[true], &opts).unwrap_err();
    assert!(err.to_string().contains("no elements"), "{err}");
    Ok(())
}

// ----- no_grad guards dropped out of order -----

#[test]
fn no_grad_guards_dropped_out_of_order_restore_recording() -> Result<()> {
    crate::init();
    assert!(is_grad_enabled());
    let first = NoGradGuard::new();
    let second = NoGradGuard::new();
    drop(first);
    assert!(!is_grad_enabled(), "a guard is still live");
    drop(second);
    assert!(is_grad_enabled(), "recording is back on");
    let x = Tensor::scalar(1.0f64).with_requires_grad(true);
    x.exp()?.backward()?;
    assert!(x.grad().is_some());
    Ok(())
}

// ----- a backward inside a backward; a second backward where nothing was saved -----

thread_local! {
    static ROOT: RefCell<Option<Tensor>> = const { RefCell::new(None) };
}

#[differentiable(name = "test_reentrant")]
mod reentrant {
    use autograd::prelude::*;

    pub fn forward(x: &Tensor) -> Result<Tensor> {
        x.mul_scalar(1.0)
    }

    /// Starts another backward from the graph's root, from inside this pass.
    pub fn backward(grad: &Tensor) -> Result<Tensor> {
        if let Some(root) = super::ROOT.with(|r| r.borrow().clone()) {
            root.backward_with(BackwardOptions::default().retain_graph(true))?;
        }
        Ok(grad.clone())
    }
}

#[test]
fn a_backward_started_inside_a_backward_says_so() -> Result<()> {
    crate::init();
    let x = Tensor::scalar(1.0f64).with_requires_grad(true);
    let root = reentrant(&x)?.exp()?.sum_all()?;
    ROOT.with(|r| *r.borrow_mut() = Some(root.clone()));
    let err = root
        .backward_with(BackwardOptions::default().retain_graph(true))
        .unwrap_err();
    ROOT.with(|r| *r.borrow_mut() = None);
    assert!(
        matches!(
            err,
            Error::ReentrantBackward {
                op: "test_reentrant"
            }
        ),
        "{err}"
    );
    assert!(err.to_string().contains("same thread"), "{err}");
    Ok(())
}

#[test]
fn a_second_backward_through_nodes_that_saved_nothing_works() -> Result<()> {
    crate::init();
    let x = Tensor::from_slice(&[1.0f64, 2.0], [2])?.with_requires_grad(true);
    let y = x.add_scalar(1.0)?.mul_scalar(3.0)?.sum_all()?;
    y.backward()?;
    y.backward()?; // nothing was released: nothing was saved
    assert_eq!(x.grad().unwrap().to_vec::<f64>()?, [6.0, 6.0]);
    // A node that saved something still refuses, naming it.
    let z = x.exp()?.sum_all()?;
    z.backward()?;
    let err = z.backward().unwrap_err();
    assert!(matches!(err, Error::GraphConsumed { op: "exp" }), "{err}");
    Ok(())
}

// ----- grad() with respect to a tensor that takes no part -----

#[test]
fn grad_of_an_unused_input_is_an_error_unless_allowed() -> Result<()> {
    crate::init();
    let x = Tensor::scalar(2.0f64).with_requires_grad(true);
    let unused = Tensor::scalar(5.0f64).with_requires_grad(true);
    let constant = Tensor::scalar(1.0f64);
    let y = x.square()?;
    let err = grad(
        &y,
        &[&x, &unused],
        BackwardOptions::default().retain_graph(true),
    )
    .unwrap_err();
    assert!(matches!(err, Error::UnusedInput { index: 1, .. }), "{err}");
    assert!(err.to_string().contains("allow_unused"), "{err}");
    let err = grad(
        &y,
        &[&constant],
        BackwardOptions::default().retain_graph(true),
    )
    .unwrap_err();
    assert!(err.to_string().contains("does not require grad"), "{err}");
    let g = grad(
        &y,
        &[&x, &unused],
        BackwardOptions::default().allow_unused(true),
    )?;
    assert_eq!(g[0].as_ref().unwrap().to_scalar::<f64>()?, 4.0);
    assert!(g[1].is_none());
    Ok(())
}
