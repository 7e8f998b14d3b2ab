// Polynomials per interval of |x| (the IntervalPolynomials table, which PolynomialIR::by_intervals
// evaluates on AVX-512 targets), and float tanh's and erf's tables (interval_polynomials_f64.hpp
// holds double erf's): |x|, limited to where f rounds to 1 (tanh 9.5, erf 3.95), is cut into intervals by
// its exponent and the top two bits of its mantissa: [0, 1/8) one interval, then [2^e, 2^e (1 + 1/4)),
// ... four per binade; in each, f(c + t) = p0 + t (p1 + t (p2 + ... + t p_d)) around a point c of the
// interval.
//
// Our own fits: scripts/fit/interval_polynomials_f32.py prints these rows (mpmath; weighted least
// squares on Chebyshev nodes, iterated toward the least maximum relative error; coefficients rounded
// to float).
// - c is a float near the middle of its interval whose f is within 0.0005 ulp of a float, p0: the
//   constant term then carries almost no rounding. t = |x| - c is exact (c and |x| lie within a
//   factor of two).
// - Each polynomial's own error is at most 0.23 ulp (tanh, degree 5, on [4, 5)) and 0.013 ulp (erf,
//   degree 6); with the float arithmetic the result is within 0.721 ulp (tanh) and 0.64 ulp (erf) of
//   the correctly rounded one on every float (docs/vector-math.md).
// - The first interval's polynomial is t + t ((p1 - 1) + p2 t + ... + p_d t^(d-1)) (c = 0, p0 = 0,
//   p1 stored less 1, t added last): its one rounding is that of a correction to t, and tiny and
//   subnormal x give x times p1, rounded once.
// - Entries past the last interval are never reached (they hold f = 1); NaN's index lands in the
//   table too, and NaN stays NaN through t.
#pragma once

namespace loom::codegen {

/// A function's polynomials per interval of |x| (PolynomialIR::by_intervals evaluates them): rows of
/// kEntries entries, one per interval (the point c of each interval, then the coefficients p0 .. p_d
/// of its polynomial in t = |x| - c), and the largest |x| passed (in the last interval; f rounds to 1
/// from there). T is float (32 intervals, a 5-bit index) or double (16, a 4-bit index): either way
/// two 512-bit registers, one two-register permute.
template <class T>
struct IntervalPolynomials {
  static constexpr int kEntries = 128 / sizeof(T);

  const T* table;
  int rows;
  T largest;
  /// |x|'s interval is (bits(|x|) >> (mantissa bits - 2)) - index_bias: the biased exponent times 4
  /// plus the top two mantissa bits, less the bias, so that the first binade's first quarter is 1.
  /// Below it the index is negative and taken as 0.
  int index_bias;
  /// Interval 0's polynomial is in t^2 (t + t P(t^2), for an odd function over a wide first interval)
  /// instead of in t (t + t (p1 - 1 + p2 t + ...)); either way, t is added last.
  bool first_in_squares;

  /// Row `row` (0: c; 1 + j: p_j).
  const T* row(int r) const { return table + r * kEntries; }
};

/// Float's intervals: [0, 1/8), then four per binade: the biased exponent of 1/8 is 124.
inline constexpr int kPolynomialIntervals = IntervalPolynomials<float>::kEntries;
inline constexpr int kIntervalIndexBias = 124 * 4 - 1;

// clang-format off
/// tanh: degree 5; intervals 0-25, up to [8, 10).
inline constexpr float kTanhTable[7][kPolynomialIntervals] = {
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
    // p1 (less 1 in the first interval)
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
/// erf: degree 6; intervals 0-20, up to [3.5, 4).
inline constexpr float kErfTable[8][kPolynomialIntervals] = {
    // c
    {0.0f, 0.14000796f, 0.1715859f, 0.2059787f, 0.23378529f, 0.28092557f,
     0.34960577f, 0.41178563f, 0.46723872f, 0.5682539f, 0.68268937f, 0.8022783f,
     0.9376476f, 1.1012771f, 1.3730932f, 1.6211724f, 1.9035296f, 2.2354424f,
     2.7200758f, 3.2424073f, 3.6911855f, 0.0f, 0.0f, 0.0f,
     0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f,
     0.0f, 0.0f},
    // p0
    {0.0f, 0.15695584f, 0.19173051f, 0.22917649f, 0.25907022f, 0.30884546f,
     0.37898844f, 0.43967095f, 0.4912436f, 0.57839066f, 0.6656898f, 0.74345404f,
     0.81517154f, 0.8806342f, 0.9478444f, 0.9781338f, 0.99289745f, 0.99842983f,
     0.9998803f, 0.99999547f, 0.9999998f, 1.0f, 1.0f, 1.0f,
     1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f,
     1.0f, 1.0f},
    // p1 (less 1 in the first interval)
    {0.12837917f, 1.1064758f, 1.095642f, 1.0815065f, 1.068362f, 1.0427517f,
     0.99855906f, 0.9523857f, 0.90707535f, 0.8169885f, 0.70802027f, 0.5928178f,
     0.46841493f, 0.335535f, 0.17125478f, 0.08147836f, 0.030117681f, 0.007624237f,
     0.0006905539f, 3.0668358e-05f, 1.3654285e-06f, 0.0f, 0.0f, 0.0f,
     0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f,
     0.0f, 0.0f},
    // p2
    {-2.8265134e-08f, -0.1549154f, -0.18799709f, -0.22276695f, -0.24976747f, -0.29293555f,
     -0.349102f, -0.39217883f, -0.42382082f, -0.46425688f, -0.4833579f, -0.47560486f,
     -0.4392081f, -0.3695169f, -0.2351488f, -0.13209048f, -0.057329852f, -0.017043598f,
     -0.0018782034f, -9.942091e-05f, -5.033598e-06f, 0.0f, 0.0f, 0.0f,
     0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f,
     0.0f, 0.0f},
    // p3
    {-0.37612376f, -0.35436562f, -0.34371063f, -0.32990867f, -0.31719315f, -0.29272172f,
     -0.25148755f, -0.20979989f, -0.17034161f, -0.096452385f, -0.016018003f, 0.05677229f,
     0.11840991f, 0.1594479f, 0.15816948f, 0.115602724f, 0.06271357f, 0.02286113f,
     0.003174455f, 0.00020411231f, 1.1935099e-05f, 0.0f, 0.0f, 0.0f,
     0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f,
     0.0f, 0.0f},
    // p4
    {-9.035457e-05f, 0.07631022f, 0.095995575f, 0.105401695f, 0.12183349f, 0.13859881f,
     0.16029093f, 0.1740958f, 0.18133955f, 0.18215758f, 0.16658387f, 0.13576429f,
     0.09087041f, 0.035349716f, -0.030205907f, -0.04967199f, -0.040592622f, -0.019868776f,
     -0.003701868f, -0.00029887864f, -2.0781246e-05f, 0.0f, 0.0f, 0.0f,
     0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f,
     0.0f, 0.0f},
    // p5
    {0.11423582f, 0.10168001f, 0.10585548f, 0.059081532f, 0.0859922f, 0.07209304f,
     0.052817885f, 0.035131473f, 0.017433556f, -0.012416464f, -0.040594887f, -0.06053179f,
     -0.06953381f, -0.06324246f, -0.030894507f, -0.0026309427f, 0.012041003f, 0.010823113f,
     0.003123824f, 0.00034501642f, 2.7556593e-05f, 0.0f, 0.0f, 0.0f,
     0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f,
     0.0f, 0.0f},
    // p6
    {-0.009985544f, 0.3277835f, -10.431643f, 4.231952f, -3.9217157f, 0.06619262f,
     -0.035978697f, -0.119206466f, -0.22231771f, -0.046465103f, -0.03450461f, -0.019544132f,
     0.00033839178f, 0.015272977f, 0.022022499f, 0.014411473f, 0.004135232f, -0.002763619f,
     -0.0016737491f, -0.00027525655f, -2.0913094e-05f, 0.0f, 0.0f, 0.0f,
     0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f,
     0.0f, 0.0f}
};
// clang-format on

inline constexpr IntervalPolynomials<float> kTanhPolynomials{&kTanhTable[0][0], 7, 9.5f, kIntervalIndexBias,
                                                             false};
inline constexpr IntervalPolynomials<float> kErfPolynomials{&kErfTable[0][0], 8, 3.95f, kIntervalIndexBias,
                                                            false};

}  // namespace loom::codegen
