#!/usr/bin/env bash
# Every test of the project, from a fresh clone: install, build, lint, API reports, pack check,
# unit tests, the packed packages in fresh projects (test/consumer),
# then the end-to-end tests against a private containerd that this script installs and starts.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ ! -d node_modules ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  npm ci --no-audit --no-fund
fi
npm run build
npm run lint
npm run api
npm run pack:check

# The private containerd (installed on first use) for the end-to-end tests.
source scripts/containerd/env.sh
bash scripts/containerd/up.sh
trap 'bash scripts/containerd/down.sh || true' EXIT

mkdir -p .tmp && rm -f .tmp/vitest-unit.json .tmp/vitest-consumer.json .tmp/vitest-e2e.json
# Unit tests first, then the packed packages in fresh projects (test/consumer), then the
# end-to-end tests on their own, so the runtime tests do not share the two cores.
status=0
npx vitest run --project unit --reporter=default --reporter=json --outputFile.json=.tmp/vitest-unit.json || status=$?
npx vitest run --project consumer --reporter=default --reporter=json --outputFile.json=.tmp/vitest-consumer.json || status=$?
npx vitest run --project e2e --reporter=default --reporter=json --outputFile.json=.tmp/vitest-e2e.json || status=$?
# One plain closing line with the totals, whatever the reporters printed above.
node -e '
  const fs = require("fs");
  let passed = 0, failed = 0, skipped = 0;
  for (const f of [".tmp/vitest-unit.json", ".tmp/vitest-consumer.json", ".tmp/vitest-e2e.json"]) {
    if (!fs.existsSync(f)) { failed++; continue; }
    const r = JSON.parse(fs.readFileSync(f, "utf8"));
    passed += r.numPassedTests; failed += r.numFailedTests; skipped += r.numPendingTests + r.numTodoTests;
  }
  console.log(`tests: ${passed} passed, ${failed} failed, ${skipped} skipped`);
' || true
exit "$status"
