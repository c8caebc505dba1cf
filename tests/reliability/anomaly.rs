//! Anomaly mode: off by default; when on, the first NaN or infinite gradient stops
//! the pass with the op and the line of the caller's code that recorded it.
//! These tests use the thread-scoped switch only, so that they cannot affect tests
//! running in parallel threads.

use autograd::anomaly;
use autograd::ops;
use autograd::prelude::*;

fn at_zero() -> Tensor {
    Tensor::from_slice(&[0.0f64, 4.0], [2])
        .unwrap()
        .with_requires_grad(true)
}

fn here(line: u32) -> String {
    format!("{}:{line}:", file!())
}

#[test]
fn off_by_default_non_finite_gradients_pass_through() -> Result<()> {
    crate::init();
    assert!(!anomaly::is_enabled(), "anomaly mode must be opt-in");
    let x = at_zero();
    ops::sum_all(&ops::log(&x)?)?.backward()?;
    let g = x.grad().unwrap().to_vec::<f64>()?;
    assert_eq!(g, vec![f64::INFINITY, 0.25], "1/x at 0 is +inf (IEEE)");
    Ok(())
}

#[test]
fn reports_the_op_and_the_callers_line_for_an_infinite_gradient() -> Result<()> {
    crate::init();
    let x = at_zero();
    let line = line!() + 1;
    let root = ops::sqrt(&x)?;
    let loss = ops::sum_all(&ops::exp(&root)?)?;
    let _on = anomaly::enable();
    let err = loss.backward().unwrap_err();
    let Error::Anomaly {
        op,
        location,
        input,
        what,
    } = &err
    else {
        panic!("expected an anomaly, got {err}");
    };
    // exp's gradient is finite; sqrt's is 1 / (2 sqrt(0)) = inf.
    assert_eq!((*op, *input, *what), ("sqrt", 0, "infinity"));
    assert!(
        location.starts_with(&here(line)),
        "{location} vs line {line}"
    );
    let msg = err.to_string();
    assert!(msg.contains("`sqrt`") && msg.contains(location), "{msg}");
    assert!(x.grad().is_none(), "the pass stopped before the leaf");
    Ok(())
}

#[test]
fn reports_a_method_call_and_an_operator_at_the_callers_line() -> Result<()> {
    crate::init();
    let _on = anomaly::enable();

    // sqrt(-1) is NaN in the forward pass; its backward turns it into a NaN gradient.
    let x = Tensor::from_slice(&[-1.0f64], [1])?.with_requires_grad(true);
    let line = line!() + 1;
    let y = x.sqrt()?.sum_all()?;
    let err = y.backward().unwrap_err();
    assert!(
        matches!(&err, Error::Anomaly { op: "sqrt", what: "NaN", location, .. } if location.starts_with(&here(line))),
        "{err}"
    );

    // 0 / 0: the divisor's gradient -g a / b^2 is NaN. Reported for input 1 of `/`.
    let a = Tensor::from_slice(&[0.0f64], [1])?.with_requires_grad(true);
    let b = Tensor::from_slice(&[0.0f64], [1])?.with_requires_grad(true);
    let line = line!() + 1;
    let q = (&a / &b)?;
    let err = ops::sum_all(&q)?.backward().unwrap_err();
    assert!(
        matches!(
            &err,
            Error::Anomaly {
                op: "div",
                input: 0,
                ..
            } | Error::Anomaly {
                op: "div",
                input: 1,
                ..
            }
        ),
        "{err}"
    );
    let Error::Anomaly { location, .. } = &err else {
        unreachable!()
    };
    assert!(
        location.starts_with(&here(line)),
        "{location} vs line {line}"
    );
    Ok(())
}

#[test]
fn the_guard_is_scoped_to_its_thread_and_its_lifetime() -> Result<()> {
    crate::init();
    {
        let _on = anomaly::enable();
        assert!(anomaly::is_enabled());
        let elsewhere = std::thread::spawn(anomaly::is_enabled).join().unwrap();
        assert!(
            !elsewhere,
            "the guard turned anomaly mode on for another thread"
        );
        let x = at_zero();
        assert!(ops::sum_all(&ops::log(&x)?)?.backward().is_err());
    }
    assert!(!anomaly::is_enabled());
    let x = at_zero();
    ops::sum_all(&ops::log(&x)?)?.backward()?;
    Ok(())
}

#[test]
fn finite_gradients_pass_unchanged_with_anomaly_mode_on() -> Result<()> {
    crate::init();
    let run = || -> Result<Vec<f64>> {
        let x = Tensor::from_slice(&[0.5f64, 1.5, 3.0], [3])?.with_requires_grad(true);
        ops::sum_all(&(ops::log(&x)? * ops::sqrt(&x)?)?)?.backward()?;
        x.grad().unwrap().to_vec::<f64>()
    };
    let plain = run()?;
    let checked = {
        let _on = anomaly::enable();
        run()?
    };
    assert_eq!(plain, checked);
    Ok(())
}
