import { DeleteObjectCommand, GetObjectCommand, NoSuchKey, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import type { FileHost } from './index.ts';

export interface S3Options {
  bucket: string;
  region: string;
  /** An S3-compatible service's URL (MinIO, R2, Garage…); empty for AWS itself. */
  endpoint: string;
  accessKeyId: string;
  secretAccessKey: string;
  /** Where the bucket's objects are publicly served (a CDN, or the bucket's own URL), without a trailing slash. */
  publicUrl: string;
  /** Bucket in the path rather than the host name, as most S3-compatible services want. */
  forcePathStyle: boolean;
}

/**
 * Files in an S3-compatible bucket. Checksums are sent only where the API requires them, so that services which do
 * not implement the newer checksum headers accept our uploads.
 */
export class S3FileHost implements FileHost {
  private readonly client: S3Client;
  private readonly options: S3Options;

  constructor(options: S3Options) {
    this.options = options;
    this.client = new S3Client({
      region: options.region,
      ...(options.endpoint ? { endpoint: options.endpoint } : {}),
      forcePathStyle: options.forcePathStyle,
      credentials: { accessKeyId: options.accessKeyId, secretAccessKey: options.secretAccessKey },
      requestChecksumCalculation: 'WHEN_REQUIRED',
      responseChecksumValidation: 'WHEN_REQUIRED',
    });
  }

  async put(key: string, data: Buffer, contentType: string): Promise<void> {
    await this.client.send(new PutObjectCommand({
      Bucket: this.options.bucket, Key: key, Body: data, ContentType: contentType,
      // Keys are never reused for other content (media ids, random names), so files may be cached for good.
      CacheControl: 'public, max-age=31536000, immutable',
    }));
  }

  async get(key: string): Promise<Buffer | null> {
    try {
      const res = await this.client.send(new GetObjectCommand({ Bucket: this.options.bucket, Key: key }));
      return res.Body ? Buffer.from(await res.Body.transformToByteArray()) : null;
    } catch (err) {
      if (err instanceof NoSuchKey || (err as { name?: string }).name === 'NoSuchKey') return null;
      throw err;
    }
  }

  async delete(key: string): Promise<void> {
    await this.client.send(new DeleteObjectCommand({ Bucket: this.options.bucket, Key: key }));
  }

  url(key: string): string {
    return `${this.options.publicUrl}/${key.split('/').map(encodeURIComponent).join('/')}`;
  }

  close(): void {
    this.client.destroy();
  }
}
