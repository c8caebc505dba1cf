//! Ops whose forward is a scalar function: `#[elementwise] pub fn forward(x: f32) ->
//! f32 { .. }`. Checked here (the signature, then the body by `translate`), then
//! expanded: the function generic over `Real`, the kernel (`ElementwiseKernel`:
//! value and derivatives of order 1 to 3 by nested dual numbers), the CUDA source,
//! the op's `Differentiable` impl with the generated backward, its registry entry
//! and its derivative op's entry, the typed function and the method.

mod translate;

use crate::ast::{ForwardParam, Op};
use crate::attr::Args;
use crate::expand::{crate_path, typed_fn_and_method, unit_struct};
use crate::valid::{Errors, check_signature, struct_ident};
use proc_macro2::TokenStream;
use quote::{ToTokens, format_ident, quote};
use syn::{Ident, ReceiverKind};
pub(crate) use translate::{MAX_INPUTS, Translated, TranslatedBackward, is_scalar_type};

/// Most parameters an elementwise op's function reads (its CUDA kernels take four).
const MAX_PARAMS: usize = 4;

/// An elementwise op that passed every check.
pub(crate) struct Valid<'t, 'a> {
    pub op: &'t Op<'a>,
    /// The inputs, in order, and whether each is differentiable.
    pub inputs: Vec<(&'t Ident, bool)>,
    pub name: String,
    pub struct_ident: Ident,
    pub body: Translated,
    /// An explicit `#[elementwise]` backward, if written.
    pub backward: Option<ValidBackward>,
}

/// An explicit elementwise backward: its parameters (forward's inputs, `output`
/// and `grad`, as declared) and its translation.
pub(crate) struct ValidBackward {
    pub params: Vec<Ident>,
    pub body: TranslatedBackward,
}

impl ValidBackward {
    /// Whether it runs as ops of its own (one per differentiable input, see
    /// [`gradient_ops`]) on what it reads: when it reads the forward's result, or
    /// leaves some input unread. The graph then saves exactly what it names (the
    /// output, those inputs). Otherwise it is evaluated inside the op's kernel,
    /// which reads every input.
    fn runs_apart(&self, inputs: &[(&Ident, bool)]) -> bool {
        self.params.iter().any(|p| p == "output")
            || inputs
                .iter()
                .any(|(i, _)| !self.params.iter().any(|p| p == *i))
    }
}

/// Checks an explicit `#[elementwise] fn backward(x: f32, grad: f32) -> f32`.
fn validate_backward(
    b: &crate::ast::Backward<'_>,
    inputs: &[(&Ident, bool)],
    has_fields: bool,
    errs: &mut Errors,
) -> Option<ValidBackward> {
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
    let body = match translate::translate_backward(&f.block, &params, outputs) {
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
    ok.then_some(ValidBackward { params, body })
}

/// Checks that an elementwise backward reads `grad`: it returns gradients, `grad`
/// times the derivative, and one that never reads `grad` returns the derivative
/// alone (wrong for any output gradient but ones). The error is on `grad` when
/// declared and unread, else on the function's name. True when it reads it.
fn reads_grad(
    f: &syn::ItemFn,
    params: &[Ident],
    inputs: &[(&Ident, bool)],
    outputs: usize,
    errs: &mut Errors,
) -> bool {
    let declared = params.iter().find(|p| *p == "grad");
    if declared.is_some() && crate::ast::mentions(f.block.to_token_stream(), "grad") {
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

/// Checks an op whose forward is marked `#[elementwise]`.
pub(crate) fn validate<'t, 'a>(op: &'t Op<'a>, args: &Args) -> syn::Result<Valid<'t, 'a>> {
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
        && b.elementwise.is_none()
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
    crate::valid::reject_params_ignored(op, forward, &mut errs);
    let mut inputs: Vec<(&Ident, bool)> = Vec::new();
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
        Some(b) if b.elementwise.is_some() && !inputs.is_empty() => {
            validate_backward(b, &inputs, has_fields, &mut errs)
        }
        _ => None,
    };
    let idents: Vec<Ident> = inputs.iter().map(|(i, _)| (*i).clone()).collect();
    let body = translate::translate(&f.block, &idents);
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
    errs.finish()?;
    let Some(body) = body else {
        return Err(syn::Error::new_spanned(f, "elementwise body"));
    };
    let name = args
        .name
        .as_ref()
        .map_or_else(|| op.default_name(), |n| n.value());
    Ok(Valid {
        op,
        inputs,
        name,
        struct_ident: s,
        body,
        backward,
    })
}

/// The generated code of a valid elementwise op.
pub(crate) fn expand(v: &Valid<'_, '_>, args: &Args) -> TokenStream {
    let krate = crate_path(args);
    let p = quote!(#krate::__private);
    let Op {
        attrs,
        vis,
        ident,
        others,
        ..
    } = v.op;
    let s = &v.struct_ident;
    let name = v.name.as_str();
    let input_idents: Vec<&Ident> = v.inputs.iter().map(|(i, _)| *i).collect();
    let fields: Vec<_> = v.op.params.iter().flat_map(|p| &p.fields).collect();
    let field_idents: Vec<&Ident> = fields.iter().map(|f| f.ident).collect();
    let field_types: Vec<&syn::Type> = fields.iter().map(|f| f.ty).collect();

    // The op struct: the user's parameter struct (it must be `Clone`: the backward
    // keeps a copy in its derivative op), or a unit struct.
    let struct_item = match &v.op.params {
        Some(def) => {
            let def = def.original;
            let derives_clone = def
                .attrs
                .iter()
                .any(|a| a.path().is_ident("derive") && quote!(#a).to_string().contains("Clone"));
            let clone = (!derives_clone).then(|| quote!(#[derive(Clone)]));
            quote!(#clone #def)
        }
        None => unit_struct(name, s),
    };
    let check_cases = v.op.check_cases.as_ref().map(|c| c.original);
    let (typed_fn, method_item) = typed_fn_and_method(
        &p,
        s,
        ident,
        name,
        attrs,
        &input_idents,
        &field_idents,
        &field_types,
        args,
    );

    // A backward reading `output` runs as ops of its own; the op's kernel then
    // derives its derivatives from the function alone.
    let from_output = v.backward.as_ref().filter(|b| b.runs_apart(&v.inputs));
    let in_kernel = v.backward.as_ref().filter(|b| !b.runs_apart(&v.inputs));
    let inputs_owned: Vec<Ident> = input_idents.iter().map(|i| (*i).clone()).collect();
    let (grad_ops, appended) = from_output.map(|b| gradient_ops(&p, v, b)).unzip();
    let (kernel, _) = kernel_items(&Kernel {
        p: &p,
        s: quote!(#s),
        name,
        inputs: &inputs_owned,
        differentiable: v.inputs.iter().map(|(_, d)| *d).collect(),
        body: &v.body,
        backward: in_kernel,
        params: field_idents.iter().map(|f| f.to_string()).collect(),
        program: Program::Own {
            appended: appended.unwrap_or_default(),
        },
    });

    let (backward_call, saves_output) = match from_output {
        None => (quote!(#p::elementwise::backward(self, ctx)), false),
        Some(b) => {
            // The backward's values in its parameters' order, then one gradient op
            // per differentiable input.
            let operands = b.params.iter().map(|q| {
                if q == "grad" {
                    quote!(ctx.grad()?)
                } else if q == "output" {
                    quote!(ctx.output()?)
                } else {
                    let k = v.inputs.iter().position(|(i, _)| *i == q).unwrap_or(0);
                    quote!(ctx.input(#k)?)
                }
            });
            let m = b.params.len();
            let per_input = v.inputs.iter().enumerate().map(|(k, (i, d))| {
                if *d {
                    let module = gradient_module(i);
                    quote! {
                        grads.push(if ctx.needs(#k) {
                            ::core::option::Option::Some(#p::apply(#module::Grad(self.clone()), &operands)?)
                        } else {
                            ::core::option::Option::None
                        });
                    }
                } else {
                    quote!(grads.push(::core::option::Option::None);)
                }
            });
            (
                quote! {{
                    let operands: [&#p::Tensor; #m] = [#(#operands),*];
                    let mut grads = #p::Grads::new();
                    #(#per_input)*
                    ::core::result::Result::Ok(grads)
                }},
                b.params.iter().any(|q| q == "output"),
            )
        }
    };
    let specs = v.inputs.iter().map(|(i, d)| {
        let iname = i.to_string();
        let saved = from_output.is_none_or(|b| b.params.iter().any(|q| q == *i));
        quote!(#p::InputSpec { name: #iname, differentiable: #d, saved: #saved })
    });
    let param_names = field_idents.iter().map(|f| f.to_string());
    let check = match check_cases {
        Some(_) => quote!(::core::option::Option::Some(check_cases)),
        None => quote!(::core::option::Option::None),
    };
    let registration = differentiable_impl(&OpImpl {
        p: &p,
        ty: quote!(#s),
        name,
        specs: specs.collect(),
        saves_output,
        params: param_names.collect(),
        check,
        cuda_source: quote!(CUDA_SOURCE),
        backward: backward_call,
        register: true,
    });

    quote! {
        #(#attrs)*
        #vis mod #ident {
            #(#others)*
            #struct_item
            #check_cases
            #typed_fn
            #method_item
            #kernel
            #grad_ops
            #registration
        }
        #vis use self::#ident::#ident;
    }
}

/// What [`differentiable_impl`] generates: a generated op's `Differentiable` impl
/// and its static registry entry.
struct OpImpl<'x> {
    p: &'x TokenStream,
    /// The type implementing the op.
    ty: TokenStream,
    /// The op's short name.
    name: &'x str,
    /// The entry's `InputSpec`s.
    specs: Vec<TokenStream>,
    saves_output: bool,
    params: Vec<String>,
    /// The entry's `check_cases` (an `Option`).
    check: TokenStream,
    /// The entry's CUDA program (a `&'static str` expression).
    cuda_source: TokenStream,
    /// The body of `backward(&self, ctx)`.
    backward: TokenStream,
    /// True to submit the entry to the registry (a hidden gradient op is not).
    register: bool,
}

/// The `Differentiable` impl of an elementwise op (its forward runs the generated
/// kernel) and its static entry, inside an anonymous `const` block: the same for
/// an op and for the gradient ops of its backward.
fn differentiable_impl(o: &OpImpl<'_>) -> TokenStream {
    let OpImpl {
        p,
        ty,
        name,
        specs,
        saves_output,
        params,
        check,
        cuda_source,
        backward,
        register,
    } = o;
    let entry = format_ident!("__AUTOGRAD_OP_ENTRY");
    let submit = register.then(|| quote!(#p::inventory::submit! { #p::Registration(&#entry) }));
    quote! {
        const _: () = {
            #[automatically_derived]
            impl #p::Differentiable for #ty {
                const ENTRY: &'static #p::OpEntry = &#entry;

                fn forward(&self, inputs: &[&#p::Tensor]) -> #p::Result<#p::Tensor> {
                    #p::elementwise::run(self, #p::elementwise::Eval::Value, inputs)
                }

                fn backward(&self, ctx: &mut #p::BackwardContext<'_>) -> #p::Result<#p::Grads> {
                    #backward
                }
            }

            static #entry: #p::OpEntry = #p::OpEntry {
                name: #name,
                module_path: ::core::module_path!(),
                inputs: &[#(#specs),*],
                saves_output: #saves_output,
                params: &[#(#params),*],
                check_cases: #check,
                cuda_source: ::core::option::Option::Some(#cuda_source),
            };

            #submit
        };
    }
}

/// The module of the op computing input `input`'s gradient from a backward that
/// reads `output`.
fn gradient_module(input: &Ident) -> Ident {
    format_ident!("__gradient_{}", input)
}

/// The gradient ops of a backward that reads `output`: for each differentiable
/// input, an elementwise op (hidden, unregistered) whose function is that input's
/// gradient as the backward writes it, of the values the backward reads. Its
/// struct wraps the op's (so it reads the same parameters); being an elementwise
/// op itself, it is differentiable (by dual numbers), and with the output
/// reconnected to its node under `create_graph`, gradients of gradients flow
/// through it to the inputs.
fn gradient_ops(p: &TokenStream, v: &Valid<'_, '_>, b: &ValidBackward) -> (TokenStream, String) {
    let s = &v.struct_ident;
    let diff: Vec<&Ident> = v
        .inputs
        .iter()
        .filter(|(_, d)| *d)
        .map(|(i, _)| *i)
        .collect();
    let several = diff.len() > 1;
    let mut cuda = String::new();
    let params: Vec<String> =
        v.op.params
            .iter()
            .flat_map(|p| &p.fields)
            .map(|f| f.ident.to_string())
            .collect();
    let mods = diff.iter().enumerate().map(|(slot, input)| {
        let module = gradient_module(input);
        let rust = &b.body.rust;
        let rust = if several {
            let k = syn::Index::from(slot);
            quote!({ let __gradients = #rust; __gradients.#k })
        } else {
            rust.clone()
        };
        let cuda_value = b.body.cuda_values.get(slot).cloned().unwrap_or_default();
        let body = Translated {
            rust,
            cuda: format!("{}return {cuda_value};", b.body.cuda_lets),
            fields: b.body.fields.clone(),
        };
        let name = format!("{}__gradient_{input}", v.name);
        let label = if several {
            format!("{}' ({input})", v.name)
        } else {
            format!("{}'", v.name)
        };
        let doc = format!(
            "The gradient of `{}` for `{input}`, as its backward writes it.",
            v.name
        );
        let (kernel, kernel_cuda) = kernel_items(&Kernel {
            p,
            s: quote!(Grad),
            name: &name,
            inputs: &b.params,
            differentiable: vec![true; b.params.len()],
            body: &body,
            backward: None,
            params: params.clone(),
            program: Program::Parents,
        });
        cuda.push_str(&kernel_cuda);
        let specs = b.params.iter().map(|q| {
            let q = q.to_string();
            quote!(#p::InputSpec { name: #q, differentiable: true, saved: true })
        });
        let registration = differentiable_impl(&OpImpl {
            p,
            ty: quote!(Grad),
            name: &label,
            specs: specs.collect(),
            saves_output: false,
            params: params.clone(),
            check: quote!(::core::option::Option::None),
            cuda_source: quote!(super::CUDA_SOURCE),
            backward: quote!(#p::elementwise::backward(self, ctx)),
            register: false,
        });
        quote! {
            #[doc = #doc]
            #[doc(hidden)]
            pub mod #module {
                /// The op's parameters, read through `Deref`.
                #[derive(Clone)]
                pub struct Grad(pub(super) super::#s);

                impl ::core::ops::Deref for Grad {
                    type Target = super::#s;
                    fn deref(&self) -> &super::#s {
                        &self.0
                    }
                }

                #kernel
                #registration
            }
        }
    });
    let mods: Vec<TokenStream> = mods.collect();
    (quote!(#(#mods)*), cuda)
}

/// What [`kernel_items`] generates the kernel of.
struct Kernel<'x> {
    p: &'x TokenStream,
    /// The type implementing the kernel.
    s: TokenStream,
    /// The kernel's name (its CUDA entry points are `<name>_f32`, `<name>_f64`).
    name: &'x str,
    inputs: &'x [Ident],
    differentiable: Vec<bool>,
    body: &'x Translated,
    /// An explicit backward of the inputs and `grad`, evaluated inside the kernel.
    backward: Option<&'x ValidBackward>,
    /// The names of the op's parameters (its struct's fields).
    params: Vec<String>,
    /// The CUDA program the kernel's entry points are in: its own (`CUDA_SOURCE`,
    /// holding these CUDA sources after its own), or, for a gradient op, its op's
    /// (`super::CUDA_SOURCE`, compiled once for both under the op's path).
    program: Program,
}

enum Program {
    Own { appended: String },
    Parents,
}

/// The function generic over `Real`, the CUDA source (`CUDA_SOURCE`), the
/// `ElementwiseKernel` and `ElementwiseOp` impls and the derivative op's entry:
/// the items a generated op's module holds besides its `Differentiable` impl.
fn kernel_items(k: &Kernel<'_>) -> (TokenStream, String) {
    let Kernel {
        p,
        s,
        name,
        inputs,
        body,
        backward,
        ..
    } = k;
    let n = inputs.len();

    // The function, generic over the number type.
    let rust_body = &body.rust;
    let imports = translate::imports(p);
    let scalar_fn = quote! {
        #[inline(always)]
        #[allow(unused_parens, unused_variables, unused_braces, non_snake_case, clippy::all)]
        fn __elementwise<R: __Real>(__op: &#s, #(#inputs: R),*) -> R #rust_body
    };

    // The kernel: the value, and derivatives by nested dual numbers.
    let map_value = format_ident!("map{}", n);
    let map_deriv = format_ident!("map{}", n + 1);
    let xs: Vec<Ident> = (0..n).map(|k| format_ident!("__x{}", k)).collect();
    let ks: Vec<usize> = (0..n).collect();
    // The derivatives: of the function itself by nested duals, or, with an
    // explicit backward, its gradients (and their derivatives by duals).
    let derivatives = match backward {
        None => quote! {
            Eval::Derivative(&[a]) => loops::#map_deriv(ins, out, #[inline(always)] |[#(#xs,)* g]| {
                g * __elementwise(self, #(seed1(#xs, a == #ks)),*).d
            }),
            Eval::Derivative(&[a, b]) => loops::#map_deriv(ins, out, #[inline(always)] |[#(#xs,)* g]| {
                g * __elementwise(self, #(seed2(#xs, a == #ks, b == #ks)),*).d.d
            }),
            Eval::Derivative(&[a, b, c]) => loops::#map_deriv(ins, out, #[inline(always)] |[#(#xs,)* g]| {
                g * __elementwise(self, #(seed3(#xs, a == #ks, b == #ks, c == #ks)),*).d.d.d
            }),
        },
        Some(_) => quote! {
            Eval::Derivative(&[a]) => loops::#map_deriv(ins, out, #[inline(always)] |[#(#xs,)* g]| {
                __gradient::<T>(self, a, #(#xs,)* g)
            }),
            Eval::Derivative(&[a, b]) => loops::#map_deriv(ins, out, #[inline(always)] |[#(#xs,)* g]| {
                __gradient(self, a, #(seed1(#xs, b == #ks),)* Dual::constant(g)).d
            }),
            Eval::Derivative(&[a, b, c]) => loops::#map_deriv(ins, out, #[inline(always)] |[#(#xs,)* g]| {
                __gradient(self, a, #(seed2(#xs, b == #ks, c == #ks),)* Dual::constant(Dual::constant(g))).d.d
            }),
        },
    };
    // The value and a first derivative in one loop (the fused CPU chains use it
    // where both are computed; the compiler computes their common parts once).
    let map_pair = format_ident!("pair{}", n + 1);
    let first = match backward {
        None => quote!(g * __elementwise(self, #(seed1(#xs, a == #ks)),*).d),
        Some(_) => quote!(__gradient::<T>(self, a, #(#xs,)* g)),
    };
    let eval = quote! {
        fn eval_pair<T: #p::elementwise::Real + #p::Element>(
            &self,
            a: usize,
            ins: &[&[T]],
            value: &mut ::std::vec::Vec<T>,
            deriv: &mut ::std::vec::Vec<T>,
        ) -> bool {
            #[allow(unused_imports)]
            use #p::elementwise::{Dual, loops, seed1};
            loops::#map_pair(ins, value, deriv, #[inline(always)] |[#(#xs,)* g]| {
                (__elementwise::<T>(self, #(#xs),*), #first)
            });
            true
        }

        fn eval<T: #p::elementwise::Real + #p::Element>(
            &self,
            what: #p::elementwise::Eval<'_>,
            ins: &[&[T]],
            out: &mut ::std::vec::Vec<T>,
        ) {
            #[allow(unused_imports)]
            use #p::elementwise::{Dual, Eval, loops, seed1, seed2, seed3};
            match what {
                Eval::Value => loops::#map_value(ins, out, #[inline(always)] |[#(#xs),*]| __elementwise::<T>(self, #(#xs),*)),
                #derivatives
                // Refused by the caller's check.
                Eval::Derivative(_) => {}
            }
        }
    };

    // An explicit backward: as written (generic), and the gradient of input `a`
    // picked out of it.
    let diff: Vec<usize> = k
        .differentiable
        .iter()
        .enumerate()
        .filter(|(_, d)| **d)
        .map(|(k, _)| k)
        .collect();
    let backward_fns = backward.map(|b| {
        let params = &b.params;
        let body = &b.body.rust;
        let ret = if diff.len() == 1 {
            quote!(R)
        } else {
            let rs = diff.iter().map(|_| quote!(R));
            quote!((#(#rs),*))
        };
        let args = params
            .iter()
            .map(|p| if p == "grad" { quote!(__g) } else { quote!(#p) });
        let picks = diff.iter().enumerate().map(|(slot, k)| {
            if diff.len() == 1 {
                quote!(#k => __out,)
            } else {
                let i = syn::Index::from(slot);
                quote!(#k => __out.#i,)
            }
        });
        quote! {
            #[inline(always)]
            #[allow(unused_parens, unused_variables, unused_braces, non_snake_case, clippy::all)]
            fn __elementwise_backward<R: __Real>(__op: &#s, #(#params: R),*) -> #ret #body

            /// `grad · ∂f/∂x_a`, from the explicit backward.
            #[inline(always)]
            #[allow(unused_variables, non_snake_case, clippy::all)]
            fn __gradient<R: __Real>(__op: &#s, __a: usize, #(#inputs: R,)* __g: R) -> R {
                let __out = __elementwise_backward::<R>(__op, #(#args),*);
                match __a {
                    #(#picks)*
                    _ => <R as __Real>::lit(0.0),
                }
            }
        }
    });

    let mut fields_used: Vec<Ident> = body.fields.clone();
    for f in backward.iter().flat_map(|b| &b.body.fields) {
        if !fields_used.contains(f) {
            fields_used.push(f.clone());
        }
    }
    let cuda_backward = backward.map(|b| translate::CudaBackward {
        lets: &b.body.cuda_lets,
        values: &b.body.cuda_values,
        inputs: diff.clone(),
    });
    let slots = 0..fields_used.len();
    let cuda = translate::cuda_source(name, inputs, &fields_used, &body.cuda, cuda_backward);
    let (source_item, source, program) = match &k.program {
        Program::Own { appended } => {
            let doc = format!(
                "The CUDA C++ of the `{name}` op's kernels (after `elementwise::CUDA_PRELUDE`)."
            );
            let text = format!("{cuda}{appended}");
            (
                quote! {
                    #[doc = #doc]
                    pub const CUDA_SOURCE: &str = #text;
                },
                quote!(CUDA_SOURCE),
                // The op's module: its path tells this definition from any other
                // op of the same name (another crate's `gelu`).
                quote!(::core::module_path!()),
            )
        }
        Program::Parents => (
            quote!(),
            quote!(super::CUDA_SOURCE),
            quote!(#p::elementwise::ElementwiseKernel::program(&self.0)),
        ),
    };
    let deriv_specs = inputs.iter().zip(&k.differentiable).map(|(i, d)| {
        let iname = i.to_string();
        quote!(#p::InputSpec { name: #iname, differentiable: #d, saved: true })
    });
    let deriv_name = format!("{name}'");
    let params = &k.params;
    let deriv_entry = format_ident!("__AUTOGRAD_DERIVATIVE_ENTRY");

    let items = quote! {
        #source_item

        #imports
        #scalar_fn
        #backward_fns

        const _: () = {
            #[automatically_derived]
            impl #p::elementwise::ElementwiseKernel for #s {
                fn name(&self) -> &'static str {
                    #name
                }
                fn arity(&self) -> usize {
                    #n
                }
                fn cuda_source(&self) -> &'static str {
                    #source
                }
                fn program(&self) -> &'static str {
                    #program
                }
                fn cuda_params(&self) -> [f64; #p::elementwise::MAX_PARAMS] {
                    #[allow(unused_mut)]
                    let mut p = [0.0; #p::elementwise::MAX_PARAMS];
                    #(p[#slots] = self.#fields_used as f64;)*
                    p
                }
                #eval
            }

            #[automatically_derived]
            impl #p::elementwise::ElementwiseOp for #s {
                const DERIVATIVE_ENTRY: &'static #p::OpEntry = &#deriv_entry;
            }

            static #deriv_entry: #p::OpEntry = #p::OpEntry {
                name: #deriv_name,
                module_path: ::core::module_path!(),
                inputs: &[#(#deriv_specs,)* #p::InputSpec { name: "grad", differentiable: true, saved: true }],
                saves_output: false,
                params: &[#(#params),*],
                check_cases: ::core::option::Option::None,
                cuda_source: ::core::option::Option::Some(#source),
            };
        };
    };
    (items, cuda)
}
