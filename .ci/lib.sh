# Shared by .ci/setup-test-env and .ci/test (sourced, not executed).

KC_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# Kafka jars, generated TLS material and (on externally managed Pythons) the venv live here,
# outside the repository, so nothing downloaded is ever committed.
KC_CACHE=${KCONFIGS_TEST_CACHE:-$HOME/.cache/kconfigs-test}

kc_log() { echo "$(basename "$0"): $*" >&2; }
kc_die() { kc_log "error: $*"; exit 1; }

# The interpreter the tests run with: $KCONFIGS_PYTHON, else the venv setup-test-env made
# (only when the system Python refuses pip installs, PEP 668), else python / python3.
kc_python() {
  if [ -n "${KCONFIGS_PYTHON:-}" ]; then echo "$KCONFIGS_PYTHON"; return; fi
  if [ -x "$KC_CACHE/venv/bin/python" ]; then echo "$KC_CACHE/venv/bin/python"; return; fi
  command -v python || command -v python3 || kc_die "no python found"
}

# The interpreter's own path (a pyenv shim or a symlink resolved as Python resolves it), for
# PYO3_PYTHON: pip's build of enforcement/native and .ci/test's cargo checks must name the same
# one, or cargo reruns pyo3's build script and recompiles pyo3 and the crate.
kc_python_executable() {
  "$(kc_python)" -c 'import sys; print(sys.executable)'
}
