/**
 * Live stream deliveries under way in this process (http/serializers/stream-payloads.ts), for work that can wait for
 * them. Where one process holds streaming sockets and also writes home feeds (ROLE=all), a post's feed writes (a
 * thousand actors' messages) would otherwise run between its events' writes to sockets, and people watching a
 * socket would wait for feeds that are only read when someone asks for them.
 */
export class LiveDeliveries {
  private active = 0;
  private waiting: (() => void)[] = [];

  /** A status's events are being rendered and written; always paired with `end`. */
  begin(): void {
    this.active += 1;
  }

  end(): void {
    if (this.active === 0 || --this.active > 0) return;
    const waiting = this.waiting;
    this.waiting = [];
    for (const go of waiting) go();
  }

  get busy(): boolean {
    return this.active > 0;
  }

  /** Resolves once no delivery is under way, or after `maxWaitMs` (a steady stream of posts keeps it busy). */
  idle(maxWaitMs: number): Promise<void> {
    if (this.active === 0) return Promise.resolve();
    return new Promise((resolve) => {
      const go = () => {
        clearTimeout(timer);
        resolve();
      };
      const timer = setTimeout(() => {
        this.waiting = this.waiting.filter((w) => w !== go);
        resolve();
      }, maxWaitMs);
      this.waiting.push(go);
    });
  }
}
