import type OAuth2Server from '@node-oauth/oauth2-server';
import type { Db } from '../../storage/db.ts';
import { oauthModel } from './model.ts';

// The OAuth library (with type-is, mime-types and mime-db's table: ~46 modules, ~0.8 MB of heap) is imported at the
// first authorization or token request, not at start: a process at rest has no use for it.
export const oauthLibrary = () => import('@node-oauth/oauth2-server');

/**
 * The OAuth 2 server as Mastodon runs it: authorization code (with PKCE) and client credentials. Returns a function
 * giving it, made (and the library imported) at the first call.
 */
export function oauthServer(db: Db): () => Promise<OAuth2Server> {
  let server: Promise<OAuth2Server> | undefined;
  return () => (server ??= oauthLibrary().then(({ default: OAuth2Server }) => new OAuth2Server({
    model: oauthModel(db),
    // Tokens never expire, as in Mastodon; the library still wants a number.
    accessTokenLifetime: Number.MAX_SAFE_INTEGER,
    authorizationCodeLifetime: 600,
    allowEmptyState: true,
    allowExtendedTokenAttributes: true,
    requireClientAuthentication: { authorization_code: true, client_credentials: true },
  })));
}
