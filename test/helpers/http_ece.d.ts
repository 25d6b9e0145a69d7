// http_ece (web-push's encryption, RFC 8188/8291) ships no types; what the tests use of it.
declare module 'http_ece' {
  import type { ECDH } from 'node:crypto';
  interface EceParams {
    version?: 'aes128gcm' | 'aesgcm';
    privateKey?: ECDH;
    authSecret?: string | Buffer;
    dh?: string | Buffer;
    salt?: string | Buffer;
  }
  export function decrypt(buffer: Buffer, params: EceParams): Buffer;
  export function encrypt(buffer: Buffer, params: EceParams): Buffer;
}
