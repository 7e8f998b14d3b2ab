// Barrier insertion (lower/thread_sync.hpp): a barrier where another thread may touch what one
// wrote, none where index ranges prove that threads never meet, and pending accesses that stay
// few however deeply loops nest.
#include <loom/lower/thread_sync.hpp>

#include <doctest/doctest.h>

#include "../runtime/sim_test_util.hpp"
#include "../support/count_stmts.hpp"

using namespace loom;
using namespace loom::test;

namespace {

/// One block of `threads` threads over a 512-float shared buffer S running `body`.
Stmt kernel(const Var& tx, const Var& S, int threads, Stmt body) {
  return bind(tx, "threadIdx.x", threads, allocate(S, f32, 512, "shared", std::move(body)));
}

}  // namespace

TEST_CASE("thread sync: no barrier between writes whose index ranges never meet") {
  // Every thread writes S[tx] and S[tx + 256]: with 256 threads no element is written twice.
  Var tx("tx"), S("S", handle_type);
  BufferParam O = buffer_param("O", f32, {512});
  Stmt body = seq({st(S, 1.0f, tx), st(S, 2.0f, tx + 256), store(O, ld(S, f32, tx), tx)});
  CHECK(count_barriers(insert_thread_sync(kernel(tx, S, 256, body))) == 0);
  // With 257 threads, thread 256 writes S[256], which thread 0 writes next (and reads after).
  CHECK(count_barriers(insert_thread_sync(kernel(tx, S, 257, body))) == 2);
}

TEST_CASE("thread sync: quotient and remainder terms count within their bounds") {
  // lib::gpu_gemm's element copies: 128 threads fill rows of a padded tile, thread tx writing
  // S[tx / 64 * 72 + tx % 64 + 144 i] for i = 0, 1. A write of i = 0 lies in [0, 135] and one of
  // i = 1 in [144, 279]: no barrier between them (there was one after every store).
  Var tx("tx"), S("S", handle_type);
  BufferParam O = buffer_param("O", f32, {512});
  const Expr row = tx / 64 * 72 + tx % 64;
  Stmt apart = seq({st(S, 1.0f, row), st(S, 2.0f, row + 144), store(O, ld(S, f32, row), tx)});
  CHECK(count_barriers(insert_thread_sync(kernel(tx, S, 128, apart))) == 0);
  // 100 apart they meet (thread 92 writes element 72 + 28 = 100 first, thread 0 writes it second,
  // and thread 92 reads it back): a barrier before the second writes and one before the reads.
  Stmt meet = seq({st(S, 1.0f, row), st(S, 2.0f, row + 100), store(O, ld(S, f32, row), tx)});
  CHECK(count_barriers(insert_thread_sync(kernel(tx, S, 128, meet))) == 2);
  // A quotient of a size the test cannot bound still gets a barrier.
  Var n("n");
  Stmt unknown = seq({st(S, 1.0f, tx % 64), st(S, 2.0f, tx % 64 + n / 2 + 64), store(O, ld(S, f32, tx), tx)});
  CHECK(count_barriers(insert_thread_sync(kernel(tx, S, 64, unknown))) >= 1);
}

TEST_CASE("thread sync: a barrier before reading what other threads wrote") {
  Var tx("tx"), S("S", handle_type);
  BufferParam O = buffer_param("O", f32, {512});
  Stmt reverse = seq({st(S, 1.0f, tx), store(O, ld(S, f32, 255 - tx), tx)});
  Stmt synced = insert_thread_sync(kernel(tx, S, 256, reverse));
  CHECK(count_barriers(synced) == 1);
  // A 4-wide vector store then a read 4 elements further on: the ranges [4t, 4t+3] and
  // [4t'+4, 4t'+7] meet (t' = t - 1), so a barrier; 8 elements apart with 2 threads they do not.
  Stmt vec = seq({st(S, BroadcastNode::make(1.0f, 4), RampNode::make(tx * 4, 1, 4)),
                  store(O, ld(S, f32, tx * 4 + 4), tx)});
  CHECK(count_barriers(insert_thread_sync(kernel(tx, S, 64, vec))) == 1);
  Stmt apart = seq({st(S, BroadcastNode::make(1.0f, 4), RampNode::make(tx * 4, 1, 4)),
                    store(O, ld(S, f32, tx * 4 + 8), tx)});
  CHECK(count_barriers(insert_thread_sync(kernel(tx, S, 2, apart))) == 0);
  // An index through a size the test cannot bound: a barrier, to be safe.
  Var n("n");
  Stmt unknown = seq({st(S, 1.0f, tx), store(O, ld(S, f32, tx + n), tx)});
  CHECK(count_barriers(insert_thread_sync(kernel(tx, S, 64, unknown))) == 1);
}

TEST_CASE("thread sync: deep loop nests after shared accesses stay cheap and correct") {
  // Each loop body is analysed twice; the accesses pending from both passes are kept once, so
  // eight nested loops reading a shared buffer lower quickly (the list grew double-exponentially
  // before) and the kernel gets the one barrier it needs, before the first read.
  Var tx("tx"), S("S", handle_type);
  BufferParam O = buffer_param("O", f32, {64});
  std::vector<Var> loops;
  for (int d = 0; d < 8; ++d) loops.push_back(Var(cat("i", d)));
  Stmt inner = store(O, load(O, tx) + ld(S, f32, 63 - tx), tx);
  for (int d = 7; d >= 0; --d) inner = loop(loops[static_cast<size_t>(d)], 0, 2, inner);
  Stmt body = seq({st(S, 1.0f, tx), inner});
  Stmt synced = insert_thread_sync(kernel(tx, S, 64, body));
  CHECK(count_barriers(synced) == 1);
}
