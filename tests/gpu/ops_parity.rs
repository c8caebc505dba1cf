//! Every registered op, forward and backward, on the GPU against the CPU, at the
//! op's own check cases (registry-driven: an op added to the library is covered
//! without touching this file), in f64 and in f32.

use autograd::prelude::*;
use autograd::{CheckCase, compute, registry};

struct Run {
    output: Vec<f64>,
    grads: Vec<Option<Vec<f64>>>,
}

fn run(case: &CheckCase, inputs: &[Tensor], mask: &[bool], device: Device) -> Result<Run> {
    let xs = inputs
        .iter()
        .zip(mask)
        .map(|(x, &m)| {
            // Indices, targets and masks stay on the host, where the ops read them
            // whatever the data's device.
            if !x.dtype().is_float() {
                return Ok(x.clone());
            }
            let x = compute::to_device(x, device)?;
            Ok(if m {
                x.detach().with_requires_grad(true)
            } else {
                x
            })
        })
        .collect::<Result<Vec<_>>>()?;
    let out = (case.run)(&xs)?;
    if out.device() != device {
        return Err(Error::InvalidArgument {
            op: "parity",
            msg: format!("the output is on {}, not on {device}", out.device()),
        });
    }
    let seed = Rng::new(99).uniform(out.shape().clone(), -1.0, 1.0, out.dtype())?;
    let seed = compute::to_device(&seed, device)?;
    let targets: Vec<&Tensor> = xs
        .iter()
        .zip(mask)
        .filter(|(_, m)| **m)
        .map(|(x, _)| x)
        .collect();
    let grads = if out.requires_grad() {
        autograd::grad(&out, &targets, BackwardOptions::default().seed(seed))?
    } else {
        vec![None; targets.len()]
    };
    let grads = grads
        .into_iter()
        .map(|g| match g {
            Some(g) if g.device() != device => Err(Error::InvalidArgument {
                op: "parity",
                msg: format!("a gradient is on {}, not on {device}", g.device()),
            }),
            Some(g) => g.to_vec::<f64>().map(Some),
            None => Ok(None),
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(Run {
        output: out.to_vec::<f64>()?,
        grads,
    })
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn every_registered_op_matches_the_cpu_forward_and_backward() {
    let gpu = crate::gpu();
    let reg = registry().expect("registry");
    let (mut failures, mut checked, mut ops) = (vec![], 0, 0);
    for entry in reg.iter() {
        let Some(cases) = entry.check_cases else {
            failures.push(format!(
                "{}: no check cases, so it cannot be compared",
                entry.name
            ));
            continue;
        };
        ops += 1;
        for case in cases() {
            let mask = case
                .differentiable
                .clone()
                .unwrap_or_else(|| vec![true; case.inputs.len()]);
            for (dtype, rtol, atol) in [(DType::F64, 1e-9, 1e-10), (DType::F32, 1e-4, 1e-5)] {
                let what = format!("{} ({}, {dtype})", entry.name, case.label);
                let inputs = match case
                    .inputs
                    .iter()
                    // Floating inputs in the dtype; integer and boolean ones
                    // (indices, targets, masks) in their own.
                    .map(|x| {
                        if x.dtype().is_float() {
                            compute::cast(x, dtype)
                        } else {
                            Ok(x.clone())
                        }
                    })
                    .collect::<Result<Vec<_>>>()
                {
                    Ok(v) => v,
                    Err(e) => {
                        failures.push(format!("{what}: cast: {e}"));
                        continue;
                    }
                };
                let (cpu, dev) = match (
                    run(&case, &inputs, &mask, Device::Cpu),
                    run(&case, &inputs, &mask, gpu),
                ) {
                    (Ok(c), Ok(g)) => (c, g),
                    (Err(e), _) => {
                        failures.push(format!("{what}: on the CPU: {e}"));
                        continue;
                    }
                    (_, Err(e)) => {
                        failures.push(format!("{what}: on the GPU: {e}"));
                        continue;
                    }
                };
                checked += 1;
                if let Err(m) = crate::compare(
                    &format!("{what} forward"),
                    &cpu.output,
                    &dev.output,
                    (rtol, atol),
                ) {
                    failures.push(m);
                }
                for (i, (c, g)) in cpu.grads.iter().zip(&dev.grads).enumerate() {
                    match (c, g) {
                        (Some(c), Some(g)) => {
                            if let Err(m) =
                                crate::compare(&format!("{what} grad {i}"), c, g, (rtol, atol))
                            {
                                failures.push(m);
                            }
                        }
                        (None, None) => {}
                        _ => failures.push(format!("{what}: grad {i} exists on one device only")),
                    }
                }
            }
        }
    }
    eprintln!("{ops} ops, {checked} case/dtype pairs compared");
    assert!(ops > 0 && ops == reg.len(), "every registered op has cases");
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
