//! The standard op list, assembled at compile time.

use autograd_core::primitives::PRIMITIVE_OPS;

/// The ops this crate defines, by registered name, read from its sources by the
/// build script: every module under `#[differentiable]`.
const OWN_OPS: &[&str] = include!(concat!(env!("OUT_DIR"), "/standard_ops.rs"));

const STANDARD_OP_COUNT: usize = PRIMITIVE_OPS.len() + OWN_OPS.len();

/// Every standard op: the primitives of `autograd-core` ([`PRIMITIVE_OPS`]) and the
/// ops this crate defines, sorted by name. [`init`](crate::init) checks that all of them reached
/// the registry; a test checks this list against the registry.
pub const STANDARD_OPS: &[&str] = &sorted(concat(PRIMITIVE_OPS, OWN_OPS));

const fn concat(
    a: [&'static str; PRIMITIVE_OPS.len()],
    b: &[&'static str],
) -> [&'static str; STANDARD_OP_COUNT] {
    let mut out = [""; STANDARD_OP_COUNT];
    let mut i = 0;
    while i < a.len() {
        out[i] = a[i];
        i += 1;
    }
    while i < STANDARD_OP_COUNT {
        out[i] = b[i - a.len()];
        i += 1;
    }
    out
}

/// Insertion sort by bytes, at compile time.
const fn sorted(mut names: [&'static str; STANDARD_OP_COUNT]) -> [&'static str; STANDARD_OP_COUNT] {
    let mut i = 1;
    while i < names.len() {
        let mut j = i;
        while j > 0 && less(names[j], names[j - 1]) {
            let t = names[j];
            names[j] = names[j - 1];
            names[j - 1] = t;
            j -= 1;
        }
        i += 1;
    }
    names
}

const fn less(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    let mut k = 0;
    while k < a.len() && k < b.len() {
        if a[k] != b[k] {
            return a[k] < b[k];
        }
        k += 1;
    }
    a.len() < b.len()
}
