import { ApiError } from '../errors.ts';
import { transaction, type Db, type Queryable } from '../storage/db.ts';
import { isDuplicate } from '../storage/admin-blocks.ts';
import {
  deleteUsernameBlock, findUsernameBlock, insertUsernameBlock, updateUsernameBlock as updateRow, usernameBlocksMet,
  type UsernameBlockFields, type UsernameBlockRow,
} from '../storage/username-blocks.ts';
import { logAction, type ActionName, type Actor } from './action-log.ts';

/**
 * The operators' username blocks, as Mastodon 4.5 has them (UsernameBlock): a name that signs up equal to a block, or
 * containing it, is refused (`is reserved`), or held for approval when the block allows that. Names are compared
 * normalised: lower case, and the digits people write for letters read as those letters, so a block of `admin`
 * also catches `Adm1n` and `4dm1n`.
 */

/** Mastodon's UsernameBlock::HOMOGLYPHS: the digits read as letters (6 is left alone, as there). */
const HOMOGLYPHS: Readonly<Record<string, string>> = { 1: 'i', 2: 'z', 3: 'e', 4: 'a', 5: 's', 7: 't', 8: 'b', 9: 'g', 0: 'o' };

export const COMPARISONS = ['equals', 'contains'] as const;
export type Comparison = (typeof COMPARISONS)[number];

/** The longest block: a local username has at most 30 characters, so a longer block could never match. */
export const USERNAME_BLOCK_MAX = 30;

export function normalizeUsername(name: string): string {
  return name.toLowerCase().replace(/[0-57-9]/g, (digit) => HOMOGLYPHS[digit]!);
}

export const comparisonOf = (b: Pick<UsernameBlockRow, 'exact'>): Comparison => (b.exact ? 'equals' : 'contains');

export interface UsernameBlockInput {
  username?: string | null | undefined;
  comparison?: string | null | undefined;
  allow_with_approval?: boolean | undefined;
}

const invalid = (message: string) => new ApiError(422, `Validation failed: ${message}`);

/** The row's fields from the input over what the block had (nothing, when it is new); a 422 for a wrong one. */
function fields(base: UsernameBlockRow | null, input: UsernameBlockInput): UsernameBlockFields {
  const errors: string[] = [];
  const username = input.username !== undefined && input.username !== null ? input.username.trim() : base?.username ?? '';
  if (username === '') errors.push("Username can't be blank");
  else if (username.length > USERNAME_BLOCK_MAX) errors.push(`Username is too long (maximum is ${USERNAME_BLOCK_MAX} characters)`);
  const comparison = input.comparison ?? (base ? comparisonOf(base) : 'contains');
  if (!COMPARISONS.includes(comparison as Comparison)) errors.push('Comparison is not included in the list');
  if (errors.length) throw invalid(errors.join(', '));
  return {
    username,
    normalized: normalizeUsername(username),
    exact: comparison === 'equals',
    allowWithApproval: input.allow_with_approval ?? base?.allow_with_approval ?? false,
  };
}

/** A block's write and its audit log entry, in one transaction; a name taken already (in any case) is a 422. */
async function logged(db: Db, by: Actor | undefined, action: ActionName, write: (tx: Queryable) => Promise<UsernameBlockRow | null>): Promise<UsernameBlockRow | null> {
  try {
    return await transaction(db, async (tx) => {
      const row = await write(tx);
      if (row) await logAction(tx, by, action, { type: 'UsernameBlock', id: action === 'destroy' ? null : row.id, name: row.username });
      return row;
    });
  } catch (err) {
    if (isDuplicate(err)) throw invalid('Username has already been taken');
    throw err;
  }
}

export async function createUsernameBlock(db: Db, input: UsernameBlockInput, by?: Actor): Promise<UsernameBlockRow> {
  const f = fields(null, input);
  return (await logged(db, by, 'create', (tx) => insertUsernameBlock(tx, f)))!;
}

/** Null when there is no such block. */
export async function updateUsernameBlock(db: Db, id: string, input: UsernameBlockInput, by?: Actor): Promise<UsernameBlockRow | null> {
  const existing = await findUsernameBlock(db, id);
  if (!existing) return null;
  const f = fields(existing, input);
  return logged(db, by, 'update', (tx) => updateRow(tx, id, f));
}

/** Null when there is no such block. */
export function removeUsernameBlock(db: Db, id: string, by?: Actor): Promise<UsernameBlockRow | null> {
  return logged(db, by, 'destroy', (tx) => deleteUsernameBlock(tx, id));
}

/**
 * What a new local account's name meets: `refused` (a block without approval; Mastodon's UnreservedUsernameValidator,
 * which holds for every local account, an operator's included), `held` (a block with approval: the sign-up waits for
 * the operators, Mastodon's sign_up_username_requires_approval?), both, or neither.
 */
export function usernameBlocksFor(db: Queryable, username: string): Promise<{ refused: boolean; held: boolean }> {
  return usernameBlocksMet(db, normalizeUsername(username));
}
