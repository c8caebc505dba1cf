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

/// `case`'s inputs cast to `dtype` and moved to `device`; those the case
/// differentiates require grad.
pub fn case_inputs(case: &CheckCase, dtype: DType, device: Device) -> Result<Vec<Tensor>> {
    let mask = case
        .differentiable
        .clone()
        .unwrap_or_else(|| vec![true; case.inputs.len()]);
    case.inputs
        .iter()
        .zip(&mask)
        .map(|(x, &d)| {
            let x = compute::to_device(&compute::cast(x, dtype)?, device)?;
            Ok(x.with_requires_grad(d))
        })
        .collect()
}

/// Runs `bits` (a case's results as bits) on every registered op's check cases in
/// each of `dtypes`, with fusion off and with every op fused, and asserts that both
/// give the same bits (or the same error). Returns the number of comparisons.
pub fn same_bits_fused_and_not(
    dtypes: &[DType],
    bits: impl Fn(&CheckCase, DType) -> Result<Vec<Vec<u64>>>,
) -> usize {
    let mut compared = 0;
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
                        assert_eq!(
                            off, on,
                            "{} ({dtype}): fused and one by one differ",
                            case.label
                        );
                        compared += 1;
                    }
                    // (An op without a second derivative fails both ways alike.)
                    (Err(a), Err(b)) => assert_eq!(a.to_string(), b.to_string()),
                    (a, b) => panic!("{}: {:?} one by one, {:?} fused", case.label, a, b),
                }
            }
        }
    }
    compared
}

/// Values as their bits (f32 values widened to f64 exactly).
pub fn bits(v: Vec<f64>) -> Vec<u64> {
    v.into_iter().map(f64::to_bits).collect()
}
