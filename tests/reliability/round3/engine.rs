//! See `mod.rs`.

use autograd::prelude::*;
use autograd::{CheckpointOptions, checkpoint, checkpoint_with};
use std::sync::{Arc, Mutex};

// ----- 7. dropout inside `checkpoint` -----

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

// ----- 9. a refused `grad` call leaves the graph as it was -----

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
