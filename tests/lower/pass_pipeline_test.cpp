// The pass pipeline: user passes at every PassPosition run in order on their phase's IR form;
// IR dumps (one file per pass, "unchanged" for identity passes) and pass timing on stderr.
#include <loom/core.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <unistd.h>

#include "../support/capture_stderr.hpp"
#include "../support/interpret_checked.hpp"
#include "lower_test_util.hpp"

using namespace loom;
using namespace loom::lower_test;
using loom::test::capture_stderr;

namespace {

struct Graph {
  static constexpr int n = 10;
  Tensor A = placeholder({n, n}, f32, "A");
  Tensor B = compute(
      {n, n}, [&](Expr i, Expr j) { return A(i, j) * 2.0f; }, "B");
  Tensor C = compute(
      {n, n}, [&](Expr i, Expr j) { return B(j, i) + 1.0f; }, "C");
};

std::string read_file(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<std::string> sorted_files(const std::filesystem::path& dir) {
  std::vector<std::string> files;
  for (const auto& entry : std::filesystem::directory_iterator(dir))
    files.push_back(entry.path().filename().string());
  std::sort(files.begin(), files.end());
  return files;
}

/// A fresh, empty directory under the system temp directory.
std::filesystem::path fresh_dir(const std::string& name) {
  std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("loom_lower_test_" + name + "_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

/// Every pass lower() runs, in order, as "phase_name" (Loom's own, then the user's per phase).
std::vector<std::string> pipeline_names(const PassContext& ctx) {
  std::vector<std::string> names;
  for (const PhasePasses& phase : default_pipeline()) {
    for (const PipelinePass& p : phase.passes)
      names.push_back(std::string(phase_name(phase.phase)) + "_" + p.name);
    for (const PassContext::UserPass& u : ctx.user_passes)
      if (phase_of(u.where) == phase.phase)
        names.push_back(std::string(phase_name(phase.phase)) + "_" + u.pass.name);
  }
  return names;
}

}  // namespace

TEST_CASE("lower: a user pass at every PassPosition runs once, in phase order") {
  Graph g;
  Schedule s = create_schedule(g.C);
  std::vector<std::string> order;
  PassContext ctx;
  // Added out of order on purpose: the position decides when a pass runs, not the call order.
  ctx.add_pass(PassPosition::AfterDevice, "device_pass", [&](Stmt b, const PassContext&) {
    order.push_back("device");
    return b;
  });
  ctx.add_pass(PassPosition::AfterSchedule, "schedule_pass", [&](Stmt b, const PassContext&) {
    order.push_back("schedule");
    return b;
  });
  ctx.add_pass(PassPosition::AfterLoops, "loops_pass", [&](Stmt b, const PassContext&) {
    order.push_back("loops");
    return b;
  });
  ctx.add_pass(PassPosition::AfterFlatten, "flatten_pass", [&](Stmt b, const PassContext&) {
    order.push_back("flatten");
    return b;
  });
  ctx.add_pass(PassPosition::AfterMemory, "memory_pass", [&](Stmt b, const PassContext&) {
    order.push_back("memory");
    return b;
  });
  ctx.add_pass(PassPosition::AfterSchedule, "schedule_pass_2", [&](Stmt b, const PassContext&) {
    order.push_back("schedule2");
    return b;
  });
  lower(s, {g.A, g.C}, "order", ctx);
  CHECK(order == std::vector<std::string>{"schedule", "schedule2", "flatten", "loops", "memory", "device"});
}

TEST_CASE("lower: a pass after schedule sees Realize/Provide, a pass after flatten sees Allocate/Store") {
  Graph g;
  Schedule s = create_schedule(g.C);
  KindCounter after_schedule, after_flatten, after_loops;
  bool state_seen = false;
  PassContext ctx;
  ctx.add_pass(PassPosition::AfterSchedule, "see_schedule", [&](Stmt b, const PassContext& c) {
    after_schedule.visit_stmt(b);
    state_seen = c.lowering() != nullptr && c.lowering()->func_name() == "forms" &&
                 c.lowering()->schedule() != nullptr && c.lowering()->params().size() == 2 &&
                 !c.lowering()->bounds().ranges.empty() && c.lowering()->device_split() == nullptr;
    return b;
  });
  ctx.add_pass(PassPosition::AfterFlatten, "see_flatten", [&](Stmt b, const PassContext&) {
    after_flatten.visit_stmt(b);
    return b;
  });
  ctx.add_pass(PassPosition::AfterLoops, "see_loops", [&](Stmt b, const PassContext&) {
    after_loops.visit_stmt(b);
    return b;
  });
  lower(s, {g.A, g.C}, "forms", ctx);
  CHECK(state_seen);
  CHECK(after_schedule[IRNodeKind::Realize] == 1);  // B
  CHECK(after_schedule[IRNodeKind::Provide] == 2);  // B and C
  CHECK(after_schedule[IRNodeKind::ProducerLoad] == 2);
  CHECK(after_schedule[IRNodeKind::Store] == 0);
  CHECK(after_schedule[IRNodeKind::Allocate] == 0);
  for (const KindCounter* k : {&after_flatten, &after_loops}) {
    CHECK((*k)[IRNodeKind::Realize] == 0);
    CHECK((*k)[IRNodeKind::Provide] == 0);
    CHECK((*k)[IRNodeKind::ProducerLoad] == 0);
    CHECK((*k)[IRNodeKind::Allocate] == 1);
    CHECK((*k)[IRNodeKind::Store] == 2);
    CHECK((*k)[IRNodeKind::Load] == 2);
  }
}

TEST_CASE("lower: a user pass that rewrites the IR changes the result that is interpreted") {
  Graph g;
  Schedule s = create_schedule(g.C);
  // Replaces every float constant 1 by 5 after flattening.
  struct OneToFive : IRMutator {
    using IRMutator::visit;
    Expr visit(const FloatImmNode* op) override {
      return op->value == 1.0 ? make_const(op->dtype, 5.0) : Expr(Ref<const ExprNode>(op));
    }
  };
  PassContext ctx;
  ctx.add_pass(PassPosition::AfterFlatten, "one_to_five",
               [](Stmt b, const PassContext&) { return OneToFive().mutate(b); });
  LoweredFunc f = lower(s, {g.A, g.C}, "rewrite", ctx);
  CHECK(contains(f.to_string(), "5f32"));
  Buffer<float> a = random_buffer({Graph::n, Graph::n}, 1), c({Graph::n, Graph::n});
  test::interpret_checked(f, {a, c});
  for (int i = 0; i < Graph::n; ++i)
    for (int j = 0; j < Graph::n; ++j) CHECK(c(i, j) == a(j, i) * 2.0f + 5.0f);
}

TEST_CASE("lower: dump_dir writes one file per pass, in order, and 'unchanged' for an identity pass") {
  Graph g;
  Schedule s = create_schedule(g.C);
  std::filesystem::path dir = fresh_dir("dump");
  PassContext ctx;
  ctx.dump_dir = dir.string();
  ctx.add_pass(PassPosition::AfterSchedule, "identity", [](Stmt b, const PassContext&) { return b; });
  ctx.add_pass(PassPosition::AfterFlatten, "my pass!", [](Stmt b, const PassContext&) {
    return SeqNode::make({b, EvaluateNode::make(Expr(7))});  // a change the dump must show
  });
  LoweredFunc f = lower(s, {g.A, g.C}, "dump me", ctx);

  std::filesystem::path func_dir = dir / "dump_me";  // the name is sanitized for the file system
  REQUIRE(std::filesystem::is_directory(func_dir));
  std::vector<std::string> files = sorted_files(func_dir);
  std::vector<std::string> expected = pipeline_names(ctx);
  REQUIRE(files.size() == expected.size());
  for (size_t i = 0; i < files.size(); ++i) {
    CAPTURE(files[i]);
    char prefix[8];
    std::snprintf(prefix, sizeof prefix, "%02zu_", i);
    std::string name = expected[i];
    std::replace_if(
        name.begin(), name.end(),
        [](char c) { return !(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-'); }, '_');
    CHECK(files[i] == std::string(prefix) + name + ".txt");
  }
  // The steps before schedule_ops show the schedule (the bounds once inferred); schedule_ops
  // builds the IR; the identity pass changed nothing; the rewriting pass did.
  std::string first = read_file(func_dir / "00_schedule_resolve_groups.txt");
  CHECK(contains(first, "schedule of dump me (no loops yet)"));
  CHECK(contains(first, "stage B: root"));
  CHECK_FALSE(contains(first, " in ["));
  std::string bounds = read_file(func_dir / "03_schedule_infer_bounds.txt");
  CHECK(contains(bounds, "for i in [0, +10)"));
  std::string built = read_file(func_dir / "07_schedule_schedule_ops.txt");
  CHECK(contains(built, "primfn dump me("));
  CHECK(contains(built, "realize(B"));
  std::string identity = read_file(func_dir / "09_schedule_identity.txt");
  CHECK(identity == "unchanged\n");
  bool found_rewrite = false;
  for (const std::string& file : files) {
    if (!contains(file, "my_pass_")) continue;
    found_rewrite = true;
    std::string text = read_file(func_dir / file);
    CHECK(text != "unchanged\n");
    CHECK(contains(text, "allocate(B"));
    CHECK(contains(text, "  7\n"));
  }
  CHECK(found_rewrite);
  // The last dump that is not "unchanged" is the final function.
  std::string last;
  for (const std::string& file : files) {
    std::string text = read_file(func_dir / file);
    if (text != "unchanged\n") last = text;
  }
  CHECK(last == f.to_string());
  std::filesystem::remove_all(dir);
}

TEST_CASE("lower: LOOM_DUMP_IR and LOOM_TIME_PASSES configure a default PassContext") {
  std::filesystem::path dir = fresh_dir("env");
  ::setenv("LOOM_DUMP_IR", dir.c_str(), 1);
  ::setenv("LOOM_TIME_PASSES", "1", 1);
  PassContext from_env;
  ::unsetenv("LOOM_DUMP_IR");
  ::unsetenv("LOOM_TIME_PASSES");
  CHECK(from_env.dump_dir == dir.string());
  CHECK(from_env.time_passes);
  PassContext plain;
  CHECK(plain.dump_dir.empty());
  CHECK_FALSE(plain.time_passes);
  ::setenv("LOOM_TIME_PASSES", "0", 1);
  CHECK_FALSE(PassContext().time_passes);
  ::unsetenv("LOOM_TIME_PASSES");

  Graph g;
  Schedule s = create_schedule(g.C);
  from_env.time_passes = false;
  lower(s, {g.A, g.C}, "env", from_env);
  CHECK(sorted_files(dir / "env").size() == pipeline_names(from_env).size());
  std::filesystem::remove_all(dir);
}

TEST_CASE("lower: time_passes prints one line per pass to stderr") {
  Graph g;
  Schedule s = create_schedule(g.C);
  PassContext ctx;
  ctx.time_passes = true;
  ctx.add_pass(PassPosition::AfterLoops, "user_timed", [](Stmt b, const PassContext&) { return b; });
  std::string err = capture_stderr([&] { lower(s, {g.A, g.C}, "timed", ctx); });
  std::vector<std::string> names = pipeline_names(ctx);
  CHECK(count_of(err, "loom pass ") == static_cast<int>(names.size()));
  for (const char* step : {"resolve_groups", "inline_stages", "validate_attachments", "infer_bounds",
                           "validate_thread_extents", "validate_shared_stages", "validate_fragment_stages",
                           "schedule_ops", "assert_positive_split_factors", "split_host_device"})
    CHECK(contains(err, step));
  CHECK(contains(err, "user_timed"));
  CHECK(count_of(err, " ms  kernel 'timed'\n") == static_cast<int>(names.size()));

  PassContext quiet;
  std::string none = capture_stderr([&] { lower(s, {g.A, g.C}, "quiet", quiet); });
  CHECK_FALSE(contains(none, "loom pass"));
}

TEST_CASE("lower: switching simplify off keeps the unsimplified flat indices") {
  const int n = 10;
  Tensor A = placeholder({n, n}, f32, "A");
  Tensor C = compute(
      {n, n}, [&](Expr i, Expr j) { return A(i, j) * 2.0f; }, "C");
  Schedule s = create_schedule(C);
  s[C].split(C.axis(0), 4);
  PassContext raw;
  raw.simplify = false;
  LoweredFunc unsimplified = lower(s, {A, C}, "raw", raw);
  LoweredFunc simplified = lower(s, {A, C}, "simplified");
  CHECK(contains(simplified.to_string(), "(i.outer*40)"));
  CHECK_FALSE(contains(unsimplified.to_string(), "(i.outer*40)"));
  Buffer<float> a = random_buffer({n, n}, 2), c1({n, n}), c2({n, n});
  test::interpret_checked(unsimplified, {a, c1});
  test::interpret_checked(simplified, {a, c2});
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j) CHECK(c1(i, j) == c2(i, j));
}

TEST_CASE("lower: a user pass that returns an undefined Stmt is named in the error, at every position") {
  // E.g. a mutator that forgot to return its input: without the check, lower() would return an
  // empty kernel that silently writes nothing.
  const int n = 4;
  Tensor A = placeholder({n}, f32, "A");
  Tensor C = compute(
      {n}, [&](Expr i) { return A(i) + 1.0f; }, "C");
  for (PassPosition where :
       {PassPosition::AfterSchedule, PassPosition::AfterFlatten, PassPosition::AfterLoops,
        PassPosition::AfterMemory, PassPosition::AfterDevice}) {
    CAPTURE(static_cast<int>(where));
    PassContext ctx;
    ctx.add_pass(where, "forgets_to_return", [](Stmt, const PassContext&) { return Stmt(); });
    CHECK_THROWS_WITH_AS(lower(create_schedule(C), {A, C}, "dropped", ctx),
                         doctest::Contains("lower 'dropped': user pass 'forgets_to_return' (after phase '"),
                         loom::Error);
  }
}

TEST_CASE("lower: user passes read their own options and see the lowering only while it runs") {
  Graph g;
  Schedule s = create_schedule(g.C);
  PassContext ctx;
  ctx.set_option("scale.factor", "3");
  std::string factor, missing;
  ctx.add_pass(PassPosition::AfterFlatten, "scale", [&](Stmt b, const PassContext& c) {
    factor = c.option("scale.factor");
    missing = c.option("scale.unset", "default");
    return b;
  });
  CHECK(ctx.lowering() == nullptr);
  lower(s, {g.A, g.C}, "options", ctx);
  CHECK(factor == "3");
  CHECK(missing == "default");
  CHECK(ctx.lowering() == nullptr);  // lower() works on its own copy of the context
}

TEST_CASE("lower: phase device splits host and kernels for a GPU target, and only for one") {
  const int n = 100;
  Tensor A = placeholder({n}, f32, "A");
  Tensor C = compute(
      {n}, [&](Expr i) { return A(i) * 2.0f; }, "C");
  Schedule s = create_schedule(C);
  auto [bx, tx] = s[C].split(C.axis(0), 32);
  s[C].bind(bx, thread_axis("blockIdx.x"));
  s[C].bind(tx, thread_axis("threadIdx.x"));

  LoweredFunc plain = lower(s, {A, C}, "scale");
  CHECK(plain.device_split == nullptr);

  PassContext for_gpu;
  for_gpu.target = Target::cuda_sim();
  const cuda::DeviceSplit* seen = nullptr;
  for_gpu.add_pass(PassPosition::AfterDevice, "see_split", [&](Stmt b, const PassContext& c) {
    seen = c.lowering()->device_split();
    return b;
  });
  LoweredFunc split = lower(s, {A, C}, "scale", for_gpu);
  REQUIRE(split.device_split != nullptr);
  CHECK(seen == split.device_split.get());
  REQUIRE(split.device_split->kernels.size() == 1);
  CHECK(split.device_split->source.same_as(split.body));
  CHECK(to_string(split.device_split->kernels[0].extents[0]) == "32");  // threadIdx.x
  CHECK(to_string(split.device_split->kernels[0].extents[3]) == "4");   // blockIdx.x

  // The CUDA code generator takes that split, and splits again a body changed after lowering.
  CHECK(cuda::codegen_cuda(split).source == cuda::codegen_cuda(plain).source);
  split.body = SeqNode::make({split.body, split.body});
  CHECK(cuda::codegen_cuda(split).kernels.size() == 2);

  // build() lowers for its target: the dump of phase device lists the kernel and its launch.
  std::filesystem::path dir = fresh_dir("device");
  PassContext dumped;
  dumped.dump_dir = dir.string();
  build(s, {A, C}, Target::cuda_sim(), "scale", dumped);
  std::string device = read_file(dir / "scale" / "21_device_split_host_device.txt");
  CHECK(contains(device, "host program:"));
  CHECK(contains(device, "threadIdx.x=32"));
  CHECK(contains(device, "blockIdx.x=4"));
  std::filesystem::remove_all(dir);
}

TEST_CASE("lower_from: a function built by hand runs the recipe from phase loops, memory or device") {
  // A vectorized loop of constant extent: phase loops turns it into vector IR, phase memory does not.
  Var a("A", handle_type), c("C", handle_type), i("i", i32);
  LoweredFunc f;
  f.name = "by_hand";
  for (const Var& data : {a, c}) {
    FuncParam p;
    p.kind = FuncParam::Kind::Buffer;
    p.buffer = BufferParam{data.name(), data, f32, {Expr(8)}, {Expr(1)}};
    f.params.push_back(p);
  }
  f.body = ForNode::make(i, Expr(0), Expr(8), ForKind::Vectorized,
                         StoreNode::make(c, LoadNode::make(f32, a, i) + make_const(f32, 1.0), i));
  std::vector<std::string> ran;
  PassContext ctx;
  for (PassPosition where : {PassPosition::AfterSchedule, PassPosition::AfterFlatten,
                             PassPosition::AfterLoops, PassPosition::AfterMemory, PassPosition::AfterDevice})
    ctx.add_pass(where, "record", [&ran, where](Stmt b, const PassContext& c) {
      ran.push_back(phase_name(phase_of(where)));
      CHECK(c.lowering()->schedule() == nullptr);
      return b;
    });
  LoweredFunc vectorized = lower_from(f, Phase::Loops, ctx);
  CHECK(ran == std::vector<std::string>{"loops", "memory", "device"});
  CHECK(contains(vectorized.to_string(), "ramp("));
  Buffer<float> in = random_buffer({8}, 3), out({8});
  test::interpret_checked(vectorized, {in, out});
  for (int k = 0; k < 8; ++k) CHECK(out(k) == in(k) + 1.0f);

  ran.clear();
  LoweredFunc kept = lower_from(f, Phase::Memory, ctx);
  CHECK(ran == std::vector<std::string>{"memory", "device"});
  CHECK_FALSE(contains(kept.to_string(), "ramp("));

  for (Phase needs_schedule : {Phase::Schedule, Phase::Flatten})
    CHECK_THROWS_WITH_AS(lower_from(f, needs_schedule), doctest::Contains("lower_from 'by_hand': phase '"),
                         loom::Error);
  CHECK_THROWS_WITH_AS(lower_from(f, Phase::Flatten),
                       "lower_from 'by_hand': phase 'flatten' works on a schedule, which a function built by "
                       "hand does not have; start at phase 'loops', 'memory' or 'device', or call lower() "
                       "with the schedule",
                       loom::Error);
}
