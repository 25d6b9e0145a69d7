import { Temporal } from '@js-temporal/polyfill';
import { Application, Endpoints } from '@fedify/vocab';
import type { Context } from '@fedify/fedify';
import type { DocumentLoader } from '@fedify/vocab-runtime';
import type { AppContext } from '../context.ts';
import type { AccountRow } from '../storage/accounts.ts';

/**
 * The instance actor's identifier in our actor URLs (/users/instance.actor). Local usernames are letters, digits and
 * underscores only, so no account can ever take it.
 */
export const INSTANCE_ACTOR = 'instance.actor';

/** Whether a WebFinger handle names the instance actor: `acct:<domain>@<domain>`, as Mastodon has it. */
export function namesInstanceActor(app: AppContext, handle: string): boolean {
  const h = handle.toLowerCase();
  return h === app.config.localDomain.toLowerCase() || h === new URL(app.config.publicUrl).hostname.toLowerCase() || h === INSTANCE_ACTOR;
}

/**
 * The server itself as an ActivityPub actor (an Application, as Mastodon's): it signs the GETs no local user makes
 * (actor and post lookups, key fetches while checking signatures), and servers in authorized-fetch mode fetch its
 * key to check those signatures, so it is always served, signed request or not.
 */
export async function instanceActorOf(fed: Context<AppContext>): Promise<Application> {
  const app = fed.data;
  const { createdAt } = await app.keyRing.instanceKeyPairs();
  const keys = await fed.getActorKeyPairs(INSTANCE_ACTOR);
  return new Application({
    id: fed.getActorUri(INSTANCE_ACTOR),
    // The host without a port: Mastodon and Misskey take only such a name as a username.
    preferredUsername: new URL(app.config.publicUrl).hostname,
    name: app.config.localDomain,
    summary: 'The server itself: it signs requests made on behalf of no one in particular.',
    url: new URL('/', app.config.publicUrl),
    published: Temporal.Instant.fromEpochMilliseconds(createdAt.getTime()),
    inbox: fed.getInboxUri(INSTANCE_ACTOR),
    outbox: fed.getOutboxUri(INSTANCE_ACTOR),
    endpoints: new Endpoints({ sharedInbox: fed.getInboxUri() }),
    publicKey: keys[0]?.cryptographicKey,
    assertionMethods: keys.map((k) => k.multikey),
    manuallyApprovesFollowers: true,
    discoverable: false,
    indexable: false,
  });
}

/**
 * A document loader whose GETs are signed (servers in authorized-fetch mode, GoToSocial's default, answer 401 to
 * unsigned ones): as the local account acting, when one is, otherwise as the instance actor, as Mastodon does.
 */
export function signedLoader(fed: Context<AppContext>, actingAs?: Pick<AccountRow, 'username' | 'domain' | 'suspended_at'> | null): Promise<DocumentLoader> {
  // A suspended account has no published key (others could not check its signature): the server signs instead.
  const identifier = actingAs && actingAs.domain === null && !actingAs.suspended_at ? actingAs.username : INSTANCE_ACTOR;
  return fed.getDocumentLoader({ identifier });
}
