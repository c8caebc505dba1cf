// Ops of one, two, three and four tensor inputs: each gets its gradients, and the
// registry says what each saves (exactly what its backward declares).
use autograd::prelude::*;

/// x² (one input, saves it).
#[differentiable]
mod square_it {
    use autograd::prelude::*;

    pub fn forward(x: &Tensor) -> Result<Tensor> {
        x * x
    }

    pub fn backward(grad: &Tensor, x: &Tensor) -> Result<Tensor> {
        grad * &(x * 2.0)?
    }
}

/// a - b (two inputs, saves nothing).
#[differentiable]
mod minus {
    use autograd::prelude::*;

    pub fn forward(a: &Tensor, b: &Tensor) -> Result<Tensor> {
        a - b
    }

    pub fn backward(grad: &Tensor) -> Result<(Tensor, Tensor)> {
        Ok((grad.clone(), (-grad)?))
    }
}

/// a * b + c (three inputs; saves a and b, computes only the gradients needed).
#[differentiable]
mod mul_add {
    use autograd::prelude::*;

    pub fn forward(a: &Tensor, b: &Tensor, c: &Tensor) -> Result<Tensor> {
        &(a * b)? + c
    }

    pub fn backward(
        grad: &Tensor,
        a: &Tensor,
        b: &Tensor,
        needs: [bool; 3],
    ) -> Result<(Option<Tensor>, Option<Tensor>, Option<Tensor>)> {
        Ok((
            grad_if(needs[0], || grad * b)?,
            grad_if(needs[1], || grad * a)?,
            needs[2].then(|| grad.clone()),
        ))
    }
}

/// a * b + c * d (four inputs, all saved).
#[differentiable]
mod dot2 {
    use autograd::prelude::*;

    pub fn forward(a: &Tensor, b: &Tensor, c: &Tensor, d: &Tensor) -> Result<Tensor> {
        &(a * b)? + &(c * d)?
    }

    pub fn backward(
        grad: &Tensor,
        a: &Tensor,
        b: &Tensor,
        c: &Tensor,
        d: &Tensor,
    ) -> Result<(Tensor, Tensor, Tensor, Tensor)> {
        Ok(((grad * b)?, (grad * a)?, (grad * d)?, (grad * c)?))
    }
}

fn leaf(v: f64) -> Tensor {
    Tensor::scalar(v).with_requires_grad(true)
}

fn grad_of(t: &Tensor) -> f64 {
    t.grad().expect("a gradient").to_scalar::<f64>().unwrap()
}

pub fn main() -> Result<()> {
    let reg = autograd::init()?;

    let x = leaf(3.0);
    square_it(&x)?.backward()?;
    assert_eq!(grad_of(&x), 6.0);

    let (a, b) = (leaf(5.0), leaf(2.0));
    let y = minus(&a, &b)?;
    assert_eq!(y.to_scalar::<f64>()?, 3.0);
    y.backward()?;
    assert_eq!((grad_of(&a), grad_of(&b)), (1.0, -1.0));

    // Only `a` requires grad: `needs` is [true, false, false].
    let (a, b, c) = (leaf(2.0), Tensor::scalar(7.0), Tensor::scalar(1.0));
    let y = mul_add(&a, &b, &c)?;
    assert_eq!(y.to_scalar::<f64>()?, 15.0);
    y.backward()?;
    assert_eq!(grad_of(&a), 7.0);
    assert!(b.grad().is_none() && c.grad().is_none());

    let (a, b, c, d) = (leaf(1.0), leaf(2.0), leaf(3.0), leaf(4.0));
    let y = dot2(&a, &b, &c, &d)?;
    assert_eq!(y.to_scalar::<f64>()?, 14.0);
    let node = y.grad_fn().expect("recorded");
    assert_eq!(node.op_name(), "dot2");
    assert_eq!(node.saved_tensor_count(), 4);
    y.backward()?;
    assert_eq!(
        [grad_of(&a), grad_of(&b), grad_of(&c), grad_of(&d)],
        [2.0, 1.0, 4.0, 3.0]
    );

    let saved = |name: &str| reg.get(name).map(|e| (e.arity(), e.saved_names()));
    assert_eq!(saved("square_it")?, (1, vec!["x"]));
    assert_eq!(saved("minus")?, (2, vec![]));
    assert_eq!(saved("mul_add")?, (3, vec!["a", "b"]));
    assert_eq!(saved("dot2")?, (4, vec!["a", "b", "c", "d"]));
    Ok(())
}
