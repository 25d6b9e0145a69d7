import { effectivePermissions, OPERATOR_MAIL_BITS } from '../services/roles.ts';
import { randomBytes, randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { UnrecoverableError } from './bullmq.ts';
import type { Eta } from 'eta';
import type { Transporter } from 'nodemailer';
import { contextSlot, type AppContext } from '../context.ts';
import type { Config, SmtpSettings } from '../config.ts';
import { findUserByAccountId, findUserById, setMailToken, type UserRow } from '../storage/users.ts';
import { findAppeal, findStrike } from '../storage/strikes.ts';
import { APPEAL_WINDOW_DAYS } from '../services/strikes.ts';
import { findAccountById, type AccountRow } from '../storage/accounts.ts';
import { findReport } from '../storage/reports.ts';
import { removeFromOutbox } from '../storage/outbox.ts';
import { hashSecret } from '../storage/oauth.ts';
import { CONFIRMATION_TOKEN_TTL_SECONDS, RESET_PASSWORD_TOKEN_TTL_SECONDS, type Mail } from '../services/mail.ts';
import { findNotification } from '../storage/notifications.ts';
import { findStatus } from '../storage/statuses.ts';
import { digestSummary, mailableUser } from '../storage/notification-emails.ts';
import { emailChoices, unsubscribeToken, type UnsubscribeKind } from '../services/notification-emails.ts';
import { plainText, truncate } from '../services/web-push.ts';
import { loadCatalogueFolder, SOURCE_LOCALE, type Translate } from '../services/i18n.ts';

// The sendMail job: reads what a mail is about as it is now, renders it (plain text and HTML, from the Eta templates
// in mail-templates/), and hands it to the SMTP server. Failures throw for BullMQ to retry (jobs/queues.ts,
// MAIL_RETRIES); a recipient or message the server refuses for good (a 5xx reply) is given up at once.

export interface MailJob {
  outboxId?: string | undefined;
  mail: Mail;
}

/** The attempt being made, as BullMQ's Job tells it: the last one gives up the outbox row with the job. */
export interface MailAttempt {
  attemptsMade: number;
  opts: { attempts?: number | undefined };
}

interface Log {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

/** A rendered mail, ready for the SMTP server. */
export interface Message {
  to: string;
  subject: string;
  text: string;
  html: string;
  /** Extra header fields (List-Unsubscribe of notification mail). */
  headers?: Record<string, string>;
}

/** sent; off: mail is off; skipped: nothing to send any more (the user is gone, already confirmed, …). */
export type MailOutcome = 'sent' | 'off' | 'skipped';

const TEMPLATES = fileURLToPath(new URL('./mail-templates', import.meta.url));

/**
 * The mails' words (mail-templates/locales/, as the pages' own catalogues): a mail speaks its recipient's interface
 * language (Settings, Appearance, or the language the sign-up page spoke) where there is a catalogue for it, else the
 * server's first language, else English. Read at the first mail.
 */
let mailCatalogues: ReturnType<typeof loadCatalogueFolder> | undefined;
function mailTranslator(config: Pick<Config, 'instanceLanguages'>, locale: string | null | undefined): Translate {
  mailCatalogues ??= loadCatalogueFolder(new URL('./mail-templates/locales/', import.meta.url));
  const c = mailCatalogues;
  return c.translator(c.matchLocale(locale) ?? c.matchLocale(config.instanceLanguages[0]) ?? SOURCE_LOCALE);
}

// Eta and nodemailer are loaded at the first mail, not when the worker starts (most processes never send one).
let engines: Promise<{ html: Eta; text: Eta }> | undefined;
function templates(): Promise<{ html: Eta; text: Eta }> {
  engines ??= import('eta').then(({ Eta }) => ({
    // HTML escapes every `<%= %>` value; plain text is not HTML, so it is written as it is.
    html: new Eta({ views: TEMPLATES, cache: true, autoEscape: true, autoTrim: false }),
    text: new Eta({ views: TEMPLATES, cache: true, autoEscape: false, autoTrim: false }),
  }));
  engines.catch(() => (engines = undefined));
  return engines;
}

/** One SMTP transport per process (per context), made at the first mail and closed with the workers. */
const transportSlot = contextSlot('mail-transport', (app) => {
  const smtp = app.config.smtp!;
  const ready = import('nodemailer').then(({ createTransport }) => createTransport({
    url: smtp.url,
    // A server that does not answer is given up in a minute or so, and the job tried again later.
    connectionTimeout: 30_000,
    greetingTimeout: 30_000,
    socketTimeout: 60_000,
  }));
  return {
    ready,
    async close() {
      (await ready.catch(() => null))?.close();
    },
  };
});

function transport(ctx: AppContext): Promise<Transporter> {
  return transportSlot.of(ctx).ready;
}

/** Closes this process's SMTP transport, if it made one (workers' shutdown). */
export async function closeMailTransport(ctx: AppContext): Promise<void> {
  await transportSlot.close(ctx);
}

const warnedOff = new WeakSet<object>();

/**
 * Runs one sendMail job. With mail off it does nothing (and says so once per process). `attempt` is BullMQ's job:
 * when the last attempt fails, or the server refuses the mail for good, the outbox row goes too, so that the sweeper
 * does not start it over.
 */
export async function sendMailJob(ctx: AppContext, job: MailJob, attempt?: MailAttempt, log?: Log): Promise<MailOutcome> {
  const smtp = ctx.config.smtp;
  if (!smtp) {
    if (!warnedOff.has(ctx)) {
      warnedOff.add(ctx);
      log?.info({ mail: job.mail.type }, 'mail is off (no SMTP server set): mails are dropped');
    }
    return 'off';
  }
  const message = await buildMessage(ctx, job.mail);
  if (!message) return 'skipped';
  try {
    await deliver(ctx, smtp, message);
    return 'sent';
  } catch (err) {
    const e = err as SmtpError;
    const forGood = refusedForGood(e);
    const lastAttempt = attempt !== undefined && attempt.attemptsMade + 1 >= (attempt.opts.attempts ?? 1);
    if (forGood || lastAttempt) {
      log?.error({ mail: job.mail.type, code: e.code, responseCode: e.responseCode, response: e.response }, forGood ? 'mail refused by the SMTP server; given up' : 'mail not sent after every attempt; given up');
      if (job.outboxId) await removeFromOutbox(ctx.db, job.outboxId);
    }
    if (forGood) throw new UnrecoverableError(`mail refused: ${e.response ?? e.message}`);
    throw err;
  }
}

/** What nodemailer's errors carry (nodemailer's NodemailerError). */
interface SmtpError extends Error {
  code?: string | undefined;
  command?: string | undefined;
  response?: string | undefined;
  responseCode?: number | undefined;
}

/**
 * A refusal that sending again would meet again: a 5xx reply to the recipient or to the message (RFC 5321: permanent;
 * 503 is a session out of step, not a refusal), or an address nodemailer cannot even send to. A refused login or
 * sender is the server's settings, which an operator fixes: those are retried.
 */
export function refusedForGood(e: SmtpError): boolean {
  if (e.code === 'EAUTH' || e.command === 'MAIL FROM') return false;
  if (e.code === 'EENVELOPE' && e.command === 'API') return true;
  const code = e.responseCode;
  return code !== undefined && code >= 500 && code < 600 && code !== 503 && (e.code === 'EENVELOPE' || e.code === 'EMESSAGE');
}

async function deliver(ctx: AppContext, smtp: SmtpSettings, m: Message): Promise<void> {
  await (await transport(ctx)).sendMail({
    from: smtp.from,
    to: m.to,
    subject: m.subject,
    text: m.text,
    html: m.html,
    messageId: `<${randomUUID()}@${hostOf(ctx.config)}>`,
    // RFC 3834: no vacation replies to a machine.
    headers: { 'Auto-Submitted': 'auto-generated', ...m.headers },
  });
}

const hostOf = (config: Pick<Config, 'localDomain'>) => config.localDomain.replace(/:\d+$/, '');

/** The acct a person knows an account by: `name` here, `name@domain` elsewhere. */
const acctOf = (a: AccountRow) => (a.domain ? `${a.username}@${a.domain}` : a.username);

/** A token for a single-use link: 32 random bytes, base64url; only its hash is stored. */
function newToken(): string {
  return randomBytes(32).toString('base64url');
}

function duration(t: Translate, seconds: number): string {
  if (seconds % 86_400 === 0) return t('duration.days', { count: seconds / 86_400 });
  if (seconds % 3600 === 0) return t('duration.hours', { count: seconds / 3600 });
  return t('duration.minutes', { count: Math.round(seconds / 60) });
}

/** An operator who still handles sign-ups and reports (as storage/users.ts operatorEmails chooses them). */
function stillOperator(u: UserRow | null): u is UserRow {
  return !!u && (effectivePermissions(u.role?.permissions) & OPERATOR_MAIL_BITS) !== 0 && !u.disabled && u.confirmed_at !== null;
}

/**
 * The mail as it would go now: its recipient, subject and both parts, or null when there is nothing to send (what it
 * is about is gone, or no longer calls for it). Makes and stores single-use tokens (their hashes) for the links.
 */
export async function buildMessage(ctx: AppContext, mail: Mail): Promise<Message | null> {
  const { config } = ctx;
  const instance = config.instanceTitle;
  const link = (path: string) => `${config.publicUrl}${path}`;
  const userAndAccount = async (userId: string) => {
    const user = await findUserById(ctx.db, userId);
    const account = user ? await findAccountById(ctx.db, user.account_id) : null;
    return user && account ? { user, account } : null;
  };
  const accountAndUser = async (accountId: string) => {
    const [user, account] = await Promise.all([findUserByAccountId(ctx.db, accountId), findAccountById(ctx.db, accountId)]);
    return user && account ? { user, account } : null;
  };
  switch (mail.type) {
    case 'confirmation': {
      const found = await userAndAccount(mail.userId);
      if (!found) return null;
      const { user, account } = found;
      // Confirmed meanwhile, and no new address waiting: nothing to confirm.
      if (user.confirmed_at !== null && !user.unconfirmed_email) return null;
      const token = newToken();
      await setMailToken(ctx.db, user.id, 'confirmation', hashSecret(token), user.unconfirmed_email ?? user.email);
      const reconfirming = user.confirmed_at !== null;
      const t = mailTranslator(config, user.locale);
      return render(ctx, t, 'confirmation', user.unconfirmed_email ?? user.email,
        t(reconfirming ? 'subject.reconfirmation' : 'subject.confirmation', { instance }), {
          username: account.username,
          email: user.unconfirmed_email ?? user.email,
          reconfirming,
          link: link(`/auth/confirmation?confirmation_token=${encodeURIComponent(token)}`),
          validFor: duration(t, CONFIRMATION_TOKEN_TTL_SECONDS),
        });
    }
    case 'reset_password': {
      const found = await userAndAccount(mail.userId);
      if (!found) return null;
      const { user, account } = found;
      const token = newToken();
      await setMailToken(ctx.db, user.id, 'reset_password', hashSecret(token));
      const t = mailTranslator(config, user.locale);
      return render(ctx, t, 'reset_password', user.email, t('subject.reset_password', { instance }), {
        username: account.username,
        link: link(`/auth/password/edit?reset_password_token=${encodeURIComponent(token)}`),
        validFor: duration(t, RESET_PASSWORD_TOKEN_TTL_SECONDS),
      });
    }
    case 'approved': {
      const found = await userAndAccount(mail.userId);
      if (!found || !found.user.approved) return null;
      const t = mailTranslator(config, found.user.locale);
      return render(ctx, t, 'approved', found.user.email, t('subject.approved', { instance }), {
        username: found.account.username,
        link: link('/auth/sign_in'),
      });
    }
    case 'rejected': {
      // The user row is gone: the language it had travels with the mail.
      const t = mailTranslator(config, mail.locale);
      return render(ctx, t, 'rejected', mail.email, t('subject.rejected', { instance }), {
        username: mail.username,
      });
    }
    case 'new_sign_up': {
      const operator = await findUserById(ctx.db, mail.operatorId);
      if (!stillOperator(operator)) return null;
      const found = await userAndAccount(mail.userId);
      if (!found) return null;
      const { user, account } = found;
      const pending = !user.approved;
      const t = mailTranslator(config, operator.locale);
      return render(ctx, t, 'new_sign_up', operator.email,
        t(pending ? 'subject.new_sign_up_pending' : 'subject.new_sign_up', { instance, username: account.username }), {
          username: account.username,
          email: user.email,
          reason: user.reason ?? '',
          pending,
          link: link('/admin/approvals'),
          profile: link(`/@${account.username}`),
        });
    }
    case 'new_report': {
      const operator = await findUserById(ctx.db, mail.operatorId);
      if (!stillOperator(operator)) return null;
      const report = await findReport(ctx.db, mail.reportId);
      if (!report) return null;
      const [reporter, target] = await Promise.all([findAccountById(ctx.db, report.account_id), findAccountById(ctx.db, report.target_account_id)]);
      if (!reporter || !target) return null;
      const t = mailTranslator(config, operator.locale);
      return render(ctx, t, 'new_report', operator.email, t('subject.new_report', { instance, id: report.id }), {
        id: report.id,
        reporter: acctOf(reporter),
        remoteReporter: reporter.domain,
        target: acctOf(target),
        category: report.category,
        comment: report.comment,
        statusCount: report.status_ids.length,
        link: link(`/admin/reports/${report.id}`),
      });
    }
    case 'email_changed': {
      const found = await userAndAccount(mail.userId);
      if (!found) return null;
      const { user, account } = found;
      const to = mail.oldEmail ?? user.email;
      // Without the old address, one already replaced by the new one has no one to warn.
      if (to.toLowerCase() === mail.newEmail.toLowerCase()) return null;
      const t = mailTranslator(config, user.locale);
      return render(ctx, t, 'email_changed', to, t('subject.email_changed', { instance }), {
        username: account.username,
        newEmail: mail.newEmail,
        link: link('/auth/sign_in'),
      });
    }
    case 'notification':
      return notificationMessage(ctx, mail);
    case 'notification_digest':
      return digestMessage(ctx, mail);
    case 'warning': {
      const strike = await findStrike(ctx.db, mail.strikeId);
      const found = strike ? await accountAndUser(strike.target_account_id) : null;
      if (!strike || !found) return null;
      const t = mailTranslator(config, found.user.locale);
      return render(ctx, t, 'warning', found.user.email, t(`subject.strike.${strike.action}`, { instance }), {
        username: found.account.username,
        action: strike.action,
        done: t(`strike.done.${strike.action}`),
        text: strike.text,
        statusCount: strike.status_ids.length,
        link: link(`/disputes/strikes/${strike.id}`),
        appealDays: APPEAL_WINDOW_DAYS,
      });
    }
    case 'appeal_approved':
    case 'appeal_rejected': {
      const appeal = await findAppeal(ctx.db, mail.appealId);
      const strike = appeal ? await findStrike(ctx.db, appeal.account_warning_id) : null;
      const found = appeal ? await accountAndUser(appeal.account_id) : null;
      if (!appeal || !strike || !found) return null;
      const t = mailTranslator(config, found.user.locale);
      return render(ctx, t, mail.type, found.user.email, t(`subject.${mail.type}`, { instance }), {
        username: found.account.username,
        struckAt: strike.created_at.toISOString().slice(0, 10),
        done: t(`strike.done.${strike.action}`),
        link: link(`/disputes/strikes/${strike.id}`),
      });
    }
  }
}

/** Notification types a digest counts by name (`digest.<type>`); others are counted together (`digest.other`). */
const DIGEST_TYPES = new Set(['mention', 'reblog', 'favourite', 'follow', 'follow_request', 'poll', 'status', 'update', 'quote']);

/** A notification's title in the mail's language, naming who did it (`title.<type>`, as Web Push words them). */
const titleOf = (t: Translate, type: string, name: string) => (t.has(`title.${type}`) ? t(`title.${type}`, { name }) : null);
const DIGEST_LATEST = 5;
const DIGEST_COUNT_CAP = 10_000;

/**
 * The unsubscribe link of a mail (a signed token naming the person and the kind; the page asks before it acts, and a
 * POST to it unsubscribes at once) and the headers of RFC 2369 and RFC 8058 that let a mail client do the same.
 */
function unsubscribing(ctx: AppContext, userId: string, kind: UnsubscribeKind): { url: string; headers: Record<string, string> } {
  const url = `${ctx.config.publicUrl}/unsubscribe?token=${encodeURIComponent(unsubscribeToken(ctx.config, userId, kind))}`;
  return { url, headers: { 'List-Unsubscribe': `<${url}>`, 'List-Unsubscribe-Post': 'List-Unsubscribe=One-Click' } };
}

/** A notification's mail, or null when it no longer calls for one (dismissed, its post gone, the choice turned off, the person not mailable). */
async function notificationMessage(ctx: AppContext, mail: Extract<Mail, { type: 'notification' }>): Promise<Message | null> {
  const user = await findUserById(ctx.db, mail.userId);
  if (!user || !(await mailableUser(ctx.db, user.account_id))) return null;
  if (!(await emailChoices(ctx.db, user.id)).kinds[mail.kind]) return null;
  const n = await findNotification(ctx.db, user.account_id, mail.notificationId);
  if (!n || n.filtered) return null;
  const [recipient, from, status] = await Promise.all([
    findAccountById(ctx.db, user.account_id), findAccountById(ctx.db, n.from_account_id), n.status_id ? findStatus(ctx.db, n.status_id) : null,
  ]);
  if (!recipient || !from || (n.status_id && !status)) return null;
  const name = from.display_name?.trim() || from.username;
  const t = mailTranslator(ctx.config, user.locale);
  const subject = mail.kind === 'direct' ? t('subject.direct', { name }) : (titleOf(t, n.type, name) ?? name);
  const statusAuthor = status ? (status.account_id === from.id ? from : await findAccountById(ctx.db, status.account_id)) : null;
  const link = status && statusAuthor
    ? `${ctx.config.publicUrl}/@${acctOf(statusAuthor)}/${status.id}`
    : `${ctx.config.publicUrl}/@${acctOf(from)}`;
  const { url, headers } = unsubscribing(ctx, user.id, mail.kind);
  const message = await render(ctx, t, 'notification', user.email, subject, {
    username: recipient.username,
    summary: subject,
    from: `${name} (@${acctOf(from)})`,
    excerpt: status ? truncate(plainText(status.spoiler_text || status.content), 500) : '',
    link,
    linkLabel: t(status ? 'notification.view_post' : 'notification.view_profile'),
    unsubscribe: url,
    kindLabel: t(`kind.${mail.kind}`),
    settings: `${ctx.config.publicUrl}/settings/preferences/notifications`,
  });
  return { ...message, headers };
}

async function digestMessage(ctx: AppContext, mail: Extract<Mail, { type: 'notification_digest' }>): Promise<Message | null> {
  const user = await findUserById(ctx.db, mail.userId);
  if (!user || !(await mailableUser(ctx.db, user.account_id)) || !(await emailChoices(ctx.db, user.id)).digest) return null;
  const recipient = await findAccountById(ctx.db, user.account_id);
  if (!recipient) return null;
  const summary = await digestSummary(ctx.db, user.account_id, mail.afterId, mail.upToId, DIGEST_LATEST, DIGEST_COUNT_CAP);
  const total = Object.values(summary.counts).reduce((a, b) => a + b, 0);
  if (total === 0) return null;
  const t = mailTranslator(ctx.config, user.locale);
  const counts = Object.entries(summary.counts).sort((a, b) => b[1] - a[1])
    .map(([type, count]) => t(DIGEST_TYPES.has(type) ? `digest.${type}` : 'digest.other', { count }));
  const latest: string[] = [];
  for (const n of summary.latest) {
    const from = await findAccountById(ctx.db, n.from_account_id);
    const title = from ? titleOf(t, n.type, `${from.display_name?.trim() || from.username} (@${acctOf(from)})`) : null;
    if (title) latest.push(title);
  }
  const { url, headers } = unsubscribing(ctx, user.id, 'digest');
  const message = await render(ctx, t, 'notification_digest', user.email,
    t('subject.digest', { count: total, instance: ctx.config.instanceTitle }), {
      username: recipient.username, counts, latest, link: `${ctx.config.publicUrl}/notifications`, unsubscribe: url,
      settings: `${ctx.config.publicUrl}/settings/preferences/notifications`,
    });
  return { ...message, headers };
}

async function render(ctx: AppContext, t: Translate, name: Mail['type'], to: string, subject: string, data: Record<string, unknown>): Promise<Message> {
  const { html, text } = await templates();
  const it = {
    ...data,
    t,
    subject,
    instance: ctx.config.instanceTitle,
    home: ctx.config.publicUrl,
  };
  return {
    to,
    // A header is one line, whatever the instance's title holds.
    subject: subject.replace(/[\r\n]+/g, ' '),
    text: text.render(`./${name}.text.eta`, it),
    html: html.render(`./${name}.html.eta`, it),
  };
}
