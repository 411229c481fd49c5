#!/usr/bin/env bash
# Create the project virtualenv at .venv (idempotent) and make sure Java 17+ is present, and
# Chromium (Debian's chromium + chromium-driver, used headless by the browser test).
# Everything the project needs is installed from requirements.lock (see `make lock`).
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=.venv
# a change to the lock, the project or this script installs again
STAMP="$VENV/.installed-$(sha256sum requirements.lock pyproject.toml infra/bootstrap.sh \
  | sha256sum | cut -c1-16)"

ensure_java() {
  if command -v java >/dev/null 2>&1; then
    major=$(java -version 2>&1 | awk -F'"' '/version/ {split($2, v, "."); print v[1]; exit}')
    if [ "${major:-0}" -ge 17 ]; then return 0; fi
    echo "bootstrap: java ${major:-?} found, need 17+; installing openjdk-17" >&2
  else
    echo "bootstrap: no java found; installing openjdk-17-jre-headless" >&2
  fi
  if [ "$(id -u)" -ne 0 ]; then SUDO=sudo; else SUDO=; fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq openjdk-17-jre-headless >/dev/null
}

# Headless Chromium for tests/airflow's browser test (Playwright drives /usr/bin/chromium; it
# never downloads a browser). Best effort: without root/sudo the browser test is skipped.
ensure_chromium() {
  if command -v chromium >/dev/null 2>&1 && command -v chromedriver >/dev/null 2>&1; then
    return 0
  fi
  if [ "$(id -u)" -eq 0 ]; then SUDO=;
  elif command -v sudo >/dev/null 2>&1; then SUDO=sudo;
  else
    echo "bootstrap: chromium missing and no root/sudo; the browser test will be skipped" >&2
    return 0
  fi
  echo "bootstrap: installing chromium and chromium-driver (Debian packages)" >&2
  if ! { $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install \
      -y -qq chromium chromium-driver >/dev/null; }; then
    echo "bootstrap: could not install chromium; the browser test will be skipped" >&2
  fi
}

ensure_venv() {
  if [ -f "$STAMP" ]; then return 0; fi
  PY=${PYTHON:-python3.11}
  command -v "$PY" >/dev/null 2>&1 || PY=python3
  if ! "$PY" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))'; then
    echo "bootstrap: Python 3.11 is required (found $("$PY" --version 2>&1))" >&2; exit 1
  fi
  [ -x "$VENV/bin/python" ] || "$PY" -m venv "$VENV"
  "$VENV/bin/python" -m pip install -q --upgrade "uv>=0.4" >/dev/null
  echo "bootstrap: installing locked dependencies into $VENV (about two minutes)..." >&2
  # --compile-bytecode: where PYTHONDONTWRITEBYTECODE is set nothing else writes .pyc files,
  # and every process would compile its imports again (docs/performance.md, "Bytecode for
  # every process")
  "$VENV/bin/uv" pip install -q --python "$VENV/bin/python" --compile-bytecode \
      -r requirements.lock --override infra/uv-overrides.txt
  "$VENV/bin/uv" pip install -q --python "$VENV/bin/python" --no-deps \
      --config-settings editable_mode=compat -e .
  # uv keeps each rebuilt revision of a source distribution (pyspark's is about 0.9 GB), so
  # repeated set-ups filled the disk (59 GB seen); drop what no install refers to any more.
  "$VENV/bin/uv" cache prune -q || echo "bootstrap: 'uv cache prune' failed (ignored)" >&2
  # pyspark-client (pulled by some providers) ships its own pyspark/ and silently replaces
  # pyspark's files; refuse to continue if that ever happens.
  "$VENV/bin/python" - <<'PY'
import importlib.metadata as md, pyspark, sys
want = md.version("pyspark")
if pyspark.__version__ != want:
    sys.exit(f"bootstrap: pyspark files are {pyspark.__version__}, package is {want}")
PY
  rm -f "$VENV"/.installed-*
  touch "$STAMP"
}

# The project's own modules, compiled where they changed (quick when nothing did), for the
# same reason as --compile-bytecode above.
ensure_bytecode() {
  "$VENV/bin/python" -m compileall -q -j 0 windowlib jobs dags infra >/dev/null
}

ensure_java
ensure_chromium
ensure_venv
ensure_bytecode
