import type { AuthorizationCodeModel, ClientCredentialsModel, Client, User, AuthorizationCode, Token } from '@node-oauth/oauth2-server';
import type { Db } from '../../storage/db.ts';
import * as oauth from '../../storage/oauth.ts';
import { DEFAULT_SCOPES, parseScopes, validScopes } from './scopes.ts';

function toClient(app: oauth.ApplicationRow): Client {
  return {
    id: app.id,
    redirectUris: app.redirect_uris,
    grants: ['authorization_code', 'client_credentials'],
    scopes: parseScopes(app.scopes),
  };
}

/**
 * The storage behind @node-oauth/oauth2-server. Codes, tokens and client secrets are stored as hashes;
 * tokens do not expire (as in Mastodon) and there are no refresh tokens, until revoked.
 */
export function oauthModel(db: Db): AuthorizationCodeModel & ClientCredentialsModel {
  return {
    async getClient(clientId: string, clientSecret: string | null) {
      const app = await oauth.findApplicationByClientId(db, clientId);
      if (!app) return false;
      if (clientSecret !== null && clientSecret !== undefined && !oauth.secretMatches(clientSecret, app.client_secret_hash)) {
        return false;
      }
      return toClient(app);
    },

    async validateScope(_user: User, client: Client, scope?: string[]) {
      const requested = scope && scope.length > 0 ? scope : parseScopes(DEFAULT_SCOPES);
      // An app may ask for its registered scopes or fewer (`read:accounts` when it registered `read`).
      const allowed = (client.scopes as string[]) ?? [];
      const ok = validScopes(requested) && requested.every((s) => allowed.includes(s) || allowed.includes(s.split(':')[0]!));
      return ok ? requested : false;
    },

    async saveAuthorizationCode(code: Pick<AuthorizationCode, 'authorizationCode' | 'expiresAt' | 'redirectUri' | 'scope' | 'codeChallenge' | 'codeChallengeMethod'>, client: Client, user: User) {
      await oauth.insertAccessGrant(db, {
        code: code.authorizationCode,
        applicationId: client.id,
        userId: user.id as string,
        redirectUri: code.redirectUri,
        scopes: (code.scope ?? []).join(' '),
        codeChallenge: code.codeChallenge ?? null,
        codeChallengeMethod: code.codeChallengeMethod ?? null,
        expiresAt: code.expiresAt,
      });
      return { ...code, client, user };
    },

    async getAuthorizationCode(authorizationCode: string) {
      const grant = await oauth.findActiveAccessGrant(db, authorizationCode);
      if (!grant) return false;
      const app = await oauth.findApplicationById(db, grant.application_id);
      if (!app) return false;
      const code: AuthorizationCode & { grantId: string } = {
        authorizationCode,
        expiresAt: grant.expires_at,
        redirectUri: grant.redirect_uri,
        scope: parseScopes(grant.scopes),
        client: toClient(app),
        user: { id: grant.user_id },
        grantId: grant.id,
      };
      if (grant.code_challenge) {
        code.codeChallenge = grant.code_challenge;
        code.codeChallengeMethod = grant.code_challenge_method ?? 'plain';
      }
      return code;
    },

    async revokeAuthorizationCode(code: AuthorizationCode) {
      return oauth.revokeAccessGrant(db, (code as AuthorizationCode & { grantId: string }).grantId);
    },

    async getUserFromClient() {
      // client_credentials tokens belong to the app alone.
      return { id: null };
    },

    async saveToken(token: Token, client: Client, user: User) {
      const row = await oauth.insertAccessToken(db, {
        token: token.accessToken,
        applicationId: client.id,
        userId: (user.id as string | null) ?? null,
        scopes: (token.scope ?? []).join(' '),
      });
      // Only what Mastodon's Token entity has: no expiry, no refresh token.
      return {
        accessToken: token.accessToken,
        scope: token.scope,
        client,
        user,
        created_at: Math.floor(row.created_at.getTime() / 1000),
      } as Token;
    },

    async getAccessToken() {
      // API routes look tokens up in http/plugins/auth.ts; the library never authenticates for us.
      return false;
    },
  };
}
