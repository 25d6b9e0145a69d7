import fp from 'fastify-plugin';
import formbody from '@fastify/formbody';
import multipart, { type MultipartFile, type MultipartValue } from '@fastify/multipart';
import type Qs from 'qs';
import querystring from 'node:querystring';
import { createRequire } from 'node:module';
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

// qs (with side-channel, object-inspect and get-intrinsic: ~50 modules) is required at the first bracketed query
// string or form, not imported at start: most requests never need it. `require` keeps the parser synchronous.
const require = createRequire(import.meta.url);
let qs: typeof Qs | undefined;

/**
 * `limit=20&max_id=…`: no escapes, brackets or repeated keys, each value the text after its key's first `=` (or ''),
 * as both parsers below read it; null for anything else. What nearly every GET sends, so it is read here first.
 */
function parsePlain(input: string): Record<string, string> | null {
  if (input.length > 2000 || /[%+[\]]/.test(input)) return null;
  const out: Record<string, string> = {};
  let start = 0;
  while (start <= input.length) {
    let end = input.indexOf('&', start);
    if (end === -1) end = input.length;
    if (end > start) {
      const eq = input.indexOf('=', start);
      const key = eq === -1 || eq > end ? input.slice(start, end) : input.slice(start, eq);
      // An empty key, a repeated one (an array) or one an object literal would not take as its own: the full parsers.
      if (key === '' || key === '__proto__' || Object.hasOwn(out, key)) return null;
      out[key] = eq === -1 || eq > end ? '' : input.slice(eq + 1, end);
    }
    start = end + 1;
  }
  return out;
}

export function parseNested(input: string): Record<string, unknown> {
  if (input === '') return {};
  const plain = parsePlain(input);
  if (plain) return plain;
  // Most query strings are flat (`limit=20`): Node's own parser is several times faster and agrees with qs there.
  if (!/\[|%5b/i.test(input)) {
    const flat = querystring.parse(input, '&', '=', { maxKeys: QS_OPTIONS.parameterLimit });
    if (Object.values(flat).every((v) => typeof v === 'string')) return { ...flat };
  }
  qs ??= require('qs') as typeof Qs;
  return qs.parse(input, QS_OPTIONS) as Record<string, unknown>;
}

/** A request without files: one object for all of them (nothing adds to it: only multipart bodies have uploads). */
const NO_UPLOADS: Record<string, Upload> = Object.freeze({});

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
    // Apps POST actions like follow with no body at all; that is an empty set of parameters, as in Rails.
    if (request.body === undefined || request.body === null) {
      request.uploads = NO_UPLOADS;
      if (request.method !== 'GET' && request.method !== 'HEAD') request.body = {};
      return done();
    }
    if (!request.isMultipart()) {
      request.uploads = NO_UPLOADS;
      return done();
    }
    request.uploads = {};
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
