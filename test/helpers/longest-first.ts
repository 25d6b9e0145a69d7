import { BaseSequencer, type TestSpecification } from 'vitest/node';

/**
 * The files that take longest in each group, longest first (docs/testing.md). Vitest orders files by their last
 * durations where it has them (its cache of results) and by size where it has not, as on a fresh clone: there the
 * longest files of the browser and cluster groups started late and ran on alone at each group's end (the cluster
 * test's 33 s started 17 s into its group, the public pages' 21 s last of its own). Started first, they overlap the
 * rest. Files not listed keep Vitest's order, after these.
 */
const LONGEST = [
  // main
  'test/http/media-av.test.ts',
  'test/http/fuzz.test.ts',
  'test/e2e/federation.test.ts',
  'test/e2e/outages.test.ts',
  'test/cli/backup.test.ts',
  'test/http/profile.test.ts',
  'test/e2e/worker-kill.test.ts',
  'test/e2e/postgres-hang.test.ts',
  'test/actors/registry.test.ts',
  'test/web/imports.test.ts',
  // browser
  'test/e2e/web-more-pages.test.ts',
  'test/web/public-a11y.test.ts',
  'test/e2e/web-journey.test.ts',
  'test/web/webauthn.test.ts',
  'test/web/admin-console-a11y.test.ts',
  // cluster
  'test/e2e/cluster.test.ts',
  'test/e2e/redis-cluster-hang.test.ts',
  'test/http/streaming-bus-cluster.test.ts',
];

export default class LongestFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const rank = (file: TestSpecification) => {
      const i = LONGEST.findIndex((path) => file.moduleId.endsWith(`/${path}`));
      return i === -1 ? LONGEST.length : i;
    };
    return sorted.map((file, i) => ({ file, i })).sort((a, b) => rank(a.file) - rank(b.file) || a.i - b.i).map((x) => x.file);
  }
}
