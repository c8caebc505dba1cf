//! Fused elementwise chains on the GPU: one kernel per chain, its CUDA C++
//! generated from the chain's steps and compiled by NVRTC at the first use of that
//! chain's shape (the ops, how they connect, the dtype, which leaves are single
//! values), then cached. Scalars and generated ops' parameters are kernel
//! arguments, so a chain with other numbers reuses the compiled kernel.
//!
//! Each thread computes its elements through every step, reading each leaf once
//! and writing the result once. A fixed op's step is its CUDA expression from
//! op.rs's table, as its own kernel's (`unary.cu`, `binary.cu`), over the same
//! `fz_*` functions (`arith.cuh`: the round-to-nearest intrinsics, `__fadd_rn`,
//! `__dmul_rn`, .., which NVRTC never contracts into a fused multiply-add), so a
//! step computes what the op's own kernel computes; a generated
//! op's step calls the per-element function its own kernel calls (`<op>_at`, whose
//! arithmetic is written with the same intrinsics), from the op's program, which
//! the kernel includes once in a namespace named after the op's full path (two ops
//! may share a short name). A sum adds each value with `__dadd_rn`, never
//! contracted with the product that computed it. The program is compiled with
//! `--fmad=false` besides (`compile::Contraction::Off`), as the ops' own are.

use super::compile::{ARITH, BLOCK_REDUCE, Contraction};
use super::driver::{Driver, KernelArg, LaunchCfg};
use super::index::ReducePlan;
use super::{CudaElement, CudaStorage, alloc, launch_config, reduce};
use crate::generated::CUDA_PRELUDE;
use crate::program::{CudaCall, FusedOp, Operand, Sink, Step, check_program};
use crate::{
    BackendStorage, BinaryOp, DType, KernelError, Layout, ReduceOp, Result, Shape, UnaryOp,
};
use smallvec::SmallVec;
use std::fmt::Write;

/// Most leaves a fused CUDA kernel reads (pointer arguments).
pub const MAX_LEAVES: usize = 8;

/// Most scalars a fused CUDA kernel takes (a scalar op takes one, a generated op
/// four).
pub const MAX_SCALARS: usize = 16;

/// Most results a fused CUDA kernel writes (output pointers): a loss's chain and
/// its gradients, or several gradients over the same elements, in one pass.
pub const MAX_RESULTS: usize = 4;

/// The scalars a step takes as kernel arguments, in order: the one rule the
/// kernel's source, its argument list and [`fits`] follow.
fn scalars(op: &FusedOp) -> SmallVec<[f64; 4]> {
    match op {
        FusedOp::Unary(UnaryOp::Neg) | FusedOp::Binary(_) => SmallVec::new(),
        FusedOp::Unary(op) => SmallVec::from_elem(op.scalar(), 1),
        FusedOp::Kernel(k) => k.cuda().params.into_iter().collect(),
    }
}

/// Scalars `steps` take as kernel arguments.
pub fn scalars_of(steps: &[Step]) -> usize {
    steps.iter().map(|s| scalars(&s.op).len()).sum()
}

/// Whether a chain of `steps` over `leaves` leaves fits one fused CUDA kernel.
pub fn fits(steps: &[Step], leaves: usize) -> bool {
    leaves <= MAX_LEAVES && scalars_of(steps) <= MAX_SCALARS
}

/// Whether a program of `steps` over `leaves` leaves with `results` results fits
/// one fused CUDA kernel (see [`CudaStorage::run_fused_many`]).
pub fn fits_many(steps: &[Step], leaves: usize, results: usize) -> bool {
    fits(steps, leaves) && (1..=MAX_RESULTS).contains(&results)
}

impl CudaStorage {
    /// Runs `steps` (in dependency order; the last is the result) over `n` elements
    /// on the GPU as one kernel. `leaves[k]` is leaf `k`'s buffer with its layout
    /// broadcast to the output's shape; all hold `dtype` on one device. A leaf that
    /// is neither contiguous nor a run repeated (one value, a bias row) is copied
    /// contiguous first.
    pub fn run_fused(
        steps: &[Step],
        leaves: &[(&CudaStorage, &Layout)],
        n: usize,
        dtype: DType,
    ) -> Result<CudaStorage> {
        let last = steps.len().saturating_sub(1);
        let mut outs =
            CudaStorage::run_fused_many(steps, leaves, n, dtype, &[(last, Sink::Store)])?;
        outs.pop()
            .ok_or_else(|| KernelError::Internal("a fused chain returned no result".into()))
    }

    /// Runs `steps` over `n` elements as [`CudaStorage::run_fused`] does, as one
    /// kernel with several results: `outputs[k] = (j, sink)` makes result `k` the
    /// values of step `j`, stored, or summed (one element: the bits the sum
    /// reduction gives for the stored values). 1 to [`MAX_RESULTS`] results. Each
    /// thread computes its elements through every step once and writes each result,
    /// so chains over the same elements that read the same buffers (a loss and its
    /// gradients) read each buffer once between them: the GPU's counterpart of the
    /// CPU's `cpu::fused::run_many`.
    ///
    /// With a sum among the results, the kernel is laid out as the sum reduction
    /// is (`reduce.cu`'s `rows` kernel over `n` elements, split into the chunks it
    /// would be split into): each thread adds the values of the elements that
    /// reduction's thread would read, in its order, and the block adds its threads'
    /// sums with the same shuffles (`block_reduce.cuh`); a split sum's partial sums
    /// are reduced by the reduction's own second pass. So the sum is the same bits
    /// as the chain stored, then summed.
    pub fn run_fused_many(
        steps: &[Step],
        leaves: &[(&CudaStorage, &Layout)],
        n: usize,
        dtype: DType,
        outputs: &[(usize, Sink)],
    ) -> Result<Vec<CudaStorage>> {
        let Some(&(first, _)) = leaves.first() else {
            return Err(KernelError::Internal(
                "a fused chain reads no buffer".into(),
            ));
        };
        check_program(steps, leaves, n, outputs)?;
        if !fits_many(steps, leaves.len(), outputs.len()) {
            return Err(KernelError::Internal(format!(
                "a fused CUDA kernel takes at most {MAX_LEAVES} buffers and {MAX_SCALARS} \
                 scalars, and writes at most {MAX_RESULTS} results: got {} steps over {} \
                 buffers with {} results",
                steps.len(),
                leaves.len(),
                outputs.len()
            )));
        }
        for &(s, l) in leaves {
            first.same_kind(s)?;
            if s.dtype() != dtype {
                return Err(KernelError::DTypeMismatch {
                    lhs: dtype,
                    rhs: s.dtype(),
                });
            }
            crate::check::check_fits(s.len(), l)?;
        }
        with_dtype!(dtype, "fused program", T => launch_chain::<T>(steps, leaves, n, outputs))
    }
}

/// How a leaf is read in the kernel.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Read {
    /// `L[i]`, from the buffer's first element.
    Dense,
    /// `L[i % r]`: a run of `r` elements repeated (`L[0]` for one value).
    Period(usize),
}

/// A result's buffer while the kernel runs.
enum ResultBuf<T: CudaElement> {
    /// Stored: `n` elements.
    Store(super::Buf<T>),
    /// Summed in one block: the sum itself.
    Sum(super::Buf<T>),
    /// Summed in `splits` blocks: their partial sums, in double, for the sum
    /// reduction's second pass.
    Partial(super::Buf<f64>),
}

fn launch_chain<T: CudaElement>(
    steps: &[Step],
    leaves: &[(&CudaStorage, &Layout)],
    n: usize,
    outputs: &[(usize, Sink)],
) -> Result<Vec<CudaStorage>> {
    let dev = leaves[0].0.device().clone();
    let sums = outputs.iter().any(|&(_, sink)| sink == Sink::Sum);
    // With a sum: the launch the sum reduction of `n` elements would make.
    let summed = if sums {
        let plan = ReducePlan::new(&Layout::contiguous(Shape::from([n])), &[0])?;
        Some(reduce::plan_launch(dev.multiprocessors(), &plan))
    } else {
        None
    };
    let splits = summed.map_or(1, |lc| lc.splits);
    let mut bufs: Vec<ResultBuf<T>> = Vec::with_capacity(outputs.len());
    for &(_, sink) in outputs {
        // SAFETY: the kernel writes all n elements of a stored result, and one
        // element per block of a summed one (`splits` blocks).
        bufs.push(unsafe {
            match sink {
                Sink::Store => ResultBuf::Store(alloc::<T>(&dev, n)?),
                Sink::Sum if splits == 1 => ResultBuf::Sum(alloc::<T>(&dev, 1)?),
                Sink::Sum => ResultBuf::Partial(alloc::<f64>(&dev, splits)?),
            }
        });
    }
    let finish = |bufs: Vec<ResultBuf<T>>| -> Result<Vec<CudaStorage>> {
        bufs.into_iter()
            .map(|b| match b {
                ResultBuf::Store(out) => Ok(CudaStorage::new(out, n, dev.clone())),
                ResultBuf::Sum(out) => Ok(CudaStorage::new(out, 1, dev.clone())),
                ResultBuf::Partial(out) => {
                    // The partial sums, [splits, 1], reduced over the first axis:
                    // the sum reduction's second pass.
                    let partial = CudaStorage::new(out, splits, dev.clone());
                    let pl = Layout::contiguous(Shape::from([splits, 1]));
                    reduce::pass::<f64, T>(&partial, &pl, ReduceOp::Sum, &[0])
                }
            })
            .collect()
    };
    if n == 0 && !sums {
        return finish(bufs);
    }
    // Leaves as the kernel reads them: dense from element 0, a run repeated (read
    // at `i % r` of a copy of the run), or copied dense.
    let mut copies: Vec<Option<CudaStorage>> = Vec::with_capacity(leaves.len());
    for &(s, l) in leaves {
        copies.push(match read_of(l) {
            Read::Dense if l.is_contiguous() && l.offset() == 0 => None,
            Read::Dense => Some(s.cast(l, T::DTYPE)?),
            Read::Period(r) => {
                let run = Layout::new(crate::Shape::from([r]), &[1], l.offset())?;
                Some(s.cast(&run, T::DTYPE)?)
            }
        });
    }
    let buffers: Vec<&CudaStorage> = copies
        .iter()
        .zip(leaves)
        .map(|(c, &(s, _))| c.as_ref().unwrap_or(s))
        .collect();
    let layouts: Vec<&Layout> = leaves.iter().map(|&(_, l)| l).collect();
    let (key, name, source) = kernel_source_wide(steps, &layouts, T::DTYPE, outputs, splits > 1);
    let f = dev.generated_function(&key, &source, &name, Contraction::Off)?;
    let slices = buffers
        .iter()
        .map(|b| b.slice::<T>())
        .collect::<Result<Vec<_>>>()?;
    let (cfg, chunk) = match summed {
        Some(lc) => (
            LaunchCfg {
                grid: (1, lc.splits as u32, 1),
                block: (lc.block, 1, 1),
                shared_mem_bytes: 0,
            },
            lc.chunk,
        ),
        None => (launch_config(&dev, n), n),
    };
    let mut args = vec![KernelArg::U64(n as u64), KernelArg::U64(chunk as u64)];
    for k in 0..MAX_LEAVES {
        // Unused pointer slots repeat the first leaf (never read).
        args.push(T::input(slices[k.min(slices.len() - 1)]));
    }
    let spare = MAX_RESULTS - bufs.len();
    for b in &mut bufs {
        args.push(match b {
            ResultBuf::Store(out) | ResultBuf::Sum(out) => T::output(out),
            ResultBuf::Partial(out) => f64::output(out),
        });
    }
    // Unused result slots: the first leaf, read-only (never written).
    args.extend((0..spare).map(|_| T::input(slices[0])));
    let mut values: Vec<f64> = steps.iter().flat_map(|s| scalars(&s.op)).collect();
    values.resize(MAX_SCALARS, 0.0);
    args.extend(values.into_iter().map(KernelArg::F64));
    // SAFETY: the arguments match the generated kernel's parameters (n, chunk,
    // MAX_LEAVES const T*, MAX_RESULTS pointers, MAX_SCALARS doubles); dense leaves
    // hold n elements from their first (checked, or copied so), periodic leaves
    // their run of r; a stored result holds n, a summed one a value per block of
    // the grid's `splits`; the kernel writes only the first `outputs.len()` result
    // slots.
    unsafe { dev.driver.launch(&f, &name, cfg, &mut args)? };
    drop(args);
    finish(bufs)
}

/// How a leaf of layout `l` is read: a run repeated (one value, or a bias row:
/// only the run is copied), or dense (a view that is not contiguous from its
/// first element is copied so first).
fn read_of(l: &Layout) -> Read {
    match l.broadcast_period() {
        Some(r) if !l.is_contiguous() && l.numel() > 0 => Read::Period(r),
        _ => Read::Dense,
    }
}

/// The fused kernel of `steps` over leaves of `layouts` in `dtype`: its program's
/// cache key, the kernel's name, and the program's CUDA C++ (compiled after
/// nothing: it holds the generated ops' prelude and programs it calls).
pub fn kernel_source(
    steps: &[Step],
    layouts: &[&Layout],
    dtype: DType,
) -> (String, String, String) {
    let last = steps.len().saturating_sub(1);
    kernel_source_many(steps, layouts, dtype, &[(last, Sink::Store)])
}

/// [`kernel_source`] for a kernel with several results: result `k` holds the
/// values of step `j` for `outputs[k] = (j, sink)`, stored or summed (see
/// [`CudaStorage::run_fused_many`]; a sum over one block, as the sum reduction
/// of fewer than 4097 elements runs).
pub fn kernel_source_many(
    steps: &[Step],
    layouts: &[&Layout],
    dtype: DType,
    outputs: &[(usize, Sink)],
) -> (String, String, String) {
    kernel_source_wide(steps, layouts, dtype, outputs, false)
}

/// [`kernel_source_many`]; with `wide`, summed results are the partial sums of
/// the kernel's blocks, in double (a sum split into chunks, as the sum reduction
/// of more than 4096 elements is).
pub fn kernel_source_wide(
    steps: &[Step],
    layouts: &[&Layout],
    dtype: DType,
    outputs: &[(usize, Sink)],
    wide: bool,
) -> (String, String, String) {
    let reads: Vec<Read> = layouts.iter().map(|l| read_of(l)).collect();
    let ty = if dtype == DType::F32 {
        "float"
    } else {
        "double"
    };
    let source = source(steps, &reads, ty, outputs, wide);
    let key = format!("fused_{:016x}", fnv(&source));
    let name = format!("{key}_{dtype}");
    let source = source.replace("FUSED_KERNEL", &name);
    (key, name, source)
}

/// The namespace a chain's kernel holds the program of the op at `program` (its
/// full path) in.
fn namespace(program: &str) -> String {
    format!("op_{:016x}", fnv(program))
}

/// FNV-1a of the source: the chain's cache key (the source is the chain's shape).
fn fnv(s: &str) -> u64 {
    s.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// The fused kernel's source: [`preamble`], then the kernel `<key>_<dtype>`
/// (named by the caller from the source's hash, so it is declared with a
/// placeholder). Result `k` is written to `out<k>`: the values of step `j` for
/// `outputs[k] = (j, sink)`, stored, or summed per block (in double with `wide`);
/// the result slots past the last are never written. Without a sum the kernel is
/// a grid-stride loop; with one, the sum reduction's `rows` loop over chunks of
/// `chunk` elements.
fn source(
    steps: &[Step],
    reads: &[Read],
    ty: &str,
    outputs: &[(usize, Sink)],
    wide: bool,
) -> String {
    let sums = outputs.iter().any(|&(_, sink)| sink == Sink::Sum);
    let mut s = preamble(steps, ty == "double", sums);
    let leaves: Vec<String> = (0..MAX_LEAVES)
        .map(|k| format!("const {ty}* __restrict__ L{k}"))
        .collect();
    let outs: Vec<String> = (0..MAX_RESULTS)
        .map(|k| {
            let t = match outputs.get(k) {
                Some((_, Sink::Sum)) if wide => "double",
                _ => ty,
            };
            format!("{t}* __restrict__ out{k}")
        })
        .collect();
    let params: Vec<String> = (0..MAX_SCALARS).map(|k| format!("double s{k}")).collect();
    let _ = writeln!(
        s,
        "extern \"C\" __global__ void FUSED_KERNEL(unsigned long long n, unsigned long long chunk, \
         {}, {}, {}) {{\n\
         \x20 typedef {ty} T;",
        leaves.join(", "),
        outs.join(", "),
        params.join(", ")
    );
    if sums {
        // As reduce_rows reads its chunk (blockIdx.y) of a one-output sum.
        s.push_str(
            "  const unsigned long long start = (unsigned long long)blockIdx.y * chunk;\n\
             \x20 const unsigned long long end = n < start + chunk ? n : start + chunk;\n",
        );
        for (k, _) in outputs.iter().enumerate().filter(|(_, o)| o.1 == Sink::Sum) {
            let _ = writeln!(s, "  double a{k} = 0.0;");
        }
        s.push_str(
            "  for (unsigned long long i = start + threadIdx.x; i < end; i += blockDim.x) {\n",
        );
    } else {
        s.push_str(
            "  for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; \
             i < n; i += (unsigned long long)gridDim.x * blockDim.x) {\n",
        );
    }
    for (k, read) in reads.iter().enumerate() {
        let at = match read {
            Read::Dense => "i".to_string(),
            Read::Period(1) => "0".to_string(),
            Read::Period(r) => format!("i % {r}ull"),
        };
        let _ = writeln!(s, "    const T l{k} = L{k}[{at}];");
    }
    let mut next_scalar = 0;
    for (j, step) in steps.iter().enumerate() {
        // This step's scalars are kernel arguments s<first>.. .
        let first = next_scalar;
        next_scalar += scalars(&step.op).len();
        let expr = step_expr(step, first..next_scalar);
        let _ = writeln!(s, "    const T v{j} = {expr};");
    }
    for (k, &(j, sink)) in outputs.iter().enumerate() {
        let _ = match sink {
            Sink::Store => writeln!(s, "    out{k}[i] = v{j};"),
            // As ReduceSum combines: the double sum so far, plus the value (never
            // contracted with the product that computed the value).
            Sink::Sum => writeln!(s, "    a{k} = fz_add(a{k}, (double)v{j});"),
        };
    }
    s.push_str("  }\n");
    for (k, _) in outputs.iter().enumerate().filter(|(_, o)| o.1 == Sink::Sum) {
        let t = if wide { "double" } else { "T" };
        let _ = writeln!(
            s,
            "  a{k} = block_reduce<ReduceSum<T> >(a{k}, (double*)reduce_scratch);\n\
             \x20 if (threadIdx.x == 0) {{ out{k}[blockIdx.y] = ({t})a{k}; }}"
        );
    }
    s.push_str("}\n");
    s
}

/// What a fused kernel's source holds before the kernel: the prelude, the
/// programs of the generated ops `steps` call (each once, by full path, in a
/// namespace of its own, without their entry points: `AUTOGRAD_FUNCTIONS_ONLY`),
/// of both only the text for the kernel's dtype (`f64`, or f32) and the
/// derivative orders its steps evaluate ([`select`]), the fixed ops' arithmetic
/// (`arith.cuh`) and, with a sum, the block's sum (`block_reduce.cuh`).
fn preamble(steps: &[Step], f64: bool, sums: bool) -> String {
    // The derivative orders each program's steps evaluate (bit k: order k), and all
    // of them together (the prelude's dual numbers and seeds).
    let mut programs: Vec<(&str, &str, u32)> = Vec::new();
    for step in steps {
        if let FusedOp::Kernel(k) = &step.op {
            let call = k.cuda();
            let order = 1u32 << (call.what & 0xff).min(31);
            match programs.iter_mut().find(|p| p.0 == call.program) {
                Some(p) => p.2 |= order,
                None => programs.push((call.program, call.source, order)),
            }
        }
    }
    let all = programs.iter().fold(0, |m, p| m | p.2);
    let mut s = select(
        CUDA_PRELUDE,
        Guards {
            f64,
            orders: all,
            double_sum: false,
        },
    );
    // The generated ops' programs without their entry points, each once (by the
    // op's full path) in a namespace of its own: two ops of one name (a user's
    // `gelu` and the standard one) each keep their functions; of each, only the
    // dtype and derivative orders the chain evaluates.
    s.push_str("\n#define AUTOGRAD_FUNCTIONS_ONLY\n");
    for &(program, source, orders) in &programs {
        let _ = writeln!(
            s,
            "// {program}\nnamespace {} {{\n{}\n}}",
            namespace(program),
            select(
                source,
                Guards {
                    f64,
                    orders,
                    double_sum: false
                }
            )
        );
    }
    // The fixed ops' arithmetic, as unary.cu and binary.cu compute it: of the
    // kernel's dtype (and the double addition, which a sum adds with).
    s.push_str(&select(
        ARITH,
        Guards {
            f64,
            orders: 0,
            double_sum: sums,
        },
    ));
    if sums {
        s.push_str(BLOCK_REDUCE);
    }
    s
}

/// The CUDA expression of `step`, whose scalars are the kernel arguments
/// `s<k>` for `k` in `params`.
fn step_expr(step: &Step, params: std::ops::Range<usize>) -> String {
    let first = params.start;
    let arg = |a: &Operand| match a {
        Operand::Leaf(k) => format!("l{k}"),
        Operand::Step(i) => format!("v{i}"),
    };
    match &step.op {
        FusedOp::Binary(op) => {
            let (x, y) = (arg(&step.args[0]), arg(&step.args[1]));
            binary(*op, &x, &y)
        }
        FusedOp::Unary(op) => {
            let x = arg(&step.args[0]);
            unary(*op, &x, &format!("(T)s{first}"))
        }
        FusedOp::Kernel(k) => {
            let call: CudaCall = k.cuda();
            let mut xs: Vec<String> = step.args.iter().take(call.arity).map(arg).collect();
            let g = if call.derivative {
                step.args
                    .get(call.arity)
                    .map(arg)
                    .unwrap_or_else(|| xs[0].clone())
            } else {
                xs[0].clone()
            };
            while xs.len() < 4 {
                xs.push(xs[0].clone());
            }
            let p: Vec<String> = params.map(|k| format!("s{k}")).collect();
            format!(
                "{ns}::{name}_at<T>({what}ull, {xs}, {g}, {ns}::{name}_make({p}))",
                ns = namespace(call.program),
                name = call.name,
                what = call.what,
                xs = xs.join(", "),
                p = p.join(", ")
            )
        }
    }
}

/// What a fused kernel keeps of the prelude, the ops' programs and `arith.cuh`:
/// its dtype (f64, or f32), the derivative orders its steps evaluate (bit k:
/// order k), and whether it sums in double (an f32 kernel's sum).
#[derive(Clone, Copy)]
struct Guards {
    f64: bool,
    orders: u32,
    double_sum: bool,
}

impl Guards {
    /// Whether the text under the guard `line` (one of the exact lines the
    /// prelude and the macro write) is kept; `None` for any other line.
    fn keeps(self, line: &str) -> Option<bool> {
        match line.trim_end() {
            "#if AUTOGRAD_F32" => Some(!self.f64),
            "#if AUTOGRAD_F64" => Some(self.f64),
            "#if AUTOGRAD_F64 || AUTOGRAD_DOUBLE_SUM" => Some(self.f64 || self.double_sum),
            // The entry points and their loop: the kernel calls `<op>_at` alone.
            "#ifndef AUTOGRAD_FUNCTIONS_ONLY" => Some(false),
            // The prelude's defaults (every guard on): resolved here instead.
            "#ifndef AUTOGRAD_F32" | "#ifndef AUTOGRAD_F64" | "#ifndef AUTOGRAD_ORDERS" => {
                Some(false)
            }
            l => {
                let bits = l.strip_prefix("#if AUTOGRAD_ORDERS & 0x")?;
                Some(u32::from_str_radix(bits, 16).ok()? & self.orders != 0)
            }
        }
    }
}

/// `text` (the prelude, or an op's program) with the sections under the guards
/// [`Guards::keeps`] knows resolved as the preprocessor would with `guards`
/// defined: their lines kept or dropped, the guards themselves dropped. Other
/// preprocessor conditionals are left as they are (nested ones are followed to
/// their `#endif`).
fn select(text: &str, guards: Guards) -> String {
    // Per open conditional: `Some(kept)` for a known guard, `None` for another.
    let mut open: Vec<Option<bool>> = Vec::new();
    let mut out = String::with_capacity(text.len());
    for line in text.lines() {
        let directive = line.trim_start();
        let kept = open.iter().all(|g| g.unwrap_or(true));
        if directive.starts_with("#if") {
            let guard = guards.keeps(directive);
            open.push(guard);
            if guard.is_some() {
                continue;
            }
        } else if directive.starts_with("#else") {
            if let Some(Some(g)) = open.last_mut() {
                *g = !*g;
                continue;
            }
        } else if directive.starts_with("#endif") && open.pop().flatten().is_some() {
            continue;
        }
        if kept {
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}

/// The CUDA expression of op.rs's table for a step: `expr` with each identifier
/// `x`, `y` and `s` replaced by the step's operands and parameter.
fn substitute(expr: &str, x: &str, y: &str, s: &str) -> String {
    let mut out = String::with_capacity(expr.len() + x.len() + y.len());
    let mut rest = expr;
    while let Some(c) = rest.chars().next() {
        if c.is_ascii_alphabetic() || c == '_' {
            let end = rest
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(rest.len());
            let word = &rest[..end];
            out.push_str(match word {
                "x" => x,
                "y" => y,
                "s" => s,
                w => w,
            });
            rest = &rest[end..];
        } else {
            out.push(c);
            rest = &rest[c.len_utf8()..];
        }
    }
    out
}

/// A fused step of the binary `op` over `x` and `y`.
fn binary(op: BinaryOp, x: &str, y: &str) -> String {
    substitute(op.cuda(), x, y, "")
}

/// A fused step of the unary `op` over `x` with the parameter `s` (a chain never
/// holds `Fill` or `Copy`; the value passes through).
fn unary(op: UnaryOp, x: &str, s: &str) -> String {
    match op {
        UnaryOp::Fill(_) | UnaryOp::Copy => x.to_string(),
        op => substitute(op.cuda(), x, "", s),
    }
}

#[cfg(test)]
mod tests {
    use super::{Guards, binary, select, unary};
    use crate::{BinaryOp, UnaryOp};

    /// Known guards are resolved (their lines kept or dropped, the guards
    /// dropped), other conditionals kept as they are, nested or not.
    #[test]
    fn select_resolves_the_known_guards_alone() {
        let text = "a\n#if AUTOGRAD_F64\nd\n#ifdef X\nx\n#endif\n#else\nf\n#endif\n\
                    #if AUTOGRAD_ORDERS & 0x4\ntwo\n#endif\n#ifdef Y\n#if AUTOGRAD_ORDERS & 0x2\n\
                    one\n#endif\n#endif\n#ifndef AUTOGRAD_FUNCTIONS_ONLY\nentry\n#endif\nz\n";
        let f32_first = select(
            text,
            Guards {
                f64: false,
                orders: 0x2,
                double_sum: false,
            },
        );
        assert_eq!(f32_first, "a\nf\n#ifdef Y\none\n#endif\nz\n");
        let f64_second = select(
            text,
            Guards {
                f64: true,
                orders: 0x4,
                double_sum: false,
            },
        );
        assert_eq!(
            f64_second,
            "a\nd\n#ifdef X\nx\n#endif\ntwo\n#ifdef Y\n#endif\nz\n"
        );
    }

    /// A step prints its op's expression from op.rs's table with the operands
    /// and the parameter in place of `x`, `y` and `s` (identifiers only: `T` and
    /// the helpers' names stay).
    #[test]
    fn steps_print_the_tables_expressions() {
        assert_eq!(binary(BinaryOp::Add, "l0", "v1"), "fz_add(l0, v1)");
        assert_eq!(binary(BinaryOp::Le, "x", "y"), "fz_mask<T>(x <= y)");
        assert_eq!(binary(BinaryOp::Gt, "l1", "l0"), "fz_mask<T>(l1 > l0)");
        assert_eq!(unary(UnaryOp::Neg, "v2", "(T)s0"), "(-v2)");
        assert_eq!(
            unary(UnaryOp::PowScalar(3.0), "l0", "(T)s3"),
            "fz_pow(l0, (T)s3)"
        );
        assert_eq!(
            unary(UnaryOp::DivScalar(2.0), "v0", "(T)s1"),
            "fz_div(v0, (T)s1)"
        );
        assert_eq!(unary(UnaryOp::Copy, "l0", "(T)s0"), "l0");
    }
}
