#!/usr/bin/env bash
# Start Airflow 3 locally (api-server on 127.0.0.1:8080, scheduler, dag-processor) with the
# windowlib DAGs; prints the UI address and login; Ctrl-C stops everything.
# Options: --port N, --home DIR, --root URI, --demo / --no-demo. Without --root it serves the
# last `make demo` (its lake and DAG runs) when there is one, else .local/lake; it prints which.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PYTHONPATH="${repo}${PYTHONPATH:+:${PYTHONPATH}}" exec "${repo}/.venv/bin/python" -m infra.airflow_serving "$@"
