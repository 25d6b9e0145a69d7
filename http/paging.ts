import type { FastifyReply, FastifyRequest } from 'fastify';
import type { PageParams } from '../storage/paging.ts';
import { isId } from './params.ts';

const id = (v: string | undefined) => (isId(v) ? v : undefined);

// What may not appear as is inside `<…>` of a Link header (RFC 3986 characters and % are kept).
const UNSAFE_IN_LINK = /[^A-Za-z0-9\-._~!$&'()*+,;=:@/?%[\]]/g;
const PAGING_KEYS = new Set(['max_id', 'since_id', 'min_id']);

export interface PagingQuery {
  max_id?: string | undefined;
  since_id?: string | undefined;
  min_id?: string | undefined;
  limit?: number | undefined;
}


/** Query → storage paging; ids that are not ids are ignored, as Rails' `where(id < 'abc')` would find nothing useful. */
export function pageParams(q: PagingQuery, defaultLimit: number): PageParams {
  return { maxId: id(q.max_id), sinceId: id(q.since_id), minId: id(q.min_id), limit: q.limit ?? defaultLimit };
}

/** Mastodon's `Link` header: `next` pages to older entries (max_id), `prev` to newer ones (min_id). */
export function setLinkHeader(request: FastifyRequest, reply: FastifyReply, publicUrl: string, firstId: string | null, lastId: string | null): void {
  if (firstId === null || lastId === null) return;
  // The request's own query, less its paging ids, is kept in both links (built as text: this runs on every page).
  const q = request.url.indexOf('?');
  const path = q === -1 ? request.url : request.url.slice(0, q);
  const kept = q === -1 ? '' : request.url.slice(q + 1).split('&').filter((pair) => pair !== '' && !PAGING_KEYS.has(decodeKey(pair))).join('&');
  const url = (key: 'max_id' | 'min_id', id: string) => `${publicUrl}${path}?${kept ? `${kept}&` : ''}${key}=${id}`.replace(UNSAFE_IN_LINK, encodeURIComponent);
  reply.header('link', `<${url('max_id', lastId)}>; rel="next", <${url('min_id', firstId)}>; rel="prev"`);
}

function decodeKey(pair: string): string {
  const eq = pair.indexOf('=');
  const key = eq === -1 ? pair : pair.slice(0, eq);
  try {
    return decodeURIComponent(key.replace(/\+/g, ' '));
  } catch {
    return key;
  }
}
