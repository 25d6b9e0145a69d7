// The files jobs/bullmq.ts imports BullMQ's classes from carry no declarations of their own (the package ships them
// for its main entry only): the classes are the ones the main entry exports.
declare module 'bullmq/dist/cjs/classes/queue.js' {
  export { Queue } from 'bullmq';
}
declare module 'bullmq/dist/cjs/classes/worker.js' {
  export { Worker } from 'bullmq';
}
declare module 'bullmq/dist/cjs/classes/errors/unrecoverable-error.js' {
  export { UnrecoverableError } from 'bullmq';
}
