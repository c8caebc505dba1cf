//! `einsum`: Einstein summation over letters naming axes, built from the
//! registered ops (`sum`, `permute`, `reshape`, `matmul`), so differentiable to
//! any order on every device.

use crate::{matmul, permute, reshape, sum};
use autograd_core::{Error, Result, Shape, Tensor};

const OP: &str = "einsum";

fn invalid(msg: String) -> Error {
    Error::InvalidArgument { op: OP, msg }
}

/// One operand: its tensor and the letter naming each of its axes.
#[derive(Clone)]
struct Term {
    tensor: Tensor,
    letters: Vec<char>,
}

impl Term {
    fn size(&self, c: char) -> usize {
        let at = self.letters.iter().position(|&l| l == c).unwrap_or(0);
        self.tensor.dims()[at]
    }

    /// Sums out the letters not in `keep` (none of them elsewhere).
    fn sum_out(self, keep: &[char]) -> Result<Term> {
        let mut t = self;
        // From the last axis down, so the positions of the others hold.
        for at in (0..t.letters.len()).rev() {
            if !keep.contains(&t.letters[at]) {
                t.tensor = sum(&t.tensor, at as isize, false)?;
                t.letters.remove(at);
            }
        }
        Ok(t)
    }

    /// The axes reordered to `order` (a permutation of the letters).
    fn arrange(self, order: &[char]) -> Result<Term> {
        if self.letters == order {
            return Ok(self);
        }
        let dims: Vec<usize> = order
            .iter()
            .map(|c| self.letters.iter().position(|l| l == c).unwrap_or(0))
            .collect();
        Ok(Term {
            tensor: permute(&self.tensor, dims)?,
            letters: order.to_vec(),
        })
    }
}

/// The letters of one side of the equation, checked.
fn letters(part: &str, what: &str, equation: &str) -> Result<Vec<char>> {
    let part = part.trim();
    if part.contains("...") || part.contains('.') {
        return Err(invalid(format!(
            "equation {equation:?}: the ellipsis (`...`) is not supported; name every axis with \
             a letter"
        )));
    }
    part.chars()
        .filter(|c| !c.is_whitespace())
        .map(|c| {
            if c.is_ascii_alphabetic() {
                Ok(c)
            } else {
                Err(invalid(format!(
                    "equation {equation:?}: {what} has {c:?}; axes are named by letters a-z, A-Z"
                )))
            }
        })
        .collect()
}

/// The Einstein sum `equation` of `operands` (`torch.einsum`): each operand's axes
/// are named by letters (`"bhqd,bhkd->bhqk"`); letters after `->` name the
/// result's axes, in that order, and every letter not there is summed over (the
/// implicit form without `->` keeps the letters that appear once, in alphabetical
/// order, as NumPy and PyTorch do). Axes named by one letter must have one size.
///
/// Recorded as the registered ops it reduces to: operands are contracted two at a
/// time as a batched [`matmul`](mod@matmul) (shared letters kept become the batch,
/// shared letters summed become the inner axis), with [`sum`](mod@sum),
/// [`permute`](mod@permute) and [`reshape`](mod@reshape) around it; so
/// `"ij,jk->ik"` is a matmul and `"i,j->ij"` an outer product.
///
/// Errors name `einsum`: a count of terms other than the operand count, an
/// operand of another rank than its term, one letter with two sizes, a letter of
/// the result that no operand has or that the result repeats, a letter repeated
/// within one operand (diagonals, `"ii->i"`, are not supported), the ellipsis
/// (`...`, not supported), a character that is not a letter.
///
/// ```
/// # fn main() -> autograd_core::Result<()> {
/// # autograd_ops::init()?;
/// use autograd_core::Tensor;
/// let a = Tensor::from_slice(&[1.0f32, 2.0, 3.0, 4.0], [2, 2])?;
/// let b = Tensor::from_slice(&[1.0f32, 0.0, 0.0, 1.0], [2, 2])?;
/// let c = autograd_ops::einsum("ij,jk->ik", &[&a, &b])?;
/// assert_eq!(c.to_vec::<f32>()?, [1.0, 2.0, 3.0, 4.0]);
/// let trace_free = autograd_ops::einsum("ij->j", &[&a])?; // column sums
/// assert_eq!(trace_free.to_vec::<f32>()?, [4.0, 6.0]);
/// # Ok(())
/// # }
/// ```
pub fn einsum(equation: &str, operands: &[&Tensor]) -> Result<Tensor> {
    let (inputs, output) = match equation.split_once("->") {
        Some((i, o)) => (i, Some(o)),
        None => (equation, None),
    };
    let specs: Vec<Vec<char>> = inputs
        .split(',')
        .enumerate()
        .map(|(k, p)| letters(p, &format!("operand {k}"), equation))
        .collect::<Result<_>>()?;
    if specs.len() != operands.len() {
        return Err(invalid(format!(
            "equation {equation:?} names {} operands, and {} were given; give one term per \
             operand, separated by commas",
            specs.len(),
            operands.len()
        )));
    }
    let mut terms = Vec::with_capacity(specs.len());
    for (k, (spec, x)) in specs.into_iter().zip(operands).enumerate() {
        if spec.len() != x.rank() {
            return Err(Error::Shape {
                op: OP,
                msg: format!(
                    "equation {equation:?}: operand {k} has shape {} (rank {}), and its term \
                     {:?} names {} axes; give one letter per axis",
                    x.shape(),
                    x.rank(),
                    spec.iter().collect::<String>(),
                    spec.len()
                ),
            });
        }
        if let Some(c) = spec
            .iter()
            .enumerate()
            .find_map(|(i, c)| spec[..i].contains(c).then_some(*c))
        {
            return Err(invalid(format!(
                "equation {equation:?}: operand {k} names two of its axes {c:?}; diagonals \
                 (a letter repeated within one operand, as in \"ii->i\") are not supported"
            )));
        }
        terms.push(Term {
            tensor: (*x).clone(),
            letters: spec,
        });
    }
    // Every letter has one size.
    let mut sizes: Vec<(char, usize, usize)> = Vec::new();
    for (k, t) in terms.iter().enumerate() {
        for &c in &t.letters {
            let d = t.size(c);
            match sizes.iter().find(|(l, _, _)| *l == c) {
                Some(&(_, d0, k0)) if d0 != d => {
                    return Err(Error::Shape {
                        op: OP,
                        msg: format!(
                            "equation {equation:?}: axis {c:?} has {d0} entries in operand {k0} \
                             (shape {}) and {d} in operand {k} (shape {}); the axes one letter \
                             names must have one size",
                            operands[k0].shape(),
                            operands[k].shape()
                        ),
                    });
                }
                Some(_) => {}
                None => sizes.push((c, d, k)),
            }
        }
    }
    let out: Vec<char> = match output {
        Some(o) => {
            let out = letters(o, "the result", equation)?;
            for (i, c) in out.iter().enumerate() {
                if out[..i].contains(c) {
                    return Err(invalid(format!(
                        "equation {equation:?}: the result names {c:?} twice; name each of its \
                         axes once"
                    )));
                }
                if !sizes.iter().any(|(l, _, _)| l == c) {
                    return Err(invalid(format!(
                        "equation {equation:?}: the result names {c:?}, which no operand has"
                    )));
                }
            }
            out
        }
        None => {
            // Implicit: the letters that appear once, alphabetically.
            let mut once: Vec<char> = sizes
                .iter()
                .map(|(c, _, _)| *c)
                .filter(|c| terms.iter().filter(|t| t.letters.contains(c)).count() == 1)
                .collect();
            once.sort_unstable();
            once
        }
    };
    contract(terms, &out).map_err(|e| e.in_op(OP))
}

/// Contracts the terms left to right, two at a time, into the letters `out`.
fn contract(terms: Vec<Term>, out: &[char]) -> Result<Tensor> {
    let mut rest = terms.into_iter();
    let Some(mut acc) = rest.next() else {
        return Err(invalid(
            "no operand given; einsum needs at least one".into(),
        ));
    };
    let rest: Vec<Term> = rest.collect();
    for (i, next) in rest.iter().enumerate() {
        // Letters needed after this step: the result's and the later operands'.
        let later: Vec<char> = out
            .iter()
            .copied()
            .chain(rest[i + 1..].iter().flat_map(|t| t.letters.iter().copied()))
            .collect();
        let keep_a: Vec<char> = later.iter().chain(&next.letters).copied().collect();
        let keep_b: Vec<char> = later.iter().chain(&acc.letters).copied().collect();
        let a = acc.sum_out(&keep_a)?;
        let b = next.clone().sum_out(&keep_b)?;
        acc = pair(a, b, &later)?;
    }
    let acc = acc.sum_out(out)?.arrange(out)?;
    Ok(acc.tensor)
}

/// `a` and `b` contracted as one batched matmul: shared letters in `later` are
/// the batch, shared letters not in it are summed, the others are kept.
fn pair(a: Term, b: Term, later: &[char]) -> Result<Term> {
    let shared = |c: &char| b.letters.contains(c);
    let batch: Vec<char> = a
        .letters
        .iter()
        .copied()
        .filter(|c| shared(c) && later.contains(c))
        .collect();
    let inner: Vec<char> = a
        .letters
        .iter()
        .copied()
        .filter(|c| shared(c) && !later.contains(c))
        .collect();
    let only_a: Vec<char> = a.letters.iter().copied().filter(|c| !shared(c)).collect();
    let only_b: Vec<char> = b
        .letters
        .iter()
        .copied()
        .filter(|c| !a.letters.contains(c))
        .collect();
    let size = |t: &Term, cs: &[char]| cs.iter().map(|&c| t.size(c)).product::<usize>();
    let (nb, m, k, n) = (
        size(&a, &batch),
        size(&a, &only_a),
        size(&a, &inner),
        size(&b, &only_b),
    );
    let result_dims: Vec<usize> = batch
        .iter()
        .chain(&only_a)
        .map(|&c| a.size(c))
        .chain(only_b.iter().map(|&c| b.size(c)))
        .collect();
    let a_order: Vec<char> = batch.iter().chain(&only_a).chain(&inner).copied().collect();
    let b_order: Vec<char> = batch.iter().chain(&inner).chain(&only_b).copied().collect();
    let a3 = reshape(&a.arrange(&a_order)?.tensor, Shape::from([nb, m, k]))?;
    let b3 = reshape(&b.arrange(&b_order)?.tensor, Shape::from([nb, k, n]))?;
    let c = matmul(&a3, &b3)?;
    Ok(Term {
        tensor: reshape(&c, Shape::from(result_dims))?,
        letters: batch
            .iter()
            .chain(&only_a)
            .chain(&only_b)
            .copied()
            .collect(),
    })
}
