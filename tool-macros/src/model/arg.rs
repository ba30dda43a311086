//! A model argument ([`Arg`]): one property of the arguments' JSON Schema, with the bounds of its
//! `#[arg(...)]` checked.

use proc_macro2::Span;
use syn::spanned::Spanned;
use syn::{Expr, ExprLit, Ident, Lit, LitStr, Type};

use super::{Errors, unraw};
use crate::options::{ArgOptions, DefaultValue};

/// A model argument: one property of the JSON Schema.
pub(crate) struct Arg {
    pub(crate) ident: Ident,
    /// The type decoded: the parameter's type, or `String` for `&str` and `Vec<T>` for `&[T]`.
    pub(crate) decoded: Type,
    /// The parameter's type as written (for spans).
    pub(crate) written: Type,
    /// `true` when the function takes a borrow of the decoded value (`&str`, `&[T]`).
    pub(crate) borrowed: bool,
    /// The property description (may be empty).
    pub(crate) doc: String,
    pub(crate) rename: Option<LitStr>,
    pub(crate) default: Option<DefaultValue>,
    /// The bounds of `#[arg(range(..), length(..), pattern = "..")]`, checked.
    pub(crate) bounds: Vec<Bound>,
    /// `#[arg(from_model)]`: the model sends it although its type looks like state.
    pub(crate) from_model: bool,
    /// An error already says that the argument is a forgotten `#[depends(KEY)]` (in a `#[tools]`
    /// block, see `methods`): the shared-state probe of its type would say it again.
    pub(crate) state_reported: bool,
}

/// One bound of `#[arg(...)]`, with the span of the option that states it.
pub(crate) struct Bound {
    pub(crate) kind: BoundKind,
    pub(crate) span: Span,
}

/// What a [`Bound`] states.
pub(crate) enum BoundKind {
    /// `range(min = ..)`: the number as written (`-1`, `0.5`) and its value.
    Minimum(Number),
    /// `range(max = ..)`.
    Maximum(Number),
    /// `length(min = ..)` (or `equal`).
    MinLength(u64),
    /// `length(max = ..)` (or `equal`).
    MaxLength(u64),
    /// `pattern = ".."`.
    Pattern(String),
}

/// A number literal of `range(..)`.
#[derive(Clone, Copy)]
pub(crate) enum Number {
    Int(i64),
    Float(f64),
}

impl Number {
    fn value(self) -> f64 {
        match self {
            #[allow(clippy::cast_precision_loss)]
            Self::Int(n) => n as f64,
            Self::Float(n) => n,
        }
    }
}

/// Reads a `range` bound: an integer or float literal, optionally negated.
fn number(expr: &Expr, errors: &mut Errors) -> Option<Number> {
    let (negative, lit) = match expr {
        Expr::Unary(syn::ExprUnary { op: syn::UnOp::Neg(_), expr, .. }) => (true, &**expr),
        other => (false, other),
    };
    let parsed = match lit {
        Expr::Lit(ExprLit { lit: Lit::Int(int), .. }) => {
            int.base10_parse::<i64>().ok().map(|n| Number::Int(if negative { -n } else { n }))
        }
        Expr::Lit(ExprLit { lit: Lit::Float(float), .. }) => float
            .base10_parse::<f64>()
            .ok()
            .filter(|n| n.is_finite())
            .map(|n| Number::Float(if negative { -n } else { n })),
        _ => None,
    };
    if parsed.is_none() {
        errors.push(
            expr.span(),
            "a `range` bound is a number literal that fits an `i64` or an `f64`: `range(min = 1, max = 1000)`",
        );
    }
    parsed
}

/// The checked bounds of `options`: number literals, `min` at most `max`, a pattern that is a
/// valid regular expression.
pub(super) fn bounds_of(options: &ArgOptions, errors: &mut Errors) -> Vec<Bound> {
    let mut bounds = Vec::new();
    if let Some(range) = &options.range {
        let min = range.min.as_ref().and_then(|e| Some((number(e, errors)?, e.span())));
        let max = range.max.as_ref().and_then(|e| Some((number(e, errors)?, e.span())));
        if let (Some((low, _)), Some((high, span))) = (min, max)
            && low.value() > high.value()
        {
            errors.push(span, "`range(..)` has `min` above `max`, so no value fits; swap them or fix one");
        }
        if range.min.is_none() && range.max.is_none() {
            errors.push(Span::call_site(), "`range(..)` needs `min = N`, `max = N` or both");
        }
        bounds.extend(min.map(|(n, span)| Bound { kind: BoundKind::Minimum(n), span }));
        bounds.extend(max.map(|(n, span)| Bound { kind: BoundKind::Maximum(n), span }));
    }
    if let Some(length) = &options.length {
        let read = |lit: &Option<syn::LitInt>, errors: &mut Errors| {
            let lit = lit.as_ref()?;
            match lit.base10_parse::<u64>() {
                Ok(n) => Some((n, lit.span())),
                Err(_) => {
                    errors.push(lit.span(), "a `length` bound is a count: a non-negative integer literal");
                    None
                }
            }
        };
        let (mut min, mut max) = (read(&length.min, errors), read(&length.max, errors));
        if let Some(equal) = read(&length.equal, errors) {
            if min.is_some() || max.is_some() {
                errors.push(
                    equal.1,
                    "`length(equal = N)` is `min` and `max` at once; remove `min` and `max`, or `equal`",
                );
            }
            (min, max) = (Some(equal), Some(equal));
        }
        if let (Some((low, _)), Some((high, span))) = (min, max)
            && low > high
        {
            errors.push(span, "`length(..)` has `min` above `max`, so no value fits; swap them or fix one");
        }
        if length.min.is_none() && length.max.is_none() && length.equal.is_none() {
            errors.push(Span::call_site(), "`length(..)` needs `min = N`, `max = N`, both, or `equal = N`");
        }
        bounds.extend(min.map(|(n, span)| Bound { kind: BoundKind::MinLength(n), span }));
        bounds.extend(max.map(|(n, span)| Bound { kind: BoundKind::MaxLength(n), span }));
    }
    if let Some(pattern) = &options.pattern {
        // The rule decoding's check is held to at registry build, from the same source file.
        match tool_pattern::pattern_problem(&pattern.value()) {
            None => bounds.push(Bound { kind: BoundKind::Pattern(pattern.value()), span: pattern.span() }),
            Some(problem) => errors.push(pattern.span(), format!("`pattern` {problem}")),
        }
    }
    bounds
}

impl Arg {
    /// The property name the model sees.
    pub(crate) fn wire_name(&self) -> String {
        self.rename.as_ref().map_or_else(|| unraw(&self.ident), LitStr::value)
    }
}
