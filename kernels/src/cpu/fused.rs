//! Fused elementwise chains on the CPU: a small program of elementwise ops over one
//! output shape, run in one pass over memory.
//!
//! The program is a list of [`Step`]s in dependency order, each an op over earlier
//! steps and over leaves (buffers with a layout broadcast to the output's shape).
//! It runs over blocks of [`BLOCK`] elements: every step of the block is computed
//! into a buffer of its own that stays in cache, then the last step's block is
//! appended to the output (or added to a running sum). So a chain of k ops reads
//! each leaf once and writes one result, where k separate kernels would write and
//! read back k − 1 intermediates.
//!
//! Each step computes the formula the unfused kernel of its op computes, per
//! element and in the same order, so a fused value is the same bits as the unfused
//! one; a trailing sum adds in the same blocks as the sum reduction. Two steps run
//! in one loop where they can: a generated op's value and its derivative, and an
//! arithmetic step with the one arithmetic step that alone reads it (its value then
//! never goes through a block buffer).

use super::elementwise::{Dest, Fold, binary_block, binary2_block, unary_block};
use super::stream::{STREAM_BYTES, append_streaming, fence};
use super::{CpuElement, CpuStorage, pool, reduce};
use crate::generated::Cursor;
use crate::program::{BlockKernel, FusedOp, Operand, Sink, Step, check_program};
use crate::{BinaryOp, DType, KernelError, Layout, Result};
use smallvec::SmallVec;

/// Elements per block: a whole number of the sum's blocks
/// (the 1024 elements of the sum reduction's blocks), and small enough that a dozen steps' buffers stay in
/// the first two levels of cache.
pub const BLOCK: usize = 2 * reduce::SUM_BLOCK;

/// Runs `steps` (in dependency order; the last is the result) over `n` elements.
/// `leaves[k]` is leaf `k`'s buffer with its layout, already broadcast to the
/// output's shape (`n` elements); all hold `dtype`.
pub fn run(
    steps: &[Step],
    leaves: &[(&CpuStorage, &Layout)],
    n: usize,
    dtype: DType,
    sink: Sink,
) -> Result<CpuStorage> {
    let last = steps.len().saturating_sub(1);
    let mut outs = run_many(steps, leaves, n, dtype, &[(last, sink)])?;
    outs.pop()
        .ok_or_else(|| KernelError::Layout("a fused chain returned no result".into()))
}

/// Runs `steps` over `n` elements as [`run`] does, in one pass, with several
/// results: `outputs[k] = (j, sink)` makes result `k` the values of step `j`,
/// stored or summed. So chains over the same elements that read the same leaves
/// (a loss and its gradient) read each leaf once between them.
pub fn run_many(
    steps: &[Step],
    leaves: &[(&CpuStorage, &Layout)],
    n: usize,
    dtype: DType,
    outputs: &[(usize, Sink)],
) -> Result<Vec<CpuStorage>> {
    match dtype {
        DType::F32 => run_typed::<f32>(
            steps,
            leaves,
            n,
            outputs,
            |k, i, o| k.eval_f32(i, o),
            |k, value, i, v, d| k.eval_pair_f32(value, i, v, d),
        ),
        DType::F64 => run_typed::<f64>(
            steps,
            leaves,
            n,
            outputs,
            |k, i, o| k.eval_f64(i, o),
            |k, value, i, v, d| k.eval_pair_f64(value, i, v, d),
        ),
    }
}

/// `k`'s step, when it is a kernel's.
fn kernel_of(step: &Step) -> Option<&dyn BlockKernel> {
    match &step.op {
        FusedOp::Kernel(k) => Some(&**k),
        _ => None,
    }
}

/// Distinct elements `i` and `k` of `v`, mutably.
fn two_mut<T>(v: &mut [T], i: usize, k: usize) -> (&mut T, &mut T) {
    if i < k {
        let (lo, hi) = v.split_at_mut(k);
        (&mut lo[i], &mut hi[0])
    } else {
        let (lo, hi) = v.split_at_mut(i);
        (&mut hi[0], &mut lo[k])
    }
}

/// How a leaf is read, block by block.
enum Source<'a, T> {
    /// Back to back from this position.
    Dense(&'a [T]),
    /// A run repeated (see [`Layout::broadcast_period`]), filled into a block once.
    Repeated(Vec<T>),
    /// Any other view: gathered into a block buffer.
    Gathered(&'a [T], &'a Layout, Cursor, Vec<T>),
}

/// Where a result of [`run_many`] goes while the blocks run.
enum Out<T> {
    /// Stored: the values so far.
    Store(Vec<T>),
    /// Summed: the running sum of the blocks (and the plain fold of a sum too short
    /// for blocks, as the reduction computes it).
    Sum(f64, Option<T>),
}

fn run_typed<T: CpuElement>(
    steps: &[Step],
    leaves: &[(&CpuStorage, &Layout)],
    n: usize,
    outputs: &[(usize, Sink)],
    kernel: impl Fn(&dyn BlockKernel, &[&[T]], &mut Vec<T>),
    pair: impl Fn(&dyn BlockKernel, &dyn BlockKernel, &[&[T]], &mut Vec<T>, &mut Vec<T>) -> bool,
) -> Result<Vec<CpuStorage>> {
    let read = check_program(steps, leaves, n, outputs)?;
    let block = BLOCK.min(n.max(1));
    let mut sources = Vec::with_capacity(leaves.len());
    for &(s, l) in leaves {
        let data = crate::generated::operand::<T>(s, l)?;
        sources.push(if l.is_contiguous() {
            Source::Dense(&data[l.offset()..l.offset() + n])
        } else if let Some(r) = l
            .broadcast_period()
            .filter(|&r| n > 0 && block.is_multiple_of(r))
        {
            // Every block starts at a multiple of the period: one block of it serves all.
            let run = &data[l.offset()..l.offset() + r];
            Source::Repeated(run.iter().copied().cycle().take(block).collect())
        } else {
            Source::Gathered(data, l, Cursor::new(l), vec![T::ZERO; block])
        });
    }
    // A generated op's value and its first derivative over the same operands run
    // in one loop (`pairs[p] = (value, derivative)`), at the first of the two steps,
    // when all the derivative reads comes before it.
    let mut pairs: Vec<Option<(usize, usize)>> = vec![None; steps.len()];
    let mut in_pair = vec![false; steps.len()];
    for (d, sd) in steps.iter().enumerate() {
        let Some(kd) = kernel_of(sd).filter(|_| sd.args.len() >= 2 && !in_pair[d]) else {
            continue;
        };
        let arity = sd.args.len() - 1;
        let value = steps.iter().enumerate().position(|(v, sv)| {
            let p = v.min(d);
            v != d
                && !in_pair[v]
                && sv.args[..] == sd.args[..arity]
                && sd
                    .args
                    .iter()
                    .all(|a| !matches!(*a, Operand::Step(i) if i >= p))
                && kernel_of(sv).is_some_and(|kv| kd.derivative_of(kv))
        });
        if let Some(v) = value {
            pairs[v.min(d)] = Some((v, d));
            in_pair[v] = true;
            in_pair[d] = true;
        }
    }
    // An arithmetic step read only by one later arithmetic step is computed in that
    // step's loop, its value never stored (`folds[k] = (j, how k reads j)`): a
    // chain `x * x + b` is one loop, not two. One level deep: a folded step folds
    // nothing itself.
    let arith = |j: usize| {
        !in_pair[j]
            && matches!(
                steps[j].op,
                FusedOp::Binary(BinaryOp::Add | BinaryOp::Sub | BinaryOp::Mul | BinaryOp::Div)
            )
    };
    let mut folds: Vec<Option<(usize, Fold)>> = vec![None; steps.len()];
    let mut folded = vec![false; steps.len()];
    for (k, step) in steps.iter().enumerate() {
        if !arith(k) {
            continue;
        }
        let inner = |a: Operand| match a {
            Operand::Step(j) if arith(j) && folds[j].is_none() => Some(j),
            _ => None,
        };
        folds[k] = match (inner(step.args[0]), inner(step.args[1])) {
            (Some(j), Some(i)) if i == j && read[j] == 2 => Some((j, Fold::Both)),
            (Some(j), _) if read[j] == 1 => Some((j, Fold::Left)),
            (_, Some(j)) if read[j] == 1 => Some((j, Fold::Right)),
            _ => None,
        };
        if let Some((j, _)) = folds[k] {
            folded[j] = true;
        }
    }
    // The output a step's own loop writes (`own[j]`), when nothing else reads the
    // step: a stored result is appended to its output directly, and a binary step
    // that only a sum reads is summed in its loop, its values never stored (the
    // block sum's lanes take them as they are computed, in the order they would
    // read them from a buffer). Every other step computes into a block buffer of
    // its own, stored results then copied out of it, summed ones added up from it.
    // Results larger than the caches are written past them (see `stream`): from
    // the loop of an arithmetic or unary step, which streams its values as it
    // computes them, else copied out of the block buffer.
    let stream = n * std::mem::size_of::<T>() >= STREAM_BYTES;
    let own: Vec<Option<usize>> = (0..steps.len())
        .map(|j| {
            // (Read once: by its one output and no step.)
            let k = outputs.iter().position(|&(i, _)| i == j)?;
            let fits = match outputs[k].1 {
                Sink::Store => {
                    !stream || matches!(steps[j].op, FusedOp::Unary(_) | FusedOp::Binary(_))
                }
                Sink::Sum => n > reduce::LANES && matches!(steps[j].op, FusedOp::Binary(_)),
            };
            (read[j] == 1 && !in_pair[j] && fits).then_some(k)
        })
        .collect();
    let mut bufs: Vec<Vec<T>> = own
        .iter()
        .zip(&folded)
        .map(|(own, &folded)| match own {
            None if !folded => Vec::with_capacity(block),
            _ => Vec::new(),
        })
        .collect();
    let mut outs = outputs
        .iter()
        .map(|&(_, sink)| {
            Ok(match sink {
                Sink::Store => Out::Store(pool::take(n)?),
                Sink::Sum => Out::Sum(0.0, None),
            })
        })
        .collect::<Result<Vec<Out<T>>>>()?;
    let mut with_value = vec![false; steps.len()];
    let mut start = 0;
    while start < n {
        let len = block.min(n - start);
        for source in &mut sources {
            if let Source::Gathered(data, l, cursor, buf) = source {
                cursor.gather(data, l, &mut buf[..len]);
            }
        }
        let leaf = |k: usize| -> &[T] {
            match &sources[k] {
                Source::Dense(d) => &d[start..start + len],
                Source::Repeated(b) | Source::Gathered(_, _, _, b) => &b[..len],
            }
        };
        with_value.fill(false);
        for (j, step) in steps.iter().enumerate() {
            if with_value[j] || folded[j] {
                continue; // computed with its pair, or in the loop of the step reading it
            }
            if let Some((v, d)) = pairs[j]
                && let (Some(kv), Some(kd)) = (kernel_of(&steps[v]), kernel_of(&steps[d]))
            {
                let (done, rest) = bufs.split_at_mut(j);
                let (bv, bd) = two_mut(rest, v - j, d - j);
                bv.clear();
                bd.clear();
                let ins: SmallVec<[&[T]; 5]> = steps[d]
                    .args
                    .iter()
                    .map(|&a| match a {
                        Operand::Leaf(k) => leaf(k),
                        Operand::Step(i) => &done[i][..],
                    })
                    .collect();
                if pair(kd, kv, &ins, bv, bd) {
                    with_value[v] = true;
                    with_value[d] = true;
                    continue;
                }
                bv.clear();
                bd.clear();
            }
            let (done, rest) = bufs.split_at_mut(j);
            let dest = match own[j].map(|k| &mut outs[k]) {
                Some(Out::Sum(total, _)) => Dest::Sum(total),
                Some(Out::Store(out)) if stream => Dest::Stream(out),
                Some(Out::Store(out)) => Dest::Append(out),
                None => {
                    let b = &mut rest[0];
                    b.clear();
                    Dest::Append(b)
                }
            };
            let arg = |a: Operand| -> &[T] {
                match a {
                    Operand::Leaf(k) => leaf(k),
                    Operand::Step(i) => &done[i],
                }
            };
            match (&step.op, dest) {
                (FusedOp::Unary(op), dest) => unary_block(arg(step.args[0]), dest, *op),
                (FusedOp::Binary(op), dest) => match folds[j] {
                    None => binary_block(arg(step.args[0]), arg(step.args[1]), dest, *op),
                    Some((i, fold)) => {
                        let inner = &steps[i];
                        let (a, b) = (arg(inner.args[0]), arg(inner.args[1]));
                        let c = match fold {
                            Fold::Left => arg(step.args[1]),
                            Fold::Right => arg(step.args[0]),
                            Fold::Both => a,
                        };
                        let two = match inner.op {
                            FusedOp::Binary(f) => binary2_block([a, b, c], dest, f, *op, fold),
                            _ => false,
                        };
                        if !two {
                            // (Only arithmetic steps are folded: not reached.)
                            return Err(KernelError::Layout(format!(
                                "step {j} of a fused chain ({}) cannot compute step {i} ({})",
                                step.op.name(),
                                inner.op.name()
                            )));
                        }
                    }
                },
                (FusedOp::Kernel(k), Dest::Append(target)) => {
                    let ins: SmallVec<[&[T]; 5]> = step.args.iter().map(|&a| arg(a)).collect();
                    kernel(&**k, &ins, target);
                }
                // (Only binary steps are summed in their loop, and only unary and
                // binary steps stream: not reached.)
                (FusedOp::Kernel(_), Dest::Sum(_) | Dest::Stream(_)) => {
                    return Err(KernelError::Layout(format!(
                        "step {j} of a fused chain ({}) cannot be summed or streamed in its loop",
                        step.op.name()
                    )));
                }
            }
        }
        for (k, (&(j, _), out)) in outputs.iter().zip(&mut outs).enumerate() {
            match out {
                _ if own[j] == Some(k) => {} // written or summed by its loop
                Out::Store(out) if stream => append_streaming(out, &bufs[j]),
                Out::Store(out) => out.extend_from_slice(&bufs[j]),
                // (A sum this short is a plain fold, as the reduction does it.)
                Out::Sum(_, small) if n <= reduce::LANES => {
                    *small = Some(bufs[j].iter().fold(T::ZERO, |a, &b| a + b));
                }
                Out::Sum(total, _) => reduce::sum_blocks_into(&bufs[j], total),
            }
        }
        start += len;
    }
    if stream {
        fence();
    }
    outputs
        .iter()
        .zip(outs)
        .map(|(&(j, _), out)| match out {
            Out::Store(out) if out.len() == n => Ok(T::wrap(out)),
            Out::Store(out) => Err(KernelError::Layout(format!(
                "a fused chain ending in `{}` wrote {} of {n} elements",
                steps[j].op.name(),
                out.len()
            ))),
            Out::Sum(total, small) => {
                let mut one = pool::take(1)?;
                one.push(T::ZERO + small.unwrap_or_else(|| T::from_f64(total)));
                Ok(T::wrap(one))
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{BackendStorage, Shape, UnaryOp};

    fn leaf(v: Vec<f32>) -> CpuStorage {
        CpuStorage::F32(v)
    }

    /// A binary step over two operands.
    fn step(op: BinaryOp, a: Operand, b: Operand) -> Step {
        Step {
            op: FusedOp::Binary(op),
            args: [a, b].into_iter().collect(),
        }
    }

    const L0: Operand = Operand::Leaf(0);
    const L1: Operand = Operand::Leaf(1);
    const L2: Operand = Operand::Leaf(2);
    const S0: Operand = Operand::Step(0);

    /// `len` values `sin(i * seed) + shift` of `dtype`.
    fn data(dtype: DType, seed: f64, shift: f64, len: usize) -> CpuStorage {
        let v: Vec<f64> = (0..len).map(|i| (i as f64 * seed).sin() + shift).collect();
        CpuStorage::F64(v)
            .cast(&Layout::contiguous(Shape::from([len])), dtype)
            .unwrap()
    }

    /// The bits of every value (as `f64`, exact for both dtypes).
    fn bits(s: &CpuStorage) -> Vec<u64> {
        let all = Layout::contiguous(Shape::from([s.len()]));
        let v = s.to_vec::<f64>(&all).unwrap();
        v.iter().map(|x| x.to_bits()).collect()
    }

    /// An arithmetic step read once by the next computes in that step's loop
    /// (left, right, or both operands), for every pair of `+ - * /` and both dtypes,
    /// with the bits of the two steps stored one after the other: the inner step
    /// made a result too is not folded, which gives those bits.
    #[test]
    fn two_arithmetic_steps_in_one_loop_give_the_bits_of_each_in_turn() {
        let n = 2 * BLOCK + 333;
        let l = Layout::contiguous(Shape::from([n]));
        let arith = [BinaryOp::Add, BinaryOp::Sub, BinaryOp::Mul, BinaryOp::Div];
        let mut compared = 0;
        for dtype in [DType::F32, DType::F64] {
            let data = |seed: f64, len: usize| data(dtype, seed, 1.5, len);
            // The third leaf one value repeated (a scalar broadcast).
            let (x, a, b) = (data(0.37, n), data(0.11, n), data(0.5, 1));
            let b_view = Layout::new(Shape::from([n]), &[0], 0).unwrap();
            let leaves = [(&x, &l), (&a, &l), (&b, &b_view)];
            for inner in arith {
                for outer in arith {
                    for steps in [
                        vec![step(inner, L0, L1), step(outer, S0, L2)],
                        vec![step(inner, L0, L1), step(outer, L2, S0)],
                        vec![step(inner, L1, L0), step(outer, S0, S0)],
                    ] {
                        for sink in [Sink::Store, Sink::Sum] {
                            let folded = run_many(&steps, &leaves, n, dtype, &[(1, sink)]);
                            let apart =
                                run_many(&steps, &leaves, n, dtype, &[(1, sink), (0, Sink::Store)]);
                            let (folded, apart) = (folded.unwrap(), apart.unwrap());
                            let same = bits(&folded[0]) == bits(&apart[0]);
                            assert!(same, "{inner:?} {outer:?} {steps:?} {sink:?}");
                            compared += 1;
                        }
                    }
                }
            }
        }
        assert_eq!(compared, 2 * 4 * 4 * 3 * 2);
    }

    /// A binary step that only a sum reads is summed in its own loop, never stored:
    /// the bits of storing it and summing that, alone or with a step folded into it
    /// (left, right, both operands), a comparison too, at lengths around the lanes
    /// and the blocks, for both dtypes and a broadcast operand.
    #[test]
    fn a_step_summed_in_its_loop_gives_the_bits_of_summing_it_stored() {
        let mut compared = 0;
        for dtype in [DType::F32, DType::F64] {
            for n in [
                reduce::LANES + 1,
                1000,
                reduce::SUM_BLOCK,
                BLOCK + 7,
                3 * BLOCK + 333,
            ] {
                let l = Layout::contiguous(Shape::from([n]));
                let data = |seed: f64, len: usize| data(dtype, seed, 0.25, len);
                let (x, a, b) = (data(0.37, n), data(0.11, n), data(0.5, 1));
                let b_view = Layout::new(Shape::from([n]), &[0], 0).unwrap();
                let leaves = [(&x, &l), (&a, &l), (&b, &b_view)];
                for steps in [
                    vec![step(BinaryOp::Mul, L0, L1)],
                    vec![step(BinaryOp::Mul, L0, L0), step(BinaryOp::Add, S0, L2)],
                    vec![step(BinaryOp::Sub, L0, L1), step(BinaryOp::Div, L2, S0)],
                    vec![step(BinaryOp::Mul, L0, L1), step(BinaryOp::Add, S0, S0)],
                    vec![step(BinaryOp::Gt, L0, L1)],
                ] {
                    let last = steps.len() - 1;
                    let summed = run_many(&steps, &leaves, n, dtype, &[(last, Sink::Sum)]);
                    let stored = run_many(&steps, &leaves, n, dtype, &[(last, Sink::Store)]);
                    let stored = &stored.unwrap()[0];
                    let want = stored.reduce(&l, crate::ReduceOp::Sum, &[0]).unwrap();
                    let summed = &summed.unwrap()[0];
                    assert_eq!(bits(summed), bits(&want), "{dtype:?} {n} {steps:?}");
                    compared += 1;
                }
            }
        }
        assert_eq!(compared, 2 * 5 * 5);
    }

    #[test]
    fn a_chain_computes_what_its_kernels_compute_one_by_one() {
        let n = 5000;
        let x: Vec<f32> = (0..n).map(|i| (i as f32 * 0.37).sin()).collect();
        let a: Vec<f32> = (0..n).map(|i| (i as f32 * 0.11).cos()).collect();
        let (sx, sa) = (leaf(x.clone()), leaf(a.clone()));
        let l = Layout::contiguous(Shape::from([n]));
        // (x * a + x) * x, then the same summed.
        let steps = vec![
            Step {
                op: FusedOp::Binary(BinaryOp::Mul),
                args: [Operand::Leaf(0), Operand::Leaf(1)].into_iter().collect(),
            },
            Step {
                op: FusedOp::Binary(BinaryOp::Add),
                args: [Operand::Step(0), Operand::Leaf(0)].into_iter().collect(),
            },
            Step {
                op: FusedOp::Binary(BinaryOp::Mul),
                args: [Operand::Step(1), Operand::Leaf(0)].into_iter().collect(),
            },
        ];
        let leaves = [(&sx, &l), (&sa, &l)];
        let fused = run(&steps, &leaves, n, DType::F32, Sink::Store).unwrap();
        let t = sx.binary(&l, &sa, &l, BinaryOp::Mul).unwrap();
        let t = t.binary(&l, &sx, &l, BinaryOp::Add).unwrap();
        let y = t.binary(&l, &sx, &l, BinaryOp::Mul).unwrap();
        assert_eq!(fused, y);
        let sum = run(&steps, &leaves, n, DType::F32, Sink::Sum).unwrap();
        let all = Layout::contiguous(Shape::from([n]));
        assert_eq!(sum, y.reduce(&all, crate::ReduceOp::Sum, &[0]).unwrap());
    }

    #[test]
    fn several_results_come_from_one_pass_with_the_bits_of_separate_runs() {
        // Past `STREAM_BYTES` (stored results are streamed), and a length that
        // leaves a partial block and an unaligned tail.
        let n = (STREAM_BYTES / 4) + 2 * BLOCK + 3;
        let x: Vec<f32> = (0..n).map(|i| (i as f32 * 0.37).sin()).collect();
        let a: Vec<f32> = (0..n).map(|i| (i as f32 * 0.11).cos()).collect();
        let (sx, sa) = (leaf(x), leaf(a));
        let l = Layout::contiguous(Shape::from([n]));
        let leaves = [(&sx, &l), (&sa, &l)];
        // t = x * a + x; y = t * x (summed); g = t + a (stored, reads t); -x.
        // Steps 3 and 4 stream from their own loops (nothing else reads them), 1
        // and 2 are copied out of their block buffers.
        let mut steps = vec![
            step(BinaryOp::Mul, L0, L1),
            step(BinaryOp::Add, S0, L0),
            step(BinaryOp::Mul, Operand::Step(1), L0),
            step(BinaryOp::Add, Operand::Step(1), L1),
        ];
        steps.push(Step {
            op: FusedOp::Unary(UnaryOp::Neg),
            args: [Operand::Leaf(0)].into_iter().collect(),
        });
        let outputs = [
            (2, Sink::Sum),
            (3, Sink::Store),
            (1, Sink::Store),
            (2, Sink::Store),
            (4, Sink::Store),
        ];
        let many = run_many(&steps, &leaves, n, DType::F32, &outputs).unwrap();
        for (&(j, sink), got) in outputs.iter().zip(&many) {
            let alone = run(&steps[..=j], &leaves, n, DType::F32, sink).unwrap();
            assert_eq!(*got, alone, "result of step {j}, {sink:?}");
        }
        let t = sx.binary(&l, &sa, &l, BinaryOp::Mul).unwrap();
        let t = t.binary(&l, &sx, &l, BinaryOp::Add).unwrap();
        assert_eq!(many[1], t.binary(&l, &sa, &l, BinaryOp::Add).unwrap());
        assert_eq!(many[2], t);
        assert_eq!(many[4], sx.unary(&l, UnaryOp::Neg).unwrap());
        assert!(run_many(&steps, &leaves, n, DType::F32, &[(5, Sink::Store)]).is_err());
        assert!(run_many(&steps, &leaves, n, DType::F32, &[]).is_err());
    }

    #[test]
    fn leaves_may_be_broadcast_or_strided() {
        // [3, 4]: x transposed from [4, 3], b a broadcast row, s a broadcast scalar.
        let x = leaf((0..12).map(|i| i as f32).collect());
        let lx = Layout::contiguous(Shape::from([4, 3]))
            .transpose(0, 1)
            .unwrap();
        let b = leaf(vec![1.0, 2.0, 3.0, 4.0]);
        let lb = Layout::contiguous(Shape::from([4]))
            .broadcast_to(&Shape::from([3, 4]))
            .unwrap();
        let s = leaf(vec![10.0]);
        let ls = Layout::contiguous(Shape::from([1]))
            .broadcast_to(&Shape::from([3, 4]))
            .unwrap();
        let steps = vec![
            Step {
                op: FusedOp::Binary(BinaryOp::Add),
                args: [Operand::Leaf(0), Operand::Leaf(1)].into_iter().collect(),
            },
            Step {
                op: FusedOp::Binary(BinaryOp::Mul),
                args: [Operand::Step(0), Operand::Leaf(2)].into_iter().collect(),
            },
            Step {
                op: FusedOp::Unary(UnaryOp::Neg),
                args: [Operand::Step(1)].into_iter().collect(),
            },
        ];
        let out = run(
            &steps,
            &[(&x, &lx), (&b, &lb), (&s, &ls)],
            12,
            DType::F32,
            Sink::Store,
        )
        .unwrap();
        let want: Vec<f32> = (0..3)
            .flat_map(|r| (0..4).map(move |c| -((c * 3 + r) as f32 + (c + 1) as f32) * 10.0))
            .collect();
        assert_eq!(out, CpuStorage::F32(want));
    }

    #[test]
    fn a_broadcast_run_is_read_as_the_op_reads_it_whether_or_not_it_divides_a_block() {
        let layout = |dims: &[usize], to: &[usize]| {
            Layout::contiguous(Shape::from(dims))
                .broadcast_to(&Shape::from(to))
                .unwrap()
        };
        let period = |dims: &[usize], to: &[usize]| layout(dims, to).broadcast_period();
        assert_eq!(period(&[1024], &[6, 1024]), Some(1024));
        assert_eq!(period(&[1], &[6, 5]), Some(1));
        assert_eq!(period(&[4, 1], &[4, 3]), None);
        assert_eq!(period(&[2, 1, 3], &[5, 2, 1, 3]), Some(6));
        assert_eq!(period(&[2, 3], &[2, 3]), Some(6));
        // Rows of 1024 (blocks hold two), of 3 (a block holds no whole number), and
        // a [2, 3] run under a stretched axis.
        for (row, to) in [
            (vec![1024], vec![6, 1024]),
            (vec![3], vec![5000, 3]),
            (vec![2, 1, 3], vec![700, 2, 4, 3]),
        ] {
            let n: usize = to.iter().product();
            let m: usize = row.iter().product();
            let x = leaf((0..n).map(|i| (i as f32 * 0.37).sin()).collect());
            let b = leaf((0..m).map(|i| i as f32 - 0.5).collect());
            let (lx, lb) = (Layout::contiguous(Shape::from(&to[..])), layout(&row, &to));
            let steps = vec![Step {
                op: FusedOp::Binary(BinaryOp::Sub),
                args: [Operand::Leaf(0), Operand::Leaf(1)].into_iter().collect(),
            }];
            let fused = run(&steps, &[(&x, &lx), (&b, &lb)], n, DType::F32, Sink::Store).unwrap();
            assert_eq!(
                fused,
                x.binary(&lx, &b, &lb, BinaryOp::Sub).unwrap(),
                "{to:?}"
            );
        }
    }

    #[test]
    fn a_malformed_program_is_an_error() {
        let x = leaf(vec![1.0; 4]);
        let l = Layout::contiguous(Shape::from([4]));
        let forward_ref = vec![Step {
            op: FusedOp::Unary(UnaryOp::Neg),
            args: [Operand::Step(0)].into_iter().collect(),
        }];
        assert!(run(&forward_ref, &[(&x, &l)], 4, DType::F32, Sink::Store).is_err());
        assert!(run(&[], &[(&x, &l)], 4, DType::F32, Sink::Store).is_err());
        let neg = vec![Step {
            op: FusedOp::Unary(UnaryOp::Neg),
            args: [Operand::Leaf(0)].into_iter().collect(),
        }];
        assert!(run(&neg, &[(&x, &l)], 4, DType::F64, Sink::Store).is_err());
        assert!(run(&neg, &[(&x, &l)], 5, DType::F32, Sink::Store).is_err());
    }
}
