//! The examples' models against PyTorch's loss curves: the CNN of
//! `examples/cnn.rs` (with batch norm, built from `autograd::nn`'s layers)
//! trained in f64 gives, step for step, the losses PyTorch's same network gave
//! from the same initial weights on the same batches
//! (`tests/data/curves/cnn_torch_f64.txt`, written by
//! `scripts/curves/cnn_curve.py` from the example's `--export --f64`). The test
//! trains the first `CNN_STEPS` of its 200 steps (a debug build takes ~0.2 s a
//! step); the script compares all 200 with the release build.

use autograd::nn::Module;
use autograd::optim::{Adam, Optimizer};
use autograd::prelude::*;

#[allow(dead_code)]
#[path = "../../examples/cnn/common.rs"]
mod cnn;

/// PyTorch's losses, one per step.
fn torch_curve(name: &str) -> Vec<f64> {
    let path = format!("{}/tests/data/curves/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{path}: {e}"))
        .lines()
        .map(|l| l.trim().parse().expect("a loss per line"))
        .collect()
}

/// Asserts that `ours` is PyTorch's curve `name` (its first `ours.len()` steps)
/// to `tol`.
fn assert_curve(name: &str, ours: &[f64], tol: f64) {
    let torch = torch_curve(name);
    assert!(ours.len() <= torch.len());
    for (step, (a, b)) in ours.iter().zip(&torch).enumerate() {
        assert!(
            (a - b).abs() <= tol,
            "{name}: step {}: autograd {a:.10}, PyTorch {b:.10}",
            step + 1
        );
    }
}

#[test]
fn the_cnn_example_follows_pytorchs_loss_curve_in_f64() -> Result<()> {
    crate::init();
    const TRAIN: usize = 3000;
    const BATCH: usize = 50;
    const CNN_STEPS: usize = 60;
    let steps = CNN_STEPS.min(torch_curve("cnn_torch_f64.txt").len());
    // The example's draws, in its order.
    let mut rng = Rng::new(7);
    let (train_x, labels) = cnn::dataset(TRAIN, &mut rng)?;
    let _test = cnn::dataset(600, &mut rng)?;
    let train_x = train_x.to_dtype(DType::F64)?;
    let targets: Vec<i64> = labels.iter().map(|&c| c as i64).collect();
    let targets = Tensor::from_vec(targets, [TRAIN])?;
    let mut model = cnn::Cnn::new(&mut rng, Device::Cpu, DType::F64)?;
    let mut opt = Adam::new(0.01);
    let mut losses = Vec::new();
    while losses.len() < steps {
        let order = cnn::shuffled(TRAIN, &mut rng);
        for chunk in order.chunks(BATCH).take(steps - losses.len()) {
            let index: Vec<i64> = chunk.iter().map(|&i| i as i64).collect();
            let index = Tensor::from_vec(index, [chunk.len()])?;
            let loss = model
                .forward(&train_x.index_select(&index, 0)?)?
                .cross_entropy(&targets.index_select(&index, 0)?)?;
            loss.backward()?;
            opt.step(&mut model.parameters_mut())?;
            model.zero_grad();
            losses.push(loss.to_scalar::<f64>()?);
        }
    }
    assert_curve("cnn_torch_f64.txt", &losses, 1e-8);
    Ok(())
}
