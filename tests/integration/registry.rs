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

#[test]
fn duplicate_names_are_rejected_naming_both_definitions() {
    static A: OpEntry = OpEntry {
        name: "twice",
        module_path: "crate_a::ops",
        inputs: &[],
        saves_output: false,
        params: &[],
        check_cases: None,
        cuda_source: None,
    };
    static B: OpEntry = OpEntry {
        module_path: "crate_b::more",
        ..A
    };
    let err = OpRegistry::build([&A, &B]).err().unwrap();
    let msg = err.to_string();
    assert!(
        msg.contains("crate_a::ops") && msg.contains("crate_b::more"),
        "{msg}"
    );
    assert!(
        OpRegistry::build([&A, &A]).is_ok(),
        "one entry seen twice is one op"
    );
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
