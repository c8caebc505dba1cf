//! Semantics of recording and of the backward engine.

use crate::{grad_vec, leaf};
use autograd::prelude::*;
use autograd::{ComputationGraph, Error, ops};
use std::sync::atomic::{AtomicUsize, Ordering};

#[test]
fn residual_connection_accumulates_both_paths() -> Result<()> {
    crate::init();
    let x = leaf(&[0.5, -1.0], &[2]);
    let y = (ops::exp(&x)? + &x)?;
    ops::sum_all(&y)?.backward()?;
    let expected: Vec<f64> = [0.5f64, -1.0].iter().map(|v| v.exp() + 1.0).collect();
    assert_eq!(grad_vec(&x), expected);
    Ok(())
}

#[test]
fn shared_gradient_buffers_are_never_mutated_through_an_alias() -> Result<()> {
    crate::init();
    // add's backward hands the same gradient buffer to x and to y; x then receives a
    // second contribution. Accumulating in place into the aliased buffer would
    // change y's gradient too.
    let x = leaf(&[1.0, 1.0], &[2]);
    let y = leaf(&[1.0, 1.0], &[2]);
    let loss = (ops::sum_all(&(&x + &y)?)? + ops::sum_all(&(&x * 2.0)?)?)?;
    loss.backward()?;
    assert_eq!(grad_vec(&x), vec![3.0, 3.0]);
    assert_eq!(grad_vec(&y), vec![1.0, 1.0]);
    Ok(())
}

#[test]
fn only_ancestors_of_the_root_are_visited() -> Result<()> {
    crate::init();
    let x = leaf(&[1.0, 2.0], &[2]);
    let dead = ops::exp(&x)?; // recorded, but not part of the loss
    let loss = ops::sum_all(&(&x * 3.0)?)?;
    loss.backward()?;
    let dead_node = dead.grad_fn().unwrap();
    assert!(
        !dead_node.is_consumed(),
        "the dead branch's node was visited"
    );
    assert_eq!(
        dead_node.saved_tensor_count(),
        1,
        "its saved output is still held"
    );
    assert!(loss.grad_fn().unwrap().is_consumed());
    assert_eq!(grad_vec(&x), vec![3.0, 3.0]);
    // The dead branch can still be differentiated on its own.
    ops::sum_all(&dead)?.backward()?;
    let want = [3.0 + 1f64.exp(), 3.0 + 2f64.exp()];
    for (g, w) in grad_vec(&x).iter().zip(want) {
        assert!((g - w).abs() <= 4.0 * f64::EPSILON * w, "{g} vs {w}");
    }
    Ok(())
}

#[test]
fn record_skips_a_node_only_when_every_input_is_frozen() -> Result<()> {
    crate::init();
    let frozen = Tensor::from_slice(&[2.0f64], [1])?;
    let other = Tensor::from_slice(&[3.0f64], [1])?;
    let trained = leaf(&[4.0], &[1]);
    let both_frozen = (&frozen * &other)?;
    assert!(both_frozen.grad_fn().is_none() && !both_frozen.requires_grad());
    let mixed = (&frozen * &trained)?;
    let node = mixed
        .grad_fn()
        .expect("one input requires grad: the node is recorded");
    assert_eq!(node.op_name(), "mul");
    assert!(mixed.requires_grad());
    // Frozen inputs get no gradient, and no edge to follow.
    ops::sum_all(&mixed)?.backward()?;
    assert!(frozen.grad().is_none());
    assert_eq!(grad_vec(&trained), vec![2.0]);
    Ok(())
}

#[test]
fn nothing_is_recorded_under_no_grad() -> Result<()> {
    crate::init();
    let x = leaf(&[1.0], &[1]);
    let y = no_grad(|| &x * &x)?;
    assert!(!y.requires_grad());
    assert!(matches!(y.backward(), Err(Error::NoGradRoot)));
    Ok(())
}

#[test]
fn second_backward_is_an_error_naming_the_op() -> Result<()> {
    crate::init();
    let x = leaf(&[2.0], &[1]);
    let y = ops::sum_all(&(&x * &x)?)?;
    y.backward()?;
    // sum_all saved nothing, so the second pass goes through it; mul saved x.
    let err = y.backward().unwrap_err();
    assert!(matches!(err, Error::GraphConsumed { op: "mul" }), "{err}");
    assert!(err.to_string().contains("retain_graph"), "{err}");
    Ok(())
}

#[test]
fn retained_graph_can_be_differentiated_twice() -> Result<()> {
    crate::init();
    let x = leaf(&[2.0], &[1]);
    let y = ops::sum_all(&(&x * &x)?)?;
    y.backward_with(BackwardOptions::default().retain_graph(true))?;
    y.backward()?;
    assert_eq!(
        grad_vec(&x),
        vec![8.0],
        "two backward passes accumulate 4 + 4"
    );
    assert!(
        y.backward().is_err(),
        "the second (non-retaining) pass consumed the graph"
    );
    Ok(())
}

#[test]
fn non_scalar_root_needs_a_seed() -> Result<()> {
    crate::init();
    let x = leaf(&[1.0, 2.0], &[2]);
    let y = (&x * 3.0)?;
    let err = y.backward().unwrap_err();
    assert!(matches!(err, Error::NonScalarRoot { .. }));
    assert!(err.to_string().contains("[2]"), "{err}");
    let bad_seed = BackwardOptions::default().seed(Tensor::ones([3], DType::F64)?);
    assert!(matches!(
        y.backward_with(bad_seed),
        Err(Error::SeedMismatch { .. })
    ));
    y.backward_with(BackwardOptions::default().seed(Tensor::from_slice(&[1.0f64, 10.0], [2])?))?;
    assert_eq!(grad_vec(&x), vec![3.0, 30.0]);
    Ok(())
}

#[test]
fn gradients_reach_every_handle_of_a_tensor() -> Result<()> {
    crate::init();
    let x = leaf(&[3.0], &[1]);
    let copy = x.clone();
    let y = ops::sum_all(&(&copy * &copy)?)?;
    y.backward()?;
    assert_eq!(x.id(), copy.id());
    assert_eq!(grad_vec(&x), vec![6.0]);
    assert_eq!(grad_vec(&copy), vec![6.0]);
    Ok(())
}

#[test]
fn zero_grad_clears_accumulated_gradients() -> Result<()> {
    crate::init();
    let (x, y) = (leaf(&[3.0], &[1]), leaf(&[4.0], &[1]));
    ops::sum_all(&(&x * &y)?)?.backward()?;
    assert!(x.grad().is_some() && y.grad().is_some());
    autograd::zero_grad(&[&x, &y]);
    assert!(x.grad().is_none() && y.grad().is_none());
    Ok(())
}

#[test]
fn grad_returns_gradients_of_intermediate_tensors_without_touching_leaves() -> Result<()> {
    crate::init();
    let x = leaf(&[3.0], &[1]);
    let z = (&x * &x)?;
    let w = ops::sum_all(&(&z * 2.0)?)?;
    let g = grad(&w, &[&z, &x], BackwardOptions::default())?;
    assert_eq!(g[0].as_ref().unwrap().to_vec::<f64>()?, vec![2.0]);
    assert_eq!(g[1].as_ref().unwrap().to_vec::<f64>()?, vec![12.0]);
    assert!(x.grad().is_none());
    Ok(())
}

#[test]
fn second_order_gradient_of_a_cube() -> Result<()> {
    crate::init();
    let x = leaf(&[2.0], &[1]);
    let y = ops::sum_all(&(&(&x * &x)? * &x)?)?;
    let dx = grad(&y, &[&x], BackwardOptions::default().create_graph(true))?
        .remove(0)
        .unwrap();
    assert_eq!(dx.to_vec::<f64>()?, vec![12.0]); // 3x²
    let ddx = grad(&ops::sum_all(&dx)?, &[&x], BackwardOptions::default())?
        .remove(0)
        .unwrap();
    assert_eq!(ddx.to_vec::<f64>()?, vec![12.0]); // 6x
    Ok(())
}

#[test]
fn long_chains_drop_without_recursion() -> Result<()> {
    crate::init();
    let x = leaf(&[1.0], &[1]);
    let mut y = x.clone();
    for _ in 0..200_000 {
        y = (&y * 1.0)?;
    }
    drop(y); // 200k nodes released in a loop, not 200k nested drops
    let mut y = x.clone();
    for _ in 0..200_000 {
        y = (&y + 0.0)?;
    }
    ops::sum_all(&y)?.backward()?;
    assert_eq!(grad_vec(&x), vec![1.0]);
    Ok(())
}

/// An op that counts which gradients its backward computes.
static COMPUTED: [AtomicUsize; 2] = [AtomicUsize::new(0), AtomicUsize::new(0)];

#[differentiable(name = "test_counting_mul")]
mod counting_mul {
    use super::COMPUTED;
    use autograd::prelude::*;
    use std::sync::atomic::Ordering;

    pub fn forward(a: &Tensor, b: &Tensor) -> Result<Tensor> {
        a * b
    }

    pub fn backward(
        grad: &Tensor,
        a: &Tensor,
        b: &Tensor,
        needs: [bool; 2],
    ) -> Result<(Option<Tensor>, Option<Tensor>)> {
        let da = grad_if(needs[0], || {
            COMPUTED[0].fetch_add(1, Ordering::SeqCst);
            grad * b
        })?;
        let db = grad_if(needs[1], || {
            COMPUTED[1].fetch_add(1, Ordering::SeqCst);
            grad * a
        })?;
        Ok((da, db))
    }

    pub fn check_cases() -> Vec<CheckCase> {
        let t = |v: f64| Tensor::from_slice(&[v, -v], [2]).unwrap();
        vec![CheckCase::new(
            "test_counting_mul",
            vec![t(0.5), t(1.5)],
            |x| counting_mul(&x[0], &x[1]),
        )]
    }
}

#[test]
fn inputs_that_need_no_gradient_get_none_computed() -> Result<()> {
    crate::init();
    let a = leaf(&[2.0], &[1]);
    let b = Tensor::from_slice(&[5.0f64], [1])?;
    let before = [
        COMPUTED[0].load(Ordering::SeqCst),
        COMPUTED[1].load(Ordering::SeqCst),
    ];
    ops::sum_all(&counting_mul(&a, &b)?)?.backward()?;
    assert_eq!(COMPUTED[0].load(Ordering::SeqCst), before[0] + 1);
    assert_eq!(
        COMPUTED[1].load(Ordering::SeqCst),
        before[1],
        "b's gradient was computed although b is frozen"
    );
    assert_eq!(grad_vec(&a), vec![5.0]);
    Ok(())
}

#[test]
fn graph_inspection_lists_recorded_nodes_in_order() -> Result<()> {
    crate::init();
    let x = leaf(&[1.0, 2.0], &[2]);
    let y = ops::sum_all(&ops::exp(&(&x * &x)?)?)?;
    let g = ComputationGraph::of(&[&y]);
    let names: Vec<_> = g.nodes().iter().map(|n| n.op_name()).collect();
    assert_eq!(names, ["mul", "exp", "sum_all"]);
    assert!(g.nodes()[2].location().file().ends_with("engine.rs"));
    Ok(())
}

/// An op whose forward returns its input unchanged.
#[differentiable(name = "test_identity")]
mod identity {
    use autograd::prelude::*;

    pub fn forward(x: &Tensor) -> Result<Tensor> {
        Ok(x.clone())
    }

    pub fn backward(grad: &Tensor) -> Result<Tensor> {
        Ok(grad.clone())
    }

    pub fn check_cases() -> Vec<CheckCase> {
        vec![CheckCase::new(
            "test_identity",
            vec![Tensor::from_slice(&[1.0f64, 2.0], [2]).unwrap()],
            |x| identity(&x[0]),
        )]
    }
}

#[test]
fn an_op_returning_its_input_gets_an_output_of_its_own() -> Result<()> {
    crate::init();
    let x = leaf(&[1.0, 2.0], &[2]);
    let y = identity(&x)?;
    assert_ne!(y.id(), x.id());
    assert!(
        x.is_leaf() && x.grad_fn().is_none(),
        "the input was turned into an op output"
    );
    let node = y.grad_fn().unwrap();
    assert_eq!(node.output_id(), y.id());
    ops::sum_all(&(&y * 3.0)?)?.backward()?;
    assert_eq!(grad_vec(&x), vec![3.0, 3.0]);
    Ok(())
}

thread_local! {
    /// Set while `panicking_op`'s backward should panic on this thread (a stand-in
    /// for a buggy user op; thread-local so that tests running beside it, such as the
    /// registry-wide gradcheck, never see it set).
    static PANIC_IN_BACKWARD: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

#[differentiable(name = "test_panicking_backward")]
mod panicking_op {
    use super::PANIC_IN_BACKWARD;
    use autograd::prelude::*;

    pub fn forward(x: &Tensor) -> Result<Tensor> {
        x * 2.0
    }

    pub fn backward(grad: &Tensor) -> Result<Tensor> {
        if PANIC_IN_BACKWARD.get() {
            panic!("a user op's backward panicked");
        }
        grad * 2.0
    }

    pub fn check_cases() -> Vec<CheckCase> {
        let x = Tensor::from_slice(&[1.0f64, -2.0], [2]).unwrap();
        vec![CheckCase::new("test_panicking_backward", vec![x], |x| {
            panicking_op(&x[0])
        })]
    }
}

#[test]
fn a_backward_that_panics_leaves_no_claim_behind() -> Result<()> {
    crate::init();
    let x = leaf(&[1.0, 2.0], &[2]);
    let y = ops::exp(&panicking_op(&ops::exp(&x)?)?)?;
    let loss = ops::sum_all(&y)?;
    let retain = || BackwardOptions::default().retain_graph(true);
    PANIC_IN_BACKWARD.set(true);
    let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        loss.backward_with(retain())
    }));
    PANIC_IN_BACKWARD.set(false);
    assert!(caught.is_err(), "the op's backward was meant to panic");
    // The panicking node and the nodes queued behind it were claimed by that pass:
    // a second pass must not find them held.
    loss.backward_with(retain())?;
    let expected: Vec<f64> = [1.0f64, 2.0]
        .iter()
        .map(|v| (2.0 * v.exp()).exp() * 2.0 * v.exp())
        .collect();
    let got = grad_vec(&x);
    for (g, e) in got.iter().zip(&expected) {
        assert!((g - e).abs() <= 1e-9 * e.abs(), "{got:?} vs {expected:?}");
    }
    Ok(())
}

#[test]
fn recording_with_the_wrong_number_of_inputs_is_an_error() -> Result<()> {
    crate::init();
    let x = leaf(&[1.0], &[1]);
    let out = Tensor::from_slice(&[1.0f64], [1])?;
    let err = ComputationGraph::record(ops::mul::Mul, &[&x], out.clone()).unwrap_err();
    assert!(
        err.to_string().contains("`mul`") && err.to_string().contains("2 tensor inputs, got 1"),
        "{err}"
    );
    let recorded = ComputationGraph::record(ops::mul::Mul, &[&x, &x], out)?;
    assert_eq!(recorded.grad_fn().unwrap().op_name(), "mul");
    Ok(())
}

/// A user's op whose backward owns its gradient and its saved input (`Tensor`
/// parameters): it may write into their buffers.
#[differentiable(name = "test_owned_square")]
mod owned_square {
    use autograd::prelude::*;

    pub fn forward(x: &Tensor) -> Result<Tensor> {
        x * x
    }

    pub fn backward(grad: Tensor, x: Tensor) -> Result<Tensor> {
        (grad * &x)? * 2.0
    }

    pub fn check_cases() -> Vec<CheckCase> {
        let x = Tensor::from_slice(&[0.5f64, -1.5, 2.0], [3]).unwrap();
        vec![CheckCase::new("test_owned_square", vec![x], |x| {
            owned_square(&x[0])
        })]
    }
}

#[test]
fn a_backward_may_own_its_gradient_and_saved_inputs() -> Result<()> {
    crate::init();
    let x = leaf(&[0.5, -1.5, 2.0], &[3]);
    let y = owned_square(&x)?;
    // Twice through a retained graph: the saved input is a copy the graph keeps.
    let loss = autograd::ops::sum_all(&y)?;
    loss.backward_with(autograd::BackwardOptions::default().retain_graph(true))?;
    assert_eq!(grad_vec(&x), vec![1.0, -3.0, 4.0]);
    loss.backward()?;
    assert_eq!(grad_vec(&x), vec![2.0, -6.0, 8.0]);
    assert_eq!(y.to_vec::<f64>()?, vec![0.25, 2.25, 4.0]);
    Ok(())
}

/// A hand-written op whose backward reads what it already took.
struct TakesTwice {
    what: &'static str,
}

static TAKES_TWICE: autograd::OpEntry = autograd::OpEntry {
    name: "test_takes_twice",
    module_path: module_path!(),
    inputs: &[autograd::InputSpec {
        name: "x",
        differentiable: true,
        saved: true,
    }],
    saves_output: false,
    params: &["what"],
    check_cases: None,
    cuda_source: None,
};

impl autograd::Differentiable for TakesTwice {
    const ENTRY: &'static autograd::OpEntry = &TAKES_TWICE;

    fn forward(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        Ok(inputs[0].detach())
    }

    fn backward(&self, ctx: &mut autograd::BackwardContext<'_>) -> Result<autograd::Grads> {
        let g = ctx.take_grad()?;
        match self.what {
            "grad" => {
                ctx.grad()?;
            }
            "input" => {
                ctx.take_input(0)?;
                ctx.input(0)?;
            }
            _ => {
                ctx.output()?;
            }
        }
        Ok(std::iter::once(Some(g)).collect())
    }
}

#[test]
fn reading_what_backward_took_is_an_error_naming_it() -> Result<()> {
    crate::init();
    for (what, says) in [
        ("grad", "reads the gradient after taking it"),
        ("input", "reads input 0 after taking it"),
        ("output", "reads the output, which the graph did not save"),
    ] {
        let x = leaf(&[1.0, 2.0], &[2]);
        let y = ComputationGraph::record(TakesTwice { what }, &[&x], x.detach())?;
        let err = autograd::ops::sum_all(&y)?.backward().unwrap_err();
        let msg = err.to_string();
        assert!(
            msg.contains("test_takes_twice") && msg.contains(says),
            "{msg}"
        );
    }
    Ok(())
}

#[test]
fn a_pass_that_fails_writes_no_leaf_gradient() -> Result<()> {
    crate::init();
    let x = leaf(&[2.0], &[1]);
    let a = (&x * &x)?;
    ops::sum_all(&a)?.backward()?;
    assert_eq!(grad_vec(&x), [4.0]);
    x.zero_grad();
    // `+ x` gives x a contribution before the pass reaches `a`'s mul, whose saved
    // input the first pass released: the pass fails, and x's gradient is left as
    // it was (a leaf gets its summed gradient only when the pass ends).
    let err = ops::sum_all(&(&a + &x)?)?.backward().unwrap_err();
    assert!(matches!(err, Error::GraphConsumed { op: "mul" }), "{err}");
    assert!(x.grad().is_none(), "{:?}", x.grad());
    Ok(())
}

#[test]
fn a_leaf_gets_the_sum_of_a_pass_added_to_what_it_held() -> Result<()> {
    crate::init();
    // Two contributions in a pass, added to the gradient of an earlier pass as
    // one sum (as PyTorch's AccumulateGrad adds its summed input): 3 + (c + c),
    // where (3 + c) + c would lose both (each is under half of 3's last place).
    let x = leaf(&[0.1], &[1]);
    ops::sum_all(&(&x * 3.0)?)?.backward()?;
    let c = 1.5e-16;
    ops::sum_all(&((&x * c)? + (&x * c)?)?)?.backward()?;
    assert_eq!(grad_vec(&x), [3.0 + (c + c)]);
    assert_ne!(3.0 + (c + c), (3.0 + c) + c);
    Ok(())
}

#[test]
fn many_leaves_each_get_the_sum_of_their_contributions() -> Result<()> {
    crate::init();
    // Past 32 leaves a pass finds a leaf's sum through a map: 40 leaves, each used
    // three times, in an order that interleaves them.
    let leaves: Vec<Tensor> = (0..40).map(|i| leaf(&[i as f64], &[1])).collect();
    let mut loss = ops::sum_all(&(&leaves[0] * 0.0)?)?;
    for k in 1..=3 {
        for (i, x) in leaves.iter().enumerate() {
            loss = (loss + ops::sum_all(&(x * (k * (i + 1)) as f64)?)?)?;
        }
    }
    loss.backward()?;
    for (i, x) in leaves.iter().enumerate() {
        // (1 + 2 + 3) * (i + 1); leaf 0 also got the first term's 0.
        let want = 6.0 * (i + 1) as f64;
        assert_eq!(grad_vec(x), [want], "leaf {i}");
    }
    Ok(())
}
