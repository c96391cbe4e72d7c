import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

const root = fileURLToPath(new URL('.', import.meta.url));

// Tests import sibling packages by name; resolve them to their sources so a test run needs no
// build and every package sees the same module instances.
const alias = [
  { find: /^@kubelet-kit\/([a-z-]+)\/testing$/, replacement: `${root}packages/$1/src/testing/index.ts` },
  { find: /^@kubelet-kit\/([a-z-]+)$/, replacement: `${root}packages/$1/src/index.ts` },
];

export default defineConfig({
  resolve: { alias },
  test: {
    projects: [
      {
        resolve: { alias },
        test: {
          name: 'unit',
          include: ['packages/*/test/**/*.test.ts'],
          testTimeout: 20_000,
        },
      },
      {
        resolve: { alias },
        test: {
          name: 'e2e',
          include: ['test/e2e/**/*.test.ts'],
          testTimeout: 180_000,
          hookTimeout: 180_000,
          fileParallelism: false,
        },
      },
      {
        test: {
          // The packed packages in fresh projects (test/consumer/consumer.test.ts); needs a build.
          name: 'consumer',
          include: ['test/consumer/**/*.test.ts'],
          testTimeout: 120_000,
          hookTimeout: 300_000,
        },
      },
    ],
  },
});
