import { Type } from '../schema.ts';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { RouteOptions } from '../route-options.ts';
import type { AppContext } from '../../context.ts';
import type { AccountRow } from '../../storage/accounts.ts';
import { findAccountById } from '../../storage/accounts.ts';
import { findStatus, type StatusRow } from '../../storage/statuses.ts';
import { relationships } from '../../storage/follows.ts';
import { isId } from '../../storage/ids.ts';
import { publishedLocalAccount } from '../../services/local-accounts.ts';
import { canSee } from '../../services/visibility.ts';
import { findAccounts } from '../../services/account-search.ts';
import { INTENTS, RemoteInteractionError, remoteInteractionUrl, type Intent } from '../../services/remote-interaction.ts';
import { accountUri, statusUri } from '../../services/uris.ts';
import { sendFormPage, sendMessagePage, translatorOf } from './page.ts';

/**
 * Remote interaction, both ways (as Mastodon's /authorize_interaction and its "interact from your server" dialog):
 * - a visitor from another server, on our public pages, gives their handle at /remote_interaction (or
 *   /users/:name/remote_follow) and is sent to their server's page for the action (services/remote-interaction.ts);
 * - someone of this server, sent here by another server (our WebFinger's subscribe template and FEP-3b86 intents),
 *   sees the account or post at /authorize_interaction?uri=… and follows, boosts or favourites it here.
 */

/**
 * The pages' policy without `form-action`: the visitor's form redirects its submission to their own server, which
 * `form-action 'self'` would block in browsers that apply it to redirects (the OAuth authorize page does the same).
 */
const REMOTE_CSP = "default-src 'none'; style-src 'self'; img-src 'self' data: https: http:; frame-ancestors 'none'; base-uri 'none'";

/** Each submission makes a WebFinger GET to the server named: per address, as many as sign-in attempts allow. */
const LOOKUP_LIMIT = { max: 25, timeWindow: 5 * 60 * 1000, keyGenerator: (request: FastifyRequest) => `remote-interaction:${request.ip}` };

const Uri = Type.String({ minLength: 1, maxLength: 2000 });
const IntentField = Type.Optional(Type.Union(INTENTS.map((i) => Type.Literal(i))));
// The page's heading for each intent (a message key: `{what}` is the account or post).
const ACTIONS = { follow: 'remote.follow', reply: 'remote.reply', reblog: 'remote.reblog', favourite: 'remote.favourite' } as const;

type Resolved = { account: AccountRow; status?: undefined } | { status: StatusRow; account: AccountRow };

/** One of ours, named by its ActivityPub id or its page: an account (`/users/a`, `/@a`) or a post (`…/statuses/1`, `/@a/1`). */
async function ownObject(ctx: AppContext, uri: string): Promise<Resolved | null> {
  if (!URL.canParse(uri)) return null;
  const url = new URL(uri);
  if (url.origin !== new URL(ctx.config.publicUrl).origin) return null;
  const m = /^\/(?:users\/([A-Za-z0-9_]+)(?:\/statuses\/(\d+))?|@([A-Za-z0-9_]+)(?:\/(\d+))?)\/?$/.exec(url.pathname);
  if (!m) return null;
  const account = await publishedLocalAccount(ctx, (m[1] ?? m[3])!);
  const id = m[2] ?? m[4];
  if (!account) return null;
  if (id === undefined) return { account };
  const status = isId(id) ? await findStatus(ctx.db, id) : null;
  return status && status.account_id === account.id && !status.reblog_of_id ? { status, account } : null;
}

/** What another server sent someone of ours to: ours, or another server's account or post (fetched, signed as them). */
async function resolveForViewer(ctx: AppContext, viewer: AccountRow, input: string): Promise<Resolved | null> {
  const uri = input.trim();
  const own = await ownObject(ctx, uri);
  if (own) return own;
  if (/^https?:\/\//i.test(uri)) {
    const { resolveRemoteLink } = await import('../../federation/resolve.ts');
    const found = await resolveRemoteLink(ctx, uri, viewer).catch(() => null);
    if (found?.status) {
      const account = await findAccountById(ctx.db, found.status.account_id);
      return account ? { status: found.status, account } : null;
    }
    return found?.account ? { account: found.account } : null;
  }
  const handle = uri.replace(/^acct:/i, '').replace(/^@/, '');
  if (!/^[^@\s]+@[^@\s]+$/.test(handle)) return null;
  const [account] = await findAccounts(ctx, viewer.id, handle, { limit: 1, offset: 0, following: false, resolve: true });
  return account ? { account } : null;
}

const handleOf = (ctx: AppContext, a: AccountRow) => `${a.username}@${a.domain ?? ctx.config.localDomain}`;

export default async function remoteInteractionRoutes(fastify: FastifyInstance, { ctx }: RouteOptions) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();

  /** The public object a visitor acts on: ours, and public or unlisted (nothing else is anyone's to ask about). */
  async function visitorTarget(uri: string): Promise<{ resolved: Resolved; uri: string } | null> {
    const own = await ownObject(ctx, uri);
    if (!own) return null;
    if (own.status && !(await canSee(ctx.db, null, own.status))) return null;
    return { resolved: own, uri: own.status ? statusUri(ctx.render, own.status, own.account.username) : accountUri(ctx.render, own.account) };
  }

  const visitorPage = async (request: FastifyRequest, reply: FastifyReply, target: { resolved: Resolved; uri: string }, intent: Intent, acct: string, error: string | null) => {
    reply.header('content-security-policy', REMOTE_CSP);
    const { account, status } = target.resolved;
    const t = await translatorOf(ctx, request);
    const heading = t(ACTIONS[intent], { what: status ? t('remote.this_post', { handle: handleOf(ctx, account) }) : `@${handleOf(ctx, account)}` });
    return sendFormPage(ctx, request, reply, 'interaction/remote', heading, {
      uri: target.uri, intent, heading, acct, error,
      excerpt: status ? status.text ?? '' : '',
    }, error ? 422 : 200);
  };

  const notFound = (request: FastifyRequest, reply: FastifyReply) =>
    sendMessagePage(ctx, request, reply, { key: 'export.not_found_title' }, { key: 'remote.nothing' }, { status: 404, kind: 'error' });

  app.get('/remote_interaction', { schema: { querystring: Type.Object({ uri: Uri, intent: IntentField }) } }, async (request, reply) => {
    const target = await visitorTarget(request.query.uri);
    if (!target) return notFound(request, reply);
    const intent = request.query.intent ?? (target.resolved.status ? 'favourite' : 'follow');
    return visitorPage(request, reply, target, intent, '', null);
  });

  app.get('/users/:username/remote_follow', { schema: { params: Type.Object({ username: Type.String({ maxLength: 100 }) }) } }, async (request, reply) => {
    const account = await publishedLocalAccount(ctx, request.params.username);
    if (!account) return notFound(request, reply);
    return reply.redirect(`/remote_interaction?${new URLSearchParams({ uri: accountUri(ctx.render, account), intent: 'follow' })}`, 303);
  });

  app.post('/remote_interaction', {
    schema: { body: Type.Object({ uri: Uri, intent: IntentField, acct: Type.String({ maxLength: 300 }) }) },
    config: { rateLimit: LOOKUP_LIMIT },
  }, async (request, reply) => {
    const target = await visitorTarget(request.body.uri);
    if (!target) return notFound(request, reply);
    const intent = request.body.intent ?? 'follow';
    try {
      const url = await remoteInteractionUrl(ctx, request.body.acct, target.uri, intent);
      return reply.header('content-security-policy', REMOTE_CSP).redirect(url, 303);
    } catch (err) {
      if (!(err instanceof RemoteInteractionError)) throw err;
      return visitorPage(request, reply, target, intent, request.body.acct, err.message);
    }
  });

  // Someone of ours, sent by another server: signed in first, then the account or post, with what may be done here.
  const AuthorizeQuery = Type.Object({ uri: Type.Optional(Uri), acct: Type.Optional(Uri), done: Type.Optional(Type.String({ maxLength: 20 })) });
  /** What was done, said on the page the form leads back to (by key: the address carries no text to show). */
  const DONE: Record<string, string> = {
    follow: 'remote.done_follow', requested: 'remote.done_requested', unfollow: 'remote.done_unfollow', reblog: 'remote.done_reblog', favourite: 'remote.done_favourite',
  };
  app.get('/authorize_interaction', { schema: { querystring: AuthorizeQuery } }, async (request, reply) => {
    const me = await request.signedIn();
    if (!me) return reply.redirect(`/auth/sign_in?return_to=${encodeURIComponent(request.url)}`, 303);
    const uri = request.query.uri ?? request.query.acct;
    const resolved = uri ? await resolveForViewer(ctx, me.account, uri) : null;
    if (!resolved || (resolved.status && !(await canSee(ctx.db, me.account.id, resolved.status)))) {
      return sendMessagePage(ctx, request, reply, { key: 'export.not_found_title' }, { key: 'remote.not_found' }, { status: 404, kind: 'error' });
    }
    const done = request.query.done && Object.hasOwn(DONE, request.query.done) ? (await translatorOf(ctx, request))(DONE[request.query.done]!, { handle: handleOf(ctx, resolved.account) }) : null;
    return authorizePage(request, reply, me.account, resolved, done);
  });

  app.post('/authorize_interaction', {
    schema: { body: Type.Object({ uri: Uri, action: Type.Union([Type.Literal('follow'), Type.Literal('unfollow'), Type.Literal('reblog'), Type.Literal('favourite')]) }) },
  }, async (request, reply) => {
    const me = await request.signedIn();
    if (!me) return reply.redirect(`/auth/sign_in?return_to=${encodeURIComponent(`/authorize_interaction?uri=${encodeURIComponent(request.body.uri)}`)}`, 303);
    const resolved = await resolveForViewer(ctx, me.account, request.body.uri);
    if (!resolved || (resolved.status && !(await canSee(ctx.db, me.account.id, resolved.status)))) {
      return sendMessagePage(ctx, request, reply, { key: 'export.not_found_title' }, { key: 'remote.not_found' }, { status: 404, kind: 'error' });
    }
    const { action } = request.body;
    let done: string = action;
    if (action === 'follow' || action === 'unfollow') {
      if (resolved.account.id === me.account.id) return sendMessagePage(ctx, request, reply, { key: 'remote.not_possible' }, { key: 'remote.self' }, { status: 422, kind: 'error' });
      if (action === 'follow') {
        const outcome = await ctx.actors.ask(me.account.id, { type: 'follow', targetId: resolved.account.id, options: {} });
        if (outcome === 'requested') done = 'requested';
      } else {
        await ctx.actors.ask(me.account.id, { type: 'unfollow', targetId: resolved.account.id });
      }
    } else {
      const status = resolved.status;
      if (!status || (action === 'reblog' && status.visibility !== 'public' && status.visibility !== 'unlisted')) {
        return sendMessagePage(ctx, request, reply, { key: 'remote.not_possible' }, { key: 'remote.cannot' }, { status: 422, kind: 'error' });
      }
      if (action === 'reblog') await ctx.actors.ask(me.account.id, { type: 'reblog', status, visibility: 'public' });
      else await ctx.actors.ask(me.account.id, { type: 'favourite', status });
    }
    // Post/Redirect/Get: back to the same page, saying what was done.
    return reply.redirect(`/authorize_interaction?${new URLSearchParams({ uri: request.body.uri, done })}`, 303);
  });

  async function authorizePage(request: FastifyRequest, reply: FastifyReply, me: AccountRow, resolved: Resolved, done: string | null) {
    const { account, status } = resolved;
    const relationship = account.id === me.id ? null : (await relationships(ctx.db, me.id, [account.id])).get(account.id) ?? null;
    return sendFormPage(ctx, request, reply, 'interaction/authorize', status ? { key: 'remote.post_title' } : { key: 'remote.follow_title', params: { handle: handleOf(ctx, account) } }, {
      done,
      uri: status ? (status.uri ?? statusUri(ctx.render, status, account.username)) : (account.uri ?? accountUri(ctx.render, account)),
      account: { handle: handleOf(ctx, account), displayName: account.display_name || account.username, self: account.id === me.id },
      following: relationship?.following ?? false,
      requested: relationship?.requested ?? false,
      status: status ? { contentHtml: status.content ?? '', spoiler: status.spoiler_text ?? '', url: status.url ?? status.uri ?? '', mayBoost: status.visibility === 'public' || status.visibility === 'unlisted' } : null,
    });
  }
}
