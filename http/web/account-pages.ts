import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { AppContext } from '../../context.ts';
import { isId } from '../params.ts';
import { findAccountByUsername, movedTarget, type AccountRow } from '../../storage/accounts.ts';
import { accountStatusIds, findStatus, threadIds, type StatusRow } from '../../storage/statuses.ts';
import { pinnedStatusIds } from '../../storage/status-marks.ts';
import { publishedLocalAccount } from '../../services/local-accounts.ts';
import { PROFILE_VISIBILITIES, prefersNoindex, threadReadingOrder } from '../../services/public-pages.ts';
import { renderAccount } from '../serializers/account.ts';
import { renderView } from './views.ts';
import { headTags, publicChrome, viewerOf } from './page-chrome.ts';
import { clientProfile, clientThread } from './client-pages.ts';
import { interactionPath } from './interaction.ts';
import { notFoundPage } from './error-pages.ts';
import { accountView, truncate, type AccountView, type EntryView } from './page-view.ts';
import { renderRss } from './feeds.ts';
import { loadEntries, mergeVersions, servePage, wantsActivityJson, type PageResult, type PublicPageOptions, type Versions } from './page-serving.ts';
import { VERSION } from '../serializers/instance.ts';
import { translator, type Translate } from './i18n.ts';

/** Posts per page, as the API's default. */
const PAGE_SIZE = 20;
/** A thread page shows at most this many replies (the thread below may hold thousands). */
const MAX_REPLIES = 300;
/** Pages kept this long at most; every change to what they show drops them sooner (PublicPageCache). */
const TTL_MS = 10 * 60_000;

type Tab = 'posts' | 'with_replies' | 'media';
// `label` and `heading`: message keys (the template says them in the page's language).
const TABS: { tab: Tab; suffix: string; label: string; heading: string }[] = [
  { tab: 'posts', suffix: '', label: 'profile.posts_heading', heading: 'profile.posts_heading' },
  { tab: 'with_replies', suffix: '/with_replies', label: 'profile.with_replies', heading: 'profile.with_replies' },
  { tab: 'media', suffix: '/media', label: 'profile.media', heading: 'profile.media' },
];

const profilePath = (username: string) => `/@${encodeURIComponent(username)}`;

/** `max_id` when it is an id (anything else is the first page, as the API treats it). */
const maxIdOf = (request: FastifyRequest) => {
  const maxId = (request.query as { max_id?: unknown }).max_id;
  return typeof maxId === 'string' && isId(maxId) ? maxId : undefined;
};

/**
 * A local account a stranger may see, with the versions of it and of its marks (pins) read before it was: the
 * account is found by name, its versions read, then it is read again (a change in between is then newer than the
 * versions say, never older).
 */
async function accountWithVersions(ctx: AppContext, username: string) {
  const first = await publishedLocalAccount(ctx, username);
  if (!first) return null;
  const versions = await ctx.versions.getMany({ a: [first.id], v: [first.id] });
  const account = await publishedLocalAccount(ctx, username);
  if (!account || account.id !== first.id) return null;
  return { account, versions: { s: versions.s, a: versions.a, v: versions.v } };
}

const threadKey = (t: Awaited<ReturnType<typeof threadIds>>) => `${t.ancestors.join()}/${t.descendants.map((d) => d.id).join()}`;

/**
 * A post's thread, with the versions of its posts read before the thread was (last) read: a reply made after that
 * bumps its parent, which is then among them. The thread is read until two reads agree (a few times at most); a
 * thread that keeps changing is shown without versions (not kept).
 */
async function threadWithVersions(ctx: AppContext, status: StatusRow) {
  let thread = await threadIds(ctx.db, status);
  for (let i = 0; i < 3; i++) {
    const used = await ctx.versions.getMany({ s: [...thread.ancestors, status.id, ...replyWindow(status.id, thread)] });
    const again = await threadIds(ctx.db, status);
    if (threadKey(again) === threadKey(thread)) return { thread, versions: { s: used.s, a: used.a, v: used.v } };
    thread = again;
  }
  return { thread, versions: null };
}

/** The replies a page could show, in reading order, before knowing which a stranger may see (twice what is shown). */
const replyWindow = (rootId: string, thread: Awaited<ReturnType<typeof threadIds>>) =>
  threadReadingOrder(rootId, thread.descendants, { has: () => true }, MAX_REPLIES * 2);

/**
 * The replies a stranger may see, in reading order, loaded in rounds of at most MAX_REPLIES posts: a thread of
 * thousands costs what its first page of replies costs, not a load of every reply.
 */
async function visibleReplies(ctx: AppContext, rootId: string, thread: Awaited<ReturnType<typeof threadIds>>, authors: string[]) {
  const loaded = new Map<string, EntryView>();
  const hidden = new Set<string>();
  const versions: Versions[] = [];
  for (let round = 0; round < 4; round++) {
    const order = threadReadingOrder(rootId, thread.descendants, { has: (id) => !hidden.has(id) }, MAX_REPLIES);
    const unknown = order.filter((id) => !loaded.has(id));
    if (unknown.length === 0) return { order, loaded, versions };
    const batch = await loadEntries(ctx, unknown, authors);
    versions.push(batch.versions);
    for (const e of batch.entries) loaded.set(e.id, e);
    for (const id of unknown) if (!loaded.has(id)) hidden.add(id);
  }
  // Still unsettled after four rounds (a thread mostly hidden from strangers): what is known to be visible.
  return { order: threadReadingOrder(rootId, thread.descendants, loaded, MAX_REPLIES), loaded, versions };
}

function profileHead(ctx: AppContext, t: Translate, row: AccountRow, a: AccountView, canonical: string | undefined) {
  const title = `${a.displayName} (@${a.handle})`;
  const description = truncate(a.noteText || t('profile.public_posts_from', { handle: a.handle }), 200);
  return headTags({
    description,
    canonical,
    noindex: prefersNoindex(row),
    alternates: [
      { type: 'application/activity+json', href: a.uri },
      { type: 'application/rss+xml', href: `${ctx.config.publicUrl}${profilePath(a.username)}.rss`, title: t('profile.tabs_label', { name: title }) },
    ],
    og: [
      ['og:type', 'profile'], ['og:site_name', ctx.config.instanceTitle], ['og:title', title], ['og:description', description],
      ['og:url', a.url], ['og:image', a.avatar], ['og:image:alt', a.avatarDescription || t('profile.avatar_of', { name: a.displayName })], ['profile:username', a.handle],
    ],
    twitter: [['twitter:card', 'summary'], ['twitter:title', title], ['twitter:description', description], ['twitter:image', a.avatar]],
  });
}

function postHead(ctx: AppContext, t: Translate, row: AccountRow, e: EntryView) {
  const p = e.post;
  const a = p.author;
  const title = `${a.displayName} (@${a.handle})`;
  const attachments = p.media.length > 0 ? ` [${t('quote.attachments', { count: p.media.length })}]` : '';
  const description = p.spoiler ? t('status.content_warning', { text: p.spoiler }) : truncate(p.text, 300) + attachments;
  // A picture is shown in previews only when it is neither sensitive nor behind a warning.
  const image = !p.sensitive && !p.spoiler ? p.media.find((m) => m.kind === 'image') : undefined;
  return headTags({
    description,
    canonical: p.url,
    // Unlisted posts are kept out of discovery here as elsewhere.
    noindex: prefersNoindex(row) || p.visibility !== 'public',
    alternates: [
      { type: 'application/activity+json', href: p.uri },
      { type: 'application/json+oembed', href: `${ctx.config.publicUrl}/api/oembed?format=json&url=${encodeURIComponent(p.url)}` },
    ],
    og: [
      ['og:type', 'article'], ['og:site_name', ctx.config.instanceTitle], ['og:title', title], ['og:description', description], ['og:url', p.url],
      ['og:image', image ? (image.preview ?? image.url) : a.avatar], ['og:image:alt', image ? (image.described ? image.alt : t('media.image_undescribed')) : (a.avatarDescription || t('profile.avatar_of', { name: a.displayName }))],
      ['article:published_time', p.created.iso], ...(p.edited ? [['article:modified_time', p.edited.iso] as [string, string]] : []),
    ],
    twitter: [
      ['twitter:card', image ? 'summary_large_image' : 'summary'], ['twitter:title', title], ['twitter:description', description],
      ['twitter:image', image ? (image.preview ?? image.url) : a.avatar],
    ],
  });
}

/** A remote account's `/@user@domain`: its own page on its server when it is known here and not suspended. */
async function remoteProfile(ctx: AppContext, request: FastifyRequest, reply: FastifyReply, username: string, domain: string) {
  const account = await findAccountByUsername(ctx.db, username, domain);
  const target = account && !account.suspended_at ? (wantsActivityJson(request) ? account.uri : (account.url ?? account.uri)) : null;
  if (!target || !/^https?:\/\//i.test(target)) return notFoundPage(request, reply);
  return reply.redirect(target);
}

export default async function accountPageRoutes(app: FastifyInstance, opts: PublicPageOptions) {
  const { ctx } = opts;

  /** A profile's tab (or its RSS feed): the account's header, its pins (first page of posts), a page of posts. */
  async function profile(request: FastifyRequest, reply: FastifyReply, username: string, tab: Tab, rss: boolean) {
    const maxId = rss ? undefined : maxIdOf(request);
    const path = `${profilePath(username)}${TABS.find((t) => t.tab === tab)!.suffix}${rss ? '.rss' : ''}`;
    return servePage(opts, request, reply, `${path}?${maxId ?? ''}`, null, async (viewer, locale): Promise<PageResult | FastifyReply> => {
      const found = await accountWithVersions(ctx, username);
      if (!found) return notFoundPage(request, reply);
      const { account: row } = found;
      const account = accountView(ctx.render, renderAccount(ctx.render, row));
      // A moved account's page says where it went, as Mastodon's moved-account notice does.
      const movedTo = rss ? null : movedTarget(row);
      if (movedTo) {
        const to = accountView(ctx.render, renderAccount(ctx.render, movedTo));
        const t = translator(locale);
        const body = renderView('message', {
          chrome: publicChrome(ctx.config, viewer, t('moved.title', { name: `${account.displayName} (@${account.handle})` }), '', locale),
          heading: t('moved.title', { name: account.displayName }), kind: 'notice',
          message: t('moved.message', { handle: account.handle, target: to.handle }),
          link: { href: to.url, text: t('moved.link', { handle: to.handle }) },
        });
        return { body, cache: { used: found.versions, ttlMs: TTL_MS } };
      }
      // Replies to others are left out of "Posts" (one's own threads stay), as on Mastodon; RSS has no boosts either.
      const ids = await accountStatusIds(ctx.db, row.id, {
        visibilities: PROFILE_VISIBILITIES, excludeReplies: tab === 'posts', onlyMedia: tab === 'media', excludeReblogs: rss,
      }, { maxId, limit: PAGE_SIZE + 1 });
      const pageIds = ids.slice(0, PAGE_SIZE);
      const pinnedIds = tab === 'posts' && !rss && !maxId ? await pinnedStatusIds(ctx.db, row.id, { visibilities: PROFILE_VISIBILITIES, limit: 10 }) : [];
      const loaded = await loadEntries(ctx, [...pinnedIds, ...pageIds], [row.id]);
      const pinned = new Set(pinnedIds);
      const shownPins = loaded.entries.filter((e) => pinned.has(e.id));
      const entries = loaded.entries.filter((e) => !pinned.has(e.id) || pageIds.includes(e.id));
      const cache = { used: mergeVersions(found.versions, loaded.versions), ttlMs: TTL_MS };
      const base = `${ctx.config.publicUrl}${profilePath(row.username)}`;
      if (rss) {
        const body = renderRss({
          title: account.displayName, description: `Public posts from @${account.handle}`, link: account.url, self: `${base}.rss`,
          image: { url: account.avatar, title: account.displayName, link: account.url }, generator: VERSION,
        }, entries);
        return { contentType: 'application/rss+xml; charset=utf-8', body, cache };
      }
      const here = `${profilePath(row.username)}${TABS.find((t) => t.tab === tab)!.suffix}`;
      const last = pageIds.at(-1);
      const body = renderView('public/profile', {
        chrome: publicChrome(ctx.config, viewer, `${account.displayName} (@${account.handle})`,
          profileHead(ctx, translator(locale), row, account, tab === 'posts' && !maxId ? account.url : undefined), locale),
        account,
        rssUrl: `${base}.rss`,
        followPath: interactionPath(profilePath(row.username)),
        tabs: TABS.map((x) => ({ label: x.label, href: `${profilePath(row.username)}${x.suffix}`, current: x.tab === tab })),
        listHeading: TABS.find((t) => t.tab === tab)!.heading,
        pinned: shownPins,
        entries,
        olderPage: !!maxId,
        pager: { older: ids.length > PAGE_SIZE && last ? `${here}?max_id=${last}` : null, newest: maxId ? here : null },
      });
      return { body, cache };
    });
  }

  app.get<{ Params: { username: string } }>('/@:username', async (request, reply) => {
    let username = request.params.username;
    const rss = username.endsWith('.rss');
    if (rss) username = username.slice(0, -4);
    const at = username.indexOf('@');
    let domain: string | null = null;
    if (at !== -1) {
      domain = username.slice(at + 1).toLowerCase();
      username = username.slice(0, at);
      if (domain === ctx.config.localDomain.toLowerCase()) domain = null;
    }
    // A signed-in person gets the account's page with Follow, for another server's accounts too.
    const me = rss || wantsActivityJson(request) ? null : await viewerOf(request);
    if (me) return clientProfile(ctx, request, reply, me, username, domain);
    if (domain !== null) return remoteProfile(ctx, request, reply, username, domain);
    // ActivityPub clients are sent to the actor (Fedify answers it), as Mastodon answers them the actor itself.
    if (!rss && wantsActivityJson(request)) return reply.header('vary', 'Accept').redirect(`${ctx.config.publicUrl}/users/${encodeURIComponent(username)}`);
    return profile(request, reply, username, 'posts', rss);
  });

  for (const tab of ['with_replies', 'media'] as const) {
    app.get<{ Params: { username: string } }>(`/@:username/${tab}`, async (request, reply) => profile(request, reply, request.params.username, tab, false));
  }

  /** A post with its thread: the ancestors and the replies a stranger may see. */
  app.get<{ Params: { username: string; id: string } }>('/@:username/:id', async (request, reply) => {
    const { username, id } = request.params;
    if (!isId(id)) return notFoundPage(request, reply);
    if (wantsActivityJson(request)) return reply.header('vary', 'Accept').redirect(`${ctx.config.publicUrl}/users/${encodeURIComponent(username)}/statuses/${id}`);
    // A signed-in person reads the thread as the API gives it to them (another server's posts too), with a reply form.
    const me = await viewerOf(request);
    if (me) return clientThread(ctx, request, reply, me, id);
    return servePage(opts, request, reply, `${profilePath(username)}/${id}`, null, async (viewer, locale): Promise<PageResult | FastifyReply> => {
      const found = await accountWithVersions(ctx, username);
      const status = found ? await findStatus(ctx.db, id) : null;
      if (!found || !status || status.account_id !== found.account.id) return notFoundPage(request, reply);
      const { account: row } = found;
      if (status.reblog_of_id) {
        // A boost's page is the boosted post's, as on Mastodon.
        const [original] = (await loadEntries(ctx, [status.id])).entries;
        return original ? reply.redirect(original.post.url) : notFoundPage(request, reply);
      }
      const { thread, versions } = await threadWithVersions(ctx, status);
      const loaded = await loadEntries(ctx, [...thread.ancestors, status.id], [row.id]);
      const byId = new Map(loaded.entries.map((e) => [e.id, e]));
      const entry = byId.get(status.id);
      if (!entry) return notFoundPage(request, reply);
      const replies = await visibleReplies(ctx, status.id, thread, [row.id]);
      const descendants = replies.order.map((d) => replies.loaded.get(d)!);
      const p = entry.post;
      const t = translator(locale);
      const body = renderView('public/post', {
        chrome: publicChrome(ctx.config, viewer, `${p.author.displayName}: "${truncate(p.spoiler ? t('status.content_warning', { text: p.spoiler }) : p.text || t('profile.post'), 60)}"`, postHead(ctx, t, row, entry), locale),
        ancestors: thread.ancestors.map((a) => byId.get(a)).filter((e) => e !== undefined),
        entry,
        descendants,
      });
      const used = [versions, loaded.versions, ...replies.versions].reduce((all, v) => (all && v ? mergeVersions(all, v) : null), found.versions as Versions | null);
      return { body, ...(used ? { cache: { used, ttlMs: TTL_MS } } : {}) };
    });
  });
}
