# Sourced by the scripts that install optional tools from PyPI (bench-peers.sh, sass-tools.sh):
# pip_venv NAME BUILD PACKAGE... makes (or reuses) the venv BUILD/NAME/venv and installs or
# upgrades the packages there, never outside the build tree. Sets $venv to its path.
pip_venv() {
  local name="$1" build="$2"
  shift 2
  venv="$build/$name/venv"
  if ! python3 -c 'import venv, ensurepip' 2> /dev/null; then
    echo "$name: python3 with venv is needed (Debian: apt-get install python3-venv)" >&2
    exit 1
  fi
  mkdir -p "$build/$name"
  [ -x "$venv/bin/pip" ] || python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check --upgrade "$@"
  echo "$name: installed in $venv:"
  local pattern
  pattern="^($(
    IFS='|'
    echo "$*"
  )) "
  "$venv/bin/pip" list --disable-pip-version-check 2> /dev/null | grep -Ei "$pattern" || true
}
