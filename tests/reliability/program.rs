//! A small binary format of op programs, and its interpreter: the fuzz target
//! (`fuzz/fuzz_targets/op_program.rs`) and the test suite (`programs.rs`) both run
//! programs through [`execute`], so a crash the fuzzer finds is replayed here.
//!
//! # Format
//!
//! A program is a byte string, read front to back; a read past the end gives 0, so
//! every byte string is a program. Byte 0 picks the dtype (bit 0: f64, else f32).
//! Then instructions follow, each an opcode byte and its operand bytes, until the
//! bytes run out (at most [`MAX_STEPS`] instructions). Opcodes (bit 7 cleared) 120
//! to 123 are the misuse instructions (a parameter updated through a clone, an op
//! parameter that panics when its graph is dropped, a thread that exits holding a
//! deep graph in its thread-local, an optimizer step listing a parameter twice);
//! others are taken modulo the number of op instructions. Bit 7 runs the op under
//! `no_grad`. Operands:
//! - a *slot* byte picks a tensor of the pool (modulo its length; ops on an empty
//!   pool are skipped);
//! - an *axis* byte is read as `i8` and taken modulo 7 (so -6..=6);
//! - a *size* byte is `0..=5` for `b % 8 < 6`, else one of three sizes no tensor
//!   can have (`usize::MAX`, `usize::MAX / 2 + 1`, `2^61`): never a valid but
//!   enormous size, so the interpreter does not exhaust memory by design;
//! - a *value* byte picks one of 16 values including 0, -0, NaN and ±inf.
//! - an *index* operand (of `index_select`, `index_add`, and `cross_entropy`'s
//!   targets) is a slot's tensor read as `i64` positions, or the float tensor
//!   itself (refused) when its slot byte is a multiple of 8.
//!
//! # What is checked
//!
//! Running a program never panics. Every op either returns a tensor whose shape,
//! dtype and values are self-consistent, or an `Error` whose message is non-empty.
//! Backward passes either succeed, giving every leaf that received a gradient a
//! gradient of its own shape and dtype, or fail with an `Error`. When the program
//! ends and its tensors are dropped, the storage bytes this thread allocated are
//! all freed (no leak on any path the program took).
//!
//! [`fused_matches_unfused`] runs a program twice, every elementwise op deferred
//! into fused chains and fusion off, and checks that the two runs observe the same:
//! each op's shape, dtype or error, each backward's outcome, and the values of
//! every result and gradient, read only when the program ends (so that chains grow
//! across the whole program, through backward passes and in-place updates), bit
//! for bit (every NaN counting as one: their signs are not compared).
//!
//! With `PROGRAM_TRACE` set, each instruction, its outcome and the pool are printed
//! to stderr (to read a crash the fuzzer found).

use autograd::fusion::{FusionConfig, with_config};
use autograd::memory::thread_stats;
use autograd::optim::{Optimizer, Sgd};
use autograd::prelude::*;
use autograd::{anomaly, ops};
use std::cell::RefCell;
use std::sync::Mutex;

/// Instructions run per program at most.
pub const MAX_STEPS: usize = 48;
/// Tensors the pool holds; a new result replaces the oldest beyond that.
const POOL: usize = 8;
/// Results with more elements are dropped at once (views of huge broadcasts can be
/// valid; computing with them would only be slow).
const MAX_NUMEL: usize = 1024;

const VALUES: [f64; 16] = [
    0.0,
    -0.0,
    1.0,
    -1.0,
    0.5,
    2.0,
    -2.5,
    3.0,
    1e-3,
    100.0,
    f64::NAN,
    f64::INFINITY,
    f64::NEG_INFINITY,
    1e300,
    -1e-300,
    0.25,
];

const HUGE: [usize; 3] = [usize::MAX, usize::MAX / 2 + 1, 1 << 61];

/// What one program did, for the statistics of a run.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Report {
    pub ops_ok: usize,
    pub ops_rejected: usize,
    pub backward_ok: usize,
    pub backward_failed: usize,
    /// Results and gradients still deferred when the program ended and read them
    /// (a logged run with fusion on).
    pub read_deferred: usize,
}

struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Reader<'_> {
    fn byte(&mut self) -> u8 {
        let b = self.bytes.get(self.at).copied().unwrap_or(0);
        self.at += 1;
        b
    }

    fn done(&self) -> bool {
        self.at >= self.bytes.len()
    }

    fn axis(&mut self) -> isize {
        (self.byte() as i8 % 7) as isize
    }

    fn size(&mut self) -> usize {
        let b = self.byte();
        if b % 8 < 6 {
            (b % 8) as usize
        } else {
            HUGE[(b / 8) as usize % HUGE.len()]
        }
    }

    fn value(&mut self) -> f64 {
        VALUES[(self.byte() % 16) as usize]
    }

    fn shape(&mut self) -> Vec<usize> {
        let rank = self.byte() % 5;
        (0..rank).map(|_| self.size()).collect()
    }
}

/// An index operand: the slot's values as `i64` positions (truncated toward zero
/// and saturated, as Rust's `as`; NaN is 0), or the float tensor itself when the
/// slot byte is a multiple of 8 (the op must refuse it).
fn as_positions(t: &Tensor, slot_byte: u8) -> Tensor {
    if slot_byte.is_multiple_of(8) {
        return t.clone();
    }
    autograd::compute::cast(t, DType::I64).expect("a cast to i64 of a pool tensor")
}

/// `cross_entropy` with the second operand's values as class indices (as
/// [`as_positions`] reads them).
fn cross_entropy_of_classes(logits: &Tensor, targets: &Tensor) -> Result<Tensor> {
    ops::cross_entropy(logits, &as_positions(targets, 1))
}

struct Machine {
    pool: Vec<Tensor>,
    dtype: DType,
    report: Report,
    /// `PROGRAM_TRACE` set: print each instruction and its outcome.
    trace: bool,
    /// Set for [`fused_matches_unfused`]: what the program observed, a line each.
    log: Option<Vec<String>>,
    /// With `log`: the results and gradients, read when the program ends.
    held: Vec<(String, Tensor)>,
}

impl Machine {
    fn slot(&self, b: u8) -> Option<Tensor> {
        (!self.pool.is_empty()).then(|| self.pool[b as usize % self.pool.len()].clone())
    }

    fn keep(&mut self, t: Tensor) {
        if t.numel() > MAX_NUMEL {
            return;
        }
        if self.pool.len() == POOL {
            self.pool.remove(0);
        }
        self.pool.push(t);
    }

    /// Adds a line to the log, when there is one.
    fn note(&mut self, line: impl FnOnce() -> String) {
        if let Some(log) = &mut self.log {
            log.push(line());
        }
    }

    /// With a log: holds the leaves' gradients as they are now, to be read when the
    /// program ends.
    fn hold_grads(&mut self, what: &str) {
        if self.log.is_none() {
            return;
        }
        for (i, x) in self.pool.iter().enumerate() {
            if let Some(g) = x.grad() {
                self.held
                    .push((format!("{what}: gradient of pool tensor {i}"), g));
            }
        }
    }

    /// Checks a result or an error, and keeps the result.
    fn outcome(&mut self, what: &str, result: Result<Tensor>) {
        if self.trace {
            eprintln!("  {what}: {:?}", result.as_ref().map(|t| t.dims().to_vec()));
        }
        match result {
            Ok(t) => {
                self.report.ops_ok += 1;
                let numel: usize = t.dims().iter().product();
                assert_eq!(numel, t.numel(), "{what}: element count of {}", t.shape());
                if let Some(log) = &mut self.log {
                    let line = format!("{what}: {} {}", t.shape(), t.dtype());
                    if numel <= MAX_NUMEL {
                        self.held.push((format!("{} {line}", log.len()), t.clone()));
                    }
                    log.push(line);
                } else if numel <= MAX_NUMEL {
                    let values = t.to_vec::<f64>().expect("a result can be read");
                    assert_eq!(values.len(), numel, "{what}: {} values", values.len());
                }
                self.keep(t);
            }
            Err(e) => {
                self.report.ops_rejected += 1;
                assert!(
                    !e.to_string().is_empty(),
                    "{what}: an error without a message"
                );
                self.note(|| format!("{what}: {e}"));
            }
        }
    }

    fn leaf(&mut self, r: &mut Reader) {
        let flags = r.byte();
        let dims: Vec<usize> = (0..flags % 5).map(|_| (r.byte() % 5) as usize).collect();
        let n: usize = dims.iter().product();
        let values: Vec<f64> = (0..n).map(|_| r.value()).collect();
        let t = Tensor::from_slice(&values, dims).expect("element count matches");
        let t = autograd::compute::cast(&t, self.dtype).expect("a cast of a fresh tensor");
        let t = match flags / 8 % 3 {
            // A strided view of the same values.
            1 if t.rank() >= 2 => {
                autograd::compute::transpose(&t, 0, t.rank() - 1).expect("transpose within rank")
            }
            2 if t.rank() >= 1 => autograd::compute::broadcast_to(
                &t,
                [2].iter().chain(t.dims()).copied().collect::<Vec<_>>(),
            )
            .expect("broadcast to a new leading axis"),
            _ => t,
        };
        self.keep(t.with_requires_grad(flags & 0x20 != 0 || flags & 0x40 != 0));
    }

    fn backward(&mut self, r: &mut Reader) {
        let (b, flags) = (r.byte(), r.byte());
        let Some(root) = self.slot(b) else { return };
        let mut opts = BackwardOptions::default()
            .retain_graph(flags & 1 != 0)
            .create_graph(flags & 2 != 0);
        if root.numel() != 1 {
            match root.ones_like() {
                Ok(seed) => opts = opts.seed(seed),
                Err(_) => return,
            }
        }
        let _anomaly = (flags & 4 != 0).then(anomaly::enable);
        let result = if flags & 8 != 0 {
            // Functional gradient with respect to every pool tensor (unused ones are
            // an error unless allowed).
            let inputs: Vec<&Tensor> = self.pool.iter().collect();
            let opts = opts.allow_unused(flags & 16 == 0);
            grad(&root, &inputs, opts).map(|grads| {
                for (i, (g, x)) in grads.iter().zip(&self.pool).enumerate() {
                    if let Some(g) = g {
                        assert_eq!(
                            g.shape(),
                            x.shape(),
                            "grad() of {} has shape {}",
                            x.shape(),
                            g.shape()
                        );
                        if self.log.is_some() {
                            self.held
                                .push((format!("grad() for pool tensor {i}"), g.clone()));
                        }
                    }
                }
            })
        } else {
            root.backward_with(opts)
        };
        match &result {
            Ok(()) => self.report.backward_ok += 1,
            Err(e) => {
                self.report.backward_failed += 1;
                assert!(!e.to_string().is_empty());
            }
        }
        let n = self.log.as_ref().map_or(0, Vec::len);
        self.note(|| {
            format!(
                "backward {flags:#04x}: {:?}",
                result.map_err(|e| e.to_string())
            )
        });
        self.hold_grads(&format!("{n} backward"));
        for x in &self.pool {
            if let Some(g) = x.grad() {
                assert_eq!(
                    g.shape(),
                    x.shape(),
                    "gradient of a leaf of shape {}",
                    x.shape()
                );
                assert_eq!(g.dtype(), x.dtype());
            }
        }
    }

    /// A parameter updated through a clone: every handle reads the new values.
    fn update_through_a_clone(&mut self, r: &mut Reader) {
        let (a, b) = (r.byte(), r.byte());
        let (Some(x), Some(value)) = (self.slot(a), self.slot(b)) else {
            return;
        };
        let mut handle = x.clone();
        match handle.set_data(&value) {
            Ok(()) => {
                if x.requires_grad() {
                    assert_eq!(handle.id(), x.id(), "set_data keeps a parameter's id");
                    assert!(
                        handle.same_values_as(&x),
                        "an update through a clone reaches the parameter"
                    );
                }
                self.report.ops_ok += 1;
                self.note(|| "set_data: ok".into());
            }
            Err(e) => {
                self.report.ops_rejected += 1;
                assert!(!e.to_string().is_empty());
                self.note(|| format!("set_data: {e}"));
            }
        }
    }

    /// A graph whose op parameter panics when dropped, dropped (the panic caught);
    /// the end-of-program leak check then sees whether later graphs are freed.
    fn panicking_drop(&mut self, r: &mut Reader) {
        let b = r.byte();
        let Some(x) = self.slot(b) else { return };
        // The fuzz target's panic hook aborts; the expected panic is kept from it.
        let _serial = HOOK.lock().unwrap_or_else(|e| e.into_inner());
        let hook = std::panic::take_hook();
        std::panic::set_hook(Box::new(|_| {}));
        // The op value panics where it is dropped: at the call when nothing was
        // recorded, else with its graph.
        let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || {
            drop(panics_on_drop(&x, PanicsOnDrop(true)));
        }));
        std::panic::set_hook(hook);
        assert!(caught.is_err(), "the parameter's Drop panics");
    }

    /// A thread that builds a deep graph from a pool tensor and exits holding it in
    /// a thread-local declared before the library's own.
    fn thread_exit_with_a_deep_graph(&mut self, r: &mut Reader) {
        let (b, depth) = (r.byte(), r.byte());
        let Some(x) = self.slot(b) else { return };
        // Computed here if deferred: a deferred value computed on the other thread
        // counts its bytes there, and this thread's count would end below zero
        // when it frees them (thread counters count where the bytes were made).
        if x.realize().is_err() {
            return;
        }
        let depth = 600 + 4 * depth as usize; // a recursive drop overflows 64 KiB
        let handle = std::thread::Builder::new()
            .stack_size(64 * 1024)
            .spawn(move || {
                KEEP.with(|k| *k.borrow_mut() = Some(Tensor::scalar(0.0f32)));
                let Ok(first) = x.exp() else { return };
                drop(first); // the library's thread-locals now exist
                let mut y = x;
                for _ in 0..depth {
                    match y.add_scalar(1.0) {
                        Ok(next) => y = next,
                        Err(_) => return,
                    }
                }
                KEEP.with(|k| *k.borrow_mut() = Some(y));
            })
            .expect("a thread");
        handle.join().expect("the thread exits cleanly");
    }

    /// SGD with momentum over a list naming one parameter twice (as clones).
    fn optimizer_step(&mut self, r: &mut Reader) {
        let b = r.byte();
        let Some(x) = self.slot(b) else { return };
        let before = x.grad().is_some().then(|| x.to_vec::<f64>());
        let (mut p, mut q) = (x.clone(), x.clone());
        let mut opt = Sgd::new(0.5).momentum(0.9);
        match opt.step(&mut [&mut p, &mut q]) {
            Ok(()) => {
                self.report.ops_ok += 1;
                if let (Some(Ok(before)), Some(g)) = (before, x.grad()) {
                    // Updated once: p - 0.5 g (momentum's first step is g itself).
                    let (now, g) = (x.to_vec::<f64>().unwrap(), g.to_vec::<f64>().unwrap());
                    for ((n, b), g) in now.iter().zip(&before).zip(&g) {
                        let want = if self.dtype == DType::F32 {
                            (*b as f32 - (0.5 * *g as f32)) as f64
                        } else {
                            b - 0.5 * g
                        };
                        assert!(
                            n.to_bits() == want.to_bits() || (n.is_nan() && want.is_nan()),
                            "one update: {n} vs {want}"
                        );
                    }
                }
                self.note(|| "optimizer step: ok".into());
            }
            Err(e) => {
                self.report.ops_rejected += 1;
                assert!(!e.to_string().is_empty());
                self.note(|| format!("optimizer step: {e}"));
            }
        }
    }

    fn step(&mut self, op: u8, r: &mut Reader) {
        let _no_grad = (op & 0x80 != 0).then(autograd::NoGradGuard::new);
        let op = op & 0x7f;
        match op {
            120 => return self.update_through_a_clone(r),
            121 => return self.panicking_drop(r),
            122 => return self.thread_exit_with_a_deep_graph(r),
            123 => return self.optimizer_step(r),
            _ => {}
        }
        const UNARY: [&str; 12] = [
            "neg", "exp", "log", "sqrt", "square", "abs", "tanh", "sigmoid", "relu", "gelu", "sin",
            "cos",
        ];
        match op % 24 {
            0 | 1 => self.leaf(r),
            2 => {
                let (k, b) = (r.byte(), r.byte());
                let Some(x) = self.slot(b) else { return };
                let f: [fn(&Tensor) -> Result<Tensor>; 12] = [
                    ops::neg,
                    ops::exp,
                    ops::log,
                    ops::sqrt,
                    ops::square,
                    ops::abs,
                    ops::tanh,
                    ops::sigmoid,
                    ops::relu,
                    ops::gelu,
                    ops::sin,
                    ops::cos,
                ];
                let k = k as usize % 12;
                self.outcome(UNARY[k], f[k](&x));
            }
            3 => {
                let (k, b, v) = (r.byte(), r.byte(), r.value());
                let Some(x) = self.slot(b) else { return };
                let result = match k % 3 {
                    0 => ops::add_scalar(&x, v),
                    1 => ops::mul_scalar(&x, v),
                    _ => ops::pow_scalar(&x, v),
                };
                self.outcome("scalar op", result);
            }
            4 | 5 => {
                let (k, a, b) = (r.byte(), r.byte(), r.byte());
                let (Some(a), Some(b)) = (self.slot(a), self.slot(b)) else {
                    return;
                };
                let f: [fn(&Tensor, &Tensor) -> Result<Tensor>; 10] = [
                    ops::add,
                    ops::sub,
                    ops::mul,
                    ops::div,
                    ops::pow,
                    ops::maximum,
                    ops::minimum,
                    ops::matmul,
                    ops::mse_loss,
                    cross_entropy_of_classes,
                ];
                self.outcome("binary op", f[k as usize % 10](&a, &b));
            }
            6 => {
                let (k, b, axis, keep) = (r.byte(), r.byte(), r.axis(), r.byte() & 1 != 0);
                let Some(x) = self.slot(b) else { return };
                let result = match k % 7 {
                    0 => ops::sum(&x, axis, keep),
                    1 => ops::mean(&x, axis, keep),
                    2 => ops::max(&x, axis, keep),
                    3 => ops::min(&x, axis, keep),
                    4 => ops::logsumexp(&x, axis, keep),
                    5 => ops::softmax(&x, axis),
                    _ => ops::log_softmax(&x, axis),
                };
                self.outcome("reduction", result);
            }
            7 => {
                let (k, b) = (r.byte(), r.byte());
                let Some(x) = self.slot(b) else { return };
                let result = match k % 3 {
                    0 => ops::sum_all(&x),
                    1 => ops::mean_all(&x),
                    _ => ops::transpose(&x, -2, -1),
                };
                self.outcome("sum_all/mean_all/transpose", result);
            }
            8 => {
                let (k, b, shape) = (r.byte(), r.byte(), r.shape());
                let Some(x) = self.slot(b) else { return };
                let shape = Shape::from(shape);
                let result = match k % 3 {
                    0 => ops::reshape(&x, shape),
                    1 => ops::broadcast_to(&x, shape),
                    _ => ops::sum_to_shape(&x, shape),
                };
                self.outcome("reshape/broadcast_to/sum_to_shape", result);
            }
            9 => {
                let b = r.byte();
                let perm: Vec<usize> = (0..r.byte() % 5).map(|_| (r.byte() % 5) as usize).collect();
                let Some(x) = self.slot(b) else { return };
                self.outcome("permute", ops::permute(&x, perm));
            }
            10 => {
                let (k, b, axis) = (r.byte(), r.byte(), r.axis());
                let Some(x) = self.slot(b) else { return };
                let result = if k & 1 == 0 {
                    ops::unsqueeze(&x, axis)
                } else {
                    ops::squeeze(&x, axis)
                };
                self.outcome("unsqueeze/squeeze", result);
            }
            11 | 12 => {
                let (k, b, axis, p, q) = (r.byte(), r.byte(), r.axis(), r.size(), r.size());
                let Some(x) = self.slot(b) else { return };
                let result = if k & 1 == 0 {
                    ops::narrow(&x, axis, p, q)
                } else {
                    ops::pad(&x, axis, p, q)
                };
                self.outcome("narrow/pad", result);
            }
            13 => {
                let (a, b, axis) = (r.byte(), r.byte(), r.axis());
                let (Some(a), Some(b)) = (self.slot(a), self.slot(b)) else {
                    return;
                };
                self.outcome("concat", ops::concat(&a, &b, axis));
            }
            14 => {
                let (a, i, axis) = (r.byte(), r.byte(), r.axis());
                let (Some(x), Some(index)) = (self.slot(a), self.slot(i)) else {
                    return;
                };
                let index = as_positions(&index, i);
                self.outcome("index_select", ops::index_select(&x, &index, axis));
            }
            15 => {
                let (a, i, s, axis) = (r.byte(), r.byte(), r.byte(), r.axis());
                let (Some(x), Some(index), Some(src)) = (self.slot(a), self.slot(i), self.slot(s))
                else {
                    return;
                };
                let index = as_positions(&index, i);
                self.outcome("index_add", ops::index_add(&x, &index, &src, axis));
            }
            16..=18 => self.backward(r),
            19 => {
                let b = r.byte();
                if !self.pool.is_empty() {
                    self.pool.remove(b as usize % self.pool.len());
                }
            }
            20 => {
                let b = r.byte();
                if let Some(x) = self.slot(b) {
                    x.zero_grad();
                }
            }
            21 => {
                let b = r.byte();
                if let Some(x) = self.slot(b) {
                    self.keep(x.detach());
                }
            }
            22 => {
                // Operators, which go through the registered standard-op table.
                let (k, a, b, v) = (r.byte(), r.byte(), r.byte(), r.value());
                let (Some(a), Some(b)) = (self.slot(a), self.slot(b)) else {
                    return;
                };
                let result = match k % 6 {
                    0 => &a + &b,
                    1 => &a - &b,
                    2 => &a * &b,
                    3 => &a / v,
                    4 => v - &a,
                    _ => -&a,
                };
                self.outcome("operator", result);
            }
            _ => {
                // A gradient read back and used as a tensor in the program.
                let b = r.byte();
                if let Some(g) = self.slot(b).and_then(|x| x.grad()) {
                    self.keep(g);
                }
            }
        }
    }
}

thread_local! {
    /// A user thread-local declared before the library's (see
    /// `thread_exit_with_a_deep_graph`).
    static KEEP: RefCell<Option<Tensor>> = const { RefCell::new(None) };
}

/// Serializes the swaps of the process's panic hook.
static HOOK: Mutex<()> = Mutex::new(());

/// An op parameter that panics when dropped (when `.0` is set).
pub struct PanicsOnDrop(pub bool);

impl Drop for PanicsOnDrop {
    fn drop(&mut self) {
        if self.0 && !std::thread::panicking() {
            panic!("an op parameter that panics in Drop");
        }
    }
}

/// `2x`, with a parameter that may panic when the op value is dropped.
#[differentiable(name = "program_panics_on_drop")]
mod panics_on_drop {
    use autograd::prelude::*;

    /// Holds a value that may panic when dropped.
    pub struct PanicsOnDropOp {
        /// Panics in `Drop` when `.0` is true.
        pub _guard: super::PanicsOnDrop,
    }

    /// `2x`.
    pub fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let _held = &self._guard; // only its drop matters
        x.mul_scalar(2.0)
    }

    /// `2 grad`.
    pub fn backward(grad: &Tensor) -> Result<Tensor> {
        grad.mul_scalar(2.0)
    }
}

/// Runs a program; panics if an invariant of the module documentation breaks.
pub fn execute(bytes: &[u8]) -> Report {
    run(bytes, false).0
}

/// Every elementwise op deferred, whatever its size.
const FUSE_ALL: FusionConfig = FusionConfig {
    enabled: true,
    min_elements: 1,
};

/// Runs a program with every elementwise op deferred into fused chains and again
/// with fusion off, reading its results and gradients only when it ends; panics
/// where the two runs observe something different (or an invariant breaks).
pub fn fused_matches_unfused(bytes: &[u8]) -> Report {
    let (report, fused) = with_config(FUSE_ALL, || run(bytes, true));
    let (_, unfused) = with_config(FusionConfig::OFF, || run(bytes, true));
    if let Some(i) = (0..fused.len().max(unfused.len())).find(|&i| fused.get(i) != unfused.get(i)) {
        panic!(
            "fused and unfused runs differ at line {i} of {}:\n  fused:   {:?}\n  unfused: {:?}\nfused run:\n{}\nprogram: {bytes:?}",
            fused.len(),
            fused.get(i),
            unfused.get(i),
            fused[..i.min(fused.len())].join("\n")
        );
    }
    report
}

/// Runs a program; with `logged`, also what it observed, a line each.
fn run(bytes: &[u8], logged: bool) -> (Report, Vec<String>) {
    autograd::init().expect("op registry");
    let baseline = thread_stats(Device::Cpu).live_bytes;
    let mut r = Reader { bytes, at: 0 };
    let dtype = if r.byte() & 1 == 1 {
        DType::F64
    } else {
        DType::F32
    };
    let mut m = Machine {
        pool: Vec::new(),
        dtype,
        report: Report::default(),
        trace: std::env::var_os("PROGRAM_TRACE").is_some(),
        log: logged.then(Vec::new),
        held: Vec::new(),
    };
    for _ in 0..MAX_STEPS {
        if r.done() {
            break;
        }
        let op = r.byte();
        let at = r.at;
        m.step(op, &mut r);
        if m.trace {
            let live = thread_stats(Device::Cpu).live_bytes - baseline;
            eprintln!(
                "op {} ({:#04x}) operands {:?}: pool {:?}, {live} bytes live",
                match op & 0x7f {
                    misuse @ 120..=123 => misuse,
                    other => other % 24,
                },
                op,
                &bytes[at.min(bytes.len())..r.at.min(bytes.len())],
                m.pool
                    .iter()
                    .map(|t| (t.dims().to_vec(), t.requires_grad()))
                    .collect::<Vec<_>>()
            );
        }
    }
    let mut report = m.report;
    let mut log = m.log.take().unwrap_or_default();
    for (what, t) in std::mem::take(&mut m.held) {
        report.read_deferred += usize::from(t.is_deferred());
        let values = t.to_vec::<f64>().map(|v| {
            assert_eq!(v.len(), t.numel(), "{what}: {} values", v.len());
            // (Every NaN as one: IEEE 754 leaves a NaN's sign and payload open, and
            // the two paths may make a NaN in different ways: random program 8544
            // read a gradient's NaNs with the opposite sign fused.)
            let canonical = |x: f64| if x.is_nan() { f64::NAN } else { x };
            v.into_iter()
                .map(|x| canonical(x).to_bits())
                .collect::<Vec<_>>()
        });
        log.push(format!("{what}: {:x?}", values.map_err(|e| e.to_string())));
    }
    drop(m);
    let leaked = thread_stats(Device::Cpu).live_bytes - baseline;
    assert_eq!(
        leaked, 0,
        "the program leaked {leaked} bytes of tensor storage"
    );
    (report, log)
}
