import { defineConfig } from 'vitest/config';
import LongestFirst from './test/helpers/longest-first.ts';

// Tests that start a Redis Cluster of their own (six redis-server processes) or several server processes on one:
// run after the rest, on their own, so that their load does not slow every other file's set-up (and theirs is not
// slowed by it). docs/testing.md gives the budget of each group.
const CLUSTER_TESTS = [
  'test/e2e/cluster.test.ts',
  'test/e2e/redis-cluster-hang.test.ts',
  'test/**/*-cluster.test.ts',
  'test/storage/redis-cluster-misc.test.ts',
];

// Tests that drive Debian's Chromium (with axe on every page): in a project of their own, with a longer timeout (a
// page with its accessibility check takes a few seconds on a loaded machine, and a journey walks a dozen), each
// worker with one Chromium for all its files (test/helpers/browser.ts). Every file that launches it is here: among
// the main group's files, a walk of pages slowed the files beside it, timing-sensitive ones included.
const BROWSER_TESTS = [
  'test/e2e/web-journey.test.ts',
  'test/e2e/web-client.test.ts',
  'test/e2e/web-reading.test.ts',
  'test/e2e/web-collections.test.ts',
  'test/e2e/web-keyboard.test.ts',
  'test/e2e/web-relations.test.ts',
  'test/e2e/web-more-pages.test.ts',
  'test/e2e/statuses-cleanup.test.ts',
  'test/web/public-a11y.test.ts',
  'test/web/webauthn.test.ts',
  'test/web/oidc.test.ts',
  'test/web/admin-*-a11y.test.ts',
  'test/web/admin-custom-emojis.test.ts',
  'test/web/admin-relays.test.ts',
  'test/web/admin-roles.test.ts',
  'test/web/admin-rules.test.ts',
  'test/web/admin-settings.test.ts',
];

export default defineConfig({
  test: {
    // A test certificate authority and a certificate for https test servers on loopback (test/helpers/tls.ts).
    globalSetup: ['test/helpers/tls.ts', 'test/helpers/database-template.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // The longest files of each group first, also on a fresh clone (test/helpers/longest-first.ts).
    sequence: { sequencer: LongestFirst },
    // Two cores. The main and cluster groups run three files at once: with two, the machine sat 30% idle through the
    // main group (files wait on timers, sockets and other processes), and three took it from 137 s to 123 s (cluster:
    // 42 s to 33 s); four left 8% idle for little more. The browser group's three files fit in two.
    maxWorkers: 2,
    projects: [
      // isolate: false: a worker imports the server's modules once for all its files, not once per file (imports were
      // a fifth of the group's time). Files share no state through them: each makes its own servers, databases and
      // Redis prefixes, and what a file changes process-wide (spies, settings for tests) it puts back in its afterAll.
      { extends: true, test: { name: 'main', include: ['test/**/*.test.ts'], exclude: [...CLUSTER_TESTS, ...BROWSER_TESTS], isolate: false, maxWorkers: 3, sequence: { groupOrder: 0 } } },
      // isolate: false as in main, and so each worker keeps its Chromium from one file to the next.
      { extends: true, test: { name: 'browser', include: BROWSER_TESTS, testTimeout: 90_000, isolate: false, sequence: { groupOrder: 1 } } },
      { extends: true, test: { name: 'cluster', include: CLUSTER_TESTS, maxWorkers: 3, sequence: { groupOrder: 2 } } },
    ],
  },
});
