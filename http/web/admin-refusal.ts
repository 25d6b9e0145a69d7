import type { FastifyReply, FastifyRequest } from 'fastify';
import type { AppContext } from '../../context.ts';
import { ApiError } from '../../errors.ts';
import { sendMessagePage } from './page.ts';

/** A service's refusal (an ApiError below 500) as an error page with a way back; anything else is thrown on. */
export function refusedPage(ctx: AppContext, request: FastifyRequest, reply: FastifyReply, err: unknown, back: string) {
  if (err instanceof ApiError && err.statusCode < 500) {
    const message = err.statusCode === 404 ? 'That no longer exists.' : err.message;
    return sendMessagePage(ctx, request, reply, 'Not done', message, { status: err.statusCode, kind: 'error', link: { href: back, text: 'Back' } });
  }
  throw err;
}

/** The 404 page of an id that names nothing. */
export const gone = () => new ApiError(404, 'Record not found');
