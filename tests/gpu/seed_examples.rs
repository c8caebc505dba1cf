//! The worked examples of reverse-mode accumulation on the GPU: the same tests the
//! CPU runs (`tests/common/worked_examples.rs`), with every gradient checked to stay on the device.

use autograd::prelude::*;

#[path = "../common/worked_examples.rs"]
mod seed;

#[test]
#[ignore = "needs a CUDA GPU"]
fn w_equals_x_times_y_plus_x_on_the_gpu() -> Result<()> {
    seed::w_equals_x_times_y_plus_x(crate::gpu())
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn self_check_x5_y2_on_the_gpu() -> Result<()> {
    seed::self_check_x5_y2(crate::gpu())
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn contributions_accumulate_to_10_on_the_gpu() -> Result<()> {
    seed::contributions_2_3_5_accumulate_to_10(crate::gpu())
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn broadcast_add_reduces_grad_b_on_the_gpu() -> Result<()> {
    seed::broadcast_add_reduces_grad_b_to_its_shape(crate::gpu())
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gradient_4x3x5_reduces_to_3x1_on_the_gpu() -> Result<()> {
    seed::gradient_4x3x5_reduces_to_3x1(crate::gpu())
}
