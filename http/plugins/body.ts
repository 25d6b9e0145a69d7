import fp from 'fastify-plugin';
import formbody from '@fastify/formbody';
import multipart, { type MultipartFile, type MultipartValue } from '@fastify/multipart';
import qs from 'qs';
import querystring from 'node:querystring';
import type { FastifyInstance } from 'fastify';

/** A file from a multipart body, read into memory (bounded by the multipart size limit). */
export interface Upload {
  filename: string;
  mimetype: string;
  data: Buffer;
}

declare module 'fastify' {
  interface FastifyRequest {
    uploads: Record<string, Upload>;
  }
}

// Mastodon apps send `fields_attributes[0][name]=…` and `id[]=…`; qs nests them as Rails does.
const QS_OPTIONS = { depth: 5, arrayLimit: 100, parameterLimit: 1000 } as const;

export function parseNested(input: string): Record<string, unknown> {
  // Most query strings are flat (`limit=20`): Node's own parser is several times faster and agrees with qs there.
  if (!/\[|%5b/i.test(input)) {
    const flat = querystring.parse(input, '&', '=', { maxKeys: QS_OPTIONS.parameterLimit });
    if (Object.values(flat).every((v) => typeof v === 'string')) return { ...flat };
  }
  return qs.parse(input, QS_OPTIONS) as Record<string, unknown>;
}

/** JSON, form and multipart bodies all reach the route schema as one nested object; files go to request.uploads. */
async function bodyPlugin(app: FastifyInstance, opts: { maxFileBytes: number }) {
  app.decorateRequest('uploads', null as unknown as Record<string, Upload>);
  await app.register(formbody, { parser: parseNested, bodyLimit: 1024 * 1024 });
  await app.register(multipart, {
    attachFieldsToBody: true,
    limits: { fileSize: opts.maxFileBytes, files: 6, fields: 200, fieldSize: 100_000, parts: 220 },
    async onFile(part: MultipartFile) {
      // Reading here enforces the size limit (a 413) before the route runs.
      (part as unknown as { value: Buffer }).value = await part.toBuffer();
    },
  });

  app.addHook('preValidation', (request, _reply, done) => {
    request.uploads = {};
    // Apps POST actions like follow with no body at all; that is an empty set of parameters, as in Rails.
    if (request.body === undefined || request.body === null) {
      if (request.method !== 'GET' && request.method !== 'HEAD') request.body = {};
      return done();
    }
    if (!request.isMultipart()) return done();
    const parts = request.body as Record<string, MultipartValue | MultipartFile | (MultipartValue | MultipartFile)[]> | undefined;
    const pairs = new URLSearchParams();
    for (const entry of Object.values(parts ?? {})) {
      for (const part of Array.isArray(entry) ? entry : [entry]) {
        if (part.type === 'file') {
          const data = (part as unknown as { value: Buffer }).value;
          // An empty file input (no file chosen: browsers send filename="", some clients no filename) is no upload at all, as in Rails.
          if (!part.filename && data.length === 0) continue;
          request.uploads[part.fieldname] = { filename: part.filename, mimetype: part.mimetype, data };
        } else {
          pairs.append(part.fieldname, String(part.value));
        }
      }
    }
    request.body = parseNested(pairs.toString());
    done();
  });
}

export default fp(bodyPlugin, { name: 'body' });
