//! Every dtype: construction and conversion, PyTorch's promotion rules, what
//! integer and boolean tensors compute, f16/bf16 computing in f32 and rounding
//! once, gradients returning in their input's dtype, the rule that only floating
//! tensors require grad, and safetensors files of every dtype.

use autograd::prelude::*;
use autograd::{LoadOptions, ReduceOp, bf16, compute, f16, load, load_into, load_into_with, save};

/// A fresh path in the temporary directory, removed when dropped.
struct TempFile(std::path::PathBuf);

impl TempFile {
    fn new(name: &str) -> TempFile {
        TempFile(std::env::temp_dir().join(format!(
            "autograd-dtypes-{}-{name}.safetensors",
            std::process::id()
        )))
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        std::fs::remove_file(&self.0).ok();
    }
}

#[test]
fn every_dtype_builds_holds_and_converts() -> Result<()> {
    crate::init();
    for d in DType::ALL {
        let t = Tensor::arange(5, d)?;
        assert_eq!(t.dtype(), d);
        let back = t.to_vec::<f64>()?;
        let want: &[f64] = if d == DType::Bool {
            &[0.0, 1.0, 1.0, 1.0, 1.0]
        } else {
            &[0.0, 1.0, 2.0, 3.0, 4.0]
        };
        assert_eq!(back, want, "{d}");
        assert_eq!(Tensor::zeros([2, 3], d)?.dtype(), d);
        let host = match d {
            DType::Bool => size_of::<bool>(),
            DType::U8 => size_of::<u8>(),
            DType::I32 => size_of::<i32>(),
            DType::I64 => size_of::<i64>(),
            DType::F16 => size_of::<f16>(),
            DType::BF16 => size_of::<bf16>(),
            DType::F32 => size_of::<f32>(),
            DType::F64 => size_of::<f64>(),
        };
        assert_eq!(d.size_in_bytes(), host, "{d}");
        for to in DType::ALL {
            let c = t.to_dtype(to)?;
            assert_eq!(c.dtype(), to);
            assert_eq!(c.dims(), [5]);
        }
    }
    let ids = Tensor::from_vec(vec![(1i64 << 40) + 3, -7], [2])?;
    assert_eq!(ids.to_vec::<i64>()?, [(1i64 << 40) + 3, -7]);
    let h = Tensor::from_vec(vec![f16::from_f32(0.5), f16::MAX], [2])?;
    assert_eq!(h.to_vec::<f32>()?, [0.5, 65504.0]);
    let mask = Tensor::from_vec(vec![true, false, true], [3])?;
    assert_eq!(mask.to_vec::<i64>()?, [1, 0, 1]);
    // Conversions follow Rust's `as`: toward zero, saturating; wrapping between integers.
    let x = Tensor::from_vec(vec![-1.7f32, 2.9, 300.0, f32::NAN], [4])?;
    assert_eq!(x.to_dtype(DType::I64)?.to_vec::<i64>()?, [-1, 2, 300, 0]);
    assert_eq!(x.to_dtype(DType::U8)?.to_vec::<u8>()?, [0, 2, 255, 0]);
    let big = Tensor::from_vec(vec![257i64, -1], [2])?;
    assert_eq!(big.to_dtype(DType::U8)?.to_vec::<u8>()?, [1, 255]);
    Ok(())
}

#[test]
fn promotion_follows_pytorch_result_type() {
    use DType::*;
    // torch.result_type for two tensors of these dtypes.
    let table = [
        (Bool, Bool, Bool),
        (Bool, U8, U8),
        (U8, I32, I32),
        (I32, I64, I64),
        (I64, F16, F16),
        (U8, BF16, BF16),
        (F16, BF16, F32),
        (BF16, F32, F32),
        (F16, F64, F64),
        (F32, F64, F64),
        (Bool, F32, F32),
        (I64, F32, F32),
    ];
    for (a, b, want) in table {
        assert_eq!(DType::promote(a, b), want, "{a} with {b}");
        assert_eq!(DType::promote(b, a), want, "{b} with {a}");
    }
}

#[test]
fn mixed_operands_promote_and_each_gradient_keeps_its_dtype() -> Result<()> {
    crate::init();
    let a = Tensor::from_vec(vec![1.5f32, -2.0], [2])?.with_requires_grad(true);
    let b = Tensor::from_vec(vec![0.25f64, 4.0], [2])?.with_requires_grad(true);
    let y = (&a * &b)?;
    assert_eq!(y.dtype(), DType::F64);
    y.sum_all()?.backward()?;
    let (ga, gb) = (a.grad().unwrap(), b.grad().unwrap());
    assert_eq!((ga.dtype(), gb.dtype()), (DType::F32, DType::F64));
    assert_eq!(ga.to_vec::<f32>()?, [0.25, 4.0]);
    assert_eq!(gb.to_vec::<f64>()?, [1.5, -2.0]);

    // A float times a boolean mask: the mask promotes, and needs no gradient.
    let m = Tensor::from_vec(vec![true, false], [2])?;
    let x = Tensor::from_vec(vec![3.0f32, 5.0], [2])?.with_requires_grad(true);
    let z = (&x * &m)?;
    assert_eq!(z.dtype(), DType::F32);
    assert_eq!(z.to_vec::<f32>()?, [3.0, 0.0]);
    z.sum_all()?.backward()?;
    assert_eq!(x.grad().unwrap().to_vec::<f32>()?, [1.0, 0.0]);

    // Second order through a promotion: d²/da² of sum(a² · b) = 2b, back in f32.
    let a = Tensor::from_vec(vec![1.0f32, 2.0], [2])?.with_requires_grad(true);
    let b = Tensor::from_vec(vec![3.0f64, 5.0], [2])?;
    let y = ((&a * &a)? * &b)?.sum_all()?;
    let g = autograd::grad(
        &y,
        &[&a],
        autograd::BackwardOptions::default().create_graph(true),
    )?;
    let g = g[0].clone().unwrap();
    assert_eq!(g.dtype(), DType::F32);
    let gg = autograd::grad(&g.sum_all()?, &[&a], Default::default())?;
    assert_eq!(gg[0].clone().unwrap().to_vec::<f32>()?, [6.0, 10.0]);
    Ok(())
}

#[test]
fn integers_compute_exactly_and_float_functions_of_them_give_f32() -> Result<()> {
    crate::init();
    let a = Tensor::from_vec(vec![(1i64 << 60) + 1, 7], [2])?;
    let b = Tensor::from_vec(vec![1i64, 2], [2])?;
    assert_eq!((&a + &b)?.to_vec::<i64>()?, [(1i64 << 60) + 2, 9]);
    assert_eq!((&a * &b)?.dtype(), DType::I64);
    // True division of integers, as PyTorch's: f32.
    let q = (&b / &b)?;
    assert_eq!(
        (q.dtype(), q.to_vec::<f32>()?),
        (DType::F32, vec![1.0, 1.0])
    );
    assert_eq!(b.exp()?.dtype(), DType::F32);
    // An integer sum is exact and i64, a boolean sum counts.
    assert_eq!(a.sum_all()?.to_vec::<i64>()?, [(1i64 << 60) + 8]);
    let m = Tensor::from_vec(vec![true, true, false], [3])?;
    let count = compute::reduce(&m, ReduceOp::Sum, &[0], false)?;
    assert_eq!(
        (count.dtype(), count.to_vec::<i64>()?),
        (DType::I64, vec![2])
    );
    Ok(())
}

#[test]
fn halves_compute_in_f32_and_round_once_per_result() -> Result<()> {
    crate::init();
    let xs: Vec<f32> = (0..64).map(|i| (i as f32 * 0.37).sin() * 3.0).collect();
    for d in [DType::F16, DType::BF16] {
        let x = Tensor::from_vec(xs.clone(), [8, 8])?.to_dtype(d)?;
        let x32 = x.to_dtype(DType::F32)?;
        // Each result is the f32 result rounded once to the dtype.
        let checks: [(&str, Tensor, Tensor); 4] = [
            ("tanh", x.tanh()?, x32.tanh()?),
            ("mul", (&x * &x)?, (&x32 * &x32)?),
            ("matmul", x.matmul(&x)?, x32.matmul(&x32)?),
            ("sum", x.sum_all()?, x32.sum_all()?),
        ];
        for (what, got, want) in checks {
            assert_eq!(got.dtype(), d, "{what}");
            let want = want.to_dtype(d)?;
            assert_eq!(got.to_vec::<f32>()?, want.to_vec::<f32>()?, "{what} in {d}");
        }
        // Gradients flow in the dtype.
        let p = x.clone().with_requires_grad(true);
        (&p * &p)?.sum_all()?.backward()?;
        let g = p.grad().unwrap();
        assert_eq!(g.dtype(), d);
        let want = (&x32 * 2.0)?.to_dtype(d)?;
        assert_eq!(g.to_vec::<f32>()?, want.to_vec::<f32>()?);
    }
    Ok(())
}

#[test]
fn only_floating_tensors_require_grad() -> Result<()> {
    crate::init();
    let ids = Tensor::from_vec(vec![1i64, 2, 3], [3])?.with_requires_grad(true);
    let e = (&ids + &ids).unwrap_err().to_string();
    assert!(e.contains("i64") && e.contains("requires grad"), "{e}");
    assert!(e.contains("to_dtype"), "{e}");
    // A float index where an integer one belongs says how to convert it.
    let x = Tensor::from_vec(vec![1.0f32, 2.0, 3.0], [3])?;
    let bad = Tensor::from_vec(vec![0.0f32, 2.0], [2])?;
    let e = compute::indices("gather", &bad, 3).unwrap_err().to_string();
    assert!(e.contains("DType::I64"), "{e}");
    let good = Tensor::from_vec(vec![0i64, 2], [2])?;
    assert_eq!(compute::indices("gather", &good, x.numel())?, [0, 2]);
    Ok(())
}

#[test]
fn safetensors_files_hold_every_dtype() -> Result<()> {
    crate::init();
    let f = TempFile::new("every");
    let tensors: Vec<(String, Tensor)> = DType::ALL
        .iter()
        .map(|&d| Ok((format!("t_{d}"), Tensor::arange(6, d)?.reshape([2, 3])?)))
        .collect::<Result<_>>()?;
    let named: Vec<(&str, &Tensor)> = tensors.iter().map(|(n, t)| (n.as_str(), t)).collect();
    save(&f.0, &named)?;
    let loaded = load(&f.0)?;
    assert_eq!(loaded.len(), DType::ALL.len());
    for (name, t) in &loaded {
        let (_, want) = tensors.iter().find(|(n, _)| n == name).unwrap();
        assert_eq!(t.dtype(), want.dtype(), "{name}");
        assert_eq!(t.dims(), [2, 3]);
        assert_eq!(t.to_vec::<f64>()?, want.to_vec::<f64>()?, "{name}");
    }
    // The bytes are the format's: the safetensors crate reads them.
    let bytes = std::fs::read(&f.0).unwrap();
    let st = safetensors::SafeTensors::deserialize(&bytes).unwrap();
    let ids = st.tensor("t_i64").unwrap();
    assert_eq!(ids.dtype(), safetensors::Dtype::I64);
    assert_eq!(&ids.data()[8..16], &1i64.to_le_bytes());
    assert_eq!(
        st.tensor("t_bf16").unwrap().dtype(),
        safetensors::Dtype::BF16
    );
    assert_eq!(st.tensor("t_bool").unwrap().data(), &[0, 1, 1, 1, 1, 1]);
    Ok(())
}

#[test]
fn a_checkpoint_with_integer_buffers_loads_and_halves_convert_on_request() -> Result<()> {
    crate::init();
    let f = TempFile::new("checkpoint");
    // What published checkpoints hold: bf16 weights beside integer buffers.
    let w = Tensor::from_vec(vec![0.5f32, -1.25, 3.0, 1.0 / 3.0], [2, 2])?.to_dtype(DType::BF16)?;
    let pos = Tensor::from_vec(vec![0i64, 1, 2, 3], [1, 4])?;
    let batches = Tensor::from_vec(vec![1234i64], [])?;
    save(
        &f.0,
        &[
            ("w", &w),
            ("position_ids", &pos),
            ("num_batches_tracked", &batches),
        ],
    )?;
    // Into an f32 model: refused as it is (another dtype), converted on request.
    let mut w32 = Tensor::zeros([2, 2], DType::F32)?.with_requires_grad(true);
    let e = load_into(&f.0, &mut [("w", &mut w32)])
        .unwrap_err()
        .to_string();
    assert!(e.contains("convert_dtypes"), "{e}");
    assert_eq!(w32.to_vec::<f32>()?, [0.0; 4], "nothing written on error");
    let mut pos_t = Tensor::zeros([1, 4], DType::I64)?;
    load_into_with(
        &f.0,
        &mut [("w", &mut w32), ("position_ids", &mut pos_t)],
        &LoadOptions {
            convert_dtypes: true,
        },
    )?;
    assert_eq!(w32.dtype(), DType::F32);
    assert!(w32.requires_grad());
    assert_eq!(w32.to_vec::<f32>()?, w.to_vec::<f32>()?);
    assert_eq!(w32.to_vec::<f32>()?[3], bf16::from_f32(1.0 / 3.0).to_f32());
    assert_eq!(pos_t.to_vec::<i64>()?, [0, 1, 2, 3]);
    // A dtype this library does not hold is named, with the ones it does.
    let shorts: Vec<u8> = [1i16, 2].iter().flat_map(|v| v.to_le_bytes()).collect();
    let view =
        safetensors::tensor::TensorView::new(safetensors::Dtype::I16, vec![2], &shorts).unwrap();
    safetensors::serialize_to_file([("s", view)], None, &f.0).unwrap();
    let e = load(&f.0).unwrap_err().to_string();
    assert!(e.contains("I16") && e.contains("BF16"), "{e}");
    Ok(())
}
