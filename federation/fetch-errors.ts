import { FetchError, UrlError } from '@fedify/vocab-runtime';

/** What went wrong with a request to another server, in the words an operator would look for. */
export interface FetchProblem {
  /** dns, connect, tls, timeout, private-address, http, other */
  kind: 'dns' | 'connect' | 'tls' | 'timeout' | 'private-address' | 'http' | 'other';
  status: number | null;
  detail: string;
}

const TLS_CODES = /^(ERR_TLS_|CERT_|UNABLE_TO_|DEPTH_ZERO_|SELF_SIGNED_|ERR_SSL_|EPROTO$)/;

/** The innermost cause of a fetch() failure (undici wraps the socket error in a TypeError). */
function rootCause(err: unknown): { code?: string; message: string } {
  let e = err as { cause?: unknown; code?: string; message?: string } | undefined;
  for (let depth = 0; e?.cause && depth < 5; depth++) e = e.cause as typeof e;
  return { code: e?.code, message: e?.message ?? String(err) };
}

/** Classifies a failed fetch, whether from fetch() itself or from Fedify's document loaders. */
export function fetchProblem(err: unknown): FetchProblem {
  if (err instanceof FetchError && err.response) {
    const status = err.response.status;
    return { kind: 'http', status, detail: `HTTP ${status}` };
  }
  if (err instanceof UrlError) return { kind: 'private-address', status: null, detail: err.message };
  const name = (err as { name?: string })?.name;
  if (name === 'TimeoutError' || name === 'AbortError') return { kind: 'timeout', status: null, detail: 'timed out' };
  const { code, message } = rootCause(err);
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN' || code === 'EAI_NONAME') return { kind: 'dns', status: null, detail: `DNS: ${message}` };
  // A handshake cut short has a socket's code (ECONNRESET) but says what it was in its message.
  if ((code && TLS_CODES.test(code)) || /\b(TLS|SSL|certificate)\b/i.test(message)) return { kind: 'tls', status: null, detail: `TLS: ${message}` };
  if (code === 'ECONNREFUSED' || code === 'ECONNRESET' || code === 'EHOSTUNREACH' || code === 'ENETUNREACH' || code === 'UND_ERR_SOCKET') {
    return { kind: 'connect', status: null, detail: `connection failed: ${message}` };
  }
  if (code === 'UND_ERR_CONNECT_TIMEOUT' || code === 'ETIMEDOUT') return { kind: 'timeout', status: null, detail: 'timed out' };
  return { kind: 'other', status: null, detail: message };
}

/** The start of an error answer's body (servers often say there why they refused), or ''. */
export async function answerExcerpt(err: unknown, limit = 1000): Promise<string> {
  if (!(err instanceof FetchError) || !err.response) return '';
  try {
    return (await err.response.text()).slice(0, limit);
  } catch {
    return '';
  }
}
