//! Ops whose forward is a scalar function: `#[elementwise] pub fn forward(x: f32) ->
//! f32 { .. }`. Checked by `valid` (the body parsed into the `ir` tree), then
//! expanded here from the checked tree: the function generic over `Real` (printed
//! by `rust`), the kernel (`ElementwiseKernel`: value and derivatives of order 1
//! to 3 by nested dual numbers), the CUDA source (printed by `cuda`), the op's
//! `Differentiable` impl with the generated backward, its registry entry and its
//! derivative op's entry, the typed function and the method.

mod cuda;
mod rust;

use crate::attr::Args;
use crate::ir;
use crate::util::crate_path;
use crate::valid::{Scalar, ScalarBackward, Valid};
use proc_macro2::TokenStream;
use quote::{format_ident, quote};
use syn::Ident;

/// A checked function printed: its body in Rust (generic over `R`) and in CUDA
/// C++ (statements ending with `return ..;`), and the fields it reads.
struct Translated {
    rust: TokenStream,
    cuda: String,
    fields: Vec<Ident>,
}

impl Translated {
    fn of(f: &ir::Function) -> Self {
        Translated {
            rust: rust::block(&f.body),
            cuda: cuda::function(&f.body),
            fields: f.fields.clone(),
        }
    }
}

/// An explicit elementwise backward printed: its parameters, its body in Rust
/// (returning `R` or a tuple of `R`s), its CUDA `let`s and each gradient's CUDA
/// expression, and the fields it reads.
struct PrintedBackward {
    params: Vec<Ident>,
    body: TranslatedBackward,
}

struct TranslatedBackward {
    rust: TokenStream,
    cuda_lets: String,
    cuda_values: Vec<String>,
    fields: Vec<Ident>,
}

impl PrintedBackward {
    fn of(b: &ScalarBackward) -> Self {
        PrintedBackward {
            params: b.params.clone(),
            body: TranslatedBackward {
                rust: rust::block(&b.body.body),
                cuda_lets: cuda::lets(&b.body.body),
                cuda_values: cuda::values(&b.body.body),
                fields: b.body.fields.clone(),
            },
        }
    }
}

/// The items of a valid elementwise op, after the shared ones of its module
/// (`util::op_module`): the kernel, the gradient ops of a backward that runs apart,
/// and the op's `Differentiable` impl and registry entry.
pub(crate) fn expand(v: &Valid<'_, '_>, scalar: &Scalar, args: &Args) -> TokenStream {
    let krate = crate_path(args);
    let p = quote!(#krate::__private);
    let s = &v.struct_ident;
    let name = v.name.as_str();
    let input_idents: Vec<&Ident> = v.inputs.iter().map(|(i, _)| *i).collect();
    let field_idents: Vec<&Ident> =
        v.op.params
            .iter()
            .flat_map(|p| &p.fields)
            .map(|f| f.ident)
            .collect();

    // A backward reading `output` runs as ops of its own; the op's kernel then
    // derives its derivatives from the function alone.
    let body = Translated::of(&scalar.body);
    let backward = scalar
        .backward
        .as_ref()
        .map(|b| (b.runs_apart(&v.inputs), PrintedBackward::of(b)));
    let from_output = backward.as_ref().filter(|b| b.0).map(|b| &b.1);
    let in_kernel = backward.as_ref().filter(|b| !b.0).map(|b| &b.1);
    let inputs_owned: Vec<Ident> = input_idents.iter().map(|i| (*i).clone()).collect();
    let (grad_ops, appended) = from_output.map(|b| gradient_ops(&p, v, b)).unzip();
    let (kernel, _) = kernel_items(&Kernel {
        p: &p,
        s: quote!(#s),
        name,
        inputs: &inputs_owned,
        differentiable: v.inputs.iter().map(|(_, d)| *d).collect(),
        body: &body,
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
    let check = match v.op.check_cases {
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
        #kernel
        #grad_ops
        #registration
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
fn gradient_ops(p: &TokenStream, v: &Valid<'_, '_>, b: &PrintedBackward) -> (TokenStream, String) {
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
    backward: Option<&'x PrintedBackward>,
    /// The names of the op's parameters (its struct's fields).
    params: Vec<String>,
    /// The CUDA program the kernel's entry points are in: its own (`CUDA_SOURCE`,
    /// holding these CUDA sources after its own), or, for a gradient op, its op's
    /// (`super::CUDA_SOURCE`, compiled once for both under the op's path).
    program: Program,
}

impl Kernel<'_> {
    /// The positions of the differentiable inputs.
    fn differentiable_positions(&self) -> Vec<usize> {
        let d = self.differentiable.iter().enumerate();
        d.filter(|(_, d)| **d).map(|(k, _)| k).collect()
    }
}

/// Where a kernel's CUDA entry points are compiled (see [`Kernel::program`]).
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
    let imports = rust::imports(p);
    let scalar_fn = quote! {
        #[inline(always)]
        #[allow(unused_parens, unused_variables, unused_braces, non_snake_case, clippy::all)]
        fn __elementwise<R: __Real>(__op: &#s, #(#inputs: R),*) -> R #rust_body
    };

    let eval = eval_fns(k);

    let backward_fns = backward_fns(k);
    let diff = k.differentiable_positions();
    let mut fields_used: Vec<Ident> = body.fields.clone();
    for f in backward.iter().flat_map(|b| &b.body.fields) {
        if !fields_used.contains(f) {
            fields_used.push(f.clone());
        }
    }
    let cuda_backward = backward.map(|b| cuda::CudaBackward {
        lets: &b.body.cuda_lets,
        values: &b.body.cuda_values,
        inputs: diff.clone(),
    });
    let slots = 0..fields_used.len();
    let cuda = cuda::cuda_source(name, inputs, &fields_used, &body.cuda, cuda_backward);
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

/// `eval` and `eval_pair` of the `ElementwiseKernel` impl: the value, and the
/// derivatives by nested dual numbers (of the function itself, or, with an
/// explicit backward, of its gradients).
fn eval_fns(k: &Kernel<'_>) -> TokenStream {
    let Kernel {
        p,
        inputs,
        backward,
        ..
    } = k;
    let n = inputs.len();
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

    eval
}

/// An explicit backward evaluated in the kernel: as written (generic), and the
/// gradient of input `a` picked out of it.
fn backward_fns(k: &Kernel<'_>) -> Option<TokenStream> {
    let Kernel {
        s,
        inputs,
        backward,
        ..
    } = k;
    let diff = k.differentiable_positions();
    backward.map(|b| {
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
    })
}
