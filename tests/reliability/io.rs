//! `save` refuses the name the safetensors format reserves, `load_into` is all or
//! nothing, and `save` and `load` never abort on a buffer they cannot allocate.
//!
//! Memory pressure is made, deterministically and without using much memory, by
//! this test binary's allocator ([`Budgeted`]): the system's, except that a thread
//! holding a [`Budget`] gets null for an allocation that would take its live bytes
//! past the budget. Rust aborts the process on such a null where it allocates
//! infallibly (`memory allocation of N bytes failed`); the library must ask with
//! `try_reserve` and return [`Error::OutOfMemory`]. Other threads (every other
//! test) are not affected.

use autograd::prelude::*;
use autograd::{Error, compute, load, load_into, memory, save};
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::path::PathBuf;

/// A fresh path in the temporary directory, removed when dropped.
struct TempFile(PathBuf);

impl TempFile {
    fn new(name: &str) -> TempFile {
        TempFile(std::env::temp_dir().join(format!(
            "autograd-reliability-io-{}-{name}.safetensors",
            std::process::id()
        )))
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        std::fs::remove_file(&self.0).ok();
    }
}

/// The message of `result`'s error, checked to name every string in `mentions`.
fn message<T: std::fmt::Debug>(result: Result<T>, mentions: &[&str]) -> String {
    let msg = result.expect_err("expected an error").to_string();
    for m in mentions {
        assert!(msg.contains(m), "error does not mention {m:?}: {msg}");
    }
    msg
}

// ----- the reserved name -----

#[test]
fn save_refuses_the_reserved_name_metadata_and_writes_nothing() -> Result<()> {
    crate::init();
    let f = TempFile::new("reserved");
    let x = Tensor::from_vec(vec![1.0f32, 2.0], [2])?;
    // The file would hold the tensor where the format keeps its metadata: `load`
    // could not read it back. Refused before the file is created.
    message(
        save(&f.0, &[("x", &x), ("__metadata__", &x)]),
        &["`__metadata__`", "reserved", "metadata", "rename"],
    );
    assert!(!f.0.exists(), "no file is created");

    // An existing file is left as it was, not truncated.
    save(&f.0, &[("x", &x)])?;
    let before = std::fs::read(&f.0).unwrap();
    message(save(&f.0, &[("__metadata__", &x)]), &["`__metadata__`"]);
    assert_eq!(std::fs::read(&f.0).unwrap(), before);
    let loaded = load(&f.0)?;
    assert_eq!(loaded.len(), 1);
    assert_eq!(loaded[0].1.to_vec::<f32>()?, [1.0, 2.0]);

    // A name that only looks like it is an ordinary name.
    save(&f.0, &[("__metadata", &x), ("metadata__", &x)])?;
    assert_eq!(load(&f.0)?.len(), 2);
    Ok(())
}

// ----- load_into: all or nothing -----

#[test]
fn load_into_changes_no_target_when_any_target_is_refused() -> Result<()> {
    crate::init();
    let f = TempFile::new("all-or-nothing");
    let a = Tensor::from_vec(vec![1.0f32, 2.0], [2])?;
    let b = Tensor::from_vec(vec![3.0f32, 4.0, 5.0], [3])?;
    save(&f.0, &[("a", &a), ("b", &b)])?;

    // Targets `set_data` refuses, each listed after good targets (a parameter and
    // a constant), which were written before the refusal was found.
    let leaf = Tensor::zeros([3], DType::F32)?.with_requires_grad(true);
    // The output of a recorded op, not a leaf.
    let recorded = leaf.mul_scalar(2.0)?;
    // A parameter whose three elements share one place in memory.
    let one = Tensor::zeros([1], DType::F32)?;
    let broadcast = compute::broadcast_to(&one, [3])?.with_requires_grad(true);
    let cases = [
        (recorded, vec!["`b`", "not a leaf", "detach"]),
        (broadcast, vec!["`b`", "broadcast view", "contiguous"]),
    ];
    for (mut bad, mentions) in cases {
        let before = bad.to_vec::<f32>()?;
        let mut param = Tensor::zeros([2], DType::F32)?.with_requires_grad(true);
        let handle = param.clone();
        let mut constant = Tensor::zeros([2], DType::F32)?;
        let r = load_into(
            &f.0,
            &mut [("a", &mut param), ("a", &mut constant), ("b", &mut bad)],
        );
        assert_eq!(param.to_vec::<f32>()?, [0.0, 0.0], "{mentions:?}");
        assert_eq!(handle.to_vec::<f32>()?, [0.0, 0.0], "{mentions:?}");
        assert_eq!(constant.to_vec::<f32>()?, [0.0, 0.0], "{mentions:?}");
        assert_eq!(bad.to_vec::<f32>()?, before, "{mentions:?}");
        message(r, &mentions);
    }

    // The same targets, good ones only: all written.
    let mut param = Tensor::zeros([2], DType::F32)?.with_requires_grad(true);
    let mut other = Tensor::zeros([3], DType::F32)?.with_requires_grad(true);
    load_into(&f.0, &mut [("a", &mut param), ("b", &mut other)])?;
    assert_eq!(param.to_vec::<f32>()?, [1.0, 2.0]);
    assert_eq!(other.to_vec::<f32>()?, [3.0, 4.0, 5.0]);
    Ok(())
}

// ----- fallible buffers -----

/// The allocator of this test binary: [`System`]'s, under the calling thread's
/// [`Budget`] while it holds one.
struct Budgeted;

#[global_allocator]
static ALLOCATOR: Budgeted = Budgeted;

thread_local! {
    /// The bytes this thread may still allocate, while it holds a [`Budget`].
    static LEFT: Cell<Option<usize>> = const { Cell::new(None) };
}

/// Takes `bytes` from the thread's budget: false (the allocation is refused) when
/// there is not that much left.
fn charge(bytes: usize) -> bool {
    LEFT.try_with(|left| match left.get() {
        None => true,
        Some(n) if n >= bytes => {
            left.set(Some(n - bytes));
            true
        }
        Some(_) => false,
    })
    .unwrap_or(true)
}

/// Gives `bytes` back to the thread's budget.
fn refund(bytes: usize) {
    let _ = LEFT.try_with(|left| {
        if let Some(n) = left.get() {
            left.set(Some(n.saturating_add(bytes)));
        }
    });
}

// SAFETY: every call is passed on to `System` unchanged, or refused with null as
// `GlobalAlloc` allows.
unsafe impl GlobalAlloc for Budgeted {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if !charge(layout.size()) {
            return std::ptr::null_mut();
        }
        // SAFETY: the caller's contract, passed on.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if !charge(layout.size()) {
            return std::ptr::null_mut();
        }
        // SAFETY: the caller's contract, passed on.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        refund(layout.size());
        // SAFETY: the caller's contract, passed on.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let old = layout.size();
        if new_size > old && !charge(new_size - old) {
            return std::ptr::null_mut();
        }
        // SAFETY: the caller's contract, passed on.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if p.is_null() {
            refund(new_size.saturating_sub(old));
        } else if new_size < old {
            refund(old - new_size);
        }
        p
    }
}

/// While alive, the calling thread may allocate `bytes` more than it frees.
struct Budget;

impl Budget {
    fn new(bytes: usize) -> Budget {
        // Buffers the thread cached would be reused without asking the allocator.
        memory::clear_cpu_cache();
        LEFT.with(|left| left.set(Some(bytes)));
        Budget
    }
}

impl Drop for Budget {
    fn drop(&mut self) {
        LEFT.with(|left| left.set(None));
    }
}

/// The root cause of `result`'s error, which must be [`Error::OutOfMemory`]:
/// `(op, shape, bytes)`.
fn out_of_memory<T: std::fmt::Debug>(result: Result<T>) -> (&'static str, Shape, usize) {
    match result.expect_err("expected an error").root_cause() {
        Error::OutOfMemory {
            op, shape, bytes, ..
        } => (*op, shape.clone(), *bytes),
        e => panic!("expected an out-of-memory error, got {e:?}"),
    }
}

#[test]
fn save_and_load_return_out_of_memory_for_a_buffer_too_large() -> Result<()> {
    crate::init();
    const N: usize = 1 << 20; // 4 MiB of f32
    const BYTES: usize = N * 4;
    let x = Tensor::from_vec((0..N).map(|i| i as f32).collect::<Vec<_>>(), [N / 4, 4])?;
    let f = TempFile::new("memory");

    // Room for one copy of the tensor and half of another: `save` and `load` work
    // (`save` writes the tensor from its buffer, `load` reads into the one it
    // returns). Both made two copies, the second infallibly: the process aborted.
    let loaded = {
        let _budget = Budget::new(BYTES + BYTES / 2);
        save(&f.0, &[("x", &x)])?;
        load(&f.0)?
    };
    assert_eq!(loaded[0].1.to_vec::<f32>()?, x.to_vec::<f32>()?);
    drop(loaded);

    // Room for less than one copy: errors, nothing aborts, nothing changes.
    let mut target = Tensor::zeros([N / 4, 4], DType::F32)?.with_requires_grad(true);
    let t = x.t()?; // a view `save` must copy
    let g = TempFile::new("memory-view");
    let budget = Budget::new(BYTES / 2);
    assert_eq!(
        out_of_memory(load(&f.0)),
        ("load", Shape::from([N / 4, 4]), BYTES)
    );
    assert_eq!(
        out_of_memory(load_into(&f.0, &mut [("x", &mut target)])).0,
        "load_into"
    );
    // The view beside a tensor written as it is: refused before the file is created.
    out_of_memory(save(&g.0, &[("x", &x), ("t", &t)]));
    drop(budget);
    assert!(!g.0.exists(), "nothing is written");
    assert_eq!(target.to_vec::<f32>()?, vec![0.0; N]);
    Ok(())
}
