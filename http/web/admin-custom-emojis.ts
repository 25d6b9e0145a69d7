import { Type } from '../schema.ts';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { RouteOptions } from '../route-options.ts';
import { findEmojiById, searchEmojis, type EmojiRow } from '../../storage/custom-emojis.ts';
import {
  addLocalEmoji, CATEGORY_MAX, EMOJI_SIZE_LIMIT, emojiImageUrls, EmojiRefused, LOCAL_SHORTCODE_MAX, removeLocalEmoji, setLocalEmojiEnabled,
  setLocalEmojiInPicker, setRemoteEmojiEnabled, type EmojiDeps,
} from '../../services/custom-emojis.ts';
import { copyRemoteEmoji } from '../../services/emoji-copy.ts';
import { normalizeDomain } from '../../services/domain-policy.ts';
import { isId } from '../../storage/ids.ts';
import { sendFormPage } from './page.ts';
import { operatorGuard } from './admin-access.ts';

const NOTICES: Record<string, string> = {
  added: 'The emoji is added.',
  replaced: 'The emoji\'s image is replaced.',
  listed: 'The emoji is shown in the picker.',
  unlisted: 'The emoji is no longer shown in the picker.',
  enabled: 'The emoji is enabled.',
  disabled: 'The emoji is disabled: posts show its shortcode as text.',
  copied: 'The emoji is copied to this server\'s emoji.',
  removed: 'The emoji is removed.',
};
const PAGE_SIZE = 50;
const ListQuery = Type.Object({
  origin: Type.Optional(Type.Union([Type.Literal('local'), Type.Literal('remote')])),
  by_domain: Type.Optional(Type.String({ maxLength: 255 })),
  shortcode: Type.Optional(Type.String({ maxLength: 200 })),
  page: Type.Optional(Type.Integer({ minimum: 1, maximum: 2000 })),
  notice: Type.Optional(Type.String({ maxLength: 40 })),
});
type Filter = { origin: 'local' | 'remote'; by_domain: string; shortcode: string; page: number };
const IdParams = Type.Object({ id: Type.String({ maxLength: 40 }) });
const ACTIONS = ['enable', 'disable', 'list', 'unlist', 'copy', 'remove'] as const;
type Typed = { shortcode: string; category: string; visible_in_picker: boolean };

/** The list's address for a filter (what the page links to and actions return to). */
function listUrl(f: Partial<Filter>, notice?: string): string {
  const q = new URLSearchParams();
  if (f.origin === 'remote') q.set('origin', 'remote');
  if (f.by_domain) q.set('by_domain', f.by_domain);
  if (f.shortcode) q.set('shortcode', f.shortcode);
  if (f.page && f.page > 1) q.set('page', String(f.page));
  if (notice) q.set('notice', notice);
  const s = q.toString();
  return `/admin/custom_emojis${s ? `?${s}` : ''}`;
}

/**
 * Custom emoji (Mastodon's Administration > Custom emojis), for roles with manage_custom_emojis, over the services
 * `npm run cli -- emoji …` uses: this server's and other servers' emoji, filtered by domain and shortcode; upload one,
 * show it in the picker or not, disable or enable it, copy another server's into this server's set, remove our own.
 */
export default async function adminCustomEmojiRoutes(fastify: FastifyInstance, { ctx }: RouteOptions) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const operator = operatorGuard(ctx);
  const deps: EmojiDeps = { db: ctx.db, fileHost: ctx.fileHost, versions: ctx.versions };
  const imageOf = (e: EmojiRow) => emojiImageUrls({ fileHost: ctx.fileHost, publicUrl: ctx.config.publicUrl }, e).staticUrl;

  const page = async (request: FastifyRequest, reply: FastifyReply, filter: Filter, notice: string, error: string, status = 200, typed?: Typed) => {
    const domain = filter.origin === 'remote' && filter.by_domain ? normalizeDomain(filter.by_domain) ?? filter.by_domain.toLowerCase() : null;
    const rows = await searchEmojis(ctx.db, {
      remote: filter.origin === 'remote', domain, q: filter.shortcode.trim(), limit: PAGE_SIZE + 1, offset: (filter.page - 1) * PAGE_SIZE,
    });
    const emojis = rows.slice(0, PAGE_SIZE).map((e) => ({ ...e, image: imageOf(e) }));
    return sendFormPage(ctx, request, reply, 'admin/custom_emojis', 'Custom emojis', {
      emojis, filter, notice, error, typed: typed ?? { shortcode: '', category: '', visible_in_picker: true },
      limits: { shortcode: LOCAL_SHORTCODE_MAX, category: CATEGORY_MAX, sizeKb: EMOJI_SIZE_LIMIT / 1024 },
      tabs: { local: listUrl({ origin: 'local' }), remote: listUrl({ origin: 'remote' }) },
      back: listUrl(filter),
      previous: filter.page > 1 ? listUrl({ ...filter, page: filter.page - 1 }) : null,
      next: rows.length > PAGE_SIZE ? listUrl({ ...filter, page: filter.page + 1 }) : null,
    }, status);
  };
  const filterOf = (q: { origin?: 'local' | 'remote'; by_domain?: string; shortcode?: string; page?: number }): Filter =>
    ({ origin: q.origin ?? 'local', by_domain: q.origin === 'remote' ? (q.by_domain ?? '').trim() : '', shortcode: q.shortcode ?? '', page: q.page ?? 1 });

  app.get('/admin/custom_emojis', { schema: { querystring: ListQuery } }, async (request, reply) => {
    if (!(await operator(request, reply))) return;
    return page(request, reply, filterOf(request.query), (request.query.notice && NOTICES[request.query.notice]) || '', '');
  });

  // A multipart form: the image comes in request.uploads (http/plugins/body.ts), the names in the body.
  app.post('/admin/custom_emojis', async (request, reply) => {
    const me = await operator(request, reply);
    if (!me) return;
    const body = (request.body ?? {}) as Record<string, unknown>;
    const text = (v: unknown, max: number) => (typeof v === 'string' ? v.slice(0, max) : '');
    const typed: Typed = {
      shortcode: text(body.shortcode, LOCAL_SHORTCODE_MAX * 2).trim(), category: text(body.category, CATEGORY_MAX * 4),
      visible_in_picker: body.visible_in_picker === '1',
    };
    const image = request.uploads?.image;
    try {
      if (!image) throw new EmojiRefused('Choose an image (PNG, GIF or WebP).');
      const { outcome } = await addLocalEmoji(deps, {
        shortcode: typed.shortcode, image: image.data, category: typed.category.trim() === '' ? null : typed.category, visibleInPicker: typed.visible_in_picker, overwrite: false,
      }, me.account.id);
      if (outcome === 'exists') throw new EmojiRefused(`:${typed.shortcode}: already exists.`);
    } catch (err) {
      if (err instanceof EmojiRefused) return page(request, reply, filterOf({}), '', sentence(err.message), 422, typed);
      throw err;
    }
    return reply.redirect(listUrl({}, 'added'), 303);
  });

  for (const action of ACTIONS) {
    app.post(`/admin/custom_emojis/:id/${action}`, {
      schema: { params: IdParams, body: Type.Object({ back: Type.Optional(Type.String({ maxLength: 600 })) }) },
    }, async (request, reply) => {
      const me = await operator(request, reply);
      if (!me) return;
      const by = me.account.id;
      const back = backOf(request.body.back);
      const emoji = isId(request.params.id) ? await findEmojiById(ctx.db, request.params.id) : null;
      const filter = filterOf({});
      if (!emoji) return page(request, reply, filter, '', 'That emoji no longer exists.', 404);
      const local = emoji.domain === null;
      let done: unknown;
      try {
        switch (action) {
          case 'enable':
          case 'disable':
            done = local ? await setLocalEmojiEnabled(deps, emoji.shortcode, action === 'enable', by) : await setRemoteEmojiEnabled(deps, emoji.shortcode, emoji.domain!, action === 'enable', by);
            break;
          case 'list':
          case 'unlist':
            if (!local) throw new EmojiRefused('Only this server\'s emoji are offered in the picker; copy it first.');
            done = await setLocalEmojiInPicker(deps, emoji.shortcode, action === 'list', by);
            break;
          case 'copy': {
            if (local) throw new EmojiRefused(`:${emoji.shortcode}: is already this server's.`);
            const copied = await copyRemoteEmoji({ ...deps, config: ctx.config, redis: ctx.redis }, emoji, { category: emoji.category, visibleInPicker: true, overwrite: false }, by);
            if (copied.outcome === 'exists') throw new EmojiRefused(`This server already has an emoji :${emoji.shortcode}:.`);
            done = copied.row;
            break;
          }
          case 'remove':
            if (!local) throw new EmojiRefused('Only this server\'s emoji can be removed; another server\'s can be disabled.');
            done = await removeLocalEmoji(deps, emoji.shortcode, by);
            break;
        }
      } catch (err) {
        if (err instanceof EmojiRefused) return page(request, reply, filter, '', sentence(err.message), 422);
        throw err;
      }
      if (!done) return page(request, reply, filter, '', 'That emoji no longer exists.', 404);
      const notice = { enable: 'enabled', disable: 'disabled', list: 'listed', unlist: 'unlisted', copy: 'copied', remove: 'removed' }[action];
      return reply.redirect(`${back}${back.includes('?') ? '&' : '?'}notice=${notice}`, 303);
    });
  }
}

/** Where an action returns: the list as it was filtered (only this page's own address, never elsewhere). */
function backOf(back: string | undefined): string {
  if (!back || !/^\/admin\/custom_emojis(\?[A-Za-z0-9_=&%.+-]*)?$/.test(back)) return '/admin/custom_emojis';
  const url = new URL(back, 'http://x');
  url.searchParams.delete('notice');
  return `${url.pathname}${url.search}`;
}

/** The service's messages as a sentence on the page. */
function sentence(message: string): string {
  const s = message.charAt(0).toUpperCase() + message.slice(1);
  return /[.!?]$/.test(s) ? s : `${s}.`;
}
