// `crate = path`: generated code reaches autograd through the given path, e.g. a
// framework that re-exports it. This one wraps `__private::apply` to count calls,
// which proves the generated function goes through the path.
use std::sync::atomic::{AtomicUsize, Ordering};

static APPLIED: AtomicUsize = AtomicUsize::new(0);

/// A framework built on autograd, re-exporting it.
pub mod framework {
    pub use autograd::*;

    #[doc(hidden)]
    pub mod __private {
        pub use autograd::__private::*;

        /// Shadows the glob-imported `apply`.
        #[track_caller]
        pub fn apply<O: Differentiable>(op: O, inputs: &[&Tensor]) -> Result<Tensor> {
            super::super::APPLIED.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            autograd::__private::apply(op, inputs)
        }
    }
}

use framework::prelude::*;

#[framework::differentiable(crate = crate::framework)]
mod halve {
    use crate::framework::prelude::*;

    pub fn forward(x: &Tensor) -> Result<Tensor> {
        x * 0.5
    }

    pub fn backward(grad: &Tensor) -> Result<Tensor> {
        grad * 0.5
    }
}

// The string form, as serde and tokio spell it.
#[differentiable(crate = "crate::framework", name = "quarter")]
mod quarter {
    use crate::framework::prelude::*;

    pub fn forward(x: &Tensor) -> Result<Tensor> {
        x * 0.25
    }

    pub fn backward(grad: &Tensor) -> Result<Tensor> {
        grad * 0.25
    }
}

fn main() -> Result<()> {
    let reg = framework::init()?;
    assert!(reg.contains("halve") && reg.contains("quarter"));
    let x = Tensor::scalar(8.0f64).with_requires_grad(true);
    let y = quarter(&halve(&x)?)?;
    assert_eq!(y.to_scalar::<f64>()?, 1.0);
    y.backward()?;
    assert_eq!(x.grad().unwrap().to_scalar::<f64>()?, 0.125);
    assert_eq!(
        APPLIED.load(Ordering::SeqCst),
        2,
        "both calls went through crate::framework"
    );
    Ok(())
}
