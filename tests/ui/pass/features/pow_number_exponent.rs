// `x.pow(..)` takes a tensor exponent or a number: `x.pow(3.0)` is
// `x.pow_scalar(3.0)`, values and gradient.
use autograd::prelude::*;

pub fn main() -> Result<()> {
    autograd::init()?;
    let x = Tensor::from_slice(&[-1.5f64, 0.5, 2.0], [3])?.with_requires_grad(true);
    let y = x.pow(3.0)?;
    assert_eq!(y.to_vec::<f64>()?, [-3.375, 0.125, 8.0]);
    y.sum_all()?.backward()?;
    let grad = x.grad().unwrap().to_vec::<f64>()?;
    for (g, want) in grad.iter().zip([6.75, 0.75, 12.0]) {
        assert!((g - want).abs() < 1e-12, "{grad:?}");
    }
    // Any number type; a tensor, borrowed or owned.
    let _ = (x.pow(2)?, x.pow(2.0f32)?, x.pow(2u64)?);
    let e = x.detach().full_like(2.0)?;
    assert_eq!(x.pow(&e)?.to_vec::<f64>()?, [2.25, 0.25, 4.0]);
    let _ = x.pow(e)?;
    Ok(())
}
