//! Two crates defining an op of the same name: the registry refuses to build and
//! names both definitions. Its own test binary, because the registry of a program
//! linking `dup_op_crate` is broken for good.

use autograd::Error;

#[test]
fn an_op_name_defined_in_two_crates_is_an_error_naming_both() {
    // Referencing the fixture links it, and with it its registration of `mul`.
    let fixture: fn(&autograd::Tensor, &autograd::Tensor) -> autograd::Result<autograd::Tensor> =
        dup_op_crate::my_mul;
    let _ = fixture;

    let err = autograd::registry()
        .err()
        .expect("the registry must reject the duplicate");
    let Error::DuplicateOp {
        name,
        first,
        second,
    } = &err
    else {
        panic!("expected Error::DuplicateOp, got {err:?}");
    };
    assert_eq!(*name, "mul");
    let mut both = [*first, *second];
    both.sort();
    assert_eq!(
        both,
        ["autograd_core::primitives::mul", "dup_op_crate::my_mul"]
    );
    let msg = err.to_string();
    assert!(
        msg.contains("autograd_core::primitives::mul") && msg.contains("dup_op_crate::my_mul"),
        "{msg}"
    );
    assert!(
        msg.contains("#[differentiable(name = "),
        "says how to fix it: {msg}"
    );

    // init() reports the same error rather than handing out a broken registry.
    assert!(matches!(autograd::init(), Err(Error::DuplicateOp { .. })));
}
