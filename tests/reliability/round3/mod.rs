//! Round 3 of the reliability review: a regression test per item, each named for
//! the behaviour it pins down.
//!
//! - `gradients`: no false `NotDifferentiable` under `create_graph`, and a backward
//!   that leaves the graph still caught (item 1); `std`/`var` where the spread is
//!   zero (2).
//! - `kinks`: PyTorch's gradient conventions at kinks and ties (3).
//! - `io`: reserved names refused by `save` (4), `load_into` all-or-nothing (5),
//!   fallible buffers in `save` and `load` (6).
//! - `engine`: dropout inside `checkpoint` (7), a refused `grad` call leaves the
//!   graph as it was (9).
//! - `optim`: optimizer state costs the same with fusion on (8).
//! - `messages`: `pow` with a scalar exponent (11). (Item 10's compile errors are
//!   UI cases in `tests/ui/fail`.)

mod engine;
mod gradients;
mod io;
mod kinks;
mod messages;
mod optim;
