//! Building blocks for an op's `check_cases`: deterministic inputs, and cases for
//! unary and elementwise binary functions (the registry-wide gradient checks run
//! them for every op that supplies them).

use crate::random::Rng;
use crate::{CheckCase, DType, Result, Tensor};

/// A deterministic f64 tensor, uniform in `[lo, hi)`.
pub fn uniform(seed: u64, shape: &[usize], lo: f64, hi: f64) -> Tensor {
    Rng::new(seed)
        .uniform(shape, lo, hi, DType::F64)
        .unwrap_or_else(|_| fallback(shape, 0.0))
}

/// A tensor of the given values (a fixed f64 constant in the check cases).
pub fn values(v: &[f64], shape: &[usize]) -> Tensor {
    Tensor::from_slice(v, shape).unwrap_or_else(|_| fallback(shape, 0.0))
}

/// The input of a check case whose constructor failed (only out of memory, for
/// these few elements): `value` everywhere, or a scalar if even that cannot be
/// allocated, which the check then reports as a wrong shape; never a panic.
pub fn fallback(shape: &[usize], value: f64) -> Tensor {
    Tensor::full(shape, value, DType::F64).unwrap_or_else(|_| Tensor::scalar(value))
}

/// One case for a function of one tensor.
pub fn unary(
    label: impl Into<String>,
    x: Tensor,
    f: impl Fn(&Tensor) -> Result<Tensor> + Send + Sync + 'static,
) -> CheckCase {
    CheckCase::new(label, vec![x], move |x| f(&x[0]))
}

/// Cases for an elementwise binary op: same shapes, one operand broadcast, and both
/// broadcast. `a` is drawn from `ra`, `b` from `rb`.
pub fn binary(
    name: &str,
    f: fn(&Tensor, &Tensor) -> Result<Tensor>,
    ra: (f64, f64),
    rb: (f64, f64),
) -> Vec<CheckCase> {
    let shapes: [(&[usize], &[usize], &str); 4] = [
        (&[2, 3], &[2, 3], ""),
        (&[2, 3], &[3], " (broadcast)"),
        (&[3], &[2, 3], " (broadcast lhs)"),
        (&[2, 1], &[1, 3], " (broadcast both)"),
    ];
    shapes
        .iter()
        .enumerate()
        .map(|(k, (sa, sb, what))| {
            let a = uniform(100 + 2 * k as u64, sa, ra.0, ra.1);
            let b = uniform(101 + 2 * k as u64, sb, rb.0, rb.1);
            CheckCase::new(
                format!("{name} {sa:?} {sb:?}{what}"),
                vec![a, b],
                move |x| f(&x[0], &x[1]),
            )
        })
        .collect()
}
