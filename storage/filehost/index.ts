/**
 * Where uploaded files live. Keys are relative paths we choose (never user input);
 * drivers store bytes under a key and say at which public URL the key is served.
 */
export interface FileHost {
  put(key: string, data: Buffer, contentType: string): Promise<void>;
  /** The bytes under a key, or null when there are none. */
  get(key: string): Promise<Buffer | null>;
  delete(key: string): Promise<void>;
  url(key: string): string;
  /** Releases its connections (S3's sockets); absent where there are none. */
  close?(): void;
}
