//! Crates defining ops under names the standard library already uses: each op is
//! registered in its crate's namespace, so the registry builds, and both
//! definitions of each name are found and work. Its own test binary, so that only
//! it links the fixture `dup_op_crate` (`mul` and `gelu` again).

use autograd::prelude::*;

#[test]
fn an_op_named_like_a_standard_one_lives_in_its_crate_namespace() -> Result<()> {
    let registry = autograd::init()?;

    // The standard names find the standard ops; the fixture's, their full names.
    assert_eq!(
        registry.get("mul")?.module_path,
        "autograd_core::primitives::mul"
    );
    assert_eq!(
        registry.get("dup_op_crate::mul")?.module_path,
        "dup_op_crate::my_mul"
    );
    assert_eq!(registry.get("gelu")?.namespace(), "autograd_ops");
    let user_gelu = registry.get("dup_op_crate::gelu")?;
    assert_eq!(user_gelu.namespace(), "dup_op_crate");
    assert!(!user_gelu.is_standard());

    // The listing shows the namespace.
    let names: Vec<&str> = registry.names().collect();
    for name in ["mul", "gelu", "dup_op_crate::mul", "dup_op_crate::gelu"] {
        assert!(names.contains(&name), "{name} missing from {names:?}");
    }

    // Both definitions run, each its own: the standard gelu is the tanh
    // approximation, the fixture's the exact erf form.
    let x = Tensor::from_slice(&[1.0f64], [1])?.with_requires_grad(true);
    let exact = dup_op_crate::gelu(&x)?;
    let approx = autograd::ops::gelu(&x)?;
    let (e, a) = (exact.to_vec::<f64>()?[0], approx.to_vec::<f64>()?[0]);
    assert!((e - 0.841_344_746_068_542_9).abs() < 1e-12, "{e}");
    assert!((a - 0.841_191_990_607_477_2).abs() < 1e-12, "{a}");
    let p = dup_op_crate::my_mul(&x, &x)?;
    assert_eq!(p.to_vec::<f64>()?, [1.0]);

    // The fixture's gelu passes gradcheck like any op.
    autograd::gradcheck(
        "dup_op_crate::gelu",
        &|xs: &[Tensor]| dup_op_crate::gelu(&xs[0]),
        &[Tensor::from_slice(&[-1.5f64, 0.2, 2.0], [3])?],
        &[true],
        &autograd::GradcheckOptions::default(),
    )?;
    Ok(())
}
