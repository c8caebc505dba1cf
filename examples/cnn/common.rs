//! What both CNN examples (`examples/cnn.rs`, `examples/cnn_bf16.rs`) share: the
//! generated images (squares, circles and crosses, as outlines of random size,
//! position and brightness on `SIZE x SIZE` pixels with Gaussian noise, drawn with
//! the library's `Rng`: fixed seed, no download) and the network.

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

/// The network's parameters.
pub struct Cnn {
    conv1: Tensor,
    b1: Tensor,
    conv2: Tensor,
    b2: Tensor,
    fc: Tensor,
    bfc: Tensor,
}

impl Cnn {
    /// The network on `device`, its parameters in `dtype`.
    pub fn new(rng: &mut Rng, device: Device, dtype: DType) -> Result<Cnn> {
        // He initialisation for the layers followed by relu, 1/fan_in for the last.
        let mut normal = |shape: &[usize], var: f64| -> Result<Tensor> {
            let t = rng.normal(shape, 0.0, var.sqrt(), DType::F32)?;
            Ok(t.to_dtype(dtype)?.to(device)?.with_requires_grad(true))
        };
        let conv1 = normal(&[8, 1, 3, 3], 2.0 / 9.0)?;
        let conv2 = normal(&[16, 8, 3, 3], 2.0 / 72.0)?;
        let fc = normal(&[256, CLASSES], 1.0 / 256.0)?;
        let zeros = |n: usize| -> Result<Tensor> {
            Ok(Tensor::zeros([n], dtype)?
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
    pub fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let same = ops::Conv2dOptions {
            padding: (1, 1),
            ..Default::default()
        };
        let h = ops::conv2d(x, &self.conv1, Some(&self.b1), same)?;
        let h = h.relu()?.max_pool2d(ops::MaxPool2dOptions::new((2, 2)))?; // [n, 8, 8, 8]
        let h = ops::conv2d(&h, &self.conv2, Some(&self.b2), same)?;
        let h = h.relu()?.avg_pool2d(ops::AvgPool2dOptions::new((2, 2)))?; // [n, 16, 4, 4]
        let n = h.dims()[0];
        let flat = ops::reshape(&h, Shape::from([n, 256]))?;
        flat.matmul(&self.fc)? + &self.bfc
    }

    pub fn params_mut(&mut self) -> [&mut Tensor; 6] {
        [
            &mut self.conv1,
            &mut self.b1,
            &mut self.conv2,
            &mut self.b2,
            &mut self.fc,
            &mut self.bfc,
        ]
    }
}

/// The fraction of `labels` that `scores` (a batch of images to their class
/// scores, unrecorded) predicts, in batches of 200.
pub fn accuracy(
    x: &Tensor,
    labels: &[usize],
    scores: impl Fn(&Tensor) -> Result<Tensor>,
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
