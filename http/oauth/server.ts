import OAuth2Server from '@node-oauth/oauth2-server';
import type { Db } from '../../storage/db.ts';
import { oauthModel } from './model.ts';

/** The OAuth 2 server as Mastodon runs it: authorization code (with PKCE) and client credentials. */
export function oauthServer(db: Db): OAuth2Server {
  return new OAuth2Server({
    model: oauthModel(db),
    // Tokens never expire, as in Mastodon; the library still wants a number.
    accessTokenLifetime: Number.MAX_SAFE_INTEGER,
    authorizationCodeLifetime: 600,
    allowEmptyState: true,
    allowExtendedTokenAttributes: true,
    requireClientAuthentication: { authorization_code: true, client_credentials: true },
  });
}
