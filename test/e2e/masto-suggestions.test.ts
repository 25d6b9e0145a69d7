// Finding people through masto: follow suggestions (v2 and v1, and dismissing one) and account search.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { mastodon } from 'masto';
import { mastoAccounts } from '../helpers/masto.ts';
import { startListeningServer } from '../helpers/listen.ts';
import type { TestServer } from '../helpers/server.ts';
import { runCli } from '../../cli/admin.ts';
import { forgetGlobalSuggestions } from '../../services/suggestions.ts';

let s: TestServer & { url: string };
const clients: Record<string, mastodon.rest.Client> = {};
const ids: Record<string, string> = {};

beforeAll(async () => {
  s = await startListeningServer();
  Object.assign(clients, await mastoAccounts(s.url, 'masto people', 'rhea', 'sol', 'tam', 'uma'));
  for (const username of ['rhea', 'sol', 'tam', 'uma']) {
    ids[username] = (await clients[username]!.v1.accounts.updateCredentials({ discoverable: true, displayName: `${username} of the Moons` })).id;
  }
  // rhea follows sol; sol follows tam: tam is a friend of a friend. uma is featured by the operator.
  await clients.rhea!.v1.accounts.$select(ids.sol!).follow();
  await clients.sol!.v1.accounts.$select(ids.tam!).follow();
  await runCli(['suggestions', 'feature', 'uma'], s.ctx.db, () => {}, async () => {});
  await forgetGlobalSuggestions(s.ctx);
});
afterAll(async () => s?.close());

describe('masto: suggestions and account search', () => {
  it('lists v2 suggestions with their sources, v1 as accounts, and removes one', async () => {
    const rhea = clients.rhea!;
    const suggestions = await rhea.v2.suggestions.list();
    expect(suggestions.map((x) => [x.account.acct, x.sources, x.source])).toEqual([
      ['uma', ['featured'], 'staff'],
      ['tam', ['friends_of_friends', 'most_followed'], 'past_interactions'],
    ]);
    expect(suggestions[0]!.account.displayName).toBe('uma of the Moons');
    expect((await rhea.v2.suggestions.list({ limit: 1 })).map((x) => x.account.acct)).toEqual(['uma']);
    expect((await rhea.v1.suggestions.list()).map((a) => a.acct)).toEqual(['uma', 'tam']);

    // masto types this method as taking a string, but it takes nothing (the id is in the path).
    await rhea.v1.suggestions.$select(ids.uma!).remove(undefined as unknown as string);
    expect((await rhea.v2.suggestions.list()).map((x) => x.account.acct)).toEqual(['tam']);
  });

  it('searches accounts by username, display name and handle, and only followed ones', async () => {
    const rhea = clients.rhea!;
    expect((await rhea.v1.accounts.search.list({ q: 'ta' })).map((a) => a.acct)).toEqual(['tam']);
    // Everyone is "of the Moons": the one rhea follows comes first, then the most followed.
    const moons = await rhea.v1.accounts.search.list({ q: 'moons', limit: 3 });
    expect(moons.map((a) => a.acct)).toEqual(['sol', 'tam', 'rhea']);
    expect((await rhea.v1.accounts.search.list({ q: 'moons', following: true })).map((a) => a.acct)).toEqual(['sol']);
    const domain = new URL(s.url).host;
    expect((await rhea.v1.accounts.search.list({ q: `@uma@${domain}`, resolve: true })).map((a) => a.acct)).toEqual(['uma']);
  });
});
