//! Integration tests of the whole stack: the worked examples of reverse-mode accumulation, the
//! engine's semantics, pruning, gradient checks through the registry.

mod amp;
#[path = "../common/cases.rs"]
mod cases;
mod checkpoint;
mod conv;
mod curves;
mod dtypes;
mod elementwise;
mod engine;
mod functional;
mod fusion;
mod graph_dot;
mod half_reference;
mod io;
mod losses;
mod modules;
mod nn_layers;
mod operators;
mod ops_attention;
mod ops_batch;
mod ops_conv_more;
mod ops_elementwise;
mod ops_errors;
mod ops_reductions;
mod ops_reference;
mod ops_registry;
mod ops_semantics;
mod ops_shape;
mod optim;
mod pruning;
mod raw;
mod registry;
mod reuse;
mod saved_flags;
mod sizes;
mod training;
mod worked_examples;

/// Whether NVRTC is here to compile CUDA sources with. Without it, says loudly that
/// `what` was NOT compiled, and fails when `AUTOGRAD_REQUIRE_NVRTC=1` (CI sets it).
#[cfg(feature = "cuda")]
pub fn nvrtc_or_skip(what: &str) -> bool {
    use std::io::Write;
    if autograd_kernels::cuda::compile::nvrtc_available() {
        return true;
    }
    let required = std::env::var("AUTOGRAD_REQUIRE_NVRTC").is_ok_and(|v| !v.is_empty() && v != "0");
    let msg = format!(
        "NVRTC (libnvrtc.so.13) was not found, so {what} were NOT compiled (.ci/run installs it)"
    );
    assert!(!required, "AUTOGRAD_REQUIRE_NVRTC is set, but {msg}");
    let _ = writeln!(std::io::stderr(), "\n******** SKIPPED: {msg} ********\n");
    false
}

/// Every test calls this first: links the op library and checks the registry.
pub fn init() {
    autograd::init().expect("op registry");
}

/// An f64 leaf that requires grad.
pub fn leaf(v: &[f64], shape: &[usize]) -> autograd::Tensor {
    autograd::Tensor::from_slice(v, shape)
        .unwrap()
        .with_requires_grad(true)
}

/// The gradient accumulated into `t`, as f64 values.
pub fn grad_vec(t: &autograd::Tensor) -> Vec<f64> {
    t.grad().expect("gradient").to_vec::<f64>().unwrap()
}

/// `program` (a raw op's CUDA source) compiles with NVRTC, for the H200's `sm_90`
/// and to PTX, where each of `entries` is found as `<entry>_f32` and `<entry>_f64`,
/// taking the 1920-byte `RawParams` by value (the Rust twin's size, checked in
/// autograd-kernels) and then 12 pointers. Needs the NVRTC library, not a GPU:
/// skipped loudly without it, a failure with `AUTOGRAD_REQUIRE_NVRTC=1` (CI).
pub fn assert_raw_program_compiles(program: autograd::raw::CudaProgram, entries: &[&str]) {
    use autograd_kernels::cuda::compile::{Output, compile_source, nvrtc_available};
    use std::io::Write;
    let file = format!("{}.cu", program.name);
    if !nvrtc_available() {
        let required =
            std::env::var("AUTOGRAD_REQUIRE_NVRTC").is_ok_and(|v| !v.is_empty() && v != "0");
        let msg = format!(
            "NVRTC (libnvrtc.so.13) was not found, so {file} was NOT compiled (.ci/run \
             installs it)"
        );
        assert!(!required, "AUTOGRAD_REQUIRE_NVRTC is set, but {msg}");
        let _ = writeln!(std::io::stderr(), "\n******** SKIPPED: {msg} ********\n");
        return;
    }
    let source = format!("{}\n{}", autograd::raw::CUDA_PRELUDE, program.source);
    compile_source(&file, &source, "sm_90", Output::Cubin).unwrap_or_else(|e| panic!("{e}"));
    let ptx =
        compile_source(&file, &source, "compute_90", Output::Ptx).unwrap_or_else(|e| panic!("{e}"));
    let ptx = String::from_utf8_lossy(&ptx);
    for entry in entries {
        for dtype in ["f32", "f64"] {
            let name = format!("{entry}_{dtype}");
            let head = format!(".entry {name}(\n\t.param .align 8 .b8 {name}_param_0[1920]");
            assert!(ptx.contains(&head), "{file}: no `{head}` in the PTX");
            assert!(
                ptx.contains(&format!("{name}_param_12")),
                "{file}: {name}'s pointers"
            );
            assert!(
                !ptx.contains(&format!("{name}_param_13")),
                "{file}: {name}'s pointers"
            );
        }
    }
}
