//! The op registry: complete, sorted, and every op gradient-checked through it.

use autograd::{Error, GradcheckOptions, OpEntry, OpRegistry, registry};

#[test]
fn registry_is_sorted_and_holds_the_standard_ops() {
    crate::init();
    let reg = registry().unwrap();
    let names: Vec<_> = reg.names().collect();
    let mut sorted = names.clone();
    sorted.sort();
    assert_eq!(names, sorted);
    let std_ops: Vec<_> = reg
        .iter()
        .filter(|e| {
            ["autograd_ops", "autograd_core"]
                .iter()
                .any(|c| e.module_path.starts_with(c))
        })
        .map(|e| e.name)
        .collect();
    assert_eq!(
        std_ops,
        autograd::ops::STANDARD_OPS,
        "STANDARD_OPS is out of date"
    );
}

#[test]
fn unknown_op_is_an_error_listing_known_ops() {
    crate::init();
    let err = registry().unwrap().get("matmull").unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err, Error::UnknownOp { .. }));
    assert!(msg.contains("`matmull`"), "{msg}");
    let known = msg.split("registered ops are: ").nth(1).unwrap_or_default();
    let listed: Vec<&str> = known.split(", ").collect();
    let all: Vec<&str> = registry().unwrap().names().collect();
    assert_eq!(listed, all, "{msg}");
}

static A: OpEntry = OpEntry {
    name: "twice",
    module_path: "crate_a::ops",
    inputs: &[],
    saves_output: false,
    params: &[],
    check_cases: None,
    cuda_source: None,
};

#[test]
fn one_crate_defining_a_name_twice_is_rejected_naming_both_definitions() {
    static A2: OpEntry = OpEntry {
        module_path: "crate_a::more",
        ..A
    };
    let err = OpRegistry::build([&A, &A2]).err().unwrap();
    let msg = err.to_string();
    assert!(matches!(err, Error::DuplicateOp { name: "twice", .. }));
    assert!(
        msg.contains("crate_a::ops") && msg.contains("crate_a::more"),
        "{msg}"
    );
    assert!(
        OpRegistry::build([&A, &A]).is_ok(),
        "one entry seen twice is one op"
    );
}

#[test]
fn two_crates_may_share_a_short_name_each_found_by_full_name() {
    static B: OpEntry = OpEntry {
        module_path: "crate_b::more",
        ..A
    };
    static MUL: OpEntry = OpEntry {
        name: "mul",
        module_path: "crate_b::arith",
        ..A
    };
    static STD_MUL: OpEntry = OpEntry {
        name: "mul",
        module_path: "autograd_core::primitives::mul",
        ..A
    };
    let reg = OpRegistry::build([&A, &B, &MUL, &STD_MUL]).unwrap();
    assert_eq!(
        reg.names().collect::<Vec<_>>(),
        ["crate_a::twice", "crate_b::mul", "crate_b::twice", "mul"]
    );
    assert!(std::ptr::eq(reg.get("crate_a::twice").unwrap(), &A));
    assert!(std::ptr::eq(reg.get("crate_b::twice").unwrap(), &B));
    // A standard name finds the standard op; a user's short name, when one crate
    // has it, that crate's op.
    assert!(std::ptr::eq(reg.get("mul").unwrap(), &STD_MUL));
    assert!(std::ptr::eq(reg.get("crate_b::mul").unwrap(), &MUL));
    let err = reg.get("twice").unwrap_err();
    assert!(matches!(err, Error::AmbiguousOp { .. }), "{err:?}");
    let msg = err.to_string();
    assert!(
        msg.contains("crate_a::twice, crate_b::twice") && msg.contains("full name"),
        "{msg}"
    );
    assert!(matches!(
        reg.get("crate_c::twice"),
        Err(Error::UnknownOp { .. })
    ));
    assert_eq!(A.namespace(), "crate_a");
    assert_eq!(STD_MUL.full_name(), "mul");
    assert_eq!(MUL.full_name(), "crate_b::mul");
}

#[test]
fn every_registered_op_passes_gradcheck() {
    crate::init();
    let mut failures = Vec::new();
    let mut checked = 0;
    for entry in registry().unwrap() {
        let Some(cases) = entry.check_cases else {
            failures.push(format!(
                "`{}` supplies no check cases (add `fn check_cases`)",
                entry.name
            ));
            continue;
        };
        for case in cases() {
            match case.check(&GradcheckOptions::default()) {
                Ok(_) => checked += 1,
                Err(e) => failures.push(e.to_string()),
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(checked >= registry().unwrap().len());
}
