//! Regression tests for the second round of adversarial and peer testing: one test
//! per finding, named for its item (`itemN_...`).

use autograd::memory::thread_stats;
use autograd::prelude::*;
use autograd::{NoGradGuard, is_grad_enabled};
use std::cell::RefCell;

fn live() -> isize {
    thread_stats(Device::Cpu).live_bytes
}

// ----- 1. every drop path is iterative, whatever the state of thread-locals -----

thread_local! {
    static KEEP: RefCell<Option<Tensor>> = const { RefCell::new(None) };
}

/// A thread that exits holding a deep graph in a user `thread_local!` declared
/// before the library's own: the library's drop queue is destroyed first, and the
/// graph must still be released in a loop (this overflowed the stack).
#[test]
fn item1_thread_exit_with_a_deep_graph_in_a_user_thread_local() {
    crate::init();
    let handle = std::thread::Builder::new()
        // A small stack: a recursive drop of 100,000 nodes would overflow it.
        .stack_size(256 * 1024)
        .spawn(|| {
            KEEP.with(|k| *k.borrow_mut() = Some(Tensor::scalar(0.0f32))); // user TLS first
            let first = Tensor::scalar(1.0f64)
                .with_requires_grad(true)
                .exp()
                .unwrap();
            drop(first); // library TLS after
            let mut y = Tensor::scalar(0.0f64).with_requires_grad(true);
            for _ in 0..100_000 {
                y = y.add_scalar(1.0).unwrap();
            }
            KEEP.with(|k| *k.borrow_mut() = Some(y));
        })
        .unwrap();
    handle.join().expect("the thread exits cleanly");
}

// ----- 3. a panic while a graph is dropped does not stop later drops -----

/// An op parameter that panics when dropped.
pub struct PanicsOnDrop(pub bool);

impl Drop for PanicsOnDrop {
    fn drop(&mut self) {
        if self.0 && !std::thread::panicking() {
            panic!("a parameter that panics in Drop");
        }
    }
}

#[differentiable(name = "test_panicking_param")]
mod panicking_param {
    use autograd::prelude::*;

    /// Holds a value that panics when dropped.
    pub struct PanickingParam {
        /// Panics in `Drop` when `.0` is true.
        pub guard: super::PanicsOnDrop,
    }

    pub fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let _held = &self.guard; // only its drop matters
        x.mul_scalar(2.0)
    }

    pub fn backward(grad: &Tensor) -> Result<Tensor> {
        grad.mul_scalar(2.0)
    }
}

#[test]
fn item3_a_panic_while_dropping_a_graph_does_not_leak_later_graphs() {
    crate::init();
    let x = Tensor::from_slice(&[1.0f64; 100], [100])
        .unwrap()
        .with_requires_grad(true);
    let y = panicking_param(&x, PanicsOnDrop(true)).unwrap();
    let z = y.exp().unwrap();
    let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || drop((y, z))));
    assert!(caught.is_err(), "the parameter's Drop panicked");
    let baseline = live();
    for _ in 0..100 {
        let g = panicking_param(&x, PanicsOnDrop(false)).unwrap();
        let h = g.exp().unwrap().sum_all().unwrap();
        drop((g, h));
    }
    assert_eq!(
        live() - baseline,
        0,
        "graphs dropped after the panic stay live"
    );
}

// ----- 2. a parameter is one tensor however many handles hold it -----

#[test]
fn item2_an_update_is_seen_through_every_clone_of_a_parameter() -> Result<()> {
    use autograd::optim::{Optimizer, Sgd};
    crate::init();
    let w = Tensor::from_slice(&[3.0f64, -2.0], [2])?.with_requires_grad(true);
    let mut params = [w.clone()];
    let mut opt = Sgd::new(0.1);
    for _ in 0..10 {
        w.square()?.sum_all()?.backward()?;
        let mut p: Vec<&mut Tensor> = params.iter_mut().collect();
        opt.step(&mut p)?;
        opt.zero_grad(&mut p);
    }
    // w ← 0.8 w at each step: the model's handle trains.
    let want = [3.0 * 0.8f64.powi(10), -2.0 * 0.8f64.powi(10)];
    for (got, want) in w.to_vec::<f64>()?.iter().zip(want) {
        assert!((got - want).abs() < 1e-12, "{got} vs {want}");
    }
    assert_eq!(w.to_vec::<f64>()?, params[0].to_vec::<f64>()?);
    assert_eq!(w.id(), params[0].id());
    Ok(())
}

/// `w * w_prev` where `w_prev` is a clone taken before an update: one tensor, so
/// the product is `w²` and its gradient `2w` at the new value.
#[test]
fn item2_a_product_with_an_earlier_clone_has_the_right_gradient() -> Result<()> {
    crate::init();
    let mut w = Tensor::scalar(3.0f64).with_requires_grad(true);
    let w_prev = w.clone();
    w.set_data(&Tensor::scalar(5.0f64))?;
    assert_eq!(w_prev.to_scalar::<f64>()?, 5.0, "a clone sees the update");
    (&w * &w_prev)?.backward()?;
    assert_eq!(w.grad().unwrap().to_scalar::<f64>()?, 10.0);

    // Two tensors with the same values but different ids are two inputs: the
    // gradient of `a * b` is b for a and a for b.
    let a = Tensor::scalar(3.0f64).with_requires_grad(true);
    let b = a.detach().with_requires_grad(true); // same buffer, new id
    assert!(a.same_values_as(&b) && a.id() != b.id());
    (&a * &b)?.backward()?;
    assert_eq!(a.grad().unwrap().to_scalar::<f64>()?, 3.0);
    assert_eq!(b.grad().unwrap().to_scalar::<f64>()?, 3.0);
    Ok(())
}

/// A graph recorded before an update keeps the values it saved.
#[test]
fn item2_a_graph_recorded_before_an_update_keeps_its_saved_values() -> Result<()> {
    crate::init();
    let mut w = Tensor::from_slice(&[1.0f64, -2.0], [2])?.with_requires_grad(true);
    let model = w.clone();
    let y = (&model * &model)?.sum_all()?; // mul saves w
    w.set_data(&Tensor::from_slice(&[100.0f64, 100.0], [2])?)?;
    y.backward()?;
    assert_eq!(w.grad().unwrap().to_vec::<f64>()?, [2.0, -4.0]);
    assert_eq!(model.to_vec::<f64>()?, [100.0, 100.0]);
    Ok(())
}

/// SGD with momentum (and Adam), the same parameter listed twice: updated once per
/// step, as if listed once.
#[test]
fn item2_a_parameter_listed_twice_in_one_step_is_updated_once() -> Result<()> {
    use autograd::optim::{Adam, Optimizer, Sgd};
    crate::init();
    fn run(twice: bool, adam: bool) -> Result<Vec<f64>> {
        let w = Tensor::from_slice(&[1.0f64, -1.0], [2])?.with_requires_grad(true);
        let mut sgd = Sgd::new(0.1).momentum(0.9);
        let mut adam_opt = Adam::new(0.1);
        for _ in 0..3 {
            w.square()?.sum_all()?.backward()?;
            let (mut a, mut b) = (w.clone(), w.clone());
            let mut list: Vec<&mut Tensor> = vec![&mut a];
            if twice {
                list.push(&mut b);
            }
            if adam {
                adam_opt.step(&mut list)?;
            } else {
                sgd.step(&mut list)?;
            }
            w.zero_grad();
        }
        w.to_vec::<f64>()
    }
    for adam in [false, true] {
        assert_eq!(run(true, adam)?, run(false, adam)?, "adam: {adam}");
    }
    Ok(())
}

// ----- 5. optimizer state is detached from any graph -----

#[test]
fn item5_sgd_momentum_does_not_keep_a_create_graph_gradient_graph() -> Result<()> {
    use autograd::optim::{Optimizer, Sgd};
    crate::init();
    let mut w = Tensor::from_slice(&[1.0f64; 1000], [1000])?.with_requires_grad(true);
    let mut opt = Sgd::new(0.1).momentum(0.9);
    let y = w.pow_scalar(3.0)?.sum_all()?;
    y.backward_with(BackwardOptions::default().create_graph(true))?;
    drop(y);
    assert!(w.grad().unwrap().requires_grad(), "a recorded gradient");
    opt.step(&mut [&mut w])?;
    opt.zero_grad(&mut [&mut w]);
    let before = live();
    drop(opt); // frees exactly the momentum buffer: 1000 f64
    assert_eq!(before - live(), 8000, "the state held more than its buffer");
    Ok(())
}

// ----- 17. optimizer state goes with its parameter -----

#[test]
fn item17_adam_frees_the_moments_of_dropped_parameters() -> Result<()> {
    use autograd::optim::{Adam, Optimizer};
    crate::init();
    let baseline = live();
    let mut opt = Adam::new(0.01);
    for _ in 0..100 {
        let mut p = Tensor::from_slice(&[1.0f64; 1000], [1000])?.with_requires_grad(true);
        p.square()?.sum_all()?.backward()?;
        opt.step(&mut [&mut p])?;
    } // each parameter dropped here
    let mut last = Tensor::from_slice(&[1.0f64; 10], [10])?.with_requires_grad(true);
    last.square()?.sum_all()?.backward()?;
    opt.step(&mut [&mut last])?;
    assert_eq!(opt.state_len(), 1, "moments of dropped parameters are kept");
    opt.remove(&last);
    assert_eq!(opt.state_len(), 0);
    drop(last);
    assert_eq!(live() - baseline, 0);
    Ok(())
}

// ----- 4. the create_graph cycle is broken when an op parameter holds the leaf -----

#[differentiable(name = "test_scale_by_param")]
mod scale_by_param {
    use autograd::prelude::*;

    /// A tensor held by the op itself, not one of its inputs.
    pub struct ScaleByParam {
        /// The factor (a leaf the caller also holds).
        pub w: Tensor,
    }

    /// `exp(x) * w`.
    pub fn forward(&self, x: &Tensor) -> Result<Tensor> {
        x.exp()? * &self.w
    }

    /// d/dx = exp(x) * w, the output itself: under create_graph the gradient's
    /// graph reaches this op's node, and through its parameter the leaf.
    pub fn backward(grad: &Tensor, output: &Tensor) -> Result<Tensor> {
        grad * output
    }
}

#[test]
fn item4_create_graph_with_an_op_parameter_holding_the_leaf_does_not_leak() -> Result<()> {
    crate::init();
    let baseline = live();
    {
        let w = Tensor::from_slice(&[1.5f64; 1000], [1000])?.with_requires_grad(true);
        let y = scale_by_param(&w, w.clone())?.sum_all()?;
        y.backward_with(BackwardOptions::default().create_graph(true))?;
        let want = 1.5f64.exp() * 1.5;
        assert!(
            w.grad()
                .unwrap()
                .to_vec::<f64>()?
                .iter()
                .all(|g| (g - want).abs() < 1e-12)
        );
    }
    assert_eq!(live() - baseline, 0, "leaked");
    Ok(())
}

// ----- 6. gradient handles are snapshots -----

/// The rule (documented on `Tensor::grad`): a handle from `x.grad()` is a snapshot;
/// a later backward accumulates into a new tensor, never into the buffer the
/// caller holds.
#[test]
fn item6_a_gradient_handle_is_a_snapshot() -> Result<()> {
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

// ----- 7. a wrong-shaped gradient is an error, not summed -----

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
fn item7_a_backward_returning_a_wrong_shape_is_an_error() -> Result<()> {
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

// ----- 8. an unrecorded backward fails the second backward, naming the op -----

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
fn item8_second_order_through_an_unrecorded_backward_is_an_error() -> Result<()> {
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

// ----- 9. gradcheck that checks nothing is an error -----

#[test]
fn item9_gradcheck_with_an_empty_or_all_false_mask_is_an_error() -> Result<()> {
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

// ----- 13. no_grad guards dropped out of order -----

#[test]
fn item13_no_grad_guards_dropped_out_of_order_restore_recording() -> Result<()> {
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

// ----- 15. messages that say what happened -----

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
fn item15_a_backward_started_inside_a_backward_says_so() -> Result<()> {
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
fn item15_non_scalar_root_recommends_sum_all() -> Result<()> {
    crate::init();
    let x = Tensor::from_slice(&[1.0f64, 2.0], [2])?.with_requires_grad(true);
    let err = x.exp()?.backward().unwrap_err();
    assert!(err.to_string().contains(".sum_all()"), "{err}");
    Ok(())
}

#[test]
fn item15_a_second_backward_through_nodes_that_saved_nothing_works() -> Result<()> {
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

// ----- 16. grad() with respect to a tensor that takes no part -----

#[test]
fn item16_grad_of_an_unused_input_is_an_error_unless_allowed() -> Result<()> {
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

// ----- 14. tensor ÷ scalar divides -----

#[test]
fn item14_dividing_by_a_scalar_is_a_true_division() -> Result<()> {
    crate::init();
    let tiny = Tensor::scalar(1e-300f64);
    assert_eq!((&tiny / 1e-310)?.to_scalar::<f64>()?, 1e-300 / 1e-310);
    let values: Vec<f32> = (1..2000).map(|k| k as f32 * 0.37).collect();
    let x = Tensor::from_slice(&values, [values.len()])?;
    let by_scalar = (&x / 10.0)?.to_vec::<f32>()?;
    let by_tensor = (&x / &Tensor::scalar(10.0f32))?.to_vec::<f32>()?;
    assert_eq!(by_scalar, by_tensor);
    let want: Vec<f32> = values.iter().map(|v| v / 10.0).collect();
    assert_eq!(by_scalar, want);
    // Recorded, with the gradient 1/c.
    let w = Tensor::from_slice(&[1.0f64, 2.0], [2])?.with_requires_grad(true);
    (&w / 4.0)?.sum_all()?.backward()?;
    assert_eq!(w.grad().unwrap().to_vec::<f64>()?, [0.25, 0.25]);
    assert_eq!(
        w.div_scalar(4.0)?.grad_fn().unwrap().op_name(),
        "div_scalar"
    );
    Ok(())
}

#[test]
fn item15_huge_axes_and_ranges_are_reported_as_given() -> Result<()> {
    crate::init();
    let x = Tensor::from_slice(&[1.0f64, 2.0, 3.0, 4.0], [2, 2])?;
    let err = autograd::compute::unsqueeze(&x, usize::MAX).unwrap_err();
    let msg = err.to_string();
    assert!(!msg.contains("axis -1"), "{msg}");
    assert!(msg.contains(&isize::MAX.to_string()), "{msg}");
    let err = x.narrow(1, usize::MAX, 2).unwrap_err().to_string();
    assert!(
        err.contains("length 2") && err.contains(&usize::MAX.to_string()),
        "{err}"
    );
    Ok(())
}
