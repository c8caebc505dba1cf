//! Bad input to the standard ops is an error value naming the op and the shapes.

use autograd::ops;
use autograd::prelude::*;

fn t(shape: &[usize]) -> Tensor {
    Tensor::zeros(shape, DType::F64)
        .unwrap()
        .with_requires_grad(true)
}

/// The error's message, checked to name `op` and every string in `mentions`.
fn expect_error(result: Result<Tensor>, op: &str, mentions: &[&str]) -> Error {
    let err = match result {
        Ok(t) => panic!(
            "expected an error from `{op}`, got a tensor of shape {}",
            t.shape()
        ),
        Err(e) => e,
    };
    let msg = err.to_string();
    assert!(
        msg.contains(&format!("`{op}`")),
        "error does not name `{op}`: {msg}"
    );
    for m in mentions {
        assert!(msg.contains(m), "error does not mention {m}: {msg}");
    }
    err
}

#[test]
fn matmul_with_mismatched_inner_axes_names_both_shapes() {
    crate::init();
    expect_error(
        ops::matmul(&t(&[2, 3]), &t(&[4, 5])),
        "matmul",
        &["[2, 3]", "[4, 5]"],
    );
    expect_error(
        ops::matmul(&t(&[2, 2, 3]), &t(&[3, 3, 4])),
        "matmul",
        &["[2, 2, 3]", "[3, 3, 4]", "batch"],
    );
    // Vectors are accepted as NumPy takes them; a wrong length or a scalar is not.
    expect_error(
        ops::matmul(&t(&[4]), &t(&[3, 4])),
        "matmul",
        &["[4]", "[3, 4]"],
    );
    expect_error(
        ops::matmul(&t(&[2, 3]), &t(&[4])),
        "matmul",
        &["[2, 3]", "[4]", "right vector"],
    );
    expect_error(
        ops::matmul(&t(&[]), &t(&[3])),
        "matmul",
        &["at least 1 axis"],
    );
}

#[test]
fn shapes_that_do_not_broadcast_name_the_op_and_both_shapes() {
    crate::init();
    type Binary = fn(&Tensor, &Tensor) -> Result<Tensor>;
    let binaries: [(&str, Binary); 7] = [
        ("add", ops::add),
        ("sub", ops::sub),
        ("mul", ops::mul),
        ("div", ops::div),
        ("pow", ops::pow),
        ("maximum", ops::maximum),
        ("minimum", ops::minimum),
    ];
    for (name, f) in binaries {
        let err = expect_error(f(&t(&[2, 3]), &t(&[4])), name, &["[2, 3]", "[4]"]);
        assert!(matches!(err.root_cause(), Error::Broadcast { .. }), "{err}");
    }
    expect_error(
        ops::broadcast_to(&t(&[2, 3]), Shape::from([3, 3])),
        "broadcast_to",
        &["[2, 3]", "[3, 3]"],
    );
    expect_error(
        ops::mse_loss(&t(&[4, 1]), &t(&[4])),
        "mse_loss",
        &["[4, 1]", "[4]"],
    );
    expect_error(
        ops::concat(&t(&[2, 3]), &t(&[3, 3]), 1),
        "concat",
        &["[2, 3]", "[3, 3]"],
    );
}

#[test]
fn axes_out_of_range_name_the_op_the_axis_and_the_shape() {
    crate::init();
    let x = t(&[2, 3]);
    let results: Vec<(&str, Result<Tensor>)> = vec![
        ("sum", ops::sum(&x, 2, false)),
        ("sum", ops::sum(&x, -3, true)),
        ("mean", ops::mean(&x, 5, false)),
        ("max", ops::max(&x, -3, false)),
        ("min", ops::min(&x, 2, false)),
        ("logsumexp", ops::logsumexp(&x, 2, false)),
        ("softmax", ops::softmax(&x, 2)),
        ("log_softmax", ops::log_softmax(&x, -3)),
        ("squeeze", ops::squeeze(&x, 2)),
        ("unsqueeze", ops::unsqueeze(&x, 3)),
        ("narrow", ops::narrow(&x, 2, 0, 1)),
        ("pad", ops::pad(&x, -3, 1, 1)),
        ("concat", ops::concat(&x, &x, 2)),
        (
            "index_select",
            ops::index_select(&x, &Tensor::from_slice(&[0i64], [1]).unwrap(), 2),
        ),
    ];
    for (op, r) in results {
        let err = expect_error(r, op, &["[2, 3]", "out of range"]);
        assert!(
            matches!(err.root_cause(), Error::AxisOutOfRange { .. }),
            "{err}"
        );
    }
}

#[test]
fn reshape_to_another_element_count_names_both_shapes_and_counts() {
    crate::init();
    expect_error(
        ops::reshape(&t(&[2, 3]), Shape::from([4, 2])),
        "reshape",
        &["[2, 3]", "[4, 2]", "6 elements", "8 elements"],
    );
}

#[test]
fn cross_entropy_rejects_float_and_out_of_range_targets() {
    crate::init();
    let logits = t(&[2, 3]);
    let targets = |v: &[i64]| Tensor::from_slice(v, [v.len()]).unwrap();
    for bad in [[0, 3], [-1, 0], [0, i64::MAX]] {
        let err = expect_error(
            ops::cross_entropy(&logits, &targets(&bad)),
            "cross_entropy",
            &["[2, 3]", "[2]", "not a class index in 0..3"],
        );
        assert!(
            matches!(err.root_cause(), Error::InvalidArgument { .. }),
            "{err}"
        );
    }
    // Class indices stored as floats (even whole ones) are refused, with the
    // conversion to write; converted, they are taken.
    let floats = Tensor::from_slice(&[0.0, 2.0], [2]).unwrap();
    let err = expect_error(
        ops::cross_entropy(&logits, &floats),
        "cross_entropy",
        &["[2]", "f64", "integer", ".to_dtype(DType::I64)"],
    );
    assert!(
        matches!(err.root_cause(), Error::InvalidArgument { .. }),
        "{err}"
    );
    let converted = floats.to_dtype(DType::I64).unwrap();
    assert_eq!(
        ops::cross_entropy(&logits, &converted)
            .unwrap()
            .to_scalar::<f64>()
            .unwrap(),
        ops::cross_entropy(&logits, &targets(&[0, 2]))
            .unwrap()
            .to_scalar::<f64>()
            .unwrap()
    );
    for d in [DType::I32, DType::U8] {
        assert!(ops::cross_entropy(&logits, &converted.to_dtype(d).unwrap()).is_ok());
    }
    expect_error(
        ops::cross_entropy(&logits, &targets(&[0, 1, 2])),
        "cross_entropy",
        &["[2, 3]", "[3]"],
    );
    expect_error(
        ops::cross_entropy(&t(&[2, 3, 4]), &targets(&[0, 1])),
        "cross_entropy",
        &["[2, 3, 4]"],
    );
}

#[test]
fn bad_indices_and_permutations_are_errors() {
    crate::init();
    let x = t(&[3, 2]);
    let idx = |v: &[i64]| Tensor::from_slice(v, [v.len()]).unwrap();
    expect_error(
        ops::index_select(&x, &idx(&[0, 3]), 0),
        "index_select",
        &["index 3 ", "0..3", "[3, 2]"],
    );
    expect_error(
        ops::index_select(&x, &idx(&[-1]), -1),
        "index_select",
        &["index -1 ", "0..2", "[3, 2]"],
    );
    expect_error(
        ops::index_select(&x, &Tensor::from_slice(&[0.0, 1.0], [2]).unwrap(), -1),
        "index_select",
        &["integer", "f64", ".to_dtype(DType::I64)"],
    );
    expect_error(
        ops::index_add(
            &x,
            &Tensor::from_slice(&[1.0f32], [1]).unwrap(),
            &t(&[1, 2]),
            0,
        ),
        "index_add",
        &["integer", "f32", ".to_dtype(DType::I64)"],
    );
    expect_error(
        ops::index_select(&x, &Tensor::zeros([1, 1], DType::I64).unwrap(), 0),
        "index_select",
        &["[1, 1]", "vector"],
    );
    expect_error(
        ops::index_add(&x, &idx(&[0]), &t(&[2, 2]), 0),
        "index_add",
        &["[2, 2]", "[3, 2]"],
    );
    expect_error(ops::permute(&x, vec![0, 0]), "permute", &["[3, 2]"]);
    expect_error(ops::squeeze(&x, 0), "squeeze", &["[3, 2]"]);
    expect_error(ops::narrow(&x, 0, 2, 2), "narrow", &["[3, 2]"]);
}
