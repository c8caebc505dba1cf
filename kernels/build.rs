//! With the `cuda-emulator` feature (tests only), compiles the CUDA kernel sources
//! as host C++ into the emulator's shared library; otherwise does nothing.
//!
//! Each module's source is written exactly as `cuda/compile.rs` assembles it for
//! NVRTC (`cuda/sources.rs`, compiled into this script: `common.cuh`, the headers,
//! the `.cu` file, and for `unary.cu` and `binary.cu` one line per op of op.rs's
//! table, which is compiled into this script too), behind one
//! `#include "shim.h"`; `cuda::emu` checks at run time that the two agree.

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    #[cfg(feature = "cuda-emulator")]
    emulator::build();
}

/// The fixed ops' table (`BinaryOp::ALL`, `UnaryOp::all`, `name`, `cuda`): the
/// kernels of `unary.cu` and `binary.cu` are instantiated from it. Only its enums
/// are used here; its CPU formulas and dispatch macros are not.
#[cfg(feature = "cuda-emulator")]
#[allow(dead_code, unused_imports, unused_macros)]
#[path = "src/op.rs"]
mod op;

#[cfg(feature = "cuda-emulator")]
#[path = "src/cuda/sources.rs"]
mod sources;

/// What op.rs's `mask` asks of an element type.
#[cfg(feature = "cuda-emulator")]
#[allow(dead_code)]
trait Element: Sized {
    const ONE: Self;
    const ZERO: Self;
}

#[cfg(feature = "cuda-emulator")]
mod emulator {
    use crate::sources::module_source;
    use std::path::{Path, PathBuf};

    const MODULES: [&str; 4] = ["unary.cu", "binary.cu", "reduce.cu", "copy.cu"];

    fn read(p: &Path) -> String {
        println!("cargo:rerun-if-changed={}", p.display());
        std::fs::read_to_string(p).unwrap_or_else(|e| panic!("reading {}: {e}", p.display()))
    }

    fn target_arch() -> String {
        std::env::var("CARGO_CFG_TARGET_ARCH").unwrap_or_default()
    }

    /// Whether the code can use fused multiply-adds: AArch64 always; x86-64 where
    /// the machine building it has them (the emulator runs where it is built).
    fn fma() -> bool {
        match target_arch().as_str() {
            "aarch64" => true,
            #[cfg(target_arch = "x86_64")]
            "x86_64" => std::arch::is_x86_feature_detected!("fma"),
            _ => false,
        }
    }

    pub fn build() {
        let cuda = PathBuf::from("src/cuda");
        let emu = cuda.join("emu");
        let out = PathBuf::from(std::env::var("OUT_DIR").expect("OUT_DIR"));
        read(Path::new("src/op.rs"));
        read(&cuda.join("sources.rs"));
        read(&emu.join("shim.h"));
        read(&emu.join("runtime.cpp"));
        // The raw programs' parameter struct, which the runtime passes by value.
        read(Path::new("src/raw.cuh"));
        let mut files = vec![emu.join("runtime.cpp")];
        // Each file read through `read`: the script reruns when one changes.
        let text = |name: &str| read(&cuda.join(name));
        for m in MODULES {
            // What compile.rs hands NVRTC, byte for byte, behind the shim.
            let source = module_source(m, &text);
            let stem = m.trim_end_matches(".cu");
            std::fs::write(out.join(format!("{stem}.source")), &source).expect("write source");
            let unit = out.join(format!("emu_{stem}.cpp"));
            std::fs::write(&unit, format!("#include \"shim.h\"\n{source}")).expect("write unit");
            files.push(unit);
        }
        let mut build = cc::Build::new();
        build
            .cpp(true)
            .pic(true)
            .opt_level(2)
            .debug(false)
            .warnings(false)
            .include(&emu)
            .flag("-std=c++17")
            // As NVRTC is told nothing about fast math. Products and sums are
            // contracted into fused multiply-adds wherever g++ can (NVRTC's
            // default; the library compiles its own programs without it, so that
            // a result that changes with contraction shows here, not on a GPU).
            .flag("-ffp-contract=fast")
            .files(&files);
        let fma = fma();
        if fma && target_arch() == "x86_64" {
            build.flag("-mfma");
        }
        println!(
            "cargo:rustc-env=AUTOGRAD_CUDA_EMU_FMA={}",
            if fma { "1" } else { "0" }
        );
        let objects = build.compile_intermediates();
        let lib = out.join("libautograd_cuda_emu.so");
        let status = build
            .get_compiler()
            .to_command()
            .arg("-shared")
            .arg("-o")
            .arg(&lib)
            .args(&objects)
            .arg("-lpthread")
            .status()
            .unwrap_or_else(|e| panic!("linking the CUDA emulator: {e}"));
        assert!(status.success(), "linking the CUDA emulator failed");
    }
}
