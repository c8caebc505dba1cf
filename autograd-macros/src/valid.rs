//! Semantic checks of an op definition, producing the model `expand` generates from.
//! Every problem becomes an error on the offending tokens, all reported together.

use crate::ast::{self, OpModule, Param};
use crate::attr::Args;
use quote::ToTokens;
use syn::{Ident, ItemFn, ReceiverKind, Type};

pub(crate) struct Model {
    pub name: String,
    pub struct_ident: Ident,
    pub fields: Vec<(Ident, Type)>,
    pub inputs: Vec<InputModel>,
    pub saves_output: bool,
    pub forward_self: bool,
    pub backward_self: bool,
    pub backward_args: Vec<BackwardArg>,
    /// backward returns a tuple (else a single gradient).
    pub grad_tuple: bool,
    pub has_check_cases: bool,
}

pub(crate) struct InputModel {
    pub ident: Ident,
    pub differentiable: bool,
    pub saved: bool,
}

/// What to pass for each of backward's parameters, in its order.
pub(crate) enum BackwardArg {
    Grad,
    Input(usize),
    /// `<input>_shape: &Shape`: only the input's shape (kept by every node anyway).
    InputShape(usize),
    Output,
    Needs,
}

#[derive(Default)]
struct Errors(Option<syn::Error>);

impl Errors {
    fn push(&mut self, e: syn::Error) {
        match &mut self.0 {
            Some(all) => all.combine(e),
            None => self.0 = Some(e),
        }
    }

    fn at(&mut self, tokens: impl ToTokens, msg: impl std::fmt::Display) {
        self.push(syn::Error::new_spanned(tokens, msg));
    }

    fn finish(self) -> syn::Result<()> {
        self.0.map_or(Ok(()), Err)
    }
}

fn camel_case(ident: &Ident) -> Ident {
    let s = ident.to_string();
    let s = s.strip_prefix("r#").unwrap_or(&s);
    let camel: String = s
        .split('_')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let mut c = p.chars();
            c.next()
                .map(|f| f.to_uppercase().chain(c).collect::<String>())
                .unwrap_or_default()
        })
        .collect();
    Ident::new(if camel.is_empty() { "Op" } else { &camel }, ident.span())
}

const RESERVED: [&str; 3] = ["grad", "output", "needs"];

fn check_signature(f: &ItemFn, errs: &mut Errors) {
    let sig = &f.sig;
    if let Some(c) = &sig.constness {
        errs.at(c, format!("`{}` cannot be `const`", sig.ident));
    }
    if let Some(a) = &sig.asyncness {
        errs.at(a, format!("`{}` cannot be `async`", sig.ident));
    }
    if let syn::Safety::Unsafe(u) = &sig.safety {
        errs.at(u, format!("`{}` cannot be `unsafe`", sig.ident));
    }
    if !sig.generics.params.is_empty() || sig.generics.where_clause.is_some() {
        errs.at(
            &sig.generics,
            format!(
                "`{}` cannot be generic: an op computes on `Tensor`, whatever its dtype or device",
                sig.ident
            ),
        );
    }
    if let Some(v) = &sig.variadic {
        errs.at(v, "variadic parameters are not supported");
    }
}

fn check_receiver(
    r: &syn::Receiver,
    has_fields: bool,
    struct_ident: &Ident,
    errs: &mut Errors,
) -> bool {
    let by_shared_ref =
        matches!(r.kind, ReceiverKind::Reference(_, _, None)) && r.mutability.is_none();
    if !by_shared_ref {
        errs.at(
            r,
            "the op's parameters are read through `&self`: write `&self`",
        );
        return false;
    }
    if !has_fields {
        errs.at(
            r,
            format!(
                "`&self` reads the op's parameters, but this op has none: remove `&self`, or give the op a parameter \
                 struct in its module (e.g. `pub struct {struct_ident} {{ pub factor: f64 }}`) and read `self.factor`"
            ),
        );
        return false;
    }
    true
}

/// The input position whose shape `name` (`<input>_shape`) refers to.
fn shape_of(name: &str, inputs: &[InputModel]) -> Option<usize> {
    let input = name.strip_suffix("_shape")?;
    inputs.iter().position(|i| i.ident == input)
}

pub(crate) fn validate(op: &OpModule, args: &Args) -> syn::Result<Model> {
    let mut errs = Errors::default();
    for e in &op.errors {
        errs.push(e.clone());
    }

    // The parameter struct.
    let mut fields = Vec::new();
    let struct_ident = match &op.param_struct {
        Some(s) => {
            if !s.generics.params.is_empty() {
                errs.at(&s.generics, "the op's parameter struct cannot be generic");
            }
            match &s.fields {
                syn::Fields::Named(named) => {
                    for f in &named.named {
                        if let Some(id) = &f.ident {
                            fields.push((id.clone(), f.ty.clone()));
                        }
                    }
                }
                syn::Fields::Unit => {}
                syn::Fields::Unnamed(u) => errs.at(
                    u,
                    "give the op's parameters names: `pub struct Scale { pub factor: f64 }`",
                ),
            }
            s.ident.clone()
        }
        None => camel_case(&op.ident),
    };
    let has_fields = !fields.is_empty();

    // forward: the tensor inputs.
    let mut inputs: Vec<InputModel> = Vec::new();
    let mut forward_self = false;
    match &op.forward {
        None => errs.at(
            &op.ident,
            format!(
                "op module `{}` has no `fn forward`: add `pub fn forward(x: &Tensor) -> Result<Tensor>` computing the output",
                op.ident
            ),
        ),
        Some(f) => {
            check_signature(f, &mut errs);
            for p in ast::params(f) {
                match p {
                    Param::Receiver(r) => forward_self = check_receiver(r, has_fields, &struct_ident, &mut errs),
                    Param::Named { arg, ident: None } => {
                        errs.at(&arg.pat, "forward's inputs are plain names: `x: &Tensor`");
                    }
                    Param::Named { arg, ident: Some(ident) } => {
                        let mut differentiable = true;
                        for a in &arg.attrs {
                            if a.path().is_ident("no_grad") {
                                differentiable = false;
                            } else {
                                errs.at(a, "unknown attribute on an op input: the only one is `#[no_grad]` (the input gets no gradient)");
                            }
                        }
                        if !ast::is_tensor_ref(&arg.ty) {
                            errs.at(
                                &arg.ty,
                                format!(
                                    "forward's inputs are tensors: write `{ident}: &Tensor`; a non-tensor parameter (an axis, a scalar) \
                                     is a field of the op's parameter struct, read as `self.{ident}`"
                                ),
                            );
                        }
                        if RESERVED.contains(&ident.to_string().as_str()) {
                            errs.at(ident, format!("`{ident}` names a special parameter of backward; rename this input"));
                        } else if inputs.iter().any(|i| i.ident == *ident) {
                            errs.at(ident, format!("duplicate input name `{ident}`: each input needs its own name"));
                        } else {
                            inputs.push(InputModel { ident: ident.clone(), differentiable, saved: false });
                        }
                    }
                }
            }
            if !f.sig.inputs.iter().any(|a| matches!(a, syn::FnArg::Typed(_))) {
                errs.at(&f.sig.ident, "forward needs at least one tensor input: `pub fn forward(x: &Tensor) -> Result<Tensor>`");
            }
            if !inputs.is_empty() && inputs.iter().all(|i| !i.differentiable) {
                errs.at(&f.sig.ident, "every input is #[no_grad], so nothing would receive a gradient: an op needs a differentiable input");
            }
            match &f.sig.output {
                syn::ReturnType::Type(_, t) if ast::result_inner(t).is_some_and(ast::is_tensor) => {}
                syn::ReturnType::Type(_, t) => errs.at(t, "forward returns its one output tensor: write `-> Result<Tensor>`"),
                syn::ReturnType::Default => errs.at(&f.sig.ident, "forward returns its one output tensor: add `-> Result<Tensor>`"),
            }
        }
    }

    let diff: Vec<Ident> = inputs
        .iter()
        .filter(|i| i.differentiable)
        .map(|i| i.ident.clone())
        .collect();
    let diff_names = diff
        .iter()
        .map(|i| format!("`{i}`"))
        .collect::<Vec<_>>()
        .join(", ");
    let slot_suggestion = if diff.len() == 1 {
        "Option<Tensor>".to_string()
    } else {
        format!("({})", vec!["Option<Tensor>"; diff.len()].join(", "))
    };

    // backward: what it reads and what it returns.
    let mut backward_self = false;
    let mut backward_args = Vec::new();
    let mut saves_output = false;
    let mut grad_tuple = false;
    match &op.backward {
        None => errs.at(
            &op.ident,
            format!(
                "op module `{}` has no `fn backward`: add `pub fn backward(grad: &Tensor, ..) -> Result<..>` returning one gradient per differentiable input",
                op.ident
            ),
        ),
        Some(b) => {
            check_signature(b, &mut errs);
            let body = b.block.to_token_stream();
            let mut seen: Vec<String> = Vec::new();
            for p in ast::params(b) {
                let (arg, ident) = match p {
                    Param::Receiver(r) => {
                        backward_self = check_receiver(r, has_fields, &struct_ident, &mut errs);
                        continue;
                    }
                    Param::Named { arg, ident: None } => {
                        errs.at(&arg.pat, "backward's parameters are plain names (`grad: &Tensor`, an input's name, `output`, `needs`)");
                        continue;
                    }
                    Param::Named { arg, ident: Some(ident) } => (arg, ident),
                };
                let name = ident.to_string();
                if seen.contains(&name) {
                    errs.at(ident, format!("duplicate parameter `{ident}`"));
                    continue;
                }
                seen.push(name.clone());
                let tensor_ref = |errs: &mut Errors| {
                    if !ast::is_tensor_ref(&arg.ty) {
                        errs.at(&arg.ty, format!("`{ident}` is a tensor: write `{ident}: &Tensor`"));
                    }
                };
                let unused = |errs: &mut Errors| {
                    if !ast::mentions(body.clone(), &name) {
                        errs.at(
                            ident,
                            format!(
                                "backward declares `{ident}` but never reads it, so the graph would keep it alive for nothing: remove the parameter"
                            ),
                        );
                    }
                };
                match name.as_str() {
                    "grad" => {
                        tensor_ref(&mut errs);
                        backward_args.push(BackwardArg::Grad);
                    }
                    "output" => {
                        tensor_ref(&mut errs);
                        unused(&mut errs);
                        saves_output = true;
                        backward_args.push(BackwardArg::Output);
                    }
                    "needs" => {
                        let ok = match &*arg.ty {
                            Type::Array(a) => {
                                let n = match &a.len {
                                    syn::Expr::Lit(syn::ExprLit { lit: syn::Lit::Int(n), .. }) => n.base10_parse::<usize>().ok(),
                                    _ => None,
                                };
                                if n != Some(diff.len()) {
                                    errs.at(
                                        &a.len,
                                        format!("`needs` has one flag per differentiable input ({diff_names}): write `[bool; {}]`", diff.len()),
                                    );
                                }
                                ast::last_segment(&a.elem).is_some_and(|s| s.ident == "bool")
                            }
                            _ => false,
                        };
                        if !ok {
                            errs.at(&arg.ty, format!("`needs` says which inputs need a gradient: write `needs: [bool; {}]`", diff.len()));
                        }
                        backward_args.push(BackwardArg::Needs);
                    }
                    _ => match inputs.iter().position(|i| i.ident == *ident) {
                        Some(pos) => {
                            tensor_ref(&mut errs);
                            unused(&mut errs);
                            inputs[pos].saved = true;
                            backward_args.push(BackwardArg::Input(pos));
                        }
                        None if shape_of(&name, &inputs).is_some() => {
                            let pos = shape_of(&name, &inputs).unwrap_or_default();
                            let is_shape_ref = matches!(&*arg.ty, Type::Reference(r) if r.mutability.is_none()
                                && ast::last_segment(&r.elem).is_some_and(|s| s.ident == "Shape"));
                            if !is_shape_ref {
                                errs.at(&arg.ty, format!("`{ident}` is the shape of an input: write `{ident}: &Shape`"));
                            }
                            backward_args.push(BackwardArg::InputShape(pos));
                        }
                        None => {
                            let names = inputs.iter().map(|i| format!("`{}`", i.ident)).collect::<Vec<_>>().join(", ");
                            errs.at(
                                ident,
                                format!(
                                    "backward parameter `{ident}` is not an input of forward: backward can read forward's inputs ({names}), \
                                     an input's shape (`<input>_shape: &Shape`), `output`, `grad` (the output's gradient) and \
                                     `needs` (which inputs need a gradient)"
                                ),
                            );
                        }
                    },
                }
            }
            let returned = match &b.sig.output {
                syn::ReturnType::Type(_, t) => ast::result_inner(t).map(|inner| (t, inner)),
                syn::ReturnType::Default => None,
            };
            match returned {
                None => {
                    let at: &dyn ToTokens = match &b.sig.output {
                        syn::ReturnType::Type(_, t) => t,
                        syn::ReturnType::Default => &b.sig.ident,
                    };
                    errs.at(at, format!("backward returns one gradient per differentiable input ({diff_names}): write `-> Result<{slot_suggestion}>`"));
                }
                Some((ret, inner)) => {
                    let slots: Vec<&Type> = match inner {
                        Type::Tuple(t) => {
                            grad_tuple = true;
                            t.elems.iter().collect()
                        }
                        other => vec![other],
                    };
                    for s in &slots {
                        if !ast::is_tensor(s) && !ast::is_option_tensor(s) {
                            errs.at(s, "a gradient slot is `Tensor`, or `Option<Tensor>` where `None` means no gradient");
                        }
                    }
                    if slots.len() != diff.len() && !inputs.is_empty() {
                        let non_diff: Vec<String> = inputs.iter().filter(|i| !i.differentiable).map(|i| format!("`{}`", i.ident)).collect();
                        let msg = if slots.len() == inputs.len() && !non_diff.is_empty() {
                            format!(
                                "backward returns a gradient for {}, marked #[no_grad]: inputs marked #[no_grad] get no slot; \
                                 return one per differentiable input ({diff_names}): `Result<{slot_suggestion}>`",
                                non_diff.join(", ")
                            )
                        } else {
                            format!(
                                "backward returns {} gradient{} but `{}` has {} differentiable input{} ({diff_names}): write `-> Result<{slot_suggestion}>`, \
                                 one slot per input in forward's order",
                                slots.len(),
                                if slots.len() == 1 { "" } else { "s" },
                                op.default_name(),
                                diff.len(),
                                if diff.len() == 1 { "" } else { "s" },
                            )
                        };
                        errs.at(ret, msg);
                    }
                }
            }
        }
    }

    for (field, _) in &fields {
        if inputs.iter().any(|i| i.ident == *field) {
            errs.at(
                field,
                format!(
                    "`{field}` names both a tensor input and a parameter of the op; rename one"
                ),
            );
        }
    }

    let has_check_cases = match &op.check_cases {
        Some(c) => {
            if !c.sig.inputs.is_empty() {
                errs.at(
                    &c.sig.inputs,
                    "`check_cases` takes no parameters: `pub fn check_cases() -> Vec<CheckCase>`",
                );
            }
            true
        }
        None => false,
    };

    errs.finish()?;
    let name = args
        .name
        .as_ref()
        .map_or_else(|| op.default_name(), |n| n.value());
    Ok(Model {
        name,
        struct_ident,
        fields,
        inputs,
        saves_output,
        forward_self,
        backward_self,
        backward_args,
        grad_tuple,
        has_check_cases,
    })
}
