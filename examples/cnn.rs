//! A small convolutional network classifying generated images of shapes: squares,
//! circles and crosses (outlines of random size, position and brightness, drawn on
//! 16 x 16 pixels with Gaussian noise). The dataset is generated here with the
//! library's `Rng` (fixed seed, no download).
//!
//! The network, built from `autograd::nn`'s layers with `#[derive(Module)]`:
//! `Conv2d 1→8 (3x3, padding 1) → BatchNorm2d → relu → max_pool2d 2x2 → Conv2d
//! 8→16 → BatchNorm2d → relu → avg_pool2d 2x2 → Linear 256→3`, trained with
//! cross-entropy and Adam; evaluated in `eval()` mode (the running statistics).
//! One line per epoch; the example asserts a test accuracy above 95% (on images it
//! never trained on) and prints it.
//!
//! Run with `cargo run --release --example cnn` (under ten seconds on two cores),
//! or `-- --cuda` to train on `Device::Cuda(0)` (im2col and col2im run as the ops'
//! CUDA kernels, the products on cuBLAS). `-- --export DIR` also writes
//! `DIR/cnn_init.safetensors` (the initial weights, the images and the first
//! `CURVE_STEPS` batches) and `DIR/cnn_curve.txt` (the loss of each of those
//! steps), which `scripts/curves/cnn_curve.py` trains PyTorch's same network
//! from and compares with; `--f64` trains in f64 (for that comparison).

use autograd::optim::{Adam, Optimizer};
use autograd::prelude::*;
use std::time::Instant;

#[path = "cnn/common.rs"]
mod common;
use autograd::nn::Module;
use common::{CLASSES, Cnn, NOISE, SIZE, accuracy, dataset, shuffled};

const TRAIN: usize = 3000;
const TEST: usize = 600;
const EPOCHS: usize = 12;
const BATCH: usize = 50;
const LEARNING_RATE: f64 = 0.01;
const TARGET_ACCURACY: f64 = 0.95;
const NAMES: [&str; CLASSES] = ["square", "circle", "cross"];
/// The steps whose losses `--export` writes for the comparison with PyTorch.
const CURVE_STEPS: usize = 200;

fn main() -> Result<()> {
    autograd::init()?;
    let device = if std::env::args().any(|a| a == "--cuda") {
        Device::Cuda(0)
    } else {
        Device::Cpu
    };
    let args: Vec<String> = std::env::args().collect();
    let export = args
        .iter()
        .position(|a| a == "--export")
        .map(|i| std::path::PathBuf::from(args.get(i + 1).map_or(".", |s| s.as_str())));
    // f64 for the comparison with PyTorch: in f32 both sides' rounding, amplified
    // by training, differs after ~100 steps (as PyTorch's f32 and f64 runs do).
    let dtype = if args.iter().any(|a| a == "--f64") {
        DType::F64
    } else {
        DType::F32
    };
    let start = Instant::now();
    let mut rng = Rng::new(7);
    let (train_x, train_labels) = dataset(TRAIN, &mut rng)?;
    let (test_x, test_labels) = dataset(TEST, &mut rng)?;
    let (train_x, test_x) = (
        train_x.to_dtype(dtype)?.to(device)?,
        test_x.to_dtype(dtype)?.to(device)?,
    );
    // Class targets and batch indices are i64 tensors on the host: the ops read
    // them there whatever the images' device.
    let targets: Vec<i64> = train_labels.iter().map(|&c| c as i64).collect();
    let targets = Tensor::from_vec(targets, [TRAIN])?;
    let mut model = Cnn::new(&mut rng, device, dtype)?;
    let initial = model.state_dict();
    let mut opt = Adam::new(LEARNING_RATE);
    // The first CURVE_STEPS batches and their losses, for --export.
    let (mut batches_seen, mut curve) = (Vec::new(), Vec::new());
    let (mut train_seconds, mut steps) = (0.0, 0);
    println!(
        "{} / {} / {}: {TRAIN} training and {TEST} test images of {SIZE}x{SIZE}, noise \
         {NOISE}; conv-bn-relu-maxpool-conv-bn-relu-avgpool-linear on {device} in {dtype}, Adam lr \
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
        model.train();
        let epoch_start = Instant::now();
        for chunk in order.chunks(BATCH) {
            let index: Vec<i64> = chunk.iter().map(|&i| i as i64).collect();
            if curve.len() < CURVE_STEPS {
                batches_seen.extend_from_slice(&index);
            }
            let index = Tensor::from_vec(index, [chunk.len()])?;
            let xb = train_x.index_select(&index, 0)?;
            let yb = targets.index_select(&index, 0)?;
            let loss = model.forward(&xb)?.cross_entropy(&yb)?;
            loss.backward()?;
            opt.step(&mut model.parameters_mut())?;
            model.zero_grad();
            let value = loss
                .to(Device::Cpu)?
                .to_dtype(DType::F64)?
                .to_scalar::<f64>()?;
            if curve.len() < CURVE_STEPS {
                curve.push(value);
            }
            loss_sum += value;
            batches += 1;
        }
        train_seconds += epoch_start.elapsed().as_secs_f64();
        steps += batches;
        model.eval();
        let train_acc = accuracy(&train_x, &train_labels, |b| model.forward(b))?;
        println!(
            "epoch {epoch} loss {:.4} train acc {:.1}%",
            loss_sum / batches as f64,
            100.0 * train_acc
        );
    }
    let test_acc = accuracy(&test_x, &test_labels, |b| model.forward(b))?;
    println!(
        "{steps} training steps, {:.2} ms/step",
        1000.0 * train_seconds / steps as f64
    );
    println!(
        "test accuracy {:.1}% ({TEST} unseen images) in {:.1} s",
        100.0 * test_acc,
        start.elapsed().as_secs_f64()
    );
    if let Some(dir) = export {
        write_export(&dir, &initial, &train_x, &targets, &batches_seen, &curve)?;
    }
    assert!(
        test_acc > TARGET_ACCURACY,
        "test accuracy {test_acc:.3} is not above {TARGET_ACCURACY}"
    );
    Ok(())
}

/// `dir/cnn_init.safetensors` (the initial state under `model.`, the training
/// images and labels, the batches' indices `[steps, BATCH]`) and
/// `dir/cnn_curve.txt` (one loss per step).
fn write_export(
    dir: &std::path::Path,
    initial: &[(String, Tensor)],
    images: &Tensor,
    labels: &Tensor,
    batches: &[i64],
    curve: &[f64],
) -> Result<()> {
    let io = |e: std::io::Error| Error::File {
        path: dir.display().to_string(),
        msg: e.to_string(),
    };
    std::fs::create_dir_all(dir).map_err(io)?;
    let batches = Tensor::from_slice(batches, [curve.len(), BATCH])?;
    let images = images.to(Device::Cpu)?;
    let names: Vec<String> = initial.iter().map(|(n, _)| format!("model.{n}")).collect();
    let mut tensors: Vec<(&str, &Tensor)> = names
        .iter()
        .zip(initial)
        .map(|(n, (_, t))| (n.as_str(), t))
        .collect();
    tensors.extend([
        ("data.images", &images),
        ("data.labels", labels),
        ("data.batches", &batches),
    ]);
    autograd::save(dir.join("cnn_init.safetensors"), &tensors)?;
    let text: String = curve.iter().map(|l| format!("{l:.10}\n")).collect();
    std::fs::write(dir.join("cnn_curve.txt"), text).map_err(io)?;
    println!(
        "wrote {} and cnn_curve.txt ({} steps)",
        dir.join("cnn_init.safetensors").display(),
        curve.len()
    );
    Ok(())
}
