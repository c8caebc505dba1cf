//! A small convolutional network classifying generated images of shapes: squares,
//! circles and crosses (outlines of random size, position and brightness, drawn on
//! 16 x 16 pixels with Gaussian noise). The dataset is generated here with the
//! library's `Rng` (fixed seed, no download).
//!
//! The network: `conv2d 1→8 (3x3, padding 1) → relu → max_pool2d 2x2 →
//! conv2d 8→16 (3x3, padding 1) → relu → avg_pool2d 2x2 → linear 256→3`, trained
//! with cross-entropy and Adam. One line per epoch; the example asserts a test
//! accuracy above 95% (on images it never trained on) and prints it.
//!
//! Run with `cargo run --release --example cnn` (under ten seconds on two cores),
//! or `-- --cuda` to train on `Device::Cuda(0)` (im2col and col2im run as the ops'
//! CUDA kernels, the products on cuBLAS).

use autograd::optim::{Adam, Optimizer};
use autograd::prelude::*;
use std::time::Instant;

#[path = "cnn/common.rs"]
mod common;
use common::{CLASSES, Cnn, NOISE, SIZE, accuracy, dataset, shuffled};

const TRAIN: usize = 3000;
const TEST: usize = 600;
const EPOCHS: usize = 12;
const BATCH: usize = 50;
const LEARNING_RATE: f64 = 0.01;
const TARGET_ACCURACY: f64 = 0.95;
const NAMES: [&str; CLASSES] = ["square", "circle", "cross"];

fn main() -> Result<()> {
    autograd::init()?;
    let device = if std::env::args().any(|a| a == "--cuda") {
        Device::Cuda(0)
    } else {
        Device::Cpu
    };
    let start = Instant::now();
    let mut rng = Rng::new(7);
    let (train_x, train_labels) = dataset(TRAIN, &mut rng)?;
    let (test_x, test_labels) = dataset(TEST, &mut rng)?;
    let (train_x, test_x) = (train_x.to(device)?, test_x.to(device)?);
    // Class targets and batch indices are i64 tensors on the host: the ops read
    // them there whatever the images' device.
    let targets: Vec<i64> = train_labels.iter().map(|&c| c as i64).collect();
    let targets = Tensor::from_vec(targets, [TRAIN])?;
    let mut model = Cnn::new(&mut rng, device, DType::F32)?;
    let mut opt = Adam::new(LEARNING_RATE);
    println!(
        "{} / {} / {}: {TRAIN} training and {TEST} test images of {SIZE}x{SIZE}, noise \
         {NOISE}; conv-relu-maxpool-conv-relu-avgpool-linear on {device}, Adam lr \
         {LEARNING_RATE} (decayed over the last third), batches of {BATCH}",
        NAMES[0], NAMES[1], NAMES[2]
    );
    for epoch in 1..=EPOCHS {
        // Constant, then decayed over the last third.
        let decay = (epoch as f64 - 2.0 * EPOCHS as f64 / 3.0).max(0.0) / (EPOCHS as f64 / 3.0);
        opt.set_learning_rate(LEARNING_RATE * (1.0 - 0.9 * decay));
        let order = shuffled(TRAIN, &mut rng);
        let mut loss_sum = 0.0;
        let mut batches = 0;
        for chunk in order.chunks(BATCH) {
            let index: Vec<i64> = chunk.iter().map(|&i| i as i64).collect();
            let index = Tensor::from_vec(index, [chunk.len()])?;
            let xb = train_x.index_select(&index, 0)?;
            let yb = targets.index_select(&index, 0)?;
            let loss = model.forward(&xb)?.cross_entropy(&yb)?;
            loss.backward()?;
            opt.step(&mut model.params_mut())?;
            opt.zero_grad(&mut model.params_mut());
            loss_sum += loss.to(Device::Cpu)?.to_scalar::<f32>()? as f64;
            batches += 1;
        }
        let train_acc = accuracy(&train_x, &train_labels, |b| model.forward(b))?;
        println!(
            "epoch {epoch} loss {:.4} train acc {:.1}%",
            loss_sum / batches as f64,
            100.0 * train_acc
        );
    }
    let test_acc = accuracy(&test_x, &test_labels, |b| model.forward(b))?;
    println!(
        "test accuracy {:.1}% ({TEST} unseen images) in {:.1} s",
        100.0 * test_acc,
        start.elapsed().as_secs_f64()
    );
    assert!(
        test_acc > TARGET_ACCURACY,
        "test accuracy {test_acc:.3} is not above {TARGET_ACCURACY}"
    );
    Ok(())
}
