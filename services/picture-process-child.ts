// The child process of services/picture-process.ts: renders the pictures it is sent, at the lowest CPU priority.
// Nice 19 is set before sharp is loaded, so every thread sharp and libuv make here inherits it.
import { setPriority } from 'node:os';

try {
  setPriority(19);
} catch {
  // Raising one's own nice value is always allowed on Linux; elsewhere the work is still out of the parent's threads.
}

const { renderImage, Undecodable } = await import('./image-rendering.ts');
// One picture at a time comes here: one libvips thread for it (fewer threads, fewer malloc arenas kept).
(await import('sharp')).default.concurrency(1);

/** Ends itself once its parent has sent nothing for this long, or at once when the parent goes. */
const IDLE_MS = Number(process.env.PICTURE_PROCESS_IDLE_MS ?? 30_000);
let idle = setTimeout(() => process.exit(0), IDLE_MS);
process.on('disconnect', () => process.exit(0));

process.on('message', (message: { id: number; input: Uint8Array }) => {
  clearTimeout(idle);
  idle = setTimeout(() => process.exit(0), IDLE_MS);
  renderImage(Buffer.from(message.input.buffer, message.input.byteOffset, message.input.byteLength)).then(
    (image) => process.send!({ id: message.id, image }),
    (err: unknown) => process.send!({ id: message.id, error: { undecodable: err instanceof Undecodable, message: (err as Error).message ?? String(err) } }),
  );
});
process.send!({ ready: true });
