//! The element-wise comparison of the GPU tests, shared by the kernel tests
//! (`kernels/tests/cuda_backend.rs`) and the whole-stack ones (`tests/gpu`, which
//! include this file by path).

/// `Ok` when every element of `got` is within `atol + rtol |want|` of `want`
/// (NaN matches NaN); `Err` describing the first element that is not.
pub fn compare(
    what: &str,
    want: &[f64],
    got: &[f64],
    (rtol, atol): (f64, f64),
) -> Result<(), String> {
    if want.len() != got.len() {
        return Err(format!(
            "{what}: {} elements, expected {}",
            got.len(),
            want.len()
        ));
    }
    for (i, (&w, &g)) in want.iter().zip(got).enumerate() {
        let same = (w.is_nan() && g.is_nan()) || w == g || (w - g).abs() <= atol + rtol * w.abs();
        if !same {
            return Err(format!("{what}: element {i} is {g}, expected {w}"));
        }
    }
    Ok(())
}
