// Emoji reactions from other servers, counted as favourites as Mastodon counts them: Misskey's `Like` carrying a
// reaction (`content` / `_misskey_reaction`, with an Emoji tag for a custom one) is a Like like any other, and
// `EmojiReact` (Pleroma, Akkoma; FEP-c0e0) is taken the same way. Their Undo removes the favourite, whether it
// inlines the reaction (Misskey) or names it by id alone (Pleroma, Akkoma: the reaction is gone from their server by
// then, so it cannot be fetched; its id is kept with the favourite instead).
import { EmojiReact, Like, type Activity } from '@fedify/vocab';
import type { InboxContext } from '@fedify/fedify';
import type { AppContext } from '../context.ts';
import type { AccountRow } from '../storage/accounts.ts';
import { canSee } from '../services/visibility.ts';
import { statusByUri } from './remote-statuses.ts';
import { favouritedByUri, findStatus } from '../storage/statuses.ts';

type Fed = InboxContext<AppContext>;
/** The inbox's check of who sent an activity (a known, unsuspended account of a server not suspended here). */
type Sender = (fed: Fed, activity: Activity) => Promise<AccountRow | null>;

/** A reaction (Like or EmojiReact) to one of the statuses here: the sender's favourite of it, if they may see it. */
export async function onReaction(fed: Fed, reaction: Like | EmojiReact, sender: Sender): Promise<void> {
  const status = await statusByUri(fed, reaction.objectId);
  const remote = status ? await sender(fed, reaction) : null;
  if (!status || !remote || remote.domain === null || status.deleted_at) return;
  if (!(await canSee(fed.data.db, remote.id, status))) return; // a private post is not every guesser's to react to
  // Its id is kept only when it is of its sender's origin (another server's ids are not its to claim).
  const uri = reaction.id && remote.uri && reaction.id.origin === new URL(remote.uri).origin ? reaction.id.href : null;
  await fed.data.actors.ask(remote.id, { type: 'favourite', status, uri });
}

/** An Undo naming by id alone a reaction of `remote` we hold: the favourite goes. True when it named one. */
export async function undoReactionById(fed: Fed, remote: AccountRow, id: URL): Promise<boolean> {
  const statusId = await favouritedByUri(fed.data.db, remote.id, id.href);
  const status = statusId ? await findStatus(fed.data.db, statusId) : null;
  if (!status) return false;
  await fed.data.actors.ask(remote.id, { type: 'unfavourite', status });
  return true;
}

/** What an Undo undoes, when it is a reaction: the favourite goes. True when it was one. */
export async function undoReaction(fed: Fed, remote: AccountRow, object: unknown): Promise<boolean> {
  if (!(object instanceof Like) && !(object instanceof EmojiReact)) return false;
  const status = await statusByUri(fed, object.objectId);
  if (status) await fed.data.actors.ask(remote.id, { type: 'unfavourite', status });
  return true;
}
