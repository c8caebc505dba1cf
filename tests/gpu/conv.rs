//! Convolution and pooling on the GPU (`ops/src/conv.rs`: im2col and col2im as raw
//! CUDA kernels, the products on cuBLAS) against the CPU, values and gradients, f32,
//! f64 and bf16, at sizes past one block of threads, on a narrowed view of the input.
//! (`ops_parity` covers every one of these ops at its check cases too.)

use crate::gpu;
use autograd::ops;
use autograd::prelude::*;

type Op = fn(&[Tensor]) -> Result<Tensor>;

/// The output and the gradient of `Σ y · r` for every input, on `device`, on the host.
fn run(f: Op, inputs: &[Tensor], device: Device) -> Vec<Vec<f64>> {
    let leaves: Vec<Tensor> = inputs
        .iter()
        .map(|t| t.to(device).unwrap().detach().with_requires_grad(true))
        .collect();
    // The image is read through a view: its columns from the second on (offset 1,
    // rows of stride W + 1).
    let mut args = leaves.clone();
    let w = *leaves[0].dims().last().expect("an image has axes");
    args[0] = ops::narrow(&leaves[0], -1, 1, w - 1).unwrap();
    let y = f(&args).unwrap();
    assert_eq!(y.device(), device);
    crate::output_and_grads(&y, &leaves.iter().collect::<Vec<_>>())
}

#[test]
#[ignore = "needs a CUDA GPU (or the emulated device)"]
fn conv2d_and_pools_on_the_gpu_match_the_cpu() {
    let cases: [(&str, Vec<&[usize]>, Op); 4] = [
        ("conv2d", vec![&[3, 4, 11, 10], &[6, 2, 3, 3], &[6]], |v| {
            ops::conv2d(
                &v[0],
                &v[1],
                Some(&v[2]),
                ops::Conv2dOptions {
                    stride: (2, 1),
                    padding: (1, 2),
                    dilation: (1, 2),
                    groups: 2,
                },
            )
        }),
        ("max_pool2d", vec![&[3, 4, 11, 10]], |v| {
            ops::max_pool2d(
                &v[0],
                ops::MaxPool2dOptions::new((3, 3))
                    .stride((2, 2))
                    .padding((1, 1)),
            )
        }),
        ("avg_pool2d", vec![&[3, 4, 11, 10]], |v| {
            ops::avg_pool2d(
                &v[0],
                ops::AvgPool2dOptions::new((2, 3))
                    .stride((1, 2))
                    .padding((1, 1)),
            )
        }),
        ("im2col then col2im", vec![&[2, 3, 9, 11]], |v| {
            let c = ops::im2col(&v[0], (3, 2), (2, 1), (1, 0), (1, 2))?;
            ops::col2im(&c, (9, 10), (3, 2), (2, 1), (1, 0), (1, 2))
        }),
    ];
    compare_devices(&cases, 40);
}

/// Every case on the CPU and the GPU, in f64, f32 and bf16; the inputs drawn
/// from seeds `seed + k`.
fn compare_devices(cases: &[(&str, Vec<&[usize]>, Op)], seed: u64) {
    let dev = gpu();
    // bf16: the raw kernels widen it to f32 and round once on both devices; the
    // tolerance is a few bf16 ulps (the devices' f32 sums differ in their order).
    for dtype in [DType::F64, DType::F32, DType::BF16] {
        let tol = match dtype {
            DType::F64 => 1e-12,
            DType::F32 => 1e-5,
            _ => 2e-2,
        };
        for (k, (name, shapes, f)) in cases.iter().enumerate() {
            let mut rng = Rng::new(seed + k as u64);
            let inputs: Vec<Tensor> = shapes
                .iter()
                .map(|s| rng.uniform(*s, -1.0, 1.0, dtype).unwrap())
                .collect();
            let cpu = run(*f, &inputs, Device::Cpu);
            let gpu = run(*f, &inputs, dev);
            for (i, (c, g)) in cpu.iter().zip(&gpu).enumerate() {
                let what = format!("{name} {dtype}, result {i} (0: output, then gradients)");
                crate::compare(&what, c, g, (tol, tol)).unwrap_or_else(|e| panic!("{e}"));
            }
        }
    }
}

/// Issue 37's convolutions and pool options: compositions of recorded ops (and
/// the pools' `ceil_mode` folds), the same on both devices.
#[test]
#[ignore = "needs a CUDA GPU (or the emulated device)"]
fn conv_family_and_pool_options_on_the_gpu_match_the_cpu() {
    let cases: [(&str, Vec<&[usize]>, Op); 8] = [
        ("conv1d", vec![&[3, 4, 40], &[6, 2, 3], &[6]], |v| {
            let o = ops::Conv1dOptions {
                stride: 2,
                padding: 2,
                dilation: 2,
                groups: 2,
            };
            ops::conv1d(&v[0], &v[1], Some(&v[2]), o)
        }),
        (
            "conv3d",
            vec![&[2, 4, 5, 7, 9], &[6, 2, 3, 2, 3], &[6]],
            |v| {
                let o = ops::Conv3dOptions {
                    stride: (2, 1, 2),
                    padding: (1, 1, 0),
                    dilation: (1, 2, 1),
                    groups: 2,
                };
                ops::conv3d(&v[0], &v[1], Some(&v[2]), o)
            },
        ),
        (
            "conv_transpose2d",
            vec![&[2, 4, 9, 8], &[4, 3, 3, 2], &[6]],
            |v| {
                let o = ops::ConvTranspose2dOptions {
                    stride: (2, 3),
                    padding: (1, 0),
                    output_padding: (1, 2),
                    dilation: (1, 2),
                    groups: 2,
                };
                ops::conv_transpose2d(&v[0], &v[1], Some(&v[2]), o)
            },
        ),
        ("conv_transpose1d", vec![&[2, 3, 30], &[3, 2, 3]], |v| {
            let o = ops::ConvTranspose1dOptions {
                stride: 3,
                padding: 1,
                output_padding: 2,
                ..Default::default()
            };
            ops::conv_transpose1d(&v[0], &v[1], None, o)
        }),
        (
            "max_pool2d dilation ceil_mode",
            vec![&[3, 4, 11, 10]],
            |v| {
                let o = ops::MaxPool2dOptions::new((2, 3))
                    .stride((2, 2))
                    .padding((1, 1))
                    .dilation((2, 1))
                    .ceil_mode(true);
                ops::max_pool2d(&v[0], o)
            },
        ),
        (
            "avg_pool2d ceil_mode no pad count",
            vec![&[3, 4, 11, 10]],
            |v| {
                let o = ops::AvgPool2dOptions::new((3, 2))
                    .stride((2, 2))
                    .padding((1, 1))
                    .ceil_mode(true)
                    .count_include_pad(false);
                ops::avg_pool2d(&v[0], o)
            },
        ),
        ("adaptive_avg_pool2d", vec![&[3, 4, 11, 10]], |v| {
            ops::adaptive_avg_pool2d(&v[0], (4, 3))
        }),
        ("adaptive_max_pool2d", vec![&[3, 4, 11, 10]], |v| {
            Ok(ops::adaptive_max_pool2d(&v[0], (4, 3), false)?.0)
        }),
    ];
    compare_devices(&cases, 60);
}

/// The constant indices of the max pools: the same positions on both devices.
#[test]
#[ignore = "needs a CUDA GPU (or the emulated device)"]
fn max_pool_indices_on_the_gpu_match_the_cpu() {
    let dev = gpu();
    let x = Rng::new(80)
        .uniform([3, 4, 11, 10], -1.0, 1.0, DType::F32)
        .unwrap();
    let o = ops::MaxPool2dOptions::new((2, 3))
        .stride((2, 2))
        .padding((1, 1))
        .dilation((2, 1))
        .ceil_mode(true);
    let on = |d: Device| {
        let x = x.to(d).unwrap();
        let (_, i) = ops::max_pool2d_with_indices(&x, o).unwrap();
        let (_, a) = ops::adaptive_max_pool2d(&x, (4, 3), true).unwrap();
        let a = a.expect("asked for the indices");
        assert_eq!((i.device(), a.device()), (d, d));
        (i.to_vec::<i64>().unwrap(), a.to_vec::<i64>().unwrap())
    };
    assert_eq!(on(Device::Cpu), on(dev));
}
