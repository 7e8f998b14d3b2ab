// loom::tune across the ranks of an MPI job: the measurement of each batch of configurations is
// shared among the ranks (each on its own machine, typically), and the outcomes gathered so that
// every rank follows the same search; rank 0 writes the database. Only this header needs MPI (an
// implementation's <mpi.h>, e.g. Debian's libopenmpi-dev); Loom itself does not link it.
//
//   MPI_Init(&argc, &argv);
//   tune::Options o;
//   o.distribution = tune::mpi_distribution();
//   tune::Result r = tune::tune(args, schedule, o);  // on every rank, same arguments
//   MPI_Finalize();
#pragma once

#include <mpi.h>

#include <string>
#include <vector>

#include "loom/tune/tune.hpp"

namespace loom::tune {

/// The ranks of `comm` as a Distribution: rank and size from the communicator, all_gather from
/// MPI_Allgather (the lengths) and MPI_Allgatherv (the strings). MPI must be initialized, and stay
/// so while tune() runs.
inline Distribution mpi_distribution(MPI_Comm comm = MPI_COMM_WORLD) {
  Distribution d;
  MPI_Comm_rank(comm, &d.rank);
  MPI_Comm_size(comm, &d.size);
  const int size = d.size;
  d.all_gather = [comm, size](const std::string& mine) {
    const int length = static_cast<int>(mine.size());
    std::vector<int> lengths(static_cast<size_t>(size)), offsets(static_cast<size_t>(size));
    MPI_Allgather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, comm);
    int total = 0;
    for (int r = 0; r < size; ++r)
      offsets[static_cast<size_t>(r)] = total, total += lengths[static_cast<size_t>(r)];
    std::string all(static_cast<size_t>(total), '\0');
    MPI_Allgatherv(mine.data(), length, MPI_CHAR, all.data(), lengths.data(), offsets.data(), MPI_CHAR, comm);
    std::vector<std::string> out;
    for (int r = 0; r < size; ++r)
      out.push_back(all.substr(static_cast<size_t>(offsets[static_cast<size_t>(r)]),
                               static_cast<size_t>(lengths[static_cast<size_t>(r)])));
    return out;
  };
  return d;
}

}  // namespace loom::tune
