//! The worked examples of reverse-mode accumulation on the CPU (written once in
//! `tests/common/worked_examples.rs`, run on the GPU by `tests/gpu`).

use autograd::prelude::*;

#[path = "../common/worked_examples.rs"]
mod seed;

const CPU: Device = Device::Cpu;

#[test]
fn w_equals_x_times_y_plus_x() -> Result<()> {
    crate::init();
    seed::w_equals_x_times_y_plus_x(CPU)
}

#[test]
fn self_check_x5_y2() -> Result<()> {
    crate::init();
    seed::self_check_x5_y2(CPU)
}

#[test]
fn contributions_2_3_5_accumulate_to_10() -> Result<()> {
    crate::init();
    seed::contributions_2_3_5_accumulate_to_10(CPU)
}

#[test]
fn broadcast_add_reduces_grad_b_to_its_shape() -> Result<()> {
    crate::init();
    seed::broadcast_add_reduces_grad_b_to_its_shape(CPU)
}

#[test]
fn gradient_4x3x5_reduces_to_3x1() -> Result<()> {
    crate::init();
    seed::gradient_4x3x5_reduces_to_3x1(CPU)
}

/// Finite differences confirm the hand-worked gradients (Worked Example 17.2.3).
#[test]
fn finite_differences_confirm_5_and_3() -> Result<()> {
    crate::init();
    let f = |xs: &[Tensor]| &xs[0] * &xs[1] + &xs[0];
    let report = autograd::gradcheck(
        "x*y + x",
        &f,
        &[Tensor::scalar(3.0f64), Tensor::scalar(4.0f64)],
        &[true, true],
        &Default::default(),
    )?;
    assert_eq!(report.elements, 2);
    Ok(())
}
