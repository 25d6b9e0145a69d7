import { expect } from 'vitest';
import type { App } from '../../http/app.ts';

/** A browser's cookies for `app.inject` or `fetch`: takes Set-Cookie from answers, sends Cookie with requests. */
export class CookieJar {
  readonly cookies = new Map<string, string>();

  take(setCookie: string | string[] | null | undefined): void {
    for (const line of Array.isArray(setCookie) ? setCookie : setCookie ? [setCookie] : []) {
      const [pair, ...attrs] = line.split(';');
      const eq = pair!.indexOf('=');
      const name = pair!.slice(0, eq).trim();
      const value = pair!.slice(eq + 1).trim();
      const expired = attrs.some((a) => /^\s*max-age=0\s*$/i.test(a) || (/^\s*expires=/i.test(a) && Date.parse(a.split('=')[1]!) < Date.now()));
      if (expired || value === '') this.cookies.delete(name);
      else this.cookies.set(name, value);
    }
  }

  header(): string {
    return [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
  }
}

function decodeEntities(s: string): string {
  return s.replace(/&quot;/g, '"').replace(/&#39;/g, "'").replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&amp;/g, '&');
}

/** The form token of a page. */
export function csrfOf(html: string): string {
  const m = /name="_csrf" value="([^"]*)"/.exec(html);
  if (!m) throw new Error('no CSRF token on the page');
  return decodeEntities(m[1]!);
}

/** A browser on `app.inject`: keeps cookies, follows nothing by itself. */
export class WebClient {
  readonly jar = new CookieJar();
  readonly app: App;
  constructor(app: App) {
    this.app = app;
  }

  async get(url: string, headers: Record<string, string> = {}) {
    const res = await this.app.inject({ method: 'GET', url, headers: { accept: 'text/html', cookie: this.jar.header(), ...headers } });
    this.jar.take(res.headers['set-cookie']);
    return res;
  }

  /** Submits a form as a browser does, with the CSRF token of `page` (or the one given in the fields). */
  async post(url: string, fields: Record<string, string>, page?: string) {
    const body = new URLSearchParams(page ? { _csrf: csrfOf(page), ...fields } : fields).toString();
    const res = await this.app.inject({
      method: 'POST', url, payload: body,
      headers: { accept: 'text/html', 'content-type': 'application/x-www-form-urlencoded', cookie: this.jar.header() },
    });
    this.jar.take(res.headers['set-cookie']);
    return res;
  }

  /** Opens a page and submits its form. */
  async submit(pageUrl: string, action: string, fields: Record<string, string>) {
    const page = await this.get(pageUrl);
    if (page.statusCode !== 200) throw new Error(`${pageUrl}: ${page.statusCode} ${page.body.slice(0, 200)}`);
    return this.post(action, fields, page.body);
  }

  /** Signs in on /auth/sign_in; the answer is the form's (303 on success). */
  signIn(email: string, password: string, returnTo = '/') {
    return this.submit(`/auth/sign_in?return_to=${encodeURIComponent(returnTo)}`, '/auth/sign_in', { email, password, return_to: returnTo });
  }
}

/** A browser's session for a registered person, signed in through the sign-in form (303 to where it goes next). */
export async function signedInClient(app: App, user: { email: string; password: string }): Promise<WebClient> {
  const web = new WebClient(app);
  expect((await web.signIn(user.email, user.password)).statusCode).toBe(303);
  return web;
}
