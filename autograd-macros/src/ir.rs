//! The scalar function of an elementwise op as a small typed tree: parsed from the
//! user's body once, every construct checked once against the supported subset of
//! Rust (anything else is an error on its own tokens listing what is supported).
//! The printers (`elementwise::rust`, `elementwise::cuda`) read the tree and check
//! nothing.

use proc_macro2::Span;
use quote::ToTokens;
use syn::{BinOp, Ident, Lit, Pat, Stmt, UnOp};

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
    ("tan", 0),
    ("asin", 0),
    ("acos", 0),
    ("atan", 0),
    ("atan2", 1),
    ("sinh", 0),
    ("cosh", 0),
    ("asinh", 0),
    ("acosh", 0),
    ("atanh", 0),
    ("floor", 0),
    ("ceil", 0),
    ("round_ties_even", 0),
    ("trunc", 0),
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
pub(crate) enum Kind {
    Real,
    Mask,
}

/// A checked function body: its `let`s and its value.
pub(crate) struct Function {
    pub body: Block,
    /// The parameter fields read (`self.<name>`), in order of first use.
    pub fields: Vec<Ident>,
}

/// A block: `let` statements, then the value.
pub(crate) struct Block {
    pub lets: Vec<Let>,
    pub value: Expr,
}

/// `let <ident> = <value>;`, of a number or a truth value.
pub(crate) struct Let {
    pub ident: Ident,
    pub kind: Kind,
    pub value: Expr,
}

/// `+ - * /` on numbers.
#[derive(Clone, Copy)]
pub(crate) enum Arith {
    Add,
    Sub,
    Mul,
    Div,
}

/// A comparison of numbers.
#[derive(Clone, Copy)]
pub(crate) enum Compare {
    Lt,
    Le,
    Gt,
    Ge,
    Eq,
    Ne,
}

/// `&&` or `||` of truth values.
#[derive(Clone, Copy)]
pub(crate) enum Logic {
    And,
    Or,
}

/// A checked expression.
pub(crate) enum Expr {
    /// An input or a `let` binding, as named at this use.
    Name(Ident),
    /// `self.<name>`: a parameter of the op.
    Field(Ident),
    /// A number literal, with its span.
    Real(f64, Span),
    /// `true` or `false`.
    Bool(bool),
    /// `powi`'s integer exponent.
    Int(i32),
    /// `( .. )` as written.
    Paren(Box<Expr>),
    Neg(Box<Expr>),
    Not(Box<Expr>),
    Arith(Arith, Box<Expr>, Box<Expr>),
    Compare(Compare, Box<Expr>, Box<Expr>),
    Logic(Logic, Box<Expr>, Box<Expr>),
    /// `if c { a } else { b }`: both computed, one kept per element.
    Select(Box<Expr>, Box<Block>, Box<Expr>),
    /// An inner block `{ let ..; value }`.
    Block(Box<Block>),
    /// A supported method (`METHODS`) on its receiver, named with the user's span.
    Method(Ident, Box<Expr>, Vec<Expr>),
    /// The final tuple of a backward of several gradients.
    Tuple(Vec<Expr>),
}

/// An expression and its kind, while parsing.
struct Typed {
    expr: Expr,
    kind: Kind,
}

impl Typed {
    fn real(expr: Expr) -> Option<Typed> {
        Some(Typed {
            expr,
            kind: Kind::Real,
        })
    }

    fn mask(expr: Expr) -> Option<Typed> {
        Some(Typed {
            expr,
            kind: Kind::Mask,
        })
    }
}

/// Parses and checks the body of an elementwise forward whose inputs are `inputs`.
pub(crate) fn forward(body: &syn::Block, inputs: &[Ident]) -> Result<Function, Vec<syn::Error>> {
    let mut p = Parser::new(inputs, None);
    let out = p.block(body, true);
    if let Some(out) = &out
        && out.kind == Kind::Mask
    {
        p.error(
            body,
            "an elementwise function returns a number, and this is a comparison",
        );
    }
    p.finish(out)
}

/// Parses and checks the body of an elementwise backward whose parameters are
/// `names` and which returns `outputs` gradients (a tuple when several).
pub(crate) fn backward(
    body: &syn::Block,
    names: &[Ident],
    outputs: usize,
) -> Result<Function, Vec<syn::Error>> {
    let mut p = Parser::new(names, (outputs > 1).then_some(outputs));
    let out = p.block(body, true);
    if let Some(out) = &out
        && out.kind == Kind::Mask
    {
        p.error(body, "a gradient is a number, and this is a comparison");
    }
    p.finish(out)
}

struct Parser<'a> {
    inputs: &'a [Ident],
    /// `let` bindings in scope, innermost last.
    locals: Vec<(Ident, Kind)>,
    fields: Vec<Ident>,
    errors: Vec<syn::Error>,
    /// For a backward of several gradients: how many the final tuple holds.
    tuple: Option<usize>,
}

impl<'a> Parser<'a> {
    fn new(inputs: &'a [Ident], tuple: Option<usize>) -> Self {
        Parser {
            inputs,
            locals: Vec::new(),
            fields: Vec::new(),
            errors: Vec::new(),
            tuple,
        }
    }

    fn finish(self, out: Option<Typed>) -> Result<Function, Vec<syn::Error>> {
        match out {
            Some(Typed {
                expr: Expr::Block(body),
                ..
            }) if self.errors.is_empty() => Ok(Function {
                body: *body,
                fields: self.fields,
            }),
            _ => Err(self.errors),
        }
    }

    fn error(&mut self, at: impl ToTokens, msg: impl std::fmt::Display) {
        self.errors.push(syn::Error::new_spanned(at, msg));
    }

    fn unsupported(&mut self, at: impl ToTokens, what: &str) -> Option<Typed> {
        let msg = format!(
            "{what} is not supported in an elementwise function: {}",
            supported()
        );
        self.error(at, msg);
        None
    }

    /// A block: `let` statements, then the value. `top` is the function body (whose
    /// value is a backward's tuple of gradients where it returns several). The
    /// result is an `Expr::Block`.
    fn block(&mut self, b: &syn::Block, top: bool) -> Option<Typed> {
        let scope = self.locals.len();
        let mut lets = Vec::new();
        let mut value: Option<Typed> = None;
        let mut ok = true;
        for (k, stmt) in b.stmts.iter().enumerate() {
            let last = k + 1 == b.stmts.len();
            match stmt {
                Stmt::Local(local) => match self.local(local) {
                    Some(l) => lets.push(l),
                    None => ok = false,
                },
                Stmt::Expr(e, None) if last => {
                    value = match (top, self.tuple) {
                        (true, Some(n)) => self.tuple(e, n),
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
        Some(Typed {
            kind: value.kind,
            expr: Expr::Block(Box::new(Block {
                lets,
                value: value.expr,
            })),
        })
    }

    /// A `let` statement; `None` after an error (the name is still bound when it
    /// has one, so that its uses are not reported too).
    fn local(&mut self, local: &syn::Local) -> Option<Let> {
        let Some((ident, ty)) = local_name(&local.pat) else {
            self.error(
                &local.pat,
                "a `let` here binds one name: write `let y = ..;`",
            );
            return None;
        };
        let mut ok = true;
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
            return None;
        };
        if let Some((else_token, _)) = &init.diverge {
            self.error(
                else_token,
                "`let .. else` is not supported in an elementwise function",
            );
            return None;
        }
        let Some(v) = self.expr(&init.expr) else {
            // Still bind the name, so that its uses are not reported too.
            self.locals.push((ident.clone(), Kind::Real));
            return None;
        };
        self.locals.push((ident.clone(), v.kind));
        ok.then(|| Let {
            ident: ident.clone(),
            kind: v.kind,
            value: v.expr,
        })
    }

    /// The final tuple of a backward of `n` gradients.
    fn tuple(&mut self, e: &syn::Expr, n: usize) -> Option<Typed> {
        let syn::Expr::Tuple(t) = e else {
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
        let elems: Vec<Option<Typed>> = t.elems.iter().map(|e| self.expr(e)).collect();
        let elems: Vec<Typed> = elems.into_iter().collect::<Option<_>>()?;
        if elems.iter().any(|e| e.kind != Kind::Real) {
            self.error(t, "a gradient is a number, not a comparison");
            return None;
        }
        Typed::real(Expr::Tuple(elems.into_iter().map(|e| e.expr).collect()))
    }

    /// An expression used as a statement (never supported): the error of the
    /// expression itself where it has one (a loop, an `if` without `else`).
    fn statement(&mut self, e: &syn::Expr) {
        use syn::Expr as E;
        match e {
            E::ForLoop(_)
            | E::While(_)
            | E::Loop(_)
            | E::If(_)
            | E::Macro(_)
            | E::Assign(_)
            | E::Return(_) => {
                self.expr(e);
            }
            _ => {
                self.unsupported(e, "a statement other than `let`");
            }
        }
    }

    fn expr(&mut self, e: &syn::Expr) -> Option<Typed> {
        use syn::Expr as E;
        match e {
            E::Lit(l) => self.literal(&l.lit),
            E::Paren(p) => {
                let inner = self.expr(&p.expr)?;
                Some(Typed {
                    kind: inner.kind,
                    expr: Expr::Paren(Box::new(inner.expr)),
                })
            }
            E::Group(g) => self.expr(&g.expr),
            E::Path(p) => self.path(p),
            E::Field(f) => {
                let is_self = matches!(&*f.base, E::Path(p) if p.path.is_ident("self"));
                match (&f.member, is_self) {
                    (syn::Member::Named(name), true) => {
                        if !self.fields.contains(name) {
                            self.fields.push(name.clone());
                        }
                        Typed::real(Expr::Field(name.clone()))
                    }
                    _ => self.unsupported(f, "a field other than `self.<param>`"),
                }
            }
            E::Unary(u) => self.unary(u),
            E::Binary(b) => self.binary(b),
            E::If(i) => self.if_else(i),
            E::Block(b) if b.label.is_none() => self.block(&b.block, false),
            E::MethodCall(m) => {
                let receiver = self.expr(&m.receiver);
                let args = self.args(&m.method, m.args.iter());
                if let Some(t) = &m.turbofish {
                    self.error(t, "the methods here take no type arguments");
                    return None;
                }
                self.method(&m.method, receiver?, args, m)
            }
            E::Call(c) => self.call(c),
            E::Cast(c) => {
                let inner = self.expr(&c.expr)?;
                if inner.kind == Kind::Real && is_scalar_type(&c.ty) {
                    Some(inner)
                } else {
                    self.unsupported(c, "this cast")
                }
            }
            E::ForLoop(f) => self.unsupported(f.for_token, "a loop"),
            E::While(w) => self.unsupported(w.while_token, "a loop"),
            E::Loop(l) => self.unsupported(l.loop_token, "a loop"),
            E::Return(r) => self.unsupported(r.return_token, "`return`"),
            E::Macro(m) => self.unsupported(&m.mac.path, "a macro"),
            E::Index(i) => self.unsupported(i, "indexing"),
            E::Reference(r) => self.unsupported(r, "a reference"),
            E::Closure(c) => self.unsupported(c, "a closure"),
            E::Match(m) => self.unsupported(m.match_token, "`match`"),
            E::Assign(a) => self.unsupported(a, "an assignment"),
            E::Try(t) => self.unsupported(t, "`?`"),
            other => self.unsupported(other, "this expression"),
        }
    }

    /// A name: a `let` binding, an input, or an error.
    fn path(&mut self, p: &syn::ExprPath) -> Option<Typed> {
        let Some(ident) = p.path.get_ident().filter(|_| p.qself.is_none()) else {
            return self.unsupported(p, "this path");
        };
        if let Some((_, kind)) = self.locals.iter().rev().find(|(n, _)| n == ident) {
            return Some(Typed {
                expr: Expr::Name(ident.clone()),
                kind: *kind,
            });
        }
        if self.inputs.contains(ident) {
            return Typed::real(Expr::Name(ident.clone()));
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

    fn unary(&mut self, u: &syn::ExprUnary) -> Option<Typed> {
        let inner = self.expr(&u.expr)?;
        match (&u.op, inner.kind) {
            (UnOp::Neg(_), Kind::Real) => Typed::real(Expr::Neg(Box::new(inner.expr))),
            (UnOp::Not(_), Kind::Mask) => Typed::mask(Expr::Not(Box::new(inner.expr))),
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

    /// A method's arguments (`powi`'s first is its integer exponent).
    fn args<'e>(
        &mut self,
        method: &Ident,
        args: impl Iterator<Item = &'e syn::Expr>,
    ) -> Vec<Option<Typed>> {
        args.enumerate()
            .map(|(k, a)| {
                if method == "powi" && k == 0 {
                    self.integer(a)
                } else {
                    self.expr(a)
                }
            })
            .collect()
    }

    /// `f32::exp(x)`: a method called as a function.
    fn call(&mut self, c: &syn::ExprCall) -> Option<Typed> {
        let path = match &*c.func {
            syn::Expr::Path(p) if p.qself.is_none() && p.path.segments.len() == 2 => &p.path,
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
        let rest = self.args(method, args);
        self.method(method, receiver?, rest, c)
    }

    fn literal(&mut self, lit: &Lit) -> Option<Typed> {
        let value: f64 = match lit {
            Lit::Float(f) if matches!(f.suffix(), "" | "f32" | "f64") => f.base10_parse().ok()?,
            Lit::Int(i) if matches!(i.suffix(), "" | "f32" | "f64") => i.base10_parse().ok()?,
            Lit::Bool(b) => return Typed::mask(Expr::Bool(b.value)),
            other => return self.unsupported(other, "this literal"),
        };
        Typed::real(Expr::Real(value, lit.span()))
    }

    /// `powi`'s exponent: an integer literal, possibly negated.
    fn integer(&mut self, e: &syn::Expr) -> Option<Typed> {
        let (neg, lit) = match e {
            syn::Expr::Unary(u) if matches!(u.op, UnOp::Neg(_)) => (true, &*u.expr),
            other => (false, other),
        };
        if let syn::Expr::Lit(l) = lit
            && let Lit::Int(i) = &l.lit
        {
            let v: i32 = i.base10_parse().ok()?;
            return Typed::real(Expr::Int(if neg { -v } else { v }));
        }
        self.error(
            e,
            "`powi` takes an integer literal (`x.powi(3)`); use `powf` for other exponents",
        );
        None
    }

    fn binary(&mut self, b: &syn::ExprBinary) -> Option<Typed> {
        let (l, r) = (self.expr(&b.left), self.expr(&b.right));
        let (l, r) = (l?, r?);
        let reals = l.kind == Kind::Real && r.kind == Kind::Real;
        let masks = l.kind == Kind::Mask && r.kind == Kind::Mask;
        let (l, r) = (Box::new(l.expr), Box::new(r.expr));
        let arith = match &b.op {
            BinOp::Add(_) => Some(Arith::Add),
            BinOp::Sub(_) => Some(Arith::Sub),
            BinOp::Mul(_) => Some(Arith::Mul),
            BinOp::Div(_) => Some(Arith::Div),
            _ => None,
        };
        let logic = match &b.op {
            BinOp::And(_) => Some(Logic::And),
            BinOp::Or(_) => Some(Logic::Or),
            _ => None,
        };
        match (arith, compare(&b.op), logic) {
            (Some(op), _, _) if reals => Typed::real(Expr::Arith(op, l, r)),
            (_, Some(op), _) if reals => Typed::mask(Expr::Compare(op, l, r)),
            (_, _, Some(op)) if masks => Typed::mask(Expr::Logic(op, l, r)),
            (Some(_), _, _) => {
                self.error(
                    b.op,
                    "arithmetic applies to numbers, and an operand here is a comparison",
                );
                None
            }
            (_, Some(_), _) => {
                self.error(
                    b.op,
                    "comparisons apply to numbers, and an operand here is a comparison",
                );
                None
            }
            (_, _, Some(_)) => {
                self.error(
                    b.op,
                    "`&&` and `||` join comparisons (`x > 0.0 && x < 1.0`)",
                );
                None
            }
            _ => self.unsupported(b.op, "this operator"),
        }
    }

    fn if_else(&mut self, i: &syn::ExprIf) -> Option<Typed> {
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
        let Expr::Block(then) = then.expr else {
            return None;
        };
        Typed::real(Expr::Select(
            Box::new(cond.expr),
            then,
            Box::new(other.expr),
        ))
    }

    fn method(
        &mut self,
        method: &Ident,
        receiver: Typed,
        args: Vec<Option<Typed>>,
        at: impl ToTokens,
    ) -> Option<Typed> {
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
        let args: Vec<Typed> = args.into_iter().collect::<Option<_>>()?;
        if receiver.kind != Kind::Real
            || (name != "powi" && args.iter().any(|a| a.kind != Kind::Real))
        {
            self.error(method, format!("`{name}` applies to numbers"));
            return None;
        }
        let args = args.into_iter().map(|a| a.expr).collect();
        Typed::real(Expr::Method(
            Ident::new(&name, method.span()),
            Box::new(receiver.expr),
            args,
        ))
    }
}

/// The comparison a binary operator is, if it is one.
fn compare(op: &BinOp) -> Option<Compare> {
    Some(match op {
        BinOp::Lt(_) => Compare::Lt,
        BinOp::Le(_) => Compare::Le,
        BinOp::Gt(_) => Compare::Gt,
        BinOp::Ge(_) => Compare::Ge,
        BinOp::Eq(_) => Compare::Eq,
        BinOp::Ne(_) => Compare::Ne,
        _ => return None,
    })
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
