import type { AsyncRefresh } from '../../storage/async-refreshes.ts';

/** Seconds a client is asked to wait before polling a refresh again (Mastodon's `retry_seconds`). */
export const ASYNC_REFRESH_RETRY_SECONDS = 3;

/** Mastodon's AsyncRefresh entity, under `async_refresh` as `GET /api/v1_alpha/async_refreshes/:id` answers it. */
export function renderAsyncRefresh(refresh: AsyncRefresh) {
  return { async_refresh: { id: refresh.id, status: refresh.status, result_count: refresh.resultCount } };
}

/** The `Mastodon-Async-Refresh` header of a response whose results a running refresh may add to. */
export function asyncRefreshHeader(refresh: AsyncRefresh): string {
  const count = refresh.resultCount === null ? '' : `, result_count=${refresh.resultCount}`;
  return `id="${refresh.id}", retry=${ASYNC_REFRESH_RETRY_SECONDS}${count}`;
}
