/**
 * The BullMQ classes this server uses, imported from their own files rather than the package's main entry: the main
 * entry also loads backends we never use (PostgreSQL, Bun's and Valkey GLIDE's clients, flows, sandboxes), ~1.6 MB of
 * heap and ~1.3 MB resident at rest. The package declares no `exports` map, so these paths resolve as any
 * file of it does; they are the same classes the main entry re-exports. A BullMQ upgrade that moves them fails every
 * process at start (and every job test), never quietly. Types come from the main entry (jobs/bullmq-classes.d.ts).
 */
export { Queue } from 'bullmq/dist/cjs/classes/queue.js';
export { Worker } from 'bullmq/dist/cjs/classes/worker.js';
export { UnrecoverableError } from 'bullmq/dist/cjs/classes/errors/unrecoverable-error.js';
export type { Job } from 'bullmq';
