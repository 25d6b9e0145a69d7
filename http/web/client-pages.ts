import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { AppContext } from '../../context.ts';
import type { RouteOptions } from '../route-options.ts';
import { isId } from '../params.ts';
import { ApiError } from '../../errors.ts';
import { findAccountById, findAccountByUsername, type AccountRow } from '../../storage/accounts.ts';
import { accountStatusIds, publicTimelineIds, threadIds } from '../../storage/statuses.ts';
import { notificationsPage, type NotificationRow } from '../../storage/notifications.ts';
import { relationships } from '../../storage/follows.ts';
import { searchTags } from '../../storage/search.ts';
import { visibleAccount } from '../../services/accounts.ts';
import { profileVisibilities, visibleStatus } from '../../services/visibility.ts';
import { threadReadingOrder } from '../../services/public-pages.ts';
import { refreshForContext } from '../../services/thread-backfill.ts';
import { findAccounts } from '../../services/account-search.ts';
import { isWordQuery, searchStatuses, statusIdOfLink } from '../../services/status-search.ts';
import { tagTrends, trendIds } from '../../services/trends.ts';
import { renderAccount } from '../serializers/account.ts';
import { renderNotifications } from '../serializers/statuses.ts';
import { signedInOrRedirect, translatorOf } from './page.ts';
import { clientFrame, liveOf, pageOf, pagingOf, sendClientPage, sendSlottedPage } from './client-page.ts';
import { entriesHtml, firstPollEnd, timelineEntries } from './entry-fragments.ts';
import { SlottedPage } from './page-slots.ts';
import { renderView } from './views.ts';
import { cachedHomePage } from '../home-timeline.ts';
import { loadForViewer } from '../serializers/statuses.ts';
import { composeView, type ComposeView } from './client-compose.ts';
import { notFoundPage } from './error-pages.ts';
import { accountView, dateView, type AccountView, type DateView } from './page-view.ts';
import { clientEntries, clientEntry, type ClientEntry } from './client-view.ts';
import { clientTagState, profileRelationship } from './client-relationship.ts';
import { keptTranslation } from './client-translation.ts';
import type { SignedIn } from './session.ts';

/** A thread page shows at most this many replies, as the public one. */
const MAX_REPLIES = 300;

/** A notification as a line: who did what, and the post it is about. */
interface NotificationView {
  id: string;
  /** The notification's type: its words come from the page's catalogue (`notification.<type>`), `text` where it has none. */
  type: string;
  account: AccountView;
  text: string;
  created: DateView;
  entry: ClientEntry | null;
}

const NOTIFICATION_TEXT: Record<string, string> = {
  mention: 'mentioned you',
  status: 'posted',
  reblog: 'boosted your post',
  follow: 'followed you',
  follow_request: 'asked to follow you',
  favourite: 'favourited your post',
  poll: 'ran a poll that has ended',
  update: 'edited a post',
  'admin.sign_up': 'signed up',
  'admin.report': 'filed a report',
  quote: 'quoted your post',
  quoted_update: 'edited a post you quoted',
  added_to_collection: 'added you to a collection',
  collection_update: 'changed a collection',
};

/** Notifications as the API renders them for the person, as lines of the page. */
export async function notificationViews(ctx: AppContext, viewerId: string, rows: NotificationRow[]): Promise<NotificationView[]> {
  const rendered = await renderNotifications(ctx, viewerId, rows);
  return rendered.map((raw) => {
    const n = raw as { id: string; type: string; created_at: string; account: Parameters<typeof accountView>[1]; status: Record<string, unknown> | null };
    return {
      id: n.id, type: n.type, account: accountView(ctx.render, n.account), text: NOTIFICATION_TEXT[n.type] ?? n.type, created: dateView(n.created_at),
      entry: n.status ? clientEntry(ctx, viewerId, n.status) : null,
    };
  });
}

/** The relationship a Follow form needs, or null for oneself. */
async function followStates(ctx: AppContext, viewerId: string, ids: string[]) {
  const rels = await relationships(ctx.db, viewerId, ids.filter((id) => id !== viewerId));
  return (id: string) => {
    if (id === viewerId) return null;
    const r = rels.get(id);
    return { following: r?.following ?? false, requested: r?.requested ?? false, followedBy: r?.followed_by ?? false };
  };
}

/** A local or remote account's page for a signed-in person: Follow or Unfollow, and the posts they may see. */
export async function clientProfile(ctx: AppContext, request: FastifyRequest, reply: FastifyReply, me: SignedIn, username: string, domain: string | null): Promise<FastifyReply> {
  const found = await findAccountByUsername(ctx.db, username, domain);
  let row: AccountRow;
  try {
    if (!found) return notFoundPage(request, reply);
    row = await visibleAccount(ctx.db, found.id);
  } catch (err) {
    if (err instanceof ApiError && err.statusCode === 404) return notFoundPage(request, reply);
    throw err;
  }
  const viewerId = me.account.id;
  const p = pagingOf(request);
  const visibilities = await profileVisibilities(ctx.db, viewerId, row.id);
  // Replies to others are left out, as on the public profile's "Posts".
  const page = pageOf(await accountStatusIds(ctx.db, row.id, { visibilities, mentionedViewerId: viewerId, excludeReplies: true }, p), p, `/@${row.domain ? `${row.username}@${row.domain}` : row.username}`);
  const [entries, rel, relationship] = await Promise.all([
    clientEntries(ctx, viewerId, page.ids, 'account'), followStates(ctx, viewerId, [row.id]), profileRelationship(ctx, viewerId, row.id),
  ]);
  const account = accountView(ctx.render, renderAccount(ctx.render, row));
  return sendClientPage(ctx, request, reply, 'client/profile', `${account.displayName} (@${account.handle})`, {
    account, rel: rel(row.id), relationship, entries, older: !!p.maxId, pager: page.pager, remoteUrl: row.domain ? account.url : null,
  });
}

/** A post with its thread, as the API's context gives it to this person, and a form to reply. */
export async function clientThread(ctx: AppContext, request: FastifyRequest, reply: FastifyReply, me: SignedIn, id: string, compose?: ComposeView, status = 200): Promise<FastifyReply> {
  const viewerId = me.account.id;
  let row;
  try {
    row = await visibleStatus(ctx.db, viewerId, id);
  } catch (err) {
    if (err instanceof ApiError && err.statusCode === 404) return notFoundPage(request, reply);
    throw err;
  }
  if (row.reblog_of_id) {
    const [boosted] = await clientEntries(ctx, viewerId, [row.id], null);
    return boosted ? reply.redirect(boosted.threadPath) : notFoundPage(request, reply);
  }
  // A remote thread's missing posts are fetched in the background, as when an app opens it (a reload shows them).
  await refreshForContext(ctx, viewerId, row).catch((err: unknown) => request.log.warn({ err }, 'could not start fetching the thread'));
  const thread = await threadIds(ctx.db, row);
  const window = threadReadingOrder(row.id, thread.descendants, { has: () => true }, MAX_REPLIES * 2);
  const [ancestors, [entry], loaded] = await Promise.all([
    clientEntries(ctx, viewerId, thread.ancestors, 'thread'),
    clientEntries(ctx, viewerId, [row.id], null),
    clientEntries(ctx, viewerId, window, 'thread'),
  ]);
  if (!entry) return notFoundPage(request, reply);
  // A post's page is under its author's (`/@bob/:id` of alice's post leads to `/@alice/:id`).
  const path = decodeURIComponent(request.url.replace(/[?#].*$/, ''));
  if (request.method === 'GET' && path.toLowerCase() !== entry.threadPath.toLowerCase()) return reply.redirect(entry.threadPath, 301);
  // After the Translate form: the translation it made, kept by the service (null once that has expired).
  const translation = request.method === 'GET' && (request.query as { translated?: unknown }).translated !== undefined ? await keptTranslation(ctx, viewerId, row.id) : null;
  const byId = new Map(loaded.map((e) => [e.id, e]));
  const descendants = threadReadingOrder(row.id, thread.descendants, byId, MAX_REPLIES).map((d) => byId.get(d)!);
  const p = entry.post;
  // A reply mentions the one replied to, and keeps a post's narrower audience.
  const mention = p.author.id === viewerId ? '' : `@${p.author.path.slice(2)} `;
  const narrower = p.visibility === 'public' ? undefined : p.visibility;
  const t = await translatorOf(ctx, request);
  return sendClientPage(ctx, request, reply, 'client/thread', t('thread.title', { name: p.author.displayName }), {
    heading: t('thread.title', { name: p.author.displayName }),
    pagePath: entry.threadPath,
    ancestors, entry, descendants, translation,
    compose: compose ?? composeView(ctx, me, {
      in_reply_to_id: p.id, status: mention, visibility: narrower, spoiler_text: p.spoiler, returnTo: entry.threadPath,
      heading: t('compose.reply_to', { name: p.author.displayName }),
    }),
  }, status);
}

/** A tag's posts for a signed-in person (the public tag page's, with their forms). */
export async function clientTagPage(ctx: AppContext, request: FastifyRequest, reply: FastifyReply, me: SignedIn, tag: string): Promise<FastifyReply> {
  const p = pagingOf(request);
  const path = `/tags/${encodeURIComponent(tag)}`;
  const [ids, tagState] = await Promise.all([
    publicTimelineIds(ctx.db, { local: false, remote: false, tag, onlyMedia: false, viewerId: me.account.id }, p),
    clientTagState(ctx, me.account.id, tag),
  ]);
  const page = pageOf(ids, p, path);
  const t = await translatorOf(ctx, request);
  const frame = await clientFrame(ctx, request, `#${tag}`);
  return sendClientPage(ctx, request, reply, 'client/timeline', `#${tag}`, {
    heading: `#${tag}`, tag: tagState, intro: t('tag.intro'), compose: null, live: liveOf(p, { stream: 'hashtag', tag, context: 'public' }),
    entries: await timelineEntries(ctx, me.account.id, page.ids, 'public', frame), pager: page.pager,
    empty: t(p.maxId ? 'profile.no_older' : 'tag.empty'),
  }, 200, frame);
}

/**
 * The pages of a person who is signed in: home, the local and federated timelines, notifications, explore, search
 * and a page to write. Everything on them goes through the services and serializers the API uses.
 */
export default async function clientPageRoutes(app: FastifyInstance, { ctx }: RouteOptions) {
  app.get('/home', async (request, reply) => {
    const me = await signedInOrRedirect(request, reply);
    if (!me) return reply;
    const viewerId = me.account.id;
    const p = pagingOf(request);
    const t = await translatorOf(ctx, request);
    const title = t('home.title');
    const frame = await clientFrame(ctx, request, title);
    const newest = !p.maxId && !p.minId;
    // Besides the feed and what its posts were rendered from, the page shows only these: its layout (language, theme,
    // who is signed in, the instance's name), the Translate offer, and the compose form's defaults.
    const key = [
      viewerId, p.maxId ?? '', p.minId ?? '', p.limit, JSON.stringify(frame.chrome), frame.client.canTranslate?.key ?? '',
      me.user.default_privacy ?? '', me.user.default_language ?? '', ctx.config.instanceLanguages.join(','), ctx.config.maxStatusChars,
    ].join('\u0001');
    const page = await cachedHomePage(ctx, ctx.homePagesHtml, key, viewerId, p, async (ids) => {
      const shown = pageOf(ids, p, '/home');
      const { rows, bundle, versions, notAfter } = await loadForViewer(ctx, viewerId, shown.ids, 'home');
      const html = renderView('client/timeline', {
        heading: title, intro: '', more: true, live: liveOf(p, { stream: 'user', context: 'home' }),
        entries: { count: rows.length, html: entriesHtml(ctx, viewerId, rows, bundle, frame.chrome.lang, frame.client.canTranslate) }, pager: shown.pager,
        compose: newest ? composeView(ctx, me, { returnTo: '/home' }) : null,
        empty: t(p.maxId ? 'profile.no_older' : 'home.empty'),
        ...frame,
      });
      const pollEnd = firstPollEnd(rows, bundle);
      return { body: new SlottedPage(html), versions, notAfter: notAfter === undefined || (pollEnd !== undefined && pollEnd < notAfter) ? pollEnd : notAfter };
    });
    return sendSlottedPage(request, reply, page.body, undefined);
  });

  for (const [path, local, title, intro] of [
    ['/public/local', true, 'explore.local', 'timeline.local_intro'],
    ['/public', false, 'explore.federated', 'timeline.federated_intro'],
  ] as const) {
    app.get(path, async (request, reply) => {
      const me = await signedInOrRedirect(request, reply);
      if (!me) return reply;
      const p = pagingOf(request);
      const page = pageOf(await publicTimelineIds(ctx.db, { local, remote: false, onlyMedia: false, viewerId: me.account.id }, p), p, path);
      const t = await translatorOf(ctx, request);
      const heading = t(title);
      const frame = await clientFrame(ctx, request, heading);
      return sendClientPage(ctx, request, reply, 'client/timeline', heading, {
        heading, intro: t(intro, { domain: ctx.config.localDomain }), compose: null, live: liveOf(p, { stream: local ? 'public:local' : 'public', context: 'public' }),
        entries: await timelineEntries(ctx, me.account.id, page.ids, 'public', frame), pager: page.pager,
        empty: t(p.maxId ? 'profile.no_older' : 'timeline.empty'),
      }, 200, frame);
    });
  }

  app.get('/notifications', async (request, reply) => {
    const me = await signedInOrRedirect(request, reply);
    if (!me) return reply;
    const viewerId = me.account.id;
    const p = pagingOf(request);
    const rows = await notificationsPage(ctx.db, viewerId, {}, p);
    const page = pageOf(rows.map((n) => n.id), p, '/notifications');
    const shown = new Set(page.ids);
    const items = await notificationViews(ctx, viewerId, rows.filter((n) => shown.has(n.id)));
    return sendClientPage(ctx, request, reply, 'client/notifications', (await translatorOf(ctx, request))('notifications.title'), { items, older: !!p.maxId, live: !p.maxId && !p.minId, pager: page.pager });
  });

  app.get('/explore', async (request, reply) => {
    const me = await signedInOrRedirect(request, reply);
    if (!me) return reply;
    const [tags, statusIds] = await Promise.all([tagTrends(ctx, { offset: 0, limit: 10 }), trendIds(ctx, 'status', { offset: 0, limit: 10 })]);
    return sendClientPage(ctx, request, reply, 'client/explore', { key: 'explore.title' }, {
      domain: ctx.config.localDomain,
      tags: tags.map((t) => ({ name: t.name.toLowerCase(), people: t.history.slice(0, 2).reduce((n, h) => n + Number(h.accounts), 0) })),
      entries: await clientEntries(ctx, me.account.id, statusIds, 'public'),
    });
  });

  app.get('/search', async (request, reply) => {
    const me = await signedInOrRedirect(request, reply);
    if (!me) return reply;
    const raw = (request.query as { q?: unknown }).q;
    const q = typeof raw === 'string' ? raw.trim().slice(0, 500) : '';
    const viewerId = me.account.id;
    let accounts: AccountRow[] = [];
    let hashtags: string[] = [];
    let ids: string[] = [];
    let context: 'search' | null = null;
    if (q) {
      // As GET /api/v2/search with `resolve`: handles of other servers are looked up, links of posts fetched.
      accounts = await findAccounts(ctx, viewerId, q, { limit: 10, offset: 0, following: false, resolve: true });
      const tag = /^#?([\p{L}\p{N}_]{1,100})$/u.exec(q)?.[1];
      if (tag) hashtags = (await searchTags(ctx.db, tag, 10, 0)).map((t) => t.name.toLowerCase());
      if (/^https?:\/\//i.test(q)) {
        const id = await statusIdOfLink(ctx.db, ctx.config.publicUrl, q);
        if (id) ids = [id];
        else {
          const viewer = await findAccountById(ctx.db, viewerId);
          // Loaded here, not at start: it brings Fedify (federation/lazy.ts).
          const { resolveRemoteLink } = await import('../../federation/resolve.ts');
          const found = viewer ? await resolveRemoteLink(ctx, q, viewer) : null;
          if (found?.status) ids = [found.status.id];
          if (found?.account) accounts = [found.account];
        }
      } else if (isWordQuery(q)) {
        ids = await searchStatuses(ctx, viewerId, q, { page: { limit: 20 }, offset: 0 });
        context = 'search';
      }
    }
    const rel = await followStates(ctx, viewerId, accounts.map((a) => a.id));
    return sendClientPage(ctx, request, reply, 'client/search', q ? { key: 'search.title_for', params: { q } } : { key: 'search.title' }, {
      q,
      accounts: accounts.map((a) => ({ account: accountView(ctx.render, renderAccount(ctx.render, a)), rel: rel(a.id) })),
      hashtags,
      entries: await clientEntries(ctx, viewerId, ids, context),
    });
  });

  app.get('/publish', async (request, reply) => {
    const me = await signedInOrRedirect(request, reply);
    if (!me) return reply;
    // "Quote" on a post leads here with its id: the form carries it as the API's quoted_status_id.
    const quote = (request.query as { quote?: unknown }).quote;
    const [quoted] = typeof quote === 'string' && isId(quote) ? await clientEntries(ctx, me.account.id, [quote], null) : [];
    if (quote !== undefined && !quoted) return notFoundPage(request, reply);
    const t = await translatorOf(ctx, request);
    const compose = composeView(ctx, me, { returnTo: '/home', quoted_status_id: quoted?.post.id ?? '', quoted: quoted ?? null, heading: t(quoted ? 'status.quote' : 'compose.new_post_heading') });
    const heading = t(quoted ? 'publish.quote_title' : 'publish.title');
    return sendClientPage(ctx, request, reply, 'client/publish', heading, { heading, compose });
  });

  app.get<{ Params: { id: string } }>('/statuses/:id/delete', async (request, reply) => {
    const me = await signedInOrRedirect(request, reply);
    if (!me) return reply;
    const [entry] = isId(request.params.id) ? await clientEntries(ctx, me.account.id, [request.params.id], null) : [];
    if (!entry || !entry.marks.own || entry.boostedBy) return notFoundPage(request, reply);
    return sendClientPage(ctx, request, reply, 'client/delete', { key: 'delete_post.title' }, { entry, returnTo: `/@${me.account.username}` });
  });
}
