import type { Db } from '../storage/db.ts';
import { transaction } from '../storage/db.ts';
import type { RedisClient } from '../storage/redis.ts';
import {
  deleteRule, insertRule, lockRuleOrder, nextRulePriority, RULE_HINT_LIMIT, RULE_TEXT_LIMIT, setRuleOrder, updateRule, type RuleRow,
} from '../storage/rules.ts';
import { publishSettingsChange } from './server-settings.ts';
import { logAction, type Actor } from './action-log.ts';

/**
 * The server's rules (Mastodon's Admin::RulesController and `tootctl`-less CLI): added, edited, moved and removed by
 * operators with manage_rules on /admin/rules or through `npm run cli -- rules …`. They are read where they are shown
 * (the instance entities, /api/v1/instance/rules, the about and sign-up pages, reports); a change tells every process
 * (the same message as a settings change), so cached public pages show it at once. Adding, editing, moving and removing one
 * is in the operators' audit log (`by`: the operator's account, null for the shell's operator), as Mastodon logs them.
 */
export interface RuleDeps {
  db: Db;
  /** Where running servers hear of the change; without it (a CLI run given no Redis) cached pages age out instead. */
  redis?: RedisClient | undefined;
  redisPrefix?: string | undefined;
}

/** A rule refused: empty or too long, or gone (`missing`). */
export class RuleRefused extends Error {
  readonly missing: boolean;
  constructor(message: string, missing = false) {
    super(message);
    this.missing = missing;
  }
}

function checked(text: string, hint: string): { text: string; hint: string } {
  const t = text.trim();
  const h = hint.trim();
  if (t === '' || [...t].length > RULE_TEXT_LIMIT) throw new RuleRefused(`A rule is 1 to ${RULE_TEXT_LIMIT} characters.`);
  if ([...h].length > RULE_HINT_LIMIT) throw new RuleRefused(`A hint is at most ${RULE_HINT_LIMIT} characters.`);
  return { text: t, hint: h };
}

const changed = async (deps: RuleDeps) => {
  if (deps.redis && deps.redisPrefix !== undefined) await publishSettingsChange(deps.redis, deps.redisPrefix);
};

/** Adds a rule, at `priority` or after the last one. */
export async function addRule(deps: RuleDeps, input: { text: string; hint?: string; priority?: number }, by?: Actor): Promise<RuleRow> {
  const { text, hint } = checked(input.text, input.hint ?? '');
  if (input.priority !== undefined && (!Number.isInteger(input.priority) || Math.abs(input.priority) > 999_999)) throw new RuleRefused('A priority is a whole number.');
  const rule = await transaction(deps.db, async (tx) => {
    const row = await insertRule(tx, { text, hint, priority: input.priority ?? (await nextRulePriority(tx)) });
    await logAction(tx, by, 'create', ruleTarget(row.id, row.text));
    return row;
  });
  await changed(deps);
  return rule;
}

/** A rule as the audit log names it: by the start of its text. */
const ruleTarget = (id: string | null, text: string) => ({ type: 'Rule' as const, id, name: text.slice(0, 80) });

export async function changeRule(deps: RuleDeps, id: string, input: { text: string; hint: string }, by?: Actor): Promise<void> {
  const values = checked(input.text, input.hint);
  await transaction(deps.db, async (tx) => {
    if (!(await updateRule(tx, id, values))) throw new RuleRefused('That rule no longer exists.', true);
    await logAction(tx, by, 'update', ruleTarget(id, values.text));
  });
  await changed(deps);
}

/**
 * Moves a rule one place up or down the shown order (renumbering them all, so equal priorities get an order), logged
 * as an 'update' of the moved rule in the same transaction. Moving the first up or the last down changes nothing and
 * logs nothing.
 */
export async function moveRule(deps: RuleDeps, id: string, direction: 'up' | 'down', by?: Actor): Promise<void> {
  await transaction(deps.db, async (tx) => {
    const rules = await lockRuleOrder(tx);
    const ids = rules.map((r) => r.id);
    const at = ids.indexOf(id);
    if (at < 0) throw new RuleRefused('That rule no longer exists.', true);
    const to = direction === 'up' ? at - 1 : at + 1;
    if (to < 0 || to >= ids.length) return;
    [ids[at], ids[to]] = [ids[to]!, ids[at]!];
    await setRuleOrder(tx, ids);
    await logAction(tx, by, 'update', ruleTarget(id, rules[at]!.text));
  });
  await changed(deps);
}

export async function removeRule(deps: RuleDeps, id: string, by?: Actor): Promise<void> {
  await transaction(deps.db, async (tx) => {
    const text = await deleteRule(tx, id);
    if (text === null) throw new RuleRefused('That rule no longer exists.', true);
    await logAction(tx, by, 'destroy', ruleTarget(null, text));
  });
  await changed(deps);
}
