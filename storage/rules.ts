import type { Queryable } from './db.ts';

/** One of the server's rules, as its operator wrote it. */
export interface RuleRow {
  id: string;
  text: string;
  hint: string;
  priority: number;
  created_at: Date;
}

/** Mastodon's limit on a rule's text; the hint is kept to a paragraph. */
export const RULE_TEXT_LIMIT = 300;
export const RULE_HINT_LIMIT = 1000;

/** Every rule, in the order they are shown: by priority, then as they were added (a short list: operators write them). */
export async function listRules(db: Queryable): Promise<RuleRow[]> {
  const { rows } = await db.query<RuleRow>(
    `SELECT id::text, text, hint, priority, created_at FROM instance_rules ORDER BY priority, id LIMIT 1000`,
  );
  return rows;
}

export async function insertRule(db: Queryable, r: { text: string; hint: string; priority: number }): Promise<RuleRow> {
  const { rows } = await db.query<RuleRow>(
    `INSERT INTO instance_rules (text, hint, priority) VALUES ($1, $2, $3) RETURNING id::text, text, hint, priority, created_at`,
    [r.text, r.hint, r.priority],
  );
  return rows[0]!;
}

/** Deletes a rule; its text, or null when there was none with that id. */
export async function deleteRule(db: Queryable, id: string): Promise<string | null> {
  const { rows } = await db.query<{ text: string }>(`DELETE FROM instance_rules WHERE id = $1 RETURNING text`, [id]);
  return rows[0]?.text ?? null;
}

export async function updateRule(db: Queryable, id: string, r: { text: string; hint: string }): Promise<boolean> {
  const { rowCount } = await db.query(`UPDATE instance_rules SET text = $2, hint = $3 WHERE id = $1`, [id, r.text, r.hint]);
  return (rowCount ?? 0) > 0;
}

/** The rules (id and text) in the order they are shown, locked until the transaction ends (a reorder renumbers them). */
export async function lockRuleOrder(db: Queryable): Promise<{ id: string; text: string }[]> {
  const { rows } = await db.query<{ id: string; text: string }>(`SELECT id::text, text FROM instance_rules ORDER BY priority, id LIMIT 1000 FOR UPDATE`);
  return rows;
}

/** Gives each rule its place in `ids` as its priority (0, 1, 2…). */
export async function setRuleOrder(db: Queryable, ids: string[]): Promise<void> {
  await db.query(
    `UPDATE instance_rules r SET priority = o.n - 1 FROM unnest($1::bigint[]) WITH ORDINALITY AS o(id, n)
      WHERE r.id = o.id AND r.priority <> o.n - 1`,
    [ids],
  );
}

/** The priority after the last rule's (a rule added on the page goes last). */
export async function nextRulePriority(db: Queryable): Promise<number> {
  const { rows } = await db.query<{ p: number }>(`SELECT coalesce(max(priority) + 1, 0) AS p FROM instance_rules`);
  return rows[0]!.p;
}
