//! The CUDA backend against the CPU backend, primitive by primitive: every
//! variant of every op enum, f32 and f64, contiguous, transposed, offset and
//! broadcast views, reductions large enough to be split, every matmul layout;
//! and every dtype (the end of the file): transfers, fills, copies, every cast
//! pair bit for bit, the integer and bool ops, and f16/bf16 computing in f32.
//!
//! Needs a GPU: `#[ignore]`d, run by `scripts/gpu-check.sh run` (or
//! `cargo test -p autograd-kernels --test cuda_backend -- --ignored`). CI runs them
//! on the emulated device (`--features cuda-emulator -- --include-ignored`, see
//! `autograd_kernels::cuda::emu`, whose doc lists what emulation cannot see), where
//! the largest reductions are cut to keep the run short.

#![cfg(feature = "cuda")]

use autograd_kernels::cpu::CpuStorage;
use autograd_kernels::cuda::compile::{every_binary_op, every_reduce_op, every_unary_op};
use autograd_kernels::cuda::{self, CudaDevice, CudaStorage};
use autograd_kernels::{BackendStorage, BinaryOp, DType, Layout, ReduceOp, Shape, UnaryOp};
use std::sync::Arc;
use support::compare;

#[path = "support/compare.rs"]
mod support;

fn gpu() -> Arc<CudaDevice> {
    cuda::device(0).unwrap_or_else(|e| {
        panic!("these tests need a CUDA GPU (they are #[ignore]d by default): {e}")
    })
}

/// Deterministic values in [lo, hi).
fn data(n: usize, seed: u64, lo: f64, hi: f64, dtype: DType) -> CpuStorage {
    let mut s = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    let v: Vec<f64> = (0..n)
        .map(|_| {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            lo + (hi - lo) * ((s >> 11) as f64 / (1u64 << 53) as f64)
        })
        .collect();
    let c = CpuStorage::F64(v);
    c.cast(&Layout::contiguous(Shape::from([n])), dtype)
        .unwrap()
}

fn upload(dev: &Arc<CudaDevice>, c: &CpuStorage) -> CudaStorage {
    CudaStorage::from_cpu(dev, c, &Layout::contiguous(Shape::from([c.len()]))).unwrap()
}

fn host(g: &CudaStorage) -> Vec<f64> {
    let c = g
        .to_cpu(&Layout::contiguous(Shape::from([g.len()])))
        .unwrap();
    c.to_vec::<f64>(&Layout::contiguous(Shape::from([c.len()])))
        .unwrap()
}

fn values(c: &CpuStorage) -> Vec<f64> {
    c.to_vec::<f64>(&Layout::contiguous(Shape::from([c.len()])))
        .unwrap()
}

fn tolerance(dtype: DType) -> (f64, f64) {
    match dtype {
        DType::F32 => (1e-5, 1e-5),
        DType::F64 => (1e-12, 1e-12),
        other => unreachable!("these checks run over f32 and f64, not {other}"),
    }
}

fn check_all(failures: Vec<String>, total: usize) {
    assert!(
        failures.is_empty(),
        "{} of {total} checks failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
    eprintln!("{total} checks passed");
}

/// Views of a buffer of 120 elements (or 6, for the broadcast one) with shape
/// [4, 6, 5]: contiguous, permuted, offset and broadcast.
fn views() -> Vec<(&'static str, usize, Layout)> {
    let base = Layout::contiguous(Shape::from([4, 6, 5]));
    let wide = Layout::contiguous(Shape::from([4, 8, 5]));
    vec![
        ("contiguous", 120, base.clone()),
        (
            "permuted",
            120,
            Layout::contiguous(Shape::from([5, 4, 6]))
                .permute(&[1, 2, 0])
                .unwrap(),
        ),
        ("narrowed (offset)", 160, wide.narrow(1, 2, 6).unwrap()),
        (
            "broadcast [6,1]",
            6,
            Layout::contiguous(Shape::from([6, 1]))
                .broadcast_to(&Shape::from([4, 6, 5]))
                .unwrap(),
        ),
    ]
}

fn domain(op_name: &str) -> (f64, f64) {
    match op_name {
        "log" | "sqrt" | "pow" => (0.2, 2.0),
        _ => (-2.0, 2.0),
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn every_unary_op_matches_the_cpu() {
    let dev = gpu();
    let (mut failures, mut total) = (vec![], 0);
    for dtype in [DType::F32, DType::F64] {
        for op in every_unary_op() {
            for (view, len, l) in views() {
                let (lo, hi) = domain(op.name());
                let c = data(len, 1, lo, hi, dtype);
                let g = upload(&dev, &c);
                let want = values(&c.unary(&l, op).unwrap());
                let got = host(&g.unary(&l, op).unwrap());
                total += 1;
                if let Err(e) = compare(
                    &format!("{} {dtype} {view}", op.name()),
                    &want,
                    &got,
                    tolerance(dtype),
                ) {
                    failures.push(e);
                }
            }
        }
        // NaN and signed zeros go through negation, scaling and powers as on the CPU.
        let special = match dtype {
            DType::F32 => CpuStorage::F32(vec![f32::NAN, -0.0, 0.0, -1.0, 1.0]),
            DType::F64 => CpuStorage::F64(vec![f64::NAN, -0.0, 0.0, -1.0, 1.0]),
            other => unreachable!("these checks run over f32 and f64, not {other}"),
        };
        let l = Layout::contiguous(Shape::from([5]));
        for op in [
            UnaryOp::Neg,
            UnaryOp::MulScalar(-0.0),
            UnaryOp::DivScalar(-1.0),
            UnaryOp::PowScalar(2.0),
            UnaryOp::PowScalar(0.5),
        ] {
            let want = values(&special.unary(&l, op).unwrap());
            let got = host(&upload(&dev, &special).unary(&l, op).unwrap());
            total += 1;
            if let Err(e) = compare(
                &format!("{} {dtype} NaN/zeros", op.name()),
                &want,
                &got,
                (0.0, 0.0),
            ) {
                failures.push(e);
            }
        }
    }
    // A rank-0 view and an empty one.
    let c = data(3, 2, -1.0, 1.0, DType::F32);
    let g = upload(&dev, &c);
    let scalar = Layout::new(Shape::scalar(), &[], 2).unwrap();
    let empty = Layout::contiguous(Shape::from([0, 3]));
    for (what, l) in [("scalar at offset 2", scalar), ("empty", empty)] {
        total += 1;
        let want = values(&c.unary(&l, UnaryOp::Neg).unwrap());
        let got = host(&g.unary(&l, UnaryOp::Neg).unwrap());
        if let Err(e) = compare(what, &want, &got, tolerance(DType::F32)) {
            failures.push(e);
        }
    }
    dev.synchronize().unwrap();
    check_all(failures, total);
}

/// Every fixed op of op.rs's table computes the same bits as one step of a fused
/// chain as in its own kernel (both print the table's CUDA expression, with the
/// `fz_*` arithmetic of arith.cuh), and as on the CPU (but for a general power,
/// CUDA's `pow`); pow's special-cased exponents (2 and 1) too.
#[test]
#[ignore = "needs a CUDA GPU (or the emulated device)"]
fn every_fixed_op_fused_gives_the_bits_of_its_own_kernel() {
    use autograd_kernels::program::{FusedOp, Operand, Step};
    let dev = gpu();
    let n = 300;
    let l = Layout::contiguous(Shape::from([n]));
    let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    for dtype in [DType::F32, DType::F64] {
        let a = data(n, 11, 0.2, 2.0, dtype);
        // Every third element equal to a's, so the comparisons see ties.
        let b = {
            let (va, vb) = (values(&a), values(&data(n, 12, 0.5, 2.0, dtype)));
            let v: Vec<f64> = (0..n)
                .map(|i| if i % 3 == 0 { va[i] } else { vb[i] })
                .collect();
            match dtype {
                DType::F32 => CpuStorage::F32(v.iter().map(|&x| x as f32).collect()),
                DType::F64 => CpuStorage::F64(v),
                other => unreachable!("these checks run over f32 and f64, not {other}"),
            }
        };
        let (ga, gb) = (upload(&dev, &a), upload(&dev, &b));
        let leaves = [(&ga, &l), (&gb, &l)];
        let mut unary: Vec<UnaryOp> = every_unary_op()
            .into_iter()
            .filter(|op| !matches!(op, UnaryOp::Fill(_) | UnaryOp::Copy))
            .collect();
        unary.extend([UnaryOp::PowScalar(2.0), UnaryOp::PowScalar(1.0)]);
        for op in unary {
            let step = Step {
                op: FusedOp::Unary(op),
                args: [Operand::Leaf(0)].into_iter().collect(),
            };
            let fused = CudaStorage::run_fused(&[step], &leaves[..1], n, dtype).unwrap();
            let own = ga.unary(&l, op).unwrap();
            let cpu = values(&a.unary(&l, op).unwrap());
            let what = format!("{op:?} {dtype}");
            assert_eq!(bits(&host(&fused)), bits(&host(&own)), "{what}: fused");
            // A general power is CUDA's `pow`, within an ulp or two of the CPU's.
            if !matches!(op, UnaryOp::PowScalar(p) if p != 2.0 && p != 1.0) {
                assert_eq!(bits(&host(&own)), bits(&cpu), "{what}: CPU");
            }
        }
        for op in every_binary_op() {
            let step = Step {
                op: FusedOp::Binary(op),
                args: [Operand::Leaf(0), Operand::Leaf(1)].into_iter().collect(),
            };
            let fused = CudaStorage::run_fused(&[step], &leaves, n, dtype).unwrap();
            let own = ga.binary(&l, &gb, &l, op).unwrap();
            let cpu = values(&a.binary(&l, &b, &l, op).unwrap());
            let what = format!("{op:?} {dtype}");
            assert_eq!(bits(&host(&fused)), bits(&host(&own)), "{what}: fused");
            assert_eq!(bits(&host(&own)), bits(&cpu), "{what}: CPU");
        }
    }
    dev.synchronize().unwrap();
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn every_binary_op_matches_the_cpu_in_place_too() {
    let dev = gpu();
    let (mut failures, mut total) = (vec![], 0);
    let all = views();
    for dtype in [DType::F32, DType::F64] {
        for op in every_binary_op() {
            let (lo, hi) = domain(op.name());
            for (va, lena, la) in &all {
                for (vb, lenb, lb) in &all {
                    // Comparisons need equal elements to show up: a view paired with
                    // itself gets the same values on both sides. (A shared seed did not
                    // do it: b is drawn from another range, so no element was equal.)
                    let ca = data(*lena, 3, lo, hi, dtype);
                    let cb = if va == vb {
                        ca.clone()
                    } else {
                        data(*lenb, 4, lo.max(0.5), hi, dtype)
                    };
                    let (ga, gb) = (upload(&dev, &ca), upload(&dev, &cb));
                    let want = values(&ca.binary(la, &cb, lb, op).unwrap());
                    let got = host(&ga.binary(la, &gb, lb, op).unwrap());
                    total += 1;
                    let what = format!("{} {dtype} {va} with {vb}", op.name());
                    if let Err(e) = compare(&what, &want, &got, tolerance(dtype)) {
                        failures.push(e);
                    }
                }
            }
            // In place: a contiguous destination, each of the views as the operand.
            for (vb, lenb, lb) in &all {
                let dst_l = Layout::contiguous(Shape::from([4, 6, 5]));
                let mut ca = data(120, 5, lo, hi, dtype);
                let cb = data(*lenb, 6, lo.max(0.5), hi, dtype);
                let mut ga = upload(&dev, &ca);
                let gb = upload(&dev, &cb);
                ca.binary_assign(&dst_l, &cb, lb, op).unwrap();
                ga.binary_assign(&dst_l, &gb, lb, op).unwrap();
                total += 1;
                let what = format!("{}= {dtype} with {vb}", op.name());
                if let Err(e) = compare(&what, &values(&ca), &host(&ga), tolerance(dtype)) {
                    failures.push(e);
                }
            }
        }
    }
    dev.synchronize().unwrap();
    check_all(failures, total);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn every_reduce_op_matches_the_cpu_over_any_axes_and_sizes() {
    let dev = gpu();
    let (mut failures, mut total) = (vec![], 0);
    let axis_sets: [&[usize]; 7] = [&[0], &[1], &[2], &[0, 2], &[1, 2], &[0, 1], &[0, 1, 2]];
    for dtype in [DType::F32, DType::F64] {
        for op in every_reduce_op() {
            for (view, len, l) in views() {
                let c = data(len, 7, -1.0, 1.0, dtype);
                let g = upload(&dev, &c);
                for axes in axis_sets {
                    total += 1;
                    let want = values(&c.reduce(&l, op, axes).unwrap());
                    let got = host(&g.reduce(&l, op, axes).unwrap());
                    let what = format!("{} {dtype} {view} over {axes:?}", op.name());
                    if let Err(e) = compare(&what, &want, &got, tolerance(dtype)) {
                        failures.push(e);
                    }
                }
            }
            // Large enough to be split into chunks (two passes), in both orders.
            // The emulated device (4 SMs) splits at smaller sizes, and runs every
            // thread of a block as a fiber: its sizes are cut to keep CI quick,
            // still split, still many blocks.
            #[cfg(not(feature = "cuda-emulator"))]
            let big: [(&[usize], &[usize]); 6] = [
                (&[1 << 22], &[0]),
                (&[3000, 700], &[0]),
                (&[3000, 700], &[1]),
                (&[3000, 700], &[0, 1]),
                (&[4096, 3], &[1]),
                (&[7, 300_001], &[1]),
            ];
            #[cfg(feature = "cuda-emulator")]
            let big: [(&[usize], &[usize]); 6] = [
                (&[1 << 20], &[0]),
                (&[600, 700], &[0]),
                (&[600, 700], &[1]),
                (&[600, 700], &[0, 1]),
                (&[4096, 3], &[1]),
                (&[7, 60_001], &[1]),
            ];
            for (dims, axes) in big {
                let l = Layout::contiguous(Shape::from(dims));
                let n = l.numel();
                let c = data(n, 8, -1.0, 1.0, dtype);
                let g = upload(&dev, &c);
                for (how, view) in [
                    ("", l.clone()),
                    (" transposed", l.permute(&rev(dims.len())).unwrap()),
                ] {
                    let axes: Vec<usize> = if how.is_empty() {
                        axes.to_vec()
                    } else {
                        axes.iter().map(|&a| dims.len() - 1 - a).collect()
                    };
                    total += 1;
                    let want = values(&c.reduce(&view, op, &axes).unwrap());
                    let got = host(&g.reduce(&view, op, &axes).unwrap());
                    // Long sums: the CPU and the GPU add in different orders (and
                    // the CPU adds a strided f32 column in f32, the GPU in f64):
                    // the error grows with the partial sums, up to ~sqrt(n) of them.
                    let tol = match (dtype, op) {
                        (DType::F32, ReduceOp::Sum) => (1e-4, 1e-2),
                        (DType::F64, ReduceOp::Sum) => (1e-12, 1e-10),
                        _ => tolerance(dtype),
                    };
                    let what = format!("{} {dtype} {dims:?}{how} over {axes:?}", op.name());
                    if let Err(e) = compare(&what, &want, &got, tol) {
                        failures.push(e);
                    }
                }
            }
        }
    }
    dev.synchronize().unwrap();
    check_all(failures, total);
}

fn rev(rank: usize) -> Vec<usize> {
    (0..rank).rev().collect()
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn matmul_matches_the_cpu_for_every_operand_layout() {
    let dev = gpu();
    let (mut failures, mut total) = (vec![], 0);
    let c2 = |s: &[usize]| Layout::contiguous(Shape::from(s));
    // (name, a layout, a buffer length, b layout, b buffer length)
    let cases: Vec<(&str, Layout, usize, Layout, usize)> = vec![
        ("[5,7]@[7,3]", c2(&[5, 7]), 35, c2(&[7, 3]), 21),
        (
            "a transposed",
            c2(&[7, 5]).transpose(0, 1).unwrap(),
            35,
            c2(&[7, 3]),
            21,
        ),
        (
            "b transposed",
            c2(&[5, 7]),
            35,
            c2(&[3, 7]).transpose(0, 1).unwrap(),
            21,
        ),
        (
            "both transposed",
            c2(&[7, 5]).transpose(0, 1).unwrap(),
            35,
            c2(&[3, 7]).transpose(0, 1).unwrap(),
            21,
        ),
        ("row vector", c2(&[1, 7]), 7, c2(&[7, 3]), 21),
        ("column result", c2(&[5, 7]), 35, c2(&[7, 1]), 7),
        (
            "a column slice (ld > k)",
            c2(&[5, 9]).narrow(1, 1, 7).unwrap(),
            45,
            c2(&[7, 3]),
            21,
        ),
        ("batched", c2(&[2, 5, 7]), 70, c2(&[2, 7, 3]), 42),
        (
            "broadcast b over the batch",
            c2(&[2, 5, 7]),
            70,
            c2(&[7, 3]).broadcast_to(&Shape::from([2, 7, 3])).unwrap(),
            21,
        ),
        (
            "two batch axes, b broadcast over the first (b copied first)",
            c2(&[2, 3, 5, 7]),
            210,
            c2(&[3, 7, 4])
                .broadcast_to(&Shape::from([2, 3, 7, 4]))
                .unwrap(),
            84,
        ),
        (
            "two batch axes, a broadcast over the first (a copied first)",
            c2(&[3, 5, 7])
                .broadcast_to(&Shape::from([2, 3, 5, 7]))
                .unwrap(),
            105,
            c2(&[2, 3, 7, 4]),
            168,
        ),
        (
            "two batch axes, a's swapped, b one transposed matrix (a copied first)",
            c2(&[3, 2, 5, 7]).permute(&[1, 0, 2, 3]).unwrap(),
            210,
            c2(&[4, 7])
                .transpose(0, 1)
                .unwrap()
                .broadcast_to(&Shape::from([2, 3, 7, 4]))
                .unwrap(),
            28,
        ),
        (
            "two batch axes, each broadcast over another (both copied first)",
            c2(&[3, 5, 7])
                .broadcast_to(&Shape::from([2, 3, 5, 7]))
                .unwrap(),
            105,
            c2(&[2, 1, 7, 4])
                .broadcast_to(&Shape::from([2, 3, 7, 4]))
                .unwrap(),
            56,
        ),
        (
            "broadcast inside a matrix (copied first)",
            c2(&[5, 7]),
            35,
            c2(&[1, 3]).broadcast_to(&Shape::from([7, 3])).unwrap(),
            3,
        ),
        ("k = 0", c2(&[5, 0]), 0, c2(&[0, 3]), 0),
        ("m = 0", c2(&[0, 7]), 0, c2(&[7, 3]), 21),
        (
            "large",
            c2(&[300, 257]),
            300 * 257,
            c2(&[257, 129]),
            257 * 129,
        ),
    ];
    for dtype in [DType::F32, DType::F64] {
        for (name, la, lena, lb, lenb) in &cases {
            let (ca, cb) = (
                data(*lena, 9, -1.0, 1.0, dtype),
                data(*lenb, 10, -1.0, 1.0, dtype),
            );
            let (ga, gb) = (upload(&dev, &ca), upload(&dev, &cb));
            let want = values(&ca.matmul(la, &cb, lb).unwrap());
            let got = host(&ga.matmul(la, &gb, lb).unwrap());
            let tol = match dtype {
                DType::F32 => (1e-4, 1e-4),
                DType::F64 => (1e-10, 1e-10),
                other => unreachable!("these checks run over f32 and f64, not {other}"),
            };
            total += 1;
            if let Err(e) = compare(&format!("matmul {dtype} {name}"), &want, &got, tol) {
                failures.push(e);
            }
        }
    }
    dev.synchronize().unwrap();
    check_all(failures, total);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn copies_casts_fills_and_transfers_match_the_cpu() {
    let dev = gpu();
    let (mut failures, mut total) = (vec![], 0);
    let mut check = |what: String, want: Vec<f64>, got: Vec<f64>, tol| {
        total += 1;
        if let Err(e) = compare(&what, &want, &got, tol) {
            failures.push(e);
        }
    };
    for dtype in [DType::F32, DType::F64] {
        let tol = tolerance(dtype);
        // A transposed [3,4] into rows 1..4 of a [5,4] buffer, then added again.
        let src_l = Layout::contiguous(Shape::from([4, 3]))
            .transpose(0, 1)
            .unwrap();
        let dst_l = Layout::contiguous(Shape::from([5, 4]))
            .narrow(0, 1, 3)
            .unwrap();
        let src = data(12, 11, -1.0, 1.0, dtype);
        let (mut cd, gs) = (data(20, 12, -1.0, 1.0, dtype), upload(&dev, &src));
        let mut gd = upload(&dev, &cd);
        for accumulate in [false, true] {
            src.copy_into(&src_l, &mut cd, &dst_l, accumulate).unwrap();
            gs.copy_into(&src_l, &mut gd, &dst_l, accumulate).unwrap();
            check(
                format!("copy_into {dtype} accumulate={accumulate}"),
                values(&cd),
                host(&gd),
                tol,
            );
        }
        // Repeated destinations add up (the gradient of a broadcast / index_select).
        let src = data(6, 13, -1.0, 1.0, dtype);
        let sl = Layout::contiguous(Shape::from([2, 3]));
        let dl = Layout::new(Shape::from([2, 3]), &[0, 1], 0).unwrap();
        let mut cd = data(3, 14, -1.0, 1.0, dtype);
        let mut gd = upload(&dev, &cd);
        src.copy_into(&sl, &mut cd, &dl, true).unwrap();
        upload(&dev, &src)
            .copy_into(&sl, &mut gd, &dl, true)
            .unwrap();
        check(
            format!("copy_into {dtype} repeated destinations"),
            values(&cd),
            host(&gd),
            tol,
        );
        // Casts of a strided view, both ways.
        let c = data(120, 15, -1.0, 1.0, dtype);
        let g = upload(&dev, &c);
        let l = Layout::contiguous(Shape::from([4, 6, 5]))
            .permute(&[2, 0, 1])
            .unwrap();
        for to in [DType::F32, DType::F64] {
            let tol = tolerance(if to == DType::F32 { to } else { dtype });
            check(
                format!("cast {dtype} -> {to}"),
                values(&c.cast(&l, to).unwrap()),
                host(&g.cast(&l, to).unwrap()),
                tol,
            );
        }
        // Fills, zero (a memset) and not.
        for v in [0.0, -2.5] {
            let want = values(&c.filled_like(7, dtype, v).unwrap());
            check(
                format!("filled {dtype} {v}"),
                want,
                host(&g.filled_like(7, dtype, v).unwrap()),
                (0.0, 0.0),
            );
        }
        // Strided views to and from the host.
        let back = g.to_cpu(&l).unwrap();
        check(
            format!("to_cpu {dtype} permuted"),
            values(&c.cast(&l, dtype).unwrap()),
            values(&back),
            (0.0, 0.0),
        );
        let up = CudaStorage::from_cpu(&dev, &c, &l).unwrap();
        check(
            format!("from_cpu {dtype} permuted"),
            values(&c.cast(&l, dtype).unwrap()),
            host(&up),
            (0.0, 0.0),
        );
    }
    dev.synchronize().unwrap();
    check_all(failures, total);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn bad_views_and_dtype_mixes_are_errors_not_crashes() {
    let dev = gpu();
    let a = upload(&dev, &data(4, 1, -1.0, 1.0, DType::F32));
    let b = upload(&dev, &data(4, 2, -1.0, 1.0, DType::F64));
    let l = Layout::contiguous(Shape::from([4]));
    assert!(
        a.unary(&Layout::contiguous(Shape::from([5])), UnaryOp::Neg)
            .is_err()
    );
    assert!(a.binary(&l, &b, &l, BinaryOp::Add).is_err());
    assert!(
        a.matmul(
            &Layout::contiguous(Shape::from([2, 2])),
            &b,
            &Layout::contiguous(Shape::from([2, 2]))
        )
        .is_err()
    );
    dev.synchronize().unwrap();
}

/// The kernels' 64-bit index path, which a launch takes when some element count
/// or storage offset does not fit in 32 bits (`index32` in common.cuh). Every
/// view of the tests above fits, so they run the 32-bit path; the emulated device
/// can force the other one, and this runs each kind of kernel through it: unary
/// and cast (one view), binary, in place and copies (two), the three reduction
/// kernels (rows, cols, few), over contiguous, permuted, offset and broadcast
/// views.
#[test]
#[cfg(feature = "cuda-emulator")]
fn the_64_bit_index_path_matches_the_cpu() {
    let dev = gpu();
    let (mut failures, mut total) = (vec![], 0);
    let all = views();
    cuda::emu::with_64_bit_indices(|| {
        let mut check = |what: String, want: Vec<f64>, got: Vec<f64>, tol| {
            total += 1;
            if let Err(e) = compare(&what, &want, &got, tol) {
                failures.push(e);
            }
        };
        for dtype in [DType::F32, DType::F64] {
            let tol = tolerance(dtype);
            for (va, lena, la) in &all {
                let ca = data(*lena, 21, -2.0, 2.0, dtype);
                let ga = upload(&dev, &ca);
                for op in [UnaryOp::Neg, UnaryOp::Neg] {
                    check(
                        format!("64-bit {} {dtype} {va}", op.name()),
                        values(&ca.unary(la, op).unwrap()),
                        host(&ga.unary(la, op).unwrap()),
                        tol,
                    );
                }
                let to = if dtype == DType::F32 {
                    DType::F64
                } else {
                    DType::F32
                };
                check(
                    format!("64-bit cast {dtype} -> {to} {va}"),
                    values(&ca.cast(la, to).unwrap()),
                    host(&ga.cast(la, to).unwrap()),
                    tolerance(DType::F32),
                );
                for (vb, lenb, lb) in &all {
                    let cb = data(*lenb, 22, -2.0, 2.0, dtype);
                    let gb = upload(&dev, &cb);
                    check(
                        format!("64-bit sub {dtype} {va} with {vb}"),
                        values(&ca.binary(la, &cb, lb, BinaryOp::Sub).unwrap()),
                        host(&ga.binary(la, &gb, lb, BinaryOp::Sub).unwrap()),
                        tol,
                    );
                }
                // In place and copies: the view as the source of a contiguous
                // destination, and added into a permuted one.
                let dl = Layout::contiguous(Shape::from([4, 6, 5]));
                let pl = Layout::contiguous(Shape::from([5, 4, 6]))
                    .permute(&[1, 2, 0])
                    .unwrap();
                let mut cd = data(120, 23, -1.0, 1.0, dtype);
                let mut gd = upload(&dev, &cd);
                cd.binary_assign(&dl, &ca, la, BinaryOp::Mul).unwrap();
                gd.binary_assign(&dl, &ga, la, BinaryOp::Mul).unwrap();
                ca.copy_into(la, &mut cd, &pl, true).unwrap();
                ga.copy_into(la, &mut gd, &pl, true).unwrap();
                check(
                    format!("64-bit mul= and copy_into {dtype} {va}"),
                    values(&cd),
                    host(&gd),
                    tol,
                );
                for op in every_reduce_op() {
                    for axes in [&[0usize][..], &[2], &[0, 1], &[0, 2], &[0, 1, 2]] {
                        check(
                            format!("64-bit {} {dtype} {va} over {axes:?}", op.name()),
                            values(&ca.reduce(la, op, axes).unwrap()),
                            host(&ga.reduce(la, op, axes).unwrap()),
                            tol,
                        );
                    }
                }
            }
            // The cols kernel (more adjacent outputs than `few` takes), offset.
            let c = data(1200, 24, -1.0, 1.0, dtype);
            let g = upload(&dev, &c);
            let l = Layout::contiguous(Shape::from([10, 120]))
                .narrow(1, 10, 100)
                .unwrap();
            for op in every_reduce_op() {
                check(
                    format!(
                        "64-bit {} {dtype} columns of [10, 100] at offset 10",
                        op.name()
                    ),
                    values(&c.reduce(&l, op, &[0]).unwrap()),
                    host(&g.reduce(&l, op, &[0]).unwrap()),
                    tol,
                );
            }
        }
    });
    dev.synchronize().unwrap();
    check_all(failures, total);
}

/// An f32 sum split into chunks (two passes) is rounded to f32 once, as one pass
/// would round it: the chunks' partial sums stay f64 (issue 14). The values are
/// integers of up to 16,000, positive in the first half and their negatives (plus 1
/// every 67th) in the second, so every chunk's partial sum is far beyond 2^24,
/// where f32 steps by 4 to 64, while the total, 7826, and every sum the CPU forms
/// in f32 are exact. Rounding each partial to f32 is off by at least a unit
/// whatever the number of chunks (checked below for 2 to 256); rounding once is
/// exact, as is the CPU.
#[test]
#[ignore = "needs a CUDA GPU"]
fn split_f32_sums_round_once_and_match_the_cpu() {
    let dev = gpu();
    let n = 1usize << 20;
    let half = n / 2;
    let mut s = 99u64;
    let mut first: Vec<f32> = Vec::with_capacity(half);
    for _ in 0..half {
        s = s
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        first.push((1 + (s >> 33) % 16_000) as f32);
    }
    let second = first
        .iter()
        .enumerate()
        .map(|(j, &x)| -x + if j % 67 == 0 { 1.0 } else { 0.0 });
    let v: Vec<f32> = first.iter().copied().chain(second).collect();
    let exact: f64 = v.iter().map(|&x| x as f64).sum();
    assert_eq!(exact, half.div_ceil(67) as f64);
    // Rounding each chunk's partial sum to f32 gives a measurably different total.
    for chunks in [2usize, 4, 8, 16, 32, 64, 128, 256] {
        let per = n / chunks;
        let rounded: f64 = v
            .chunks(per)
            .map(|c| c.iter().map(|&x| x as f64).sum::<f64>() as f32 as f64)
            .sum();
        assert!(
            (rounded as f32 as f64 - exact).abs() >= 1.0,
            "{chunks} chunks: {rounded} vs {exact}"
        );
    }
    let c = CpuStorage::F32(v);
    let g = upload(&dev, &c);
    let bits = |x: f64| (x as f32).to_bits();
    // One output (the rows kernel): the CPU is exact here too.
    let l = Layout::contiguous(Shape::from([n]));
    let cpu = values(&c.reduce(&l, ReduceOp::Sum, &[0]).unwrap());
    let got = host(&g.reduce(&l, ReduceOp::Sum, &[0]).unwrap());
    assert_eq!(bits(cpu[0]), bits(exact), "CPU");
    assert_eq!(bits(got[0]), bits(exact), "CUDA: {} vs {exact}", got[0]);
    // Two adjacent outputs, the even and the odd elements (the few kernel). The
    // CPU adds a strided f32 column in f32, rounding at every element, which on
    // these values is far off (1117 for 3913); the device matches the CPU's f64
    // sum of the same values, rounded once.
    let l = Layout::contiguous(Shape::from([half, 2]));
    let c64 = c
        .cast(&Layout::contiguous(Shape::from([n])), DType::F64)
        .unwrap();
    let want = values(&c64.reduce(&l, ReduceOp::Sum, &[0]).unwrap());
    assert_eq!(want[0] + want[1], exact);
    let got = host(&g.reduce(&l, ReduceOp::Sum, &[0]).unwrap());
    assert_eq!(
        got.iter().map(|&x| bits(x)).collect::<Vec<_>>(),
        want.iter().map(|&x| bits(x)).collect::<Vec<_>>(),
        "CUDA columns: {got:?}, expected {want:?}"
    );
    dev.synchronize().unwrap();
}

/// A few outputs, each reducing many rows (the bias gradient of a narrow layer):
/// the reduction is spread over many threads and blocks (the `few` kernel and its
/// second pass), and agrees with the CPU for sum, max and min, including max and
/// min's rules for ±0 ties (max takes +0, min -0, in any order) and NaN (it wins).
/// 64 outputs is the most `few` takes, 65 the fewest `cols` does.
#[test]
#[ignore = "needs a CUDA GPU"]
fn few_outputs_of_many_rows_match_the_cpu_with_signed_zeros_and_nan() {
    let dev = gpu();
    let (mut failures, mut total) = (vec![], 0);
    for dtype in [DType::F32, DType::F64] {
        for outputs in [1usize, 2, 3, 4, 7, 64, 65] {
            let rows = (100_000 / outputs).max(4096);
            let random = values(&data(rows * outputs, 31, -1.0, 1.0, dtype));
            // Column c: random (c % 3 == 0), zeros of alternating sign (1), random
            // with one NaN in the middle (2).
            let v: Vec<f64> = (0..rows * outputs)
                .map(|i| {
                    let (r, col) = (i / outputs, i % outputs);
                    match col % 3 {
                        1 if (r + col) % 2 == 0 => 0.0,
                        1 => -0.0,
                        2 if r == rows / 2 + col => f64::NAN,
                        _ => random[i],
                    }
                })
                .collect();
            let c = CpuStorage::F64(v)
                .cast(&Layout::contiguous(Shape::from([rows * outputs])), dtype)
                .unwrap();
            let g = upload(&dev, &c);
            // The whole matrix, and a view whose reduced axes do not merge (rows
            // 1..5 of every 6), over its rows.
            let full = Layout::contiguous(Shape::from([rows, outputs]));
            let split = Layout::contiguous(Shape::from([rows / 6, 6, outputs]))
                .narrow(1, 1, 4)
                .unwrap();
            for (view, l, axes) in [
                ("", &full, &[0usize][..]),
                (" rows 1..5 of 6", &split, &[0, 1]),
            ] {
                for op in every_reduce_op() {
                    total += 1;
                    let want = values(&c.reduce(l, op, axes).unwrap());
                    let got = host(&g.reduce(l, op, axes).unwrap());
                    let what = format!("{} {dtype} {outputs} outputs{view}", op.name());
                    let r = if op == ReduceOp::Sum {
                        compare(&what, &want, &got, (1e-4, 1e-2))
                    } else {
                        // Bit for bit: -0 and +0 differ here.
                        let same = |a: &f64, b: &f64| {
                            (a.is_nan() && b.is_nan()) || a.to_bits() == b.to_bits()
                        };
                        if want.iter().zip(&got).all(|(a, b)| same(a, b)) {
                            Ok(())
                        } else {
                            Err(format!("{what}: {got:?}, expected {want:?}"))
                        }
                    };
                    if let Err(e) = r {
                        failures.push(e);
                    }
                }
            }
        }
    }
    dev.synchronize().unwrap();
    check_all(failures, total);
}

/// A raw program (`autograd_kernels::raw`): each input's logical elements
/// gathered through its view (`raw_at`), and the parameter struct's counts and
/// scalars written out, for transposed, offset and broadcast views in both dtypes.
#[test]
#[ignore = "needs a CUDA GPU (or the emulated device)"]
fn raw_programs_read_views_in_place_and_get_their_scalars() {
    use autograd_kernels::raw::{CudaProgram, LaunchConfig, RawLaunch, Scalar};
    const PROGRAM: CudaProgram = CudaProgram {
        name: "raw_test_gather",
        source: r#"
template <typename T>
__device__ void gather(const RawParams& p, const T* a, const T* b, T* oa, T* ob, T* os) {
    const u64 start = (u64)blockIdx.x * blockDim.x + threadIdx.x, step = (u64)blockDim.x * gridDim.x;
    for (u64 i = start; i < p.out[0].numel; i += step) oa[i] = a[raw_at(p.in[0], i)];
    for (u64 i = start; i < p.out[1].numel; i += step) ob[i] = b[raw_at(p.in[1], i)];
    if (start == 0) {
        os[0] = (T)p.scalar[0].u;
        os[1] = (T)p.scalar[1].i;
        os[2] = (T)p.scalar[2].f;
        os[3] = (T)p.n_inputs;
        os[4] = (T)p.n_outputs;
        os[5] = (T)p.n_scalars;
    }
}
extern "C" __global__ void gather_f32(RAW_PARAMS(float)) { gather(p, in0, in1, out0, out1, out2); }
extern "C" __global__ void gather_f64(RAW_PARAMS(double)) { gather(p, in0, in1, out0, out1, out2); }
"#,
    };
    let dev = gpu();
    for dtype in [DType::F32, DType::F64] {
        let c = data(40, 3, -1.0, 1.0, dtype);
        let g = upload(&dev, &c);
        let cases = [
            // Transposed [6, 4] of a [4, 6] at offset 0, and [3, 5] at offset 7.
            Layout::new(Shape::from([6, 4]), &[1, 6], 0).unwrap(),
            Layout::new(Shape::from([3, 5]), &[5, 1], 7).unwrap(),
            // A row broadcast over 3 rows (stride 0), at offset 30.
            Layout::new(Shape::from([3, 4]), &[0, 1], 30).unwrap(),
        ];
        for (la, lb) in [(&cases[0], &cases[1]), (&cases[2], &cases[0])] {
            let launch = RawLaunch {
                program: PROGRAM,
                entry: "gather",
                config: LaunchConfig::linear(2, 32),
                scalars: &[Scalar::U64(7), Scalar::I64(-3), Scalar::F64(0.5)],
            };
            let outs = [la.shape().clone(), lb.shape().clone(), Shape::from([6])];
            // SAFETY: gather_* take RAW_PARAMS, read inside the views and write
            // each output's elements (the scalars' 6), grid-stride.
            let got =
                unsafe { CudaStorage::run_raw(&launch, &[(&g, la), (&g, lb)], &outs) }.unwrap();
            let want_a = values(&c.cast(la, dtype).unwrap());
            let want_b = values(&c.cast(lb, dtype).unwrap());
            let tol = tolerance(dtype);
            compare("raw gather, input 0", &want_a, &host(&got[0]), tol).unwrap();
            compare("raw gather, input 1", &want_b, &host(&got[1]), tol).unwrap();
            compare(
                "raw scalars",
                &[7.0, -3.0, 0.5, 2.0, 3.0, 3.0],
                &host(&got[2]),
                tol,
            )
            .unwrap();
        }
    }
}

/// Contraction: a raw program, compiled as nvcc compiles (contraction on), gets a
/// fused multiply-add for `a * b + c`, on a GPU and on the emulated device (which
/// compiles every program so, where the CPU has fused multiply-adds:
/// `emu::contracts`), and never for the round-to-nearest intrinsics (`__fmul_rn`,
/// `__fadd_rn`), in which the library writes the arithmetic of its generated ops
/// and fused chains. With `c = -(a * b)` rounded, the contracted result is the
/// product's rounding error, and the rounded one 0.
#[test]
#[ignore = "needs a CUDA GPU (or the emulated device)"]
fn products_and_sums_are_contracted_except_through_the_intrinsics() {
    use autograd_kernels::raw::{CudaProgram, LaunchConfig, RawLaunch};
    const PROGRAM: CudaProgram = CudaProgram {
        name: "raw_test_contraction",
        source: r#"
__device__ float mul_rn(float a, float b) { return __fmul_rn(a, b); }
__device__ double mul_rn(double a, double b) { return __dmul_rn(a, b); }
__device__ float add_rn(float a, float b) { return __fadd_rn(a, b); }
__device__ double add_rn(double a, double b) { return __dadd_rn(a, b); }
template <typename T>
__device__ void contract(const RawParams& p, const T* a, const T* b, const T* c, T* plain, T* rounded) {
    const u64 start = (u64)blockIdx.x * blockDim.x + threadIdx.x, step = (u64)blockDim.x * gridDim.x;
    for (u64 i = start; i < p.out[0].numel; i += step) {
        plain[i] = a[i] * b[i] + c[i];
        rounded[i] = add_rn(mul_rn(a[i], b[i]), c[i]);
    }
}
extern "C" __global__ void contract_f32(RAW_PARAMS(float)) { contract(p, in0, in1, in2, out0, out1); }
extern "C" __global__ void contract_f64(RAW_PARAMS(double)) { contract(p, in0, in1, in2, out0, out1); }
"#,
    };
    #[cfg(feature = "cuda-emulator")]
    let contracts = cuda::emu::contracts();
    #[cfg(not(feature = "cuda-emulator"))]
    let contracts = true;
    let dev = gpu();
    let n = 1000;
    for dtype in [DType::F32, DType::F64] {
        let (a, b) = (data(n, 21, -1.0, 1.0, dtype), data(n, 22, -1.0, 1.0, dtype));
        let (av, bv) = (values(&a), values(&b));
        // c = -(a * b), and a * b + c with one rounding, in the dtype.
        let (c, fused): (Vec<f64>, Vec<f64>) = match dtype {
            DType::F32 => av
                .iter()
                .zip(&bv)
                .map(|(&x, &y)| {
                    let (x, y) = (x as f32, y as f32);
                    let c = -(x * y);
                    (c as f64, x.mul_add(y, c) as f64)
                })
                .unzip(),
            DType::F64 => av
                .iter()
                .zip(&bv)
                .map(|(&x, &y)| (-(x * y), x.mul_add(y, -(x * y))))
                .unzip(),
            other => unreachable!("these checks run over f32 and f64, not {other}"),
        };
        assert!(fused.iter().filter(|&&r| r != 0.0).count() > n / 2);
        let c = CpuStorage::F64(c)
            .cast(&Layout::contiguous(Shape::from([n])), dtype)
            .unwrap();
        let ins = [upload(&dev, &a), upload(&dev, &b), upload(&dev, &c)];
        let l = Layout::contiguous(Shape::from([n]));
        let launch = RawLaunch {
            program: PROGRAM,
            entry: "contract",
            config: LaunchConfig::linear(4, 64),
            scalars: &[],
        };
        let outs = [Shape::from([n]), Shape::from([n])];
        // SAFETY: contract_* take RAW_PARAMS, read n elements of each contiguous
        // input and write n of each output, grid-stride.
        let got = unsafe {
            CudaStorage::run_raw(
                &launch,
                &[(&ins[0], &l), (&ins[1], &l), (&ins[2], &l)],
                &outs,
            )
        }
        .unwrap();
        let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        let want_plain = if contracts {
            fused.clone()
        } else {
            vec![0.0; n]
        };
        assert_eq!(
            bits(&host(&got[0])),
            bits(&want_plain),
            "{dtype}: a * b + c (contracted: {contracts})"
        );
        assert_eq!(
            bits(&host(&got[1])),
            bits(&vec![0.0; n]),
            "{dtype}: __fadd_rn(__fmul_rn(a, b), c)"
        );
    }
}

/// One fused kernel with several results gives, for each, the bits of the CPU's
/// one pass (`cpu::fused::run_many`) for stored results, and of the chain stored
/// then summed by the GPU's own sum reduction for summed ones: results in any
/// order, a step that is both a result and read by later steps, one step twice, a
/// bias row read by period, sums over one block and split over several, and an
/// empty chain. Malformed result lists are errors, not launches.
#[test]
#[ignore = "needs a CUDA GPU (or the emulated device)"]
fn a_fused_kernel_with_several_results_gives_the_bits_of_the_unfused_ops() {
    use autograd_kernels::cpu::fused;
    use autograd_kernels::cuda::fused::{MAX_RESULTS, kernel_source_many};
    use autograd_kernels::program::{FusedOp, Operand, Sink, Step};
    let dev = gpu();
    let step = |op: BinaryOp, a: Operand, b: Operand| Step {
        op: FusedOp::Binary(op),
        args: [a, b].into_iter().collect(),
    };
    let (l0, l1, l2) = (Operand::Leaf(0), Operand::Leaf(1), Operand::Leaf(2));
    // A loss's chain and its gradient, sharing x (leaf 0) and the product (step 0).
    let steps = [
        step(BinaryOp::Mul, l0, l1),
        step(BinaryOp::Add, Operand::Step(0), l2),
        step(BinaryOp::Mul, Operand::Step(0), l0),
        Step {
            op: FusedOp::Unary(UnaryOp::MulScalar(0.5)),
            args: [Operand::Step(2)].into_iter().collect(),
        },
    ];
    let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    let (store, sum) = (Sink::Store, Sink::Sum);
    for dtype in [DType::F32, DType::F64] {
        // 37 × 64 (one block of the sum), 601 × 64 (split into chunks), empty.
        for (rows, cols) in [(37, 64), (601, 64), (0, 8)] {
            let n = rows * cols;
            let x = data(n, 11, -1.0, 1.0, dtype);
            let a = data(n, 12, -1.0, 1.0, dtype);
            let b = data(cols, 13, -1.0, 1.0, dtype);
            let dense = Layout::contiguous(Shape::from([rows, cols]));
            let row = Layout::new(Shape::from([rows, cols]), &[0, 1], 0).unwrap();
            let (gx, ga, gb) = (upload(&dev, &x), upload(&dev, &a), upload(&dev, &b));
            let leaves = [(&gx, &dense), (&ga, &dense), (&gb, &row)];
            for outputs in [
                vec![(1, store), (3, store)],
                vec![(3, store), (0, store), (1, store)],
                vec![(2, store), (2, store), (1, store), (3, store)],
                vec![(0, store)],
                vec![(1, sum)],
                vec![(3, store), (1, sum), (0, store)],
                vec![(1, sum), (3, sum), (1, store), (3, sum)],
            ] {
                let got = CudaStorage::run_fused_many(&steps, &leaves, n, dtype, &outputs).unwrap();
                assert_eq!(got.len(), outputs.len());
                for (k, (&(j, sink), g)) in outputs.iter().zip(&got).enumerate() {
                    let stored = fused::run_many(
                        &steps,
                        &[(&x, &dense), (&a, &dense), (&b, &row)],
                        n,
                        dtype,
                        &[(j, Sink::Store)],
                    )
                    .unwrap()
                    .remove(0);
                    let want = match sink {
                        Sink::Store => values(&stored),
                        // The GPU's sum of the stored values.
                        Sink::Sum => {
                            let l = Layout::contiguous(Shape::from([n]));
                            host(
                                &upload(&dev, &stored)
                                    .reduce(&l, ReduceOp::Sum, &[0])
                                    .unwrap(),
                            )
                        }
                    };
                    let got = host(g);
                    assert_eq!(
                        bits(&want),
                        bits(&got),
                        "{dtype} n {n} {outputs:?}: result {k}"
                    );
                }
            }
            let layouts = [&dense, &dense, &row];
            let outputs = [(3, store), (0, sum), (1, store)];
            let (_, _, source) = kernel_source_many(&steps, &layouts, dtype, &outputs);
            for line in [
                "out0[i] = v3;",
                "a1 = fz_add(a1, (double)v0);",
                "out2[i] = v1;",
            ] {
                assert!(source.contains(line), "{source}");
            }
            assert!(!source.contains("out3[i]"), "{source}");
            // No result, more than a kernel takes, or a step the chain lacks.
            for bad in [vec![], vec![(0, store); MAX_RESULTS + 1], vec![(4, sum)]] {
                assert!(
                    CudaStorage::run_fused_many(&steps, &leaves, n, dtype, &bad).is_err(),
                    "{bad:?}"
                );
            }
            // A step reading a later one: refused by the check the CPU runs too
            // (`cpu::fused::check_program`), before any source is compiled.
            let forward = [step(BinaryOp::Mul, Operand::Step(1), l0), steps[1].clone()];
            let err = CudaStorage::run_fused_many(&forward, &leaves, n, dtype, &[(1, store)]);
            assert!(
                err.is_err_and(|e| e.to_string().contains("reads")),
                "forward reference"
            );
        }
    }
}

// ---------------------------------------------------------------- every dtype

/// The elements' bit patterns, widened to u64 (NaNs compared by their bits).
fn bits(c: &CpuStorage) -> Vec<u64> {
    match c {
        CpuStorage::Bool(v) => v.iter().map(|&x| x as u64).collect(),
        CpuStorage::U8(v) => v.iter().map(|&x| x as u64).collect(),
        CpuStorage::I32(v) => v.iter().map(|&x| x as u32 as u64).collect(),
        CpuStorage::I64(v) => v.iter().map(|&x| x as u64).collect(),
        CpuStorage::F16(v) => v.iter().map(|x| x.to_bits() as u64).collect(),
        CpuStorage::BF16(v) => v.iter().map(|x| x.to_bits() as u64).collect(),
        CpuStorage::F32(v) => v.iter().map(|x| x.to_bits() as u64).collect(),
        CpuStorage::F64(v) => v.iter().map(|x| x.to_bits()).collect(),
    }
}

/// The whole buffer on the host.
fn download(g: &CudaStorage) -> CpuStorage {
    g.to_cpu(&Layout::contiguous(Shape::from([g.len()])))
        .unwrap()
}

/// `what`: the same dtype and bits, or a failure naming the first difference.
fn same_bits(what: &str, want: &CpuStorage, got: &CpuStorage) -> Result<(), String> {
    if want.dtype() != got.dtype() {
        return Err(format!(
            "{what}: dtype {}, expected {}",
            got.dtype(),
            want.dtype()
        ));
    }
    let (w, g) = (bits(want), bits(got));
    if w.len() != g.len() {
        return Err(format!(
            "{what}: {} elements, expected {}",
            g.len(),
            w.len()
        ));
    }
    match w.iter().zip(&g).position(|(a, b)| a != b) {
        None => Ok(()),
        Some(i) => Err(format!(
            "{what}: element {i} has the bits {:#x}, expected {:#x} ({} vs {})",
            g[i],
            w[i],
            values(got)[i],
            values(want)[i]
        )),
    }
}

/// Both results the same bits, or both errors with the same message.
fn same_outcome(
    what: &str,
    want: autograd_kernels::Result<CpuStorage>,
    got: autograd_kernels::Result<CudaStorage>,
) -> Result<(), String> {
    match (want, got) {
        (Ok(w), Ok(g)) => same_bits(what, &w, &download(&g)),
        (Err(w), Err(g)) if w.to_string() == g.to_string() => Ok(()),
        (Err(w), Err(g)) => Err(format!("{what}: the error `{g}`, expected `{w}`")),
        (Err(w), Ok(_)) => Err(format!("{what}: a result, expected the error `{w}`")),
        (Ok(_), Err(g)) => Err(format!("{what}: the error `{g}`, expected a result")),
    }
}

const INTEGERS: [DType; 4] = [DType::Bool, DType::U8, DType::I32, DType::I64];
const HALVES: [DType; 2] = [DType::F16, DType::BF16];

/// Values every conversion has an edge at: NaN, infinities, signed zeros, the
/// largest f16 (65504) and the tie above it (65520, which rounds to infinity),
/// ties that round to even in f16 and bf16 (1 + 2^-11, 1 + 3 * 2^-11, 1 + 2^-8,
/// 1 + 3 * 2^-8), f16 subnormals and a tie between them, values that truncate or
/// saturate in every integer type, and numbers beyond f32.
fn float_edges() -> Vec<f64> {
    let p = |e: i32| 2f64.powi(e);
    vec![
        f64::NAN,
        -f64::NAN,
        f64::INFINITY,
        f64::NEG_INFINITY,
        0.0,
        -0.0,
        1.0,
        -1.0,
        0.5,
        -0.5,
        -0.99,
        1.5,
        -1.5,
        2.7,
        -2.7,
        65504.0,
        65520.0,
        -65520.0,
        65519.0,
        1.0 + p(-11),
        1.0 + 3.0 * p(-11),
        1.0 + p(-8),
        1.0 + 3.0 * p(-8),
        -(1.0 + 3.0 * p(-8)),
        p(-24),
        p(-25),
        3.0 * p(-26),
        p(-14) - p(-24),
        1e-40,
        127.9,
        128.0,
        255.0,
        255.9,
        256.0,
        -129.0,
        300.0,
        -300.0,
        2147483647.0,
        2147483648.0,
        -2147483648.0,
        -2147483649.0,
        1e10,
        -1e10,
        9.3e18,
        -9.3e18,
        p(63),
        -p(63),
        3.0e38,
        1e300,
        -1e300,
    ]
}

/// Integers every conversion has an edge at (wrapping, saturating, rounding to
/// f32 and f16, i64 beyond 2^53).
fn integer_edges() -> Vec<i64> {
    vec![
        0,
        1,
        -1,
        2,
        127,
        128,
        -128,
        -129,
        255,
        256,
        257,
        -256,
        65504,
        65519,
        65520,
        65536,
        (1 << 24) + 1,
        (1 << 24) + 3,
        i32::MAX as i64,
        i32::MIN as i64,
        i32::MAX as i64 + 1,
        (1 << 53) + 1,
        (1 << 62) + 1,
        i64::MAX,
        i64::MIN,
        -(1 << 40) - 7,
    ]
}

/// The edge values in `dtype`, as the CPU converts them (floats from the float
/// edges, integers and bool from the integer ones, then both).
fn edges(dtype: DType) -> CpuStorage {
    let f = CpuStorage::F64(float_edges());
    let i = CpuStorage::I64(integer_edges());
    let all = |c: &CpuStorage| Layout::contiguous(Shape::from([c.len()]));
    let (a, b) = (
        f.cast(&all(&f), dtype).unwrap(),
        i.cast(&all(&i), dtype).unwrap(),
    );
    // Concatenated through f64 bits would lose nothing only for some dtypes:
    // join the two in the dtype itself.
    let n = a.len() + b.len();
    let mut out = CpuStorage::filled(n, dtype, 0.0).unwrap();
    a.copy_into(
        &all(&a),
        &mut out,
        &Layout::contiguous(Shape::from([a.len()])),
        false,
    )
    .unwrap();
    let tail = Layout::new(Shape::from([b.len()]), &[1], a.len()).unwrap();
    b.copy_into(&all(&b), &mut out, &tail, false).unwrap();
    out
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn every_dtype_round_trips_and_fills_as_on_the_cpu() {
    let dev = gpu();
    let (mut failures, mut total) = (vec![], 0);
    for dtype in DType::ALL {
        let c = edges(dtype);
        let g = upload(&dev, &c);
        assert_eq!(g.dtype(), dtype);
        total += 1;
        if let Err(e) = same_bits(&format!("{dtype} round trip"), &c, &download(&g)) {
            failures.push(e);
        }
        // A view: every other element from the third on.
        let l = Layout::new(Shape::from([10]), &[2], 3).unwrap();
        total += 1;
        if let Err(e) = same_bits(
            &format!("{dtype} strided view to the host"),
            &c.cast(&l, dtype).unwrap(),
            &g.to_cpu(&l).unwrap(),
        ) {
            failures.push(e);
        }
        // From a CPU view.
        let back = CudaStorage::from_cpu(&dev, &c, &l).unwrap();
        total += 1;
        if let Err(e) = same_bits(
            &format!("{dtype} strided view to the device"),
            &c.cast(&l, dtype).unwrap(),
            &download(&back),
        ) {
            failures.push(e);
        }
        for value in float_edges() {
            let want = CpuStorage::filled(5, dtype, value).unwrap();
            let got = CudaStorage::filled(&dev, 5, dtype, value).unwrap();
            total += 1;
            if let Err(e) = same_bits(
                &format!("fill {dtype} with {value}"),
                &want,
                &download(&got),
            ) {
                failures.push(e);
            }
        }
        // Empty buffers.
        let empty = CudaStorage::filled(&dev, 0, dtype, 1.0).unwrap();
        assert_eq!(download(&empty).len(), 0);
    }
    check_all(failures, total);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn every_cast_pair_matches_the_cpu_bit_for_bit() {
    let dev = gpu();
    let (mut failures, mut total) = (vec![], 0);
    for from in DType::ALL {
        let c = edges(from);
        let g = upload(&dev, &c);
        let n = c.len();
        let layouts = [
            ("contiguous", Layout::contiguous(Shape::from([n]))),
            (
                "strided",
                Layout::new(Shape::from([n / 2 - 1]), &[2], 1).unwrap(),
            ),
        ];
        for to in DType::ALL {
            for (view, l) in &layouts {
                total += 1;
                if let Err(e) = same_outcome(
                    &format!("cast {from} -> {to} ({view})"),
                    c.cast(l, to),
                    g.cast(l, to),
                ) {
                    failures.push(e);
                }
            }
        }
    }
    check_all(failures, total);
}

/// Where the CPU's conversion to f16 and bf16 (the `half` crate) drops low bits
/// before rounding (bf16 from f32 or f64; f16 from f64, through f32), the device
/// rounds the exact value to nearest even.
#[test]
#[ignore = "needs a CUDA GPU"]
fn casts_to_f16_and_bf16_round_the_exact_value_to_nearest_even() {
    use autograd_kernels::{bf16, f16};
    let dev = gpu();
    let p = |e: i32| 2f64.powi(e);
    let one = Layout::contiguous(Shape::from([1]));
    let cast = |c: CpuStorage, to: DType| download(&upload(&dev, &c).cast(&one, to).unwrap());
    // Just above the bf16 tie 1 + 2^-8 by one f32 ulp: rounds up.
    let x = (1.0 + p(-8) + p(-23)) as f32;
    assert_eq!(
        cast(CpuStorage::F32(vec![x]), DType::BF16),
        CpuStorage::BF16(vec![bf16::from_bits(0x3f81)])
    );
    // Just above the f16 tie 1 + 2^-11, by less than an f32 ulp: rounds up.
    let x = 1.0 + p(-11) + p(-40);
    assert_eq!(
        cast(CpuStorage::F64(vec![x]), DType::F16),
        CpuStorage::F16(vec![f16::from_bits(0x3c01)])
    );
    assert_eq!(
        cast(CpuStorage::F64(vec![x]), DType::BF16),
        CpuStorage::BF16(vec![bf16::from_bits(0x3f80)])
    );
    // Just below the tie: rounds down.
    let x = 1.0 + p(-8) - p(-40);
    assert_eq!(
        cast(CpuStorage::F64(vec![x]), DType::BF16),
        CpuStorage::BF16(vec![bf16::from_bits(0x3f80)])
    );
    // An i64 whose rounding bit is set and whose sticky bit is the lowest one.
    let i = (1i64 << 40) + (1 << 32) + 1;
    assert_eq!(
        cast(CpuStorage::I64(vec![i]), DType::BF16),
        CpuStorage::BF16(vec![bf16::from_f64(((1i64 << 40) + (1 << 33)) as f64)])
    );
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn copies_and_accumulating_copies_of_every_dtype_match_the_cpu() {
    let dev = gpu();
    let (mut failures, mut total) = (vec![], 0);
    let src_l = Layout::contiguous(Shape::from([4, 6]))
        .transpose(0, 1)
        .unwrap();
    // Destinations: a plain [6, 4] view at an offset, and one whose rows repeat (a
    // stride-0 axis: accumulating copies add up there).
    let plain = Layout::new(Shape::from([6, 4]), &[4, 1], 2).unwrap();
    let repeated = Layout::new(Shape::from([6, 4]), &[0, 1], 1).unwrap();
    for dtype in DType::ALL {
        let (lo, hi) = match dtype {
            DType::U8 | DType::Bool => (0.0, 250.0),
            _ => (-100.0, 100.0),
        };
        let src = data(24, 3, lo, hi, dtype);
        let src = if dtype == DType::Bool {
            data(24, 3, -1.0, 1.5, DType::I64)
                .cast(&Layout::contiguous(Shape::from([24])), DType::Bool)
                .unwrap()
        } else {
            src
        };
        let dst = data(30, 4, lo, hi, dtype);
        let gsrc = upload(&dev, &src);
        for (name, dl, accumulate) in [
            ("copy", &plain, false),
            ("accumulate", &plain, true),
            ("accumulate into repeats", &repeated, true),
        ] {
            let mut want = dst.clone();
            src.copy_into(&src_l, &mut want, dl, accumulate).unwrap();
            let mut got = upload(&dev, &dst);
            gsrc.copy_into(&src_l, &mut got, dl, accumulate).unwrap();
            let got = download(&got);
            total += 1;
            let what = format!("{name} {dtype}");
            let r = if accumulate && dl == &repeated && HALVES.contains(&dtype) {
                // The CPU rounds after each addition, the device once per sum.
                let tol = if dtype == DType::F16 { 4e-3 } else { 3e-2 };
                compare(&what, &values(&want), &values(&got), (tol, tol))
            } else {
                same_bits(&what, &want, &got)
            };
            if let Err(e) = r {
                failures.push(e);
            }
        }
    }
    check_all(failures, total);
}

/// Values for an integer or bool dtype: small ones that wrap when added in u8,
/// negative ones in the signed types, 0 and 1 for bool.
fn integer_data(n: usize, seed: u64, dtype: DType) -> CpuStorage {
    let (lo, hi) = match dtype {
        DType::Bool => (0.0, 2.0),
        DType::U8 => (0.0, 256.0),
        DType::I32 => (-3.0e9, 3.0e9),
        _ => (-9.0e18, 9.0e18),
    };
    let wide = data(n, seed, lo, hi, DType::I64);
    // Through i64, so that i32 wraps rather than saturates.
    wide.cast(&Layout::contiguous(Shape::from([n])), dtype)
        .unwrap()
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn integer_and_bool_ops_match_the_cpu_results_and_errors() {
    let dev = gpu();
    let (mut failures, mut total) = (vec![], 0);
    let mut unary = every_unary_op();
    unary.extend([
        UnaryOp::AddScalar(3.0),
        UnaryOp::AddScalar(-7.0),
        UnaryOp::MulScalar(-2.0),
        UnaryOp::MulScalar(1e6),
        UnaryOp::Fill(7.0),
        UnaryOp::Fill(-1.0),
    ]);
    for dtype in INTEGERS {
        for (view, len, l) in views() {
            let c = integer_data(len, 5, dtype);
            let g = upload(&dev, &c);
            for &op in &unary {
                total += 1;
                if let Err(e) = same_outcome(
                    &format!("{} {dtype} {view}", op.name()),
                    c.unary(&l, op),
                    g.unary(&l, op),
                ) {
                    failures.push(e);
                }
            }
            let rl = Layout::contiguous(l.shape().clone());
            let rc = integer_data(l.shape().numel(), 6, dtype);
            // Equal elements too, for the comparisons.
            let rc = if view == "contiguous" { c.clone() } else { rc };
            let rg = upload(&dev, &rc);
            for op in every_binary_op() {
                total += 1;
                if let Err(e) = same_outcome(
                    &format!("{} {dtype} {view}", op.name()),
                    c.binary(&l, &rc, &rl, op),
                    g.binary(&l, &rg, &rl, op),
                ) {
                    failures.push(e);
                }
                // In place, into a contiguous copy.
                let mut a = c.cast(&l, dtype).unwrap();
                let mut b = g.cast(&l, dtype).unwrap();
                let want = a.binary_assign(&rl, &rc, &rl, op).map(|_| a);
                let got = b.binary_assign(&rl, &rg, &rl, op).map(|_| b);
                total += 1;
                if let Err(e) =
                    same_outcome(&format!("{} in place {dtype} {view}", op.name()), want, got)
                {
                    failures.push(e);
                }
            }
            for op in every_reduce_op() {
                for axes in [&[0usize][..], &[1], &[2], &[0, 2], &[0, 1, 2]] {
                    total += 1;
                    if let Err(e) = same_outcome(
                        &format!("{} {dtype} {view} over {axes:?}", op.name()),
                        c.reduce(&l, op, axes),
                        g.reduce(&l, op, axes),
                    ) {
                        failures.push(e);
                    }
                }
            }
        }
        // Reductions split into chunks, whose partial results are i64.
        for (dims, axes) in [(vec![2, 20000], vec![1]), (vec![20000], vec![0])] {
            let n = dims.iter().product();
            let c = integer_data(n, 7, dtype);
            let g = upload(&dev, &c);
            let l = Layout::contiguous(Shape::from(&dims[..]));
            for op in every_reduce_op() {
                total += 1;
                if let Err(e) = same_outcome(
                    &format!("{} {dtype} {dims:?} over {axes:?}", op.name()),
                    c.reduce(&l, op, &axes),
                    g.reduce(&l, op, &axes),
                ) {
                    failures.push(e);
                }
            }
        }
        // matmul computes on floats only.
        let c = integer_data(4, 8, dtype);
        let g = upload(&dev, &c);
        let l = Layout::contiguous(Shape::from([2, 2]));
        total += 1;
        if let Err(e) = same_outcome(
            &format!("matmul {dtype}"),
            c.matmul(&l, &c, &l),
            g.matmul(&l, &g, &l),
        ) {
            failures.push(e);
        }
    }
    check_all(failures, total);
}

/// One f16 ulp at most apart (two for bf16's 8 bits), or the same NaN-ness.
fn half_tolerance(dtype: DType) -> (f64, f64) {
    match dtype {
        DType::F16 => (1e-3, 1e-4),
        _ => (8e-3, 1e-4),
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn f16_and_bf16_compute_in_f32_and_round_once_as_on_the_cpu() {
    let dev = gpu();
    let (mut failures, mut total) = (vec![], 0);
    for dtype in HALVES {
        for (view, len, l) in views() {
            for op in every_unary_op() {
                let (lo, hi) = domain(op.name());
                let c = data(len, 1, lo, hi, dtype);
                let g = upload(&dev, &c);
                let want = c.unary(&l, op).unwrap();
                let got = download(&g.unary(&l, op).unwrap());
                total += 1;
                // The f32 functions themselves differ in their last bits between
                // the CPU and the device (tests above): one rounding apart at most.
                let what = format!("{} {dtype} {view}", op.name());
                let r = same_bits(&what, &want, &got).or_else(|_| {
                    compare(&what, &values(&want), &values(&got), half_tolerance(dtype))
                });
                if let Err(e) = r {
                    failures.push(e);
                }
            }
            let c = data(len, 2, -2.0, 2.0, dtype);
            let g = upload(&dev, &c);
            let rl = Layout::contiguous(l.shape().clone());
            let rc = data(l.shape().numel(), 3, 0.5, 2.0, dtype);
            let rg = upload(&dev, &rc);
            for op in every_binary_op() {
                // Sums, products, quotients and comparisons are exact in f32 on
                // both: the same bits once rounded.
                total += 1;
                if let Err(e) = same_outcome(
                    &format!("{} {dtype} {view}", op.name()),
                    c.binary(&l, &rc, &rl, op),
                    g.binary(&l, &rg, &rl, op),
                ) {
                    failures.push(e);
                }
                let mut a = c.cast(&l, dtype).unwrap();
                let mut b = g.cast(&l, dtype).unwrap();
                let want = a.binary_assign(&rl, &rc, &rl, op).map(|_| a);
                let got = b.binary_assign(&rl, &rg, &rl, op).map(|_| b);
                total += 1;
                if let Err(e) =
                    same_outcome(&format!("{} in place {dtype} {view}", op.name()), want, got)
                {
                    failures.push(e);
                }
            }
            for op in every_reduce_op() {
                for axes in [&[0usize][..], &[1], &[0, 2], &[0, 1, 2]] {
                    let what = format!("{} {dtype} {view} over {axes:?}", op.name());
                    let want = c.reduce(&l, op, axes).unwrap();
                    let got = download(&g.reduce(&l, op, axes).unwrap());
                    total += 1;
                    let r = match op {
                        ReduceOp::Sum => {
                            compare(&what, &values(&want), &values(&got), half_tolerance(dtype))
                        }
                        _ => same_bits(&what, &want, &got),
                    };
                    if let Err(e) = r {
                        failures.push(e);
                    }
                }
            }
        }
        // Edge values through the arithmetic: NaN, infinities, signed zeros.
        let c = edges(dtype);
        let g = upload(&dev, &c);
        let l = Layout::contiguous(Shape::from([c.len()]));
        for op in [
            UnaryOp::Neg,
            UnaryOp::Copy,
            UnaryOp::MulScalar(0.5),
            UnaryOp::AddScalar(1.0),
        ] {
            total += 1;
            let what = format!("{} {dtype} edges", op.name());
            let want = c.unary(&l, op).unwrap();
            let got = download(&g.unary(&l, op).unwrap());
            // NVIDIA's f32 arithmetic returns the canonical NaN (0x7fffffff: no
            // sign, every payload bit set) whatever NaN goes in, where x86 keeps the
            // operand's sign and payload; a NaN is a NaN on both. Everything else,
            // signed zeros and infinities included, is compared bit for bit.
            let (wv, gv) = (values(&want), values(&got));
            let nan_as_nan = |s: &CpuStorage, v: &[f64]| -> Vec<u64> {
                bits(s)
                    .iter()
                    .zip(v)
                    .map(|(&b, x)| if x.is_nan() { u64::MAX } else { b })
                    .collect()
            };
            let (wb, gb) = (nan_as_nan(&want, &wv), nan_as_nan(&got, &gv));
            if let Some(i) = wb.iter().zip(&gb).position(|(a, b)| a != b) {
                failures.push(format!(
                    "{what}: element {i} has the bits {:#x}, expected {:#x} ({} vs {})",
                    bits(&got)[i],
                    bits(&want)[i],
                    gv[i],
                    wv[i]
                ));
            }
        }
        // Matrix products, through every operand layout's f32 product.
        for (m, k, n) in [(3, 5, 4), (1, 7, 1), (6, 2, 3)] {
            let a = data(m * k, 9, -1.0, 1.0, dtype);
            let b = data(k * n, 10, -1.0, 1.0, dtype);
            let (ga, gb) = (upload(&dev, &a), upload(&dev, &b));
            let la = Layout::contiguous(Shape::from([m, k]));
            let lb = Layout::contiguous(Shape::from([n, k]))
                .transpose(0, 1)
                .unwrap();
            let want = a.matmul(&la, &b, &lb).unwrap();
            let got = download(&ga.matmul(&la, &gb, &lb).unwrap());
            total += 1;
            if let Err(e) = compare(
                &format!("matmul {dtype} {m}x{k}x{n}"),
                &values(&want),
                &values(&got),
                half_tolerance(dtype),
            ) {
                failures.push(e);
            }
            assert_eq!(got.dtype(), dtype);
        }
        // Mixed dtypes stay an error.
        let f = upload(&dev, &data(4, 1, 0.0, 1.0, DType::F32));
        let h = upload(&dev, &data(4, 1, 0.0, 1.0, dtype));
        let l = Layout::contiguous(Shape::from([4]));
        assert!(h.binary(&l, &f, &l, BinaryOp::Add).is_err());
    }
    check_all(failures, total);
}

/// The checks above for every dtype, with every launch on the kernels' 64-bit
/// index path (the emulated suite's sizes otherwise all take the 32-bit one).
#[test]
#[cfg(feature = "cuda-emulator")]
fn every_dtype_matches_the_cpu_on_the_64_bit_index_path_too() {
    cuda::emu::with_64_bit_indices(|| {
        every_cast_pair_matches_the_cpu_bit_for_bit();
        copies_and_accumulating_copies_of_every_dtype_match_the_cpu();
        integer_and_bool_ops_match_the_cpu_results_and_errors();
    });
}
