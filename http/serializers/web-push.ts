import type { PushSubscriptionRow } from '../../storage/web-push.ts';
import { PUSH_ALERTS } from '../../services/web-push.ts';

/** Mastodon's WebPushSubscription entity: every alert named, true or false. */
export function renderWebPushSubscription(s: PushSubscriptionRow, serverKey: string) {
  return {
    id: s.id,
    endpoint: s.endpoint,
    standard: s.standard,
    alerts: Object.fromEntries(PUSH_ALERTS.map((a) => [a, s.alerts.includes(a)])),
    server_key: serverKey,
    policy: s.policy,
  };
}
