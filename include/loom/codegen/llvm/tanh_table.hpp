// The table of float tanh's piecewise polynomials (vector_math.hpp, VectorMath::tanh on AVX-512
// targets): |x| in [0, 9.5] cut into intervals by its exponent and the top two bits of its mantissa,
// [0, 1/8) one interval, then [2^e, 2^e (1 + 1/4)), ... four per binade up to [8, 10); in each,
// tanh(c + t) = p0 + t (p1 + t (p2 + ... + t p5)) around a point c of the interval.
//
// Our own fit: scripts/fit/tanh_f32.py prints these rows (mpmath; weighted least squares on
// Chebyshev nodes, iterated toward the least maximum relative error; coefficients rounded to float).
// - c is a float near the middle of its interval whose tanh is within 0.0005 ulp of a float, p0:
//   the constant term then carries almost no rounding. t = |x| - c is exact (c and |x| lie within a
//   factor of two).
// - Each polynomial's own error is at most 0.23 ulp (the interval [4, 5)); with the float
//   arithmetic the result is within 0.721 ulp of the correctly rounded one (docs/vector-math.md).
// - The first interval's polynomial is t + t ((p1 - 1) + p2 t + ... + p5 t^4) (c = 0, p0 = 0, p1
//   near 1 and stored less 1, t added last): its one rounding is that of a small correction to t,
//   and tiny and subnormal x give x.
// - Entries 26-31 lie past 9.5, which the argument never exceeds; NaN's index lands in the table
//   too, and NaN stays NaN through t.
#pragma once

namespace loom::codegen {

/// Intervals of |x| in the table (the index is 5 bits: an AVX-512 two-register permute).
inline constexpr int kTanhIntervals = 32;
/// Rows: the point c of each interval, then the coefficients p0 .. p5 of its polynomial in t = |x| - c.
inline constexpr int kTanhTableRows = 7;
/// |x| is limited to this (tanh rounds to 1 from 9.01): it lies in interval 25, [8, 10).
inline constexpr float kTanhLargest = 9.5f;
/// The interval of |x| in [1/8, 16) is (bits(|x|) >> 21) - kTanhIndexBias: the biased exponent (124
/// for 1/8) times 4 plus the top two mantissa bits, less 495, so that [1/8, 1/8 (1 + 1/4)) is 1.
/// Below 1/8 it is negative and taken as 0.
inline constexpr int kTanhIndexBias = 124 * 4 - 1;

// clang-format off
inline constexpr float kTanhTable[kTanhTableRows][kTanhIntervals] = {
    // c
    {0.0f, 0.13856149f, 0.17162494f, 0.20693521f, 0.23546991f, 0.28453687f,
     0.3403257f, 0.40163106f, 0.46793365f, 0.57135373f, 0.679652f, 0.7988895f,
     0.9461039f, 1.1201105f, 1.377825f, 1.6366639f, 1.8676119f, 2.2609284f,
     2.7693925f, 3.2916927f, 3.742376f, 4.435654f, 5.5805745f, 6.4924355f,
     7.513049f, 8.317825f, 0.0f, 0.0f, 0.0f, 0.0f,
     0.0f, 0.0f},
    // p0
    {0.0f, 0.13768148f, 0.16995949f, 0.20403114f, 0.23121235f, 0.27709883f,
     0.32776815f, 0.3813437f, 0.43652824f, 0.5163528f, 0.5912931f, 0.6634155f,
     0.7380141f, 0.80760735f, 0.8804633f, 0.92700475f, 0.9533771f, 0.9784961f,
     0.9921682f, 0.9972375f, 0.99887747f, 0.9997193f, 0.99997157f, 0.9999954f,
     0.9999994f, 0.9999999f, 1.0f, 1.0f, 1.0f, 1.0f,
     1.0f, 1.0f},
    // p1 (less 1 in the first interval: see above)
    {-1.1943859e-09f, 0.9810438f, 0.9711138f, 0.9583713f, 0.94654083f, 0.9232162f,
     0.89256805f, 0.854577f, 0.8094431f, 0.73337984f, 0.65037245f, 0.5598799f,
     0.45533517f, 0.34777036f, 0.22478436f, 0.14066218f, 0.09107205f, 0.042545456f,
     0.015602326f, 0.0055173957f, 0.0022438068f, 0.0005612147f, 5.6876175e-05f, 9.179198e-06f,
     1.192165e-06f, 2.3901265e-07f, 0.0f, 0.0f, 0.0f, 0.0f,
     0.0f, 0.0f},
    // p2
    {4.4433222e-07f, -0.13507152f, -0.16505f, -0.19553767f, -0.21885194f, -0.2558221f,
     -0.29255533f, -0.32588756f, -0.3533447f, -0.37868255f, -0.38456067f, -0.37143302f,
     -0.33604386f, -0.28086382f, -0.19791552f, -0.13039486f, -0.086826086f, -0.041629348f,
     -0.015479276f, -0.0055018994f, -0.002241128f, -0.0005606031f, -5.6819244e-05f, -9.167913e-06f,
     -1.1905879e-06f, -2.3999422e-07f, 0.0f, 0.0f, 0.0f, 0.0f,
     0.0f, 0.0f},
    // p3
    {-0.33335948f, -0.30841812f, -0.29565278f, -0.27956337f, -0.26491243f, -0.23685077f,
     -0.20163132f, -0.16058275f, -0.11556933f, -0.048933703f, 0.01059874f, 0.059786066f,
     0.09622974f, 0.11089672f, 0.09933261f, 0.07399379f, 0.05242048f, 0.02655111f,
     0.010154038f, 0.0036443477f, 0.0014909813f, 0.00037545853f, 3.754783e-05f, 6.1157825e-06f,
     7.9263776e-07f, 1.5283314e-07f, 0.0f, 0.0f, 0.0f, 0.0f,
     0.0f, 0.0f},
    // p4
    {0.0005136753f, 0.087247975f, 0.10524831f, 0.12270023f, 0.13418403f, 0.15078534f,
     0.16351269f, 0.1698458f, 0.16810645f, 0.15134117f, 0.12186011f, 0.084164456f,
     0.041075505f, 0.004454916f, -0.02124826f, -0.025046375f, -0.021019796f, -0.012168279f,
     -0.0049620736f, -0.0018178294f, -0.00075041933f, -0.0001941181f, -1.9600344e-05f, -3.2037642e-06f,
     -4.1622658e-07f, -5.8697484e-08f, 0.0f, 0.0f, 0.0f, 0.0f,
     0.0f, 0.0f},
    // p5
    {0.1298411f, 0.11744041f, 0.10218646f, 0.10987501f, 0.07878683f, 0.05791761f,
     0.032190956f, 0.0057150405f, -0.016945498f, -0.043341897f, -0.06152358f, -0.06270978f,
     -0.053076398f, -0.032112047f, -0.009551066f, 0.0013809516f, 0.0045971163f, 0.003976702f,
     0.0019163464f, 0.0007713654f, 0.00029295072f, 6.86089e-05f, 9.326893e-06f, 1.2617896e-06f,
     1.7082115e-07f, 1.000524e-08f, 0.0f, 0.0f, 0.0f, 0.0f,
     0.0f, 0.0f}};
// clang-format on

}  // namespace loom::codegen
