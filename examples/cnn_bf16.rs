//! The CNN of `examples/cnn.rs` (same generated images of squares, circles and
//! crosses, same seed, network, optimizer and steps) trained three ways, with the
//! test accuracy of each side by side:
//!
//! - `f32`: everything in f32 (the reference);
//! - `autocast bf16`: f32 parameters, the convolutions and the product run in
//!   bf16 inside [`autocast`] (softmax and the loss in f32), gradients back in f32;
//! - `bf16 params`: the parameters themselves held in bf16 (half the memory),
//!   under autocast, trained through Adam's f32 master copies.
//!
//! With `--f16`, a fourth run under f16 autocast with a [`GradScaler`] (f16's
//! small range needs the loss scaled). Run with
//! `cargo run --release --example cnn_bf16`; `--epochs N` trains fewer epochs
//! (the same for every run).

use autograd::amp::{GradScaler, autocast};
use autograd::nn::Module;
use autograd::optim::{Adam, Optimizer};
use autograd::prelude::*;
use std::time::Instant;

#[path = "cnn/common.rs"]
mod common;
use common::{Cnn, NOISE, SIZE, accuracy, dataset, shuffled};

const TRAIN: usize = 3000;
const TEST: usize = 600;
const EPOCHS: usize = 12;
const BATCH: usize = 50;
const LEARNING_RATE: f64 = 0.01;

/// How a run computes and keeps its parameters.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Precision {
    /// f32 everywhere.
    F32,
    /// f32 parameters, bf16 products under autocast.
    AutocastBf16,
    /// bf16 parameters (f32 master copies in Adam), bf16 products under autocast.
    Bf16Params,
    /// f32 parameters, f16 products under autocast, the loss scaled.
    AutocastF16,
}

impl Precision {
    fn label(self) -> &'static str {
        match self {
            Precision::F32 => "f32",
            Precision::AutocastBf16 => "autocast bf16",
            Precision::Bf16Params => "bf16 params",
            Precision::AutocastF16 => "autocast f16 + GradScaler",
        }
    }

    /// The autocast dtype of the run, if any.
    fn autocast(self) -> Option<DType> {
        match self {
            Precision::F32 => None,
            Precision::AutocastBf16 | Precision::Bf16Params => Some(DType::BF16),
            Precision::AutocastF16 => Some(DType::F16),
        }
    }

    /// Runs `f` under the run's autocast, if any.
    fn run<R>(self, f: impl FnOnce() -> Result<R>) -> Result<R> {
        match self.autocast() {
            Some(dtype) => autocast(dtype, f),
            None => f(),
        }
    }
}

/// What a run ends with.
struct Outcome {
    test_accuracy: f64,
    final_loss: f64,
    seconds: f64,
}

/// One training run as `examples/cnn.rs` does it (seed 7, Adam with the learning
/// rate decayed over the last third), for `epochs` epochs, in `precision`.
fn train(precision: Precision, epochs: usize) -> Result<Outcome> {
    let start = Instant::now();
    let mut rng = Rng::new(7);
    let (train_x, train_labels) = dataset(TRAIN, &mut rng)?;
    let (test_x, test_labels) = dataset(TEST, &mut rng)?;
    let targets: Vec<i64> = train_labels.iter().map(|&c| c as i64).collect();
    let targets = Tensor::from_vec(targets, [TRAIN])?;
    let param_dtype = match precision {
        Precision::Bf16Params => DType::BF16,
        _ => DType::F32,
    };
    let mut model = Cnn::new(&mut rng, Device::Cpu, param_dtype)?;
    let mut opt = Adam::new(LEARNING_RATE);
    // Loss scaling for f16 only: bf16 has f32's range.
    let mut scaler = GradScaler::new().enabled(precision == Precision::AutocastF16);
    let mut final_loss = f64::NAN;
    for epoch in 1..=epochs {
        let decay = (epoch as f64 - 2.0 * epochs as f64 / 3.0).max(0.0) / (epochs as f64 / 3.0);
        opt.set_learning_rate(LEARNING_RATE * (1.0 - 0.9 * decay));
        let order = shuffled(TRAIN, &mut rng);
        model.train();
        let mut loss_sum = 0.0;
        let mut batches = 0;
        for chunk in order.chunks(BATCH) {
            let index: Vec<i64> = chunk.iter().map(|&i| i as i64).collect();
            let index = Tensor::from_vec(index, [chunk.len()])?;
            let xb = train_x.index_select(&index, 0)?;
            let yb = targets.index_select(&index, 0)?;
            let loss = precision.run(|| model.forward(&xb)?.cross_entropy(&yb))?;
            scaler.scale(&loss)?.backward()?;
            scaler.step(&mut opt, &mut model.parameters_mut())?;
            scaler.update()?;
            model.zero_grad();
            loss_sum += loss.to_dtype(DType::F64)?.to_scalar::<f64>()?;
            batches += 1;
        }
        final_loss = loss_sum / batches as f64;
        println!(
            "  [{}] epoch {epoch} loss {final_loss:.4}",
            precision.label()
        );
    }
    model.eval(); // batch norm's running statistics
    let test_accuracy = accuracy(&test_x, &test_labels, |x| {
        precision.run(|| model.forward(x))
    })?;
    Ok(Outcome {
        test_accuracy,
        final_loss,
        seconds: start.elapsed().as_secs_f64(),
    })
}

fn main() -> Result<()> {
    autograd::init()?;
    let args: Vec<String> = std::env::args().collect();
    let epochs = match args.iter().position(|a| a == "--epochs") {
        Some(i) => args
            .get(i + 1)
            .and_then(|n| n.parse::<usize>().ok())
            .filter(|&n| n > 0)
            .ok_or_else(|| Error::InvalidArgument {
                op: "cnn_bf16",
                msg: "--epochs takes a whole number above 0, as `--epochs 6`".into(),
            })?,
        None => EPOCHS,
    };
    let mut runs = vec![
        Precision::F32,
        Precision::AutocastBf16,
        Precision::Bf16Params,
    ];
    if args.iter().any(|a| a == "--f16") {
        runs.push(Precision::AutocastF16);
    }
    println!(
        "{TRAIN} training and {TEST} test images of {SIZE}x{SIZE} (noise {NOISE}), {epochs} \
         epochs of batches of {BATCH}, Adam lr {LEARNING_RATE}"
    );
    let mut results = Vec::new();
    for precision in runs {
        results.push((precision, train(precision, epochs)?));
    }
    println!("\nprecision                   test accuracy   final loss   time");
    let reference = results[0].1.test_accuracy;
    for (precision, r) in &results {
        println!(
            "{:<27} {:>6.2}% ({:+.2})   {:.4}       {:.1} s",
            precision.label(),
            100.0 * r.test_accuracy,
            100.0 * (r.test_accuracy - reference),
            r.final_loss,
            r.seconds
        );
    }
    Ok(())
}
