import S3rver from 's3rver';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from './listen.ts';

/**
 * A real S3-compatible server on loopback (s3rver: the S3 REST API over a directory), with one bucket, and the
 * settings that point this server's S3 file host at it.
 */
export async function startS3(bucket = 'media') {
  const directory = await mkdtemp(join(tmpdir(), 'fedi-s3-'));
  const port = await freePort();
  const server = new S3rver({ address: '127.0.0.1', port, silent: true, directory, configureBuckets: [{ name: bucket }] });
  await server.run();
  const endpoint = `http://127.0.0.1:${port}`;
  return {
    endpoint,
    bucket,
    env: {
      FILE_HOST: 's3', S3_BUCKET: bucket, S3_ENDPOINT: endpoint, S3_REGION: 'us-east-1',
      S3_ACCESS_KEY_ID: 'S3RVER', S3_SECRET_ACCESS_KEY: 'S3RVER', S3_PUBLIC_URL: `${endpoint}/${bucket}`, S3_FORCE_PATH_STYLE: 'true',
    },
    async close() {
      await server.close();
      await rm(directory, { recursive: true, force: true });
    },
  };
}
