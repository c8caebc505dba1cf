//! The engine reuses memory: freed CPU buffers go to a per-thread cache, released
//! tensors and graph nodes keep their heap blocks for the next ones, gradients are
//! accumulated in place when their buffer has a single owner. None of that may be
//! visible: no tensor, view, gradient or node handle anyone still holds may change.

use autograd::prelude::*;
use autograd::{Device, memory, ops};

fn values(t: &Tensor) -> Vec<f64> {
    t.to_vec::<f64>().unwrap()
}

#[test]
fn a_view_keeps_its_buffer_when_the_tensor_it_came_from_is_released() -> Result<()> {
    crate::init();
    let a = Tensor::from_slice(&[1.0f32, 2.0, 3.0, 4.0], [4])?;
    let b = Tensor::from_slice(&[10.0f32, 20.0, 30.0, 40.0], [4])?;
    let sum = (&a + &b)?;
    let view = ops::reshape(&sum, Shape::from([2, 2]))?;
    assert!(view.shares_storage_with(&sum));
    drop(sum);
    // Fresh outputs of the same size would take a released buffer or block.
    let others: Vec<Tensor> = (0..64)
        .map(|k| ops::mul_scalar(&a, k as f64))
        .collect::<Result<_>>()?;
    assert_eq!(values(&view), vec![11.0, 22.0, 33.0, 44.0]);
    assert_eq!(values(&others[3]), vec![3.0, 6.0, 9.0, 12.0]);
    Ok(())
}

#[test]
fn released_buffers_never_show_through_live_tensors() -> Result<()> {
    crate::init();
    let x = Tensor::from_slice(&[0.5f32; 1000], [1000])?;
    let mut kept = Vec::new();
    for k in 0..50 {
        let y = ops::mul_scalar(&x, k as f64)?;
        if k % 3 == 0 {
            kept.push((k, y)); // the rest are released at once and reused
        }
    }
    for (k, y) in &kept {
        assert!(
            values(y).iter().all(|&v| v == 0.5 * *k as f64),
            "tensor {k}"
        );
    }
    Ok(())
}

#[test]
fn clones_keep_a_tensor_alive_through_reuse() -> Result<()> {
    crate::init();
    let x = Tensor::from_slice(&[2.0f64, 3.0], [2])?;
    let y = ops::exp(&x)?;
    let id = y.id();
    let copy = y.clone();
    drop(y);
    for _ in 0..32 {
        ops::exp(&x)?;
    }
    assert_eq!(copy.id(), id);
    assert_eq!(values(&copy), vec![2.0f64.exp(), 3.0f64.exp()]);
    Ok(())
}

#[test]
fn a_held_gradient_is_not_changed_by_later_accumulation() -> Result<()> {
    crate::init();
    let x = Tensor::from_slice(&[1.0f64, -2.0], [2])?.with_requires_grad(true);
    ops::sum_all(&(&x * 3.0)?)?.backward()?;
    let first = x.grad().expect("gradient");
    // A second backward accumulates into x's gradient; the handle taken before
    // must keep the values it had.
    ops::sum_all(&(&x * 5.0)?)?.backward()?;
    assert_eq!(values(&first), vec![3.0, 3.0]);
    assert_eq!(values(&x.grad().expect("gradient")), vec![8.0, 8.0]);
    Ok(())
}

#[test]
fn square_through_mul_of_one_tensor_gets_both_contributions() -> Result<()> {
    crate::init();
    let x = Tensor::from_slice(&[1.5f64, -0.5, 2.0], [3])?.with_requires_grad(true);
    let y = (&x * &x)?;
    let g = autograd::grad(&ops::sum_all(&y)?, &[&x], BackwardOptions::default())?;
    assert_eq!(
        values(g[0].as_ref().expect("gradient")),
        vec![3.0, -1.0, 4.0]
    );
    // Recorded (create_graph), the gradient 2x differentiates again: d/dx sum(2x) = 2.
    let y = (&x * &x)?;
    let g = autograd::grad(
        &ops::sum_all(&y)?,
        &[&x],
        BackwardOptions::default().create_graph(true),
    )?;
    let gg = autograd::grad(
        &ops::sum_all(g[0].as_ref().expect("gradient"))?,
        &[&x],
        BackwardOptions::default(),
    )?;
    assert_eq!(
        values(gg[0].as_ref().expect("second gradient")),
        vec![2.0; 3]
    );
    Ok(())
}

#[test]
fn a_node_handle_survives_the_release_of_its_graph() -> Result<()> {
    crate::init();
    let x = Tensor::from_slice(&[1.0f32, 2.0], [2])?.with_requires_grad(true);
    let y = ops::exp(&x)?;
    let node = y.grad_fn().expect("recorded");
    let out = y.id();
    ops::sum_all(&y)?.backward()?;
    drop(y);
    // Many more nodes recorded and released: the held node must not be reused.
    for _ in 0..64 {
        let z = ops::relu(&(&x * 2.0)?)?;
        ops::sum_all(&z)?.backward()?;
    }
    assert_eq!(node.op_name(), "exp");
    assert_eq!(node.output_id(), out);
    assert!(node.is_consumed());
    Ok(())
}

#[test]
fn storage_accounting_is_exact_through_reuse() -> Result<()> {
    crate::init();
    let x = Tensor::from_slice(&[1.0f32; 256], [256])?.with_requires_grad(true);
    let before = memory::thread_stats(Device::Cpu).live_bytes;
    for _ in 0..10 {
        let y = ((&x * &x)? + &x)?;
        ops::sum_all(&y)?.backward()?;
        x.zero_grad();
    }
    // Every storage allocated in the loop was released (its buffer may be cached,
    // which is not live tensor storage).
    assert_eq!(memory::thread_stats(Device::Cpu).live_bytes, before);
    Ok(())
}

/// Live CPU bytes of this thread.
fn live() -> isize {
    memory::thread_stats(Device::Cpu).live_bytes
}

#[test]
fn an_owned_operand_takes_the_result_when_nobody_else_can_see_its_buffer() -> Result<()> {
    crate::init();
    let b = Tensor::from_slice(&[10.0f64, 20.0, 30.0, 40.0, 50.0, 60.0], [2, 3])?;
    let row = Tensor::from_slice(&[1.0f64, 2.0, 3.0], [3])?;
    let a = Tensor::from_slice(&[1.0f64, 2.0, 3.0, 4.0, 5.0, 6.0], [2, 3])?;
    let (id, before) = (a.id(), live());
    // Every kind of owned left operand, and the compound assignments.
    let c = (a * &b)?;
    assert_eq!(live(), before, "the product was written into a's buffer");
    assert_ne!(c.id(), id, "a new value has a new id");
    assert_eq!(values(&c), [10.0, 40.0, 90.0, 160.0, 250.0, 360.0]);
    let c = ((c - &b)? / &row)?; // a broadcast right operand
    assert_eq!(live(), before);
    assert_eq!(values(&c), [0.0, 10.0, 20.0, 120.0, 100.0, 100.0]);
    let mut r: Result<Tensor> = Ok(c);
    r += &b;
    r *= &row;
    let c = r?;
    assert_eq!(live(), before);
    assert_eq!(values(&c), [10.0, 60.0, 150.0, 160.0, 300.0, 480.0]);
    // An owned right operand of `+` and `*` takes it too; of `-` and `/` it cannot
    // (the order matters), and the values say so.
    let c = (&b + c)?;
    assert_eq!(live(), before);
    assert_eq!(values(&c), [20.0, 80.0, 180.0, 200.0, 350.0, 540.0]);
    let d = (&b - c)?;
    assert_eq!(values(&d), [-10.0, -60.0, -150.0, -160.0, -300.0, -480.0]);
    Ok(())
}

#[test]
fn an_owned_operand_others_can_see_is_never_written() -> Result<()> {
    crate::init();
    let b = Tensor::from_slice(&[2.0f64, 3.0, 4.0, 5.0], [2, 2])?;
    let fresh = || Tensor::from_slice(&[1.0f64, 1.0, 1.0, 1.0], [2, 2]);
    // Another handle, a view, a weak handle, a graph.
    let a = fresh()?;
    let other = a.clone();
    let c = (a * &b)?;
    assert_eq!(values(&other), [1.0; 4]);
    assert_eq!(values(&c), [2.0, 3.0, 4.0, 5.0]);
    let a = fresh()?;
    let view = a.reshape(Shape::from([4]))?;
    let _c = (a * &b)?;
    assert_eq!(values(&view), [1.0; 4]);
    let a = fresh()?;
    let weak = a.downgrade();
    let c = (a * &b)?;
    // Written in place, `c` would be the same tensor, and the weak handle alive.
    assert!(!weak.is_alive());
    assert_eq!(values(&c), [2.0, 3.0, 4.0, 5.0]);
    let w = fresh()?.with_requires_grad(true);
    let y = (w.clone() * &b)?; // recorded: w is saved, never written
    assert_eq!(values(&w), [1.0; 4]);
    ops::sum_all(&y)?.backward()?;
    assert_eq!(values(&w.grad().unwrap()), [2.0, 3.0, 4.0, 5.0]);
    // An intermediate nobody else holds, but which requires grad: the product is
    // recorded, not written over it (that would cut the graph).
    w.zero_grad();
    let y = ((&w * &b)? * &b)?;
    ops::sum_all(&y)?.backward()?;
    assert_eq!(values(&w.grad().unwrap()), [4.0, 9.0, 16.0, 25.0]);
    // A left operand that is smaller than the result, or of another dtype (the
    // product is in the common dtype: a new buffer, the operand untouched).
    let row = Tensor::from_slice(&[1.0f64, 2.0], [2])?;
    assert_eq!(values(&(row * &b)?), [2.0, 6.0, 4.0, 10.0]);
    let f32s = Tensor::from_slice(&[1.0f32; 4], [2, 2])?;
    let mixed = (f32s.clone() * &b)?;
    assert_eq!(mixed.dtype(), DType::F64);
    assert_eq!(values(&mixed), [2.0, 3.0, 4.0, 5.0]);
    assert_eq!((values(&f32s), f32s.dtype()), (vec![1.0; 4], DType::F32));
    Ok(())
}

/// Bytes the thread's peak of live storage rose by while `f` ran.
fn peak_rise(f: impl FnOnce() -> Result<Tensor>) -> Result<(Tensor, isize)> {
    let before = memory::thread_stats(Device::Cpu).live_bytes;
    memory::reset_thread_peak(Device::Cpu);
    let t = f()?;
    Ok((t, memory::thread_stats(Device::Cpu).peak_bytes - before))
}

#[test]
fn a_tensor_is_written_in_place_again_once_its_weak_handles_are_gone() -> Result<()> {
    crate::init();
    let b = Tensor::from_slice(&[2.0f64, 3.0, 4.0, 5.0], [2, 2])?;
    let fresh = || Tensor::from_slice(&[1.0f64, 1.0, 1.0, 1.0], [2, 2]);
    // Never downgraded: the product takes `a`'s buffer, no new one.
    let a = fresh()?;
    let (c, rise) = peak_rise(|| a * &b)?;
    assert_eq!((values(&c), rise), (vec![2.0, 3.0, 4.0, 5.0], 0));
    // A weak handle that is gone no longer counts.
    let a = fresh()?;
    drop(a.downgrade());
    let (c, rise) = peak_rise(|| a * &b)?;
    assert_eq!((values(&c), rise), (vec![2.0, 3.0, 4.0, 5.0], 0));
    // One made on another thread and still held does: a new buffer.
    let a = fresh()?;
    let weak = std::thread::scope(|s| s.spawn(|| a.downgrade()).join().unwrap());
    let (c, rise) = peak_rise(|| a * &b)?;
    assert_eq!((values(&c), rise), (vec![2.0, 3.0, 4.0, 5.0], 32));
    assert!(!weak.is_alive());
    Ok(())
}

#[test]
fn backward_writes_into_buffers_only_it_holds() -> Result<()> {
    crate::init();
    // y1 is kept by the user, y2 is not: backward may take y2's buffer (mul saved
    // it), never y1's.
    let w = Tensor::from_slice(&[2.0f64, 3.0], [2])?.with_requires_grad(true);
    let x = Tensor::from_slice(&[5.0f64, 7.0], [2])?;
    let y1 = (&x * &w)?;
    let y2 = (&y1 * &w)?;
    let y3 = (y2 * &w)?;
    ops::sum_all(&y3)?.backward()?;
    assert_eq!(values(&y1), [10.0, 21.0]);
    // d(x w³)/dw = 3 x w².
    assert_eq!(values(&w.grad().unwrap()), [60.0, 189.0]);
    // A retained graph keeps its saved tensors: the second pass agrees.
    w.zero_grad();
    let y2 = ((&x * &w)? * &w)?;
    let loss = ops::sum_all(&(y2 * &w)?)?;
    loss.backward_with(BackwardOptions::default().retain_graph(true))?;
    loss.backward()?;
    assert_eq!(values(&w.grad().unwrap()), [120.0, 378.0]);
    Ok(())
}
