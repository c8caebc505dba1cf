//! The kernel sources and their compilation by NVRTC.
//!
//! Each `.cu` file of this directory is one compilation unit ([`Module`]), compiled
//! with `common.cuh` (and its own headers) in front of it at first use on a
//! device, for that device's architecture, straight to machine code (CUBIN: unlike
//! PTX, it loads on a driver older than the NVRTC that made it), without
//! contraction into fused multiply-adds, as every program of the library is
//! ([`Contraction`]). The kernels of the fixed elementwise ops are instantiated
//! from op.rs's table, one line per op after `unary.cu` and `binary.cu`
//! ([`Module::source`]), so an op added to the table gets its kernels, their
//! names and their place in the checks below with no edit here. Every kernel the
//! backend launches has a name built by one of the functions below from an op
//! variant (its `name()`) and a dtype; [`kernel_names`] lists all of them, and
//! [`check_sources`] compiles every module and checks that each name is defined
//! and takes the parameters the backend passes ([`kernel_params`]: counts, order,
//! scalar types and the sizes of the index structs), which needs NVRTC but no
//! GPU.

use super::index::{Index1, Index2, ReduceIndex};
use super::sources::module_source;
use crate::{BinaryOp, DType, KernelError, ReduceOp, Result, UnaryOp};
use cudarc::nvrtc::{result as nvrtc, sys as nvrtc_sys};
use std::ffi::{CStr, CString, c_char};
use std::sync::OnceLock;

/// One kernel source file, compiled as a unit.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Module {
    /// `unary.cu`: elementwise functions of one operand.
    Unary,
    /// `binary.cu`: elementwise functions of two operands, in place or not.
    Binary,
    /// `reduce.cu`: sum, max and min over axes.
    Reduce,
    /// `copy.cu`: strided copies (optionally accumulating), fill and cast for
    /// every dtype, and the integer dtypes' arithmetic (over i64).
    Copy,
}

/// `block_reduce.cuh`: a block's sum in the reductions' order, shared by
/// `reduce.cu` and the fused kernels of chains ending in a sum.
pub const BLOCK_REDUCE: &str = include_str!("block_reduce.cuh");

/// `arith.cuh`: the fixed ops' arithmetic (`fz_add`, .., `fz_mask`), shared by
/// `unary.cu`, `binary.cu` and the fused kernels.
pub const ARITH: &str = include_str!("arith.cuh");

impl Module {
    /// Every module, in the order they are compiled and checked.
    pub const ALL: [Module; 4] = [Module::Unary, Module::Binary, Module::Reduce, Module::Copy];

    /// The source file's name.
    pub fn file(self) -> &'static str {
        match self {
            Module::Unary => "unary.cu",
            Module::Binary => "binary.cu",
            Module::Reduce => "reduce.cu",
            Module::Copy => "copy.cu",
        }
    }

    /// The full source NVRTC compiles: `common.cuh`, the file's headers
    /// (`arith.cuh` for `unary.cu` and `binary.cu`, `block_reduce.cuh` for
    /// `reduce.cu`), the file, then one line per op of op.rs's table
    /// instantiating its kernels (`unary.cu` and `binary.cu`; see
    /// `cuda/sources.rs`). Assembled once per process.
    pub fn source(self) -> &'static str {
        static SOURCES: OnceLock<Vec<String>> = OnceLock::new();
        let sources = SOURCES.get_or_init(|| {
            Module::ALL
                .iter()
                .map(|m| module_source(m.file(), &file_text))
                .collect()
        });
        let at = Module::ALL.iter().position(|&m| m == self);
        at.map_or("", |k| sources[k].as_str())
    }
}

/// The content of the kernel source file `name` of this directory.
fn file_text(name: &str) -> String {
    match name {
        "common.cuh" => include_str!("common.cuh"),
        "arith.cuh" => ARITH,
        "block_reduce.cuh" => BLOCK_REDUCE,
        "unary.cu" => include_str!("unary.cu"),
        "binary.cu" => include_str!("binary.cu"),
        "reduce.cu" => include_str!("reduce.cu"),
        "copy.cu" => include_str!("copy.cu"),
        _ => "",
    }
    .to_string()
}

/// Every variant of an op enum, as a list whose completeness the compiler checks:
/// the same list is matched exhaustively, so a variant added to the enum is a
/// compile error here until it is listed (and then [`check_sources`] fails until
/// its kernel exists).
macro_rules! every_variant {
    ($ty:ident: $($variant:ident $(($arg:expr))?),+ $(,)?) => {{
        #[allow(dead_code)]
        fn exhaustive(op: $ty) {
            match op {
                $($ty::$variant { .. } => {})+
            }
        }
        vec![$($ty::$variant $(($arg))?),+]
    }};
}

/// Every [`UnaryOp`] variant, op.rs's table's list, parameterised ones with the
/// parameter 0.5 (an exponent `fz_pow` does not special-case).
pub fn every_unary_op() -> Vec<UnaryOp> {
    UnaryOp::all(0.5)
}

/// Every [`BinaryOp`] variant: op.rs's table's list.
pub fn every_binary_op() -> Vec<BinaryOp> {
    BinaryOp::ALL.to_vec()
}

/// Every [`ReduceOp`] variant.
pub fn every_reduce_op() -> Vec<ReduceOp> {
    every_variant!(ReduceOp: Sum, Max, Min)
}

pub(crate) const DTYPES: [DType; 2] = [DType::F32, DType::F64];

/// The dtypes whose accumulating copy into repeated destinations has an atomic
/// kernel (`copy_atomic_add_<dtype>`); `u8`, `f16` and `bf16` accumulate through
/// `i32` or `f32` (see `CudaStorage::copy_into`).
pub(crate) const ATOMIC_ADD_DTYPES: [DType; 5] =
    [DType::Bool, DType::I32, DType::I64, DType::F32, DType::F64];

/// The unary ops the integer dtypes compute, over i64 (`iunary_<name>_i64` in
/// copy.cu).
pub(crate) const INT_UNARY: [&str; 3] = ["neg", "add_scalar", "mul_scalar"];

/// The binary ops the integer dtypes compute, over i64 (`ibinary_<name>_i64` in
/// copy.cu).
pub(crate) const INT_BINARY: [&str; 8] = ["add", "sub", "mul", "eq", "gt", "ge", "lt", "le"];

/// The integer unary kernel `iunary_<op>_i64`.
pub(crate) fn int_unary_kernel(op: &str) -> String {
    format!("iunary_{op}_i64")
}

/// The integer binary kernel `ibinary_<op>_i64`.
pub(crate) fn int_binary_kernel(op: &str) -> String {
    format!("ibinary_{op}_i64")
}

/// The kernel of unary.cu computing `op` over `dtype` (`unary_<op>_<dtype>`).
/// The names are formatted once per process (a launch looks its name up).
pub(crate) fn unary_kernel(op: UnaryOp, dtype: DType) -> &'static str {
    static NAMES: OnceLock<Names<DType>> = OnceLock::new();
    let names = NAMES.get_or_init(|| {
        let ops = UnaryOp::all(0.0);
        let each =
            |op: &UnaryOp| DTYPES.map(|d| (op.name(), d, format!("unary_{}_{d}", op.name())));
        ops.iter().flat_map(each).collect()
    });
    kernel_name(names, (op.name(), dtype))
}

/// Kernel names formatted once: `(op name, key, kernel name)`.
type Names<K> = Vec<(&'static str, K, String)>;

/// The name listed for `key` in `names` (every op and dtype is listed).
fn kernel_name<K: PartialEq>(
    names: &'static [(&'static str, K, String)],
    key: (&str, K),
) -> &'static str {
    names
        .iter()
        .find(|(op, k, _)| *op == key.0 && *k == key.1)
        .map_or("", |(_, _, name)| name)
}

/// The kernels of binary.cu computing `op` over `dtype`: into a fresh output
/// (`binary_<op>_<dtype>`), or into the first operand when `assign`
/// (`binary_assign_<op>_<dtype>`).
pub(crate) fn binary_kernel(op: BinaryOp, dtype: DType, assign: bool) -> &'static str {
    static NAMES: OnceLock<Names<(DType, bool)>> = OnceLock::new();
    let names = NAMES.get_or_init(|| {
        let mut names = Vec::new();
        for op in BinaryOp::ALL {
            for d in DTYPES {
                for a in [false, true] {
                    let infix = if a { "assign_" } else { "" };
                    names.push((
                        op.name(),
                        (d, a),
                        format!("binary_{infix}{}_{d}", op.name()),
                    ));
                }
            }
        }
        names
    });
    kernel_name(names, (op.name(), (dtype, assign)))
}

/// The three reduction kernels of reduce.cu, chosen by `reduce.rs`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ReduceKind {
    /// One block per output, its threads striding over the reduced elements.
    Rows,
    /// One thread per output.
    Cols,
    /// Few adjacent outputs: one block takes all of them, its threads split
    /// between them.
    Few,
}

impl ReduceKind {
    pub(crate) const ALL: [ReduceKind; 3] = [ReduceKind::Rows, ReduceKind::Cols, ReduceKind::Few];

    fn name(self) -> &'static str {
        match self {
            ReduceKind::Rows => "rows",
            ReduceKind::Cols => "cols",
            ReduceKind::Few => "few",
        }
    }
}

/// The dtype a reduction's partial results (every pass but the last) are written
/// in: a sum's accumulator, f64, so that an f32 sum is rounded to f32 once;
/// max and min keep their elements.
pub(crate) fn partial_dtype(op: ReduceOp, dtype: DType) -> DType {
    match op {
        // Integer sums wrap in i64, which any order computes exactly.
        ReduceOp::Sum if dtype == DType::I64 => DType::I64,
        ReduceOp::Sum => DType::F64,
        ReduceOp::Max | ReduceOp::Min => dtype,
    }
}

/// `reduce_<kind>_<op>_<input>`, or `..._<input>_<output>` where the two differ
/// (sums only: f32 input to f64 partial results, f64 partial results to the f32
/// sum). See reduce.cu.
pub(crate) fn reduce_kernel(op: ReduceOp, kind: ReduceKind, input: DType, output: DType) -> String {
    let (kind, op) = (kind.name(), op.name());
    if input == output {
        format!("reduce_{kind}_{op}_{input}")
    } else {
        format!("reduce_{kind}_{op}_{input}_{output}")
    }
}

/// `copy`, `copy_add` or `copy_atomic_add`.
pub(crate) fn copy_kernel(kind: &str, dtype: DType) -> String {
    format!("{kind}_{dtype}")
}

pub(crate) fn fill_kernel(dtype: DType) -> String {
    format!("fill_{dtype}")
}

pub(crate) fn cast_kernel(from: DType, to: DType) -> String {
    format!("cast_{from}_{to}")
}

/// A kernel parameter as the backend passes it (pointers and u64 both travel as
/// 64-bit values; the index structs by value).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Param {
    /// A 64-bit integer or a device pointer.
    U64,
    /// A scalar parameter, always passed as `f64` whatever the dtype.
    F64,
    /// An index struct passed by value, of this size in bytes.
    Struct(usize),
}

/// The parameters the backend launches kernel `name` with, in order: the ABI that
/// [`check_sources`] compares with what NVRTC compiled.
pub fn kernel_params(name: &str) -> Vec<Param> {
    use Param::{F64, Struct, U64};
    let index1 = Struct(std::mem::size_of::<Index1>());
    let index2 = Struct(std::mem::size_of::<Index2>());
    if name.starts_with("unary_") || name.starts_with("iunary_") {
        // n, view, in, out, scalar
        vec![U64, index1, U64, U64, F64]
    } else if name.starts_with("binary_assign_") {
        // n, views, a (updated), b
        vec![U64, index2, U64, U64]
    } else if name.starts_with("binary_") || name.starts_with("ibinary_") {
        // n, views, a, b, out
        vec![U64, index2, U64, U64, U64]
    } else if name.starts_with("reduce_") {
        // out_n, red_n, chunk, view, in, out
        vec![
            U64,
            U64,
            U64,
            Struct(std::mem::size_of::<ReduceIndex>()),
            U64,
            U64,
        ]
    } else if name.starts_with("fill_") {
        // n, out, value
        vec![U64, U64, F64]
    } else if name.starts_with("cast_") {
        // n, view, in, out
        vec![U64, index1, U64, U64]
    } else {
        // copy, copy_add, copy_atomic_add: n, views (src, dst), src, dst
        vec![U64, index2, U64, U64]
    }
}

/// The parameter list of kernel `name` in `ptx`, `None` when it is not defined.
fn ptx_params(ptx: &str, name: &str) -> Option<Vec<Param>> {
    let start = ptx.find(&format!(".entry {name}("))?;
    let rest = &ptx[start..];
    let list = &rest[..rest.find(')')?];
    let params = list
        .lines()
        .filter(|l| l.contains(".param"))
        .map(|l| {
            // `.param .u64 name`, `.param .f64 name` or `.param .align 8 .b8 name[size]`
            let tokens: Vec<&str> = l.split_whitespace().skip(1).collect();
            let ty = match tokens.first() {
                Some(&".align") => tokens.get(2),
                t => t,
            };
            match ty.copied() {
                Some(".u64" | ".b64" | ".s64") => Param::U64,
                Some(".f64") => Param::F64,
                _ => {
                    let size = l
                        .rsplit('[')
                        .next()
                        .and_then(|s| s.trim_end_matches([']', ',', ' ']).parse().ok())
                        .unwrap_or(0);
                    Param::Struct(size)
                }
            }
        })
        .collect();
    Some(params)
}

/// Every kernel the backend can launch, with the module that must define it.
pub fn kernel_names() -> Vec<(Module, String)> {
    let mut names = Vec::new();
    for dtype in DTYPES {
        for op in every_unary_op() {
            names.push((Module::Unary, unary_kernel(op, dtype).to_string()));
        }
        for op in every_binary_op() {
            names.push((Module::Binary, binary_kernel(op, dtype, false).to_string()));
            names.push((Module::Binary, binary_kernel(op, dtype, true).to_string()));
        }
        for op in every_reduce_op() {
            for output in DTYPES {
                // Mixed types only where a pass writes partial results in another
                // dtype (f32 to f64) or reads them (f64 to f32).
                let partials =
                    partial_dtype(op, dtype) == output || partial_dtype(op, output) == dtype;
                if output != dtype && !partials {
                    continue;
                }
                for kind in ReduceKind::ALL {
                    names.push((Module::Reduce, reduce_kernel(op, kind, dtype, output)));
                }
            }
        }
    }
    for kind in ReduceKind::ALL {
        for op in every_reduce_op() {
            names.push((
                Module::Reduce,
                reduce_kernel(op, kind, DType::I64, DType::I64),
            ));
        }
    }
    for dtype in DType::ALL {
        for kind in ["copy", "copy_add"] {
            names.push((Module::Copy, copy_kernel(kind, dtype)));
        }
        if ATOMIC_ADD_DTYPES.contains(&dtype) {
            names.push((Module::Copy, copy_kernel("copy_atomic_add", dtype)));
        }
        names.push((Module::Copy, fill_kernel(dtype)));
        for to in DType::ALL {
            if to != dtype {
                names.push((Module::Copy, cast_kernel(dtype, to)));
            }
        }
    }
    for op in INT_UNARY {
        names.push((Module::Copy, int_unary_kernel(op)));
    }
    for op in INT_BINARY {
        names.push((Module::Copy, int_binary_kernel(op)));
    }
    names
}

/// True when the NVRTC library can be loaded (checked before any NVRTC call, which
/// would panic without it).
pub fn nvrtc_available() -> bool {
    // SAFETY: only tries to dlopen the library under its known names.
    unsafe { nvrtc_sys::is_culib_present() }
}

fn nvrtc_missing() -> KernelError {
    KernelError::Device(
        "the NVRTC library (libnvrtc.so) was not found: install the CUDA toolkit, or \
         `pip install nvidia-cuda-nvrtc`, and add its lib folder to LD_LIBRARY_PATH"
            .into(),
    )
}

/// NVRTC's version, `(major, minor)`.
pub fn nvrtc_version() -> Result<(i32, i32)> {
    if !nvrtc_available() {
        return Err(nvrtc_missing());
    }
    let (mut major, mut minor) = (0, 0);
    // SAFETY: the library is present; both pointers are valid for the call.
    unsafe { nvrtc_sys::nvrtcVersion(&mut major, &mut minor) }
        .result()
        .map_err(|e| KernelError::Device(format!("nvrtcVersion: {e:?}")))?;
    Ok((major, minor))
}

/// What to take out of a compiled program.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Output {
    /// PTX text (for a virtual architecture, `compute_XY`).
    Ptx,
    /// Machine code (for a real architecture, `sm_XY`).
    Cubin,
}

/// Whether NVRTC may contract a product and a sum (`a * b + c`) into one fused
/// multiply-add, which rounds once where the two operations round twice.
///
/// The library's own programs (the modules here, the ops generated from an
/// elementwise function, the fused chains) are compiled with [`Contraction::Off`]:
/// every product and sum is rounded where it is written, as the CPU backend
/// computes it (Rust never contracts), so a fused chain gives the bits of its ops
/// one by one whatever the compiler knows at each place. With contraction on
/// (NVRTC's default), the fused kernel, which has a generated op's derivative
/// selector as a constant, and the op's own kernel, which receives it at run time,
/// contract the dual numbers' arithmetic differently (1 to 2 ulps apart in the
/// gradients of softplus, mish, gelu, silu), and a fused sum contracts the last
/// product into its accumulator. Raw programs (`crate::raw`, a user's own source)
/// are compiled with [`Contraction::On`], as nvcc compiles them by default; where
/// a raw program needs a product rounded, it writes `__fmul_rn` (and `__fadd_rn`,
/// ...: intrinsics that are never contracted, which the emulated device has too).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Contraction {
    /// `--fmad=false`: no fused multiply-add unless the source asks for one
    /// (`fma`, `__fmaf_rn`).
    Off,
    /// `--fmad=true`, NVRTC's and nvcc's default.
    On,
}

impl Contraction {
    /// The NVRTC option.
    pub fn option(self) -> &'static str {
        match self {
            Contraction::Off => "--fmad=false",
            Contraction::On => "--fmad=true",
        }
    }
}

/// The options every NVRTC compile passes: the architecture and the contraction.
pub fn nvrtc_options(arch: &str, contraction: Contraction) -> Vec<String> {
    vec![
        format!("--gpu-architecture={arch}"),
        contraction.option().to_string(),
    ]
}

/// Compiles `module` with NVRTC for `arch` (`sm_90` with [`Output::Cubin`],
/// `compute_90` with [`Output::Ptx`]). A compile error carries NVRTC's log.
pub fn compile(module: Module, arch: &str, output: Output) -> Result<Vec<u8>> {
    compile_source(module.file(), module.source(), arch, output)
}

/// Compiles the CUDA C++ `source` (named `file` in messages) of one of the
/// library's programs with NVRTC: without contraction ([`Contraction::Off`]).
pub fn compile_source(file: &str, source: &str, arch: &str, output: Output) -> Result<Vec<u8>> {
    compile_source_with(file, source, arch, output, Contraction::Off)
}

/// Compiles the CUDA C++ `source` (named `file` in messages) with NVRTC, with
/// `contraction` (see [`Contraction`]: [`Contraction::On`] for raw programs only).
pub fn compile_source_with(
    file: &str,
    source: &str,
    arch: &str,
    output: Output,
    contraction: Contraction,
) -> Result<Vec<u8>> {
    if !nvrtc_available() {
        return Err(nvrtc_missing());
    }
    let src = CString::new(source)
        .map_err(|_| KernelError::Device(format!("{file} contains a NUL byte")))?;
    let name = CString::new(file).unwrap_or_default();
    let prog = nvrtc::create_program(&src, Some(&name))
        .map_err(|e| KernelError::Device(format!("nvrtcCreateProgram({file}): {e:?}")))?;
    let options = nvrtc_options(arch, contraction);
    // SAFETY: `prog` was created above and is destroyed only at the end; `src` and
    // `name`, which it refers to, outlive it.
    unsafe {
        let compiled = nvrtc::compile_program(prog, &options);
        let out = match compiled {
            Err(e) => Err(KernelError::Device(format!(
                "NVRTC failed to compile {file} for {arch} ({e:?}):\n{}",
                program_log(prog)
            ))),
            Ok(()) => match output {
                Output::Ptx => nvrtc::get_ptx(prog)
                    .map(|v| v.into_iter().map(|c| c as u8).collect())
                    .map_err(|e| KernelError::Device(format!("nvrtcGetPTX: {e:?}"))),
                Output::Cubin => get_cubin(prog),
            },
        };
        let _ = nvrtc::destroy_program(prog);
        out
    }
}

/// # Safety
/// `prog` is a live program.
unsafe fn program_log(prog: nvrtc_sys::nvrtcProgram) -> String {
    match unsafe { nvrtc::get_program_log(prog) } {
        Ok(log) => {
            let bytes: Vec<u8> = log
                .into_iter()
                .map(|c: c_char| c as u8)
                .take_while(|&b| b != 0)
                .collect();
            String::from_utf8_lossy(&bytes).into_owned()
        }
        Err(e) => format!("(no log: {e:?})"),
    }
}

/// # Safety
/// `prog` is a live, successfully compiled program.
unsafe fn get_cubin(prog: nvrtc_sys::nvrtcProgram) -> Result<Vec<u8>> {
    let mut size = 0usize;
    unsafe { nvrtc_sys::nvrtcGetCUBINSize(prog, &mut size) }
        .result()
        .map_err(|e| KernelError::Device(format!("nvrtcGetCUBINSize: {e:?}")))?;
    if size == 0 {
        return Err(KernelError::Device(
            "NVRTC produced no CUBIN (was a virtual architecture given?)".into(),
        ));
    }
    let mut cubin = vec![0u8; size];
    unsafe { nvrtc_sys::nvrtcGetCUBIN(prog, cubin.as_mut_ptr().cast()) }
        .result()
        .map_err(|e| KernelError::Device(format!("nvrtcGetCUBIN: {e:?}")))?;
    Ok(cubin)
}

/// What [`check_sources`] compiled.
#[derive(Clone, Debug)]
pub struct SourceCheck {
    /// The module compiled.
    pub module: Module,
    /// The architecture it was compiled for (`compute_90`, `sm_90`, ...).
    pub arch: String,
    /// Size of the PTX or CUBIN produced, in bytes.
    pub bytes: usize,
    /// Kernels counted in the PTX (0 for CUBIN, which is not inspected).
    pub kernels: usize,
}

/// Compiles every module for each architecture in `archs` (virtual ones, such as
/// `compute_90`, to PTX; real ones, such as `sm_90`, to CUBIN) and checks that
/// every kernel of [`kernel_names`] is defined in its module's PTX. Needs NVRTC,
/// not a GPU.
pub fn check_sources(archs: &[&str]) -> Result<Vec<SourceCheck>> {
    let names = kernel_names();
    let mut report = Vec::new();
    for module in Module::ALL {
        for &arch in archs {
            let output = if arch.starts_with("sm_") {
                Output::Cubin
            } else {
                Output::Ptx
            };
            let code = compile(module, arch, output)?;
            let mut kernels = 0;
            if output == Output::Ptx {
                let ptx = CStr::from_bytes_until_nul(&code)
                    .map(|s| s.to_string_lossy().into_owned())
                    .unwrap_or_else(|_| String::from_utf8_lossy(&code).into_owned());
                let mut missing = Vec::new();
                for (_, name) in names.iter().filter(|(m, _)| *m == module) {
                    match ptx_params(&ptx, name) {
                        None => missing.push(name.as_str()),
                        Some(params) if params != kernel_params(name) => {
                            return Err(KernelError::Device(format!(
                                "kernel `{name}` in {} takes {params:?}, but the backend \
                                 launches it with {:?}",
                                module.file(),
                                kernel_params(name)
                            )));
                        }
                        Some(_) => {}
                    }
                }
                if !missing.is_empty() {
                    return Err(KernelError::Device(format!(
                        "{} defines no kernel named {missing:?}; the backend launches them",
                        module.file()
                    )));
                }
                kernels = ptx.matches(".entry ").count();
            }
            report.push(SourceCheck {
                module,
                arch: arch.to_string(),
                bytes: code.len(),
                kernels,
            });
        }
    }
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An entry as NVRTC 13 writes it for `compute_90` (copied from its output;
    /// the index struct grew from 272 to 280 bytes with `index32` since).
    const PTX: &str = "
.visible .entry unary_neg_f32(
\t.param .u64 unary_neg_f32_param_0,
\t.param .align 8 .b8 unary_neg_f32_param_1[280],
\t.param .u64 unary_neg_f32_param_2,
\t.param .u64 unary_neg_f32_param_3,
\t.param .f64 unary_neg_f32_param_4
)
{
\tret;
}
";

    #[test]
    fn kernel_names_are_the_op_names_with_the_dtype() {
        for dtype in DTYPES {
            for op in every_unary_op() {
                assert_eq!(
                    unary_kernel(op, dtype),
                    format!("unary_{}_{dtype}", op.name())
                );
            }
            for op in every_binary_op() {
                let (fresh, assign) = (
                    binary_kernel(op, dtype, false),
                    binary_kernel(op, dtype, true),
                );
                assert_eq!(fresh, format!("binary_{}_{dtype}", op.name()));
                assert_eq!(assign, format!("binary_assign_{}_{dtype}", op.name()));
            }
        }
    }

    /// `unary.cu` and `binary.cu` instantiate one op of op.rs's table per line
    /// after the file, from its name and CUDA expression, and include the `fz_*`
    /// arithmetic (`arith.cuh`) before it.
    #[test]
    fn the_elementwise_modules_instantiate_the_tables_ops() {
        for module in [Module::Unary, Module::Binary] {
            let source = module.source();
            let arith = source.find("fz_mask(bool c)").expect("arith.cuh");
            let file = source.find(&format!("#line 1 \"{}\"", module.file()));
            assert!(file.is_some_and(|f| arith < f), "{}", module.file());
        }
        for op in UnaryOp::all(1.0) {
            let line = format!("\nUNARY({}, {})\n", op.name(), op.cuda());
            assert!(Module::Unary.source().contains(&line), "{line}");
        }
        for op in BinaryOp::ALL {
            let line = format!("\nBINARY({}, {})\n", op.name(), op.cuda());
            assert!(Module::Binary.source().contains(&line), "{line}");
        }
        for module in [Module::Reduce, Module::Copy] {
            assert!(!module.source().contains("fz_"), "{}", module.file());
        }
    }

    #[test]
    fn ptx_parameters_are_read_and_a_changed_one_is_seen() {
        use Param::*;
        let want = kernel_params("unary_neg_f32");
        assert_eq!(want, vec![U64, Struct(280), U64, U64, F64]);
        assert_eq!(ptx_params(PTX, "unary_neg_f32"), Some(want.clone()));
        assert_eq!(ptx_params(PTX, "unary_exp_f32"), None);
        // A kernel whose scalar became a float, or whose index struct grew, no
        // longer matches what the backend launches it with.
        for changed in [
            PTX.replace(".f64 unary", ".f32 unary"),
            PTX.replace("[280]", "[288]"),
        ] {
            let got = ptx_params(&changed, "unary_neg_f32");
            assert!(got.is_some() && got != Some(want.clone()), "{changed}");
        }
    }
}
