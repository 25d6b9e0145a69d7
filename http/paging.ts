import type { FastifyReply, FastifyRequest } from 'fastify';
import type { PageParams } from '../storage/paging.ts';
import { isId } from './params.ts';

const id = (v: string | undefined) => (isId(v) ? v : undefined);

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
  const base = new URL(request.url, publicUrl);
  const url = (key: 'max_id' | 'min_id', id: string) => {
    const u = new URL(`${publicUrl}${base.pathname}`);
    for (const [k, v] of base.searchParams) if (!PAGING_KEYS.has(k)) u.searchParams.append(k, v);
    u.searchParams.set(key, id);
    return u.toString();
  };
  reply.header('link', `<${url('max_id', lastId)}>; rel="next", <${url('min_id', firstId)}>; rel="prev"`);
}
