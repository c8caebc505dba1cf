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
