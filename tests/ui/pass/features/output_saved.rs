// Backward reading the output instead of the input (exp, sigmoid, tanh): the graph
// saves the output only.
use autograd::prelude::*;

#[differentiable]
mod my_exp {
    use autograd::prelude::*;
    use autograd::ops;

    pub fn forward(x: &Tensor) -> Result<Tensor> {
        ops::exp(x)
    }

    /// d/dx e^x = e^x.
    pub fn backward(grad: &Tensor, output: &Tensor) -> Result<Tensor> {
        grad * output
    }
}

#[differentiable]
mod my_sigmoid {
    use autograd::prelude::*;
    use autograd::ops;

    pub fn forward(x: &Tensor) -> Result<Tensor> {
        ops::sigmoid(x)
    }

    /// σ' = σ (1 - σ).
    pub fn backward(grad: &Tensor, output: &Tensor) -> Result<Tensor> {
        grad * &(output * &(1.0 - output)?)?
    }
}

#[differentiable]
mod my_tanh {
    use autograd::prelude::*;
    use autograd::ops;

    pub fn forward(x: &Tensor) -> Result<Tensor> {
        ops::tanh(x)
    }

    /// tanh' = 1 - tanh².
    pub fn backward(grad: &Tensor, output: &Tensor) -> Result<Tensor> {
        grad * &(1.0 - &(output * output)?)?
    }
}

fn check(f: fn(&Tensor) -> Result<Tensor>, name: &str, x0: f64, expected: f64) -> Result<()> {
    let reg = autograd::registry()?;
    let entry = reg.get(name)?;
    assert!(entry.saves_output, "{name} saves its output");
    assert_eq!(entry.saved_names(), vec!["output"]);

    let x = Tensor::scalar(x0).with_requires_grad(true);
    let y = f(&x)?;
    let node = y.grad_fn().expect("recorded");
    assert_eq!(
        node.saved_tensor_count(),
        1,
        "{name}: the output, and nothing else"
    );
    y.backward()?;
    let g = x.grad().unwrap().to_scalar::<f64>()?;
    assert!(
        (g - expected).abs() < 1e-12,
        "{name}'({x0}) = {g}, expected {expected}"
    );
    Ok(())
}

pub fn main() -> Result<()> {
    autograd::init()?;
    let x0 = 0.3f64;
    let s = 1.0 / (1.0 + (-x0).exp());
    check(my_exp, "my_exp", x0, x0.exp())?;
    check(my_sigmoid, "my_sigmoid", x0, s * (1.0 - s))?;
    check(my_tanh, "my_tanh", x0, 1.0 - x0.tanh() * x0.tanh())?;
    Ok(())
}
