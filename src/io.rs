//! Saving and loading named tensors in the safetensors format, the one PyTorch,
//! candle and burn users already share (`safetensors.torch.save_file` writes files
//! these functions read, and the other way round).
//!
//! ```
//! use autograd::prelude::*;
//!
//! # fn main() -> Result<()> {
//! let path = std::env::temp_dir().join(format!("doc-{}.safetensors", std::process::id()));
//! let w = Tensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.0], [2, 2])?;
//! let b = Tensor::from_vec(vec![0.5f64], [1])?;
//! autograd::save(&path, &[("w", &w), ("b", &b)])?;
//!
//! let loaded = autograd::load(&path)?;
//! assert_eq!(loaded[0].0, "b"); // sorted by name
//! assert_eq!(loaded[1].1.to_vec::<f32>()?, [1.0, 2.0, 3.0, 4.0]);
//!
//! // Into existing tensors (a model's parameters): names, shapes and dtypes checked.
//! let mut w2 = Tensor::zeros([2, 2], DType::F32)?.with_requires_grad(true);
//! autograd::load_into(&path, &mut [("w", &mut w2)])?;
//! assert_eq!(w2.to_vec::<f32>()?, [1.0, 2.0, 3.0, 4.0]);
//! # std::fs::remove_file(&path).ok();
//! # Ok(())
//! # }
//! ```

use crate::{DType, Device, Error, Result, Tensor};
use safetensors::tensor::{Dtype, SafeTensors, TensorView};
use std::path::Path;

fn file_error(path: &Path, msg: impl Into<String>) -> Error {
    Error::File {
        path: path.display().to_string(),
        msg: msg.into(),
    }
}

/// Writes `tensors` to `path` (created or replaced) as a safetensors file: each
/// under its name, with its shape and dtype, from whatever device it is on. An
/// error when two share a name, or the file cannot be written.
pub fn save(path: impl AsRef<Path>, tensors: &[(&str, &Tensor)]) -> Result<()> {
    let path = path.as_ref();
    let mut bytes: Vec<(String, Dtype, Vec<usize>, Vec<u8>)> = Vec::with_capacity(tensors.len());
    for &(name, t) in tensors {
        if bytes.iter().any(|(n, ..)| n == name) {
            return Err(file_error(
                path,
                format!("two tensors are named `{name}`: give each its own name"),
            ));
        }
        let (dtype, data) = match t.dtype() {
            DType::F32 => (
                Dtype::F32,
                t.to_vec::<f32>()?
                    .iter()
                    .flat_map(|v| v.to_le_bytes())
                    .collect(),
            ),
            DType::F64 => (
                Dtype::F64,
                t.to_vec::<f64>()?
                    .iter()
                    .flat_map(|v| v.to_le_bytes())
                    .collect(),
            ),
        };
        bytes.push((name.to_string(), dtype, t.dims().to_vec(), data));
    }
    let views = bytes
        .iter()
        .map(|(name, dtype, shape, data)| {
            TensorView::new(*dtype, shape.clone(), data)
                .map(|v| (name.clone(), v))
                .map_err(|e| file_error(path, format!("tensor `{name}`: {e}")))
        })
        .collect::<Result<Vec<_>>>()?;
    safetensors::serialize_to_file(views, None, path)
        .map_err(|e| file_error(path, format!("could not be written: {e}")))
}

/// Reads every tensor of the safetensors file at `path`, sorted by name, on the
/// CPU (move them with `to_device`). An error when the file cannot be read, is not
/// a safetensors file (or is truncated), or holds a dtype other than F32 and F64.
pub fn load(path: impl AsRef<Path>) -> Result<Vec<(String, Tensor)>> {
    let path = path.as_ref();
    let buffer =
        std::fs::read(path).map_err(|e| file_error(path, format!("could not be read: {e}")))?;
    let file = SafeTensors::deserialize(&buffer).map_err(|e| {
        file_error(
            path,
            format!("not a valid safetensors file (truncated or another format?): {e}"),
        )
    })?;
    let mut out = file
        .tensors()
        .into_iter()
        .map(|(name, view)| {
            let t = tensor_of(path, &name, &view)?;
            Ok((name, t))
        })
        .collect::<Result<Vec<_>>>()?;
    out.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(out)
}

/// Loads the named tensors of the file at `path` into `targets` (a model's
/// parameters, say), replacing their data as [`Tensor::set_data`] does (on their
/// device; gradients and graphs that saved them are unaffected). Every target must
/// be in the file with its shape and dtype; nothing is changed unless all are.
pub fn load_into(path: impl AsRef<Path>, targets: &mut [(&str, &mut Tensor)]) -> Result<()> {
    let path = path.as_ref();
    let found = load(path)?;
    let mut values = Vec::with_capacity(targets.len());
    for (name, target) in targets.iter() {
        let Some(i) = found.iter().position(|(n, _)| n == name) else {
            let names: Vec<&str> = found.iter().map(|(n, _)| n.as_str()).collect();
            return Err(file_error(
                path,
                format!("no tensor named `{name}`; the file holds {names:?}"),
            ));
        };
        let value = found[i].1.clone();
        if value.shape() != target.shape() || value.dtype() != target.dtype() {
            return Err(file_error(
                path,
                format!(
                    "tensor `{name}` is {} of shape {}, but its target is {} of shape {}: load it \
                     into a tensor of that shape and dtype (or `load` it and convert)",
                    value.dtype(),
                    value.shape(),
                    target.dtype(),
                    target.shape()
                ),
            ));
        }
        let device = target.device();
        values.push(if device == Device::Cpu {
            value
        } else {
            crate::compute::to_device(&value, device)?
        });
    }
    for ((_, target), value) in targets.iter_mut().zip(&values) {
        target.set_data(value)?;
    }
    Ok(())
}

/// The tensor a safetensors entry holds (little-endian F32 or F64).
fn tensor_of(path: &Path, name: &str, view: &TensorView<'_>) -> Result<Tensor> {
    let shape = view.shape().to_vec();
    let data = view.data();
    match view.dtype() {
        Dtype::F32 => Tensor::from_vec(
            data.chunks_exact(4)
                .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                .collect::<Vec<f32>>(),
            shape,
        ),
        Dtype::F64 => Tensor::from_vec(
            data.chunks_exact(8)
                .map(|b| f64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]))
                .collect::<Vec<f64>>(),
            shape,
        ),
        other => Err(file_error(
            path,
            format!(
                "tensor `{name}` is {other:?}; only F32 and F64 tensors can be loaded (convert it \
                 where it was written, e.g. `tensor.float()` in PyTorch)"
            ),
        )),
    }
}
