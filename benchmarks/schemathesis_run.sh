#!/usr/bin/env bash
# Fuzz the web lab's API from its OpenAPI schema with Schemathesis and fail on any 5xx or any answer the
# schema does not document. Starts Uvicorn (seqlab serve's app) on a free loopback port, runs every phase
# (explicit examples, boundary values, random valid and invalid data), stops the server.
#
#   bash benchmarks/schemathesis_run.sh            # 100 examples per operation
#   MAX_EXAMPLES=20 bash benchmarks/schemathesis_run.sh
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python}"
MAX_EXAMPLES="${MAX_EXAMPLES:-100}"
PORT="$("$PYTHON" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"

"$PYTHON" -m uvicorn --factory seqlab.web.app:create_app --host 127.0.0.1 --port "$PORT" \
    --log-level warning --no-access-log &
SERVER=$!
trap 'kill "$SERVER" 2>/dev/null; wait "$SERVER" 2>/dev/null || true' EXIT
for _ in $(seq 1 300); do
    if "$PYTHON" -c "import socket; socket.create_connection(('127.0.0.1', $PORT), 0.5)" 2>/dev/null; then break; fi
    sleep 0.2
done

# /api/time/run times the machine for seconds per call: a few examples only.
"$PYTHON" -m schemathesis.cli run "http://127.0.0.1:$PORT/openapi.json" \
    --checks not_a_server_error,status_code_conformance,content_type_conformance,response_schema_conformance,positive_data_acceptance,negative_data_rejection \
    --phases examples,coverage,fuzzing --max-examples "$MAX_EXAMPLES" --seed 0 --workers 1 \
    --exclude-path /api/time/run --request-timeout 120 --suppress-health-check too_slow,filter_too_much
"$PYTHON" -m schemathesis.cli run "http://127.0.0.1:$PORT/openapi.json" \
    --checks not_a_server_error,status_code_conformance,response_schema_conformance \
    --phases examples,fuzzing --max-examples 5 --seed 0 --workers 1 \
    --include-path /api/time/run --request-timeout 120 --suppress-health-check too_slow
