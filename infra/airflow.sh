#!/usr/bin/env bash
# Start Airflow 3 locally (api-server on 127.0.0.1:8080, scheduler, dag-processor) with the
# windowlib DAGs; prints the UI address and login; Ctrl-C stops everything.
# Options: --port N, --home DIR (default .local/airflow), --root URI (default .local/lake).
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
exec "${repo}/.venv/bin/python" "${repo}/infra/airflow_services.py" "$@"
