//! Every CUDA kernel source compiles with NVRTC, and defines every kernel the
//! backend launches. Needs the NVRTC library, not a GPU.
//!
//! Where NVRTC cannot be loaded the tests say so loudly and pass, so that
//! `cargo test` works on a fresh machine; with `AUTOGRAD_REQUIRE_NVRTC=1` (set by
//! `.ci/run`, which installs NVRTC from PyPI) they fail instead.

#![cfg(feature = "cuda")]

use std::io::Write;

use autograd_kernels::cuda::compile::{
    self, Module, Output, check_sources, compile_source, kernel_names,
};

/// The architectures checked: PTX for Hopper (to read the kernel names out of)
/// and Hopper machine code, which is what the target H200 machines load.
const ARCHS: [&str; 2] = ["compute_90", "sm_90"];

/// False (after a loud message) when NVRTC is missing and not required.
fn nvrtc_or_skip(test: &str) -> bool {
    if compile::nvrtc_available() {
        return true;
    }
    let msg = "the NVRTC library (libnvrtc.so.13) was not found, so the CUDA kernel sources \
               were NOT compiled; install it with `python3 -m pip install \
               nvidia-cuda-nvrtc==13.0.88` and put its `nvidia/cu13/lib` folder on \
               LD_LIBRARY_PATH (.ci/run does this)";
    let required = std::env::var("AUTOGRAD_REQUIRE_NVRTC").is_ok_and(|v| !v.is_empty() && v != "0");
    if required {
        panic!("{test}: AUTOGRAD_REQUIRE_NVRTC is set, but {msg}");
    }
    // Straight to the process's stderr: the test harness captures `eprintln!`
    // of passing tests, and this must be seen.
    let _ = writeln!(
        std::io::stderr(),
        "\n**************** SKIPPED {test} ****************\n{msg}\n"
    );
    false
}

#[test]
fn every_cuda_kernel_source_compiles_with_nvrtc() {
    if !nvrtc_or_skip("every_cuda_kernel_source_compiles_with_nvrtc") {
        return;
    }
    let (major, minor) = compile::nvrtc_version().expect("NVRTC version");
    let report = check_sources(&ARCHS).unwrap_or_else(|e| panic!("{e}"));
    for c in &report {
        eprintln!(
            "NVRTC {major}.{minor}: {} for {}: {} bytes{}",
            c.module.file(),
            c.arch,
            c.bytes,
            if c.kernels > 0 {
                format!(", {} kernels", c.kernels)
            } else {
                String::new()
            }
        );
    }
    assert_eq!(report.len(), Module::ALL.len() * ARCHS.len());
    // Every kernel the backend launches was found in its module's PTX, and no
    // module defines kernels the backend never launches.
    for module in Module::ALL {
        let expected = kernel_names().iter().filter(|(m, _)| *m == module).count();
        let ptx = report
            .iter()
            .find(|c| c.module == module && c.arch.starts_with("compute_"))
            .expect("PTX report");
        assert_eq!(ptx.kernels, expected, "kernels in {}", module.file());
    }
}

/// The library's programs (`compile_source`, as every fixed module, generated op
/// and fused chain is compiled) are compiled without contraction: `a * b + c` is a
/// product and a sum, each rounded (`mul.rn`, `add.rn`), not a fused multiply-add;
/// a raw program (`Contraction::On`, NVRTC's default) gets the fused multiply-add.
#[test]
fn the_library_compiles_its_programs_without_contraction() {
    if !nvrtc_or_skip("the_library_compiles_its_programs_without_contraction") {
        return;
    }
    use compile::{Contraction, compile_source_with, nvrtc_options};
    assert!(nvrtc_options("sm_90", Contraction::Off).contains(&"--fmad=false".to_string()));
    let source = "extern \"C\" __global__ void mad(const float* a, const float* b, \
                  const float* c, float* out) { out[0] = a[0] * b[0] + c[0]; }";
    let ptx = |contraction| {
        let code = compile_source_with("mad.cu", source, "compute_90", Output::Ptx, contraction)
            .unwrap_or_else(|e| panic!("{e}"));
        String::from_utf8_lossy(&code).into_owned()
    };
    let library = compile_source("mad.cu", source, "compute_90", Output::Ptx)
        .map(|c| String::from_utf8_lossy(&c).into_owned())
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(library, ptx(Contraction::Off));
    assert!(
        !library.contains("fma")
            && library.contains("mul.rn.f32")
            && library.contains("add.rn.f32"),
        "{library}"
    );
    let contracted = ptx(Contraction::On);
    assert!(contracted.contains("fma.rn.f32"), "{contracted}");
}

#[test]
fn a_kernel_with_a_syntax_error_fails_to_compile_with_the_compiler_log() {
    if !nvrtc_or_skip("a_kernel_with_a_syntax_error_fails_to_compile_with_the_compiler_log") {
        return;
    }
    let broken = format!(
        "{}\nextern \"C\" __global__ void broken(float* x) {{ x[0] = undefined_name; }}\n",
        Module::Unary.source()
    );
    let err = compile_source("broken.cu", &broken, "sm_90", Output::Cubin)
        .expect_err("a syntax error must not compile");
    let msg = err.to_string();
    assert!(
        msg.contains("broken.cu") && msg.contains("undefined_name"),
        "{msg}"
    );
}

/// A fused chain of every fixed op of op.rs's table (one step each, printed from
/// the table's CUDA expression, over the `fz_*` arithmetic of arith.cuh) compiles
/// with NVRTC for either dtype, stored and summed.
#[test]
fn a_fused_chain_of_every_fixed_op_compiles_with_nvrtc() {
    if !nvrtc_or_skip("a_fused_chain_of_every_fixed_op_compiles_with_nvrtc") {
        return;
    }
    use autograd_kernels::cuda::fused::kernel_source_many;
    use autograd_kernels::program::{FusedOp, Operand, Sink, Step};
    use autograd_kernels::{BinaryOp, DType, Layout, Shape, UnaryOp};
    let mut steps: Vec<Step> = Vec::new();
    for &op in BinaryOp::ALL {
        steps.push(Step {
            op: FusedOp::Binary(op),
            args: [Operand::Leaf(0), Operand::Leaf(1)].into_iter().collect(),
        });
    }
    for op in UnaryOp::all(3.0) {
        if !matches!(op, UnaryOp::Fill(_) | UnaryOp::Copy) {
            let last = Operand::Step(steps.len() - 1);
            steps.push(Step {
                op: FusedOp::Unary(op),
                args: [last].into_iter().collect(),
            });
        }
    }
    let l = Layout::contiguous(Shape::from([1000]));
    let last = steps.len() - 1;
    for dtype in [DType::F32, DType::F64] {
        for outputs in [
            vec![(last, Sink::Store)],
            vec![(last, Sink::Sum), (0, Sink::Store)],
        ] {
            let (_, name, source) = kernel_source_many(&steps, &[&l, &l], dtype, &outputs);
            let code = compile_source(&format!("{name}.cu"), &source, "compute_90", Output::Ptx)
                .unwrap_or_else(|e| panic!("{dtype} {outputs:?}: {e}\n{source}"));
            let ptx = String::from_utf8_lossy(&code);
            assert!(ptx.contains(&format!(".entry {name}(")), "{ptx}");
        }
    }
}
