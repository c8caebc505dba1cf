//! What both CNN examples (`examples/cnn.rs`, `examples/cnn_bf16.rs`) share: the
//! generated images (squares, circles and crosses, as outlines of random size,
//! position and brightness on `SIZE x SIZE` pixels with Gaussian noise, drawn with
//! the library's `Rng`: fixed seed, no download) and the network, built from
//! `autograd::nn`'s layers.

use autograd::nn::{BatchNorm2d, Conv2d, Linear, Module};
use autograd::ops;
use autograd::prelude::*;

/// Pixels per side.
pub const SIZE: usize = 16;
/// Classes: square, circle, cross.
pub const CLASSES: usize = 3;
/// Standard deviation of the Gaussian noise added to every pixel.
pub const NOISE: f64 = 0.3;

/// One `SIZE x SIZE` image of `class` (0 square, 1 circle, 2 cross), row-major.
pub fn draw(class: usize, rng: &mut Rng) -> Vec<f32> {
    let mut img = vec![0.0f64; SIZE * SIZE];
    let brightness = rng.uniform_f64(0.7, 1.3);
    let pick =
        |rng: &mut Rng, lo: usize, hi: usize| lo + (rng.next_u64() % (hi - lo + 1) as u64) as usize;
    let mut set = |y: usize, x: usize| img[y * SIZE + x] = brightness;
    match class {
        0 => {
            // The outline of a square of side 6..=11.
            let side = pick(rng, 6, 11);
            let (top, left) = (pick(rng, 0, SIZE - side), pick(rng, 0, SIZE - side));
            for k in 0..side {
                set(top, left + k);
                set(top + side - 1, left + k);
                set(top + k, left);
                set(top + k, left + side - 1);
            }
        }
        1 => {
            // The outline of a circle of radius 3 to 5.5.
            let r = rng.uniform_f64(3.0, 5.5);
            let margin = r.ceil() as usize;
            let cy = pick(rng, margin, SIZE - 1 - margin) as f64 + rng.uniform_f64(-0.5, 0.5);
            let cx = pick(rng, margin, SIZE - 1 - margin) as f64 + rng.uniform_f64(-0.5, 0.5);
            for y in 0..SIZE {
                for x in 0..SIZE {
                    let d = ((y as f64 - cy).powi(2) + (x as f64 - cx).powi(2)).sqrt();
                    if (d - r).abs() < 0.6 {
                        set(y, x);
                    }
                }
            }
        }
        _ => {
            // A plus sign with arms of 3..=5 pixels.
            let arm = pick(rng, 3, 5);
            let (cy, cx) = (
                pick(rng, arm, SIZE - 1 - arm),
                pick(rng, arm, SIZE - 1 - arm),
            );
            for k in 0..=2 * arm {
                set(cy, cx + k - arm);
                set(cy + k - arm, cx);
            }
        }
    }
    img.iter()
        .map(|&v| (v + NOISE * rng.normal_f64()) as f32)
        .collect()
}

/// `n` images `[n, 1, SIZE, SIZE]` of random classes, and their labels `[n]`.
pub fn dataset(n: usize, rng: &mut Rng) -> Result<(Tensor, Vec<usize>)> {
    let mut pixels = Vec::with_capacity(n * SIZE * SIZE);
    let mut labels = Vec::with_capacity(n);
    for _ in 0..n {
        let class = (rng.next_u64() % CLASSES as u64) as usize;
        pixels.extend(draw(class, rng));
        labels.push(class);
    }
    Ok((Tensor::from_vec(pixels, [n, 1, SIZE, SIZE])?, labels))
}

/// The network, as modules with PyTorch's names (`conv1.weight`,
/// `bn1.running_mean`, `fc.bias`, ..): `conv 1→8 (3x3, padding 1, no bias) →
/// batch norm → relu → max pool 2x2 → conv 8→16 → batch norm → relu → avg pool 2x2
/// → linear 256→3`.
#[derive(Module)]
pub struct Cnn {
    pub conv1: Conv2d,
    pub bn1: BatchNorm2d,
    pub conv2: Conv2d,
    pub bn2: BatchNorm2d,
    pub fc: Linear,
}

impl Cnn {
    /// The network on `device` with its floating tensors in `dtype`, initialised
    /// as PyTorch's layers are, from `rng`.
    pub fn new(rng: &mut Rng, device: Device, dtype: DType) -> Result<Cnn> {
        let same = ops::Conv2dOptions {
            padding: (1, 1),
            ..Default::default()
        };
        let mut cnn = Cnn {
            conv1: Conv2d::new(1, 8, (3, 3), same, false, rng)?,
            bn1: BatchNorm2d::new(8)?,
            conv2: Conv2d::new(8, 16, (3, 3), same, false, rng)?,
            bn2: BatchNorm2d::new(16)?,
            fc: Linear::new(256, CLASSES, true, rng)?,
        };
        cnn.to_dtype(dtype)?;
        cnn.to_device(device)?;
        Ok(cnn)
    }

    /// Class scores `[n, 3]` for images `[n, 1, 16, 16]` (batch statistics in
    /// training mode, the running ones after `eval()`).
    pub fn forward(&mut self, x: &Tensor) -> Result<Tensor> {
        let h = self.bn1.forward(&self.conv1.forward(x)?)?;
        let h = h.relu()?.max_pool2d(ops::MaxPool2dOptions::new((2, 2)))?; // [n, 8, 8, 8]
        let h = self.bn2.forward(&self.conv2.forward(&h)?)?;
        let h = h.relu()?.avg_pool2d(ops::AvgPool2dOptions::new((2, 2)))?; // [n, 16, 4, 4]
        let n = h.dims()[0];
        self.fc.forward(&ops::reshape(&h, Shape::from([n, 256]))?)
    }
}

/// The fraction of `labels` that `scores` (a batch of images to their class
/// scores, unrecorded) predicts, in batches of 200.
pub fn accuracy(
    x: &Tensor,
    labels: &[usize],
    mut scores: impl FnMut(&Tensor) -> Result<Tensor>,
) -> Result<f64> {
    let mut right = 0;
    for start in (0..labels.len()).step_by(200) {
        let len = 200.min(labels.len() - start);
        let s = no_grad(|| scores(&x.narrow(0, start, len)?))?
            .to(Device::Cpu)?
            .to_vec::<f32>()?;
        right += s
            .chunks_exact(CLASSES)
            .map(|s| {
                (0..CLASSES)
                    .max_by(|&a, &b| s[a].total_cmp(&s[b]))
                    .unwrap_or(0)
            })
            .zip(&labels[start..start + len])
            .filter(|(p, l)| p == *l)
            .count();
    }
    Ok(right as f64 / labels.len() as f64)
}

/// A random permutation of `0..n` (Fisher-Yates).
pub fn shuffled(n: usize, rng: &mut Rng) -> Vec<usize> {
    let mut order: Vec<usize> = (0..n).collect();
    for i in (1..n).rev() {
        order.swap(i, (rng.next_u64() % (i as u64 + 1)) as usize);
    }
    order
}
