//! Check cases run outside gradcheck, shared by the integration and GPU tests: a
//! case's inputs in a dtype on a device, and the comparison of every registered
//! op's cases with fusion on and off.

use autograd::fusion::{FusionConfig, with_config};
use autograd::prelude::*;
use autograd::{CheckCase, compute, registry};

/// Every elementwise op of any size defers.
pub const FUSE_ALL: FusionConfig = FusionConfig {
    enabled: true,
    min_elements: 1,
};

/// `case`'s floating inputs cast to `dtype` and moved to `device`; those the case
/// differentiates require grad. Integer and boolean inputs (indices, class
/// targets, masks) keep their dtype and stay on the host, where the ops read
/// them whatever the data's device.
pub fn case_inputs(case: &CheckCase, dtype: DType, device: Device) -> Result<Vec<Tensor>> {
    let mask = case
        .differentiable
        .clone()
        .unwrap_or_else(|| vec![true; case.inputs.len()]);
    case.inputs
        .iter()
        .zip(&mask)
        .map(|(x, &d)| {
            if !x.dtype().is_float() {
                return Ok(x.clone());
            }
            let x = compute::to_device(&compute::cast(x, dtype)?, device)?;
            Ok(x.with_requires_grad(d))
        })
        .collect()
}

/// Runs `bits` (a case's results as bits) on every registered op's check cases in
/// each of `dtypes`, with fusion off and with every op fused, and asserts that both
/// give the same bits (or the same error). Every mismatch is listed, with how many
/// elements differ and by how many units in the last place, before the assertion
/// fails: on a device the first one alone says little. Returns the number of
/// comparisons.
pub fn same_bits_fused_and_not(
    dtypes: &[DType],
    bits: impl Fn(&CheckCase, DType) -> Result<Vec<Vec<u64>>>,
) -> usize {
    let mut compared = 0;
    let mut mismatches = Vec::new();
    for entry in registry().expect("registry") {
        let Some(cases) = entry.check_cases else {
            continue;
        };
        for case in cases() {
            for &dtype in dtypes {
                let off = with_config(FusionConfig::OFF, || bits(&case, dtype));
                let on = with_config(FUSE_ALL, || bits(&case, dtype));
                match (off, on) {
                    (Ok(off), Ok(on)) => {
                        if off != on {
                            mismatches.push(format!(
                                "{} ({dtype}): {}",
                                case.label,
                                describe_difference(&off, &on, dtype)
                            ));
                        }
                        compared += 1;
                    }
                    // (An op without a second derivative fails both ways alike.)
                    (Err(a), Err(b)) if a.to_string() == b.to_string() => {}
                    (a, b) => mismatches.push(format!(
                        "{} ({dtype}): {a:?} one by one, {b:?} fused",
                        case.label
                    )),
                }
            }
        }
    }
    assert!(
        mismatches.is_empty(),
        "fused and one by one differ in {} of {compared} comparisons:\n{}",
        mismatches.len(),
        mismatches.join("\n")
    );
    compared
}

/// How two runs' results (output, then each gradient, as bits) differ: per result
/// that differs, the elements that do and the largest distance in units in the
/// last place of `dtype`.
pub fn describe_difference(a: &[Vec<u64>], b: &[Vec<u64>], dtype: DType) -> String {
    if a.len() != b.len() {
        return format!("{} results one by one, {} fused", a.len(), b.len());
    }
    let mut parts = Vec::new();
    for (k, (x, y)) in a.iter().zip(b).enumerate() {
        if x == y {
            continue;
        }
        let what = if k == 0 {
            "output".to_string()
        } else {
            format!("gradient {k}")
        };
        if x.len() != y.len() {
            parts.push(format!("{what}: {} elements against {}", x.len(), y.len()));
            continue;
        }
        let (mut count, mut worst, mut first) = (0, 0u64, None);
        for (i, (&p, &q)) in x.iter().zip(y).enumerate() {
            if p != q {
                count += 1;
                worst = worst.max(ulps(p, q, dtype));
                first.get_or_insert(i);
            }
        }
        let i = first.unwrap_or(0);
        parts.push(format!(
            "{what}: {count} of {} elements differ, up to {worst} ulp (first at {i}: {} one by one, {} fused)",
            x.len(),
            f64::from_bits(x[i]),
            f64::from_bits(y[i])
        ));
    }
    parts.join("; ")
}

/// The distance between two values (bits of f64s; f32 values widened exactly) in
/// units in the last place of `dtype`; NaNs of either sign are one value.
pub fn ulps(a: u64, b: u64, dtype: DType) -> u64 {
    let (a, b) = (f64::from_bits(a), f64::from_bits(b));
    if a.is_nan() && b.is_nan() {
        return 0;
    }
    if a.is_nan() || b.is_nan() {
        return u64::MAX;
    }
    // Ordered integers: adjacent floats are adjacent integers, across zero too.
    fn ordered64(v: f64) -> i128 {
        let i = v.to_bits() as i64;
        (if i < 0 { i64::MIN - i } else { i }) as i128
    }
    fn ordered32(v: f32) -> i128 {
        let i = v.to_bits() as i32;
        (if i < 0 { i32::MIN - i } else { i }) as i128
    }
    let d = if dtype == DType::F32 {
        ordered32(a as f32) - ordered32(b as f32)
    } else {
        ordered64(a) - ordered64(b)
    };
    d.unsigned_abs().min(u64::MAX as u128) as u64
}

/// Values as their bits (f32 values widened to f64 exactly).
pub fn bits(v: Vec<f64>) -> Vec<u64> {
    v.into_iter().map(f64::to_bits).collect()
}
