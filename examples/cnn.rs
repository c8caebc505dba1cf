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

use autograd::ops;
use autograd::optim::{Adam, Optimizer};
use autograd::prelude::*;
use std::time::Instant;

#[path = "cnn/data.rs"]
mod data;
use data::{CLASSES, NOISE, SIZE, dataset};

const TRAIN: usize = 3000;
const TEST: usize = 600;
const EPOCHS: usize = 12;
const BATCH: usize = 50;
const LEARNING_RATE: f64 = 0.01;
const TARGET_ACCURACY: f64 = 0.95;
const NAMES: [&str; CLASSES] = ["square", "circle", "cross"];

/// The network's parameters.
struct Cnn {
    conv1: Tensor,
    b1: Tensor,
    conv2: Tensor,
    b2: Tensor,
    fc: Tensor,
    bfc: Tensor,
}

impl Cnn {
    fn new(rng: &mut Rng, device: Device) -> Result<Cnn> {
        // He initialisation for the layers followed by relu, 1/fan_in for the last.
        let mut normal = |shape: &[usize], var: f64| -> Result<Tensor> {
            let t = rng.normal(shape, 0.0, var.sqrt(), DType::F32)?;
            Ok(t.to(device)?.with_requires_grad(true))
        };
        let conv1 = normal(&[8, 1, 3, 3], 2.0 / 9.0)?;
        let conv2 = normal(&[16, 8, 3, 3], 2.0 / 72.0)?;
        let fc = normal(&[256, CLASSES], 1.0 / 256.0)?;
        let zeros = |n: usize| -> Result<Tensor> {
            Ok(Tensor::zeros([n], DType::F32)?
                .to(device)?
                .with_requires_grad(true))
        };
        Ok(Cnn {
            conv1,
            b1: zeros(8)?,
            conv2,
            b2: zeros(16)?,
            fc,
            bfc: zeros(CLASSES)?,
        })
    }

    /// Class scores `[n, 3]` for images `[n, 1, 16, 16]`.
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let same = ((1, 1), (1, 1), (1, 1));
        let h = ops::conv2d(x, &self.conv1, Some(&self.b1), same.0, same.1, same.2, 1)?;
        let h = h.relu()?.max_pool2d((2, 2), (2, 2), (0, 0))?; // [n, 8, 8, 8]
        let h = ops::conv2d(&h, &self.conv2, Some(&self.b2), same.0, same.1, same.2, 1)?;
        let h = h.relu()?.avg_pool2d((2, 2), (2, 2), (0, 0))?; // [n, 16, 4, 4]
        let n = h.dims()[0];
        let flat = ops::reshape(&h, Shape::from([n, 256]))?;
        flat.matmul(&self.fc)? + &self.bfc
    }

    fn params_mut(&mut self) -> [&mut Tensor; 6] {
        [
            &mut self.conv1,
            &mut self.b1,
            &mut self.conv2,
            &mut self.b2,
            &mut self.fc,
            &mut self.bfc,
        ]
    }

    /// The predicted class of each image, without recording anything.
    fn predict(&self, x: &Tensor) -> Result<Vec<usize>> {
        let scores = no_grad(|| self.forward(x))?
            .to(Device::Cpu)?
            .to_vec::<f32>()?;
        Ok(scores
            .chunks_exact(CLASSES)
            .map(|s| {
                (0..CLASSES)
                    .max_by(|&a, &b| s[a].total_cmp(&s[b]))
                    .unwrap_or(0)
            })
            .collect())
    }
}

/// The fraction of `labels` that the model predicts, in batches.
fn accuracy(model: &Cnn, x: &Tensor, labels: &[usize]) -> Result<f64> {
    let mut right = 0;
    for start in (0..labels.len()).step_by(200) {
        let len = 200.min(labels.len() - start);
        let predicted = model.predict(&x.narrow(0, start, len)?)?;
        right += predicted
            .iter()
            .zip(&labels[start..start + len])
            .filter(|(p, l)| p == l)
            .count();
    }
    Ok(right as f64 / labels.len() as f64)
}

/// A random permutation of `0..n` (Fisher-Yates).
fn shuffled(n: usize, rng: &mut Rng) -> Vec<usize> {
    let mut order: Vec<usize> = (0..n).collect();
    for i in (1..n).rev() {
        order.swap(i, (rng.next_u64() % (i as u64 + 1)) as usize);
    }
    order
}

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
    let mut model = Cnn::new(&mut rng, device)?;
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
        let train_acc = accuracy(&model, &train_x, &train_labels)?;
        println!(
            "epoch {epoch} loss {:.4} train acc {:.1}%",
            loss_sum / batches as f64,
            100.0 * train_acc
        );
    }
    let test_acc = accuracy(&model, &test_x, &test_labels)?;
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
