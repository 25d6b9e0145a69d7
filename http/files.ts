import { fileURLToPath } from 'node:url';
import fastifyStatic from '@fastify/static';
import type { FastifyInstance } from 'fastify';
import type { RouteOptions } from './route-options.ts';
import { LocalFileHost, LOCAL_FILES_PREFIX } from '../storage/filehost/local.ts';
import { BackupAwareFileHost } from '../storage/filehost/index.ts';

const publicDir = fileURLToPath(new URL('./public', import.meta.url));

/** Serves the default avatar and header, and, for the local file host, the uploaded files. */
export default async function fileRoutes(app: FastifyInstance, { ctx }: RouteOptions) {
  // Only the files that exist at start-up get routes (wildcard: false), so nothing else is shadowed.
  await app.register(fastifyStatic, { root: publicDir, prefix: '/', wildcard: false, maxAge: '1d' });

  const host = ctx.fileHost instanceof BackupAwareFileHost ? ctx.fileHost.inner : ctx.fileHost;
  if (host instanceof LocalFileHost) {
    // @fastify/static refuses paths outside root; keys are immutable (a new upload gets a new key).
    await app.register(fastifyStatic, {
      root: host.root,
      prefix: LOCAL_FILES_PREFIX,
      decorateReply: false,
      maxAge: '365d',
      immutable: true,
      dotfiles: 'deny',
      index: false,
      list: false,
      // Uploads waiting to be processed still carry their metadata (a photo's location): never served.
      allowedPath: (pathName) => !pathName.replace(/^\/+/, '').startsWith('staging/'),
    });
  }
}
