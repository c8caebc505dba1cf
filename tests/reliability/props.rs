//! Property tests of every standard op: random shapes (empty axes included), axes
//! (out of range included), broadcasting pairs (incompatible included), strided
//! views, f32 and f64, and values with NaN, infinities and signed zeros.
//!
//! Each case asserts one of two outcomes, decided by the naive reference in
//! `reference.rs`: a result equal to the reference's (NaN where it has NaN, the same
//! infinities), or, where the reference rejects the arguments, an `Error` that names
//! the op. A panic anywhere fails the case (proptest catches it and shrinks). Every
//! successful case is then differentiated with a seed gradient, and for f64 cases on
//! smooth inputs the gradients are checked against a central difference of the
//! *reference*, along a direction through every differentiable input.
//!
//! The list of ops below is checked against the registry, so an op added to the
//! library without a property here fails `every_standard_op_has_a_property`.
//! Functions of the library that are not one registered op (compositions such as
//! `flatten` and `stack`, constants such as `argmax` and the comparisons) have
//! properties too, listed in `COMPOSED`.

use crate::reference::{self as r, Nd};
use autograd::prelude::*;
use autograd::{compute, ops, registry};
use proptest::prelude::*;
use proptest::test_runner::{Config, RngSeed, TestCaseError, TestRunner};
use std::sync::atomic::{AtomicUsize, Ordering};

/// How one input tensor is laid out in memory: its values are the same in every
/// case, the strides are not.
#[derive(Clone, Debug)]
enum View {
    Contiguous,
    /// A permutation of a contiguous tensor, permuted back.
    Permuted(Vec<usize>),
    /// A window of a larger tensor whose other entries are NaN.
    Narrowed {
        axis: usize,
        before: usize,
    },
}

/// What an input holds, which chooses its dtype.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    /// Values: the case's float dtype.
    Value,
    /// Indices or class targets: `i64`.
    Index,
    /// A condition: `bool` ("not zero" of the drawn values).
    Mask,
}

#[derive(Clone, Debug)]
struct Input {
    nd: Nd,
    view: View,
    differentiable: bool,
    kind: Kind,
    /// A value input: it gets the other float dtype (the op promotes both to f64).
    /// An index or a mask: it gets the case's float dtype (the op must refuse it).
    other_dtype: bool,
}

#[derive(Clone, Debug, Default)]
struct Params {
    axis: isize,
    keepdim: bool,
    scalar: f64,
    shape: Vec<usize>,
    start: usize,
    len: usize,
    /// Convolutions and pools: the windows, the groups, col2im's image size.
    win: r::Win,
    groups: usize,
    size: (usize, usize),
    /// reshape_infer's sizes (-1 inferred).
    dims: Vec<isize>,
    /// flatten's end axis.
    end: isize,
    /// var and std_dev.
    correction: usize,
    /// cumsum.
    reverse: bool,
    /// dropout's generator.
    seed: u64,
    /// layer_norm: whether the weight and the bias are passed.
    affine: (bool, bool),
    /// scaled_dot_product_attention: `is_causal`.
    causal: bool,
    /// softplus_with: the threshold (`scalar` is beta).
    scalar2: f64,
}

#[derive(Clone, Debug)]
struct Case {
    op: &'static str,
    params: Params,
    inputs: Vec<Input>,
    f64: bool,
    /// Values away from kinks, poles and domain edges: gradients are checked.
    smooth: bool,
}

/// Ops with a property, by kind. `every_standard_op_has_a_property` compares this
/// list with the registry.
const UNARY: &[&str] = &[
    "neg",
    "exp",
    "log",
    "sqrt",
    "square",
    "abs",
    "tanh",
    "sigmoid",
    "relu",
    "gelu",
    "sin",
    "cos",
    "erf",
    "softplus",
    "silu",
    "mish",
    "log1p",
    "expm1",
    "recip",
    "hardtanh",
    "atan",
    "sinh",
    "cosh",
    "asinh",
    "floor",
    "ceil",
    "round",
    "trunc",
    "sign",
    "rsqrt",
    "logsigmoid",
    "softsign",
    "selu",
    "hardswish",
    "hardsigmoid",
    "gelu_erf",
];
const WITH_SCALAR: &[&str] = &[
    "add_scalar",
    "mul_scalar",
    "div_scalar",
    "pow_scalar",
    "leaky_relu",
    "elu",
    "clamp",
    "celu",
    "hardtanh_with",
];
const BINARY: &[&str] = &[
    "add", "sub", "mul", "div", "pow", "maximum", "minimum", "atan2",
];
const REDUCE: &[&str] = &["sum", "mean", "max", "min", "logsumexp", "prod"];
const OTHER: &[&str] = &[
    "sum_all",
    "mean_all",
    "softmax",
    "log_softmax",
    "reshape",
    "broadcast_to",
    "sum_to_shape",
    "transpose",
    "permute",
    "unsqueeze",
    "squeeze",
    "narrow",
    "pad",
    "concat",
    "index_select",
    "index_add",
    "matmul",
    "cross_entropy",
    "mse_loss",
    "to_device",
    "to_dtype",
    "where",
    "im2col",
    "col2im",
    "conv2d",
    "max_pool2d",
    "avg_pool2d",
    "max_all",
    "min_all",
    "var",
    "std_dev",
    "cumsum",
    "cumprod",
    "logcumsumexp",
    "gather",
    "scatter_add",
    "dropout",
    "scaled_dot_product_attention",
    "softplus_with",
    "tan",
    "asin",
    "acos",
    "acosh",
    "atanh",
    "layer_norm",
];

/// The comparisons: constant masks, with the binary ops' strategy.
const COMPARE: &[&str] = &["eq", "ne", "lt", "le", "gt", "ge"];

/// Functions of the library that are not one registered op.
const COMPOSED: &[&str] = &[
    "eq",
    "ne",
    "lt",
    "le",
    "gt",
    "ge",
    "argmax",
    "argmin",
    "reshape_infer",
    "flatten",
    "stack",
    "dot",
    "embedding",
];

/// Functions whose result is a constant: never requiring grad.
const CONSTANT: &[&str] = &["eq", "ne", "lt", "le", "gt", "ge", "argmax", "argmin"];

/// The registered ops with a property.
fn covered() -> impl Iterator<Item = &'static str> {
    [UNARY, WITH_SCALAR, BINARY, REDUCE, OTHER]
        .into_iter()
        .flatten()
        .copied()
}

/// Every function with a property: the registered ops and `COMPOSED`.
fn all_properties() -> impl Iterator<Item = &'static str> {
    covered().chain(COMPOSED.iter().copied())
}

/// Cases per op; `RELIABILITY_CASES` raises it for a longer local run.
fn cases_per_op() -> u32 {
    std::env::var("RELIABILITY_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(256)
}

// ----- strategies -----

/// Sizes 0..=4, mostly non-zero and often 1 (so broadcasting and squeeze apply).
fn dim() -> impl Strategy<Value = usize> + Clone {
    prop_oneof![1 => Just(0usize), 3 => Just(1usize), 6 => 2..=4usize]
}

fn dims(ranks: std::ops::RangeInclusive<usize>) -> BoxedStrategy<Vec<usize>> {
    proptest::collection::vec(dim(), ranks).boxed()
}

fn value(smooth: bool) -> BoxedStrategy<f64> {
    if smooth {
        // Away from 0 (abs, relu, div, log, pow) and never equal by accident (max).
        (0.25f64..2.0, any::<bool>())
            .prop_map(|(v, neg)| if neg { -v } else { v })
            .boxed()
    } else {
        prop_oneof![
            8 => -3.0f64..3.0,
            1 => prop::sample::select(vec![
                0.0,
                -0.0,
                1.0,
                -1.0,
                f64::NAN,
                f64::INFINITY,
                f64::NEG_INFINITY,
                1e-300,
            ]),
        ]
        .boxed()
    }
}

fn nd(dims: Vec<usize>, smooth: bool) -> BoxedStrategy<Nd> {
    let n = r::numel(&dims).unwrap_or(0);
    proptest::collection::vec(value(smooth), n)
        .prop_map(move |data| Nd {
            dims: dims.clone(),
            data,
        })
        .boxed()
}

fn view(rank: usize) -> BoxedStrategy<View> {
    if rank == 0 {
        return Just(View::Contiguous).boxed();
    }
    prop_oneof![
        2 => Just(View::Contiguous),
        1 => Just((0..rank).collect::<Vec<_>>()).prop_shuffle().prop_map(View::Permuted),
        1 => (0..rank, 0..3usize).prop_map(|(axis, before)| View::Narrowed { axis, before }),
    ]
    .boxed()
}

fn input(dims: Vec<usize>, smooth: bool) -> BoxedStrategy<Input> {
    let rank = dims.len();
    (nd(dims, smooth), view(rank))
        .prop_map(|(nd, view)| Input {
            nd,
            view,
            differentiable: true,
            kind: Kind::Value,
            other_dtype: false,
        })
        .boxed()
}

/// An index vector for an axis of `size` (`i64`): mostly valid positions (repeats
/// allowed), sometimes out of range or negative, sometimes not a vector, rarely
/// of a float dtype (refused).
fn index(size: usize) -> BoxedStrategy<Input> {
    let valid = proptest::collection::vec(0..size.max(1), 0..5)
        .prop_map(|v| v.into_iter().map(|i| i as f64).collect::<Vec<_>>());
    let any_value = proptest::collection::vec(
        prop_oneof![
            4 => (0..size + 2).prop_map(|i| i as f64),
            1 => prop::sample::select(vec![-1.0, -7.0, 1e18]),
        ],
        0..5,
    );
    (
        prop_oneof![4 => valid, 1 => any_value],
        0..10u8,
        prop::bool::weighted(0.05),
    )
        .prop_map(|(data, shape_pick, float)| {
            let dims = if shape_pick == 0 && data.len() == 4 {
                vec![2, 2] // not a vector
            } else {
                vec![data.len()]
            };
            Input {
                nd: Nd { dims, data },
                view: View::Contiguous,
                differentiable: false,
                kind: Kind::Index,
                other_dtype: float,
            }
        })
        .boxed()
}

/// An index tensor of `dims` for an axis of `size` (`i64`): mostly valid
/// positions, in any view; sometimes out of range or negative; rarely of a float
/// dtype (refused).
fn positions(dims: Vec<usize>, size: usize) -> BoxedStrategy<Input> {
    let n = r::numel(&dims).unwrap_or(0);
    let value = prop_oneof![
        16 => (0..size.max(1)).prop_map(|i| i as f64),
        1 => prop::sample::select(vec![-1.0, size as f64, 1e18]),
    ];
    let rank = dims.len();
    (
        proptest::collection::vec(value, n),
        view(rank),
        prop::bool::weighted(0.05),
    )
        .prop_map(move |(data, view, float)| Input {
            nd: Nd {
                dims: dims.clone(),
                data,
            },
            view,
            differentiable: false,
            kind: Kind::Index,
            other_dtype: float,
        })
        .boxed()
}

fn axis() -> impl Strategy<Value = isize> + Clone {
    -6isize..6
}

/// Sizes that overflow, or that no buffer can hold: the op must refuse them.
fn huge() -> impl Strategy<Value = usize> + Clone {
    prop::sample::select(vec![usize::MAX, usize::MAX / 2 + 1, 1usize << 61])
}

/// A shape that broadcasts with `base` (leading axes dropped, some axes set to 1),
/// or with some chance one axis changed to anything (usually incompatible).
fn broadcast_partner(base: Vec<usize>) -> BoxedStrategy<Vec<usize>> {
    let rank = base.len();
    (
        0..=rank,
        proptest::collection::vec(any::<bool>(), rank),
        prop::option::weighted(0.2, (0..rank.max(1), dim())),
    )
        .prop_map(move |(drop, ones, change)| {
            let mut s: Vec<usize> = base
                .iter()
                .zip(&ones)
                .map(|(&d, &one)| if one { 1 } else { d })
                .collect();
            if let Some((at, d)) = change
                && at < s.len()
            {
                s[at] = d;
            }
            s.split_off(drop.min(s.len()))
        })
        .boxed()
}

fn case(
    op: &'static str,
    params: impl Strategy<Value = Params> + 'static,
    inputs: impl Fn(bool) -> BoxedStrategy<Vec<Input>> + 'static,
) -> BoxedStrategy<Case> {
    let params = params.boxed();
    (any::<bool>(), prop::bool::weighted(0.6))
        .prop_flat_map(move |(f64, smooth)| {
            (params.clone(), inputs(smooth)).prop_map(move |(params, inputs)| Case {
                op,
                params,
                inputs,
                f64,
                smooth,
            })
        })
        .prop_flat_map(fit_to_input)
        .prop_map(|mut c| {
            // Smooth cases of ops defined for positive values only stay in the domain.
            if c.smooth && ["log", "sqrt", "pow", "pow_scalar"].contains(&c.op) {
                c.inputs[0].nd.data.iter_mut().for_each(|v| *v = v.abs());
            }
            c
        })
        .boxed()
}

/// Most of the time, makes the axis (and a narrow's range) valid for the first
/// input, so that invalid arguments stay a minority of the cases.
fn fit_to_input(c: Case) -> BoxedStrategy<Case> {
    let dims = c.inputs[0].nd.dims.clone();
    let rank = dims.len();
    let positions = if c.op == "unsqueeze" { rank + 1 } else { rank };
    (
        Just(c),
        prop::bool::weighted(0.8),
        0..positions.max(1),
        any::<bool>(),
        0..=4usize,
        0..=4usize,
    )
        .prop_map(move |(mut c, fit, at, negative, a, b)| {
            let own_axis = ["concat", "stack", "gather", "scatter_add"].contains(&c.op);
            if !fit || positions == 0 || own_axis || c.op.starts_with("index_") {
                return c;
            }
            let mut at = at;
            if c.op == "squeeze"
                && let Some(one) = dims.iter().position(|&d| d == 1)
            {
                at = one;
            }
            c.params.axis = if negative {
                at as isize - positions as isize
            } else {
                at as isize
            };
            if c.op == "narrow" && at < rank {
                c.params.start = a.min(dims[at]);
                c.params.len = b.min(dims[at] - c.params.start);
            }
            c
        })
        .boxed()
}

fn one_input(ranks: std::ops::RangeInclusive<usize>) -> impl Fn(bool) -> BoxedStrategy<Vec<Input>> {
    move |smooth| {
        dims(ranks.clone())
            .prop_flat_map(move |d| input(d, smooth))
            .prop_map(|i| vec![i])
            .boxed()
    }
}

fn no_params() -> BoxedStrategy<Params> {
    Just(Params::default()).boxed()
}

fn axis_params() -> BoxedStrategy<Params> {
    (axis(), any::<bool>())
        .prop_map(|(axis, keepdim)| Params {
            axis,
            keepdim,
            ..Params::default()
        })
        .boxed()
}

fn shape_params(shape: BoxedStrategy<Vec<usize>>) -> BoxedStrategy<Params> {
    shape
        .prop_map(|shape| Params {
            shape,
            ..Params::default()
        })
        .boxed()
}

/// For the unary ops with poles or a bounded domain: where a smooth value (±[0.25, 2))
/// goes, well inside the domain (their other cases take any value).
fn smooth_domain(name: &str) -> Option<fn(f64) -> f64> {
    Some(match name {
        "tan" => |v| v * 0.7,                      // (-1.4, 1.4): poles at ±π/2
        "asin" | "acos" | "atanh" => |v| v * 0.45, // (-0.9, 0.9): edges at ±1
        "acosh" => |v: f64| v.abs() + 1.1,         // (1.35, 3.1): edge at 1
        _ => return None,
    })
}

/// The strategy of cases for op `name`.
fn strategy(name: &'static str) -> BoxedStrategy<Case> {
    if UNARY.contains(&name) {
        return case(name, no_params(), one_input(0..=4));
    }
    if let Some(inside) = smooth_domain(name) {
        // Smooth values moved inside the domain, short of the poles and the edges,
        // where the reference's central difference is too coarse to compare with.
        return case(name, no_params(), move |smooth| {
            one_input(0..=4)(smooth)
                .prop_map(move |mut inputs| {
                    if smooth {
                        inputs[0].nd.data.iter_mut().for_each(|v| *v = inside(*v));
                    }
                    inputs
                })
                .boxed()
        });
    }
    if WITH_SCALAR.contains(&name) {
        let scalar = prop_oneof![
            3 => -3.0f64..3.0,
            1 => prop::sample::select(vec![0.0, 1.0, 2.0, 3.0, 0.5, -1.0, f64::NAN, f64::INFINITY]),
        ];
        let params = scalar.prop_map(|scalar| Params {
            scalar,
            ..Params::default()
        });
        return case(name, params, one_input(0..=4));
    }
    if BINARY.contains(&name) || COMPARE.contains(&name) {
        return case(name, no_params(), |smooth| {
            (dims(0..=4), any::<bool>(), prop::bool::weighted(0.05))
                .prop_flat_map(move |(base, swap, mixed)| {
                    let other = broadcast_partner(base.clone());
                    (Just(base), other).prop_flat_map(move |(a, b)| {
                        let (a, b) = if swap { (b, a) } else { (a, b) };
                        (input(a, smooth), input(b, smooth)).prop_map(move |(a, mut b)| {
                            b.other_dtype = mixed;
                            vec![a, b]
                        })
                    })
                })
                .boxed()
        });
    }
    if REDUCE.contains(&name) || name == "softmax" || name == "log_softmax" {
        return case(name, axis_params(), one_input(0..=4));
    }
    match name {
        // A bool mask (no gradient; rarely a float one, refused) and two values,
        // all broadcast to one shape.
        "where" => case(name, no_params(), |smooth| {
            dims(0..=3)
                .prop_flat_map(|base| {
                    (
                        Just(base.clone()),
                        broadcast_partner(base.clone()),
                        broadcast_partner(base),
                        prop::bool::weighted(0.05),
                    )
                })
                .prop_flat_map(move |(a, m, b, float)| {
                    (input(m, smooth), input(a, smooth), input(b, smooth)).prop_map(
                        move |(mut m, a, b)| {
                            m.differentiable = false;
                            m.kind = Kind::Mask;
                            m.other_dtype = float;
                            vec![m, a, b]
                        },
                    )
                })
                .boxed()
        }),
        "sum_all" | "mean_all" | "transpose" => case(name, no_params(), one_input(0..=4)),
        "unsqueeze" | "squeeze" => case(name, axis_params(), one_input(0..=4)),
        "reshape" | "broadcast_to" | "sum_to_shape" => case(name, no_params(), one_input(0..=4))
            .prop_flat_map(move |c| {
                let d = c.inputs[0].nd.dims.clone();
                let target = match name {
                    "reshape" => reshape_target(d),
                    "broadcast_to" => broadcast_target(d),
                    _ => sum_to_shape_target(d),
                };
                (Just(c), shape_params(target)).prop_map(|(mut c, p)| {
                    c.params = p;
                    c
                })
            })
            .boxed(),
        "permute" => case(name, no_params(), one_input(0..=4))
            .prop_flat_map(|c| {
                let rank = c.inputs[0].nd.dims.len();
                let perm = prop_oneof![
                    4 => Just((0..rank).collect::<Vec<_>>()).prop_shuffle(),
                    1 => proptest::collection::vec(0..rank + 1, 0..=rank + 1),
                ];
                (Just(c), shape_params(perm.boxed())).prop_map(|(mut c, p)| {
                    c.params = p;
                    c
                })
            })
            .boxed(),
        "narrow" | "pad" => {
            let amount = prop_oneof![8 => 0..4usize, 1 => huge()];
            let params = (axis(), amount.clone(), amount).prop_map(|(axis, start, len)| Params {
                axis,
                start,
                len,
                ..Params::default()
            });
            case(name, params, one_input(0..=4))
        }
        "concat" => case(name, axis_params(), |smooth| {
            (dims(0..=4), axis(), dim(), prop::bool::weighted(0.15))
                .prop_flat_map(move |(a, ax, size, random)| {
                    let b = if random {
                        dims(0..=4)
                    } else {
                        let mut b = a.clone();
                        if let Some(k) = r::axis(ax, b.len()) {
                            b[k] = size;
                        }
                        Just(b).boxed()
                    };
                    (input(a, smooth), b).prop_flat_map(move |(a, b)| {
                        (Just(a), input(b, smooth)).prop_map(|(a, b)| vec![a, b])
                    })
                })
                .boxed()
        })
        .prop_flat_map(|c| {
            // Concatenate along the axis the second shape was built for.
            let rank = c.inputs[0].nd.dims.len() as isize;
            (Just(c), -rank - 1..rank + 1).prop_map(|(mut c, ax)| {
                let (a, b) = (&c.inputs[0].nd.dims, &c.inputs[1].nd.dims);
                let differing = (0..a.len().min(b.len())).find(|&i| a[i] != b[i]);
                c.params.axis = differing.map_or(ax, |i| i as isize);
                c
            })
        })
        .boxed(),
        "index_select" => case(name, axis_params(), |smooth| {
            (dims(0..=3), axis())
                .prop_flat_map(move |(d, ax)| {
                    let size = r::axis(ax, d.len()).map_or(2, |k| d[k]);
                    (input(d, smooth), index(size), Just(ax))
                        .prop_map(|(x, i, ax)| (vec![x, i], ax))
                })
                .boxed()
                .prop_map(|(inputs, _)| inputs)
                .boxed()
        })
        .prop_flat_map(fix_index_axis)
        .boxed(),
        "index_add" => case(name, axis_params(), |smooth| {
            (dims(1..=3), 0..3usize, prop::bool::weighted(0.1))
                .prop_flat_map(move |(d, k, random_src)| {
                    let k = k.min(d.len() - 1);
                    (Just(d.clone()), index(d[k]), Just(k), Just(random_src))
                })
                .prop_flat_map(move |(d, idx, k, random_src)| {
                    let mut src = d.clone();
                    src[k] = idx.nd.data.len();
                    let src = if random_src {
                        dims(1..=3)
                    } else {
                        Just(src).boxed()
                    };
                    (input(d, smooth), Just(idx), src).prop_flat_map(move |(x, idx, s)| {
                        (Just(x), Just(idx), input(s, smooth)).prop_map(|(x, i, s)| vec![x, i, s])
                    })
                })
                .boxed()
        })
        .prop_flat_map(fix_index_axis)
        .boxed(),
        "matmul" => case(name, no_params(), |smooth| {
            (
                dims(0..=2),
                dim(),
                dim(),
                dim(),
                prop::bool::weighted(0.1),
                0..8u8,
            )
                .prop_flat_map(move |(batch, m, k, n, bad_k, shape_pick)| {
                    (Just(batch.clone()), broadcast_partner(batch)).prop_flat_map(
                        move |(ba, bb)| {
                            let mut a = ba.clone();
                            a.extend([m, k]);
                            let mut b = bb.clone();
                            let kb = if bad_k { k + 1 } else { k };
                            b.extend([kb, n]);
                            match shape_pick {
                                0 => a = vec![k], // vectors, as NumPy takes them
                                1 => b = vec![kb],
                                2 => (a, b) = (vec![k], vec![kb]),
                                3 if bad_k => a = vec![], // a scalar: rejected
                                _ => {}
                            }
                            (input(a, smooth), input(b, smooth)).prop_map(|(a, b)| vec![a, b])
                        },
                    )
                })
                .boxed()
        }),
        "cross_entropy" => case(name, no_params(), |smooth| {
            (dim(), dim(), prop::bool::weighted(0.1))
                .prop_flat_map(move |(n, c, bad_rank)| {
                    let logits = if bad_rank { vec![n, c, 1] } else { vec![n, c] };
                    (input(logits, smooth), index(c)).prop_map(move |(l, mut t)| {
                        // Targets: one class per row (the index strategy's length is
                        // arbitrary: fit it to n unless it is meant to be wrong).
                        if t.nd.data.len() != n && t.nd.dims.len() == 1 && n > 0 {
                            t.nd.data.resize(n, 0.0);
                            t.nd.dims = vec![n];
                        }
                        vec![l, t]
                    })
                })
                .boxed()
        }),
        "mse_loss" => case(name, no_params(), |smooth| {
            (dims(0..=3), prop::bool::weighted(0.15))
                .prop_flat_map(move |(d, random)| {
                    let t = if random {
                        dims(0..=3)
                    } else {
                        Just(d.clone()).boxed()
                    };
                    (input(d, smooth), t).prop_flat_map(move |(p, t)| {
                        (Just(p), input(t, smooth)).prop_map(|(p, t)| vec![p, t])
                    })
                })
                .boxed()
        }),
        // Into the case's own dtype (a round trip through f32 is piecewise constant,
        // which finite differences cannot check; the integration tests check it).
        "to_dtype" => case(name, no_params(), one_input(0..=4)),
        "to_device" => {
            // `len` picks the device: 0 the CPU, k > 0 CUDA device k - 1.
            let params = (0..3usize).prop_map(|len| Params {
                len,
                ..Params::default()
            });
            case(name, params, one_input(0..=4))
        }
        "im2col" | "max_pool2d" | "avg_pool2d" => {
            let pool = name != "im2col";
            case(name, win_params(pool), |smooth| {
                image()
                    .prop_flat_map(move |d| input(d, smooth))
                    .prop_map(|i| vec![i])
                    .boxed()
            })
        }
        "col2im" => case(name, win_params(false), |_| {
            // Replaced below, once the parameters say what the columns must be.
            input(vec![1], true).prop_map(|i| vec![i]).boxed()
        })
        .prop_flat_map(|c| {
            let w = c.params.win;
            let sizes = (prop_oneof![8 => 1..=5usize, 1 => Just(0usize)], 1..=5usize);
            (
                Just(c),
                sizes,
                0..=2usize,
                0..=3usize,
                prop::bool::weighted(0.1),
            )
                .prop_flat_map(move |(c, size, n, ch, random)| {
                    let fitting = r::windows(&[n, ch, size.0, size.1], &w)
                        .filter(|_| w.k.0 <= 3 && w.k.1 <= 3 && !random)
                        .map(|(oh, ow)| vec![n, ch * w.k.0 * w.k.1, oh * ow]);
                    let dims = match fitting {
                        Some(d) => Just(d).boxed(),
                        None => dims(3..=3),
                    };
                    let smooth = c.smooth;
                    (
                        Just(c),
                        Just(size),
                        dims.prop_flat_map(move |d| input(d, smooth)),
                    )
                        .prop_map(|(mut c, size, cols)| {
                            c.params.size = size;
                            c.inputs = vec![cols];
                            c
                        })
                })
                .boxed()
        })
        .boxed(),
        "conv2d" => case(name, win_params(false), |smooth| {
            image()
                .prop_flat_map(move |d| input(d, smooth))
                .prop_map(|i| vec![i])
                .boxed()
        })
        .prop_flat_map(|c| (Just(c), prop::bool::weighted(0.8)))
        .prop_flat_map(|(mut c, fit)| {
            let d = c.inputs[0].nd.dims.clone();
            let channels = d.get(1).copied().unwrap_or(1);
            // Mostly groups that divide the channels (else one group).
            if fit && c.params.groups > 0 && channels % c.params.groups != 0 {
                c.params.groups = 1;
            }
            let groups = c.params.groups;
            let per_group = channels / groups.max(1);
            let kernel = prop_oneof![12 => 1..=3usize, 1 => Just(0usize)];
            (Just(c), 1..=2usize, kernel.clone(), kernel, 0..20u8)
                .prop_flat_map(move |(c, og, kh, kw, pick)| {
                    let o = groups.max(1) * og;
                    let w = match pick {
                        0 => vec![o, per_group + 1, kh, kw], // channels do not match
                        1 => vec![o, per_group, kh],         // not rank 4
                        _ => vec![o, per_group, kh, kw],
                    };
                    let b = if pick == 2 { vec![o + 1] } else { vec![o] };
                    let smooth = c.smooth;
                    (Just(c), input(w, smooth), input(b, smooth)).prop_map(|(mut c, w, b)| {
                        c.inputs.extend([w, b]);
                        c
                    })
                })
                .boxed()
        })
        .boxed(),
        "max_all" | "min_all" => case(name, no_params(), one_input(0..=4)),
        "argmax" | "argmin" => case(name, axis_params(), one_input(0..=4)),
        "var" | "std_dev" => {
            let params =
                (axis(), any::<bool>(), 0..=2usize).prop_map(|(axis, keepdim, c)| Params {
                    axis,
                    keepdim,
                    correction: c,
                    ..Params::default()
                });
            case(name, params, one_input(0..=4))
        }
        "cumsum" | "cumprod" | "logcumsumexp" => {
            let params = (axis(), any::<bool>()).prop_map(|(axis, reverse)| Params {
                axis,
                reverse,
                ..Params::default()
            });
            case(name, params, one_input(0..=4))
        }
        "reshape_infer" => case(name, no_params(), one_input(0..=4))
            .prop_flat_map(|c| {
                let d = c.inputs[0].nd.dims.clone();
                (Just(c), reshape_target(d), 0..6usize, 0..12u8)
            })
            .prop_map(|(mut c, target, unknown, bad)| {
                let mut dims: Vec<isize> = target
                    .iter()
                    .map(|&d| isize::try_from(d).unwrap_or(isize::MAX))
                    .collect();
                if unknown < dims.len() {
                    dims[unknown] = -1;
                }
                match (bad, dims.len()) {
                    (0, 2..) => (dims[0], dims[1]) = (-1, -1), // two to infer
                    (1, 1..) => dims[0] = -2,                  // a negative size
                    _ => {}
                }
                c.params.dims = dims;
                c
            })
            .boxed(),
        "flatten" => case(name, axis_params(), one_input(0..=4))
            .prop_flat_map(|c| {
                let r = c.inputs[0].nd.dims.len().max(1) as isize;
                let end = prop_oneof![6 => -r..r, 1 => axis()];
                (Just(c), end)
            })
            .prop_map(|(mut c, end)| {
                c.params.end = end;
                c
            })
            .boxed(),
        // One to three tensors, mostly of one shape.
        "stack" => case(name, no_params(), |smooth| {
            (dims(0..=3), 1..=3usize, prop::bool::weighted(0.1))
                .prop_flat_map(move |(d, count, other)| {
                    let odd = if other {
                        dims(0..=3)
                    } else {
                        Just(d.clone()).boxed()
                    };
                    let mut parts: Vec<BoxedStrategy<Input>> =
                        (0..count).map(|_| input(d.clone(), smooth)).collect();
                    parts.push(odd.prop_flat_map(move |o| input(o, smooth)).boxed());
                    (parts, Just(other)).prop_map(|(mut v, other)| {
                        if !other {
                            v.pop();
                        }
                        v
                    })
                })
                .boxed()
        })
        .prop_flat_map(|c| {
            let r = c.inputs[0].nd.dims.len() as isize + 1;
            let ax = prop_oneof![8 => -r..r, 1 => axis()];
            (Just(c), ax)
        })
        .prop_map(|(mut c, ax)| {
            c.params.axis = ax;
            c
        })
        .boxed(),
        "dot" => case(name, no_params(), |smooth| {
            (dim(), prop::bool::weighted(0.15))
                .prop_flat_map(move |(n, random)| {
                    let b = if random {
                        dims(0..=2)
                    } else {
                        Just(vec![n]).boxed()
                    };
                    (
                        input(vec![n], smooth),
                        b.prop_flat_map(move |d| input(d, smooth)),
                    )
                        .prop_map(|(a, b)| vec![a, b])
                })
                .boxed()
        }),
        "embedding" => case(name, no_params(), |smooth| {
            (dim(), dim(), prop::bool::weighted(0.1), dims(0..=2))
                .prop_flat_map(move |(v, d, bad, idx)| {
                    let w = if bad {
                        dims(0..=3)
                    } else {
                        Just(vec![v, d]).boxed()
                    };
                    (
                        w.prop_flat_map(move |w| input(w, smooth)),
                        positions(idx, v),
                    )
                        .prop_map(|(w, i)| vec![w, i])
                })
                .boxed()
        }),
        "gather" | "scatter_add" => {
            let scatter = name == "scatter_add";
            case(name, no_params(), move |smooth| {
                (dims(1..=3), 0..3usize, prop::bool::weighted(0.1))
                    .prop_flat_map(move |(d, k, off)| {
                        let k = k.min(d.len() - 1);
                        // The index: at most x's sizes off the axis (sometimes one more).
                        let sizes: Vec<BoxedStrategy<usize>> = d
                            .iter()
                            .enumerate()
                            .map(|(j, &n)| {
                                if j == k {
                                    (0..=3usize).boxed()
                                } else if off {
                                    Just(n + 1).boxed()
                                } else {
                                    (0..=n).boxed()
                                }
                            })
                            .collect();
                        (Just(d), Just(k), sizes)
                    })
                    .prop_flat_map(move |(d, k, idx)| {
                        let x = input(d.clone(), smooth);
                        let index = positions(idx.clone(), d[k]);
                        // scatter_add's src: at least the index's sizes (rarely fewer).
                        let extra = proptest::collection::vec(
                            prop_oneof![6 => 0..=1isize, 1 => Just(-1isize)],
                            idx.len(),
                        );
                        let src = extra.prop_flat_map(move |e| {
                            let s: Vec<usize> = idx
                                .iter()
                                .zip(&e)
                                .map(|(&i, &e)| (i as isize + e).max(0) as usize)
                                .collect();
                            input(s, smooth)
                        });
                        (x, index, src).prop_map(
                            move |(x, i, s)| {
                                if scatter { vec![x, i, s] } else { vec![x, i] }
                            },
                        )
                    })
                    .boxed()
            })
            .prop_flat_map(|c| {
                // The axis the index was drawn for: the one where its size may exceed
                // x's; else any.
                let rank = c.inputs[0].nd.dims.len() as isize;
                (Just(c), -rank..rank, prop::bool::weighted(0.1), axis())
            })
            .prop_map(|(mut c, ax, random, any_axis)| {
                let (x, i) = (&c.inputs[0].nd.dims, &c.inputs[1].nd.dims);
                let fits = (0..x.len()).find(|&j| i[j] > x[j]);
                c.params.axis = if random {
                    any_axis
                } else {
                    fits.map_or(ax, |j| j as isize)
                };
                c
            })
            .boxed()
        }
        "dropout" => {
            let p = prop_oneof![
                6 => 0.0f64..1.0,
                1 => prop::sample::select(vec![0.0, 1.0, 0.5, -0.1, 1.5, f64::NAN]),
            ];
            let params =
                (p, prop::bool::weighted(0.8), any::<u64>()).prop_map(|(scalar, keepdim, seed)| {
                    Params {
                        scalar,
                        keepdim,
                        seed,
                        ..Params::default()
                    }
                });
            case(name, params, one_input(0..=4))
        }
        "softplus_with" => {
            // beta (rarely 0 or negative: a division by it, as PyTorch's) and the
            // threshold past which the result is x itself.
            let beta = prop_oneof![
                4 => 0.25f64..4.0,
                1 => prop::sample::select(vec![1.0, 0.0, -1.0]),
            ];
            let threshold = prop_oneof![
                3 => 0.0f64..4.0,
                1 => prop::sample::select(vec![20.0, -1.0]),
            ];
            let params = (beta, threshold).prop_map(|(scalar, scalar2)| Params {
                scalar,
                scalar2,
                ..Params::default()
            });
            case(name, params, one_input(0..=4))
        }
        "scaled_dot_product_attention" => {
            let params = any::<bool>().prop_map(|causal| Params {
                causal,
                ..Params::default()
            });
            case(name, params, |smooth| {
                // q [.., L, D], k [.., S, D], v [.., S, Dv] (batches broadcasting),
                // D at least 1 (the default scale is 1/sqrt(D)); now and then a key
                // axis or a query size that does not match.
                (dims(0..=2), dim(), dim(), 1..=4usize, dim(), 0..10u8)
                    .prop_flat_map(move |(batch, l, s, d, dv, pick)| {
                        (Just(batch.clone()), broadcast_partner(batch)).prop_flat_map(
                            move |(bq, bk)| {
                                let mut q = bq.clone();
                                q.extend([l, d]);
                                let mut k = bk.clone();
                                k.extend([s, if pick == 0 { d + 1 } else { d }]);
                                let mut v = bk.clone();
                                v.extend([if pick == 1 { s + 1 } else { s }, dv]);
                                if pick == 2 {
                                    q = vec![d]; // one axis: rejected
                                }
                                (input(q, smooth), input(k, smooth), input(v, smooth))
                                    .prop_map(|(q, k, v)| vec![q, k, v])
                            },
                        )
                    })
                    .boxed()
            })
        }
        "layer_norm" => {
            let eps = prop_oneof![
                8 => Just(1e-5),
                2 => 0.0f64..1.0,
                1 => prop::sample::select(vec![0.0, -1.0, f64::NAN]),
            ];
            let params = (eps, any::<bool>(), any::<bool>()).prop_map(|(scalar, w, b)| Params {
                scalar,
                affine: (w, b),
                ..Params::default()
            });
            case(name, params, |smooth| {
                (dims(0..=3), prop::bool::weighted(0.1))
                    .prop_flat_map(move |(d, random)| {
                        let last = d.last().copied().unwrap_or(1);
                        let affine = if random {
                            dims(0..=2)
                        } else {
                            Just(vec![last]).boxed()
                        };
                        (
                            input(d, smooth),
                            affine.clone().prop_flat_map(move |a| input(a, smooth)),
                            affine.prop_flat_map(move |a| input(a, smooth)),
                        )
                            .prop_map(|(x, w, b)| vec![x, w, b])
                    })
                    .boxed()
            })
            .prop_map(|mut c| {
                // An unused weight or bias gets no gradient.
                c.inputs[1].differentiable = c.params.affine.0;
                c.inputs[2].differentiable = c.params.affine.1;
                c
            })
            .boxed()
        }
        other => panic!("no strategy for `{other}`"),
    }
}

/// An image `[N, C, H, W]`: small, sometimes with an empty batch, channel or
/// spatial axis, sometimes of another rank.
fn image() -> BoxedStrategy<Vec<usize>> {
    let spatial = || prop_oneof![12 => 2..=6usize, 1 => 0..=1usize];
    let n = prop_oneof![1 => Just(0usize), 6 => 1..=2usize];
    let c = prop_oneof![1 => Just(0usize), 6 => 1..=3usize];
    prop_oneof![
        10 => (n, c, spatial(), spatial()).prop_map(|(n, c, h, w)| vec![n, c, h, w]),
        1 => dims(0..=4),
    ]
    .boxed()
}

/// Windows: each pair mostly small, sometimes zero or huge (both refused); for a
/// pool, no dilation and mostly padding within half the kernel.
fn win_params(pool: bool) -> BoxedStrategy<Params> {
    let pair = |lo: usize, hi: usize| {
        let v = prop_oneof![60 => lo..=hi, 1 => Just(0usize), 1 => huge()];
        (v.clone(), v)
    };
    let padding = if pool {
        let v = prop_oneof![12 => Just(0usize), 4 => Just(1usize), 1 => Just(2usize), 1 => huge()];
        (v.clone(), v).boxed()
    } else {
        pair(0, 2).boxed()
    };
    let dilation = if pool {
        Just((1, 1)).boxed()
    } else {
        pair(1, 2).boxed()
    };
    let groups = prop_oneof![12 => 1..=2usize, 1 => Just(0usize), 1 => Just(3usize)];
    (pair(1, 3), pair(1, 3), padding, dilation, groups)
        .prop_map(|(k, s, p, d, groups)| Params {
            win: r::Win { k, s, p, d },
            groups,
            ..Params::default()
        })
        .boxed()
}

/// Index ops: use an axis the index was drawn for most of the time.
fn fix_index_axis(c: Case) -> BoxedStrategy<Case> {
    let rank = c.inputs[0].nd.dims.len() as isize;
    (Just(c), prop::bool::weighted(0.85), -rank..rank.max(1))
        .prop_map(|(mut c, fit, ax)| {
            if fit {
                let size = c.inputs[1].nd.data.iter().cloned().fold(0.0, f64::max);
                let fits = (0..c.inputs[0].nd.dims.len())
                    .find(|&k| c.inputs[0].nd.dims[k] as f64 > size)
                    .map(|k| k as isize);
                c.params.axis = fits.unwrap_or(ax);
            }
            c
        })
        .boxed()
}

fn reshape_target(d: Vec<usize>) -> BoxedStrategy<Vec<usize>> {
    let n = r::numel(&d).unwrap_or(0);
    let flat = Just(vec![n]);
    let shuffled = Just(d.clone()).prop_shuffle();
    let with_ones = (Just(d), 0..3usize).prop_map(|(mut d, at)| {
        d.insert(at.min(d.len()), 1);
        d
    });
    let overflow = (huge(), huge()).prop_map(|(a, b)| vec![a, b, 3]);
    prop_oneof![2 => flat, 2 => shuffled, 2 => with_ones, 2 => dims(0..=4), 1 => overflow].boxed()
}

fn broadcast_target(d: Vec<usize>) -> BoxedStrategy<Vec<usize>> {
    let grown = (
        proptest::collection::vec(dim(), 0..3),
        proptest::collection::vec(dim(), d.len()),
        Just(d),
    )
        .prop_map(|(lead, fill, d)| {
            let mut t = lead;
            t.extend(d.iter().zip(fill).map(|(&x, f)| if x == 1 { f } else { x }));
            t
        });
    let overflow = (huge(), huge()).prop_map(|(a, b)| vec![a, b]);
    prop_oneof![6 => grown, 2 => dims(0..=4), 1 => overflow].boxed()
}

fn sum_to_shape_target(d: Vec<usize>) -> BoxedStrategy<Vec<usize>> {
    prop_oneof![6 => broadcast_partner(d), 1 => dims(0..=4)].boxed()
}

// ----- running an op and its reference -----

fn dtype(c: &Case) -> DType {
    if c.f64 { DType::F64 } else { DType::F32 }
}

/// The dtype of a case's result: `bool` for the comparisons, `i64` for the
/// positions of `argmax` and `argmin`, `f64` where values of f32 and f64 meet
/// (promotion), else the case's.
fn out_dtype(c: &Case) -> DType {
    if COMPARE.contains(&c.op) {
        DType::Bool
    } else if c.op == "argmax" || c.op == "argmin" {
        DType::I64
    } else if c
        .inputs
        .iter()
        .any(|i| i.other_dtype && i.kind == Kind::Value)
    {
        DType::F64
    } else {
        dtype(c)
    }
}

/// The tensor of an input, laid out as its view says.
fn tensor(i: &Input, dtype: DType) -> Result<Tensor> {
    let dtype = match (i.kind, i.other_dtype, dtype) {
        (Kind::Value, false, d) => d,
        (Kind::Value, true, DType::F32) => DType::F64,
        (Kind::Value, true, _) => DType::F32,
        (Kind::Index, false, _) => DType::I64,
        (Kind::Mask, false, _) => DType::Bool,
        // An index or a mask of a float dtype, which the op must refuse.
        (_, true, d) => d,
    };
    let contiguous =
        |nd: &Nd| compute::cast(&Tensor::from_slice(&nd.data, nd.dims.clone())?, dtype);
    let t = match &i.view {
        View::Contiguous => contiguous(&i.nd)?,
        View::Permuted(perm) => {
            let base_dims: Vec<usize> = perm.iter().map(|&p| i.nd.dims[p]).collect();
            let base = Nd::from_fn(&base_dims, |j| {
                let mut idx = vec![0; j.len()];
                for (k, &p) in perm.iter().enumerate() {
                    idx[p] = j[k];
                }
                i.nd.at(&idx)
            });
            let mut inverse = vec![0; perm.len()];
            for (k, &p) in perm.iter().enumerate() {
                inverse[p] = k;
            }
            compute::permute(&contiguous(&base)?, &inverse)?
        }
        View::Narrowed { axis, before } => {
            let mut big = i.nd.dims.clone();
            big[*axis] += before + 1;
            let base = Nd::from_fn(&big, |j| {
                let k = j[*axis];
                if k < *before || k >= before + i.nd.dims[*axis] {
                    f64::NAN // read by mistake, it would show
                } else {
                    let mut idx = j.to_vec();
                    idx[*axis] -= before;
                    i.nd.at(&idx)
                }
            });
            compute::narrow(&contiguous(&base)?, *axis, *before, i.nd.dims[*axis])?
        }
    };
    Ok(t.with_requires_grad(i.differentiable))
}

fn run(c: &Case, x: &[Tensor]) -> Result<Tensor> {
    let p = &c.params;
    let shape = || Shape::from(p.shape.clone());
    match c.op {
        "neg" => ops::neg(&x[0]),
        "exp" => ops::exp(&x[0]),
        "log" => ops::log(&x[0]),
        "sqrt" => ops::sqrt(&x[0]),
        "square" => ops::square(&x[0]),
        "abs" => ops::abs(&x[0]),
        "tanh" => ops::tanh(&x[0]),
        "sigmoid" => ops::sigmoid(&x[0]),
        "relu" => ops::relu(&x[0]),
        "gelu" => ops::gelu(&x[0]),
        "sin" => ops::sin(&x[0]),
        "cos" => ops::cos(&x[0]),
        "add_scalar" => ops::add_scalar(&x[0], p.scalar),
        "mul_scalar" => ops::mul_scalar(&x[0], p.scalar),
        "div_scalar" => ops::div_scalar(&x[0], p.scalar),
        "pow_scalar" => ops::pow_scalar(&x[0], p.scalar),
        "add" => ops::add(&x[0], &x[1]),
        "sub" => ops::sub(&x[0], &x[1]),
        "mul" => ops::mul(&x[0], &x[1]),
        "div" => ops::div(&x[0], &x[1]),
        "pow" => ops::pow(&x[0], &x[1]),
        "maximum" => ops::maximum(&x[0], &x[1]),
        "minimum" => ops::minimum(&x[0], &x[1]),
        "sum" => ops::sum(&x[0], p.axis, p.keepdim),
        "mean" => ops::mean(&x[0], p.axis, p.keepdim),
        "max" => ops::max(&x[0], p.axis, p.keepdim),
        "min" => ops::min(&x[0], p.axis, p.keepdim),
        "logsumexp" => ops::logsumexp(&x[0], p.axis, p.keepdim),
        "prod" => ops::prod(&x[0], p.axis, p.keepdim),
        "sum_all" => ops::sum_all(&x[0]),
        "mean_all" => ops::mean_all(&x[0]),
        "softmax" => ops::softmax(&x[0], p.axis),
        "log_softmax" => ops::log_softmax(&x[0], p.axis),
        "reshape" => ops::reshape(&x[0], shape()),
        "broadcast_to" => ops::broadcast_to(&x[0], shape()),
        "sum_to_shape" => ops::sum_to_shape(&x[0], shape()),
        "transpose" => ops::transpose(&x[0], -2, -1),
        "permute" => ops::permute(&x[0], p.shape.clone()),
        "unsqueeze" => ops::unsqueeze(&x[0], p.axis),
        "squeeze" => ops::squeeze(&x[0], p.axis),
        "narrow" => ops::narrow(&x[0], p.axis, p.start, p.len),
        "pad" => ops::pad(&x[0], p.axis, p.start, p.len),
        "concat" => ops::concat(&x[0], &x[1], p.axis),
        "index_select" => ops::index_select(&x[0], &x[1], p.axis),
        "index_add" => ops::index_add(&x[0], &x[1], &x[2], p.axis),
        "matmul" => ops::matmul(&x[0], &x[1]),
        "scaled_dot_product_attention" => ops::scaled_dot_product_attention(
            &x[0],
            &x[1],
            &x[2],
            ops::AttentionOptions {
                is_causal: p.causal,
                ..Default::default()
            },
        ),
        "cross_entropy" => ops::cross_entropy(&x[0], &x[1]),
        "mse_loss" => ops::mse_loss(&x[0], &x[1]),
        "to_device" => ops::to_device(&x[0], target_device(p)),
        "to_dtype" => ops::to_dtype(&x[0], x[0].dtype()),
        "erf" => ops::erf(&x[0]),
        "softplus" => ops::softplus(&x[0]),
        "silu" => ops::silu(&x[0]),
        "mish" => ops::mish(&x[0]),
        "log1p" => ops::log1p(&x[0]),
        "expm1" => ops::expm1(&x[0]),
        "recip" => ops::recip(&x[0]),
        "hardtanh" => ops::hardtanh(&x[0]),
        "tan" => ops::tan(&x[0]),
        "asin" => ops::asin(&x[0]),
        "acos" => ops::acos(&x[0]),
        "atan" => ops::atan(&x[0]),
        "sinh" => ops::sinh(&x[0]),
        "cosh" => ops::cosh(&x[0]),
        "asinh" => ops::asinh(&x[0]),
        "acosh" => ops::acosh(&x[0]),
        "atanh" => ops::atanh(&x[0]),
        "floor" => ops::floor(&x[0]),
        "ceil" => ops::ceil(&x[0]),
        "round" => ops::round(&x[0]),
        "trunc" => ops::trunc(&x[0]),
        "sign" => ops::sign(&x[0]),
        "rsqrt" => ops::rsqrt(&x[0]),
        "logsigmoid" => ops::logsigmoid(&x[0]),
        "softsign" => ops::softsign(&x[0]),
        "selu" => ops::selu(&x[0]),
        "hardswish" => ops::hardswish(&x[0]),
        "hardsigmoid" => ops::hardsigmoid(&x[0]),
        "gelu_erf" => ops::gelu_erf(&x[0]),
        "celu" => ops::celu(&x[0], p.scalar),
        "hardtanh_with" => ops::hardtanh_with(&x[0], p.scalar, p.scalar + 1.0),
        "softplus_with" => ops::softplus_with(&x[0], p.scalar, p.scalar2),
        "atan2" => ops::atan2(&x[0], &x[1]),
        "leaky_relu" => ops::leaky_relu(&x[0], p.scalar),
        "elu" => ops::elu(&x[0], p.scalar),
        "clamp" => ops::clamp(&x[0], p.scalar, p.scalar + 1.0),
        "where" => ops::r#where(&x[0], &x[1], &x[2]),
        "im2col" => ops::im2col(&x[0], p.win.k, p.win.s, p.win.p, p.win.d),
        "col2im" => ops::col2im(&x[0], p.size, p.win.k, p.win.s, p.win.p, p.win.d),
        "conv2d" => ops::conv2d(
            &x[0],
            &x[1],
            Some(&x[2]),
            ops::Conv2dOptions {
                stride: p.win.s,
                padding: p.win.p,
                dilation: p.win.d,
                groups: p.groups,
            },
        ),
        "max_pool2d" => ops::max_pool2d(
            &x[0],
            ops::MaxPool2dOptions::new(p.win.k)
                .stride(p.win.s)
                .padding(p.win.p),
        ),
        "avg_pool2d" => ops::avg_pool2d(
            &x[0],
            ops::AvgPool2dOptions::new(p.win.k)
                .stride(p.win.s)
                .padding(p.win.p),
        ),
        "max_all" => ops::max_all(&x[0]),
        "min_all" => ops::min_all(&x[0]),
        "argmax" => ops::argmax(&x[0], p.axis, p.keepdim),
        "argmin" => ops::argmin(&x[0], p.axis, p.keepdim),
        "var" => ops::var(&x[0], p.axis, p.correction, p.keepdim),
        "std_dev" => ops::std_dev(&x[0], p.axis, p.correction, p.keepdim),
        "cumsum" => ops::cumsum(&x[0], p.axis, p.reverse),
        "cumprod" => ops::cumprod(&x[0], p.axis, p.reverse),
        "logcumsumexp" => ops::logcumsumexp(&x[0], p.axis, p.reverse),
        "eq" => ops::eq(&x[0], &x[1]),
        "ne" => ops::ne(&x[0], &x[1]),
        "lt" => ops::lt(&x[0], &x[1]),
        "le" => ops::le(&x[0], &x[1]),
        "gt" => ops::gt(&x[0], &x[1]),
        "ge" => ops::ge(&x[0], &x[1]),
        "reshape_infer" => ops::reshape_infer(&x[0], &p.dims),
        "flatten" => ops::flatten(&x[0], p.axis, p.end),
        "stack" => ops::stack(&x.iter().collect::<Vec<_>>(), p.axis),
        "dot" => ops::dot(&x[0], &x[1]),
        "embedding" => ops::embedding(&x[0], &x[1]),
        "gather" => ops::gather(&x[0], &x[1], p.axis),
        "scatter_add" => ops::scatter_add(&x[0], &x[1], &x[2], p.axis),
        "dropout" => ops::dropout(
            &x[0],
            p.scalar,
            p.keepdim,
            &mut autograd::random::Rng::new(p.seed),
        ),
        "layer_norm" => ops::layer_norm(
            &x[0],
            p.affine.0.then_some(&x[1]),
            p.affine.1.then_some(&x[2]),
            p.scalar,
        ),
        other => panic!("no runner for `{other}`"),
    }
}

fn target_device(p: &Params) -> Device {
    match p.len {
        0 => Device::Cpu,
        k => Device::Cuda(k - 1),
    }
}

fn reference(c: &Case, x: &[Nd]) -> Option<Nd> {
    let p = &c.params;
    if c.inputs
        .iter()
        .any(|i| i.other_dtype && i.kind != Kind::Value)
    {
        return None; // a float index or mask
    }
    if let Some(f) = r::unary_fn(c.op) {
        return Some(x[0].map(f));
    }
    if let Some(f) = r::binary_fn(c.op) {
        return r::zip(&x[0], &x[1], f);
    }
    let scalar = |v: f64| Nd {
        dims: vec![],
        data: vec![v],
    };
    match c.op {
        "add_scalar" => Some(x[0].map(|v| v + p.scalar)),
        "mul_scalar" => Some(x[0].map(|v| v * p.scalar)),
        "div_scalar" => Some(x[0].map(|v| v / p.scalar)),
        "pow_scalar" => Some(x[0].map(|v| v.powf(p.scalar))),
        "sum" | "mean" | "max" | "min" | "logsumexp" | "prod" => {
            r::reduce(c.op, &x[0], p.axis, p.keepdim)
        }
        "sum_all" => Some(scalar(r::sum_all(&x[0]))),
        "mean_all" => Some(scalar(r::sum_all(&x[0]) / x[0].data.len() as f64)),
        "softmax" => r::softmax(&x[0], p.axis, false),
        "log_softmax" => r::softmax(&x[0], p.axis, true),
        "reshape" => r::reshape(&x[0], &p.shape),
        "broadcast_to" => r::broadcast_to(&x[0], &p.shape),
        "sum_to_shape" => r::sum_to_shape(&x[0], &p.shape),
        "transpose" => r::transpose(&x[0]),
        "permute" => r::permute(&x[0], &p.shape),
        "unsqueeze" => r::unsqueeze(&x[0], p.axis),
        "squeeze" => r::squeeze(&x[0], p.axis),
        "narrow" => r::narrow(&x[0], p.axis, p.start, p.len),
        "pad" => r::pad(&x[0], p.axis, p.start, p.len),
        "concat" => r::concat(&x[0], &x[1], p.axis),
        "index_select" => r::index_select(&x[0], &x[1], p.axis),
        "index_add" => r::index_add(&x[0], &x[1], &x[2], p.axis),
        "matmul" => r::matmul(&x[0], &x[1]),
        "scaled_dot_product_attention" => r::attention(&x[0], &x[1], &x[2], p.causal),
        "cross_entropy" => r::cross_entropy(&x[0], &x[1]),
        "mse_loss" => r::mse_loss(&x[0], &x[1]),
        "to_device" | "to_dtype" => Some(x[0].clone()),
        "leaky_relu" => Some(x[0].map(|v| if v > 0.0 { v } else { p.scalar * v })),
        "elu" => Some(x[0].map(|v| if v > 0.0 { v } else { p.scalar * v.exp_m1() })),
        "celu" => {
            let a = p.scalar;
            Some(x[0].map(|v| if v > 0.0 { v } else { a * (v / a).exp_m1() }))
        }
        "hardtanh_with" => Some(x[0].map(|v| r::clamp(v, p.scalar, p.scalar + 1.0))),
        "softplus_with" => {
            let (beta, threshold) = (p.scalar, p.scalar2);
            Some(x[0].map(|v| {
                let z = v * beta;
                if z > threshold {
                    v
                } else {
                    (r::max_first(z, 0.0) + (-z.abs()).exp().ln_1p()) / beta
                }
            }))
        }
        "clamp" => Some(x[0].map(|v| r::clamp(v, p.scalar, p.scalar + 1.0))),
        "where" => r::select(&x[0], &x[1], &x[2]),
        "im2col" => r::im2col(&x[0], &p.win, 0.0),
        "col2im" => r::col2im(&x[0], p.size, &p.win),
        "conv2d" => r::conv2d(&x[0], &x[1], &x[2], &p.win, p.groups),
        "max_pool2d" | "avg_pool2d" => r::pool(c.op, &x[0], &p.win),
        "max_all" => r::extreme_all(&x[0], true),
        "min_all" => r::extreme_all(&x[0], false),
        "argmax" => r::arg_extreme(&x[0], p.axis, p.keepdim, true),
        "argmin" => r::arg_extreme(&x[0], p.axis, p.keepdim, false),
        "var" => r::var(&x[0], p.axis, p.correction, p.keepdim, false),
        "std_dev" => r::var(&x[0], p.axis, p.correction, p.keepdim, true),
        "cumsum" => r::cumsum(&x[0], p.axis, p.reverse),
        "cumprod" => r::cumprod(&x[0], p.axis, p.reverse),
        "logcumsumexp" => r::logcumsumexp(&x[0], p.axis, p.reverse),
        "eq" | "ne" | "lt" | "le" | "gt" | "ge" => {
            r::zip(&x[0], &x[1], r::compare_fn(c.op).expect("a comparison"))
        }
        "reshape_infer" => r::reshape(&x[0], &r::infer(x[0].data.len(), &p.dims)?),
        "flatten" => r::flatten(&x[0], p.axis, p.end),
        "stack" => r::stack(x, p.axis),
        "dot" => r::dot(&x[0], &x[1]),
        "embedding" => r::embedding(&x[0], &x[1]),
        "gather" => r::gather(&x[0], &x[1], p.axis),
        "scatter_add" => r::scatter_add(&x[0], &x[1], &x[2], p.axis),
        "dropout" => r::dropout(&x[0], p.scalar, p.keepdim, p.seed),
        "layer_norm" => r::layer_norm(
            &x[0],
            p.affine.0.then_some(&x[1]),
            p.affine.1.then_some(&x[2]),
            p.scalar,
        ),
        other => panic!("no reference for `{other}`"),
    }
}

/// Equal as IEEE values (NaN matches NaN, infinities match exactly), else within a
/// tolerance for the dtype; the reference is rounded to the dtype first.
fn close(got: f64, want: f64, f64: bool) -> bool {
    let want = if f64 { want } else { want as f32 as f64 };
    if want.is_nan() || got.is_nan() {
        return want.is_nan() && got.is_nan();
    }
    if want.is_infinite() || got.is_infinite() {
        return want == got;
    }
    let (atol, rtol) = if f64 { (1e-9, 1e-9) } else { (1e-4, 1e-4) };
    (got - want).abs() <= atol + rtol * want.abs()
}

/// The seed gradient of a case's output and the direction along which its inputs
/// are perturbed: fixed patterns of small non-zero values.
fn pattern(n: usize, salt: usize) -> Vec<f64> {
    (0..n)
        .map(|j| [0.5, -1.0, 0.25, 0.75, -0.5][(j + salt) % 5])
        .collect()
}

/// What a case showed: an error, a value, or a value whose gradient was checked
/// against the reference.
#[derive(Clone, Copy)]
enum Outcome {
    Rejected,
    Computed,
    GradientChecked,
}

fn check(c: &Case) -> std::result::Result<Outcome, TestCaseError> {
    let fail = |msg: String| TestCaseError::fail(format!("`{}`: {msg}\n{c:?}", c.op));
    let x: Vec<Tensor> = c
        .inputs
        .iter()
        .map(|i| tensor(i, dtype(c)))
        .collect::<Result<_>>()
        .map_err(|e| fail(format!("building the inputs: {e}")))?;
    let nds: Vec<Nd> = x.iter().map(Nd::of).collect();
    let want = reference(c, &nds);
    let got = run(c, &x);
    let (out, want) = match (got, want) {
        // Moving to a GPU this machine does not have: the one error the reference
        // cannot predict, and the documented one.
        (Err(Error::CudaUnavailable { .. }), Some(_))
            if c.op == "to_device" && target_device(&c.params) != Device::Cpu =>
        {
            return Ok(Outcome::Rejected);
        }
        (Err(e), None) => {
            if e.op() != Some(c.op) || e.to_string().is_empty() {
                return Err(fail(format!("the error does not name the op: {e}")));
            }
            return Ok(Outcome::Rejected);
        }
        (Err(e), Some(w)) => return Err(fail(format!("error {e}, expected {w:?}"))),
        (Ok(t), None) => return Err(fail(format!("accepted, giving {:?}", Nd::of(&t)))),
        (Ok(t), Some(w)) => (t, w),
    };
    if CONSTANT.contains(&c.op) && out.requires_grad() {
        return Err(fail(
            "the result is a constant, yet it requires grad".into(),
        ));
    }
    let got = Nd::of(&out);
    let same = got.dims == want.dims
        && got
            .data
            .iter()
            .zip(&want.data)
            .all(|(&g, &w)| close(g, w, c.f64));
    if !same || out.dtype() != out_dtype(c) {
        return Err(fail(format!(
            "got {got:?} ({}), expected {want:?}",
            out.dtype()
        )));
    }
    check_backward(c, &x, &out, &want).map_err(fail)
}

/// Differentiates `sum(seed * out)`: gradients of every differentiable input have its
/// shape and dtype; on smooth f64 cases, the directional derivative matches a central
/// difference of the reference.
fn check_backward(
    c: &Case,
    x: &[Tensor],
    out: &Tensor,
    want: &Nd,
) -> std::result::Result<Outcome, String> {
    if !out.requires_grad() {
        return Ok(Outcome::Computed);
    }
    let seed = pattern(want.data.len(), 0);
    let seed_t = compute::cast(
        &Tensor::from_slice(&seed, want.dims.clone()).map_err(|e| e.to_string())?,
        out.dtype(),
    )
    .and_then(|t| compute::to_device(&t, out.device()))
    .map_err(|e| e.to_string())?;
    out.backward_with(BackwardOptions::default().seed(seed_t))
        .map_err(|e| format!("backward failed: {e}"))?;
    let mut analytic = 0.0;
    let mut directions = Vec::new();
    for (k, (t, i)) in x.iter().zip(&c.inputs).enumerate() {
        let direction = pattern(i.nd.data.len(), k + 1);
        if i.differentiable {
            let g = t
                .grad()
                .ok_or_else(|| format!("no gradient for input {k}"))?;
            if g.dims() != t.dims() || g.dtype() != t.dtype() {
                return Err(format!(
                    "gradient of input {k} is {} {}, the input {} {}",
                    g.shape(),
                    g.dtype(),
                    t.shape(),
                    t.dtype()
                ));
            }
            let g = g.to_vec::<f64>().map_err(|e| e.to_string())?;
            analytic += g.iter().zip(&direction).map(|(a, b)| a * b).sum::<f64>();
        }
        directions.push(direction);
    }
    let finite = |nd: &Nd| nd.data.iter().all(|v| v.is_finite());
    if !(c.f64 && c.smooth && finite(want) && !want.data.is_empty()) {
        return Ok(Outcome::Computed);
    }
    let h = 1e-5;
    let shifted = |sign: f64| -> Option<f64> {
        let moved: Vec<Nd> = x
            .iter()
            .zip(&c.inputs)
            .zip(&directions)
            .map(|((t, i), d)| {
                let mut nd = Nd::of(t);
                if i.differentiable {
                    nd.data
                        .iter_mut()
                        .zip(d)
                        .for_each(|(v, d)| *v += sign * h * d);
                }
                nd
            })
            .collect();
        let y = reference(c, &moved)?;
        Some(y.data.iter().zip(&seed).map(|(y, s)| y * s).sum())
    };
    let (Some(up), Some(down)) = (shifted(1.0), shifted(-1.0)) else {
        return Err("the reference rejects a slightly moved input".into());
    };
    let numeric = (up - down) / (2.0 * h);
    if !numeric.is_finite() {
        return Ok(Outcome::Computed); // a pole within h: nothing to compare
    }
    if (analytic - numeric).abs() > 1e-6 * (1.0 + numeric.abs()) {
        return Err(format!(
            "directional derivative: backward gives {analytic:.12e}, the reference's central difference {numeric:.12e}"
        ));
    }
    Ok(Outcome::GradientChecked)
}

fn run_property(name: &'static str) {
    crate::init();
    // A fixed seed per op keeps CI deterministic; RELIABILITY_SEED explores others.
    let seed = std::env::var("RELIABILITY_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0x5eed)
        ^ name
            .bytes()
            .fold(0u64, |h, b| h.wrapping_mul(31).wrapping_add(b as u64));
    let config = Config {
        cases: cases_per_op(),
        rng_seed: RngSeed::Fixed(seed),
        failure_persistence: None,
        max_shrink_iters: 2000,
        ..Config::default()
    };
    let mut runner = TestRunner::new(config);
    let counts: [AtomicUsize; 3] = Default::default();
    let result = runner.run(&strategy(name), |c| {
        let outcome = check(&c)?;
        counts[outcome as usize].fetch_add(1, Ordering::Relaxed);
        Ok(())
    });
    if let Err(e) = result {
        panic!("property of `{name}` failed: {e}");
    }
    let [rejected, computed, checked] = counts.map(AtomicUsize::into_inner);
    eprintln!(
        "property `{name}`: {} cases, {rejected} rejected with an error, {} computed \
         ({checked} with gradients checked against the reference)",
        rejected + computed + checked,
        computed + checked
    );
    // The strategies must exercise both outcomes where the op has invalid inputs.
    assert!(
        computed + checked > 0,
        "`{name}`: no case computed anything"
    );
}

#[test]
fn every_standard_op_has_a_property() {
    crate::init();
    let mut ours: Vec<&str> = covered().collect();
    ours.sort_unstable();
    let mut registered: Vec<&str> = registry()
        .unwrap()
        .iter()
        .filter(|e| {
            ["autograd_ops", "autograd_core"]
                .iter()
                .any(|c| e.module_path.starts_with(c))
        })
        .map(|e| e.name)
        .collect();
    registered.sort_unstable();
    assert_eq!(
        ours, registered,
        "an op has no property test (or a stale one)"
    );
    for name in COMPOSED {
        assert!(
            !registered.contains(name),
            "`{name}` is a registered op: list it with the ops, not in COMPOSED"
        );
    }
}

macro_rules! properties {
    ($($op:ident)*) => {
        /// One test per op, so they run in parallel and fail by name.
        mod each_op {
            $(
                #[test]
                fn $op() {
                    super::run_property(stringify!($op));
                }
            )*
        }

        /// `where` is a keyword: its test has another name.
        #[test]
        fn where_() {
            run_property("where");
        }

        #[test]
        fn the_per_op_tests_are_the_covered_list() {
            let mut listed = vec![$(stringify!($op),)* "where"];
            listed.sort_unstable();
            let mut ours: Vec<&str> = all_properties().collect();
            ours.sort_unstable();
            assert_eq!(listed, ours);
        }
    };
}

properties! {
    neg exp log sqrt square abs tanh sigmoid relu gelu sin cos
    add_scalar mul_scalar div_scalar pow_scalar
    add sub mul div pow maximum minimum
    sum mean max min logsumexp
    sum_all mean_all softmax log_softmax
    reshape broadcast_to sum_to_shape transpose permute unsqueeze squeeze narrow pad concat
    index_select index_add matmul cross_entropy mse_loss to_device to_dtype
    erf softplus silu mish log1p expm1 recip hardtanh leaky_relu elu clamp
    im2col col2im conv2d max_pool2d avg_pool2d
    max_all min_all var std_dev cumsum gather scatter_add dropout layer_norm
    prod cumprod logcumsumexp scaled_dot_product_attention
    tan asin acos atan sinh cosh asinh acosh atanh floor ceil round trunc sign rsqrt
    logsigmoid softsign selu hardswish hardsigmoid gelu_erf celu hardtanh_with softplus_with
    atan2
    eq ne lt le gt ge argmax argmin reshape_infer flatten stack dot embedding
}

/// IEEE propagation through whole graphs, forward and backward, spelled out.
#[test]
fn nan_and_infinity_propagate_as_ieee_says() -> Result<()> {
    crate::init();
    let nan = f64::NAN;
    let inf = f64::INFINITY;
    let values = [nan, inf, -inf, 0.0, -0.0];
    let x = Tensor::from_slice(&values, [5])?.with_requires_grad(true);
    let same = |got: Vec<f64>, want: &[f64]| {
        got.len() == want.len()
            && got.iter().zip(want).all(|(g, w)| {
                (g.is_nan() && w.is_nan())
                    || (g == w && g.is_sign_negative() == w.is_sign_negative())
            })
    };
    let e = ops::exp(&x)?;
    assert!(same(e.to_vec()?, &[nan, inf, 0.0, 1.0, 1.0]));
    let z = (&x * 0.0)?;
    assert!(
        same(z.to_vec()?, &[nan, nan, nan, 0.0, -0.0]),
        "inf * 0 is NaN"
    );
    let recip = (&x.ones_like()? / &x)?;
    assert!(
        same(recip.to_vec()?, &[nan, 0.0, -0.0, inf, -inf]),
        "1/-0 is -inf"
    );
    assert!(same(ops::log(&x)?.to_vec()?, &[nan, inf, nan, -inf, -inf]));
    assert!(same(ops::sqrt(&x)?.to_vec()?, &[nan, inf, nan, 0.0, -0.0]));
    assert!(
        same(ops::max(&x, 0, false)?.to_vec()?, &[nan]),
        "max propagates NaN"
    );
    assert!(
        same(ops::min(&x, 0, false)?.to_vec()?, &[nan]),
        "min propagates NaN"
    );
    let m = ops::maximum(&x, &Tensor::zeros([5], DType::F64)?)?;
    assert!(same(m.to_vec()?, &[nan, inf, 0.0, 0.0, 0.0]));
    assert!(same(ops::sum_all(&x)?.to_vec()?, &[nan]));
    let finite = ops::narrow(&x, 0, 1, 2)?; // [inf, -inf]
    assert!(
        same(ops::sum_all(&finite)?.to_vec()?, &[nan]),
        "inf + -inf is NaN"
    );
    assert!(same(ops::softmax(&finite, 0)?.to_vec()?, &[nan, 0.0]));
    // Backward: d exp(x)/dx = exp(x), the same IEEE values.
    ops::sum_all(&e)?.backward()?;
    assert!(same(
        x.grad().unwrap().to_vec()?,
        &[nan, inf, 0.0, 1.0, 1.0]
    ));
    Ok(())
}

/// Constructors given a shape whose size overflows return an error naming the
/// shape, never build a tensor over a wrapped-around size (`Tensor::full`, `zeros`
/// and `ones` panicked with that message before they returned a `Result`).
#[test]
fn constructors_refuse_shapes_whose_size_overflows() {
    crate::init();
    let huge = [1usize << 32, 1 << 32];
    let err = Tensor::from_vec(Vec::<f32>::new(), huge).unwrap_err();
    assert!(
        err.to_string().contains("[4294967296, 4294967296]"),
        "{err}"
    );
    assert!(
        autograd::random::Rng::new(1)
            .uniform(huge, 0.0, 1.0, DType::F32)
            .is_err()
    );
    assert!(
        autograd::random::Rng::new(1)
            .normal(huge, 0.0, 1.0, DType::F64)
            .is_err()
    );
    let x = Tensor::zeros([2], DType::F32).unwrap();
    assert!(x.full_like_shape(huge, 1.0).is_err());
    let msg = Tensor::zeros(huge, DType::F32).unwrap_err().to_string();
    assert!(msg.contains("Tensor::zeros"), "{msg}");
    assert!(msg.contains("[4294967296, 4294967296]"), "{msg}");
}
