// `x.pow(..)` takes a tensor or a number; anything else gets a message naming both
// forms (here a reference to a number, from iterating over an array by reference).
use autograd::prelude::*;

fn main() -> Result<()> {
    let x = Tensor::from_slice(&[1.0f32, 2.0], [2])?;
    for p in &[1.0, 2.0] {
        let _ = x.pow(p)?;
    }
    Ok(())
}
