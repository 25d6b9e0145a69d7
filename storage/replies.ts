import type { Queryable } from './db.ts';

/** A reply as a replies collection lists it: enough to name it (a local one by its author's name). */
export interface ListedReply {
  id: string;
  uri: string | null;
  username: string;
  domain: string | null;
}

/**
 * One page of the public and unlisted replies to a status, oldest first after `minId` (keyset paging on the replies
 * index): the author's own (`by: 'author'`) or everyone else's (`by: 'others'`, suspended and deleted accounts left
 * out). Deleted replies, followers-only and direct ones are never listed.
 */
export async function repliesPage(
  db: Queryable, statusId: string, authorId: string, o: { by: 'author' | 'others'; minId?: string | undefined; limit: number },
): Promise<ListedReply[]> {
  const { rows } = await db.query<ListedReply>(
    `SELECT s.id, s.uri, a.username, a.domain
       FROM statuses s JOIN accounts a ON a.id = s.account_id
      WHERE s.in_reply_to_id = $1 AND s.id > $2 AND s.deleted_at IS NULL AND s.visibility IN ('public', 'unlisted')
        AND ${o.by === 'author' ? 's.account_id = $3' : 's.account_id <> $3 AND a.suspended_at IS NULL AND a.deleted_at IS NULL'}
      ORDER BY s.id LIMIT $4`,
    [statusId, o.minId ?? '0', authorId, o.limit],
  );
  return rows;
}
