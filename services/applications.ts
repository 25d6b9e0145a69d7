import { randomBytes } from 'node:crypto';
import { transaction, type Db } from '../storage/db.ts';
import { countOwnedApplications, insertAccessToken, insertApplication, type ApplicationRow } from '../storage/oauth.ts';
import { unprocessable } from '../errors.ts';

export const OOB_REDIRECT_URI = 'urn:ietf:wg:oauth:2.0:oob';
/** How many applications one person may make in Settings, Development. */
export const OWNED_APPLICATIONS_LIMIT = 100;

function checkRedirectUri(uri: string): boolean {
  if (uri === OOB_REDIRECT_URI) return true;
  try {
    const url = new URL(uri);
    // Absolute, no fragment (RFC 6749 §3.1.2); app schemes like `myapp://callback` are allowed.
    return url.hash === '' && url.protocol !== 'javascript:' && url.protocol !== 'data:';
  } catch {
    return false;
  }
}

export interface NewApplication {
  name: string;
  redirectUris: string[];
  /** Checked by the caller against the scopes the server knows (http/oauth/scopes.ts). */
  scopes: string[];
  website: string | null | undefined;
}

/** The checks of POST /api/v1/apps, in Mastodon's words; the fields as they are stored. */
function checkedApplication(a: NewApplication) {
  const name = a.name.trim();
  if (!name) throw unprocessable("Validation failed: Application name can't be blank");
  if (name.length > 60) throw unprocessable('Validation failed: Application name is too long (maximum is 60 characters)');
  const redirectUris = a.redirectUris.map((u) => u.trim()).filter(Boolean);
  if (redirectUris.length === 0 || !redirectUris.every(checkRedirectUri)) throw unprocessable('Validation failed: Redirect URI must be an absolute URI.');
  if (a.scopes.length === 0) throw unprocessable('Validation failed: Scopes must be valid OAuth scopes');
  let website: string | null = a.website?.trim() || null;
  if (website !== null) {
    try {
      const u = new URL(website);
      if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new Error('scheme');
    } catch {
      throw unprocessable('Validation failed: Website is invalid');
    }
  }
  return { name, website, redirectUris, scopes: [...new Set(a.scopes)].join(' '), clientId: randomBytes(32).toString('base64url'), clientSecret: randomBytes(32).toString('base64url') };
}

/** POST /api/v1/apps: an application and its client secret (shown this once; only its hash is kept). */
export async function registerApplication(db: Db, a: NewApplication): Promise<{ row: ApplicationRow; clientSecret: string }> {
  const fields = checkedApplication(a);
  return { row: await insertApplication(db, fields), clientSecret: fields.clientSecret };
}

/**
 * Settings, Development: an application of the person's own, with an access token for them holding its scopes, as
 * Mastodon makes one. The secret and the token are returned this once (only their hashes are kept).
 */
export async function createOwnApplication(db: Db, userId: string, a: NewApplication): Promise<{ row: ApplicationRow; clientSecret: string; accessToken: string }> {
  const fields = checkedApplication(a);
  const accessToken = randomBytes(32).toString('base64url');
  const row = await transaction(db, async (tx) => {
    if ((await countOwnedApplications(tx, userId)) >= OWNED_APPLICATIONS_LIMIT) throw unprocessable(`Validation failed: you may keep at most ${OWNED_APPLICATIONS_LIMIT} applications`);
    const row = await insertApplication(tx, { ...fields, ownerUserId: userId });
    await insertAccessToken(tx, { token: accessToken, applicationId: row.id, userId, scopes: row.scopes });
    return row;
  });
  return { row, clientSecret: fields.clientSecret, accessToken };
}
