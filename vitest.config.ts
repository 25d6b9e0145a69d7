import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // A test certificate authority and a certificate for https test servers on loopback (test/helpers/tls.ts).
    globalSetup: ['test/helpers/tls.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // Two cores: more parallel files only make each slower and the argon2 hashes contend.
    maxWorkers: 2,
  },
});
