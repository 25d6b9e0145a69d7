import type { ApplicationRow } from '../../storage/oauth.ts';

/** Mastodon's Application entity; `vapid_key` is the server's Web Push key (services/web-push.ts). */
export function renderApplication(app: ApplicationRow, vapidKey: string) {
  return {
    id: app.id,
    name: app.name,
    website: app.website,
    scopes: app.scopes.split(' '),
    redirect_uri: app.redirect_uris.join('\n'),
    redirect_uris: app.redirect_uris,
    vapid_key: vapidKey,
  };
}

/** CredentialApplication: the one time the client secret is shown. */
export function renderCredentialApplication(app: ApplicationRow, vapidKey: string, clientSecret: string) {
  return {
    ...renderApplication(app, vapidKey),
    client_id: app.client_id,
    client_secret: clientSecret,
    client_secret_expires_at: 0,
  };
}

/** Mastodon's Token entity. */
export function renderToken(token: string, scopes: string, createdAt: Date) {
  return {
    access_token: token,
    token_type: 'Bearer',
    scope: scopes,
    created_at: Math.floor(createdAt.getTime() / 1000),
  };
}
