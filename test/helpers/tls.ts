import { execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * Vitest global set-up: a certificate authority made for this run, and a certificate it signs for localhost and
 * 127.0.0.1, so test servers can be https origins on loopback (WebFinger is https-only, as on every real server).
 * Test processes trust the authority through NODE_EXTRA_CA_CERTS, which Node reads when a worker starts, so it is
 * set here, before the workers are forked.
 */
export default function setup(): () => void {
  const dir = mkdtempSync(join(tmpdir(), 'fedi-test-ca-'));
  const file = (name: string) => join(dir, name);
  const openssl = (...args: string[]) => execFileSync('openssl', args, { stdio: 'pipe' });
  openssl('req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '2', '-subj', '/CN=fedi-server test CA',
    '-keyout', file('ca.key'), '-out', file('ca.crt'), '-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign,cRLSign');
  openssl('req', '-newkey', 'rsa:2048', '-nodes', '-subj', '/CN=localhost', '-keyout', file('server.key'), '-out', file('server.csr'));
  writeFileSync(file('server.ext'), 'subjectAltName=DNS:localhost,IP:127.0.0.1\nbasicConstraints=CA:FALSE\nkeyUsage=digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth\n');
  openssl('x509', '-req', '-in', file('server.csr'), '-CA', file('ca.crt'), '-CAkey', file('ca.key'), '-CAcreateserial', '-days', '2',
    '-out', file('server.crt'), '-extfile', file('server.ext'));
  process.env.NODE_EXTRA_CA_CERTS = file('ca.crt');
  process.env.TEST_TLS_CERT_FILE = file('server.crt');
  process.env.TEST_TLS_KEY_FILE = file('server.key');
  return () => rmSync(dir, { recursive: true, force: true });
}
