import type { AppContext } from '../../context.ts';
import { relationships } from '../../storage/follows.ts';
import { NOTE_LIMIT } from '../../storage/account-notes.ts';
import { featuredTagNames } from '../../storage/featured-tags.ts';
import { tagForViewer, validTagName } from '../../services/tag-follows.ts';
import { renderRelationship } from '../serializers/relationship.ts';
import { dateView, type DateView } from './page-view.ts';
import { MUTE_DURATIONS } from './client-relations.ts';

// What the signed-in pages show of the viewer's relations: with an account (its profile), with a hashtag (its page).

/** What a profile shows of the viewer's relationship with its account: the API's Relationship entity, for the forms. */
export interface RelationshipView extends ReturnType<typeof renderRelationship> {
  muteEnds: DateView | null;
  noteLimit: number;
  durations: [number, string][];
}

/** The viewer's relationship with an account (null on one's own profile), as GET /api/v1/accounts/relationships gives it. */
export async function profileRelationship(ctx: AppContext, viewerId: string, accountId: string): Promise<RelationshipView | null> {
  if (accountId === viewerId) return null;
  const r = renderRelationship(accountId, (await relationships(ctx.db, viewerId, [accountId])).get(accountId));
  return { ...r, muteEnds: r.muting_expires_at ? dateView(r.muting_expires_at) : null, noteLimit: NOTE_LIMIT, durations: MUTE_DURATIONS };
}

/** Whether the viewer follows and features a hashtag (the Tag entity's `following` and `featuring`), for its page's forms; null for a name no post could use. */
export async function clientTagState(ctx: AppContext, viewerId: string, name: string): Promise<{ name: string; following: boolean; featuring: boolean } | null> {
  if (!validTagName(name)) return null;
  const [tag, featured] = await Promise.all([tagForViewer(ctx.db, viewerId, name), featuredTagNames(ctx.db, viewerId, [name])]);
  return { name: tag.name.toLowerCase(), following: tag.following, featuring: featured.has(name.toLowerCase()) };
}
