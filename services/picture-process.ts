import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { Undecodable, type RenderedImage } from './image-rendering.ts';
import { idleSchedulingWorks, machineWrappers } from './media-tools.ts';

/**
 * Pictures rendered in a child process at the lowest CPU priority (the idle scheduling class where it may, and nice
 * 19), for work nobody waits on: the copies of
 * other servers' attachments made in the background. Decoding and encoding a picture takes a core for a moment; in
 * the web process's threads it competed with requests for the cores and the event loop (a stream of copies cost home
 * reads a third to a half of their rate on two cores, bench:remote-media). At nice 19 it gets only what requests
 * leave idle. The child is started at the first picture and ends itself after 30 s without one (it is about 90 MB
 * resident, more after large photos), and when this process goes.
 */
export class PictureProcess {
  private child: ChildProcess | null = null;
  private ready: Promise<ChildProcess> | null = null;
  private readonly pending = new Map<number, { resolve(image: RenderedImage): void; reject(err: Error): void; timer: NodeJS.Timeout }>();
  private seq = 0;
  private readonly timeoutMs: number;

  constructor(timeoutMs = 60_000) {
    this.timeoutMs = timeoutMs;
  }

  /** What renderImage makes of `input`; Undecodable when sharp cannot read it. */
  async render(input: Buffer): Promise<RenderedImage> {
    const child = await this.start();
    const id = ++this.seq;
    return new Promise<RenderedImage>((resolve, reject) => {
      // A picture that takes this long is stuck: the child is ended, and what it had is failed (jobs try again).
      const timer = setTimeout(() => this.end(new Error(`the picture process took longer than ${this.timeoutMs / 1000} s`)), this.timeoutMs);
      this.pending.set(id, { resolve, reject, timer });
      this.hold(true);
      child.send({ id, input }, (err) => {
        if (err) this.settle(id, { error: { undecodable: false, message: err.message } });
      });
    });
  }

  close(): void {
    this.end(new Error('the picture process was closed'));
  }

  private start(): Promise<ChildProcess> {
    this.ready ??= this.spawn();
    return this.ready;
  }

  private async spawn(): Promise<ChildProcess> {
    // In the idle scheduling class where chrt may put it there (as ffmpeg's encodes are: services/media-tools.ts), so
    // that a request's thread waking up never waits behind it; nice 19 either way (set by the child itself).
    const { chrt } = machineWrappers();
    const idle = chrt && (await idleSchedulingWorks(chrt)) ? chrt : null;
    const child = fork(fileURLToPath(new URL('./picture-process-child.ts', import.meta.url)), [], {
      ...(idle ? { execPath: idle, execArgv: ['--idle', '0', process.execPath] } : { execArgv: [] }),
      // Two malloc arenas, as `npm start` runs the server: glibc's default (8 a core) keeps freed pixel buffers around.
      serialization: 'advanced', stdio: ['ignore', 'inherit', 'inherit', 'ipc'], env: { ...process.env, MALLOC_ARENA_MAX: '2' },
    });
    this.child = child;
    const ready = new Promise<ChildProcess>((resolve, reject) => {
      const failed = (err: Error) => reject(err);
      child.once('error', failed);
      child.once('message', () => {
        child.off('error', failed);
        resolve(child);
        // Held while it starts (the caller waits on it); from now on only while a picture is out (render refs it again
        // in the same turn).
        if (this.pending.size === 0) this.hold(false);
      });
      child.once('exit', () => reject(new Error('the picture process ended before it was ready')));
    });
    ready.catch(() => {});
    child.on('message', (m: { id?: number; image?: RenderedImage; error?: { undecodable: boolean; message: string } }) => {
      if (m.id !== undefined) this.settle(m.id, m);
    });
    child.on('error', () => {});
    child.once('exit', () => {
      if (this.child === child) this.forget(new Error('the picture process ended'));
    });
    return ready;
  }

  private settle(id: number, m: { image?: RenderedImage; error?: { undecodable: boolean; message: string } }): void {
    const p = this.pending.get(id);
    if (!p) return;
    this.pending.delete(id);
    clearTimeout(p.timer);
    if (m.image) {
      // Sent as Uint8Arrays: made Buffers again, as renderImage returns them.
      const { original, small } = m.image;
      p.resolve({ ...m.image, original: { ...original, data: Buffer.from(original.data) }, small: { ...small, data: Buffer.from(small.data) } });
    } else {
      p.reject(m.error?.undecodable ? new Undecodable(m.error.message) : new Error(m.error?.message ?? 'the picture process failed'));
    }
    if (this.pending.size === 0) this.hold(false);
  }

  /** Keeps this process running while a picture is out, and not otherwise. */
  private hold(on: boolean): void {
    const child = this.child as (ChildProcess & { channel?: { ref(): void; unref(): void } }) | null;
    if (!child) return;
    if (on) {
      child.ref();
      child.channel?.ref();
    } else {
      child.unref();
      child.channel?.unref();
    }
  }

  private end(err: Error): void {
    const child = this.child;
    this.forget(err);
    child?.kill('SIGKILL');
  }

  private forget(err: Error): void {
    this.child = null;
    this.ready = null;
    for (const [id, p] of this.pending) {
      this.pending.delete(id);
      clearTimeout(p.timer);
      p.reject(err);
    }
  }
}

/** This process's picture process, started at its first use. */
export const backgroundPictures = new PictureProcess();
