//! How each kernel source file becomes the text NVRTC compiles: `common.cuh`, the
//! file's headers, the file, then (for `unary.cu` and `binary.cu`) one line per op
//! of op.rs's table instantiating its kernels from the op's CUDA expression. Used
//! by `compile.rs` at run time and by `build.rs` for the emulated device (which
//! compiles op.rs's table into itself), so both compile the same text.

// `crate::op` is op.rs both in this crate and in build.rs, which includes both files.
use crate::op::{BinaryOp, UnaryOp};

/// The headers `file` is compiled after, behind `common.cuh`.
pub fn headers(file: &str) -> &'static [&'static str] {
    match file {
        "unary.cu" | "binary.cu" => &["arith.cuh"],
        "reduce.cu" => &["block_reduce.cuh"],
        _ => &[],
    }
}

/// The macro of `file` that instantiates one op's kernels (`UNARY(name, expr)`).
fn instantiating_macro(file: &str) -> Option<&'static str> {
    match file {
        "unary.cu" => Some("UNARY"),
        "binary.cu" => Some("BINARY"),
        _ => None,
    }
}

/// The full source of the module in `file`: `text(name)` is the content of each
/// file of `cuda/`; the instantiation lines follow op.rs's table, in its order.
pub fn module_source(file: &str, text: &dyn Fn(&str) -> String) -> String {
    let mut s = text("common.cuh");
    for h in headers(file) {
        s.push_str(&format!("\n#line 1 \"{h}\"\n"));
        s.push_str(&text(h));
    }
    s.push_str(&format!("\n#line 1 \"{file}\"\n"));
    s.push_str(&text(file));
    if let Some(name) = instantiating_macro(file) {
        let ops: Vec<(&str, &str)> = if file == "unary.cu" {
            UnaryOp::all(0.0)
                .iter()
                .map(|op| (op.name(), op.cuda()))
                .collect()
        } else {
            BinaryOp::ALL
                .iter()
                .map(|op| (op.name(), op.cuda()))
                .collect()
        };
        s.push_str(&format!("\n#line 1 \"{file} (op.rs's table)\"\n"));
        for (op, expr) in ops {
            s.push_str(&format!("{name}({op}, {expr})\n"));
        }
    }
    s
}
