//! Checks of an op whose forward is a scalar function (`#[elementwise]`): its
//! signature and inputs, its body (parsed into the `ir` tree, which checks each
//! construct), and an explicit `#[elementwise]` backward. What passes is a
//! [`Scalar`], which the elementwise expansion reads without checking again.

use super::checks::{Errors, check_signature, reject_params_ignored, struct_ident};
use crate::ast::{self, Backward, FnKind, Forward, ForwardParam, Op};
use crate::ir::{self, Function, MAX_INPUTS, is_scalar_type};
use quote::ToTokens;
use syn::{Ident, ItemFn, ReceiverKind};

/// Most parameters an elementwise op's function reads (its CUDA kernels take four).
const MAX_PARAMS: usize = 4;

/// A scalar forward (`#[elementwise]`) that passed every check: its body, and its
/// explicit backward if written.
pub(crate) struct Scalar {
    pub body: Function,
    /// An explicit `#[elementwise]` backward, if written.
    pub backward: Option<ScalarBackward>,
}

/// An explicit elementwise backward: its parameters (forward's inputs, `output`
/// and `grad`, as declared) and its checked body.
pub(crate) struct ScalarBackward {
    pub params: Vec<Ident>,
    pub body: Function,
}

impl ScalarBackward {
    /// Whether it runs as ops of its own (one per differentiable input, see
    /// the elementwise expansion's gradient ops) on what it reads: when it reads the forward's result, or
    /// leaves some input unread. The graph then saves exactly what it names (the
    /// output, those inputs). Otherwise it is evaluated inside the op's kernel,
    /// which reads every input.
    pub(crate) fn runs_apart(&self, inputs: &[(&Ident, bool)]) -> bool {
        self.params.iter().any(|p| p == "output")
            || inputs
                .iter()
                .any(|(i, _)| !self.params.iter().any(|p| p == *i))
    }
}

/// Checks an explicit `#[elementwise] fn backward(x: f32, grad: f32) -> f32`.
fn validate_backward(
    b: &Backward<'_>,
    inputs: &[(&Ident, bool)],
    has_fields: bool,
    errs: &mut Errors,
) -> Option<ScalarBackward> {
    let f = b.original;
    check_signature(f, errs);
    if let Some(r) = b.receiver
        && !has_fields
    {
        errs.at(
            r,
            "`&self` reads the op's parameters, but this op has none: remove `&self`",
        );
    }
    let mut params: Vec<Ident> = Vec::new();
    let mut ok = true;
    for arg in &f.sig.inputs {
        let syn::FnArg::Typed(pt) = arg else { continue };
        let syn::Pat::Ident(pi) = &*pt.pat else {
            errs.at(
                &pt.pat,
                "backward's parameters are plain names: write `x: f32` or `grad: f32`",
            );
            ok = false;
            continue;
        };
        let ident = &pi.ident;
        let known = ident == "grad" || ident == "output" || inputs.iter().any(|(i, _)| *i == ident);
        if !known {
            let names: Vec<String> = inputs
                .iter()
                .map(|(i, _)| format!("`{i}`"))
                .chain(["`output`".to_string(), "`grad`".to_string()])
                .collect();
            errs.at(
                ident,
                format!(
                    "an elementwise backward reads forward's inputs, `output` (its result) and `grad` (the \
                     output's gradient), by name: {}",
                    names.join(", ")
                ),
            );
            ok = false;
        }
        if !is_scalar_type(&pt.ty) {
            errs.at(
                &pt.ty,
                format!("an elementwise backward computes on numbers: write `{ident}: f32`"),
            );
            ok = false;
        }
        if params.contains(ident) {
            errs.at(ident, format!("duplicate parameter `{ident}`"));
            ok = false;
        }
        params.push(ident.clone());
    }
    let outputs = inputs.iter().filter(|(_, d)| *d).count();
    if !reads_grad(f, &params, inputs, outputs, errs) {
        ok = false;
    }
    let returns_ok = match &f.sig.output {
        syn::ReturnType::Type(_, t) if outputs == 1 => is_scalar_type(t),
        syn::ReturnType::Type(_, t) => {
            matches!(&**t, syn::Type::Tuple(tt) if tt.elems.len() == outputs && tt.elems.iter().all(is_scalar_type))
        }
        syn::ReturnType::Default => false,
    };
    if !returns_ok {
        let want = if outputs == 1 {
            "f32".to_string()
        } else {
            format!("({})", vec!["f32"; outputs].join(", "))
        };
        let at: &dyn quote::ToTokens = match &f.sig.output {
            syn::ReturnType::Type(_, t) => t,
            syn::ReturnType::Default => &f.sig.ident,
        };
        errs.at(
            at,
            format!("an elementwise backward returns one gradient per differentiable input: write `-> {want}`"),
        );
        ok = false;
    }
    let body = match ir::backward(&f.block, &params, outputs) {
        Ok(body) => Some(body),
        Err(es) => {
            for e in es {
                errs.push(e);
            }
            None
        }
    };
    if let Some(body) = &body
        && let Some(field) = body.fields.first()
        && b.receiver.is_none()
    {
        errs.at(field, format!("`backward` reads `self.{field}` but does not take it: write `pub fn backward(&self, ..)`"));
        ok = false;
    }
    if params.iter().any(|p| p == "output")
        && let Some((clash, _)) = inputs.iter().find(|(i, _)| *i == "output")
    {
        errs.at(
            clash,
            "`output` names forward's result in backward: rename this input",
        );
        ok = false;
    }
    if params.len() > MAX_INPUTS {
        errs.at(
            &f.sig.ident,
            format!(
                "an elementwise backward reads at most {MAX_INPUTS} values (it runs as an elementwise op of \
                 what it reads): `grad`, `output` and forward's inputs count"
            ),
        );
        ok = false;
    }
    let body = body?;
    ok.then_some(ScalarBackward { params, body })
}

/// Checks that an elementwise backward reads `grad`: it returns gradients, `grad`
/// times the derivative, and one that never reads `grad` returns the derivative
/// alone (wrong for any output gradient but ones). The error is on `grad` when
/// declared and unread, else on the function's name. True when it reads it.
fn reads_grad(
    f: &ItemFn,
    params: &[Ident],
    inputs: &[(&Ident, bool)],
    outputs: usize,
    errs: &mut Errors,
) -> bool {
    let declared = params.iter().find(|p| *p == "grad");
    if declared.is_some() && ast::mentions(f.block.to_token_stream(), "grad") {
        return true;
    }
    // `grad * <derivative>`, once per gradient, for the example.
    let diff: Vec<&Ident> = inputs.iter().filter(|(_, d)| *d).map(|(i, _)| *i).collect();
    let example = if outputs == 1 {
        format!("grad * <d/d{}>", diff[0])
    } else {
        let each: Vec<String> = diff.iter().map(|i| format!("grad * <d/d{i}>")).collect();
        format!("({})", each.join(", "))
    };
    match declared {
        Some(grad) => errs.at(
            grad,
            format!(
                "backward declares `grad` but never reads it: an elementwise backward returns each input's gradient, \
                 `grad` (the output's gradient) times the derivative, not the derivative alone; multiply by it: `{example}`"
            ),
        ),
        None => errs.at(
            &f.sig.ident,
            format!(
                "this elementwise backward does not take `grad`: it returns each input's gradient, `grad` (the output's \
                 gradient) times the derivative, not the derivative alone; add `grad: f32` and return `{example}`"
            ),
        ),
    }
    false
}

/// Checks an op whose forward is marked `#[elementwise]`: its inputs (name, and
/// whether differentiable), and the checked forward.
pub(crate) fn validate<'t>(op: &'t Op<'_>) -> syn::Result<(Vec<(&'t Ident, bool)>, Scalar)> {
    let mut errs = Errors::default();
    for e in &op.errors {
        errs.push(e.clone());
    }
    if let Some(params) = &op.params {
        params.validate(&mut errs);
    }
    let Some(forward) = &op.forward else {
        return Err(syn::Error::new_spanned(
            op.ident,
            "op module without forward",
        ));
    };
    let f = forward.original;
    check_signature(f, &mut errs);
    let has_fields = op.params.as_ref().is_some_and(|p| p.has_fields());
    if let Some(b) = &op.backward
        && b.kind == FnKind::Tensor
    {
        errs.at(
            &b.original.sig.ident,
            "an `#[elementwise]` forward has its backward generated (derived from the same function by \
             dual numbers): remove `backward`, or write it as an `#[elementwise]` scalar function of the \
             inputs and `grad` where a better-conditioned formula exists",
        );
    }
    let s = struct_ident(op);
    if let Some(r) = forward.receiver {
        let by_ref =
            matches!(r.kind, ReceiverKind::Reference(_, _, None)) && r.mutability.is_none();
        if !by_ref {
            errs.at(
                r,
                "the op's parameters are read through `&self`: write `&self`",
            );
        } else if !has_fields {
            errs.at(
                r,
                format!(
                    "`&self` reads the op's parameters, but this op has none: remove `&self`, or give the op a \
                     parameter struct in its module (e.g. `pub struct {s} {{ pub slope: f64 }}`)"
                ),
            );
        }
    }
    reject_params_ignored(op, forward, &mut errs);
    let inputs = validate_inputs(op, forward, &mut errs);
    if inputs.is_empty() || inputs.len() > MAX_INPUTS {
        errs.at(
            &f.sig.ident,
            format!("an elementwise function takes 1 to {MAX_INPUTS} inputs (`x: f32, y: f32`)"),
        );
    } else if inputs.iter().all(|(_, d)| !d) {
        errs.at(
            &f.sig.ident,
            "every input is #[no_grad], so nothing would receive a gradient: remove `#[no_grad]` from the inputs that get one",
        );
    }
    match &f.sig.output {
        syn::ReturnType::Type(_, t) if is_scalar_type(t) => {}
        syn::ReturnType::Type(_, t) => errs.at(
            t,
            "an elementwise function returns one number: write `-> f32` (the output has the inputs' dtype)",
        ),
        syn::ReturnType::Default => errs.at(&f.sig.ident, "an elementwise function returns one number: add `-> f32`"),
    }
    let backward = match &op.backward {
        Some(b) if b.kind == FnKind::Scalar && !inputs.is_empty() => {
            validate_backward(b, &inputs, has_fields, &mut errs)
        }
        _ => None,
    };
    let body = validate_body(forward, &inputs, backward.as_ref(), &mut errs);
    errs.finish()?;
    match body {
        Some(body) => Ok((inputs, Scalar { body, backward })),
        None => Err(syn::Error::new_spanned(f, "elementwise body")),
    }
}

/// Checks forward's parameters: each input a plain name of type `f32` or `f64`,
/// `#[no_grad]` its only attribute, named apart from the others and the op's
/// parameters.
fn validate_inputs<'t>(
    op: &Op<'_>,
    forward: &'t Forward<'_>,
    errs: &mut Errors,
) -> Vec<(&'t Ident, bool)> {
    let mut inputs: Vec<(&'t Ident, bool)> = Vec::new();
    for param in &forward.params {
        match param {
            ForwardParam::Pattern(pt) => errs.at(
                &pt.pat,
                "an elementwise function's inputs are plain names: write `x: f32`",
            ),
            ForwardParam::Input(input) => {
                let ty = &*input.original.ty;
                if let syn::Type::Reference(r) = ty {
                    errs.at(
                        r,
                        format!(
                            "an elementwise input is a number, not a reference: write `{}: f32` (the function runs \
                             on every element of an f32 or f64 tensor)",
                            input.ident
                        ),
                    );
                } else if !is_scalar_type(ty) {
                    errs.at(
                        ty,
                        format!(
                            "an elementwise input is a floating-point number: write `{}: f32` (the function runs on \
                             every element of an f32 or f64 tensor)",
                            input.ident
                        ),
                    );
                }
                for a in &input.original.attrs {
                    if !(a.path().is_ident("no_grad") && matches!(a.meta, syn::Meta::Path(_))) {
                        errs.at(
                            a,
                            "the only attribute on an input is `#[no_grad]` (the input gets no gradient)",
                        );
                    }
                }
                if inputs.iter().any(|(i, _)| *i == input.ident) {
                    errs.at(
                        input.ident,
                        format!("duplicate input name `{}`", input.ident),
                    );
                }
                if op
                    .params
                    .iter()
                    .flat_map(|p| &p.fields)
                    .any(|fl| fl.ident == input.ident)
                {
                    errs.at(
                        input.ident,
                        format!(
                            "`{}` names both an input and a parameter of the op; rename one",
                            input.ident
                        ),
                    );
                }
                inputs.push((input.ident, input.differentiable));
            }
        }
    }
    inputs
}

/// Parses and checks forward's body, and the fields both functions read (at most
/// `MAX_PARAMS`); `None` after an error in the body.
fn validate_body(
    forward: &Forward<'_>,
    inputs: &[(&Ident, bool)],
    backward: Option<&ScalarBackward>,
    errs: &mut Errors,
) -> Option<Function> {
    let f = forward.original;
    let idents: Vec<Ident> = inputs.iter().map(|(i, _)| (*i).clone()).collect();
    let body = ir::forward(&f.block, &idents);
    let body = match body {
        Ok(b) => {
            if let Some(field) = b.fields.first()
                && forward.receiver.is_none()
            {
                errs.at(
                    field,
                    format!("`forward` reads `self.{field}` but does not take it: write `pub fn forward(&self, ..)`"),
                );
            }
            Some(b)
        }
        Err(es) => {
            for e in es {
                errs.push(e);
            }
            None
        }
    };
    let mut read: Vec<&Ident> = Vec::new();
    let all_fields = body.iter().flat_map(|b| &b.fields);
    for field in all_fields.chain(backward.iter().flat_map(|b| &b.body.fields)) {
        if !read.contains(&field) {
            read.push(field);
        }
    }
    for field in read.iter().skip(MAX_PARAMS) {
        errs.at(
            field,
            format!("an elementwise op reads at most {MAX_PARAMS} of its parameters (its GPU kernels take them as arguments)"),
        );
    }
    body
}
