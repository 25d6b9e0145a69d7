import { describe, expect, it } from 'vitest';
import { ReplyError } from 'ioredis';
import { unavailableDependency } from '../../storage/dependencies.ts';

// Errors that mean a dependency is away (answered 503 with Retry-After) rather than a bad request (4xx) or a bug.
describe('unavailableDependency', () => {
  it('reads Redis being away, restarting or failing over as unavailability', () => {
    for (const message of [
      'Connection is closed.',
      "Stream isn't writeable and enableOfflineQueue options is false",
      'LOADING Redis is loading the dataset in memory',
      'MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to \'no\'.',
      "READONLY You can't write against a read only replica.",
      'CLUSTERDOWN The cluster is down',
      'TRYAGAIN Multiple keys request during rehashing of slot',
      'Too many Cluster redirections. Last error: Error: Connection is closed.',
      'MOVED 5540 127.0.0.1:43893',
      'ASK 5540 127.0.0.1:43893',
      'Command aborted due to connection close',
      "Cluster isn't ready and enableOfflineQueue options is false",
      'Failed to refresh slots cache.',
    ]) expect(unavailableDependency(new ReplyError(message)), message).toBe('redis');
  });

  it('leaves a request\'s own errors alone', () => {
    expect(unavailableDependency(new ReplyError('WRONGTYPE Operation against a key holding the wrong kind of value'))).toBeNull();
    expect(unavailableDependency(new ReplyError('ERR unknown command'))).toBeNull();
    expect(unavailableDependency(new Error('LOADINGS of fun'))).toBeNull();
    // A cross-slot command is a bug of ours, shown as one (500), not an outage.
    expect(unavailableDependency(new Error('All the keys in a pipeline command should belong to the same slot'))).toBeNull();
    expect(unavailableDependency(new ReplyError("CROSSSLOT Keys in request don't hash to the same slot"))).toBeNull();
  });
});
