// Inputs marked #[no_grad] (an index tensor, a mask) get no gradient slot, and
// never a gradient, even when they require grad (a float mask can; an integer
// index cannot require grad at all).
use autograd::prelude::*;

/// Rows of `x` picked by `index` (an integer tensor), repeats allowed.
#[differentiable]
mod gather_rows {
    use autograd::compute;
    use autograd::prelude::*;

    pub fn forward(x: &Tensor, #[no_grad] index: &Tensor) -> Result<Tensor> {
        let rows = compute::indices("gather_rows", index, x.dims()[0])?;
        compute::index_select(x, 0, &rows)
    }

    /// Reads the index (saved) and x's shape (not saved); one slot, for `x`.
    pub fn backward(grad: &Tensor, index: &Tensor, x_shape: &Shape) -> Result<Tensor> {
        let rows = compute::indices("gather_rows", index, x_shape.dims()[0])?;
        compute::index_add(grad, x_shape, 0, &rows)
    }
}

/// `x * mask` where the mask is a constant.
#[differentiable]
mod masked {
    use autograd::prelude::*;

    pub fn forward(#[no_grad] mask: &Tensor, x: &Tensor) -> Result<Tensor> {
        x * mask
    }

    pub fn backward(grad: &Tensor, mask: &Tensor) -> Result<Tensor> {
        grad * mask
    }
}

pub fn main() -> Result<()> {
    let reg = autograd::init()?;
    let x =
        Tensor::from_vec(vec![1.0f64, 2.0, 3.0, 4.0, 5.0, 6.0], [3, 2])?.with_requires_grad(true);
    let index = Tensor::from_vec(vec![2i64, 0, 2], [3])?;

    let y = gather_rows(&x, &index)?;
    assert_eq!(y.to_vec::<f64>()?, vec![5.0, 6.0, 1.0, 2.0, 5.0, 6.0]);
    let node = y.grad_fn().expect("recorded");
    assert_eq!(node.saved_tensor_count(), 1, "the index only");
    y.sum_all()?.backward()?;
    assert_eq!(
        x.grad().unwrap().to_vec::<f64>()?,
        vec![1.0, 1.0, 0.0, 0.0, 2.0, 2.0]
    );
    assert!(
        index.grad().is_none(),
        "a #[no_grad] input gets no gradient"
    );

    let mask = Tensor::from_vec(vec![1.0f64, 0.0], [2])?.with_requires_grad(true);
    let v = Tensor::from_vec(vec![3.0f64, 4.0], [2])?.with_requires_grad(true);
    masked(&mask, &v)?.sum_all()?.backward()?;
    assert_eq!(v.grad().unwrap().to_vec::<f64>()?, vec![1.0, 0.0]);
    assert!(mask.grad().is_none());

    // Only a #[no_grad] input requires grad: nothing to record.
    let w = Tensor::from_vec(vec![3.0f64, 4.0], [2])?;
    assert!(masked(&mask, &w)?.grad_fn().is_none());

    let entry = reg.get("gather_rows")?;
    let flags: Vec<_> = entry
        .inputs
        .iter()
        .map(|i| (i.name, i.differentiable, i.saved))
        .collect();
    assert_eq!(flags, vec![("x", true, false), ("index", false, true)]);
    assert_eq!(entry.differentiable_arity(), 1);
    Ok(())
}
