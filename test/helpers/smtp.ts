// A real SMTP server on loopback (smtp-server) that keeps what it receives, for tests of outgoing mail. No TLS, no
// login. Messages are parsed just enough to read them: headers, subject, and the text/plain and text/html parts.
import type { AddressInfo } from 'node:net';
import { SMTPServer } from 'smtp-server';

export interface ReceivedMail {
  /** The envelope: MAIL FROM and RCPT TO, as the client sent them. */
  envelopeFrom: string;
  envelopeTo: string[];
  /** Header fields by lower-case name (the first of each; unfolded; encoded words decoded). */
  headers: Map<string, string>;
  subject: string;
  text: string;
  html: string;
  raw: string;
}

export interface TestSmtp {
  port: number;
  /** smtp://127.0.0.1:<port> */
  url: string;
  messages: ReceivedMail[];
  /** RCPT TO attempts by address (lower-case), refused ones included. */
  recipientAttempts: Map<string, number>;
  /** Addresses refused at RCPT TO with a 550, as a server refuses a mailbox that does not exist. */
  refuse: Set<string>;
  /** Resolves with the first message (received already or later) that `match` accepts. */
  waitFor(match: (m: ReceivedMail) => boolean, timeoutMs?: number): Promise<ReceivedMail>;
  /** Stops listening (connections are then refused), as an SMTP server that is down. */
  stop(): Promise<void>;
  /** Listens again on the same port. */
  start(): Promise<void>;
}

export async function startSmtp(): Promise<TestSmtp> {
  let server: SMTPServer | null = null;
  let port = 0;
  const messages: ReceivedMail[] = [];
  const recipientAttempts = new Map<string, number>();
  const refuse = new Set<string>();
  const waiters = new Set<() => void>();

  const make = () => new SMTPServer({
    secure: false,
    disabledCommands: ['STARTTLS', 'AUTH'],
    authOptional: true,
    logger: false,
    banner: 'test SMTP server',
    onRcptTo(address, _session, callback) {
      const a = address.address.toLowerCase();
      recipientAttempts.set(a, (recipientAttempts.get(a) ?? 0) + 1);
      if (refuse.has(a)) return callback(Object.assign(new Error('5.1.1 No such mailbox here'), { responseCode: 550 }));
      callback();
    },
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('end', () => {
        const raw = Buffer.concat(chunks).toString('utf8');
        messages.push({
          ...parseMessage(raw),
          envelopeFrom: session.envelope.mailFrom ? session.envelope.mailFrom.address : '',
          envelopeTo: session.envelope.rcptTo.map((r) => r.address),
        });
        for (const w of waiters) w();
        callback();
      });
    },
  });

  const start = () => new Promise<void>((resolve, reject) => {
    const s = make();
    s.on('error', () => {});
    const net = s.listen(port, '127.0.0.1', () => {
      port = (net.address() as AddressInfo).port;
      server = s;
      resolve();
    });
    net.once('error', reject);
  });
  const stop = () => new Promise<void>((resolve) => {
    const s = server;
    server = null;
    if (!s) return resolve();
    s.close(() => resolve());
  });
  await start();

  return {
    port,
    url: `smtp://127.0.0.1:${port}`,
    messages,
    recipientAttempts,
    refuse,
    start,
    stop,
    waitFor(match, timeoutMs = 5000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          const found = messages.find(match);
          if (!found) return false;
          waiters.delete(check);
          clearTimeout(timer);
          resolve(found);
          return true;
        };
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(new Error(`no such mail within ${timeoutMs} ms; received: ${messages.map((m) => `${m.envelopeTo.join(',')}: ${m.subject}`).join(' | ') || 'none'}`));
        }, timeoutMs);
        if (!check()) waiters.add(check);
      });
    },
  };
}

interface Part {
  headers: Map<string, string>;
  body: string;
}

function splitHeaders(raw: string): Part {
  const at = raw.search(/\r?\n\r?\n/);
  const head = at < 0 ? raw : raw.slice(0, at);
  const body = at < 0 ? '' : raw.slice(at).replace(/^\r?\n\r?\n/, '');
  const headers = new Map<string, string>();
  for (const line of head.replace(/\r?\n[ \t]+/g, ' ').split(/\r?\n/)) {
    const colon = line.indexOf(':');
    if (colon <= 0) continue;
    const name = line.slice(0, colon).trim().toLowerCase();
    if (!headers.has(name)) headers.set(name, decodeWords(line.slice(colon + 1).trim()));
  }
  return { headers, body };
}

/** RFC 2047 encoded words (`=?utf-8?Q?…?=`, `=?utf-8?B?…?=`); the space between two of them is dropped. */
function decodeWords(value: string): string {
  return value
    .replace(/(\?=)\s+(=\?)/g, '$1$2')
    .replace(/=\?([^?]+)\?([bBqQ])\?([^?]*)\?=/g, (_all, _charset: string, enc: string, text: string) =>
      enc.toUpperCase() === 'B'
        ? Buffer.from(text, 'base64').toString('utf8')
        : decodeQuotedPrintable(text.replace(/_/g, ' ')));
}

function decodeQuotedPrintable(text: string): string {
  const bytes: number[] = [];
  const s = text.replace(/=\r?\n/g, '');
  for (let i = 0; i < s.length; i++) {
    if (s[i] === '=' && /^[0-9A-Fa-f]{2}$/.test(s.slice(i + 1, i + 3))) {
      bytes.push(parseInt(s.slice(i + 1, i + 3), 16));
      i += 2;
    } else {
      bytes.push(...Buffer.from(s[i]!, 'utf8'));
    }
  }
  return Buffer.from(bytes).toString('utf8');
}

function decodeBody(part: Part): string {
  const encoding = (part.headers.get('content-transfer-encoding') ?? '7bit').toLowerCase();
  if (encoding === 'base64') return Buffer.from(part.body.replace(/\s+/g, ''), 'base64').toString('utf8');
  if (encoding === 'quoted-printable') return decodeQuotedPrintable(part.body);
  return part.body;
}

/** The text and HTML of a message, from its parts however nested (multipart/alternative, mixed, related). */
function collect(part: Part, into: { text: string; html: string }): void {
  const type = part.headers.get('content-type') ?? 'text/plain';
  const boundary = /boundary="?([^";]+)"?/i.exec(type)?.[1];
  if (/^multipart\//i.test(type) && boundary) {
    const sections = part.body.split(new RegExp(`\\r?\\n?--${boundary.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}(?:--)?[ \\t]*\\r?\\n?`));
    for (const section of sections.slice(1)) {
      if (section.trim() === '') continue;
      collect(splitHeaders(section), into);
    }
    return;
  }
  if (/^text\/html/i.test(type)) into.html += decodeBody(part);
  else if (/^text\/plain/i.test(type)) into.text += decodeBody(part);
}

export function parseMessage(raw: string): Omit<ReceivedMail, 'envelopeFrom' | 'envelopeTo'> {
  const top = splitHeaders(raw);
  const parts = { text: '', html: '' };
  collect(top, parts);
  return { headers: top.headers, subject: top.headers.get('subject') ?? '', text: parts.text, html: parts.html, raw };
}
