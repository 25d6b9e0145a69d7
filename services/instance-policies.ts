// The privacy policy and terms of service: the operator's texts (PRIVACY_POLICY_FILE, TERMS_OF_SERVICE_FILE), or
// defaults that say what this server actually does. Shown by the pages (/privacy-policy, /terms-of-service) and the
// API (GET /api/v1/instance/privacy_policy, /terms_of_service) alike.
import { createHash } from 'node:crypto';
import type { AppContext } from '../context.ts';
import { settingUpdatedAt } from '../storage/instance.ts';
import { escapeHtml } from '../text/render.ts';
import { operatorHtml } from './instance.ts';

type Ctx = Pick<AppContext, 'db' | 'config'>;

export interface PolicyText {
  /** Sanitised HTML. */
  content: string;
  /** When the text last changed (recorded in PostgreSQL, so every process agrees). */
  updatedAt: Date;
  /** True when the operator wrote it; false for the default. */
  custom: boolean;
}

/** The default privacy policy: what this server stores, what leaves it, and its two cookies. */
function defaultPrivacyPolicy(config: AppContext['config']): string {
  const site = escapeHtml(config.localDomain);
  const contact = config.contactEmail ? ` at <a href="mailto:${escapeHtml(config.contactEmail)}">${escapeHtml(config.contactEmail)}</a>` : '';
  return `<p>This policy says what ${site} keeps about the people who use it, why, and what it shares with other servers.</p>
<h2>What we store</h2>
<ul>
<li><strong>Your account</strong>: your username, display name, bio, profile fields, avatar and header image, and your settings.</li>
<li><strong>Your e-mail address</strong>: to confirm your account, to let you reset your password, and for messages about your account. It is never shown to anyone.</li>
<li><strong>Your password</strong>, only as a one-way hash: nobody here can read it.</li>
<li><strong>Sign-ins</strong>: the IP address and time of your latest sign-in, and the browser sessions and app authorisations you have open (with the IP address and browser of each session), so that you can see and end them.</li>
<li><strong>Your posts</strong>, with their media (images, video, audio, and the descriptions you give them), polls and votes, favourites, boosts, bookmarks and edit history.</li>
<li><strong>Who you follow and who follows you</strong>, your lists, blocks, mutes, filters and notifications.</li>
</ul>
<h2>What other servers receive</h2>
<p>This server is part of the fediverse. Your profile and public posts can be seen by anyone. Posts are delivered to
the servers of the people who follow you or whom you mention: followers-only posts go to your followers' servers, and
direct posts to the servers of the people mentioned. Once delivered, copies are kept by those servers under their own
rules; deleting a post here asks them to delete it too, but cannot force them. Who you follow and who follows you is
visible to others unless you hide it. Do not share anything on this server that must stay secret.</p>
<h2>Cookies</h2>
<p>The website sets two cookies, both only for this site: a session cookie that keeps you signed in, and a
form-protection cookie that proves a form you send was made by this site (protection against cross-site request
forgery). There are no tracking or advertising cookies, and pages run no scripts.</p>
<h2>How long we keep it</h2>
<p>Your data is kept while your account exists. Uploaded media not attached to any post is removed after a day. When an
account is deleted, its posts, media and relationships are removed from this server.</p>
<h2>Your choices</h2>
<p>You can edit or delete your posts and profile at any time, choose who may see each post, approve followers by hand,
and hide who you follow and who follows you. For any question about your data, contact the operators${contact}.</p>`;
}

/** The default terms: the server's rules, in short. */
function defaultTerms(config: AppContext['config']): string {
  const site = escapeHtml(config.localDomain);
  return `<p>By using ${site} you agree to these terms.</p>
<ul>
<li>Follow the rules of this server, listed on its about page.</li>
<li>You keep the rights to what you post. You allow this server to store it, show it to the people you address, and send it to other servers as the fediverse requires.</li>
<li>Do not post anything unlawful, and do not use the service to harass, spam or harm others, or to attack this or any other server.</li>
<li>The operators may remove content or limit, suspend or delete accounts that break these terms or the rules.</li>
<li>The service is offered as it is, without any guarantee that it will always be available or keep every post.</li>
<li>The terms may change; a change is shown on this page with its date.</li>
</ul>
<p>See also the <a href="/privacy-policy">privacy policy</a>.</p>`;
}

const stamped = new WeakMap<object, Map<string, Promise<Date>>>();

/**
 * When `content` became the text of setting `name`, asked once per process and text (the text changes while the
 * server runs: the operators' settings page).
 */
function changedAt(ctx: Ctx, name: string, content: string): Promise<Date> {
  let byText = stamped.get(ctx.db);
  if (!byText) stamped.set(ctx.db, (byText = new Map()));
  const digest = createHash('sha256').update(content).digest('hex');
  const key = `${name}:${digest}`;
  let at = byText.get(key);
  if (!at) {
    if (byText.size > 100) byText.clear();
    at = settingUpdatedAt(ctx.db, name, digest);
    byText.set(key, at);
    at.catch(() => byText.delete(key));
  }
  return at;
}

export async function privacyPolicy(ctx: Ctx): Promise<PolicyText> {
  const custom = ctx.config.privacyPolicy.trim() !== '';
  const content = custom ? operatorHtml(ctx.config.privacyPolicy) : defaultPrivacyPolicy(ctx.config);
  return { content, custom, updatedAt: await changedAt(ctx, 'privacy_policy', content) };
}

export async function termsOfService(ctx: Ctx): Promise<PolicyText> {
  const custom = ctx.config.termsOfService.trim() !== '';
  const content = custom ? operatorHtml(ctx.config.termsOfService) : defaultTerms(ctx.config);
  return { content, custom, updatedAt: await changedAt(ctx, 'terms_of_service', content) };
}
