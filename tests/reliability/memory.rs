//! Every path gives its memory back: storage bytes allocated by this thread return to
//! the baseline after backward, after dropping a graph that never ran backward, after
//! a backward that fails half-way, and once a tensor that outlived its graph goes.
//!
//! `thread_stats` counts the bytes this thread allocated minus those it freed, so
//! each test observes only its own tensors while other tests run in parallel.

use autograd::memory::thread_stats;
use autograd::prelude::*;
use autograd::{ComputationGraph, ops};

fn live() -> isize {
    thread_stats(Device::Cpu).live_bytes
}

fn leaf(n: usize, seed: u64) -> Tensor {
    Rng::new(seed)
        .uniform([n], 0.5, 1.5, DType::F64)
        .unwrap()
        .with_requires_grad(true)
}

/// A graph with shared subexpressions, broadcasting, reductions, saved inputs and a
/// saved output: `sum(exp(x * w) + relu(x - w.mean()) * x)`.
fn model(x: &Tensor, w: &Tensor) -> Result<Tensor> {
    let xw = (x * w)?;
    let e = ops::exp(&xw)?;
    let centred = (x - &ops::mean_all(w)?)?;
    let r = (ops::relu(&centred)? * x)?;
    ops::sum_all(&(e + r)?)
}

/// An op whose backward always fails: a pass through it stops half-way.
#[differentiable(name = "test_failing_backward")]
mod failing_backward {
    use autograd::prelude::*;

    pub fn forward(x: &Tensor) -> Result<Tensor> {
        Ok(x.clone())
    }

    pub fn backward(grad: &Tensor) -> Result<Tensor> {
        Err(Error::InvalidArgument {
            op: "test_failing_backward",
            msg: format!("refuses a gradient of shape {}", grad.shape()),
        })
    }
}

/// How many graphs the tests in this module build and drop, each checked to leave
/// zero bytes behind.
const ROUNDS: usize = 50;

#[test]
fn graphs_dropped_after_backward_leave_nothing() -> Result<()> {
    crate::init();
    let baseline = live();
    for round in 0..ROUNDS {
        let x = leaf(64, round as u64);
        let w = leaf(64, 1000 + round as u64);
        let loss = model(&x, &w)?;
        loss.backward()?;
        assert!(x.grad().is_some() && w.grad().is_some());
        drop((x, w, loss));
        assert_eq!(live(), baseline, "round {round} leaked");
    }
    Ok(())
}

#[test]
fn graphs_dropped_without_backward_leave_nothing() -> Result<()> {
    crate::init();
    let baseline = live();
    for round in 0..ROUNDS {
        let x = leaf(64, round as u64);
        let w = leaf(64, 2000 + round as u64);
        let loss = model(&x, &w)?;
        assert!(ComputationGraph::of(&[&loss]).saved_bytes() > 0);
        drop((x, w, loss));
        assert_eq!(live(), baseline, "round {round} leaked");
    }
    Ok(())
}

#[test]
fn retained_and_higher_order_graphs_leave_nothing() -> Result<()> {
    crate::init();
    let baseline = live();
    for round in 0..ROUNDS {
        let x = leaf(16, round as u64);
        let w = leaf(16, 3000 + round as u64);
        let loss = model(&x, &w)?;
        loss.backward_with(BackwardOptions::default().retain_graph(true))?;
        loss.backward()?;
        // Gradient of the gradient: the recorded backward pass is a graph too.
        let y = ops::sum_all(&ops::pow_scalar(&x, 3.0)?)?;
        let g = grad(&y, &[&x], BackwardOptions::default().create_graph(true))?
            .remove(0)
            .expect("y depends on x");
        ops::sum_all(&g)?.backward()?;
        drop((x, w, loss, y, g));
        assert_eq!(live(), baseline, "round {round} leaked");
    }
    Ok(())
}

/// `backward(create_graph)` stores a recorded gradient in the leaf, and that
/// gradient's graph points back at the leaf's gradient slot: a cycle that dropping
/// the leaf must break.
#[test]
fn create_graph_into_a_leaf_is_freed_with_the_leaf() -> Result<()> {
    crate::init();
    let baseline = live();
    for round in 0..ROUNDS {
        let x = leaf(16, round as u64);
        let y = ops::sum_all(&ops::pow_scalar(&x, 3.0)?)?;
        y.backward_with(BackwardOptions::default().create_graph(true))?;
        let g = x.grad().expect("gradient");
        assert!(g.requires_grad(), "the gradient is recorded");
        drop(g);
        drop((x, y));
        assert_eq!(live(), baseline, "round {round} leaked");
    }
    Ok(())
}

/// The same cycle when the leaf's handle is gone before the pass: nobody can read
/// that gradient, and storing it would tie the slot to a graph that holds the slot.
#[test]
fn create_graph_into_a_dropped_leaf_leaves_nothing() -> Result<()> {
    crate::init();
    let baseline = live();
    for round in 0..ROUNDS {
        let x = leaf(16, round as u64);
        let h = ops::exp(&x)?; // exp's node saves its output and points at x's slot
        let y = ops::sum_all(&(&h * &h)?)?;
        drop(x);
        y.backward_with(BackwardOptions::default().create_graph(true))?;
        drop((h, y));
        assert_eq!(live(), baseline, "round {round} leaked");
    }
    Ok(())
}

/// `set_data` on a shared parameter moves every handle to the new values (a new
/// buffer when another handle held the old one); the gradient slot lives while any
/// handle does, and goes with the last one (a create_graph gradient included).
#[test]
fn a_parameter_updated_while_shared_lives_as_long_as_its_last_handle() -> Result<()> {
    crate::init();
    let baseline = live();
    for round in 0..ROUNDS {
        let mut w = leaf(8, round as u64);
        let before = w.clone();
        w.set_data(&Tensor::ones([8], DType::F64)?)?;
        assert_eq!(before.to_vec::<f64>()?, vec![1.0; 8], "one parameter");
        drop(before);
        let y = ops::sum_all(&ops::pow_scalar(&w, 3.0)?)?;
        y.backward_with(BackwardOptions::default().create_graph(true))?;
        let g = w
            .grad()
            .expect("the updated handle still receives gradients");
        assert_eq!(g.to_vec::<f64>()?, vec![3.0; 8]);
        drop((g, y));
        let kept = w.clone();
        drop(w);
        assert!(
            kept.grad().is_some(),
            "a handle is left: the gradient stays"
        );
        drop(kept);
        assert_eq!(live(), baseline, "round {round} leaked");
    }
    Ok(())
}

/// `sum_all(sin(x)) + sum_all(failing(exp(x)))`: the pass fails at the failing op
/// while `sin`'s node already holds a pending gradient and `exp`'s saved output is
/// still needed. Nodes are numbered so that sin's runs after the failing op.
fn failing_graph(x: &Tensor) -> Result<(Tensor, Tensor)> {
    let e = ops::exp(x)?;
    let s = ops::sin(x)?;
    let f = failing_backward(&e)?;
    let loss = (ops::sum_all(&f)? + ops::sum_all(&s)?)?;
    Ok((loss, s))
}

#[test]
fn backward_failing_half_way_holds_no_gradient_buffers_or_claims() -> Result<()> {
    crate::init();
    let baseline = live();
    for round in 0..ROUNDS {
        let retain = round % 2 == 0;
        let x = leaf(32, round as u64);
        let (loss, s) = failing_graph(&x)?;
        let before = live();
        let err = loss
            .backward_with(BackwardOptions::default().retain_graph(retain))
            .unwrap_err();
        assert_eq!(err.op(), Some("test_failing_backward"), "{err}");
        assert!(x.grad().is_none(), "no gradient reached the leaf");
        // The pending gradients of the add, the sums and sin were all released; the
        // nodes that ran saved nothing, so the graph holds what it held before.
        assert_eq!(
            live(),
            before,
            "round {round}: gradient buffers left behind"
        );
        // No node is still claimed by the failed pass: another pass runs through sin.
        ops::sum_all(&s)?.backward()?;
        let expected: Vec<f64> = x.to_vec::<f64>()?.iter().map(|v| v.cos()).collect();
        for (g, e) in x.grad().unwrap().to_vec::<f64>()?.iter().zip(&expected) {
            assert!((g - e).abs() <= 2.0 * f64::EPSILON, "{g} vs cos: {e}");
        }
        drop((x, loss, s));
        assert_eq!(live(), baseline, "round {round} leaked");
    }
    Ok(())
}

#[test]
fn backward_stopped_by_anomaly_mode_leaves_nothing() -> Result<()> {
    crate::init();
    let baseline = live();
    for round in 0..ROUNDS {
        let x = Tensor::from_slice(&[0.0f64, round as f64 + 1.0], [2])?.with_requires_grad(true);
        let other = ops::sum_all(&ops::exp(&x)?)?;
        let loss = (ops::sum_all(&ops::sqrt(&x)?)? + other)?;
        let err = {
            let _on = autograd::anomaly::enable();
            loss.backward().unwrap_err()
        };
        assert!(matches!(err, Error::Anomaly { op: "sqrt", .. }), "{err}");
        drop((x, loss));
        assert_eq!(live(), baseline, "round {round} leaked");
    }
    Ok(())
}

#[test]
fn a_tensor_outliving_its_graph_keeps_only_its_ancestors_until_dropped() -> Result<()> {
    crate::init();
    let baseline = live();
    for round in 0..ROUNDS {
        let x = leaf(128, round as u64);
        let bytes = 128 * 8;
        let kept = {
            let h = ops::tanh(&ops::exp(&x)?)?; // exp saves its output, tanh too
            let loss = ops::sum_all(&ops::square(&h)?)?; // square saves h (shared)
            loss.backward()?;
            h
        };
        // The loss and square's node are gone; h keeps its own buffer, and its
        // producers' saved outputs were released by the backward pass.
        assert_eq!(
            live() - baseline,
            2 * bytes /* x, x.grad */ + bytes /* h */
        );
        assert_eq!(ComputationGraph::of(&[&kept]).saved_bytes(), 0);
        let grad = x.grad().unwrap();
        drop(x);
        drop(kept);
        assert_eq!(live() - baseline, bytes, "only the gradient handle is left");
        drop(grad);
        assert_eq!(live(), baseline, "round {round} leaked");
    }
    Ok(())
}

#[test]
fn an_intermediate_kept_without_backward_holds_its_graph_until_dropped() -> Result<()> {
    crate::init();
    let baseline = live();
    let x = leaf(256, 7);
    let with_x = live();
    let h = ops::exp(&ops::sin(&x)?)?;
    let y = ops::sum_all(&h)?;
    drop(y);
    // sin saves x (already counted), exp saves its output h: only h's buffer.
    assert_eq!(live() - with_x, 256 * 8);
    let g = grad(&ops::sum_all(&h)?, &[&x], BackwardOptions::default())?;
    assert!(g[0].is_some());
    drop(g);
    assert_eq!(live() - with_x, 256 * 8, "grad() left buffers behind");
    drop(h);
    assert_eq!(live(), with_x);
    drop(x);
    assert_eq!(live(), baseline);
    Ok(())
}
