//! Graphs are released on every path: a thread that exits holding a deep graph in
//! its own `thread_local!`, a panic while a graph is dropped, and the reference cycle
//! that `create_graph` makes when an op's parameter holds the leaf.

use autograd::memory::thread_stats;
use autograd::prelude::*;
use std::cell::RefCell;

fn live() -> isize {
    thread_stats(Device::Cpu).live_bytes
}

// ----- every drop path is iterative, whatever the state of thread-locals -----

thread_local! {
    static KEEP: RefCell<Option<Tensor>> = const { RefCell::new(None) };
}

/// A thread that exits holding a deep graph in a user `thread_local!` declared
/// before the library's own: the library's drop queue is destroyed first, and the
/// graph must still be released in a loop (this overflowed the stack).
#[test]
fn thread_exit_with_a_deep_graph_in_a_user_thread_local() {
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

// ----- a panic while a graph is dropped does not stop later drops -----

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
fn a_panic_while_dropping_a_graph_does_not_leak_later_graphs() {
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

// ----- the create_graph cycle is broken when an op parameter holds the leaf -----

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
fn create_graph_with_an_op_parameter_holding_the_leaf_does_not_leak() -> Result<()> {
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
