//! Semantic checks on the typed tree of `ast`, the one validation of an op: each
//! node has its own `validate`, reading what it needs of the others through [`Cx`].
//! Every problem becomes an error on the offending tokens, and all of them are
//! reported together. An op that passes is a [`Valid`], the tree the expansions
//! generate from: with a tensor forward (checked here), or a scalar one
//! (`#[elementwise]`, checked in `scalar`). Checks both share are in `checks`.

mod checks;
mod scalar;

use crate::ast::{
    self, Backward, BackwardParam, CheckCases, Declared, FnKind, Forward, ForwardParam, Input, Op,
    Params, Role,
};
use crate::attr::Args;
use crate::suggest::closest;
pub(crate) use checks::{Errors, struct_ident};
use checks::{check_signature, reject_params_ignored};
use quote::ToTokens;
pub(crate) use scalar::{Scalar, ScalarBackward};
use syn::{Ident, ItemFn, ReceiverKind, Type};

/// An op that passed every check: what the expansions generate from.
pub(crate) struct Valid<'t, 'a> {
    pub op: &'t Op<'a>,
    /// The name in the registry.
    pub name: String,
    /// The op's struct: its parameter struct, or a unit struct named after the module.
    pub struct_ident: Ident,
    /// Forward's inputs, in order, and whether each is differentiable.
    pub inputs: Vec<(&'t Ident, bool)>,
    pub kind: Kind<'t, 'a>,
}

/// The kind of forward an op has, checked.
pub(crate) enum Kind<'t, 'a> {
    /// A function of tensors, with its hand-written backward.
    Tensor {
        forward: &'t Forward<'a>,
        backward: &'t Backward<'a>,
    },
    /// A scalar function (`#[elementwise]`), whose kernels the macro generates.
    Scalar(Box<Scalar>),
}

/// What the check of one node reads of the others.
struct Cx<'t, 'a> {
    op: &'t Op<'a>,
    struct_ident: Ident,
    /// The parameter struct has fields, named or not (unnamed ones are reported, and
    /// still count here so that `&self` is not reported as well).
    has_fields: bool,
    /// Forward's inputs (none when forward is missing).
    inputs: Vec<&'t Input<'a>>,
}

impl<'a> Op<'a> {
    /// Checks the whole op, once, by its kind of forward (a tensor function, or a
    /// scalar function marked `#[elementwise]`).
    pub(crate) fn validate<'t>(&'t self, args: &Args) -> syn::Result<Valid<'t, 'a>> {
        let scalar = self
            .forward
            .as_ref()
            .is_some_and(|f| f.kind == FnKind::Scalar);
        let (inputs, kind) = if scalar {
            let (inputs, scalar) = scalar::validate(self)?;
            (inputs, Kind::Scalar(Box::new(scalar)))
        } else {
            let (forward, backward) = self.validate_tensor(args)?;
            let inputs = forward
                .inputs()
                .map(|i| (i.ident, i.differentiable))
                .collect();
            (inputs, Kind::Tensor { forward, backward })
        };
        let name = args
            .name
            .as_ref()
            .map_or_else(|| self.default_name(), |n| n.value());
        Ok(Valid {
            op: self,
            name,
            struct_ident: struct_ident(self),
            inputs,
            kind,
        })
    }

    /// Checks an op with a tensor forward: every node, then what spans nodes.
    fn validate_tensor<'t>(
        &'t self,
        args: &Args,
    ) -> syn::Result<(&'t Forward<'a>, &'t Backward<'a>)> {
        let mut errs = Errors::default();
        if let Some(e) = self.prelude_error(args) {
            errs.push(e);
        }
        for e in &self.errors {
            errs.push(e.clone());
        }
        if let Some(params) = &self.params {
            params.validate(&mut errs);
        }
        let cx = Cx {
            op: self,
            struct_ident: struct_ident(self),
            has_fields: self.params.as_ref().is_some_and(Params::has_fields),
            inputs: self.forward.iter().flat_map(Forward::inputs).collect(),
        };
        match &self.forward {
            Some(forward) => forward.validate(&cx, &mut errs),
            None => cx.missing_fn(
                "forward",
                "add `pub fn forward(x: &Tensor) -> Result<Tensor>` computing the output",
                &mut errs,
            ),
        }
        match &self.backward {
            Some(backward) => backward.validate(&cx, &mut errs),
            None => cx.missing_fn("backward", &cx.backward_example(), &mut errs),
        }
        for field in self.params.iter().flat_map(|p| &p.fields) {
            if cx.inputs.iter().any(|i| i.ident == field.ident) {
                errs.at(
                    field.ident,
                    format!(
                        "`{}` names both a tensor input and a parameter of the op; rename one",
                        field.ident
                    ),
                );
            }
        }
        if let Some(check_cases) = &self.check_cases {
            check_cases.validate(&mut errs);
        }
        errs.finish()?;
        let (Some(forward), Some(backward)) = (&self.forward, &self.backward) else {
            // Unreachable: a missing function is reported above.
            return Err(syn::Error::new_spanned(
                self.ident,
                "op module without forward or backward",
            ));
        };
        Ok((forward, backward))
    }

    /// The error for an op module whose signatures name `Tensor` when nothing in the
    /// module imports it (the file's imports do not reach into the module).
    pub(crate) fn prelude_error(&self, args: &Args) -> Option<syn::Error> {
        self.unimported_tensor()?;
        let krate = args.krate.as_ref().map_or_else(
            || "autograd".to_string(),
            |path| {
                let segments: Vec<String> =
                    path.segments.iter().map(|s| s.ident.to_string()).collect();
                segments.join("::")
            },
        );
        let m = self.ident;
        Some(syn::Error::new_spanned(
            m,
            format!(
                "op module `{m}` does not import `Tensor`: the op's items are resolved inside the module, \
                 which does not see the imports around it; add `use {krate}::prelude::*;` inside `mod {m}`"
            ),
        ))
    }
}

impl Forward<'_> {
    fn validate(&self, cx: &Cx<'_, '_>, errs: &mut Errors) {
        let f = self.original;
        check_signature(f, errs);
        let takes_self = self.receiver.is_some_and(|r| cx.check_receiver(r, errs));
        let mut earlier: Vec<&Input<'_>> = Vec::new();
        for param in &self.params {
            match param {
                ForwardParam::Pattern(pt) => errs.at(
                    &pt.pat,
                    "forward's inputs are plain names: write `x: &Tensor`",
                ),
                ForwardParam::Input(input) => {
                    input.validate(cx, &earlier, errs);
                    // Kept even when misnamed, so that the gradient count is still right.
                    earlier.push(input);
                }
            }
        }
        if self.params.is_empty() {
            errs.at(
                &f.sig.ident,
                "forward needs at least one tensor input, the value differentiated: write `pub fn forward(x: &Tensor) -> Result<Tensor>`",
            );
        }
        if !earlier.is_empty() && earlier.iter().all(|i| !i.differentiable) {
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
        reject_foreign_error(f, errs);
        if !takes_self {
            cx.reject_self_value(f, errs);
        }
        reject_params_ignored(cx.op, self, errs);
    }
}

impl Input<'_> {
    /// Checks one input; `earlier` are forward's inputs before it.
    fn validate(&self, cx: &Cx<'_, '_>, earlier: &[&Input<'_>], errs: &mut Errors) {
        let ident = self.ident;
        for a in &self.original.attrs {
            let path = ast::attr_path(a);
            if path == "no_grad" && matches!(a.meta, syn::Meta::Path(_)) {
                // The input gets no gradient.
            } else if closest(&path, ["no_grad"]).is_some() {
                errs.at(a, format!("unknown attribute `#[{path}]` on an op input: write `#[no_grad]` (the input gets no gradient)"));
            } else {
                errs.at(a, "unknown attribute on an op input: the only one is `#[no_grad]` (the input gets no gradient); remove this one");
            }
        }
        let ty = &*self.original.ty;
        if !ast::is_tensor_ref(ty) {
            errs.at(ty, forward_input_type_error(ident, ty, &cx.struct_ident));
        }
        if let Some(meaning) = reserved_meaning(&ident.to_string()) {
            errs.at(
                ident,
                format!("`{ident}` is reserved: in backward it names {meaning}; rename this input (e.g. `{ident}_in`)"),
            );
        } else if earlier.iter().any(|i| i.ident == ident) {
            errs.at(ident, format!("duplicate input name `{ident}`: each input needs its own name; rename this one (e.g. `{ident}2`)"));
        }
    }
}

impl Backward<'_> {
    fn validate(&self, cx: &Cx<'_, '_>, errs: &mut Errors) {
        let b = self.original;
        check_signature(b, errs);
        let takes_self = self.receiver.is_some_and(|r| cx.check_receiver(r, errs));
        let body = b.block.to_token_stream();
        let mut seen: Vec<&Ident> = Vec::new();
        for param in &self.params {
            match param {
                BackwardParam::Pattern(pt) => errs.at(
                    &pt.pat,
                    "backward's parameters are plain names: write `grad: &Tensor`, an input's name, `<input>_shape`, `output` or `needs`",
                ),
                BackwardParam::Declared(d) if seen.contains(&d.ident) => errs.at(
                    d.ident,
                    format!("duplicate parameter `{}`: remove this one", d.ident),
                ),
                BackwardParam::Declared(d) => {
                    seen.push(d.ident);
                    d.validate(cx, &body, errs);
                }
            }
        }
        reject_foreign_error(b, errs);
        if !takes_self {
            cx.reject_self_value(b, errs);
        }
        self.validate_output(cx, errs);
    }

    /// Checks what backward returns: one gradient per differentiable input.
    fn validate_output(&self, cx: &Cx<'_, '_>, errs: &mut Errors) {
        let sig = &self.original.sig;
        let (diff_names, slot_suggestion) = (cx.diff_names(), cx.slot_suggestion());
        let returned = match &sig.output {
            syn::ReturnType::Type(_, t) => ast::result_inner(t).map(|inner| (t, inner)),
            syn::ReturnType::Default => None,
        };
        let Some((ret, inner)) = returned else {
            let at: &dyn ToTokens = match &sig.output {
                syn::ReturnType::Type(_, t) => t,
                syn::ReturnType::Default => &sig.ident,
            };
            errs.at(at, format!("backward returns one gradient per differentiable input ({diff_names}): write `-> Result<{slot_suggestion}>`"));
            return;
        };
        let slots: Vec<&Type> = match inner {
            Type::Tuple(t) => t.elems.iter().collect(),
            other => vec![other],
        };
        for s in &slots {
            if !ast::is_tensor(s) && !ast::is_option_tensor(s) {
                errs.at(s, "a gradient is a tensor: write `Tensor`, or `Option<Tensor>` where `None` means no gradient");
            }
        }
        let diff = cx.differentiable().len();
        if slots.len() == diff || cx.inputs.is_empty() {
            return;
        }
        let non_diff: Vec<String> = cx
            .inputs
            .iter()
            .filter(|i| !i.differentiable)
            .map(|i| format!("`{}`", i.ident))
            .collect();
        let msg = if slots.len() == cx.inputs.len() && !non_diff.is_empty() {
            format!(
                "backward returns a gradient for {}, marked #[no_grad]: inputs marked #[no_grad] get no slot; \
                 return one per differentiable input ({diff_names}): write `-> Result<{slot_suggestion}>`",
                non_diff.join(", ")
            )
        } else {
            format!(
                "backward returns {} gradient{} but `{}` has {diff} differentiable input{} ({diff_names}): write `-> Result<{slot_suggestion}>`, \
                 one slot per input in forward's order (a slot may be `Option<Tensor>`, `None` for no gradient)",
                slots.len(),
                if slots.len() == 1 { "" } else { "s" },
                cx.op.default_name(),
                if diff == 1 { "" } else { "s" },
            )
        };
        errs.at(ret, msg);
    }
}

impl Declared<'_> {
    /// Checks one parameter of backward against what its name refers to.
    fn validate(&self, cx: &Cx<'_, '_>, body: &proc_macro2::TokenStream, errs: &mut Errors) {
        let (ident, ty) = (self.ident, &*self.original.ty);
        // Borrowed, or owned (taken from the graph, so backward may write into its
        // buffer).
        let tensor_ref = |errs: &mut Errors| {
            if !ast::is_tensor_ref(ty) && !ast::is_tensor(ty) {
                errs.at(
                    ty,
                    format!(
                        "`{ident}` is a tensor: write `{ident}: &Tensor` (or `{ident}: Tensor` to own it, \
                         letting the owned operators write into its buffer)"
                    ),
                );
            }
        };
        let read = |errs: &mut Errors| {
            if !ast::mentions(body.clone(), &ident.to_string()) {
                let shape_hint = if self.role == Role::Output {
                    String::new()
                } else {
                    format!(" (or declare `{ident}_shape: &Shape` if only its shape is needed)")
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
        match self.role {
            Role::Grad => tensor_ref(errs),
            Role::Output | Role::Input(_) => {
                tensor_ref(errs);
                read(errs);
            }
            Role::Needs => cx.check_needs(ty, errs),
            Role::InputShape(_) => {
                let is_shape_ref = matches!(ty, Type::Reference(r) if r.mutability.is_none()
                    && ast::last_segment(&r.elem).is_some_and(|s| s.ident == "Shape"));
                if !is_shape_ref {
                    errs.at(
                        ty,
                        format!("`{ident}` is the shape of an input: write `{ident}: &Shape`"),
                    );
                }
            }
            Role::InputDType(_) => {
                if ast::last_segment(ty).is_none_or(|s| s.ident != "DType") {
                    errs.at(
                        ty,
                        format!("`{ident}` is the dtype of an input: write `{ident}: DType`"),
                    );
                }
            }
            // Without forward, its inputs are unknown: only the missing forward is reported.
            Role::Unknown if cx.op.forward.is_none() => {}
            Role::Unknown if cx.is_field(ident) => errs.at(
                ident,
                format!(
                    "`{ident}` is a parameter of the op, not a tensor backward can declare: \
                     remove it and read `self.{ident}` (write `pub fn backward(&self, ..)`)"
                ),
            ),
            Role::Unknown => errs.at(ident, cx.unknown_declared(ident)),
        }
    }
}

impl CheckCases<'_> {
    fn validate(&self, errs: &mut Errors) {
        let c = self.original;
        check_signature(c, errs);
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
    }
}

impl<'t> Cx<'t, '_> {
    /// Forward's differentiable inputs.
    fn differentiable(&self) -> Vec<&'t Ident> {
        self.inputs
            .iter()
            .filter(|i| i.differentiable)
            .map(|i| i.ident)
            .collect()
    }

    /// "`a`, `b`": the differentiable inputs, for messages.
    fn diff_names(&self) -> String {
        let names: Vec<String> = self
            .differentiable()
            .iter()
            .map(|i| format!("`{i}`"))
            .collect();
        names.join(", ")
    }

    /// What backward returns: `Tensor`, or a tuple of one per differentiable input.
    fn slot_suggestion(&self) -> String {
        match self.differentiable().len() {
            1 => "Tensor".to_string(),
            n => format!("({})", vec!["Tensor"; n].join(", ")),
        }
    }

    fn is_field(&self, ident: &Ident) -> bool {
        let fields = self.op.params.iter().flat_map(|p| &p.fields);
        fields.map(|f| f.ident).any(|f| f == ident)
    }

    /// Checks `&self` on forward or backward; true when it is one that reads the op's
    /// parameters.
    fn check_receiver(&self, r: &syn::Receiver, errs: &mut Errors) -> bool {
        let by_shared_ref =
            matches!(r.kind, ReceiverKind::Reference(_, _, None)) && r.mutability.is_none();
        if !by_shared_ref {
            errs.at(
                r,
                "the op's parameters are read through `&self`: write `&self`",
            );
            return false;
        }
        if !self.has_fields {
            errs.at(
                r,
                format!(
                    "`&self` reads the op's parameters, but this op has none: remove `&self`, or give the op a parameter \
                     struct in its module (e.g. `pub struct {} {{ pub factor: f64 }}`) and read `self.factor`",
                    self.struct_ident
                ),
            );
            return false;
        }
        true
    }

    /// An error for `self` in a function that does not take `&self`.
    fn reject_self_value(&self, f: &ItemFn, errs: &mut Errors) {
        let Some(at) = ast::self_value(f.block.to_token_stream()) else {
            return;
        };
        let name = &f.sig.ident;
        let msg = if self.has_fields {
            format!("`{name}` reads `self` but does not take it: write `pub fn {name}(&self, ..)`")
        } else {
            format!(
                "`self` is the op's parameter struct, and this op has none: give the op one in its module \
                 (e.g. `pub struct {} {{ pub factor: f64 }}`) and write `pub fn {name}(&self, ..)`",
                self.struct_ident
            )
        };
        errs.at(at, msg);
    }

    /// Checks `needs: [bool; N]`, N the number of differentiable inputs.
    fn check_needs(&self, ty: &Type, errs: &mut Errors) {
        let diff = self.differentiable().len();
        let ok = match ty {
            Type::Array(a) => {
                let n = match &a.len {
                    syn::Expr::Lit(syn::ExprLit {
                        lit: syn::Lit::Int(n),
                        ..
                    }) => n.base10_parse::<usize>().ok(),
                    _ => None,
                };
                if self.op.forward.is_some() && n != Some(diff) {
                    errs.at(
                        &a.len,
                        format!("`needs` has one flag per differentiable input ({}): write `[bool; {diff}]`", self.diff_names()),
                    );
                }
                ast::last_segment(&a.elem).is_some_and(|s| s.ident == "bool")
            }
            _ => false,
        };
        if !ok {
            errs.at(
                ty,
                format!("`needs` says which inputs need a gradient: write `needs: [bool; {diff}]`"),
            );
        }
    }

    /// The message for a name backward declares that refers to nothing.
    fn unknown_declared(&self, ident: &Ident) -> String {
        let names: Vec<String> = self
            .inputs
            .iter()
            .map(|i| format!("`{}`", i.ident))
            .collect();
        let mut known: Vec<String> = self.inputs.iter().map(|i| i.ident.to_string()).collect();
        known.extend(self.inputs.iter().map(|i| format!("{}_shape", i.ident)));
        known.extend(self.inputs.iter().map(|i| format!("{}_dtype", i.ident)));
        known.extend(RESERVED.iter().map(|r| r.to_string()));
        let hint = match closest(&ident.to_string(), known.iter().map(String::as_str)) {
            Some(c) => format!("did you mean `{c}`? "),
            None => String::new(),
        };
        format!(
            "backward parameter `{ident}` is not an input of forward: {hint}backward can declare forward's inputs \
             ({}), an input's shape (`<input>_shape: &Shape`) or dtype (`<input>_dtype: DType`), \
             `output` (the forward result), \
             `grad` (the output's gradient) and `needs` (which inputs need a gradient)",
            names.join(", ")
        )
    }

    /// What to write for a missing backward, as far as forward tells.
    fn backward_example(&self) -> String {
        let diff = self.differentiable();
        match (diff.len(), self.inputs.first()) {
            _ if self.op.forward.is_none() || diff.is_empty() => {
                "add `pub fn backward(grad: &Tensor, ..) -> Result<..>` returning one gradient per differentiable input".to_string()
            }
            (1, Some(x)) => format!(
                "add `pub fn backward(grad: &Tensor, {}: &Tensor) -> Result<Tensor>` returning the gradient of `{}` \
                 (declare only what it reads)",
                x.ident, x.ident
            ),
            _ => format!(
                "add `pub fn backward(grad: &Tensor, ..) -> Result<{}>` returning one gradient per \
                 differentiable input ({})",
                self.slot_suggestion(),
                self.diff_names()
            ),
        }
    }

    /// The error for a missing `forward` or `backward`, on the module's name or on a
    /// function whose name looks like a misspelling of it.
    fn missing_fn(&self, wanted: &str, fix: &str, errs: &mut Errors) {
        let op = self.op;
        if op.in_impl.iter().any(|n| n == wanted) {
            return; // reported on the impl block's function
        }
        let fns = op.others.iter().filter_map(|i| match i {
            syn::Item::Fn(f) => Some(&f.sig.ident),
            _ => None,
        });
        match fns
            .into_iter()
            .find(|f| closest(&f.to_string(), [wanted]).is_some())
        {
            Some(typo) => errs.at(
                typo,
                format!(
                    "op module `{}` has no `fn {wanted}`: rename `{typo}` to `{wanted}`",
                    op.ident
                ),
            ),
            None => errs.at(
                op.ident,
                format!("op module `{}` has no `fn {wanted}`: {fix}", op.ident),
            ),
        }
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use quote::quote;

    fn errors(item: proc_macro2::TokenStream) -> Vec<String> {
        let item = syn::parse2(item).unwrap();
        let op = Op::from_syn(&item).unwrap();
        match op.validate(&Args::default()) {
            Ok(_) => Vec::new(),
            Err(e) => e.into_iter().map(|e| e.to_string()).collect(),
        }
    }

    #[test]
    fn a_valid_op_has_no_errors() {
        let e = errors(quote! {
            mod scale {
                use super::*;
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
                use super::*;
                pub fn forward(x: &Tensor, #[nograd] i: &Tensor) -> Result<Tensor> { x }
                pub fn backward(grad: &Tensor) -> Result<Tensor> { grad }
            } },
            // a duplicate input still counts: no gradient-count error
            quote! { mod m {
                use super::*;
                pub fn forward(x: &Tensor, x: &Tensor) -> Result<Tensor> { x }
                pub fn backward(grad: &Tensor) -> Result<(Tensor, Tensor)> { grad }
            } },
            // without forward, backward's inputs are not reported as unknown
            quote! { mod m {
                use super::*;
                pub fn backward(grad: &Tensor, x: &Tensor, needs: [bool; 1]) -> Result<Tensor> { grad * x }
            } },
            // forward in an impl block: not reported missing as well
            quote! { mod m {
                use super::*;
                pub struct M { pub k: f64 }
                impl M { pub fn forward(&self, x: &Tensor) -> Result<Tensor> { x } }
                pub fn backward(grad: &Tensor) -> Result<Tensor> { grad }
            } },
            // forward reads `self` without taking it: not also reported as ignoring
            // the parameters
            quote! { mod m {
                use super::*;
                pub struct M { pub k: f64 }
                pub fn forward(x: &Tensor) -> Result<Tensor> { x * self.k }
                pub fn backward(&self, grad: &Tensor) -> Result<Tensor> { grad * self.k }
            } },
            // a tuple struct: `&self` is not reported as well
            quote! { mod m {
                use super::*;
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

    /// An op with parameters whose forward lacks `&self` is an error, even where
    /// backward reads them; without fields (or with `&self`) it is not.
    #[test]
    fn forward_without_self_in_an_op_with_parameters_is_an_error() {
        let e = errors(quote! { mod scale {
            use super::*;
            pub struct Scale { pub factor: f64, pub bias: f64 }
            pub fn forward(x: &Tensor) -> Result<Tensor> { x * 2.0 }
            pub fn backward(&self, grad: &Tensor) -> Result<Tensor> { grad * self.factor }
        } });
        assert_eq!(e.len(), 1, "{e:#?}");
        assert!(
            e[0].contains("(`factor`, `bias`) that `scale(x, factor, bias)` is given")
                && e[0].contains("write `pub fn forward(&self, ..)`"),
            "{e:?}"
        );
        let fine = [
            quote! { mod m {
                use super::*;
                pub struct M;
                pub fn forward(x: &Tensor) -> Result<Tensor> { x * 2.0 }
                pub fn backward(grad: &Tensor) -> Result<Tensor> { grad * 2.0 }
            } },
            quote! { mod m {
                use super::*;
                pub struct M { pub k: f64 }
                pub fn forward(&self, x: &Tensor) -> Result<Tensor> { x * 2.0 }
                pub fn backward(&self, grad: &Tensor) -> Result<Tensor> { grad * self.k }
            } },
        ];
        for case in fine {
            let e = errors(case.clone());
            assert!(e.is_empty(), "{case}\n{e:#?}");
        }
    }

    #[test]
    fn unknown_backward_parameters_get_a_suggestion() {
        let e = errors(quote! { mod m {
                use super::*;
            pub fn forward(input: &Tensor) -> Result<Tensor> { input }
            pub fn backward(grad: &Tensor, inptu_shape: &Shape) -> Result<Tensor> { g(grad, inptu_shape) }
        } });
        assert!(e[0].contains("did you mean `input_shape`?"), "{e:?}");
    }

    /// A module that imports nothing bringing `Tensor` gets one error saying so;
    /// any `use` that may bring it (a glob, a `use` naming it) is trusted.
    #[test]
    fn a_module_without_the_prelude_is_one_error() {
        let e = errors(quote! { mod m {
            pub fn forward(x: &Tensor) -> Result<Tensor> { x }
            pub fn backward(grad: &Tensor) -> Result<Tensor> { grad }
        } });
        assert_eq!(e.len(), 1, "{e:#?}");
        assert!(
            e[0].contains("add `use autograd::prelude::*;` inside `mod m`"),
            "{e:?}"
        );
        let imports = [
            quote!(
                use super::*;
            ),
            quote!(
                use autograd::prelude::*;
            ),
            quote!(
                use autograd::{Result, Tensor};
            ),
            quote!(
                use my::{
                    other::{T as Tensor},
                };
            ),
            quote!(
                type Tensor = autograd::Tensor;
            ),
            quote!(my_imports!();),
        ];
        for import in imports {
            let e = errors(quote! { mod m {
                #import
                pub fn forward(x: &Tensor) -> Result<Tensor> { x }
                pub fn backward(grad: &Tensor) -> Result<Tensor> { grad }
            } });
            assert!(e.is_empty(), "{import}: {e:?}");
        }
        // Paths need no import.
        let e = errors(quote! { mod m {
            pub fn forward(x: &autograd::Tensor) -> autograd::Result<::autograd::Tensor> { x }
            pub fn backward(grad: &autograd::Tensor) -> autograd::Result<autograd::Tensor> { grad }
        } });
        assert!(e.is_empty(), "{e:?}");
        // Imports that cannot bring `Tensor` do not count.
        let e = errors(quote! { mod m {
            use autograd::{Shape, compute};
            pub fn forward(x: &Tensor) -> autograd::Result<Tensor> { x }
            pub fn backward(grad: &Tensor) -> autograd::Result<Tensor> { grad }
        } });
        assert_eq!(e.len(), 1, "{e:#?}");
    }

    #[test]
    fn the_prelude_error_names_the_crate_path() {
        let item = syn::parse2(quote! { mod m {
            pub fn forward(x: &Tensor) -> Result<Tensor> { x }
            pub fn backward(grad: &Tensor) -> Result<Tensor> { grad }
        } })
        .unwrap();
        let op = Op::from_syn(&item).unwrap();
        let (args, _) = crate::attr::parse(quote!(crate = crate::framework));
        let e = op.prelude_error(&args).expect("an error").to_string();
        assert!(e.contains("add `use crate::framework::prelude::*;`"), "{e}");
    }
}
