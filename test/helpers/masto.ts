import { createOAuthAPIClient, createRestAPIClient, type mastodon } from 'masto';

const tokens = new WeakMap<object, string>();

/** The access token a client made by mastoAccounts signs in with (for raw requests beside it). */
export function tokenOf(client: mastodon.rest.Client): string {
  return tokens.get(client)!;
}

/**
 * Accounts registered the way an app registers them with masto (an app, its client-credentials token, then
 * POST /api/v1/accounts for each), returned as signed-in masto clients by username.
 */
export async function mastoAccounts(url: string, clientName: string, ...usernames: string[]): Promise<Record<string, mastodon.rest.Client>> {
  const anonymous = createRestAPIClient({ url });
  // Registration's token has the app's scopes: `push` included, for the Web Push routes.
  const app = await anonymous.v1.apps.create({ clientName, redirectUris: 'urn:ietf:wg:oauth:2.0:oob', scopes: 'read write follow push' });
  const oauth = createOAuthAPIClient({ url });
  const appToken = await oauth.token.create({ grantType: 'client_credentials', clientId: app.clientId!, clientSecret: app.clientSecret!, redirectUri: 'urn:ietf:wg:oauth:2.0:oob', scope: 'read write follow' });
  const asApp = createRestAPIClient({ url, accessToken: appToken.accessToken });
  const clients: Record<string, mastodon.rest.Client> = {};
  for (const username of usernames) {
    const token = await asApp.v1.accounts.create({ username, email: `${username}@example.com`, password: `${username} password`, agreement: true, locale: 'en' });
    clients[username] = createRestAPIClient({ url, accessToken: token.accessToken });
    tokens.set(clients[username], token.accessToken);
  }
  return clients;
}
