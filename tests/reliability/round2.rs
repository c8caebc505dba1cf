//! Regression tests for the second round of adversarial and peer testing: one test
//! per finding, named for its item (`itemN_...`).

use autograd::memory::thread_stats;
use autograd::prelude::*;
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
            let first = Tensor::scalar(1.0f64).set_requires_grad(true).exp().unwrap();
            drop(first); // library TLS after
            let mut y = Tensor::scalar(0.0f64).set_requires_grad(true);
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

    pub fn forward(x: &Tensor) -> Result<Tensor> {
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
        .set_requires_grad(true);
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
    assert_eq!(live() - baseline, 0, "graphs dropped after the panic stay live");
}

// ----- 2. a parameter is one tensor however many handles hold it -----

#[test]
fn item2_an_update_is_seen_through_every_clone_of_a_parameter() -> Result<()> {
    use autograd::optim::{Optimizer, Sgd};
    crate::init();
    let w = Tensor::from_slice(&[3.0f64, -2.0], [2])?.set_requires_grad(true);
    let mut params = vec![w.clone()];
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
    let mut w = Tensor::scalar(3.0f64).set_requires_grad(true);
    let w_prev = w.clone();
    w.set_data(&Tensor::scalar(5.0f64))?;
    assert_eq!(w_prev.to_scalar::<f64>()?, 5.0, "a clone sees the update");
    (&w * &w_prev)?.backward()?;
    assert_eq!(w.grad().unwrap().to_scalar::<f64>()?, 10.0);

    // Two tensors with the same values but different ids are two inputs: the
    // gradient of `a * b` is b for a and a for b.
    let a = Tensor::scalar(3.0f64).set_requires_grad(true);
    let b = a.detach().set_requires_grad(true); // same buffer, new id
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
    let mut w = Tensor::from_slice(&[1.0f64, -2.0], [2])?.set_requires_grad(true);
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
        let w = Tensor::from_slice(&[1.0f64, -1.0], [2])?.set_requires_grad(true);
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
    let mut w = Tensor::from_slice(&[1.0f64; 1000], [1000])?.set_requires_grad(true);
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
        let mut p = Tensor::from_slice(&[1.0f64; 1000], [1000])?.set_requires_grad(true);
        p.square()?.sum_all()?.backward()?;
        opt.step(&mut [&mut p])?;
    } // each parameter dropped here
    let mut last = Tensor::from_slice(&[1.0f64; 10], [10])?.set_requires_grad(true);
    last.square()?.sum_all()?.backward()?;
    opt.step(&mut [&mut last])?;
    assert_eq!(opt.state_len(), 1, "moments of dropped parameters are kept");
    opt.remove(&last);
    assert_eq!(opt.state_len(), 0);
    drop(last);
    assert_eq!(live() - baseline, 0);
    Ok(())
}
