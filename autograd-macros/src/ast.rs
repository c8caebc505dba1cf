//! The op module as a typed tree whose nodes borrow their syn nodes: the op
//! ([`Op`]), its parameter struct ([`Params`]), `forward` and its tensor inputs
//! ([`Forward`], [`Input`]), `backward` and what it declares ([`Backward`],
//! [`Declared`]), the check cases, and the rest of the module. Taking the module
//! apart only sorts its items; every check is in `valid`, one per node.

use proc_macro2::{TokenStream, TokenTree};
use quote::ToTokens;
use syn::spanned::Spanned;
use syn::{
    Attribute, FnArg, Ident, Item, ItemFn, ItemMod, ItemStruct, Pat, PatType, Receiver, Type,
    UseTree, Visibility,
};

/// The item under `#[differentiable]`: an inline module, taken apart.
pub(crate) struct Op<'a> {
    pub attrs: &'a [Attribute],
    pub vis: &'a Visibility,
    pub ident: &'a Ident,
    /// Items of the module that are not part of the op contract, kept verbatim.
    pub others: Vec<&'a Item>,
    pub params: Option<Params<'a>>,
    pub forward: Option<Forward<'a>>,
    pub backward: Option<Backward<'a>>,
    pub check_cases: Option<CheckCases<'a>>,
    /// `forward` / `backward` found inside an impl block (already reported there).
    pub in_impl: Vec<String>,
    /// Whether the module's own items may bring `Tensor` into scope: a glob `use`,
    /// a `use` naming `Tensor`, an item defining it, or a macro that might.
    pub imports_tensor: bool,
    /// Structural problems found while taking the module apart.
    pub errors: Vec<syn::Error>,
}

/// The op's parameter struct: its non-tensor parameters, read through `&self`.
pub(crate) struct Params<'a> {
    pub original: &'a ItemStruct,
    pub ident: &'a Ident,
    /// The named fields (a tuple struct's are reported by `valid`, and left out).
    pub fields: Vec<Field<'a>>,
}

/// A named field of the parameter struct: a trailing argument of the op's function.
pub(crate) struct Field<'a> {
    pub ident: &'a Ident,
    pub ty: &'a Type,
}

/// `fn forward`: the computation, whose typed parameters are the op's tensor inputs.
pub(crate) struct Forward<'a> {
    pub original: &'a ItemFn,
    /// A function of tensors, or (`#[elementwise]`) a scalar function (`fn
    /// forward(x: f32) -> f32`) the macro turns into kernels and derives the
    /// backward of. Either is one `Forward`, parsed once and validated once.
    pub kind: FnKind,
    pub receiver: Option<&'a Receiver>,
    /// The typed parameters, in order.
    pub params: Vec<ForwardParam<'a>>,
}

/// What a forward or backward computes on.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum FnKind {
    /// Tensors: `fn forward(x: &Tensor) -> Result<Tensor>`.
    Tensor,
    /// Numbers, one element at a time: `#[elementwise] fn forward(x: f32) -> f32`.
    Scalar,
}

/// A typed parameter of forward.
pub(crate) enum ForwardParam<'a> {
    /// `name: Type`: an input of the op.
    Input(Input<'a>),
    /// A pattern other than a plain name (reported by `valid`).
    Pattern(&'a PatType),
}

/// A tensor input of the op: `x: &Tensor`, or `#[no_grad] index: &Tensor`.
pub(crate) struct Input<'a> {
    pub original: &'a PatType,
    pub ident: &'a Ident,
    /// False when marked `#[no_grad]`, or with a misspelling of it (reported by
    /// `valid`, and taken as meant so that the gradient count is not reported too).
    pub differentiable: bool,
}

/// `fn backward`: its parameters are chosen by name.
pub(crate) struct Backward<'a> {
    pub original: &'a ItemFn,
    /// A function of tensors, or (`#[elementwise]`) the gradients of an
    /// elementwise forward as a scalar function (`fn backward(x: f32, grad: f32)
    /// -> f32`).
    pub kind: FnKind,
    pub receiver: Option<&'a Receiver>,
    /// The typed parameters, in order.
    pub params: Vec<BackwardParam<'a>>,
}

/// A typed parameter of backward.
pub(crate) enum BackwardParam<'a> {
    /// `name: Type`: something backward declares it reads.
    Declared(Declared<'a>),
    /// A pattern other than a plain name (reported by `valid`).
    Pattern(&'a PatType),
}

/// A parameter backward declares by name, and what the name refers to.
pub(crate) struct Declared<'a> {
    pub original: &'a PatType,
    pub ident: &'a Ident,
    pub role: Role,
}

/// What a name declared by backward refers to.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Role {
    /// `grad`: the gradient of the output.
    Grad,
    /// `output`: the forward result (saved).
    Output,
    /// `needs`: which differentiable inputs need a gradient.
    Needs,
    /// Forward's input at this position (saved).
    Input(usize),
    /// `<input>_shape`: the shape of forward's input at this position.
    InputShape(usize),
    /// `<input>_dtype`: the dtype of forward's input at this position.
    InputDType(usize),
    /// None of these (reported by `valid`).
    Unknown,
}

/// `fn check_cases() -> Vec<CheckCase>`.
pub(crate) struct CheckCases<'a> {
    pub original: &'a ItemFn,
}

const EXPECTED: &str = "write `mod my_op { pub fn forward(x: &Tensor) -> Result<Tensor> { .. } \
pub fn backward(grad: &Tensor, x: &Tensor) -> Result<Tensor> { .. } }`";

impl<'a> Op<'a> {
    pub fn from_syn(item: &'a Item) -> syn::Result<Op<'a>> {
        let (span, what, hint) = match item {
            Item::Mod(m) => return Self::from_module(m),
            Item::Enum(e) => (e.enum_token.span(), "an enum", ""),
            Item::Union(u) => (u.union_token.span(), "a union", ""),
            Item::Trait(t) => (t.trait_token.span(), "a trait", ""),
            Item::Struct(s) => (
                s.struct_token.span(),
                "a struct",
                " (a struct of the op's parameters goes inside the module)",
            ),
            Item::Fn(f) => (
                f.sig.fn_token.span(),
                "a function",
                " (`forward` and `backward` go inside the module)",
            ),
            Item::Impl(i) => (i.impl_token.span(), "an impl block", ""),
            other => (other.span(), "this item", ""),
        };
        Err(syn::Error::new(
            span,
            format!(
                "#[differentiable] defines an op from an inline module, not from {what}: {EXPECTED}{hint}"
            ),
        ))
    }

    fn from_module(module: &'a ItemMod) -> syn::Result<Op<'a>> {
        if let Some(u) = &module.unsafety {
            return Err(syn::Error::new_spanned(
                u,
                "an op module cannot be `unsafe`: remove `unsafe`",
            ));
        }
        let Some((_, items)) = &module.content else {
            return Err(syn::Error::new_spanned(
                module.mod_token,
                format!(
                    "#[differentiable] needs the op's items inline, and `mod {};` keeps them in another file \
                     where a macro cannot see them: {EXPECTED}",
                    module.ident
                ),
            ));
        };
        let mut op = Op {
            attrs: &module.attrs,
            vis: &module.vis,
            ident: &module.ident,
            others: Vec::new(),
            params: None,
            forward: None,
            backward: None,
            check_cases: None,
            in_impl: Vec::new(),
            imports_tensor: items.iter().any(may_bring_tensor),
            errors: Vec::new(),
        };
        let (mut forward, mut backward, mut check_cases) = (None, None, None);
        for item in items {
            match item {
                Item::Fn(f) if f.sig.ident == "forward" => place(&mut forward, f, &mut op.errors),
                Item::Fn(f) if f.sig.ident == "backward" => place(&mut backward, f, &mut op.errors),
                Item::Fn(f) if f.sig.ident == "check_cases" => {
                    place(&mut check_cases, f, &mut op.errors)
                }
                Item::Struct(s) => {
                    if op.params.is_some() {
                        op.errors.push(syn::Error::new_spanned(
                            &s.ident,
                            "an op module holds at most one struct, the op's parameters; move other structs out of the module",
                        ));
                    } else {
                        op.params = Some(Params::from_syn(s));
                    }
                }
                Item::Impl(imp) => {
                    for f in imp.items.iter().filter_map(|i| match i {
                        syn::ImplItem::Fn(f) => Some(f),
                        _ => None,
                    }) {
                        if ["forward", "backward"].iter().any(|n| f.sig.ident == n) {
                            op.in_impl.push(f.sig.ident.to_string());
                            op.errors.push(syn::Error::new_spanned(
                                &f.sig.ident,
                                format!(
                                    "define `{}` directly in the op module, not in an impl block: the macro writes the impl \
                                     (`pub fn {}(&self, ..)` reads the op's parameters)",
                                    f.sig.ident, f.sig.ident
                                ),
                            ));
                        }
                    }
                    op.others.push(item);
                }
                other => op.others.push(other),
            }
        }
        op.forward = forward.map(Forward::from_syn);
        op.backward = backward.map(|b| Backward::from_syn(b, op.forward.as_ref()));
        op.check_cases = check_cases.map(|original| CheckCases { original });
        Ok(op)
    }

    /// The first `Tensor` that the op's signatures (and its parameter struct's
    /// fields) name without a path, when nothing in the module may bring it into
    /// scope: a module that forgot its `use autograd::prelude::*;`.
    pub fn unimported_tensor(&self) -> Option<proc_macro2::Ident> {
        if self.imports_tensor {
            return None;
        }
        let fns = [
            self.forward.as_ref().map(|f| f.original),
            self.backward.as_ref().map(|b| b.original),
            self.check_cases.as_ref().map(|c| c.original),
        ];
        let sigs = fns.into_iter().flatten().map(|f| f.sig.to_token_stream());
        let fields = self
            .params
            .iter()
            .map(|p| p.original.fields.to_token_stream());
        sigs.chain(fields).find_map(unqualified_tensor)
    }

    /// The op's name in the registry: the module's name unless overridden.
    pub fn default_name(&self) -> String {
        let s = self.ident.to_string();
        s.strip_prefix("r#").unwrap_or(&s).to_string()
    }
}

fn place<'a>(slot: &mut Option<&'a ItemFn>, f: &'a ItemFn, errors: &mut Vec<syn::Error>) {
    if slot.is_some() {
        errors.push(syn::Error::new_spanned(
            &f.sig.ident,
            format!("`{}` is defined twice: keep one", f.sig.ident),
        ));
    } else {
        *slot = Some(f);
    }
}

/// True for an item of the op module that may bring `Tensor` into its scope.
fn may_bring_tensor(item: &Item) -> bool {
    fn names_tensor(tree: &UseTree) -> bool {
        match tree {
            UseTree::Glob(_) => true,
            UseTree::Name(n) => n.ident == "Tensor",
            UseTree::Rename(r) => r.rename == "Tensor",
            UseTree::Path(p) => names_tensor(&p.tree),
            UseTree::Group(g) => g.items.iter().any(names_tensor),
        }
    }
    match item {
        Item::Use(u) => names_tensor(&u.tree),
        Item::Macro(_) | Item::Verbatim(_) => true,
        Item::Type(t) => t.ident == "Tensor",
        Item::Struct(s) => s.ident == "Tensor",
        Item::Enum(e) => e.ident == "Tensor",
        Item::Union(u) => u.ident == "Tensor",
        Item::Trait(t) => t.ident == "Tensor",
        _ => false,
    }
}

impl<'a> Params<'a> {
    fn from_syn(original: &'a ItemStruct) -> Self {
        let fields = match &original.fields {
            syn::Fields::Named(named) => named
                .named
                .iter()
                .filter_map(|f| {
                    Some(Field {
                        ident: f.ident.as_ref()?,
                        ty: &f.ty,
                    })
                })
                .collect(),
            _ => Vec::new(),
        };
        Params {
            original,
            ident: &original.ident,
            fields,
        }
    }

    /// Whether the struct has fields, named or not: `&self` has something to read.
    pub fn has_fields(&self) -> bool {
        !self.original.fields.is_empty()
    }
}

/// The receiver and the typed parameters of a function, plain names apart.
fn split_params(f: &ItemFn) -> (Option<&Receiver>, Vec<(&PatType, Option<&Ident>)>) {
    let mut receiver = None;
    let mut typed = Vec::new();
    for arg in &f.sig.inputs {
        match arg {
            FnArg::Receiver(r) => receiver = Some(r),
            FnArg::Typed(pt) => {
                let ident = match &*pt.pat {
                    Pat::Ident(p) if p.by_ref.is_none() && p.subpat.is_none() => Some(&p.ident),
                    _ => None,
                };
                typed.push((pt, ident));
            }
        }
    }
    (receiver, typed)
}

impl<'a> Forward<'a> {
    fn from_syn(original: &'a ItemFn) -> Self {
        let (receiver, typed) = split_params(original);
        let params = typed
            .into_iter()
            .map(|(pt, ident)| match ident {
                Some(ident) => ForwardParam::Input(Input {
                    original: pt,
                    ident,
                    differentiable: !pt.attrs.iter().any(is_no_grad),
                }),
                None => ForwardParam::Pattern(pt),
            })
            .collect();
        Forward {
            original,
            kind: fn_kind(original),
            receiver,
            params,
        }
    }

    /// The op's tensor inputs, in order: forward's parameters with plain names.
    pub fn inputs(&self) -> impl Iterator<Item = &Input<'a>> {
        self.params.iter().filter_map(|p| match p {
            ForwardParam::Input(i) => Some(i),
            ForwardParam::Pattern(_) => None,
        })
    }

    /// Whether forward takes `&self` (after validation: the op has parameters).
    pub fn takes_self(&self) -> bool {
        self.receiver.is_some()
    }
}

/// `Scalar` for a function marked `#[elementwise]`, else `Tensor`.
fn fn_kind(f: &ItemFn) -> FnKind {
    if f.attrs.iter().any(|a| a.path().is_ident("elementwise")) {
        FnKind::Scalar
    } else {
        FnKind::Tensor
    }
}

/// `#[no_grad]`, or an attribute spelled close to it (a misspelling, taken as meant).
pub(crate) fn is_no_grad(attr: &Attribute) -> bool {
    let path = attr_path(attr);
    (path == "no_grad" && matches!(attr.meta, syn::Meta::Path(_)))
        || crate::suggest::closest(&path, ["no_grad"]).is_some()
}

/// The path of an input's attribute, as written (`no_grad`, `my::attr`).
pub(crate) fn attr_path(attr: &Attribute) -> String {
    attr.path().to_token_stream().to_string().replace(' ', "")
}

impl<'a> Backward<'a> {
    fn from_syn(original: &'a ItemFn, forward: Option<&Forward<'_>>) -> Self {
        let (receiver, typed) = split_params(original);
        let params = typed
            .into_iter()
            .map(|(pt, ident)| match ident {
                Some(ident) => BackwardParam::Declared(Declared {
                    original: pt,
                    ident,
                    role: Role::of(ident, forward),
                }),
                None => BackwardParam::Pattern(pt),
            })
            .collect();
        Backward {
            original,
            kind: fn_kind(original),
            receiver,
            params,
        }
    }

    /// What backward declares, in order.
    pub fn declared(&self) -> impl Iterator<Item = &Declared<'a>> {
        self.params.iter().filter_map(|p| match p {
            BackwardParam::Declared(d) => Some(d),
            BackwardParam::Pattern(_) => None,
        })
    }

    /// Whether backward takes `&self` (after validation: the op has parameters).
    pub fn takes_self(&self) -> bool {
        self.receiver.is_some()
    }

    /// Whether backward declares `role` (an input it saves, the output).
    pub fn declares(&self, role: Role) -> bool {
        self.declared().any(|d| d.role == role)
    }

    /// Whether backward returns a tuple of gradients (else a single one).
    pub fn returns_tuple(&self) -> bool {
        match &self.original.sig.output {
            syn::ReturnType::Type(_, t) => {
                result_inner(t).is_some_and(|i| matches!(i, Type::Tuple(_)))
            }
            syn::ReturnType::Default => false,
        }
    }
}

impl Role {
    /// What `name` refers to in backward, given forward's inputs.
    fn of(name: &Ident, forward: Option<&Forward<'_>>) -> Role {
        let inputs: Vec<&Ident> =
            forward.map_or_else(Vec::new, |f| f.inputs().map(|i| i.ident).collect());
        let position = |n: &str| inputs.iter().position(|i| *i == n);
        let name = name.to_string();
        match name.as_str() {
            "grad" => Role::Grad,
            "output" => Role::Output,
            "needs" => Role::Needs,
            n => match position(n) {
                Some(pos) => Role::Input(pos),
                None => match n.strip_suffix("_shape").and_then(position) {
                    Some(pos) => Role::InputShape(pos),
                    None => match n.strip_suffix("_dtype").and_then(position) {
                        Some(pos) => Role::InputDType(pos),
                        None => Role::Unknown,
                    },
                },
            },
        }
    }
}

/// The first `Tensor` written without a path (`&Tensor`, `Result<Tensor>`, not
/// `autograd::Tensor`) in a token stream.
pub(crate) fn unqualified_tensor(tokens: TokenStream) -> Option<proc_macro2::Ident> {
    // The previous token is a `:` joined to the next one; the previous two are `::`.
    let (mut joint_colon, mut path_sep) = (false, false);
    for tt in tokens {
        match &tt {
            TokenTree::Ident(i) if i == "Tensor" && !path_sep => return Some(i.clone()),
            TokenTree::Group(g) => {
                if let Some(i) = unqualified_tensor(g.stream()) {
                    return Some(i);
                }
            }
            _ => {}
        }
        (path_sep, joint_colon) = match &tt {
            TokenTree::Punct(p) if p.as_char() == ':' => {
                (joint_colon, p.spacing() == proc_macro2::Spacing::Joint)
            }
            _ => (false, false),
        };
    }
    None
}

/// Last path segment of a plain path type (`autograd::Tensor` -> `Tensor`).
pub(crate) fn last_segment(ty: &Type) -> Option<&syn::PathSegment> {
    match ty {
        Type::Path(p) if p.qself.is_none() => p.path.segments.last(),
        Type::Paren(p) => last_segment(&p.elem),
        Type::Group(g) => last_segment(&g.elem),
        _ => None,
    }
}

/// The single type argument of `Name<T>`.
pub(crate) fn generic_arg(seg: &syn::PathSegment) -> Option<&Type> {
    match &seg.arguments {
        syn::PathArguments::AngleBracketed(a) => a.args.iter().find_map(|g| match g {
            syn::GenericArgument::Type(t) => Some(t),
            _ => None,
        }),
        _ => None,
    }
}

/// `Tensor` (any path ending in it, without arguments).
pub(crate) fn is_tensor(ty: &Type) -> bool {
    last_segment(ty).is_some_and(|s| s.ident == "Tensor" && s.arguments.is_none())
}

/// `&Tensor`.
pub(crate) fn is_tensor_ref(ty: &Type) -> bool {
    matches!(ty, Type::Reference(r) if r.mutability.is_none() && is_tensor(&r.elem))
}

/// `Option<Tensor>`.
pub(crate) fn is_option_tensor(ty: &Type) -> bool {
    last_segment(ty).is_some_and(|s| s.ident == "Option" && generic_arg(s).is_some_and(is_tensor))
}

/// `E` of `Result<T, E>` when it is not autograd's `Error` (any path ending in
/// `Error`): errors of an op are autograd errors.
pub(crate) fn foreign_error_type(ty: &Type) -> Option<&Type> {
    let seg = last_segment(ty).filter(|s| s.ident == "Result")?;
    let syn::PathArguments::AngleBracketed(a) = &seg.arguments else {
        return None;
    };
    let err = a
        .args
        .iter()
        .filter_map(|g| match g {
            syn::GenericArgument::Type(t) => Some(t),
            _ => None,
        })
        .nth(1)?;
    let is_ours = last_segment(err).is_some_and(|s| s.ident == "Error" && s.arguments.is_none());
    (!is_ours).then_some(err)
}

/// `T` of `Result<T>` / `Result<T, E>`.
pub(crate) fn result_inner(ty: &Type) -> Option<&Type> {
    last_segment(ty)
        .filter(|s| s.ident == "Result")
        .and_then(generic_arg)
}

/// True when `name` is mentioned anywhere in a token stream: as an identifier, or
/// captured by a format string (`"{name}"`, `"{name:?}"`).
pub(crate) fn mentions(tokens: TokenStream, name: &str) -> bool {
    let captured = [format!("{{{name}}}"), format!("{{{name}:")];
    tokens.into_iter().any(|tt| match tt {
        TokenTree::Ident(i) => i == name,
        TokenTree::Group(g) => mentions(g.stream(), name),
        TokenTree::Literal(l) => {
            let l = l.to_string();
            l.ends_with('"') && captured.iter().any(|c| l.contains(c.as_str()))
        }
        TokenTree::Punct(_) => false,
    })
}

/// The first `self` used as a value (`self.axis`, `self`), not as a path
/// (`self::helper`), in a token stream; items nested in it (`fn`, `impl`), whose
/// `self` is their own, are skipped.
pub(crate) fn self_value(tokens: TokenStream) -> Option<proc_macro2::Ident> {
    let mut iter = tokens.into_iter().peekable();
    while let Some(tt) = iter.next() {
        match tt {
            TokenTree::Ident(i) if i == "fn" || i == "impl" => {
                // Up to and including the item's body.
                for t in iter.by_ref() {
                    if matches!(&t, TokenTree::Group(g) if g.delimiter() == proc_macro2::Delimiter::Brace)
                    {
                        break;
                    }
                }
            }
            TokenTree::Ident(i) if i == "self" => {
                let is_path =
                    matches!(iter.peek(), Some(TokenTree::Punct(p)) if p.as_char() == ':');
                if !is_path {
                    return Some(i);
                }
            }
            TokenTree::Group(g) => {
                if let Some(i) = self_value(g.stream()) {
                    return Some(i);
                }
            }
            _ => {}
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use quote::quote;

    #[test]
    fn mentions_sees_identifiers_and_format_captures() {
        assert!(mentions(quote!({ grad * x }), "x"));
        assert!(mentions(quote!({ f(|| (g, (x))) }), "x"));
        assert!(mentions(quote!({ println!("{x}") }), "x"));
        assert!(mentions(quote!({ format!("{x:?}") }), "x"));
        assert!(!mentions(quote!({ grad * xs }), "x"));
        assert!(!mentions(quote!({ "x" }), "x"));
    }

    #[test]
    fn self_value_ignores_self_paths() {
        assert!(self_value(quote!({ self::helper(x) })).is_none());
        assert!(self_value(quote!({ grad * self.factor })).is_some());
        assert!(self_value(quote!({ f(&[self]) })).is_some());
        let nested = quote!({
            struct K(f64);
            impl K {
                fn get(&self) -> f64 {
                    self.0
                }
            }
            fn local(k: &K) -> f64 {
                k.get()
            }
            grad * local(&K(2.0))
        });
        assert!(
            self_value(nested).is_none(),
            "nested items have their own self"
        );
        assert!(
            self_value(quote!({
                fn f() {}
                self.k
            }))
            .is_some()
        );
    }

    #[test]
    fn foreign_error_types_are_found() {
        let ty = |t: proc_macro2::TokenStream| syn::parse2::<Type>(t).unwrap();
        assert!(foreign_error_type(&ty(quote!(Result<Tensor>))).is_none());
        assert!(foreign_error_type(&ty(quote!(Result<Tensor, autograd::Error>))).is_none());
        assert!(foreign_error_type(&ty(quote!(Result<Tensor, String>))).is_some());
        assert!(foreign_error_type(&ty(quote!(std::result::Result<Tensor, Box<dyn E>>))).is_some());
    }

    #[test]
    fn unqualified_tensor_skips_paths() {
        assert!(unqualified_tensor(quote!(fn f(x: &Tensor) -> R)).is_some());
        assert!(unqualified_tensor(quote!(fn f(x: &a::T) -> Result<Option<Tensor>>)).is_some());
        assert!(
            unqualified_tensor(quote!(fn f(x: &a::Tensor) -> ::a::Result<a::Tensor>)).is_none()
        );
        assert!(unqualified_tensor(quote!(fn f(x: &Tensorish) -> Result<T>)).is_none());
    }

    #[test]
    fn backward_names_are_resolved_against_forward() {
        let item: Item = syn::parse2(quote! { mod m {
            use super::*;
            pub fn backward(grad: &Tensor, b: &Tensor, a_shape: &Shape, output: &Tensor, needs: [bool; 2], c: &Tensor) -> Result<T> { .. }
            pub fn forward(a: &Tensor, #[no_grad] b: &Tensor) -> Result<Tensor> { a }
        } })
        .unwrap();
        let op = Op::from_syn(&item).unwrap();
        let roles: Vec<Role> = op
            .backward
            .as_ref()
            .unwrap()
            .declared()
            .map(|d| d.role)
            .collect();
        assert!(
            roles
                == [
                    Role::Grad,
                    Role::Input(1),
                    Role::InputShape(0),
                    Role::Output,
                    Role::Needs,
                    Role::Unknown
                ]
        );
        let forward = op.forward.as_ref().unwrap();
        let differentiable: Vec<bool> = forward.inputs().map(|i| i.differentiable).collect();
        assert_eq!(differentiable, [true, false]);
    }
}
