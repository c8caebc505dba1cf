//! The generated images both CNN examples train on (`examples/cnn.rs`,
//! `examples/cnn_bf16.rs`): squares, circles and crosses, as outlines of random
//! size, position and brightness on `SIZE x SIZE` pixels with Gaussian noise,
//! drawn with the library's `Rng` (fixed seed, no download).

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
