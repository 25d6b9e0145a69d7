import type { AppContext } from '../context.ts';
import { guardedGet, LinkFetchError, PrivateAddressError } from './guarded-fetch.ts';
import { domainPolicy } from './domain-policy.ts';

/**
 * Remote interaction: a visitor from another server, on one of our public pages, gives their handle (or their server)
 * and is sent to their own server to follow, reply, boost or favourite there. Their server says where through
 * WebFinger: an FEP-3b86 intent link for the action (`https://w3id.org/fep/3b86/Follow` with `{object}`…) when it
 * offers one, else OStatus's subscribe template (`{uri}`), which Mastodon, Pleroma and Misskey publish. A server with
 * neither (GoToSocial 0.19's WebFinger names only the profile page and the actor) is said to offer none, and the page
 * shows the address to search for there instead.
 */

export type Intent = 'follow' | 'reply' | 'reblog' | 'favourite';
export const INTENTS: readonly Intent[] = ['follow', 'reply', 'reblog', 'favourite'];

const SUBSCRIBE = 'http://ostatus.org/schema/1.0/subscribe';
const FEP_3B86 = 'https://w3id.org/fep/3b86/';
/** The intent each action is; a reply is made on the post itself (`Object`: "open it there"), as Mastodon asks. */
const INTENT_REL: Record<Intent, string> = { follow: `${FEP_3B86}Follow`, reblog: `${FEP_3B86}Announce`, favourite: `${FEP_3B86}Like`, reply: `${FEP_3B86}Object` };
const MAX_JRD_BYTES = 64 * 1024;

export class RemoteInteractionError extends Error {}

/** `@user@server`, `user@server`, or a server alone (`server`, `https://server`): the WebFinger resource to ask for. */
export function webFingerResource(input: string): { host: string; resource: string } | null {
  const text = input.trim().replace(/^acct:/i, '').replace(/^@/, '');
  const handle = /^([^@\s/]+)@([^@\s/]+)$/.exec(text);
  const host = handle ? handle[2]! : /^(?:https?:\/\/)?([^@\s/]+)\/?$/i.exec(text)?.[1];
  if (!host || !URL.canParse(`https://${host}/`)) return null;
  const normalised = new URL(`https://${host}/`).host;
  // A server alone: its instance actor, as Mastodon names it (`server@server`), carries the server's templates.
  return { host: normalised, resource: `acct:${handle ? handle[1] : normalised}@${normalised}` };
}

/**
 * Where to send the visitor: their server's page for this action on `objectUri`. The WebFinger lookup is a GET like
 * every fetch of what others name (public addresses only unless ALLOW_PRIVATE_ADDRESSES, capped, timed out), and only
 * an http(s) address comes out of it.
 */
export async function remoteInteractionUrl(app: AppContext, input: string, objectUri: string, intent: Intent): Promise<string> {
  const target = webFingerResource(input);
  if (!target) throw new RemoteInteractionError('Give your handle (you@your.server) or your server\'s name.');
  if (target.host.toLowerCase() === new URL(app.config.publicUrl).host.toLowerCase()) throw new RemoteInteractionError('That is an account of this server: sign in here instead.');
  if (await domainPolicy(app).refuses(target.host)) throw new RemoteInteractionError('This server does not talk to that one.');
  const url = new URL(`https://${target.host}/.well-known/webfinger`);
  url.searchParams.set('resource', target.resource);
  let links: { rel?: unknown; template?: unknown }[];
  try {
    const fetched = await guardedGet(url, {
      accept: (type) => type === 'application/jrd+json' || type === 'application/json', acceptHeader: 'application/jrd+json, application/json',
      maxBytes: MAX_JRD_BYTES, allowPrivateAddresses: app.config.allowPrivateAddresses, userAgent: `fedi-server/${app.config.softwareVersion} (+${app.config.publicUrl})`,
    });
    const jrd = JSON.parse(fetched.body.toString('utf8')) as { links?: unknown };
    links = Array.isArray(jrd.links) ? jrd.links.filter((l): l is { rel?: unknown; template?: unknown } => typeof l === 'object' && l !== null) : [];
  } catch (err) {
    if (err instanceof PrivateAddressError) throw new RemoteInteractionError(`${target.host} is not a public address.`);
    if (err instanceof LinkFetchError || err instanceof SyntaxError) throw new RemoteInteractionError(`${target.host} did not answer as a fediverse server (${err.message}).`);
    throw new RemoteInteractionError(`${target.host} could not be reached.`);
  }
  const template = (rel: string) => links.find((l) => l.rel === rel && typeof l.template === 'string')?.template as string | undefined;
  const intentTemplate = template(INTENT_REL[intent]);
  const subscribe = template(SUBSCRIBE);
  let expanded: string;
  // Loaded here, the one place it serves, rather than with the pages at start.
  const { Template } = await import('@fedify/uri-template');
  try {
    expanded = intentTemplate
      ? Template.parse(intentTemplate).expand({ object: objectUri, inReplyTo: objectUri })
      : subscribe ? Template.parse(subscribe).expand({ uri: objectUri }) : '';
  } catch {
    expanded = '';
  }
  if (!expanded) throw new RemoteInteractionError(`${target.host} does not offer to act on posts and accounts of other servers.`);
  if (!URL.canParse(expanded) || !/^https?:$/.test(new URL(expanded).protocol)) throw new RemoteInteractionError(`${target.host} gave an address that is not a web page.`);
  return new URL(expanded).href;
}
