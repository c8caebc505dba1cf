//! Models on the GPU: the CNN of `examples/cnn.rs` (conv, batch norm with its
//! running statistics and batch count, linear) trained a few steps with AdamW,
//! two parameter groups, a warm-up schedule and gradient clipping on the device
//! and on the host gives the same parameters and buffers; its optimizer's state
//! saved from the device loads into a host optimizer.

use autograd::nn::{Module, clip_grad_norm};
use autograd::optim::{AdamW, GroupOptions, LinearLR, LrScheduler, Optimizer};
use autograd::prelude::*;

#[allow(dead_code)]
#[path = "../../examples/cnn/common.rs"]
mod cnn;

/// The CNN after `steps` steps on `device`, and its optimizer's state dict.
fn trained(device: Device, steps: usize) -> Result<(cnn::Cnn, Vec<(String, Tensor)>)> {
    let mut rng = Rng::new(3);
    let (x, labels) = cnn::dataset(16, &mut rng)?;
    let x = x.to(device)?;
    let y = Tensor::from_vec(labels.iter().map(|&c| c as i64).collect::<Vec<_>>(), [16])?;
    let mut model = cnn::Cnn::new(&mut rng, device, DType::F32)?;
    let mut opt = AdamW::new(1e-2).weight_decay(0.1);
    let vectors: Vec<Tensor> = model
        .parameters()
        .into_iter()
        .filter(|p| p.rank() == 1)
        .collect();
    opt.add_param_group(&vectors, GroupOptions::weight_decay(0.0))?;
    let mut schedule = LrScheduler::new(&mut opt, LinearLR::new(0.5, 1.0, 2))?;
    for _ in 0..steps {
        let loss = model.forward(&x)?.cross_entropy(&y)?;
        loss.backward()?;
        clip_grad_norm(&model.parameters(), 0.5, 2.0)?;
        opt.step(&mut model.parameters_mut())?;
        model.zero_grad();
        schedule.step(&mut opt)?;
    }
    let state = opt.state_dict(&model.named_parameters())?;
    Ok((model, state))
}

#[test]
#[ignore = "needs a CUDA GPU (or the emulated device)"]
fn a_module_trained_on_the_gpu_matches_the_cpu() -> Result<()> {
    let gpu = crate::gpu();
    let (mut on_gpu, gpu_state) = trained(gpu, 3)?;
    let (cpu, cpu_state) = trained(Device::Cpu, 3)?;
    let host = |t: &Tensor| -> Result<Vec<f64>> {
        t.to(Device::Cpu)?.to_dtype(DType::F64)?.to_vec::<f64>()
    };
    let (on_gpu_dict, cpu_dict) = (on_gpu.state_dict(), cpu.state_dict());
    assert_eq!(on_gpu_dict.len(), cpu_dict.len());
    for ((name, g), (cpu_name, c)) in on_gpu_dict.iter().zip(cpu_dict) {
        assert_eq!(*name, cpu_name);
        assert_eq!(g.device(), gpu, "{name}");
        let (g, c) = (host(g)?, host(&c)?);
        for (a, b) in g.iter().zip(&c) {
            assert!(
                (a - b).abs() <= 1e-4 * (1.0 + b.abs()),
                "{name}: gpu {a}, cpu {b}"
            );
        }
    }
    assert_eq!(host(&on_gpu.bn1.num_batches_tracked)?, [3.0]);
    // The device's optimizer state loads into an optimizer of the host model.
    let mut opt = AdamW::new(1e-2);
    opt.load_state_dict(&cpu.named_parameters(), &gpu_state)?;
    assert_eq!(opt.num_groups(), 2);
    assert_eq!(gpu_state.len(), cpu_state.len());
    on_gpu.eval();
    let scores = on_gpu.forward(&cnn::dataset(4, &mut Rng::new(9))?.0.to(gpu)?)?;
    assert_eq!(scores.dims(), [4, 3]);
    Ok(())
}
