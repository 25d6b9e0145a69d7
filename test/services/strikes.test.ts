import { describe, expect, it } from 'vitest';
import { appealRefusal } from '../../services/strikes.ts';
import type { AppealRow, StrikeRow } from '../../storage/strikes.ts';

const day = 86_400_000;
const now = new Date('2026-12-06T00:00:00Z');
const strike = (over: Partial<StrikeRow> = {}): StrikeRow => ({
  id: '1', account_id: '2', target_account_id: '3', action: 'silence', text: '', status_ids: [], report_id: null,
  overruled_at: null, created_at: new Date(now.getTime() - day), ...over,
});

describe('which strikes may be appealed', () => {
  it('one within 20 days, not overruled, not appealed yet', () => {
    expect(appealRefusal(strike(), undefined, now)).toBeNull();
    expect(appealRefusal(strike({ created_at: new Date(now.getTime() - 20 * day + 1000) }), undefined, now)).toBeNull();
    expect(appealRefusal(strike({ created_at: new Date(now.getTime() - 20 * day - 1000) }), undefined, now)).toMatch(/within 20 days/);
    expect(appealRefusal(strike({ overruled_at: now }), undefined, now)).toMatch(/overruled/);
    expect(appealRefusal(strike(), { id: '9' } as AppealRow, now)).toMatch(/already been appealed/);
  });
});
