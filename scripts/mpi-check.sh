#!/usr/bin/env bash
# Installs Open MPI from Debian's packages (libopenmpi-dev, openmpi-bin) with the rest of Loom's
# dependencies, builds the test of loom::tune across MPI ranks (tests/mpi) in build/, and runs it
# with 2, 3 and 4 local ranks. Not part of scripts/test.sh: the README's commands need no MPI.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

bash scripts/install-deps.sh libopenmpi-dev openmpi-bin
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DLOOM_BUILD_TESTS=ON
cmake --build build -j"$(nproc)" --target loom_tune_mpi_test
exec ctest --test-dir build --output-on-failure -L mpi
