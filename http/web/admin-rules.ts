import { Type } from '../schema.ts';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { RouteOptions } from '../route-options.ts';
import { listRules, RULE_HINT_LIMIT, RULE_TEXT_LIMIT } from '../../storage/rules.ts';
import { addRule, changeRule, moveRule, removeRule, RuleRefused, type RuleDeps } from '../../services/rules.ts';
import { isId } from '../../storage/ids.ts';
import { sendFormPage } from './page.ts';
import { operatorGuard } from './admin-access.ts';

const NOTICES: Record<string, string> = {
  added: 'The rule is added.',
  changed: 'The rule is saved.',
  moved: 'The rule is moved.',
  removed: 'The rule is removed.',
};
const RuleForm = Type.Object({ text: Type.String({ maxLength: RULE_TEXT_LIMIT * 4 }), hint: Type.Optional(Type.String({ maxLength: RULE_HINT_LIMIT * 4 })) });
const IdParams = Type.Object({ id: Type.String({ maxLength: 40 }) });

/** The server's rules (Mastodon's Administration > Server rules), for roles with manage_rules. */
export default async function adminRulesRoutes(fastify: FastifyInstance, { ctx }: RouteOptions) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const operator = operatorGuard(ctx);
  const deps: RuleDeps = { db: ctx.db, redis: ctx.redis, redisPrefix: ctx.config.redisPrefix };

  const page = async (request: FastifyRequest, reply: FastifyReply, notice: string, error: string, status = 200, typed?: { text: string; hint: string }) =>
    sendFormPage(ctx, request, reply, 'admin/rules', 'Server rules', {
      rules: await listRules(ctx.db), limits: { text: RULE_TEXT_LIMIT, hint: RULE_HINT_LIMIT }, typed: typed ?? { text: '', hint: '' }, notice, error,
    }, status);

  /** The service's refusals shown on the page: 422 for a wrong text, 404 for a rule that is gone. */
  const refused = (request: FastifyRequest, reply: FastifyReply, err: unknown, typed?: { text: string; hint: string }) => {
    if (err instanceof RuleRefused) return page(request, reply, '', err.message, err.missing ? 404 : 422, err.missing ? undefined : typed);
    throw err;
  };

  app.get('/admin/rules', { schema: { querystring: Type.Object({ notice: Type.Optional(Type.String({ maxLength: 40 })) }) } }, async (request, reply) => {
    if (!(await operator(request, reply))) return;
    return page(request, reply, (request.query.notice && NOTICES[request.query.notice]) || '', '');
  });

  app.post('/admin/rules', { schema: { body: RuleForm } }, async (request, reply) => {
    const me = await operator(request, reply);
    if (!me) return;
    const typed = { text: request.body.text, hint: request.body.hint ?? '' };
    try {
      await addRule(deps, typed, me.account.id);
    } catch (err) {
      return refused(request, reply, err, typed);
    }
    return reply.redirect('/admin/rules?notice=added', 303);
  });

  app.post('/admin/rules/:id', { schema: { params: IdParams, body: RuleForm } }, async (request, reply) => {
    const me = await operator(request, reply);
    if (!me) return;
    try {
      if (!isId(request.params.id)) throw new RuleRefused('That rule no longer exists.', true);
      await changeRule(deps, request.params.id, { text: request.body.text, hint: request.body.hint ?? '' }, me.account.id);
    } catch (err) {
      return refused(request, reply, err);
    }
    return reply.redirect('/admin/rules?notice=changed', 303);
  });

  for (const [name, act, notice] of [
    ['up', (id: string, by: string) => moveRule(deps, id, 'up', by), 'moved'],
    ['down', (id: string, by: string) => moveRule(deps, id, 'down', by), 'moved'],
    ['remove', (id: string, by: string) => removeRule(deps, id, by), 'removed'],
  ] as const) {
    app.post(`/admin/rules/:id/${name}`, { schema: { params: IdParams } }, async (request, reply) => {
      const me = await operator(request, reply);
      if (!me) return;
      try {
        if (!isId(request.params.id)) throw new RuleRefused('That rule no longer exists.', true);
        await act(request.params.id, me.account.id);
      } catch (err) {
        return refused(request, reply, err);
      }
      return reply.redirect(`/admin/rules?notice=${notice}`, 303);
    });
  }
}
