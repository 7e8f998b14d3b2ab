// tune::run_queue_in_workers: items run in order in forked workers; an item that crashes, hangs or
// retires its worker is charged alone and a fresh worker (set up again) continues with the next;
// a refusal (loom::Error) does not end a worker; a setup that fails stops the queue and says why;
// what a worker writes stays in it.
#include <loom/tune/worker_queue.hpp>

#include <doctest/doctest.h>

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <csignal>
#include <cstdlib>
#include <stdexcept>
#include <string>

#include <loom/support/error.hpp>
#include <loom/tune/impl/fork_worker.hpp>

using namespace loom;
using namespace loom::tune;

namespace {

/// A session whose items say which worker (by its setup count, kept in the worker's memory) and
/// which item ran them; items 2, 4, 6 and 8 fail in four ways.
WorkerSession scripted_session() {
  static int setups = 0;  // each worker starts from the parent's 0
  ++setups;
  WorkerSession s;
  s.started = "setup " + std::to_string(setups) + " in " + std::to_string(::getpid());
  s.run = [](int item, bool& retire) -> std::string {
    if (item == 2) {
      std::signal(SIGSEGV, SIG_DFL);  // not the test framework's handler: die as a plain process would
      std::raise(SIGSEGV);
    }
    if (item == 4) throw Error("item 4 is refused");
    if (item == 6)
      for (;;) ::pause();
    if (item == 8) {
      retire = true;
      throw Error("item 8 lost the context");
    }
    if (item == 9) throw std::runtime_error("not a refusal");
    return "item " + std::to_string(item);
  };
  return s;
}

}  // namespace

TEST_CASE("tune worker queue: a crash, a hang and a retirement cost one item each; refusals do not") {
  // 2 s: every setup and passing item finishes well within it (forking this test binary included);
  // item 6's hang costs that long.
  const WorkerQueueResult r = run_queue_in_workers(11, scripted_session, 2);
  REQUIRE(r.items.size() == 11);
  CHECK(r.setup_failure.empty());
  using S = WorkerResult::Status;
  for (int i : {0, 1, 3, 5, 7, 10}) {
    CAPTURE(i);
    CHECK(r.items[i].status == S::Finished);
    CHECK(r.items[i].output == "item " + std::to_string(i));
  }
  CHECK(r.items[2].status == S::Crashed);
  CHECK_MESSAGE(r.items[2].detail.find("signal 11") != std::string::npos, r.items[2].detail);
  CHECK(r.items[4].status == S::Threw);
  CHECK(r.items[4].detail == "item 4 is refused");
  CHECK(r.items[6].status == S::TimedOut);
  CHECK_MESSAGE(r.items[6].detail.find("time limit of 2 s") != std::string::npos, r.items[6].detail);
  CHECK(r.items[8].status == S::Threw);
  CHECK(r.items[8].detail == "item 8 lost the context");
  CHECK(r.items[9].status == S::Crashed);
  CHECK(r.items[9].detail == "the worker threw: not a refusal");
  // Workers: 0-2 (crash), 3-6 (hang), 7-8 (retired), 9-10; each set itself up once, in its own process.
  CHECK(r.workers == 4);
  REQUIRE(r.started.size() == 4);
  for (const std::string& s : r.started) CHECK(s.find("setup 1 in ") == 0);
  CHECK(r.started[0] != r.started[1]);
  CHECK(r.started[0].find(std::to_string(::getpid())) == std::string::npos);
}

TEST_CASE("tune worker queue: a failed setup stops the queue; a session without items runs none") {
  using S = WorkerResult::Status;
  WorkerQueueResult r = run_queue_in_workers(
      3, []() -> WorkerSession { throw Error("no GPU of sm_90 here"); }, 5);
  CHECK(r.items.empty());
  CHECK(r.workers == 1);
  CHECK(r.setup_failure == "no GPU of sm_90 here");

  r = run_queue_in_workers(
      3, []() -> WorkerSession { throw std::runtime_error("bad_alloc, say"); }, 5);
  CHECK(r.setup_failure == "the worker's setup threw: bad_alloc, say");

  r = run_queue_in_workers(
      3,
      []() -> WorkerSession {
        for (;;) ::pause();
      },
      0.3);
  CHECK(r.items.empty());
  CHECK_MESSAGE(r.setup_failure.find("setup ran past the time limit of 0.3 s") != std::string::npos,
                r.setup_failure);

  // The second worker's setup dies (it finds the file the first one made): the item before stands,
  // the rest do not run.
  char marker[] = "/tmp/loom-worker-queue-XXXXXX";
  const int fd = ::mkstemp(marker);
  REQUIRE(fd >= 0);
  ::close(fd);
  ::unlink(marker);
  r = run_queue_in_workers(
      3,
      [&] {
        if (::access(marker, F_OK) == 0) {
          std::signal(SIGABRT, SIG_DFL);
          std::abort();
        }
        ::close(::open(marker, O_CREAT | O_WRONLY, 0600));
        WorkerSession s;
        s.started = "first";
        s.run = [](int item, bool& retire) {
          retire = true;
          return std::to_string(item);
        };
        return s;
      },
      5);
  ::unlink(marker);
  REQUIRE(r.items.size() == 1);
  CHECK(r.items[0].status == S::Finished);
  CHECK(r.items[0].output == "0");
  CHECK(r.workers == 2);
  CHECK_MESSAGE(r.setup_failure.find("the worker's setup failed: the worker died of signal 6") == 0,
                r.setup_failure);

  // No time limit, and one too long for the clock (an infinite one): both wait as long as it takes.
  for (double unlimited : {0.0, 1e12, static_cast<double>(INFINITY)}) {
    CAPTURE(unlimited);
    r = run_queue_in_workers(
        2,
        [] {
          return WorkerSession{"unlimited", [](int item, bool&) { return std::to_string(item); }};
        },
        unlimited);
    REQUIRE(r.items.size() == 2);
    CHECK(r.items[1].output == "1");
  }

  r = run_queue_in_workers(
      0,
      [] {
        return WorkerSession{"just the setup", nullptr};
      },
      5);
  CHECK(r.items.empty());
  CHECK(r.started == std::vector<std::string>{"just the setup"});
  r = run_queue_in_workers(
      5,
      [] {
        return WorkerSession{"no items here", nullptr};
      },
      5);
  CHECK(r.items.empty());
  CHECK(r.workers == 1);
  CHECK(r.setup_failure.empty());
}

TEST_CASE("tune worker queue: a later worker without items stops the queue and says so") {
  // The first worker runs item 0 and retires; the second finds no device (its session has no
  // items): items 1 and 2 cannot run, and the result must say why rather than end quietly.
  char marker[] = "/tmp/loom-worker-queue-XXXXXX";
  const int fd = ::mkstemp(marker);
  REQUIRE(fd >= 0);
  ::close(fd);
  ::unlink(marker);
  const WorkerQueueResult r = run_queue_in_workers(
      3,
      [&] {
        if (::access(marker, F_OK) == 0) return WorkerSession{"", nullptr};
        ::close(::open(marker, O_CREAT | O_WRONLY, 0600));
        return WorkerSession{"first", [](int item, bool& retire) {
                               retire = true;
                               return std::to_string(item);
                             }};
      },
      5);
  ::unlink(marker);
  REQUIRE(r.items.size() == 1);
  CHECK(r.workers == 2);
  CHECK(r.setup_failure == "worker 2 set up with no items to run (1 of 3 were run)");
}

TEST_CASE("tune worker queue: an exception that escapes a worker ends it, not the caller's code") {
  // A worker is a copy of the caller: an exception unwinding out of its work would run the
  // caller's code a second time. fork_worker ends it with status 4 instead.
  const tune::detail::ForkedWorker w = tune::detail::fork_worker([](int) {
    throw std::runtime_error("escaped");  // as a std::bad_alloc from a full heap would
  });
  if (w.pid <= 0) ::_exit(99);  // a worker that returned here: its status would say 99, not 4
  ::close(w.fd);
  int status = 0;
  REQUIRE(::waitpid(w.pid, &status, 0) == w.pid);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 4);
}
