// Calling a Kernel: loom::Buffer<T>, BufferView and DLTensor* arguments; every wrong call is an
// ArgumentError naming the parameter that leaves the outputs untouched (counts, dtypes, shapes,
// strides, null or misaligned data, device memory, overlapping outputs); copies share one kernel.
#include <doctest/doctest.h>

#include <cstring>
#include <string>

#include "../runtime/interp_test_util.hpp"
#include "../support/jit_harness.hpp"

using namespace loom;
using namespace loom::test;

namespace {

constexpr float kSentinel = 12345.0f;

/// C[i, j] = A[i, j] + B[j] * alpha over symbolic n x m.
struct AddRow {
  Var n{"n"}, m{"m"}, alpha{"alpha", f32};
  BufferParam A = buffer_param("A", f32, {n, m});
  BufferParam B = buffer_param("B", f32, {m});
  BufferParam C = buffer_param("C", f32, {n, m});
  LoweredFunc func;
  Kernel kernel;
  AddRow() {
    Var i("i"), j("j");
    func = make_func("add_row", {param(A), param(B), param(C), scalar_param(alpha)},
                     loop(i, 0, n,
                          loop(j, 0, m, store(C, load(A, i * m + j) + load(B, j) * alpha, i * m + j),
                               ForKind::Vectorized)),
                     {n, m});
    kernel = build(func, Target::cpu());
  }
};

Buffer<float> sentinel(std::vector<int64_t> shape) {
  Buffer<float> b(std::move(shape));
  b.fill(kSentinel);
  return b;
}

void check_untouched(const Buffer<float>& b) {
  for (int64_t x = 0; x < b.num_elements(); ++x) REQUIRE(b.at_flat(x) == kSentinel);
}

DLTensor dl_tensor(void* data, DLDataTypeCode code, int bits, int ndim, int64_t* shape,
                   int64_t* strides = nullptr) {
  DLTensor t{};
  t.data = data;
  t.device = DLDevice{kDLCPU, 0};
  t.ndim = ndim;
  t.dtype = DLDataType{static_cast<uint8_t>(code), static_cast<uint8_t>(bits), 1};
  t.shape = shape;
  t.strides = strides;
  t.byte_offset = 0;
  return t;
}

}  // namespace

TEST_CASE("jit kernel: a good call with Buffer<T>, BufferView and scalars of several C++ types") {
  AddRow g;
  Buffer<float> a({3, 5}), b({5}), c({3, 5});
  fill_random(a, 1);
  fill_random(b, 2);
  g.kernel(a, b, c, 2.0);
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 5; ++j) CHECK(c(i, j) == a(i, j) + b(j) * 2.0f);
  std::vector<float> raw(15, 0.0f);
  BufferView view(raw.data(), {3, 5});
  g.kernel(a.view(), b, view, 1.5f);
  CHECK(raw[7] == a(1, 2) + b(2) * 1.5f);
  g.kernel({a, b, c, 0.0});  // a braced list is a std::vector<KernelArg>
  CHECK(c(2, 4) == a(2, 4));
}

TEST_CASE("jit kernel: copies share the compiled code; an empty kernel says what to do") {
  AddRow g;
  Kernel copy = g.kernel;
  CHECK(copy.code_address() == g.kernel.code_address());
  CHECK(&copy.lowered() == &g.kernel.lowered());
  Kernel empty;
  CHECK_FALSE(empty.defined());
  Buffer<float> a({1});
  CHECK_THROWS_WITH_AS(empty(a), doctest::Contains("this loom::Kernel is empty"), Error);
}

TEST_CASE("jit kernel: wrong calls are ArgumentErrors naming the parameter, and write nothing") {
  AddRow g;
  Buffer<float> a({3, 5}), b({5}), c = sentinel({3, 5});
  SUBCASE("argument count") {
    CHECK_THROWS_WITH_AS(g.kernel(a, b, c), doctest::Contains("takes 4 arguments (A, B, C, alpha)"),
                         ArgumentError);
  }
  SUBCASE("dtype") {
    Buffer<double> b64({5});
    CHECK_THROWS_WITH_AS(g.kernel(a, b64, c, 1.0),
                         doctest::Contains("argument 'B' of kernel 'add_row' has float64"), ArgumentError);
  }
  SUBCASE("rank") {
    Buffer<float> b2({5, 1});
    CHECK_THROWS_WITH_AS(g.kernel(a, b2, c, 1.0),
                         doctest::Contains("'B' of kernel 'add_row' has 2 dimensions"), ArgumentError);
  }
  SUBCASE("a size that disagrees with another argument") {
    Buffer<float> b6({6});
    CHECK_THROWS_WITH_AS(g.kernel(a, b6, c, 1.0), doctest::Contains("but 'm' is already 5"), ArgumentError);
  }
  SUBCASE("strides") {
    Buffer<float> padded({3, 5}, {8, 1});
    CHECK_THROWS_WITH_AS(g.kernel(a, b, padded, 1.0), doctest::Contains("has strides [8, 1]"), ArgumentError);
  }
  SUBCASE("a buffer where a scalar is expected and the reverse") {
    CHECK_THROWS_WITH_AS(g.kernel(a, b, c, b), doctest::Contains("argument 'alpha'"), ArgumentError);
    CHECK_THROWS_WITH_AS(g.kernel(a, 1.0, c, 1.0), doctest::Contains("argument 'B'"), ArgumentError);
  }
  SUBCASE("null data") {
    BufferView null_view(static_cast<float*>(nullptr), {5});
    CHECK_THROWS_WITH_AS(g.kernel(a, null_view, c, 1.0), doctest::Contains("null data pointer"),
                         ArgumentError);
  }
  SUBCASE("misaligned data") {
    std::vector<char> bytes(64);
    BufferView odd(static_cast<void*>(bytes.data() + 1), f32, {5});
    CHECK_THROWS_WITH_AS(g.kernel(a, odd, c, 1.0), doctest::Contains("is not aligned to 4 bytes"),
                         ArgumentError);
  }
  SUBCASE("an output that overlaps an input") {
    Buffer<float> shared({3, 5});
    CHECK_THROWS_WITH_AS(g.kernel(shared, b, shared, 1.0),
                         doctest::Contains("arguments 'C' and 'A' of kernel 'add_row' overlap in memory"),
                         ArgumentError);
    check_untouched(c);
    return;
  }
  check_untouched(c);
}

TEST_CASE("jit kernel: read-only arguments may share memory") {
  Var n("n"), i("i");
  BufferParam X = buffer_param("X", f32, {n}), Y = buffer_param("Y", f32, {n}),
              Z = buffer_param("Z", f32, {n});
  Kernel k = build(make_func("sum2", {param(X), param(Y), param(Z)},
                             loop(i, 0, n, store(Z, load(X, i) + load(Y, i), i)), {n}),
                   Target::cpu());
  Buffer<float> x({8}), z({8});
  fill_random(x, 3);
  k(x, x, z);
  for (int j = 0; j < 8; ++j) CHECK(z(j) == x(j) + x(j));
}

TEST_CASE("jit kernel: DLTensor* arguments (CPU memory, byte offsets, strides, dtypes)") {
  AddRow g;
  Buffer<float> a({3, 5}), b({5}), c({3, 5});
  fill_random(a, 4);
  fill_random(b, 5);
  int64_t a_shape[] = {3, 5}, b_shape[] = {5}, c_shape[] = {3, 5}, c_strides[] = {5, 1};
  DLTensor da = dl_tensor(a.data(), kDLFloat, 32, 2, a_shape);
  // B starts one element into a larger allocation, through byte_offset.
  std::vector<float> b_storage(6);
  std::memcpy(b_storage.data() + 1, b.data(), 5 * sizeof(float));
  DLTensor db = dl_tensor(b_storage.data(), kDLFloat, 32, 1, b_shape);
  db.byte_offset = sizeof(float);
  DLTensor dc = dl_tensor(c.data(), kDLFloat, 32, 2, c_shape, c_strides);
  g.kernel(&da, &db, &dc, 3.0);
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 5; ++j) CHECK(c(i, j) == a(i, j) + b(j) * 3.0f);

  SUBCASE("a DLTensor of the wrong dtype") {
    DLTensor wrong = dl_tensor(b.data(), kDLInt, 32, 1, b_shape);
    CHECK_THROWS_WITH_AS(g.kernel(&da, &wrong, &dc, 1.0),
                         doctest::Contains("'B' of kernel 'add_row' has int32"), ArgumentError);
  }
  SUBCASE("an unsupported DLPack dtype") {
    DLTensor complex = dl_tensor(b.data(), kDLComplex, 64, 1, b_shape);
    CHECK_THROWS_WITH_AS(g.kernel(&da, &complex, &dc, 1.0), doctest::Contains("DLPack dtype code 5"),
                         ArgumentError);
  }
  SUBCASE("GPU memory is refused by a CPU kernel") {
    DLTensor on_gpu = db;
    on_gpu.device = DLDevice{kDLCUDA, 1};
    CHECK_THROWS_WITH_AS(g.kernel(&da, &on_gpu, &dc, 1.0), doctest::Contains("which the CPU cannot access"),
                         ArgumentError);
  }
  SUBCASE("a null DLTensor pointer") {
    DLTensor* none = nullptr;
    CHECK_THROWS_WITH_AS(g.kernel(&da, none, &dc, 1.0), doctest::Contains("null DLTensor"), ArgumentError);
  }
}

TEST_CASE("jit kernel: DLTensors of every supported dtype, through the interpreter and the JIT") {
  Var n("n"), i("i");
  for (DType t : {i8, u16, i32, u64, f16, bf16, f64}) {
    CAPTURE(t.str());
    BufferParam X = buffer_param("X", t, {n}), Y = buffer_param("Y", t, {n});
    LoweredFunc f = make_func("copy_twice", {param(X), param(Y)},
                              loop(i, 0, n, store(Y, load(X, i) + load(X, i), i)), {n});
    RandomArgs args = random_args(f, 6, {9}, -20, 20);
    int64_t shape[] = {9};
    DLDataTypeCode code = t.is_bfloat() ? kDLBfloat : t.is_float() ? kDLFloat : t.is_int() ? kDLInt : kDLUInt;
    DLTensor dx = dl_tensor(args.args[0].buffer.data, code, t.bits, 1, shape);
    DLTensor dy = dl_tensor(args.args[1].buffer.data, code, t.bits, 1, shape);
    check_jit_matches_interpreter(f, &dx, &dy);
  }
}
