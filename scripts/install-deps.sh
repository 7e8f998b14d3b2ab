#!/usr/bin/env bash
# Installs the Debian packages Loom's build, tests, examples and benchmarks need, if any is
# missing (apt-get as root, or through sudo). Does nothing when all are installed. Arguments name
# more packages to install the same way (scripts/mpi-check.sh adds Open MPI).
set -euo pipefail

PACKAGES=(g++ cmake make ccache doctest-dev llvm-19-dev libbenchmark-dev libopenblas-dev libdlpack-dev libxgboost0 "$@")

if [[ "${LOOM_SKIP_DEPS:-0}" == "1" ]]; then
  echo "install-deps: LOOM_SKIP_DEPS=1, not checking packages"
  exit 0
fi

if ! command -v dpkg >/dev/null 2>&1 || ! command -v apt-get >/dev/null 2>&1; then
  echo "install-deps: not a Debian-like system (no dpkg/apt-get); make sure these are installed:" >&2
  echo "  ${PACKAGES[*]}" >&2
  exit 0
fi

missing=()
for pkg in "${PACKAGES[@]}"; do
  # `dpkg -s` also succeeds for removed packages whose config files remain: check the status.
  if ! dpkg -s "$pkg" 2>/dev/null | grep -q '^Status: install ok installed'; then
    missing+=("$pkg")
  fi
done

if [[ ${#missing[@]} -eq 0 ]]; then
  exit 0
fi

echo "install-deps: missing packages: ${missing[*]}"
if [[ "$(id -u)" -eq 0 ]]; then
  as_root=()
elif command -v sudo >/dev/null 2>&1; then
  as_root=(sudo)
else
  echo "install-deps: error: missing packages (${missing[*]}) and not root, and sudo is not available." >&2
  echo "install-deps: run as root: apt-get install ${missing[*]}" >&2
  exit 1
fi

echo "install-deps: installing them with apt-get${as_root[*]:+ (through sudo)}"
"${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update
"${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}"
