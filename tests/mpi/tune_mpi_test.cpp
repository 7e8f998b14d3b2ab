// loom::tune shared among the ranks of an MPI job (tune/mpi.hpp), run by ctest through mpiexec
// with 2, 3 and 4 local ranks where CMake finds an MPI. Checks that
//   - an exhaustive search shared among the ranks gives every configuration the outcome that one
//     process alone gives it (measured, refused by Loom, or wrong), on every rank;
//   - an evolutionary search (whose proposals depend on the measured times) is the same search on
//     every rank: the same configurations in the same order, the same result;
//   - only rank 0 writes the database: one line per measured configuration and per finalist.
// Times are never compared. Prints `ok` on rank 0 and exits 0 when every check passes on every rank.
#include <loom/tune/mpi.hpp>

#include <mpi.h>
#include <stdlib.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

using namespace loom;

namespace {

int failures = 0;

void expect(bool ok, int rank, const std::string& what) {
  if (ok) return;
  ++failures;
  std::printf("rank %d: FAILED: %s\n", rank, what.c_str());
}

/// C = A B on 37 x 29 x 23 with four knobs: tile_i = 0 is refused by split, drop_rows is wrong.
struct Matmul {
  Tensor A = placeholder({37, 23}, f32, "A"), B = placeholder({23, 29}, f32, "B");
  IterVar k = reduce_axis(0, 23, "k");
  Tensor C = compute(
      {37, 29}, [&](Expr i, Expr j) { return sum(A(i, k) * B(k, j), {k}); }, "C");
  std::vector<LowerArg> args() const { return {A, B, C}; }
  tune::ScheduleFunction schedule() const {
    return [this](tune::Config& cfg) {
      Schedule s = create_schedule(C);
      auto [io, ii] = s[C].split(C.axis(0), cfg.choice("tile_i", {4, 0}));
      auto [jo, ji] = s[C].split(C.axis(1), cfg.choice("tile_j", {8, 16, 4}));
      s[C].reorder({io, jo, C.reduce_axis(0), ii, ji});
      if (cfg.flag("vectorize")) s[C].vectorize(ji);
      if (cfg.flag("drop_rows")) s[C].set_store_predicate(C.axis(0).var() < 20);
      return s;
    };
  }
};

int lines_of(const std::string& path) {
  std::ifstream in(path);
  int n = 0;
  for (std::string line; std::getline(in, line);) ++n;
  return n;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  const tune::Distribution dist = tune::mpi_distribution();
  const int rank = dist.rank;
  // One database directory for the job: rank 0's.
  std::string dir;
  if (rank == 0) {
    char tmpl[] = "/tmp/loom-tune-mpi-XXXXXX";
    dir = ::mkdtemp(tmpl);
  }
  dir = dist.all_gather(dir).at(0);
  const std::string db = dir + "/tuning.jsonl";

  Matmul w;
  tune::Options o;
  o.name = "matmul_mpi";
  o.repeats = 2;
  o.min_sample_ms = 0.02;
  o.database = "off";

  // 1. Exhaustive: the outcome of each configuration, shared against alone.
  tune::Result alone = tune::tune(w.args(), w.schedule(), o);
  o.distribution = dist;
  o.database = db;
  tune::Result shared = tune::tune(w.args(), w.schedule(), o);
  expect(shared.trials.size() == 24 && alone.trials.size() == 24, rank, "24 configurations tried");
  for (size_t i = 0; i < shared.trials.size() && i < alone.trials.size(); ++i) {
    expect(shared.trials[i].knobs == alone.trials[i].knobs, rank, "the same order");
    expect(shared.trials[i].outcome == alone.trials[i].outcome, rank,
           "configuration " + tune::knobs_text(shared.trials[i].knobs) + " has the outcome it has alone");
  }
  expect(shared.measured == 6 && shared.invalid == 12 && shared.wrong == 6, rank,
         "6 measured, 12 refused, 6 wrong");
  const std::vector<std::string> bests = dist.all_gather(tune::knobs_text(shared.best));
  for (const std::string& b : bests) expect(b == bests[0], rank, "every rank has the same best");
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0)
    expect(lines_of(db) == shared.measured + static_cast<int>(shared.finals.size()), rank,
           "rank 0 wrote one line per measurement and per finalist (" + std::to_string(lines_of(db)) + ")");

  // 2. Evolutionary: the same search on every rank.
  o.max_trials = 10;
  o.database = "off";
  tune::Result evolved = tune::tune(w.args(), w.schedule(), o);
  expect(evolved.strategy == tune::Strategy::Evolutionary, rank, "an evolutionary search");
  expect(evolved.trials.size() == 10, rank, "10 configurations tried");
  std::string sequence;
  for (const tune::Trial& t : evolved.trials) sequence += tune::knobs_text(t.knobs) + ";";
  sequence += "best:" + tune::knobs_text(evolved.best);
  const std::vector<std::string> sequences = dist.all_gather(sequence);
  for (const std::string& s : sequences)
    expect(s == sequences[0], rank, "every rank followed the same search");

  int total = 0;
  MPI_Allreduce(&failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0) {
    std::remove(db.c_str());
    std::remove(dir.c_str());
    std::printf("%d ranks: %d failures\n%s\n", dist.size, total, total == 0 ? "ok" : "FAILED");
  }
  MPI_Finalize();
  return total == 0 ? 0 : 1;
}
