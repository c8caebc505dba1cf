//! The scalar types generated elementwise kernels are written over.
//!
//! `#[differentiable]` turns an elementwise forward written for `f32`
//! (`fn forward(x: f32) -> f32 { x * (1.0 + x.exp()).ln().tanh() }`) into a function
//! generic over [`Real`]: every literal becomes `Real::lit`, every comparison a
//! [`Real::Mask`], every `if`/`else` a [`Real::select`] (both branches are
//! computed, so the loop over a buffer has no branch and vectorizes). Instantiated
//! with `f32` and `f64` it is the forward kernel; instantiated with [`Dual`] numbers
//! (nested for higher orders) it computes the derivatives, so the derivative is
//! never written by hand and always agrees with the forward. The transcendental
//! methods of `f32` and `f64` are [`crate::math`]'s, which vectorize, except the
//! trigonometric and hyperbolic ones beyond `sin`, `cos` and `tanh` (`tan`,
//! `asin`, .., `atanh`) and `floor`, `ceil`, `trunc`: those are `std`'s (calls into
//! the C math library, one element at a time) until `math` has its own.

use std::ops::{Add, Div, Mul, Neg, Sub};

/// A truth value per element: `bool` for plain numbers, the same for dual numbers
/// (whose comparisons look at the value, not the derivative part).
pub trait Mask: Copy {
    /// Both.
    fn and(self, other: Self) -> Self;
    /// Either.
    fn or(self, other: Self) -> Self;
    /// The opposite.
    fn not(self) -> Self;
}

impl Mask for bool {
    #[inline(always)]
    fn and(self, other: Self) -> Self {
        self & other
    }
    #[inline(always)]
    fn or(self, other: Self) -> Self {
        self | other
    }
    #[inline(always)]
    fn not(self) -> Self {
        !self
    }
}

/// A real number type an elementwise kernel computes in: `f32`, `f64`, or a
/// [`Dual`] number over one of them. The methods are those of the supported subset
/// of Rust that `#[differentiable]` translates (with the same names as `f32`'s).
pub trait Real:
    Copy
    + Add<Output = Self>
    + Sub<Output = Self>
    + Mul<Output = Self>
    + Div<Output = Self>
    + Neg<Output = Self>
{
    /// What a comparison gives.
    type Mask: Mask;

    /// A constant (a literal of the source, or a parameter of the op).
    fn lit(v: f64) -> Self;
    /// `e^x`.
    fn exp(self) -> Self;
    /// `e^x - 1`, accurate near 0.
    fn exp_m1(self) -> Self;
    /// The natural logarithm.
    fn ln(self) -> Self;
    /// `ln(1 + x)`, accurate near 0.
    fn ln_1p(self) -> Self;
    /// The square root.
    fn sqrt(self) -> Self;
    /// The hyperbolic tangent.
    fn tanh(self) -> Self;
    /// The sine (radians).
    fn sin(self) -> Self;
    /// The cosine (radians).
    fn cos(self) -> Self;
    /// The error function.
    fn erf(self) -> Self;
    /// The tangent (radians).
    fn tan(self) -> Self;
    /// The arcsine (NaN outside `[-1, 1]`).
    fn asin(self) -> Self;
    /// The arccosine (NaN outside `[-1, 1]`).
    fn acos(self) -> Self;
    /// The arctangent.
    fn atan(self) -> Self;
    /// The angle of the point `(other, self)`: `atan2(y, x)` with `self` as `y`.
    fn atan2(self, other: Self) -> Self;
    /// The hyperbolic sine.
    fn sinh(self) -> Self;
    /// The hyperbolic cosine.
    fn cosh(self) -> Self;
    /// The inverse hyperbolic sine.
    fn asinh(self) -> Self;
    /// The inverse hyperbolic cosine (NaN below 1).
    fn acosh(self) -> Self;
    /// The inverse hyperbolic tangent (NaN outside `[-1, 1]`).
    fn atanh(self) -> Self;
    /// The largest integer not above `x`; its derivative is 0.
    fn floor(self) -> Self;
    /// The smallest integer not below `x`; its derivative is 0.
    fn ceil(self) -> Self;
    /// The nearest integer, ties to even (`torch.round`); its derivative is 0.
    fn round_ties_even(self) -> Self;
    /// The integer part, towards 0; its derivative is 0.
    fn trunc(self) -> Self;
    /// `|x|`; its derivative is 0 at 0.
    fn abs(self) -> Self;
    /// `1 / x`.
    fn recip(self) -> Self;
    /// `x^y`. Its derivatives follow PyTorch's at the kinks: with respect to `x`, 0
    /// where `y = 0`; with respect to `y`, 0 where `x = 0` and `y >= 0`.
    fn powf(self, y: Self) -> Self;
    /// `x^n`.
    fn powi(self, n: i32) -> Self;
    /// The smaller; at a tie the derivative is the mean of both.
    fn min(self, other: Self) -> Self;
    /// The larger; at a tie the derivative is the mean of both.
    fn max(self, other: Self) -> Self;
    /// `self < other`.
    fn lt(self, other: Self) -> Self::Mask;
    /// `self <= other`.
    fn le(self, other: Self) -> Self::Mask;
    /// `self > other`.
    fn gt(self, other: Self) -> Self::Mask;
    /// `self >= other`.
    fn ge(self, other: Self) -> Self::Mask;
    /// `self == other`.
    fn eq(self, other: Self) -> Self::Mask;
    /// `self != other`.
    fn ne(self, other: Self) -> Self::Mask;
    /// `a` where `mask`, else `b`.
    fn select(mask: Self::Mask, a: Self, b: Self) -> Self;
}

macro_rules! plain_real {
    ($t:ident) => {
        impl Real for $t {
            type Mask = bool;

            #[inline(always)]
            fn lit(v: f64) -> Self {
                v as $t
            }
            #[inline(always)]
            fn exp(self) -> Self {
                crate::math::$t::exp(self)
            }
            #[inline(always)]
            fn exp_m1(self) -> Self {
                crate::math::$t::exp_m1(self)
            }
            #[inline(always)]
            fn ln(self) -> Self {
                crate::math::$t::ln(self)
            }
            #[inline(always)]
            fn ln_1p(self) -> Self {
                crate::math::$t::ln_1p(self)
            }
            #[inline(always)]
            fn sqrt(self) -> Self {
                $t::sqrt(self)
            }
            #[inline(always)]
            fn tanh(self) -> Self {
                crate::math::$t::tanh(self)
            }
            #[inline(always)]
            fn sin(self) -> Self {
                crate::math::$t::sin(self)
            }
            #[inline(always)]
            fn cos(self) -> Self {
                crate::math::$t::cos(self)
            }
            #[inline(always)]
            fn erf(self) -> Self {
                crate::math::$t::erf(self)
            }
            #[inline(always)]
            fn tan(self) -> Self {
                $t::tan(self)
            }
            #[inline(always)]
            fn asin(self) -> Self {
                $t::asin(self)
            }
            #[inline(always)]
            fn acos(self) -> Self {
                $t::acos(self)
            }
            #[inline(always)]
            fn atan(self) -> Self {
                $t::atan(self)
            }
            #[inline(always)]
            fn atan2(self, other: Self) -> Self {
                $t::atan2(self, other)
            }
            #[inline(always)]
            fn sinh(self) -> Self {
                $t::sinh(self)
            }
            #[inline(always)]
            fn cosh(self) -> Self {
                $t::cosh(self)
            }
            #[inline(always)]
            fn asinh(self) -> Self {
                $t::asinh(self)
            }
            #[inline(always)]
            fn acosh(self) -> Self {
                $t::acosh(self)
            }
            #[inline(always)]
            fn atanh(self) -> Self {
                $t::atanh(self)
            }
            #[inline(always)]
            fn floor(self) -> Self {
                $t::floor(self)
            }
            #[inline(always)]
            fn ceil(self) -> Self {
                $t::ceil(self)
            }
            #[inline(always)]
            fn round_ties_even(self) -> Self {
                crate::math::$t::round_ties_even(self)
            }
            #[inline(always)]
            fn trunc(self) -> Self {
                $t::trunc(self)
            }
            #[inline(always)]
            fn abs(self) -> Self {
                $t::abs(self)
            }
            #[inline(always)]
            fn recip(self) -> Self {
                1.0 / self
            }
            #[inline(always)]
            fn powf(self, y: Self) -> Self {
                crate::math::$t::powf(self, y)
            }
            #[inline(always)]
            fn powi(self, n: i32) -> Self {
                // By squaring: with the exponent a literal of the source, the loop
                // unrolls to a few multiplications (std's powi is a call).
                let mut e = n.unsigned_abs();
                let (mut base, mut acc) = (self, 1.0 as $t);
                while e > 0 {
                    if e & 1 == 1 {
                        acc *= base;
                    }
                    base *= base;
                    e >>= 1;
                }
                if n < 0 { 1.0 / acc } else { acc }
            }
            #[inline(always)]
            fn min(self, other: Self) -> Self {
                if other < self { other } else { self }
            }
            #[inline(always)]
            fn max(self, other: Self) -> Self {
                if other > self { other } else { self }
            }
            #[inline(always)]
            fn lt(self, other: Self) -> bool {
                self < other
            }
            #[inline(always)]
            fn le(self, other: Self) -> bool {
                self <= other
            }
            #[inline(always)]
            fn gt(self, other: Self) -> bool {
                self > other
            }
            #[inline(always)]
            fn ge(self, other: Self) -> bool {
                self >= other
            }
            #[inline(always)]
            fn eq(self, other: Self) -> bool {
                self == other
            }
            #[inline(always)]
            fn ne(self, other: Self) -> bool {
                self != other
            }
            #[inline(always)]
            fn select(mask: bool, a: Self, b: Self) -> Self {
                if mask { a } else { b }
            }
        }
    };
}

plain_real!(f32);
plain_real!(f64);

/// A dual number `v + d·ε` with `ε² = 0`: computing `f` on `x + ε` gives `f(x)`
/// and `f'(x)` together. Nested (`Dual<Dual<f64>>`) it gives second derivatives,
/// and so on.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Dual<T> {
    /// The value.
    pub v: T,
    /// The derivative part.
    pub d: T,
}

impl<T: Real> Dual<T> {
    /// `v` as a constant (derivative 0).
    #[inline(always)]
    pub fn constant(v: T) -> Self {
        Dual { v, d: T::lit(0.0) }
    }

    /// `v` as the variable being differentiated (derivative 1).
    #[inline(always)]
    pub fn variable(v: T) -> Self {
        Dual { v, d: T::lit(1.0) }
    }

    /// `v`, seeded with derivative 1 when `seed`, else 0.
    #[inline(always)]
    pub fn seeded(v: T, seed: bool) -> Self {
        Dual {
            v,
            d: T::lit(if seed { 1.0 } else { 0.0 }),
        }
    }

    /// `f(v)` with derivative `f'(v) = df`, by the chain rule.
    #[inline(always)]
    fn chain(self, f: T, df: T) -> Self {
        Dual {
            v: f,
            d: self.d * df,
        }
    }
}

impl<T: Real> Add for Dual<T> {
    type Output = Self;
    #[inline(always)]
    fn add(self, o: Self) -> Self {
        Dual {
            v: self.v + o.v,
            d: self.d + o.d,
        }
    }
}

impl<T: Real> Sub for Dual<T> {
    type Output = Self;
    #[inline(always)]
    fn sub(self, o: Self) -> Self {
        Dual {
            v: self.v - o.v,
            d: self.d - o.d,
        }
    }
}

impl<T: Real> Mul for Dual<T> {
    type Output = Self;
    #[inline(always)]
    fn mul(self, o: Self) -> Self {
        Dual {
            v: self.v * o.v,
            d: self.d * o.v + self.v * o.d,
        }
    }
}

impl<T: Real> Div for Dual<T> {
    type Output = Self;
    #[inline(always)]
    fn div(self, o: Self) -> Self {
        let q = self.v / o.v;
        Dual {
            v: q,
            d: (self.d - q * o.d) / o.v,
        }
    }
}

impl<T: Real> Neg for Dual<T> {
    type Output = Self;
    #[inline(always)]
    fn neg(self) -> Self {
        Dual {
            v: -self.v,
            d: -self.d,
        }
    }
}

impl<T: Real> Real for Dual<T> {
    type Mask = T::Mask;

    #[inline(always)]
    fn lit(v: f64) -> Self {
        Dual::constant(T::lit(v))
    }
    #[inline(always)]
    fn exp(self) -> Self {
        let e = self.v.exp();
        self.chain(e, e)
    }
    #[inline(always)]
    fn exp_m1(self) -> Self {
        self.chain(self.v.exp_m1(), self.v.exp())
    }
    #[inline(always)]
    fn ln(self) -> Self {
        self.chain(self.v.ln(), self.v.recip())
    }
    #[inline(always)]
    fn ln_1p(self) -> Self {
        self.chain(self.v.ln_1p(), (T::lit(1.0) + self.v).recip())
    }
    #[inline(always)]
    fn sqrt(self) -> Self {
        let s = self.v.sqrt();
        self.chain(s, (T::lit(2.0) * s).recip())
    }
    #[inline(always)]
    fn tanh(self) -> Self {
        let t = self.v.tanh();
        self.chain(t, T::lit(1.0) - t * t)
    }
    #[inline(always)]
    fn sin(self) -> Self {
        self.chain(self.v.sin(), self.v.cos())
    }
    #[inline(always)]
    fn cos(self) -> Self {
        self.chain(self.v.cos(), -self.v.sin())
    }
    #[inline(always)]
    fn erf(self) -> Self {
        let slope = T::lit(std::f64::consts::FRAC_2_SQRT_PI) * (-(self.v * self.v)).exp();
        self.chain(self.v.erf(), slope)
    }
    #[inline(always)]
    fn tan(self) -> Self {
        let t = self.v.tan();
        self.chain(t, T::lit(1.0) + t * t)
    }
    #[inline(always)]
    fn asin(self) -> Self {
        let slope = (T::lit(1.0) - self.v * self.v).sqrt().recip();
        self.chain(self.v.asin(), slope)
    }
    #[inline(always)]
    fn acos(self) -> Self {
        let slope = -(T::lit(1.0) - self.v * self.v).sqrt().recip();
        self.chain(self.v.acos(), slope)
    }
    #[inline(always)]
    fn atan(self) -> Self {
        self.chain(self.v.atan(), (T::lit(1.0) + self.v * self.v).recip())
    }
    #[inline(always)]
    fn atan2(self, x: Self) -> Self {
        // d atan2(y, x) = (x dy - y dx) / (x² + y²).
        let r2 = x.v * x.v + self.v * self.v;
        Dual {
            v: self.v.atan2(x.v),
            d: (x.v * self.d - self.v * x.d) / r2,
        }
    }
    #[inline(always)]
    fn sinh(self) -> Self {
        self.chain(self.v.sinh(), self.v.cosh())
    }
    #[inline(always)]
    fn cosh(self) -> Self {
        self.chain(self.v.cosh(), self.v.sinh())
    }
    #[inline(always)]
    fn asinh(self) -> Self {
        let slope = (self.v * self.v + T::lit(1.0)).sqrt().recip();
        self.chain(self.v.asinh(), slope)
    }
    #[inline(always)]
    fn acosh(self) -> Self {
        // 1 / √((x - 1)(x + 1)), as PyTorch's (no cancellation in x² - 1 near 1).
        let slope = ((self.v - T::lit(1.0)) * (self.v + T::lit(1.0)))
            .sqrt()
            .recip();
        self.chain(self.v.acosh(), slope)
    }
    #[inline(always)]
    fn atanh(self) -> Self {
        self.chain(self.v.atanh(), (T::lit(1.0) - self.v * self.v).recip())
    }
    #[inline(always)]
    fn floor(self) -> Self {
        self.chain(self.v.floor(), T::lit(0.0))
    }
    #[inline(always)]
    fn ceil(self) -> Self {
        self.chain(self.v.ceil(), T::lit(0.0))
    }
    #[inline(always)]
    fn round_ties_even(self) -> Self {
        self.chain(self.v.round_ties_even(), T::lit(0.0))
    }
    #[inline(always)]
    fn trunc(self) -> Self {
        self.chain(self.v.trunc(), T::lit(0.0))
    }
    #[inline(always)]
    fn abs(self) -> Self {
        let zero = T::lit(0.0);
        let sign = T::select(
            self.v.gt(zero),
            T::lit(1.0),
            T::select(self.v.lt(zero), T::lit(-1.0), zero),
        );
        self.chain(self.v.abs(), sign)
    }
    #[inline(always)]
    fn recip(self) -> Self {
        let r = self.v.recip();
        self.chain(r, -(r * r))
    }
    #[inline(always)]
    fn powf(self, y: Self) -> Self {
        let p = self.v.powf(y.v);
        let zero = T::lit(0.0);
        // d(x^y) = y x^(y-1) dx + x^y ln(x) dy; each term only where its input
        // varies, so that a constant exponent (dy = 0) of a negative base gives no
        // NaN from ln(x), nor a constant base 0 from y x^(y-1). At the kinks,
        // PyTorch's convention (pow_backward_self, pow_backward_exponent): the
        // first term is 0 where y = 0 (not 0 * 0^-1 = NaN at x = 0), the second 0
        // where x = 0 and y >= 0 (not 0 * ln 0 = NaN, nor 1 * ln 0 = -inf).
        let by_x = T::select(
            self.d.eq(zero).or(y.v.eq(zero)),
            zero,
            y.v * self.v.powf(y.v - T::lit(1.0)) * self.d,
        );
        let by_y = T::select(
            y.d.eq(zero).or(self.v.eq(zero).and(y.v.ge(zero))),
            zero,
            p * self.v.ln() * y.d,
        );
        Dual {
            v: p,
            d: by_x + by_y,
        }
    }
    #[inline(always)]
    fn powi(self, n: i32) -> Self {
        let slope = if n == 0 {
            T::lit(0.0)
        } else {
            T::lit(n as f64) * self.v.powi(n - 1)
        };
        self.chain(self.v.powi(n), slope)
    }
    #[inline(always)]
    fn min(self, o: Self) -> Self {
        let tie = Dual {
            v: self.v,
            d: (self.d + o.d) * T::lit(0.5),
        };
        // As plain `min`: `other` only where it is smaller, `self` where they are
        // unordered (NaN); the mean of the derivatives only at a true tie.
        Self::select(o.v.lt(self.v), o, Self::select(o.v.eq(self.v), tie, self))
    }
    #[inline(always)]
    fn max(self, o: Self) -> Self {
        let tie = Dual {
            v: self.v,
            d: (self.d + o.d) * T::lit(0.5),
        };
        Self::select(o.v.gt(self.v), o, Self::select(o.v.eq(self.v), tie, self))
    }
    #[inline(always)]
    fn lt(self, o: Self) -> T::Mask {
        self.v.lt(o.v)
    }
    #[inline(always)]
    fn le(self, o: Self) -> T::Mask {
        self.v.le(o.v)
    }
    #[inline(always)]
    fn gt(self, o: Self) -> T::Mask {
        self.v.gt(o.v)
    }
    #[inline(always)]
    fn ge(self, o: Self) -> T::Mask {
        self.v.ge(o.v)
    }
    #[inline(always)]
    fn eq(self, o: Self) -> T::Mask {
        self.v.eq(o.v)
    }
    #[inline(always)]
    fn ne(self, o: Self) -> T::Mask {
        self.v.ne(o.v)
    }
    #[inline(always)]
    fn select(mask: T::Mask, a: Self, b: Self) -> Self {
        Dual {
            v: T::select(mask, a.v, b.v),
            d: T::select(mask, a.d, b.d),
        }
    }
}

/// `x` as a dual number whose derivative part is 1 when `a` (the input being
/// differentiated along), else 0: `f(seed1(x, true)).d` is `f'(x)`.
#[inline(always)]
pub fn seed1<T: Real>(x: T, a: bool) -> Dual<T> {
    Dual::seeded(x, a)
}

/// `x` seeded for a second derivative: `f(seed2(x, a, b)).d.d` is `∂²f` along the
/// inputs seeded by `a` (outer) and `b` (inner).
#[inline(always)]
pub fn seed2<T: Real>(x: T, a: bool, b: bool) -> Dual<Dual<T>> {
    Dual {
        v: Dual::seeded(x, b),
        d: Dual::constant(T::lit(if a { 1.0 } else { 0.0 })),
    }
}

/// `x` seeded for a third derivative: `f(seed3(x, a, b, c)).d.d.d`.
#[inline(always)]
pub fn seed3<T: Real>(x: T, a: bool, b: bool, c: bool) -> Dual<Dual<Dual<T>>> {
    Dual {
        v: seed2(x, b, c),
        d: Dual::constant(Dual::constant(T::lit(if a { 1.0 } else { 0.0 }))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mish<R: Real>(x: R) -> R {
        x * (R::lit(1.0) + x.exp()).ln().tanh()
    }

    #[test]
    fn first_and_second_derivatives_of_mish_match_their_formulas() {
        for &x in &[-3.0f64, -0.5, 0.0, 0.7, 4.0] {
            let sp = (1.0 + x.exp()).ln();
            let t = sp.tanh();
            let s = 1.0 / (1.0 + (-x).exp());
            let d1 = t + x * (1.0 - t * t) * s;
            let got = mish(Dual::variable(x));
            assert!((got.v - x * t).abs() < 1e-15);
            assert!((got.d - d1).abs() < 1e-14, "{x}: {} vs {d1}", got.d);
            // Second derivative by nesting, against a central difference of d1.
            let h = 1e-5;
            let d1_at = |x: f64| mish(Dual::variable(x)).d;
            let d2 = (d1_at(x + h) - d1_at(x - h)) / (2.0 * h);
            let x2 = Dual {
                v: Dual::variable(x),
                d: Dual::constant(1.0),
            };
            let got2 = mish(x2);
            assert!((got2.d.d - d2).abs() < 1e-6, "{x}: {} vs {d2}", got2.d.d);
            assert!((got2.d.v - d1).abs() < 1e-14);
        }
    }

    #[test]
    fn derivatives_of_the_methods() {
        type Case = (fn(Dual<f64>) -> Dual<f64>, fn(f64) -> f64);
        let cases: [Case; 19] = [
            (|x| x.tan(), |x: f64| 1.0 / (x.cos() * x.cos())),
            (
                |x| (x * Dual::lit(0.3)).asin(),
                |x: f64| 0.3 / (1.0 - 0.09 * x * x).sqrt(),
            ),
            (
                |x| (x * Dual::lit(0.3)).acos(),
                |x: f64| -0.3 / (1.0 - 0.09 * x * x).sqrt(),
            ),
            (|x| x.atan(), |x: f64| 1.0 / (1.0 + x * x)),
            (|x| x.sinh(), |x: f64| x.cosh()),
            (|x| x.cosh(), |x: f64| x.sinh()),
            (|x| x.asinh(), |x: f64| 1.0 / (x * x + 1.0).sqrt()),
            (
                |x| (x + Dual::lit(1.0)).acosh(),
                |x: f64| 1.0 / (x * (x + 2.0)).sqrt(),
            ),
            (
                |x| (x * Dual::lit(0.3)).atanh(),
                |x: f64| 0.3 / (1.0 - 0.09 * x * x),
            ),
            (|x| x.exp_m1(), |x: f64| x.exp()),
            (|x| x.ln_1p(), |x: f64| 1.0 / (1.0 + x)),
            (|x| x.sqrt(), |x: f64| 0.5 / x.sqrt()),
            (|x| x.sin(), |x: f64| x.cos()),
            (|x| x.cos(), |x: f64| -x.sin()),
            (
                |x| x.erf(),
                |x: f64| std::f64::consts::FRAC_2_SQRT_PI * (-x * x).exp(),
            ),
            (|x| x.recip(), |x: f64| -1.0 / (x * x)),
            (|x| x.powi(3), |x: f64| 3.0 * x * x),
            (|x| x.powf(Dual::lit(2.5)), |x: f64| 2.5 * x.powf(1.5)),
            (
                |x| Dual::lit(2.0).powf(x),
                |x: f64| 2f64.powf(x) * 2f64.ln(),
            ),
        ];
        for (f, df) in cases {
            for &x in &[0.3, 1.2, 2.5] {
                let got = f(Dual::variable(x)).d;
                assert!((got - df(x)).abs() < 1e-12, "{x}: {got} vs {}", df(x));
            }
        }
    }

    #[test]
    fn atan2_has_both_partials_and_rounding_has_none() {
        let (y, x) = (0.7f64, -1.3f64);
        let r2 = x * x + y * y;
        let by_y = Dual::variable(y).atan2(Dual::constant(x));
        assert_eq!(by_y.v, y.atan2(x));
        assert!((by_y.d - x / r2).abs() < 1e-15);
        let by_x = Dual::constant(y).atan2(Dual::variable(x));
        assert!((by_x.d + y / r2).abs() < 1e-15);
        for f in [
            Dual::floor as fn(Dual<f64>) -> Dual<f64>,
            Dual::ceil,
            Dual::round_ties_even,
            Dual::trunc,
        ] {
            assert_eq!(f(Dual::variable(-2.5)).d, 0.0);
        }
        let r = |x: f64| Real::round_ties_even(Dual::variable(x)).v;
        assert_eq!([r(2.5), r(-2.5), r(3.5), r(-0.4)], [2.0, -2.0, 4.0, -0.0]);
        assert_eq!(Real::floor(Dual::variable(-2.5)).v, -3.0);
        assert_eq!(Real::ceil(Dual::variable(-2.5)).v, -2.0);
        assert_eq!(Real::trunc(Dual::variable(-2.5)).v, -2.0);
    }

    #[test]
    fn seeds_give_mixed_partials() {
        // f(x, y) = x² y³: ∂x = 2xy³, ∂x∂y = 6xy², ∂x∂y∂y = 12xy, ∂x∂x∂y = 6y².
        fn f<R: Real>(x: R, y: R) -> R {
            x * x * y.powi(3)
        }
        let (x, y) = (1.5f64, -2.0f64);
        assert_eq!(f(seed1(x, true), seed1(y, false)).d, 2.0 * x * y.powi(3));
        assert_eq!(
            f(seed2(x, true, false), seed2(y, false, true)).d.d,
            6.0 * x * y * y
        );
        assert_eq!(
            f(seed3(x, true, false, false), seed3(y, false, true, true))
                .d
                .d
                .d,
            12.0 * x * y
        );
        assert_eq!(
            f(seed3(x, true, true, false), seed3(y, false, false, true))
                .d
                .d
                .d,
            6.0 * y * y
        );
    }

    #[test]
    fn ties_and_kinks() {
        let x = Dual::variable(0.0f64);
        assert_eq!(x.abs().d, 0.0);
        assert_eq!(x.max(Dual::lit(0.0)).d, 0.5);
        assert_eq!(x.min(Dual::lit(1.0)).d, 1.0);
        // A constant negative base to a constant power: no NaN in the derivative.
        let y = Dual::<f64>::lit(-2.0).powf(Dual::lit(2.0));
        assert_eq!((y.v, y.d), (4.0, 0.0));
        let s = Dual::select(x.gt(Dual::lit(0.0)), x, Dual::lit(0.0) * x);
        assert_eq!(s.d, 0.0);
    }
}
