// Runs API Extractor over every package entry point. Without --local it fails when a
// committed report (packages/*/etc/*.api.md) is out of date; with --local it rewrites them.

import fs from 'node:fs';
import path from 'node:path';
import { Extractor, ExtractorConfig } from '@microsoft/api-extractor';

const root = path.resolve(import.meta.dirname, '..');
const local = process.argv.includes('--local');
// Optional package names narrow the run: `node scripts/api.mjs --local cri`.
const only = process.argv.slice(2).filter((a) => !a.startsWith('--'));
let failed = 0;
let preambleShown = false;
for (const name of fs.readdirSync(path.join(root, 'packages')).sort()) {
  if (only.length > 0 && !only.includes(name)) continue;
  const dir = path.join(root, 'packages', name);
  fs.mkdirSync(path.join(dir, 'etc'), { recursive: true });
  for (const file of fs.readdirSync(dir).filter((f) => /^api-extractor(\..+)?\.json$/.test(f))) {
    const config = ExtractorConfig.loadFileAndPrepare(path.join(dir, file));
    const result = Extractor.invoke(config, {
      localBuild: local,
      showVerboseMessages: false,
      messageCallback: (m) => {
        // Only say which TypeScript API Extractor bundles once, not per package (the notice is
        // "console-preamble" since API Extractor 7.5x).
        if (m.messageId === 'console-compiler-version-notice') m.handled = true;
        if (m.messageId === 'console-preamble') {
          if (preambleShown) m.handled = true;
          preambleShown = true;
        }
      },
    });
    if (!result.succeeded) {
      failed++;
      console.error(
        `api: ${name}/${file}: ${result.errorCount} errors, ${result.warningCount} warnings` +
          (result.apiReportChanged
            ? ' (report out of date: run `npm run api:update` and review the diff)'
            : ''),
      );
    } else {
      console.log(`api: ${name}/${file} ok`);
    }
  }
}
process.exit(failed ? 1 : 0);
