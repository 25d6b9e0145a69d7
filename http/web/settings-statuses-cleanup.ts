import { Type } from '../schema.ts';
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { RouteOptions } from '../route-options.ts';
import { cleanupPolicyOf, CleanupPolicyRefused, MIN_STATUS_AGES, setCleanupPolicy } from '../../services/statuses-cleanup.ts';
import type { CleanupPolicy } from '../../storage/statuses-cleanup.ts';
import { sendFormPage, signedInOrRedirect } from './page.ts';

/** The check boxes of the form: what a person keeps, in Mastodon's words (message keys of the label and its hint). */
const KEEPS: [keyof CleanupPolicy, string, string][] = [
  ['keep_pinned', 'cleanup.keep_pinned', 'cleanup.keep_pinned_hint'],
  ['keep_direct', 'cleanup.keep_direct', 'cleanup.keep_direct_hint'],
  ['keep_self_fav', 'cleanup.keep_self_fav', 'cleanup.keep_self_fav_hint'],
  ['keep_self_bookmark', 'cleanup.keep_self_bookmark', 'cleanup.keep_self_bookmark_hint'],
  ['keep_polls', 'cleanup.keep_polls', 'cleanup.keep_polls_hint'],
  ['keep_media', 'cleanup.keep_media', 'cleanup.keep_media_hint'],
];
/** The ages offered, each with the message key of its words ('1 week' is `cleanup.age.1_week`). */
const AGES = MIN_STATUS_AGES.map(([seconds, words]): [number, string] => [seconds, `cleanup.age.${words.replace(' ', '_')}`]);

const flag = () => Type.Optional(Type.String({ maxLength: 10 }));
const count = () => Type.Optional(Type.String({ maxLength: 12 }));

/**
 * Automated post deletion, at Mastodon's address: how old a post must be before it goes, and which to keep. The
 * deleting is done by a repeating job (services/statuses-cleanup.ts).
 */
export default async function statusesCleanupPageRoutes(fastify: FastifyInstance, { ctx }: RouteOptions) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const view = (policy: CleanupPolicy, notice: string, error: string) => ({ policy, ages: AGES, keeps: KEEPS, notice, error });

  app.get('/statuses_cleanup', { schema: { querystring: Type.Object({ notice: Type.Optional(Type.String({ maxLength: 40 })) }) } }, async (request, reply) => {
    const me = await signedInOrRedirect(request, reply);
    return me && sendFormPage(ctx, request, reply, 'settings/statuses_cleanup', { key: 'cleanup.title' },
      view(await cleanupPolicyOf(ctx.db, me.account.id), request.query.notice === 'saved' ? 'notice.saved' : '', ''));
  });

  app.post('/statuses_cleanup', {
    schema: {
      body: Type.Object({
        enabled: flag(), min_status_age: count(), keep_pinned: flag(), keep_direct: flag(), keep_self_fav: flag(),
        keep_self_bookmark: flag(), keep_polls: flag(), keep_media: flag(), min_favs: count(), min_reblogs: count(),
      }),
    },
  }, async (request, reply) => {
    const me = await signedInOrRedirect(request, reply);
    if (!me) return;
    const b = request.body;
    const threshold = (v: string | undefined) => (v === undefined || v.trim() === '' ? null : /^\d+$/.test(v.trim()) ? Number(v.trim()) : NaN);
    const policy: CleanupPolicy = {
      enabled: b.enabled === '1', min_status_age: Number(b.min_status_age ?? ''),
      keep_pinned: b.keep_pinned === '1', keep_direct: b.keep_direct === '1', keep_self_fav: b.keep_self_fav === '1',
      keep_self_bookmark: b.keep_self_bookmark === '1', keep_polls: b.keep_polls === '1', keep_media: b.keep_media === '1',
      min_favs: threshold(b.min_favs), min_reblogs: threshold(b.min_reblogs),
    };
    try {
      await setCleanupPolicy(ctx.db, me.account.id, policy);
    } catch (err) {
      if (!(err instanceof CleanupPolicyRefused)) throw err;
      return sendFormPage(ctx, request, reply, 'settings/statuses_cleanup', { key: 'cleanup.title' }, view(policy, '', err.message), 422);
    }
    return reply.redirect('/statuses_cleanup?notice=saved', 303);
  });
}
