import fp from 'fastify-plugin';
import type { FastifyInstance } from 'fastify';
import { findUnstorable, isStorable } from '../../text/storable.ts';

/** The path as the router decodes it; a malformed escape is left to the router (it cannot hold a bad character). */
function decodedPath(url: string): string {
  const path = url.split('?', 1)[0]!;
  try {
    return decodeURIComponent(path);
  } catch {
    return '';
  }
}

const refusal = (where: string) =>
  ({ error: `Validation failed: ${where} contains a character that is not allowed (U+0000 or an unpaired surrogate)` });

/**
 * One rule for all text clients send: what PostgreSQL cannot store (text/storable.ts) never reaches a handler. A
 * path segment holding it names nothing (404); a query or body value holding it is a 422. Checked once here rather
 * than per field, so a new route or field is covered without anyone remembering to.
 */
async function textGuard(app: FastifyInstance) {
  // onRequest, so paths that Fedify answers (federation/mount.ts, registered after this) are covered too.
  app.addHook('onRequest', (request, reply, done) => {
    if (!isStorable(decodedPath(request.url))) return void reply.code(404).send({ error: 'Record not found' });
    const where = findUnstorable(request.query);
    if (where !== null) return void reply.code(422).send(refusal(where || 'query'));
    done();
  });
  // preValidation runs after the body plugin has turned multipart fields into the body (http/plugins/body.ts).
  app.addHook('preValidation', (request, reply, done) => {
    const where = findUnstorable(request.body);
    if (where !== null) return void reply.code(422).send(refusal(where || 'body'));
    const upload = Object.values(request.uploads ?? {}).find((u) => !isStorable(u.filename) || !isStorable(u.mimetype));
    if (upload) return void reply.code(422).send(refusal('file name'));
    done();
  });
}

export default fp(textGuard, { name: 'text-guard', dependencies: ['errors', 'body'] });
