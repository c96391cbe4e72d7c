#!/usr/bin/env bash
# Every test of the project, from a fresh clone: install, build, lint, API reports, unit tests,
# then the end-to-end tests against a private containerd that this script installs and starts.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ ! -d node_modules ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  npm ci --no-audit --no-fund
fi
npm run build
npm run lint
npm run api

# The private containerd (installed on first use) for the end-to-end tests.
source scripts/containerd/env.sh
bash scripts/containerd/up.sh
trap 'bash scripts/containerd/down.sh || true' EXIT

mkdir -p .tmp
status=0
npx vitest run --reporter=default --reporter=json --outputFile.json=.tmp/vitest-results.json || status=$?
# One plain closing line with the totals, whatever the reporter printed above.
node -e '
  const r = JSON.parse(require("fs").readFileSync(".tmp/vitest-results.json", "utf8"));
  console.log(`tests: ${r.numPassedTests} passed, ${r.numFailedTests} failed, ${r.numPendingTests + r.numTodoTests} skipped`);
' || true
exit "$status"
