//! Times W2 (mlp-step) and W3 (elementwise-bandwidth) at their GPU sizes on a CUDA
//! device: median and minimum of 10 timed steps after 3 warm-ups, each step's time
//! including a device synchronisation. A step computes what it returns (the loss
//! and the gradients, realized: with fusion on they would otherwise be deferred
//! and, dropped unread, never computed). Also times this backend's plain copy
//! kernel over W3's size, as a bandwidth reference, and lists the CUDA libraries
//! the process actually loaded.
//!
//! `cargo run --release --example gpu_workloads [-- --reps N --warmup N --device N]`
//!
//! Prints `RESULT <workload> autograd <key>=<value>..` lines, which
//! `scripts/gpu-check.sh run` puts next to PyTorch's, and `LIBRARY <path>` lines.
//! First, a `FIRSTUSE` line: the milliseconds of each first use in this process
//! (the driver and the context, then each kernel module's NVRTC compile, cuBLAS's
//! start, a generated op's program), each step synchronised.

#[path = "../tests/gpu/workloads.rs"]
mod workloads;

use autograd::prelude::*;
use autograd::{BinaryOp, UnaryOp, compute};
use std::time::Instant;
use workloads::{W2, W3};

fn arg(name: &str, default: usize) -> usize {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Median and minimum milliseconds of `reps` runs of `step` after `warmup` runs.
fn time(
    device: Device,
    warmup: usize,
    reps: usize,
    mut step: impl FnMut() -> Result<()>,
) -> Result<(f64, f64)> {
    for _ in 0..warmup {
        step()?;
        device.synchronize()?;
    }
    let mut ms = Vec::with_capacity(reps);
    for _ in 0..reps {
        device.synchronize()?;
        let t = Instant::now();
        step()?;
        device.synchronize()?;
        ms.push(t.elapsed().as_secs_f64() * 1e3);
    }
    ms.sort_by(f64::total_cmp);
    Ok((ms[ms.len() / 2], ms[0]))
}

/// The milliseconds of each first use on `device`, in order, each step waiting for
/// its result on the host: what a process pays before its first step runs.
fn first_use(device: Device) -> Result<Vec<(&'static str, f64)>> {
    let mut steps = Vec::new();
    let mut t = Instant::now();
    let mut lap = |name: &'static str, steps: &mut Vec<(&'static str, f64)>| {
        steps.push((name, t.elapsed().as_secs_f64() * 1e3));
        t = Instant::now();
    };
    let x = Tensor::from_slice(&[1.0f32, -2.0, 3.0, 0.5], [2, 2])?.to(device)?;
    device.synchronize()?;
    lap("upload", &mut steps);
    compute::cast(&x, DType::F64)?.to_vec::<f64>()?;
    lap("copy_module", &mut steps);
    compute::unary(&x, UnaryOp::Neg)?.to_vec::<f32>()?;
    lap("unary_module", &mut steps);
    compute::binary(&x, &x, BinaryOp::Add)?.to_vec::<f32>()?;
    lap("binary_module", &mut steps);
    x.sum_all()?.to_vec::<f32>()?;
    lap("reduce_module", &mut steps);
    x.matmul(&x)?.to_vec::<f32>()?;
    lap("cublas", &mut steps);
    x.relu()?.to_vec::<f32>()?;
    lap("generated_relu", &mut steps);
    x.tanh()?.to_vec::<f32>()?;
    lap("generated_tanh", &mut steps);
    x.tanh()?.to_vec::<f32>()?;
    lap("tanh_again", &mut steps);
    Ok(steps)
}

fn main() -> Result<()> {
    autograd::init()?;
    let (reps, warmup) = (arg("--reps", 10).max(1), arg("--warmup", 3));
    let device = Device::Cuda(arg("--device", 0));
    let start = Instant::now();
    if !device.is_available() {
        let e = compute::to_device(&Tensor::scalar(0.0f32), device).unwrap_err();
        eprintln!("gpu_workloads needs a CUDA GPU: {e}");
        std::process::exit(2);
    }
    let context = start.elapsed().as_secs_f64() * 1e3;
    let steps = first_use(device)?;
    let line: Vec<String> = steps
        .iter()
        .map(|(k, ms)| format!("{k}_ms={ms:.1}"))
        .collect();
    println!("FIRSTUSE context_ms={context:.1} {}", line.join(" "));

    // W2: 5 products of 4096^3 (the gradient of the constant X is not computed).
    let [batch, input, hidden, output] = W2::GPU_SIZES;
    let w2 = W2::new(W2::GPU_SIZES, 2)?.to(device)?;
    let (med, min) = time(device, warmup, reps, || w2.step().map(drop))?;
    let flops = 2.0
        * batch as f64
        * (2.0 * input as f64 * hidden as f64 + 3.0 * hidden as f64 * output as f64);
    println!(
        "RESULT W2 autograd median_ms={med:.3} min_ms={min:.3} tflops={:.1} shape={batch}x{input}x{hidden}x{output}",
        flops / (med * 1e-3) / 1e12
    );
    drop(w2);

    // W3 and the copy reference, over the same tensors.
    let n = W3::GPU_SIZE;
    let w3 = W3::new(n, 3)?.to(device)?;
    let (med, min) = time(device, warmup, reps, || w3.step().map(drop))?;
    // W3 reads x and a and writes the gradient of x (the loss is one value).
    let w3_gbps = 3.0 * 4.0 * n as f64 / (med * 1e-3) / 1e9;
    println!(
        "RESULT W3 autograd median_ms={med:.3} min_ms={min:.3} elements={n} gbps={w3_gbps:.0}"
    );
    let x = w3.x.detach();
    let (cmed, _) = time(device, warmup, reps, || {
        compute::unary(&x, UnaryOp::Copy).map(drop)
    })?;
    // Bytes read plus bytes written.
    let gbps = 2.0 * 4.0 * n as f64 / (cmed * 1e-3) / 1e9;
    println!("RESULT COPY autograd median_ms={cmed:.3} gbps={gbps:.0}");
    for path in loaded_cuda_libraries() {
        println!("LIBRARY {path}");
    }
    Ok(())
}

/// The CUDA libraries mapped into this process (driver, NVRTC, cuBLAS), as the
/// loader resolved them: the files' names carry their versions.
fn loaded_cuda_libraries() -> Vec<String> {
    let maps = std::fs::read_to_string("/proc/self/maps").unwrap_or_default();
    let mut paths: Vec<String> = maps
        .lines()
        .filter_map(|l| l.split_whitespace().nth(5))
        .filter(|p| {
            ["libcuda", "libnvrtc", "libcublas"]
                .iter()
                .any(|n| p.contains(n))
        })
        .map(str::to_string)
        .collect();
    paths.sort();
    paths.dedup();
    paths
}
