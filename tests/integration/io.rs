//! Saving and loading named tensors (safetensors): round trips in f32 and f64,
//! loading into existing tensors, and every kind of bad file as an error.

use autograd::prelude::*;
use autograd::{Error, load, load_into, save};
use std::path::PathBuf;

/// A fresh path in the temporary directory, removed when dropped.
struct TempFile(PathBuf);

impl TempFile {
    fn new(name: &str) -> TempFile {
        TempFile(std::env::temp_dir().join(format!(
            "autograd-io-{}-{name}.safetensors",
            std::process::id()
        )))
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        std::fs::remove_file(&self.0).ok();
    }
}

fn file_error(r: Result<impl std::fmt::Debug>, wanted: &str) {
    match r {
        Err(e @ Error::File { .. }) => {
            let msg = e.to_string();
            assert!(msg.contains(wanted), "{msg}");
        }
        other => panic!("expected a file error mentioning {wanted:?}, got {other:?}"),
    }
}

#[test]
fn tensors_round_trip_with_their_names_shapes_and_dtypes() -> Result<()> {
    crate::init();
    let f = TempFile::new("round-trip");
    let w = Rng::new(3).uniform([3, 4], -1.0, 1.0, DType::F32)?;
    // A view (transposed, offset) is saved as its values.
    let v = Rng::new(4)
        .uniform([4, 5], -1.0, 1.0, DType::F64)?
        .t()?
        .narrow(0, 1, 3)?;
    let s = Tensor::scalar(2.5f64);
    save(&f.0, &[("w", &w), ("view", &v), ("scalar", &s)])?;
    let loaded = load(&f.0)?;
    let names: Vec<&str> = loaded.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["scalar", "view", "w"]);
    for ((_, got), want) in loaded.iter().zip([&s, &v, &w]) {
        assert_eq!(got.shape(), want.shape());
        assert_eq!(got.dtype(), want.dtype());
        assert_eq!(got.to_vec::<f64>()?, want.to_vec::<f64>()?);
        assert_eq!(got.device(), Device::Cpu);
    }
    Ok(())
}

#[test]
fn loading_into_parameters_replaces_their_data_only_when_everything_fits() -> Result<()> {
    crate::init();
    let f = TempFile::new("into");
    let a = Tensor::from_vec(vec![1.0f32, 2.0], [2])?;
    let b = Tensor::from_vec(vec![3.0f64; 6], [2, 3])?;
    save(&f.0, &[("a", &a), ("b", &b)])?;
    let mut pa = Tensor::zeros([2], DType::F32)?.with_requires_grad(true);
    let mut pb = Tensor::zeros([2, 3], DType::F64)?.with_requires_grad(true);
    load_into(&f.0, &mut [("a", &mut pa), ("b", &mut pb)])?;
    assert_eq!(pa.to_vec::<f32>()?, [1.0, 2.0]);
    assert_eq!(pb.to_vec::<f64>()?, [3.0; 6]);
    assert!(pa.requires_grad(), "still a parameter");

    // A wrong shape, a wrong dtype, a missing name: errors naming the tensor, and
    // nothing changed (not even the targets listed before the bad one).
    let mut fresh = Tensor::zeros([2], DType::F32)?;
    let mut wrong_shape = Tensor::zeros([3, 2], DType::F64)?;
    file_error(
        load_into(&f.0, &mut [("a", &mut fresh), ("b", &mut wrong_shape)]),
        "tensor `b` is f64 of shape [2, 3], but its target is f64 of shape [3, 2]",
    );
    assert_eq!(fresh.to_vec::<f32>()?, [0.0, 0.0]);
    let mut wrong_dtype = Tensor::zeros([2], DType::F64)?;
    file_error(
        load_into(&f.0, &mut [("a", &mut wrong_dtype)]),
        "but its target is f64",
    );
    file_error(
        load_into(&f.0, &mut [("c", &mut fresh)]),
        "no tensor named `c`; the file holds [\"a\", \"b\"]",
    );
    Ok(())
}

#[test]
fn bad_files_are_errors_never_panics() -> Result<()> {
    crate::init();
    let f = TempFile::new("bad");
    // Missing.
    file_error(load(&f.0), "could not be read");
    // Not a safetensors file.
    std::fs::write(&f.0, b"definitely not tensors").unwrap();
    file_error(load(&f.0), "not a valid safetensors file");
    // Truncated: the header promises more data than there is.
    let x = Tensor::from_vec(vec![1.0f32; 100], [10, 10])?;
    save(&f.0, &[("x", &x)])?;
    let bytes = std::fs::read(&f.0).unwrap();
    for cut in [bytes.len() - 1, bytes.len() / 2, 10, 4] {
        std::fs::write(&f.0, &bytes[..cut]).unwrap();
        file_error(load(&f.0), "not a valid safetensors file");
    }
    // A dtype this library has no tensors of (written with the format's own crate).
    let ints: Vec<u8> = [1i16, 2, 3].iter().flat_map(|v| v.to_le_bytes()).collect();
    let view =
        safetensors::tensor::TensorView::new(safetensors::Dtype::I16, vec![3], &ints).unwrap();
    safetensors::serialize_to_file([("ids", view)], None, &f.0).unwrap();
    file_error(
        load(&f.0),
        "tensor `ids` is I16, a dtype this library does not hold",
    );
    // Two tensors under one name.
    file_error(
        save(&f.0, &[("x", &x), ("x", &x)]),
        "two tensors are named `x`",
    );
    // A directory where the file should go.
    file_error(
        save(std::env::temp_dir(), &[("x", &x)]),
        "could not be written",
    );
    Ok(())
}
