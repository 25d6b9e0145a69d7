import fp from 'fastify-plugin';
import type { FastifyError, FastifyInstance } from 'fastify';
import { ApiError, ValidationFailed } from '../../errors.ts';
import { unavailableDependency } from '../../storage/dependencies.ts';
import { sendUnavailable } from './availability.ts';
import { sendErrorPage } from '../web/error-pages.ts';

function validationMessage(err: FastifyError): string {
  const first = err.validation?.[0];
  if (!first) return err.message;
  const path = (first.instancePath || '').replace(/^\//, '').replace(/\//g, '.');
  const missing = (first.params as { missingProperty?: string } | undefined)?.missingProperty;
  const field = missing ?? (path || err.validationContext || 'request');
  if (first.keyword === 'mastodonBoolean') return `Validation failed: ${field} must be a boolean`;
  if (missing) return `Validation failed: ${field} is missing`;
  if (first.keyword === 'additionalProperties') {
    const extra = (first.params as { additionalProperty?: string }).additionalProperty;
    return `Validation failed: ${extra} is not allowed`;
  }
  return `Validation failed: ${field} ${first.message ?? 'is invalid'}`;
}

/** Every error leaves as Mastodon's error entity; nothing the client sent can produce a 500. */
async function errorsPlugin(app: FastifyInstance) {
  app.setNotFoundHandler((request, reply) => {
    // A browser asking for a page gets the HTML 404 page (http/web/error-pages.ts); the API keeps its JSON.
    if (sendErrorPage(request, reply, 404)) return;
    reply.code(404).send({ error: 'Record not found' });
  });

  app.setErrorHandler((err: FastifyError, request, reply) => {
    // PostgreSQL or Redis is away (logged once by storage/dependencies.ts, not here per request): try again later.
    if (unavailableDependency(err)) return sendUnavailable(reply);
    // A browser on a page (not the API) gets the HTML error page for the same status; a refused form's CSRF check
    // (FST_CSRF_*) says to reload the form.
    const pageStatus = err instanceof ApiError ? err.statusCode
      : err.validation || err.code === '22021' || err.code === '22P05' ? 422
      : (err.statusCode ?? (request.isMultipart?.() ? 400 : 500));
    if (sendErrorPage(request, reply, pageStatus, err.code)) {
      if (pageStatus >= 500 && !(err instanceof ApiError)) request.log.error({ err }, 'unhandled error');
      return;
    }
    if (err instanceof ApiError) {
      const body: { error: string; error_description?: string } = { error: err.message };
      if (err.description) body.error_description = err.description;
      if (err instanceof ValidationFailed) return reply.code(422).send({ ...body, details: err.details });
      return reply.code(err.statusCode).send(body);
    }
    if (err.validation) {
      return reply.code(422).send({ error: validationMessage(err) });
    }
    const status = err.statusCode ?? 500;
    if (err.code === 'FST_REQ_FILE_TOO_LARGE') {
      return reply.code(413).send({ error: 'File is too large' });
    }
    if (err.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE') {
      return reply.code(415).send({ error: 'Unsupported content type' });
    }
    if (err.code === '22021' || err.code === '22P05') {
      // PostgreSQL refused a character (U+0000, an unpaired surrogate): input that got past http/plugins/text-guard.ts.
      // The client's doing, so a 4xx; logged to be fixed where it got in.
      request.log.warn({ err }, 'text PostgreSQL cannot store reached a query');
      return reply.code(422).send({ error: 'Validation failed: text contains a character that is not allowed' });
    }
    if (err.statusCode === undefined && request.isMultipart?.()) {
      // busboy's own parse errors ("Unexpected end of form", "Malformed part header"…) carry no status.
      return reply.code(400).send({ error: `Malformed multipart body: ${err.message}` });
    }
    if (status >= 400 && status < 500) {
      // Malformed JSON, bad multipart framing, body too large for its parser, rate limits…
      return reply.code(status).send({ error: err.message });
    }
    request.log.error({ err }, 'unhandled error');
    return reply.code(500).send({ error: 'Internal server error' });
  });
}

export default fp(errorsPlugin, { name: 'errors' });
