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
//!
//! The values stream between the file and the tensors: `save` writes a tensor on
//! the CPU from its own buffer (it copies only views and tensors on another
//! device), `load` reads each tensor straight into its buffer. No function here
//! holds the file in memory, and every buffer is allocated fallibly: one that
//! cannot be is [`Error::OutOfMemory`], never an abort.

use crate::{DType, Device, Error, Result, Shape, Tensor};
use safetensors::Dtype;
use safetensors::tensor::{Metadata, TensorInfo};
use std::fs::File;
use std::io::{BufWriter, Read, Seek, SeekFrom, Write};
use std::path::Path;

/// The key the safetensors header keeps for the file's own metadata (free-form
/// strings): no tensor can be stored under it.
const RESERVED: &str = "__metadata__";

/// The largest header the safetensors crate reads (and writes), in bytes.
const MAX_HEADER: usize = 100_000_000;

/// Bytes moved between file and tensor at a time (on the stack).
const CHUNK: usize = 1 << 16;

fn file_error(path: &Path, msg: impl Into<String>) -> Error {
    Error::File {
        path: path.display().to_string(),
        msg: msg.into(),
    }
}

fn not_safetensors(path: &Path, why: impl std::fmt::Display) -> Error {
    file_error(
        path,
        format!("not a valid safetensors file (truncated or another format?): {why}"),
    )
}

/// Writes `tensors` to `path` (created or replaced) as a safetensors file: each
/// under its name, with its shape and dtype, from whatever device it is on.
///
/// Everything that can be checked is checked before the file is opened, and on
/// any such error nothing is written (no file created, an existing one left as it
/// was): two tensors sharing a name, a name the format reserves (`__metadata__`,
/// where the header keeps the file's metadata), and a copy that does not fit in
/// memory ([`Error::OutOfMemory`]). Only views and tensors on another device are
/// copied (to the CPU, all before the file is opened); a contiguous tensor on the
/// CPU is written from its own buffer. An error also when the file cannot be
/// written (then, as with any write that fails part way, what was written stays).
pub fn save(path: impl AsRef<Path>, tensors: &[(&str, &Tensor)]) -> Result<()> {
    let path = path.as_ref();
    for (i, &(name, _)) in tensors.iter().enumerate() {
        if name == RESERVED {
            return Err(file_error(
                path,
                format!(
                    "the tensor name `{name}` is reserved: the safetensors header keeps the \
                     file's metadata under it, so the file could not be read back; rename the \
                     tensor"
                ),
            ));
        }
        if tensors[..i].iter().any(|&(n, _)| n == name) {
            return Err(file_error(
                path,
                format!("two tensors are named `{name}`: give each its own name"),
            ));
        }
    }
    // The values of each, contiguous on the CPU.
    let mut entries = tensors
        .iter()
        .map(|&(name, t)| Ok((name, on_host(t)?)))
        .collect::<Result<Vec<_>>>()?;
    // The order of the safetensors crate's own writer (the same bytes as it writes):
    // wider elements first (F64 before F32), then by name.
    entries.sort_by(|(a, ta), (b, tb)| {
        dtype_of(tb.dtype())
            .cmp(&dtype_of(ta.dtype()))
            .then(a.cmp(b))
    });
    let header = header(path, &entries)?;

    let file =
        File::create(path).map_err(|e| file_error(path, format!("could not be written: {e}")))?;
    let mut out = BufWriter::new(file);
    let write = |e: std::io::Error| file_error(path, format!("could not be written: {e}"));
    out.write_all(&(header.len() as u64).to_le_bytes())
        .map_err(write)?;
    out.write_all(&header).map_err(write)?;
    for (_, t) in &entries {
        if t.numel() == 0 {
            continue;
        }
        let storage = t.storage();
        let cpu = storage
            .as_cpu()
            .ok_or_else(|| file_error(path, "a tensor's values are not on the CPU"))?;
        let range = t.layout().offset()..t.layout().offset() + t.numel();
        autograd_core::with_dtype!(t.dtype(), T => write_le(
            &mut out,
            cpu.as_slice::<T>().and_then(|s| s.get(range)),
            <T as Le<{ size_of::<T>() }>>::to_le,
        ))
        .map_err(write)?;
    }
    out.flush().map_err(write)
}

/// `t`'s values contiguous on the CPU, computed if deferred: `t` itself when they
/// are already (no copy), else a copy ([`Error::OutOfMemory`] when it cannot be
/// allocated).
fn on_host(t: &Tensor) -> Result<Tensor> {
    if t.device() == Device::Cpu && t.is_contiguous() {
        t.realize()?;
        return Ok(t.clone());
    }
    autograd_core::with_dtype!(t.dtype(), T => Tensor::from_vec(t.to_vec::<T>()?, t.dims()))
}

fn dtype_of(dtype: DType) -> Dtype {
    match dtype {
        DType::Bool => Dtype::BOOL,
        DType::U8 => Dtype::U8,
        DType::I32 => Dtype::I32,
        DType::I64 => Dtype::I64,
        DType::F16 => Dtype::F16,
        DType::BF16 => Dtype::BF16,
        DType::F32 => Dtype::F32,
        DType::F64 => Dtype::F64,
    }
}

/// An element's little-endian bytes, as safetensors stores them (`bool` as one
/// byte, 0 or 1).
trait Le<const N: usize>: Sized {
    fn to_le(self) -> [u8; N];
    fn from_le(b: [u8; N]) -> Self;
}

macro_rules! le {
    ($($t:ty),*) => {$(
        impl Le<{ size_of::<$t>() }> for $t {
            fn to_le(self) -> [u8; size_of::<$t>()] {
                self.to_le_bytes()
            }
            fn from_le(b: [u8; size_of::<$t>()]) -> Self {
                <$t>::from_le_bytes(b)
            }
        }
    )*};
}
le!(
    u8,
    i32,
    i64,
    autograd_core::f16,
    autograd_core::bf16,
    f32,
    f64
);

impl Le<1> for bool {
    fn to_le(self) -> [u8; 1] {
        [self as u8]
    }
    fn from_le(b: [u8; 1]) -> Self {
        b[0] != 0
    }
}

/// The JSON header describing `entries`, laid out one after the other in that
/// order, padded with spaces to a multiple of 8 bytes (as the format's crate does).
fn header(path: &Path, entries: &[(&str, Tensor)]) -> Result<Vec<u8>> {
    let mut offset = 0usize;
    let mut infos = Vec::with_capacity(entries.len());
    for (name, t) in entries {
        let end = t
            .numel()
            .checked_mul(t.dtype().size_in_bytes())
            .and_then(|n| n.checked_add(offset))
            .ok_or_else(|| file_error(path, "the tensors hold more bytes than a file can"))?;
        infos.push((
            name.to_string(),
            TensorInfo {
                dtype: dtype_of(t.dtype()),
                shape: t.dims().to_vec(),
                data_offsets: (offset, end),
            },
        ));
        offset = end;
    }
    let invalid =
        |e: &dyn std::fmt::Display| file_error(path, format!("could not be written: {e}"));
    let metadata = Metadata::new(None, infos).map_err(|e| invalid(&e))?;
    let mut header = serde_json::to_vec(&metadata).map_err(|e| invalid(&e))?;
    header.resize(header.len().next_multiple_of(8), b' ');
    if header.len() > MAX_HEADER {
        return Err(file_error(
            path,
            format!(
                "the header naming the {} tensors would take {} bytes, more than the {MAX_HEADER} \
                 safetensors reads; save them in several files",
                entries.len(),
                header.len()
            ),
        ));
    }
    Ok(header)
}

/// `values` as little-endian bytes, a chunk at a time (an error for `None`: a
/// buffer shorter than its contiguous tensor, which does not happen).
fn write_le<T: Copy, const N: usize>(
    out: &mut impl Write,
    values: Option<&[T]>,
    bytes: fn(T) -> [u8; N],
) -> std::io::Result<()> {
    let values = values
        .ok_or_else(|| std::io::Error::other("a tensor's buffer is shorter than its shape"))?;
    let mut buf = [0u8; CHUNK];
    for chunk in values.chunks(CHUNK / N) {
        for (b, &v) in buf.chunks_exact_mut(N).zip(chunk) {
            b.copy_from_slice(&bytes(v));
        }
        out.write_all(&buf[..chunk.len() * N])?;
    }
    Ok(())
}

/// Reads every tensor of the safetensors file at `path`, sorted by name, on the
/// CPU (move them with `to_device`). Each is read from the file straight into its
/// own buffer, allocated fallibly: [`Error::OutOfMemory`] when one cannot be
/// (nothing else is kept: the tensors read before are dropped). An error also
/// when the file cannot be read, is not a safetensors file (or is truncated), or
/// holds a dtype other than F32 and F64 (checked before any data is read).
pub fn load(path: impl AsRef<Path>) -> Result<Vec<(String, Tensor)>> {
    let path = path.as_ref();
    let mut file = SafetensorsFile::open(path)?;
    for (name, info) in &file.entries {
        supported(path, name, info)?;
    }
    let mut out = Vec::with_capacity(file.entries.len());
    for i in 0..file.entries.len() {
        let t = file.read(i, "load")?;
        out.push((file.entries[i].0.clone(), t));
    }
    Ok(out)
}

/// Loads the named tensors of the file at `path` into `targets` (a model's
/// parameters, say), replacing their data as [`Tensor::set_data`] does (on their
/// device; gradients and graphs that saved them are unaffected).
///
/// All or nothing: everything `set_data` would refuse is checked, and every value
/// is read from the file and moved to its target's device, before the first
/// target changes; on any of these errors no target changes. That is: every name
/// is in the file, with its target's shape and a dtype this library has (F32 or
/// F64, the target's); every target can take new values (a leaf, not the output of
/// a recorded op, and, when a parameter, not a broadcast view, whose elements
/// share places in memory); every value fits in memory ([`Error::OutOfMemory`]
/// otherwise); the file can be read. Only the tensors named are read, each into a
/// buffer of its own (the file is never held in memory).
///
/// What can still fail once the writes have begun: a parameter whose buffer a
/// recorded graph or a view also holds is given a new buffer (as `set_data` does),
/// and when that buffer cannot be allocated, or a copy on a GPU fails, the error
/// comes with the targets before it already written.
pub fn load_into(path: impl AsRef<Path>, targets: &mut [(&str, &mut Tensor)]) -> Result<()> {
    load_into_with(path, targets, &LoadOptions::default())
}

/// How [`load_into_with`] treats a file's tensors.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LoadOptions {
    /// Converts a tensor whose dtype differs from its target's to the target's
    /// dtype (a bf16 or f16 checkpoint into an f32 model) instead of refusing it.
    /// Off by default: a silent conversion can lose precision.
    pub convert_dtypes: bool,
}

/// [`load_into`], with a tensor of another dtype than its target's converted to
/// the target's when `options.convert_dtypes` says so (as
/// `to_dtype` converts). Every check is made, and every value read and
/// converted, before any target is written: on an error no target has changed.
pub fn load_into_with(
    path: impl AsRef<Path>,
    targets: &mut [(&str, &mut Tensor)],
    options: &LoadOptions,
) -> Result<()> {
    let path = path.as_ref();
    let mut file = SafetensorsFile::open(path)?;
    // What the header says, checked against every target before any data is read.
    let mut index = Vec::with_capacity(targets.len());
    for (name, target) in targets.iter() {
        let Ok(i) = file.entries.binary_search_by(|(n, _)| n.as_str().cmp(name)) else {
            let names: Vec<&str> = file.entries.iter().map(|(n, _)| n.as_str()).collect();
            return Err(file_error(
                path,
                format!("no tensor named `{name}`; the file holds {names:?}"),
            ));
        };
        let info = &file.entries[i].1;
        let dtype = supported(path, name, info)?;
        let dtype_fits = dtype == target.dtype() || options.convert_dtypes;
        if info.shape != target.dims() || !dtype_fits {
            return Err(file_error(
                path,
                format!(
                    "tensor `{name}` is {dtype} of shape {}, but its target is {} of shape {}: \
                     load it into a tensor of that shape and dtype (for another dtype, \
                     `load_into_with` and `LoadOptions {{ convert_dtypes: true }}`)",
                    Shape::from(info.shape.as_slice()),
                    target.dtype(),
                    target.shape()
                ),
            ));
        }
        if let Some(node) = target.grad_fn() {
            return Err(file_error(
                path,
                format!(
                    "the target of tensor `{name}` is the output of a recorded `{}`, not a leaf, \
                     so it cannot take new values: load into the leaf it was computed from, or \
                     into a `.detach()`ed copy",
                    node.op_name()
                ),
            ));
        }
        if target.requires_grad() && target.layout().has_repeated_elements() {
            return Err(file_error(
                path,
                format!(
                    "the target of tensor `{name}` is a parameter of shape {} that is a broadcast \
                     view (strides {:?}): several of its elements share one place in memory, so \
                     it cannot hold the file's values; make the parameter from a tensor of its \
                     own (e.g. `compute::contiguous`)",
                    target.shape(),
                    target.layout().strides()
                ),
            ));
        }
        index.push(i);
    }
    // The values, each read once, on their targets' devices; the targets' own
    // values computed if deferred (so that no write has anything left to compute).
    let mut read: Vec<Option<Tensor>> = vec![None; file.entries.len()];
    let mut values = Vec::with_capacity(targets.len());
    for ((_, target), &i) in targets.iter().zip(&index) {
        let value = match &read[i] {
            Some(v) => v.clone(),
            None => {
                let v = file.read(i, "load_into")?;
                read[i] = Some(v.clone());
                v
            }
        };
        let value = crate::compute::cast(&value, target.dtype())?;
        let device = target.device();
        values.push(if device == Device::Cpu {
            value
        } else {
            crate::compute::to_device(&value, device)?
        });
        target.realize()?;
    }
    drop(read);
    for ((_, target), value) in targets.iter_mut().zip(&values) {
        target.set_data(value)?;
    }
    Ok(())
}

/// The dtype of a file's tensor, when it is one this library has.
fn supported(path: &Path, name: &str, info: &TensorInfo) -> Result<DType> {
    match info.dtype {
        Dtype::BOOL => Ok(DType::Bool),
        Dtype::U8 => Ok(DType::U8),
        Dtype::I32 => Ok(DType::I32),
        Dtype::I64 => Ok(DType::I64),
        Dtype::F16 => Ok(DType::F16),
        Dtype::BF16 => Ok(DType::BF16),
        Dtype::F32 => Ok(DType::F32),
        Dtype::F64 => Ok(DType::F64),
        other => Err(file_error(
            path,
            format!(
                "tensor `{name}` is {other:?}, a dtype this library does not hold (it holds BOOL, \
                 U8, I32, I64, F16, BF16, F32 and F64); convert it where it was written, e.g. \
                 `tensor.float()` in PyTorch"
            ),
        )),
    }
}

/// An open safetensors file whose header has been read and checked (as the
/// safetensors crate checks it: the tensors' data lie one after the other and fill
/// the file exactly).
struct SafetensorsFile<'p> {
    path: &'p Path,
    file: File,
    /// Where the data begins: after the header's length and the header.
    data_start: u64,
    /// Every tensor the header describes, sorted by name.
    entries: Vec<(String, TensorInfo)>,
}

impl<'p> SafetensorsFile<'p> {
    fn open(path: &'p Path) -> Result<SafetensorsFile<'p>> {
        let unreadable = |e: std::io::Error| file_error(path, format!("could not be read: {e}"));
        let mut file = File::open(path).map_err(unreadable)?;
        let len = file.metadata().map_err(unreadable)?.len();
        let mut n = [0u8; 8];
        if len < 8 {
            return Err(not_safetensors(path, "header too small"));
        }
        file.read_exact(&mut n).map_err(unreadable)?;
        let n = u64::from_le_bytes(n);
        if n > MAX_HEADER as u64 {
            return Err(not_safetensors(path, "header too large"));
        }
        if 8 + n > len {
            return Err(not_safetensors(path, "invalid header length"));
        }
        let mut header = Vec::new();
        header.try_reserve_exact(n as usize).map_err(|_| {
            file_error(
                path,
                format!("its header of {n} bytes could not be allocated (out of memory)"),
            )
        })?;
        (&mut file)
            .take(n)
            .read_to_end(&mut header)
            .map_err(unreadable)?;
        if header.len() as u64 != n {
            return Err(not_safetensors(path, "invalid header length"));
        }
        let text = std::str::from_utf8(&header)
            .map_err(|e| not_safetensors(path, format!("invalid UTF-8 in header: {e}")))?;
        let metadata: Metadata = serde_json::from_str(text)
            .map_err(|e| not_safetensors(path, format!("invalid JSON in header: {e}")))?;
        drop(header);
        let data = len - 8 - n;
        if metadata.data_len() as u64 != data {
            return Err(not_safetensors(
                path,
                format!(
                    "the header describes {} bytes of data, the file holds {data}",
                    metadata.data_len()
                ),
            ));
        }
        let mut entries: Vec<(String, TensorInfo)> = metadata
            .tensors()
            .into_iter()
            .map(|(name, info)| (name, info.clone()))
            .collect();
        entries.sort_by(|a, b| a.0.cmp(&b.0));
        Ok(SafetensorsFile {
            path,
            file,
            data_start: 8 + n,
            entries,
        })
    }

    /// The tensor of entry `i` (its dtype checked by `supported`), read into a
    /// buffer of its own, allocated fallibly ([`Error::OutOfMemory`] of `op`).
    fn read(&mut self, i: usize, op: &'static str) -> Result<Tensor> {
        let (name, info) = &self.entries[i];
        let path = self.path;
        let dtype = supported(path, name, info)?;
        let shape = Shape::from(info.shape.as_slice());
        let numel = info.shape.iter().product::<usize>();
        self.file
            .seek(SeekFrom::Start(
                self.data_start + info.data_offsets.0 as u64,
            ))
            .map_err(|e| file_error(path, format!("could not be read: {e}")))?;
        let error = |e| match e {
            ReadError::OutOfMemory(bytes) => Error::OutOfMemory {
                op,
                shape: shape.clone(),
                dtype,
                device: Device::Cpu,
                bytes,
            },
            ReadError::Io(e) => {
                file_error(path, format!("could not be read (tensor `{name}`): {e}"))
            }
        };
        autograd_core::with_dtype!(dtype, T => {
            let v: Vec<T> = read_le(&mut self.file, numel, <T as Le<{ size_of::<T>() }>>::from_le)
                .map_err(error)?;
            Tensor::from_vec(v, shape.clone())
        })
    }
}

/// Why [`read_le`] failed.
enum ReadError {
    /// The buffer (this many bytes) could not be allocated.
    OutOfMemory(usize),
    /// The file could not be read.
    Io(std::io::Error),
}

/// `numel` little-endian values read from `file`, a chunk at a time, into a buffer
/// allocated fallibly.
fn read_le<T, const N: usize>(
    file: &mut File,
    numel: usize,
    value: fn([u8; N]) -> T,
) -> std::result::Result<Vec<T>, ReadError> {
    let mut out = Vec::new();
    out.try_reserve_exact(numel)
        .map_err(|_| ReadError::OutOfMemory(numel.saturating_mul(N)))?;
    let mut buf = [0u8; CHUNK];
    let mut left = numel;
    while left > 0 {
        let k = left.min(CHUNK / N);
        let bytes = &mut buf[..k * N];
        file.read_exact(bytes).map_err(ReadError::Io)?;
        out.extend(bytes.chunks_exact(N).map(|b| {
            let mut a = [0u8; N];
            a.copy_from_slice(b);
            value(a)
        }));
        left -= k;
    }
    Ok(out)
}
