//! `autograd::functional`, hooks and `checkpoint` on a GPU: the results stay on the
//! device and agree with the CPU's.

use autograd::prelude::*;
use autograd::{checkpoint, compute, functional};

fn close(gpu: &Tensor, cpu: &Tensor) -> Result<()> {
    let (g, c) = (gpu.to_vec::<f64>()?, cpu.to_vec::<f64>()?);
    assert_eq!(g.len(), c.len());
    for (a, b) in g.iter().zip(&c) {
        assert!((a - b).abs() <= 1e-10 * b.abs().max(1.0), "{g:?} vs {c:?}");
    }
    Ok(())
}

fn g(xs: &[Tensor]) -> Result<Tensor> {
    (xs[0].exp()? * (&xs[1] * &xs[0])?.tanh()?)?.sum_all()
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn functional_hooks_and_checkpoint_on_the_device() -> Result<()> {
    let d = crate::gpu();
    let cpu = [
        Tensor::from_slice(&[0.2f64, -0.5, 0.9], [3])?,
        Tensor::from_slice(&[1.3f64, 0.4, -0.6], [3])?,
    ];
    let dev: Vec<Tensor> = cpu
        .iter()
        .map(|t| compute::to_device(t, d))
        .collect::<Result<_>>()?;
    // Jacobian (one-hot seeds made on the device's side) and Hessian-vector product.
    let f = |xs: &[Tensor]| (&xs[1] * &xs[0])?.tanh();
    let (jg, jc) = (
        functional::jacobian(f, &dev, false)?,
        functional::jacobian(f, &cpu, false)?,
    );
    assert_eq!(jg[0][1].device(), d);
    close(&jg[0][1], &jc[0][1])?;
    let (_, hg) = functional::hvp(g, &dev, &dev, false)?;
    let (_, hc) = functional::hvp(g, &cpu, &cpu, false)?;
    assert_eq!(hg[1].device(), d);
    close(&hg[0], &hc[0])?;
    close(&hg[1], &hc[1])?;
    // A checkpointed segment with a hook on its output.
    let run = |xs: &[Tensor]| -> Result<Tensor> {
        let x = xs[0].detach().with_requires_grad(true);
        let y = checkpoint(g, &[x.clone(), xs[1].clone()])?;
        y.register_hook(|g| Ok(Some((g * 3.0)?)))?;
        y.backward()?;
        Ok(x.grad().unwrap())
    };
    let (gg, gc) = (run(&dev)?, run(&cpu)?);
    assert_eq!(gg.device(), d);
    close(&gg, &gc)
}
