//! Sizes the machine cannot hold are errors (never an abort), `Display` of a huge
//! view reads only what it shows, and the public lower-level types (`Layout`,
//! `Shape`, CPU storage, `compute::pad_narrow`) refuse bad arguments with errors,
//! not panics.
//!
//! The allocations that must fail ask for at least 4 TiB (2^42 bytes): more than
//! RAM and swap of any machine these tests run on, which Linux's default
//! overcommit heuristic refuses outright, so nothing is ever touched.

use autograd::prelude::*;
use autograd::{Error, Layout, Shape, compute, memory, random::Rng};

/// The message of `result`'s error, checked to name every string in `mentions`.
fn message<T: std::fmt::Debug>(result: Result<T>, mentions: &[&str]) -> String {
    let msg = result.expect_err("expected an error").to_string();
    for m in mentions {
        assert!(msg.contains(m), "error does not mention {m}: {msg}");
    }
    msg
}

/// `(op, shape, bytes)` of an out-of-memory error (through `InOp` wrappers).
fn out_of_memory<T: std::fmt::Debug>(result: Result<T>) -> (&'static str, Shape, usize) {
    match result.expect_err("expected an error").root_cause() {
        Error::OutOfMemory {
            op, shape, bytes, ..
        } => (*op, shape.clone(), *bytes),
        e => panic!("expected an out-of-memory error, got {e:?}"),
    }
}

fn live_bytes() -> isize {
    memory::thread_stats(Device::Cpu).live_bytes
}

#[test]
fn zeros_too_large_is_an_error() -> Result<()> {
    crate::init();
    let before = live_bytes();
    // 2^40 f32 elements, 4 TiB: this aborted the process.
    let r = Tensor::zeros([1 << 40], DType::F32);
    let (op, shape, bytes) = out_of_memory(r.clone());
    assert_eq!(
        (op, shape, bytes),
        ("Tensor::zeros", Shape::from([1 << 40]), 1 << 42)
    );
    message(
        r,
        &[
            "`Tensor::zeros`",
            "out of memory",
            "[1099511627776]",
            "f32",
            "4398046511104 bytes",
            "smaller",
        ],
    );
    assert_eq!(
        out_of_memory(Tensor::ones([1 << 40], DType::F64)).0,
        "Tensor::ones"
    );
    let r = Tensor::full([1 << 20, 1 << 20], 0.5, DType::F32);
    assert_eq!(out_of_memory(r).0, "Tensor::full");
    // A size in bytes past isize::MAX is refused before any allocation.
    message(
        Tensor::zeros([1 << 62], DType::F64),
        &["`Tensor::zeros`", "[4611686018427387904]"],
    );
    // Nothing was counted as allocated, and small tensors still work.
    assert_eq!(live_bytes(), before);
    assert_eq!(Tensor::zeros([2], DType::F32)?.to_vec::<f32>()?, [0.0; 2]);
    Ok(())
}

#[test]
fn arange_too_large_is_an_error() -> Result<()> {
    crate::init();
    // Was "capacity overflow" (a panic): the f64 values were collected first.
    message(
        Tensor::arange(usize::MAX, DType::F32),
        &["`Tensor::arange`", "f32", "[18446744073709551615]"],
    );
    let (op, _, bytes) = out_of_memory(Tensor::arange(1 << 40, DType::F32));
    assert_eq!((op, bytes), ("Tensor::arange", 1 << 42));
    // The values are the ones arange always gave.
    assert_eq!(
        Tensor::arange(5, DType::F32)?.to_vec::<f32>()?,
        [0.0, 1.0, 2.0, 3.0, 4.0]
    );
    assert_eq!(Tensor::arange(0, DType::F64)?.dims(), &[0]);
    Ok(())
}

#[test]
fn random_tensors_too_large_are_errors() -> Result<()> {
    crate::init();
    // 2^60 f32 passed the size check for f32, then 2^60 f64 were allocated:
    // "capacity overflow". The buffer is now allocated in the dtype checked.
    let (op, shape, bytes) = out_of_memory(Rng::new(0).uniform([1 << 60], 0.0, 1.0, DType::F32));
    assert_eq!(
        (op, shape, bytes),
        ("Rng::uniform", Shape::from([1 << 60]), 1 << 62)
    );
    let r = Rng::new(0).normal([1 << 60], 0.0, 1.0, DType::F32);
    message(r, &["`Rng::normal`", "[1152921504606846976]"]);
    message(
        Rng::new(0).uniform([1 << 61], 0.0, 1.0, DType::F64),
        &["`Rng::uniform`", "f64"],
    );
    // The same seed still gives the same values in either dtype.
    let a = Rng::new(7).uniform([5], -1.0, 1.0, DType::F64)?;
    let b = Rng::new(7).uniform([5], -1.0, 1.0, DType::F32)?;
    let a32: Vec<f32> = a.to_vec::<f64>()?.iter().map(|&v| v as f32).collect();
    assert_eq!(b.to_vec::<f32>()?, a32);
    Ok(())
}

#[test]
fn pad_too_large_is_an_error() -> Result<()> {
    crate::init();
    let x = Tensor::from_slice(&[1.0f32, 2.0], [2])?.with_requires_grad(true);
    let before = live_bytes();
    let r = x.pad(0, 1 << 40, 0);
    let (_, shape, bytes) = out_of_memory(r.clone());
    assert_eq!(
        (shape, bytes),
        (Shape::from([(1 << 40) + 2]), ((1 << 40) + 2) * 4)
    );
    message(r, &["`pad`", "out of memory", "[1099511627778]"]);
    assert_eq!(live_bytes(), before);
    assert_eq!(x.pad(0, 1, 2)?.to_vec::<f32>()?, [0.0, 1.0, 2.0, 0.0, 0.0]);
    Ok(())
}

#[test]
fn broadcast_add_too_large_is_an_error() -> Result<()> {
    crate::init();
    let a = Tensor::zeros([1 << 20, 1], DType::F32)?.with_requires_grad(true);
    let b = Tensor::zeros([1, 1 << 20], DType::F32)?;
    let before = live_bytes();
    // [2^20, 1] + [1, 2^20]: 2^40 results.
    let r = &a + &b;
    let (op, shape, bytes) = out_of_memory(r.clone());
    assert_eq!(
        (op, shape, bytes),
        ("add", Shape::from([1 << 20, 1 << 20]), 1 << 42)
    );
    message(r, &["`add`", "[1048576, 1048576]", "f32", "cpu"]);
    for r in [&a * &b, a.maximum(&b), &b - &a] {
        assert!(matches!(
            r.unwrap_err().root_cause(),
            Error::OutOfMemory { .. }
        ));
    }
    assert_eq!(live_bytes(), before);
    Ok(())
}

/// `Display` as it was: every element converted, sixteen shown.
fn display_of_every_element(t: &Tensor) -> Result<String> {
    let v = t.to_vec::<f64>()?;
    let shown: Vec<String> = v.iter().take(16).map(|x| x.to_string()).collect();
    let more = if v.len() > 16 {
        format!(", .. ({} more)", v.len() - 16)
    } else {
        String::new()
    };
    Ok(format!(
        "Tensor{} {} [{}{more}]",
        t.shape(),
        t.dtype(),
        shown.join(", ")
    ))
}

#[test]
fn display_of_huge_broadcast_view() -> Result<()> {
    crate::init();
    // 2^40 elements, one in storage: Display converted all of them (an abort).
    let v = Tensor::scalar(1.0f32).broadcast_to([1 << 32, 1 << 8])?;
    let ones = vec!["1"; 16].join(", ");
    assert_eq!(
        v.to_string(),
        format!("Tensor[4294967296, 256] f32 [{ones}, .. (1099511627760 more)]")
    );
    // The first 16 of 6 * 2^40 elements span rows of 3: read as 6 rows of one view.
    let rows = Tensor::arange(6, DType::F32)?
        .reshape([2, 1, 3])?
        .broadcast_to([2, 1 << 40, 3])?;
    assert_eq!(
        rows.to_string(),
        "Tensor[2, 1099511627776, 3] f32 [0, 1, 2, 0, 1, 2, 0, 1, 2, 0, 1, 2, 0, 1, 2, 0, \
         .. (6597069766640 more)]"
    );
    Ok(())
}

#[test]
fn display_is_unchanged_for_small_tensors_and_views() -> Result<()> {
    crate::init();
    let x = Tensor::arange(120, DType::F32)?;
    let mut cases = vec![
        Tensor::scalar(2.5f64),
        Tensor::zeros([0, 3], DType::F32)?,
        Tensor::from_slice(&[1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0], [2, 3])?,
        x.clone(),
    ];
    for dims in [
        &[120][..],
        &[2, 3, 4, 5],
        &[4, 30],
        &[30, 4],
        &[15, 1, 8],
        &[2, 2, 2, 15],
    ] {
        let t = x.reshape(dims)?;
        cases.push(t.narrow(0, 1, dims[0] - 1)?);
        let reversed: Vec<usize> = (0..dims.len()).rev().collect();
        cases.push(t.permute(&reversed)?);
        cases.push(t.clone());
    }
    cases.push(x.reshape([8, 15])?.narrow(1, 3, 5)?); // 40 elements, row stride 15
    cases.push(x.reshape([120, 1])?.broadcast_to([120, 3])?);
    for t in &cases {
        assert_eq!(t.to_string(), display_of_every_element(t)?, "{t:?}");
    }
    assert_eq!(cases[2].to_string(), "Tensor[2, 3] f32 [1, 2, 3, 4, 5, 6]");
    Ok(())
}

#[test]
fn pad_narrow_rank_mismatch_is_an_error() -> Result<()> {
    crate::init();
    let x = Tensor::from_slice(&[1.0f64, 2.0, 3.0], [3])?;
    // Axis 1 of the result, which x (rank 1) does not have: an index out of bounds.
    message(
        compute::pad_narrow(&x, &Shape::from([2, 5]), 1, 0),
        &["`pad_narrow`", "[3]", "[2, 5]"],
    );
    // Same rank, another size off the padded axis; an axis neither has; too far.
    let m = Tensor::zeros([2, 3], DType::F64)?;
    message(
        compute::pad_narrow(&m, &Shape::from([3, 5]), 1, 0),
        &["[2, 3]", "[3, 5]"],
    );
    assert!(compute::pad_narrow(&m, &Shape::from([2, 5]), 2, 0).is_err());
    assert!(compute::pad_narrow(&m, &Shape::from([2, 5]), 1, 3).is_err());
    assert!(compute::pad_narrow(&m, &Shape::from([2, 5]), 1, usize::MAX).is_err());
    let padded = compute::pad_narrow(&x, &Shape::from([5]), 0, 1)?;
    assert_eq!(padded.to_vec::<f64>()?, [0.0, 1.0, 2.0, 3.0, 0.0]);
    Ok(())
}

#[test]
fn layout_new_wrong_strides_is_an_error() -> Result<()> {
    // A debug_assert: a panic in debug builds, a layout kernels index past its
    // strides in release builds.
    let e = Layout::new(Shape::from([2, 3]), &[1], 0).unwrap_err();
    assert!(e.to_string().contains("`Layout::new`"), "{e}");
    assert!(e.to_string().contains("[2, 3]"), "{e}");
    let e = Error::from(e);
    assert!(
        matches!(
            e,
            Error::InvalidArgument {
                op: "Layout::new",
                ..
            }
        ),
        "{e}"
    );
    assert!(Layout::new(Shape::from([2, 3]), &[3, 1], 0)?.is_contiguous());
    Ok(())
}

#[test]
fn layout_transpose_and_narrow_out_of_range_are_errors() -> Result<()> {
    let l = Layout::contiguous(Shape::from([2, 3]));
    let e = l.transpose(1, 2).unwrap_err().to_string();
    assert!(
        e.contains("`Layout::transpose`") && e.contains("axis 2"),
        "{e}"
    );
    let e = l.narrow(1, 2, 5).unwrap_err().to_string();
    assert!(e.contains("`Layout::narrow`") && e.contains("2..7"), "{e}");
    assert!(l.narrow(4, 0, 1).is_err());
    assert!(l.permute(&[1, 1]).is_err());
    assert!(l.unsqueeze(5).is_err());
    assert!(l.squeeze(7).is_err());
    assert_eq!(l.transpose(0, 1)?.shape(), &Shape::from([3, 2]));
    Ok(())
}

#[test]
fn cpu_storage_to_vec_past_the_buffer_is_an_error() -> Result<()> {
    let x = Tensor::from_slice(&[1.0f32, 2.0, 3.0], [3])?;
    let storage = x.storage();
    let cpu = storage.as_cpu().expect("a CPU tensor");
    // A view of 4 elements over a buffer of 3: an index out of bounds.
    let e = cpu
        .to_vec::<f32>(&Layout::contiguous(Shape::from([4])))
        .unwrap_err();
    assert!(e.to_string().contains("buffer of 3 elements"), "{e}");
    let every_other = Layout::new(Shape::from([2]), &[2], 0)?;
    assert_eq!(cpu.to_vec::<f64>(&every_other)?, [1.0, 3.0]);
    Ok(())
}

#[test]
fn shape_numel_overflow_and_remove_out_of_range() {
    // numel multiplied with overflow checks on (a panic in debug builds).
    let huge = Shape::from([1 << 32, 1 << 32, 2]);
    assert_eq!(huge.numel(), usize::MAX);
    assert_eq!(huge.checked_numel(), None);
    assert_eq!(Shape::from([1 << 40, 1 << 40, 0]).numel(), 0);
    assert_eq!(Shape::from([2, 3]).checked_numel(), Some(6));
    // remove out of range was a panic.
    let mut s = Shape::from([2, 3]);
    let e = s.remove(5).unwrap_err().to_string();
    assert!(e.contains("`Shape::remove`") && e.contains("[2, 3]"), "{e}");
    assert_eq!(s.remove(1), Ok(3));
    assert_eq!(s, Shape::from([2]));
}
