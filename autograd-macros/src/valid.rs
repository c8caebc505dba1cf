//! Semantic checks of an op definition, producing the model `expand` generates from.
//! Every problem becomes an error on the offending tokens, all reported together.

use crate::ast::{self, OpModule, Param};
use crate::attr::Args;
use crate::suggest::closest;
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

pub(crate) fn camel_case(ident: &Ident) -> Ident {
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

fn reserved_meaning(name: &str) -> Option<&'static str> {
    match name {
        "grad" => Some("the gradient of the output"),
        "output" => Some("the forward result"),
        "needs" => Some("which inputs need a gradient"),
        _ => None,
    }
}

fn check_signature(f: &ItemFn, errs: &mut Errors) {
    let sig = &f.sig;
    if let Some(c) = &sig.constness {
        errs.at(
            c,
            format!("`{}` cannot be `const`: remove `const`", sig.ident),
        );
    }
    if let Some(a) = &sig.asyncness {
        errs.at(
            a,
            format!("`{}` cannot be `async`: remove `async`", sig.ident),
        );
    }
    if let syn::Safety::Unsafe(u) = &sig.safety {
        errs.at(
            u,
            format!(
                "`{}` cannot be `unsafe`: remove `unsafe` (use an `unsafe` block inside)",
                sig.ident
            ),
        );
    }
    if !sig.generics.params.is_empty() || sig.generics.where_clause.is_some() {
        errs.at(
            &sig.generics,
            format!(
                "`{}` cannot be generic: an op computes on `Tensor`, whatever its dtype or device; remove the generic parameters",
                sig.ident
            ),
        );
    }
    if let Some(v) = &sig.variadic {
        errs.at(v, "variadic parameters are not supported: give each tensor input a name (`a: &Tensor, b: &Tensor`)");
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

/// The error for a forward input that is not `&Tensor`, saying what to write.
fn forward_input_type_error(ident: &Ident, ty: &Type, struct_ident: &Ident) -> String {
    match ty {
        Type::Reference(r) if r.mutability.is_some() && ast::is_tensor(&r.elem) => {
            format!("forward reads its inputs and never changes them: write `{ident}: &Tensor`")
        }
        t if ast::is_tensor(t) => format!(
            "forward borrows its inputs (the graph keeps what backward needs): write `{ident}: &Tensor`"
        ),
        _ => {
            let field_ty = match ty {
                Type::Reference(_) => "..".to_string(),
                t => t
                    .to_token_stream()
                    .to_string()
                    .replace(" < ", "<")
                    .replace(" >", ">"),
            };
            format!(
                "forward's inputs are tensors: write `{ident}: &Tensor`; a non-tensor parameter (an axis, a scalar, a shape) \
                 is a field of the op's parameter struct (`pub struct {struct_ident} {{ pub {ident}: {field_ty} }}` in the module), \
                 read as `self.{ident}` in `pub fn forward(&self, ..)`"
            )
        }
    }
}

/// An error for `Result<_, E>` with an error type other than autograd's.
fn reject_foreign_error(f: &ItemFn, errs: &mut Errors) {
    if let syn::ReturnType::Type(_, t) = &f.sig.output
        && let Some(e) = ast::foreign_error_type(t)
    {
        errs.at(
            e,
            format!(
                "an op's `{}` fails with autograd's `Error`, which the engine reports with the op's name: \
                 write `Result<..>` from `autograd::prelude`, and turn other errors into `Error::InvalidArgument {{ op, msg }}`",
                f.sig.ident
            ),
        );
    }
}

/// An error for `self` in a function that does not take `&self`.
fn reject_self_value(f: &ItemFn, has_fields: bool, struct_ident: &Ident, errs: &mut Errors) {
    let Some(at) = ast::self_value(f.block.to_token_stream()) else {
        return;
    };
    let name = &f.sig.ident;
    let msg = if has_fields {
        format!("`{name}` reads `self` but does not take it: write `pub fn {name}(&self, ..)`")
    } else {
        format!(
            "`self` is the op's parameter struct, and this op has none: give the op one in its module \
             (e.g. `pub struct {struct_ident} {{ pub factor: f64 }}`) and write `pub fn {name}(&self, ..)`"
        )
    };
    errs.at(at, msg);
}

/// The error for a missing `forward` or `backward`, on the module's name or on a
/// function whose name looks like a misspelling of it.
fn missing_fn(op: &OpModule, wanted: &str, fix: &str, errs: &mut Errors) {
    if op.in_impl.iter().any(|n| n == wanted) {
        return; // reported on the impl block's function
    }
    let fns: Vec<&Ident> = op
        .others
        .iter()
        .filter_map(|i| match i {
            syn::Item::Fn(f) => Some(&f.sig.ident),
            _ => None,
        })
        .collect();
    let names: Vec<String> = fns.iter().map(|i| i.to_string()).collect();
    let typo = names.iter().position(|n| closest(n, [wanted]).is_some());
    match typo {
        Some(k) => errs.at(
            fns[k],
            format!(
                "op module `{}` has no `fn {wanted}`: rename `{}` to `{wanted}`",
                op.ident, fns[k]
            ),
        ),
        None => errs.at(
            &op.ident,
            format!("op module `{}` has no `fn {wanted}`: {fix}", op.ident),
        ),
    }
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
                errs.at(&s.generics, "the op's parameter struct cannot be generic: give its fields concrete types (`pub axis: usize`)");
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
                    format!("the op's parameters have names: write `pub struct {} {{ pub factor: f64 }}` and read `self.factor`", s.ident),
                ),
            }
            s.ident.clone()
        }
        None => camel_case(&op.ident),
    };
    // Unnamed fields are reported above; they still count as parameters here, so
    // that `&self` is not reported as well.
    let has_fields = op
        .param_struct
        .as_ref()
        .is_some_and(|s| !s.fields.is_empty());

    // forward: the tensor inputs.
    let mut inputs: Vec<InputModel> = Vec::new();
    let mut forward_self = false;
    match &op.forward {
        None => missing_fn(
            op,
            "forward",
            "add `pub fn forward(x: &Tensor) -> Result<Tensor>` computing the output",
            &mut errs,
        ),
        Some(f) => {
            check_signature(f, &mut errs);
            for p in ast::params(f) {
                match p {
                    Param::Receiver(r) => {
                        forward_self = check_receiver(r, has_fields, &struct_ident, &mut errs)
                    }
                    Param::Named { arg, ident: None } => {
                        errs.at(
                            &arg.pat,
                            "forward's inputs are plain names: write `x: &Tensor`",
                        );
                    }
                    Param::Named {
                        arg,
                        ident: Some(ident),
                    } => {
                        let mut differentiable = true;
                        for a in &arg.attrs {
                            let path = a.path().to_token_stream().to_string().replace(' ', "");
                            if path == "no_grad" && matches!(a.meta, syn::Meta::Path(_)) {
                                differentiable = false;
                            } else if closest(&path, ["no_grad"]).is_some() {
                                // A misspelled #[no_grad]: taken as meant, so that the
                                // gradient count is not reported as well.
                                differentiable = false;
                                errs.at(a, format!("unknown attribute `#[{path}]` on an op input: write `#[no_grad]` (the input gets no gradient)"));
                            } else {
                                errs.at(a, "unknown attribute on an op input: the only one is `#[no_grad]` (the input gets no gradient); remove this one");
                            }
                        }
                        if !ast::is_tensor_ref(&arg.ty) {
                            errs.at(
                                &arg.ty,
                                forward_input_type_error(ident, &arg.ty, &struct_ident),
                            );
                        }
                        if let Some(meaning) = reserved_meaning(&ident.to_string()) {
                            errs.at(
                                ident,
                                format!("`{ident}` is reserved: in backward it names {meaning}; rename this input (e.g. `{ident}_in`)"),
                            );
                        } else if inputs.iter().any(|i| i.ident == *ident) {
                            errs.at(ident, format!("duplicate input name `{ident}`: each input needs its own name; rename this one (e.g. `{ident}2`)"));
                        }
                        // Kept even when misnamed, so that the gradient count is still right.
                        inputs.push(InputModel {
                            ident: ident.clone(),
                            differentiable,
                            saved: false,
                        });
                    }
                }
            }
            if !f
                .sig
                .inputs
                .iter()
                .any(|a| matches!(a, syn::FnArg::Typed(_)))
            {
                errs.at(
                    &f.sig.ident,
                    "forward needs at least one tensor input, the value differentiated: write `pub fn forward(x: &Tensor) -> Result<Tensor>`",
                );
            }
            if !inputs.is_empty() && inputs.iter().all(|i| !i.differentiable) {
                errs.at(
                    &f.sig.ident,
                    "every input is #[no_grad], so nothing would receive a gradient: remove `#[no_grad]` from the inputs \
                     that get one (a function of constants only is not an op: write it as a plain function)",
                );
            }
            match &f.sig.output {
                syn::ReturnType::Type(_, t) if ast::result_inner(t).is_some_and(ast::is_tensor) => {}
                syn::ReturnType::Type(_, t) if ast::is_tensor(t) => errs.at(
                    t,
                    "forward returns a `Result` (errors are values, e.g. a shape mismatch): write `-> Result<Tensor>`",
                ),
                syn::ReturnType::Type(_, t) if ast::result_inner(t).is_some_and(|i| matches!(i, Type::Tuple(_))) => errs.at(
                    t,
                    "an op has exactly one output tensor: write `-> Result<Tensor>`, and define one op per output",
                ),
                syn::ReturnType::Type(_, t) => errs.at(t, "forward returns the op's one output tensor: write `-> Result<Tensor>`"),
                syn::ReturnType::Default => errs.at(&f.sig.ident, "forward returns the op's one output tensor: add `-> Result<Tensor>`"),
            }
            reject_foreign_error(f, &mut errs);
            if !forward_self {
                reject_self_value(f, has_fields, &struct_ident, &mut errs);
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
        "Tensor".to_string()
    } else {
        format!("({})", vec!["Tensor"; diff.len()].join(", "))
    };
    let forward_known = op.forward.is_some();

    // backward: what it reads and what it returns.
    let mut backward_self = false;
    let mut backward_args = Vec::new();
    let mut saves_output = false;
    let mut grad_tuple = false;
    match &op.backward {
        None => {
            let example = match (diff.len(), inputs.first()) {
                _ if !forward_known || diff.is_empty() => {
                    "add `pub fn backward(grad: &Tensor, ..) -> Result<..>` returning one gradient per differentiable input".to_string()
                }
                (1, Some(x)) => format!(
                    "add `pub fn backward(grad: &Tensor, {}: &Tensor) -> Result<Tensor>` returning the gradient of `{}` \
                     (declare only what it reads)",
                    x.ident, x.ident
                ),
                _ => format!(
                    "add `pub fn backward(grad: &Tensor, ..) -> Result<{slot_suggestion}>` returning one gradient per \
                     differentiable input ({diff_names})"
                ),
            };
            missing_fn(op, "backward", &example, &mut errs)
        }
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
                        errs.at(&arg.pat, "backward's parameters are plain names: write `grad: &Tensor`, an input's name, `<input>_shape`, `output` or `needs`");
                        continue;
                    }
                    Param::Named {
                        arg,
                        ident: Some(ident),
                    } => (arg, ident),
                };
                let name = ident.to_string();
                if seen.contains(&name) {
                    errs.at(
                        ident,
                        format!("duplicate parameter `{ident}`: remove this one"),
                    );
                    continue;
                }
                seen.push(name.clone());
                let tensor_ref = |errs: &mut Errors| {
                    if !ast::is_tensor_ref(&arg.ty) {
                        errs.at(
                            &arg.ty,
                            format!("`{ident}` is a tensor: write `{ident}: &Tensor`"),
                        );
                    }
                };
                let unused = |errs: &mut Errors| {
                    if !ast::mentions(body.clone(), &name) {
                        let shape_hint = if name == "output" {
                            String::new()
                        } else {
                            format!(
                                " (or declare `{ident}_shape: &Shape` if only its shape is needed)"
                            )
                        };
                        errs.at(
                            ident,
                            format!(
                                "backward declares `{ident}` but never reads it, so the graph would keep it alive for nothing: \
                                 remove the parameter{shape_hint}"
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
                                if forward_known && n != Some(diff.len()) {
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
                        // Without forward, its inputs are unknown: only the missing forward is reported.
                        None if !forward_known => {}
                        None if fields.iter().any(|(f, _)| f == ident) => errs.at(
                            ident,
                            format!(
                                "`{ident}` is a parameter of the op, not a tensor backward can declare: \
                                 remove it and read `self.{ident}` (write `pub fn backward(&self, ..)`)"
                            ),
                        ),
                        None => {
                            let names = inputs.iter().map(|i| format!("`{}`", i.ident)).collect::<Vec<_>>().join(", ");
                            let mut known: Vec<String> = inputs.iter().map(|i| i.ident.to_string()).collect();
                            known.extend(inputs.iter().map(|i| format!("{}_shape", i.ident)));
                            known.extend(RESERVED.iter().map(|r| r.to_string()));
                            let hint = match closest(&name, known.iter().map(String::as_str)) {
                                Some(c) => format!("did you mean `{c}`? "),
                                None => String::new(),
                            };
                            errs.at(
                                ident,
                                format!(
                                    "backward parameter `{ident}` is not an input of forward: {hint}backward can declare forward's inputs \
                                     ({names}), an input's shape (`<input>_shape: &Shape`), `output` (the forward result), \
                                     `grad` (the output's gradient) and `needs` (which inputs need a gradient)"
                                ),
                            );
                        }
                    },
                }
            }
            reject_foreign_error(b, &mut errs);
            if !backward_self {
                reject_self_value(b, has_fields, &struct_ident, &mut errs);
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
                            errs.at(s, "a gradient is a tensor: write `Tensor`, or `Option<Tensor>` where `None` means no gradient");
                        }
                    }
                    if slots.len() != diff.len() && !inputs.is_empty() {
                        let non_diff: Vec<String> = inputs
                            .iter()
                            .filter(|i| !i.differentiable)
                            .map(|i| format!("`{}`", i.ident))
                            .collect();
                        let msg = if slots.len() == inputs.len() && !non_diff.is_empty() {
                            format!(
                                "backward returns a gradient for {}, marked #[no_grad]: inputs marked #[no_grad] get no slot; \
                                 return one per differentiable input ({diff_names}): write `-> Result<{slot_suggestion}>`",
                                non_diff.join(", ")
                            )
                        } else {
                            format!(
                                "backward returns {} gradient{} but `{}` has {} differentiable input{} ({diff_names}): write `-> Result<{slot_suggestion}>`, \
                                 one slot per input in forward's order (a slot may be `Option<Tensor>`, `None` for no gradient)",
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
            check_signature(c, &mut errs);
            if !c.sig.inputs.is_empty() {
                errs.at(
                    &c.sig.inputs,
                    "`check_cases` takes no parameters: write `pub fn check_cases() -> Vec<CheckCase>`",
                );
            }
            let returns_vec = matches!(&c.sig.output, syn::ReturnType::Type(_, t)
                if ast::last_segment(t).is_some_and(|s| s.ident == "Vec"));
            if !returns_vec {
                let at: &dyn ToTokens = match &c.sig.output {
                    syn::ReturnType::Type(_, t) => t,
                    syn::ReturnType::Default => &c.sig.ident,
                };
                errs.at(at, "`check_cases` returns the inputs to gradient-check the op at: write `-> Vec<CheckCase>`");
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

#[cfg(test)]
mod tests {
    use super::*;
    use quote::quote;

    fn errors(item: proc_macro2::TokenStream) -> Vec<String> {
        let op = OpModule::from_item(syn::parse2(item).unwrap()).unwrap();
        match validate(&op, &Args::default()) {
            Ok(_) => Vec::new(),
            Err(e) => e.into_iter().map(|e| e.to_string()).collect(),
        }
    }

    #[test]
    fn a_valid_op_has_no_errors() {
        let e = errors(quote! {
            mod scale {
                pub struct Scale { pub k: f64 }
                pub fn forward(&self, x: &Tensor, #[no_grad] m: &Tensor) -> Result<Tensor> { x * m }
                pub fn backward(&self, grad: &Tensor, m: &Tensor, x_shape: &Shape) -> Result<Tensor> { f(self.k, grad, m, x_shape) }
            }
        });
        assert!(e.is_empty(), "{e:?}");
    }

    /// One mistake, one error: what follows from it is not reported again.
    #[test]
    fn one_mistake_one_error() {
        let cases = [
            // a misspelled #[no_grad] still counts as one: no gradient-count error
            quote! { mod m {
                pub fn forward(x: &Tensor, #[nograd] i: &Tensor) -> Result<Tensor> { x }
                pub fn backward(grad: &Tensor) -> Result<Tensor> { grad }
            } },
            // a duplicate input still counts: no gradient-count error
            quote! { mod m {
                pub fn forward(x: &Tensor, x: &Tensor) -> Result<Tensor> { x }
                pub fn backward(grad: &Tensor) -> Result<(Tensor, Tensor)> { grad }
            } },
            // without forward, backward's inputs are not reported as unknown
            quote! { mod m {
                pub fn backward(grad: &Tensor, x: &Tensor, needs: [bool; 1]) -> Result<Tensor> { grad * x }
            } },
            // forward in an impl block: not reported missing as well
            quote! { mod m {
                pub struct M { pub k: f64 }
                impl M { pub fn forward(&self, x: &Tensor) -> Result<Tensor> { x } }
                pub fn backward(grad: &Tensor) -> Result<Tensor> { grad }
            } },
            // a tuple struct: `&self` is not reported as well
            quote! { mod m {
                pub struct M(f64);
                pub fn forward(&self, x: &Tensor) -> Result<Tensor> { x * self.0 }
                pub fn backward(grad: &Tensor) -> Result<Tensor> { grad }
            } },
        ];
        for case in cases {
            let e = errors(case.clone());
            assert_eq!(e.len(), 1, "{case}\n{e:#?}");
        }
    }

    #[test]
    fn unknown_backward_parameters_get_a_suggestion() {
        let e = errors(quote! { mod m {
            pub fn forward(input: &Tensor) -> Result<Tensor> { input }
            pub fn backward(grad: &Tensor, inptu_shape: &Shape) -> Result<Tensor> { g(grad, inptu_shape) }
        } });
        assert!(e[0].contains("did you mean `input_shape`?"), "{e:?}");
    }
}
