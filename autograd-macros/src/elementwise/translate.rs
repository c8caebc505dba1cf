//! Elementwise forwards: `#[elementwise] pub fn forward(x: f32) -> f32 { .. }`.
//!
//! The body is checked against the supported subset of Rust and translated twice:
//! to a Rust function generic over `Real` (instantiated with `f32` and `f64` it is
//! the CPU kernel; over nested dual numbers, every derivative up to the third), and
//! to CUDA C++ (a template instantiated the same ways). Anything outside the subset
//! is an error on its own tokens listing what is supported.

use proc_macro2::TokenStream;
use quote::{ToTokens, format_ident, quote, quote_spanned};
use syn::{BinOp, Block, Expr, Ident, Lit, Pat, Stmt, UnOp};

/// The methods of `f32` an elementwise function may call, with their argument counts.
pub(crate) const METHODS: &[(&str, usize)] = &[
    ("exp", 0),
    ("exp_m1", 0),
    ("ln", 0),
    ("ln_1p", 0),
    ("sqrt", 0),
    ("tanh", 0),
    ("sin", 0),
    ("cos", 0),
    ("erf", 0),
    ("abs", 0),
    ("recip", 0),
    ("powf", 1),
    ("powi", 1),
    ("min", 1),
    ("max", 1),
    ("clamp", 2),
];

/// Most inputs an elementwise function takes (the generated loops go to five
/// operands: four inputs and the incoming gradient).
pub(crate) const MAX_INPUTS: usize = 4;

pub(crate) fn supported() -> String {
    let methods: Vec<String> = METHODS.iter().map(|(m, _)| format!("`{m}`")).collect();
    format!(
        "an elementwise function may use its inputs, `self.<param>`, float literals, \
         `+ - * /`, unary `-`, comparisons, `&& || !`, `if .. else ..`, `let`, parentheses, \
         and the methods {}",
        methods.join(", ")
    )
}

/// Whether an expression is a number or a truth value.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Kind {
    Real,
    Mask,
}

/// One translated expression: the Rust tokens (generic over `R: Real`), the CUDA
/// C++ text (generic over `T`), and its kind.
struct Tr {
    rust: TokenStream,
    cuda: String,
    kind: Kind,
}

/// The translation of a function body.
pub(crate) struct Translated {
    /// The body, generic over `R` (the op value is `__op`).
    pub rust: TokenStream,
    /// The body in CUDA C++ (statements ending with `return ..;`; the op's
    /// parameters are `p.<name>`).
    pub cuda: String,
    /// The parameter fields read (`self.<name>`), in order of first use.
    pub fields: Vec<Ident>,
}

struct Translator<'a> {
    inputs: &'a [Ident],
    /// `let` bindings in scope, innermost last.
    locals: Vec<(Ident, Kind)>,
    fields: Vec<Ident>,
    errors: Vec<syn::Error>,
    /// For a backward of several gradients: how many the final tuple holds, and
    /// (once translated) its elements' CUDA text.
    tuple: Option<(usize, Vec<String>)>,
    /// The function body's CUDA `let`s and value, apart.
    top: Option<(String, String)>,
}

/// The translation of an elementwise backward: the body returns one gradient per
/// differentiable input (a tuple when there are several).
pub(crate) struct TranslatedBackward {
    /// The body, generic over `R`, returning `R` or a tuple of `R`s.
    pub rust: TokenStream,
    /// The CUDA statements before the value (the `let`s).
    pub cuda_lets: String,
    /// Each gradient's CUDA expression.
    pub cuda_values: Vec<String>,
    pub fields: Vec<Ident>,
}

/// Translates the body of an elementwise backward whose parameters are `names`
/// and which returns `outputs` gradients.
pub(crate) fn translate_backward(
    body: &Block,
    names: &[Ident],
    outputs: usize,
) -> Result<TranslatedBackward, Vec<syn::Error>> {
    let mut t = Translator {
        inputs: names,
        locals: Vec::new(),
        fields: Vec::new(),
        errors: Vec::new(),
        tuple: (outputs > 1).then(|| (outputs, Vec::new())),
        top: None,
    };
    let out = t.block(body, true);
    if let Some(out) = &out
        && out.kind == Kind::Mask
    {
        t.error(body, "a gradient is a number, and this is a comparison");
    }
    match out {
        Some(out) if t.errors.is_empty() => {
            let (lets, value) = t.top.take().unwrap_or_default();
            let cuda_values = match t.tuple {
                Some((_, values)) => values,
                None => vec![value],
            };
            Ok(TranslatedBackward {
                rust: out.rust,
                cuda_lets: lets,
                cuda_values,
                fields: t.fields,
            })
        }
        _ => Err(t.errors),
    }
}

/// Translates the body of an elementwise forward whose inputs are `inputs`.
pub(crate) fn translate(body: &Block, inputs: &[Ident]) -> Result<Translated, Vec<syn::Error>> {
    let mut t = Translator {
        inputs,
        locals: Vec::new(),
        fields: Vec::new(),
        errors: Vec::new(),
        tuple: None,
        top: None,
    };
    let out = t.block(body, true);
    if let Some(out) = &out
        && out.kind == Kind::Mask
    {
        t.error(
            body,
            "an elementwise function returns a number, and this is a comparison",
        );
    }
    match out {
        Some(out) if t.errors.is_empty() => Ok(Translated {
            rust: out.rust,
            cuda: out.cuda,
            fields: t.fields,
        }),
        _ => Err(t.errors),
    }
}

impl Translator<'_> {
    fn error(&mut self, at: impl ToTokens, msg: impl std::fmt::Display) {
        self.errors.push(syn::Error::new_spanned(at, msg));
    }

    fn unsupported(&mut self, at: impl ToTokens, what: &str) -> Option<Tr> {
        let msg = format!(
            "{what} is not supported in an elementwise function: {}",
            supported()
        );
        self.error(at, msg);
        None
    }

    /// A block: `let` statements, then the value. `top` is the function body (its
    /// CUDA text is statements with a `return`; an inner block is a lambda called
    /// in place).
    fn block(&mut self, b: &Block, top: bool) -> Option<Tr> {
        let scope = self.locals.len();
        let mut rust = TokenStream::new();
        let mut cuda = String::new();
        let mut value: Option<Tr> = None;
        let mut ok = true;
        for (k, stmt) in b.stmts.iter().enumerate() {
            let last = k + 1 == b.stmts.len();
            match stmt {
                Stmt::Local(local) => {
                    let Some((ident, ty)) = local_name(&local.pat) else {
                        self.error(
                            &local.pat,
                            "a `let` here binds one name: write `let y = ..;`",
                        );
                        ok = false;
                        continue;
                    };
                    if let Some(ty) = ty
                        && !is_scalar_type(ty)
                        && !is_bool_type(ty)
                    {
                        self.error(
                            ty,
                            "a `let` here holds a number (`f32`) or a truth value (`bool`)",
                        );
                        ok = false;
                    }
                    let Some(init) = &local.init else {
                        self.error(local, "a `let` here needs a value: write `let y = ..;`");
                        ok = false;
                        continue;
                    };
                    if let Some((else_token, _)) = &init.diverge {
                        self.error(
                            else_token,
                            "`let .. else` is not supported in an elementwise function",
                        );
                        ok = false;
                        continue;
                    }
                    let Some(v) = self.expr(&init.expr) else {
                        ok = false;
                        // Still bind the name, so that its uses are not reported too.
                        self.locals.push((ident.clone(), Kind::Real));
                        continue;
                    };
                    let (rv, cv) = (&v.rust, &v.cuda);
                    let name = ident.to_string();
                    let name = name.trim_start_matches("r#");
                    match v.kind {
                        Kind::Real => {
                            rust.extend(quote_spanned!(ident.span()=> let #ident: R = #rv;));
                            cuda.push_str(&format!("const T v_{name} = {cv}; "));
                        }
                        Kind::Mask => {
                            rust.extend(quote_spanned!(ident.span()=> let #ident = #rv;));
                            cuda.push_str(&format!("const bool v_{name} = {cv}; "));
                        }
                    }
                    self.locals.push((ident.clone(), v.kind));
                }
                Stmt::Expr(e, None) if last => {
                    value = match (e, top, self.tuple.as_ref().map(|t| t.0)) {
                        (_, true, Some(n)) => self.tuple(e, n),
                        _ => self.expr(e),
                    }
                }
                Stmt::Expr(e, Some(semi)) => {
                    if last {
                        self.error(
                            semi,
                            "the value of the function is its last expression: remove this `;`",
                        );
                    } else {
                        self.statement(e);
                    }
                    ok = false;
                }
                Stmt::Expr(e, None) => {
                    self.statement(e);
                    ok = false;
                }
                Stmt::Item(item) => {
                    self.unsupported(item, "an item");
                    ok = false;
                }
                Stmt::Macro(m) => {
                    self.unsupported(&m.mac.path, "a macro");
                    ok = false;
                }
            }
        }
        self.locals.truncate(scope);
        if value.is_none() && ok && !b.stmts.iter().any(|s| matches!(s, Stmt::Expr(_, None))) {
            self.error(b, "an elementwise function ends with its value: write the expression last, without `;`");
        }
        let value = value?;
        if !ok {
            return None;
        }
        let v_rust = &value.rust;
        let rust = quote!({ #rust #v_rust });
        let cuda = if top {
            self.top = Some((cuda.clone(), value.cuda.clone()));
            format!("{cuda}return {};", value.cuda)
        } else if cuda.is_empty() {
            value.cuda
        } else {
            format!("([&]() {{ {cuda}return {}; }}())", value.cuda)
        };
        Some(Tr {
            rust,
            cuda,
            kind: value.kind,
        })
    }

    /// The final tuple of a backward of `n` gradients.
    fn tuple(&mut self, e: &Expr, n: usize) -> Option<Tr> {
        let Expr::Tuple(t) = e else {
            self.error(
                e,
                format!(
                    "backward returns {n} gradients, one per differentiable input: write `(ga, gb)`"
                ),
            );
            return None;
        };
        if t.elems.len() != n {
            self.error(
                t,
                format!(
                    "backward returns {n} gradients, one per differentiable input, not {}",
                    t.elems.len()
                ),
            );
            return None;
        }
        let elems: Vec<Option<Tr>> = t.elems.iter().map(|e| self.expr(e)).collect();
        let elems: Vec<Tr> = elems.into_iter().collect::<Option<_>>()?;
        if elems.iter().any(|e| e.kind != Kind::Real) {
            self.error(t, "a gradient is a number, not a comparison");
            return None;
        }
        let rusts = elems.iter().map(|e| &e.rust);
        let rust = quote!((#(#rusts),*));
        if let Some((_, values)) = &mut self.tuple {
            *values = elems.iter().map(|e| e.cuda.clone()).collect();
        }
        Some(Tr {
            rust,
            cuda: String::new(),
            kind: Kind::Real,
        })
    }

    /// An expression used as a statement (never supported): the error of the
    /// expression itself where it has one (a loop, an `if` without `else`).
    fn statement(&mut self, e: &Expr) {
        match e {
            Expr::ForLoop(_)
            | Expr::While(_)
            | Expr::Loop(_)
            | Expr::If(_)
            | Expr::Macro(_)
            | Expr::Assign(_)
            | Expr::Return(_) => {
                self.expr(e);
            }
            _ => {
                self.unsupported(e, "a statement other than `let`");
            }
        }
    }

    fn expr(&mut self, e: &Expr) -> Option<Tr> {
        match e {
            Expr::Lit(l) => self.literal(&l.lit),
            Expr::Paren(p) => {
                let inner = self.expr(&p.expr)?;
                let r = &inner.rust;
                Some(Tr {
                    rust: quote!((#r)),
                    cuda: format!("({})", inner.cuda),
                    kind: inner.kind,
                })
            }
            Expr::Group(g) => self.expr(&g.expr),
            Expr::Path(p) => {
                let Some(ident) = p.path.get_ident().filter(|_| p.qself.is_none()) else {
                    return self.unsupported(p, "this path");
                };
                if let Some((_, kind)) = self.locals.iter().rev().find(|(n, _)| n == ident) {
                    return Some(Tr {
                        rust: quote!(#ident),
                        cuda: cuda_name(ident),
                        kind: *kind,
                    });
                }
                if self.inputs.contains(ident) {
                    return Some(Tr {
                        rust: quote!(#ident),
                        cuda: cuda_name(ident),
                        kind: Kind::Real,
                    });
                }
                if ident == "self" {
                    self.error(ident, "read the op's parameters as `self.<name>`");
                    return None;
                }
                let names: Vec<String> = self
                    .inputs
                    .iter()
                    .map(|i| format!("`{i}`"))
                    .chain(self.locals.iter().map(|(n, _)| format!("`{n}`")))
                    .collect();
                self.error(
                    ident,
                    format!(
                        "unknown name `{ident}` in an elementwise function: it sees its inputs and `let` bindings ({}), \
                         and the op's parameters as `self.<name>`",
                        names.join(", ")
                    ),
                );
                None
            }
            Expr::Field(f) => {
                let is_self = matches!(&*f.base, Expr::Path(p) if p.path.is_ident("self"));
                match (&f.member, is_self) {
                    (syn::Member::Named(name), true) => {
                        if !self.fields.contains(name) {
                            self.fields.push(name.clone());
                        }
                        Some(Tr {
                            rust: quote_spanned!(name.span()=> <R as __Real>::lit(__op.#name as f64)),
                            cuda: format!("T(p.{})", cuda_name(name)),
                            kind: Kind::Real,
                        })
                    }
                    _ => self.unsupported(f, "a field other than `self.<param>`"),
                }
            }
            Expr::Unary(u) => {
                let inner = self.expr(&u.expr)?;
                let r = &inner.rust;
                match (&u.op, inner.kind) {
                    (UnOp::Neg(_), Kind::Real) => Some(Tr {
                        rust: quote!(-#r),
                        cuda: format!("-{}", inner.cuda),
                        kind: Kind::Real,
                    }),
                    (UnOp::Not(_), Kind::Mask) => Some(Tr {
                        rust: quote!(__Mask::not(#r)),
                        cuda: format!("!{}", inner.cuda),
                        kind: Kind::Mask,
                    }),
                    (UnOp::Not(op), Kind::Real) => {
                        self.error(op, "`!` applies to a comparison, not to a number");
                        None
                    }
                    (UnOp::Neg(op), Kind::Mask) => {
                        self.error(op, "`-` applies to a number, not to a comparison");
                        None
                    }
                    (op, _) => self.unsupported(op, "this operator"),
                }
            }
            Expr::Binary(b) => self.binary(b),
            Expr::If(i) => self.if_else(i),
            Expr::Block(b) if b.label.is_none() => self.block(&b.block, false),
            Expr::MethodCall(m) => {
                let receiver = self.expr(&m.receiver);
                let args: Vec<Option<Tr>> = m
                    .args
                    .iter()
                    .enumerate()
                    .map(|(k, a)| {
                        if m.method == "powi" && k == 0 {
                            self.integer(a)
                        } else {
                            self.expr(a)
                        }
                    })
                    .collect();
                if let Some(t) = &m.turbofish {
                    self.error(t, "the methods here take no type arguments");
                    return None;
                }
                self.method(&m.method, receiver?, args, m)
            }
            Expr::Call(c) => {
                // `f32::exp(x)`: the method called as a function.
                let path = match &*c.func {
                    Expr::Path(p) if p.qself.is_none() && p.path.segments.len() == 2 => &p.path,
                    other => return self.unsupported(other, "a call of a function"),
                };
                let ty = &path.segments[0].ident;
                let method = &path.segments[1].ident;
                if ty != "f32" && ty != "f64" {
                    return self.unsupported(&c.func, "a call of a function");
                }
                let mut args = c.args.iter();
                let Some(first) = args.next() else {
                    return self.unsupported(c, "this call");
                };
                let receiver = self.expr(first);
                let rest: Vec<Option<Tr>> = args
                    .enumerate()
                    .map(|(k, a)| {
                        if method == "powi" && k == 0 {
                            self.integer(a)
                        } else {
                            self.expr(a)
                        }
                    })
                    .collect();
                self.method(method, receiver?, rest, c)
            }
            Expr::Cast(c) => {
                let inner = self.expr(&c.expr)?;
                if inner.kind == Kind::Real && is_scalar_type(&c.ty) {
                    Some(inner)
                } else {
                    self.unsupported(c, "this cast")
                }
            }
            Expr::ForLoop(f) => self.unsupported(f.for_token, "a loop"),
            Expr::While(w) => self.unsupported(w.while_token, "a loop"),
            Expr::Loop(l) => self.unsupported(l.loop_token, "a loop"),
            Expr::Return(r) => self.unsupported(r.return_token, "`return`"),
            Expr::Macro(m) => self.unsupported(&m.mac.path, "a macro"),
            Expr::Index(i) => self.unsupported(i, "indexing"),
            Expr::Reference(r) => self.unsupported(r, "a reference"),
            Expr::Closure(c) => self.unsupported(c, "a closure"),
            Expr::Match(m) => self.unsupported(m.match_token, "`match`"),
            Expr::Assign(a) => self.unsupported(a, "an assignment"),
            Expr::Try(t) => self.unsupported(t, "`?`"),
            other => self.unsupported(other, "this expression"),
        }
    }

    fn literal(&mut self, lit: &Lit) -> Option<Tr> {
        let value: f64 = match lit {
            Lit::Float(f) if matches!(f.suffix(), "" | "f32" | "f64") => f.base10_parse().ok()?,
            Lit::Int(i) if matches!(i.suffix(), "" | "f32" | "f64") => i.base10_parse().ok()?,
            Lit::Bool(b) => {
                let v = b.value;
                return Some(Tr {
                    rust: quote!(#v),
                    cuda: v.to_string(),
                    kind: Kind::Mask,
                });
            }
            other => return self.unsupported(other, "this literal"),
        };
        let span = lit.span();
        let v = proc_macro2::Literal::f64_unsuffixed(value);
        Some(Tr {
            rust: quote_spanned!(span=> <R as __Real>::lit(#v)),
            cuda: format!("T({})", cuda_double(value)),
            kind: Kind::Real,
        })
    }

    /// `powi`'s exponent: an integer literal, possibly negated.
    fn integer(&mut self, e: &Expr) -> Option<Tr> {
        let (neg, lit) = match e {
            Expr::Unary(u) if matches!(u.op, UnOp::Neg(_)) => (true, &*u.expr),
            other => (false, other),
        };
        match lit {
            Expr::Lit(l) => match &l.lit {
                Lit::Int(i) => {
                    let v: i32 = i.base10_parse().ok()?;
                    let v = if neg { -v } else { v };
                    Some(Tr {
                        rust: quote!(#v),
                        cuda: v.to_string(),
                        kind: Kind::Real,
                    })
                }
                _ => {
                    self.error(e, "`powi` takes an integer literal (`x.powi(3)`); use `powf` for other exponents");
                    None
                }
            },
            _ => {
                self.error(
                    e,
                    "`powi` takes an integer literal (`x.powi(3)`); use `powf` for other exponents",
                );
                None
            }
        }
    }

    fn binary(&mut self, b: &syn::ExprBinary) -> Option<Tr> {
        let (l, r) = (self.expr(&b.left), self.expr(&b.right));
        let (l, r) = (l?, r?);
        let (lr, rr) = (&l.rust, &r.rust);
        let (lc, rc) = (&l.cuda, &r.cuda);
        // In CUDA C++ through the prelude's `ew_add` (..): the round-to-nearest
        // intrinsics, which no compiler contracts into a fused multiply-add, so that
        // the op's kernel and a fused chain's compute the same bits.
        let arith = |f: &str, tokens: TokenStream| Tr {
            rust: tokens,
            cuda: format!("{f}({lc}, {rc})"),
            kind: Kind::Real,
        };
        let compare = |name: &str, op: &str| {
            let m = format_ident!("{}", name);
            Tr {
                rust: quote!(<R as __Real>::#m(#lr, #rr)),
                cuda: format!("{lc} {op} {rc}"),
                kind: Kind::Mask,
            }
        };
        let reals = l.kind == Kind::Real && r.kind == Kind::Real;
        let masks = l.kind == Kind::Mask && r.kind == Kind::Mask;
        let out = match &b.op {
            BinOp::Add(_) if reals => arith("ew_add", quote!(#lr + #rr)),
            BinOp::Sub(_) if reals => arith("ew_sub", quote!(#lr - #rr)),
            BinOp::Mul(_) if reals => arith("ew_mul", quote!(#lr * #rr)),
            BinOp::Div(_) if reals => arith("ew_div", quote!(#lr / #rr)),
            BinOp::Lt(_) if reals => compare("lt", "<"),
            BinOp::Le(_) if reals => compare("le", "<="),
            BinOp::Gt(_) if reals => compare("gt", ">"),
            BinOp::Ge(_) if reals => compare("ge", ">="),
            BinOp::Eq(_) if reals => compare("eq", "=="),
            BinOp::Ne(_) if reals => compare("ne", "!="),
            BinOp::And(_) if masks => Tr {
                rust: quote!(__Mask::and(#lr, #rr)),
                cuda: format!("{lc} && {rc}"),
                kind: Kind::Mask,
            },
            BinOp::Or(_) if masks => Tr {
                rust: quote!(__Mask::or(#lr, #rr)),
                cuda: format!("{lc} || {rc}"),
                kind: Kind::Mask,
            },
            BinOp::Add(_) | BinOp::Sub(_) | BinOp::Mul(_) | BinOp::Div(_) => {
                self.error(
                    b.op,
                    "arithmetic applies to numbers, and an operand here is a comparison",
                );
                return None;
            }
            BinOp::Lt(_)
            | BinOp::Le(_)
            | BinOp::Gt(_)
            | BinOp::Ge(_)
            | BinOp::Eq(_)
            | BinOp::Ne(_) => {
                self.error(
                    b.op,
                    "comparisons apply to numbers, and an operand here is a comparison",
                );
                return None;
            }
            BinOp::And(_) | BinOp::Or(_) => {
                self.error(
                    b.op,
                    "`&&` and `||` join comparisons (`x > 0.0 && x < 1.0`)",
                );
                return None;
            }
            op => return self.unsupported(op, "this operator"),
        };
        Some(out)
    }

    fn if_else(&mut self, i: &syn::ExprIf) -> Option<Tr> {
        let cond = self.expr(&i.cond);
        let then = self.block(&i.then_branch, false);
        let Some((_, else_expr)) = &i.else_branch else {
            self.error(
                i.if_token,
                "an `if` here is a value: add the `else` branch (both branches are computed, and one is kept per element)",
            );
            return None;
        };
        let other = self.expr(else_expr);
        let (cond, then, other) = (cond?, then?, other?);
        if cond.kind != Kind::Mask {
            self.error(&i.cond, "the condition is a comparison (`x > 0.0`)");
            return None;
        }
        if then.kind != Kind::Real || other.kind != Kind::Real {
            self.error(i.if_token, "both branches of an `if` here are numbers");
            return None;
        }
        let (c, a, b) = (&cond.rust, &then.rust, &other.rust);
        Some(Tr {
            rust: quote!(<R as __Real>::select(#c, #a, #b)),
            cuda: format!("(({}) ? ({}) : ({}))", cond.cuda, then.cuda, other.cuda),
            kind: Kind::Real,
        })
    }

    fn method(
        &mut self,
        method: &Ident,
        receiver: Tr,
        args: Vec<Option<Tr>>,
        at: impl ToTokens,
    ) -> Option<Tr> {
        let name = method.to_string();
        let Some(&(_, want)) = METHODS.iter().find(|(m, _)| *m == name) else {
            let hint = crate::suggest::closest(&name, METHODS.iter().map(|(m, _)| *m))
                .map(|m| format!(" (did you mean `{m}`?)"))
                .unwrap_or_default();
            let msg = format!(
                "`{name}` is not supported in an elementwise function{hint}: {}",
                supported()
            );
            self.error(method, msg);
            return None;
        };
        if args.len() != want {
            self.error(
                at,
                format!(
                    "`{name}` takes {want} argument{}",
                    if want == 1 { "" } else { "s" }
                ),
            );
            return None;
        }
        let args: Vec<Tr> = args.into_iter().collect::<Option<_>>()?;
        if receiver.kind != Kind::Real
            || (name != "powi" && args.iter().any(|a| a.kind != Kind::Real))
        {
            self.error(method, format!("`{name}` applies to numbers"));
            return None;
        }
        let r = &receiver.rust;
        let rc = &receiver.cuda;
        let m = Ident::new(&name, method.span());
        let (rust, cuda) = match args.as_slice() {
            [] => (quote!(<R as __Real>::#m(#r)), format!("ew_{name}({rc})")),
            [a] => {
                let (ar, ac) = (&a.rust, &a.cuda);
                (
                    quote!(<R as __Real>::#m(#r, #ar)),
                    format!("ew_{name}({rc}, {ac})"),
                )
            }
            [lo, hi] => {
                // clamp(lo, hi) = min(max(x, lo), hi)
                let (lr, hr) = (&lo.rust, &hi.rust);
                (
                    quote!(<R as __Real>::min(<R as __Real>::max(#r, #lr), #hr)),
                    format!("ew_min(ew_max({rc}, {}), {})", lo.cuda, hi.cuda),
                )
            }
            _ => return None,
        };
        Some(Tr {
            rust,
            cuda,
            kind: Kind::Real,
        })
    }
}

/// A `let` pattern's name and type, if it is one plain name.
fn local_name(pat: &Pat) -> Option<(&Ident, Option<&syn::Type>)> {
    match pat {
        Pat::Ident(p) if p.by_ref.is_none() && p.subpat.is_none() => Some((&p.ident, None)),
        Pat::Type(t) => match &*t.pat {
            Pat::Ident(p) if p.by_ref.is_none() && p.subpat.is_none() => {
                Some((&p.ident, Some(&*t.ty)))
            }
            _ => None,
        },
        _ => None,
    }
}

/// `f32` or `f64`.
pub(crate) fn is_scalar_type(ty: &syn::Type) -> bool {
    matches!(ty, syn::Type::Path(p) if p.qself.is_none() && (p.path.is_ident("f32") || p.path.is_ident("f64")))
}

fn is_bool_type(ty: &syn::Type) -> bool {
    matches!(ty, syn::Type::Path(p) if p.qself.is_none() && p.path.is_ident("bool"))
}

/// A name of the Rust source in the CUDA C++: prefixed, so that no name (`int`,
/// `float`, `new`) is a C++ keyword.
fn cuda_name(ident: &Ident) -> String {
    let s = ident.to_string();
    format!("v_{}", s.trim_start_matches("r#"))
}

/// A double literal CUDA C++ reads back exactly.
fn cuda_double(v: f64) -> String {
    if v.is_finite() {
        format!("{v:e}")
    } else if v.is_nan() {
        "(0.0/0.0)".into()
    } else if v > 0.0 {
        "(1.0/0.0)".into()
    } else {
        "(-1.0/0.0)".into()
    }
}

/// An explicit backward as the CUDA source needs it: its `let`s, each gradient's
/// expression, and the inputs they belong to (the differentiable ones, in order).
pub(crate) struct CudaBackward<'a> {
    pub lets: &'a str,
    pub values: &'a [String],
    pub inputs: Vec<usize>,
}

/// The CUDA C++ of one generated op: its function as a template over the number
/// type, and entry points for the value and each derivative order in `float` and
/// `double`, over contiguous operands. Each order's case of `<name>_at` is guarded
/// by `#if AUTOGRAD_ORDERS & <bit>`, each entry point by `#if AUTOGRAD_F32` or
/// `#if AUTOGRAD_F64`, the entry points and their loop by
/// `#ifndef AUTOGRAD_FUNCTIONS_ONLY`: the op's own compile keeps all of it (the
/// prelude defines every guard on), a fused chain's kernel only what it evaluates
/// (`kernels/src/cuda/fused.rs` selects the text by these exact lines).
pub(crate) fn cuda_source(
    name: &str,
    inputs: &[Ident],
    fields: &[Ident],
    body: &str,
    backward: Option<CudaBackward<'_>>,
) -> String {
    let n = inputs.len();
    let params: String = fields
        .iter()
        .map(|f| format!("double {}; ", cuda_name(f)))
        .collect();
    let args: Vec<String> = inputs
        .iter()
        .map(|i| format!("T {}", cuda_name(i)))
        .collect();
    let mut s = format!(
        "// The `{name}` op, generated by #[differentiable] from its elementwise function.\n\
         struct {name}_params {{ {params}}};\n\
         template <typename T>\n\
         __device__ __forceinline__ T {name}_f(const {name}_params& p, {}) {{ {body} }}\n",
        args.join(", ")
    );
    if let Some(b) = &backward {
        // grad · ∂f/∂x_a from the explicit backward.
        let mut pick = "T(0.0)".to_string();
        for (k, v) in b.inputs.iter().zip(b.values).rev() {
            pick = format!("(a == {k} ? ({v}) : {pick})");
        }
        s.push_str(&format!(
            "template <typename T>\n\
             __device__ __forceinline__ T {name}_g(const {name}_params& p, int a, {}, T v_grad) {{ {}return {pick}; }}\n",
            args.join(", "),
            b.lets
        ));
    }
    let value_args: Vec<String> = (0..n).map(|k| format!("x{k}")).collect();
    // Each order's case is guarded by its bit of AUTOGRAD_ORDERS (all set unless
    // defined otherwise, `generated.cuh`): a fused chain's kernel keeps the orders
    // its steps evaluate (`kernels/src/cuda/fused.rs` selects the text).
    let mut cases = format!(
        "#if AUTOGRAD_ORDERS & 0x1\n      case 0: r = {name}_f<T>(p, {}); break;\n#endif\n",
        value_args.join(", ")
    );
    for order in 1..=3usize {
        let value = match &backward {
            None => {
                let seeded: Vec<String> = (0..n)
                    .map(|m| {
                        let seeds: Vec<String> =
                            (0..order).map(|k| format!("a{k} == {m}")).collect();
                        format!("ew_seed{order}<T>(x{m}, {})", seeds.join(", "))
                    })
                    .collect();
                format!(
                    "ew_mul(g, {name}_f(p, {}){})",
                    seeded.join(", "),
                    ".d".repeat(order)
                )
            }
            Some(_) if order == 1 => format!("{name}_g<T>(p, a0, {}, g)", value_args.join(", ")),
            Some(_) => {
                let seeded: Vec<String> = (0..n)
                    .map(|m| {
                        let seeds: Vec<String> =
                            (1..order).map(|k| format!("a{k} == {m}")).collect();
                        format!("ew_seed{}<T>(x{m}, {})", order - 1, seeds.join(", "))
                    })
                    .collect();
                let lifted = if order == 2 {
                    "Dual<T>(g)"
                } else {
                    "Dual<Dual<T>>(g)"
                };
                format!(
                    "{name}_g(p, a0, {}, {lifted}){}",
                    seeded.join(", "),
                    ".d".repeat(order - 1)
                )
            }
        };
        cases.push_str(&format!(
            "#if AUTOGRAD_ORDERS & {:#x}\n      case {order}: r = {value}; break;\n#endif\n",
            1 << order
        ));
    }
    let inits: Vec<String> = (0..fields.len()).map(|k| format!("p{k}")).collect();
    s.push_str(&format!(
        "// One element: the value (what = 0), or the derivative of order what & 0xff\n\
         // along inputs a0, a1, a2 (the next bytes of what), times g. Fused chains call\n\
         // it too, with {name}_make's parameters.\n\
         template <typename T>\n\
         __device__ __forceinline__ T {name}_at(unsigned long long what, T x0, T x1, T x2, T x3, T g, \
         const {name}_params& p) {{\n\
           const int order = (int)(what & 0xff), a0 = (int)((what >> 8) & 0xff), \
         a1 = (int)((what >> 16) & 0xff), a2 = (int)((what >> 24) & 0xff);\n\
           (void)x1; (void)x2; (void)x3; (void)g; (void)a0; (void)a1; (void)a2;\n\
           T r;\n\
           switch (order) {{\n{cases}      default: r = T(0.0);\n  }}\n  return r;\n}}\n\
         __device__ __forceinline__ {name}_params {name}_make(double p0, double p1, double p2, double p3) {{\n\
           (void)p0; (void)p1; (void)p2; (void)p3;\n  const {name}_params p = {{{}}};\n  return p;\n}}\n\
         // A fused chain's kernel includes the program for its functions alone, in a\n\
         // namespace of its own (another op of the same name may be in the chain too).\n\
         #ifndef AUTOGRAD_FUNCTIONS_ONLY\n\
         // One pass over n elements of {name}_at.\n\
         template <typename T>\n\
         __device__ __forceinline__ void {name}_run(unsigned long long n, unsigned long long what, \
         const T* __restrict__ x0, const T* __restrict__ x1, const T* __restrict__ x2, \
         const T* __restrict__ x3, const T* __restrict__ g, T* __restrict__ out, const {name}_params& p) {{\n\
           for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n; \
         i += (unsigned long long)gridDim.x * blockDim.x) {{\n\
             out[i] = {name}_at<T>(what, x0[i], x1[i], x2[i], x3[i], g[i], p);\n  }}\n}}\n",
        inits.join(", ")
    ));
    // The entry points, each under its dtype's guard (AUTOGRAD_F32, AUTOGRAD_F64).
    for (ty, suffix, guard) in [
        ("float", "f32", "AUTOGRAD_F32"),
        ("double", "f64", "AUTOGRAD_F64"),
    ] {
        s.push_str(&format!(
            "#if {guard}\n\
             extern \"C\" __global__ void {name}_{suffix}(unsigned long long n, unsigned long long what, \
             const {ty}* x0, const {ty}* x1, const {ty}* x2, const {ty}* x3, const {ty}* g, {ty}* out, \
             double p0, double p1, double p2, double p3) {{\n  \
             (void)p0; (void)p1; (void)p2; (void)p3;\n  \
             const {name}_params p = {{{}}};\n  \
             {name}_run<{ty}>(n, what, x0, x1, x2, x3, g, out, p);\n}}\n\
             #endif\n",
            inits.join(", ")
        ));
    }
    s.push_str("#endif\n");
    s
}

/// `__op.<field>` and the kernel loops use these names; keeps the generated code
/// independent of what the user's module imports.
pub(crate) fn imports(p: &TokenStream) -> TokenStream {
    quote! {
        #[allow(unused_imports)]
        use #p::elementwise::{Mask as __Mask, Real as __Real};
    }
}
