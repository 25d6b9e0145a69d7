// The few parts of autocannon's API the benchmarks use (the package ships no types).
declare module 'autocannon' {
  interface Result {
    requests: { average: number; total: number };
    latency: { p50: number; p99: number };
    errors: number;
    non2xx: number;
    '2xx': number;
  }
  interface Tracker {
    /** Ends the run early; the callback then gets the result so far. */
    stop(): void;
  }
  interface Client {
    setHeaders(headers: Record<string, string>): void;
  }
  export default function autocannon(options: {
    url: string;
    connections: number;
    duration: number;
    method?: string;
    body?: string;
    headers?: Record<string, string>;
    /** Called for each connection before it starts: per-connection headers (a token each). */
    setupClient?: (client: Client) => void;
  }): Promise<Result>;
  /** With a callback: a run that can be stopped before its duration (duration 0: until stopped). */
  export default function autocannon(options: {
    url: string;
    connections: number;
    duration: number;
    headers?: Record<string, string>;
  }, done: (err: Error | null, result: Result) => void): Tracker;
}
