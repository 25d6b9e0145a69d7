// Mastodon's Admin::Measure, Admin::Dimension and Admin::Cohort entities.
import type { Cohort, DimensionResult, MeasureResult } from '../../services/admin-metrics.ts';
import { humanSize } from '../../services/admin-metrics.ts';

/** Midnight UTC of a 'YYYY-MM-DD' day, as Mastodon writes the dates of these entities. */
const midnight = (day: string) => `${day}T00:00:00.000Z`;

export function renderMeasure(m: MeasureResult) {
  const bytes = m.key === 'instance_media_attachments';
  return {
    key: m.key,
    unit: bytes ? 'bytes' : null,
    total: m.total,
    // Mastodon gives a human value only where there is a unit to show.
    ...(bytes ? { human_value: humanSize(Number(m.total)) } : {}),
    // Mastodon's instance measures total the server's whole history and have no previous period.
    ...(m.previousTotal !== null ? { previous_total: m.previousTotal } : {}),
    data: m.data.map((d) => ({ date: midnight(d.day), value: d.value })),
  };
}

export function renderDimension(d: DimensionResult) {
  return {
    key: d.key,
    data: d.data.map((x) => ({
      key: x.key,
      human_key: x.humanKey,
      value: x.value,
      ...(x.unit !== undefined ? { unit: x.unit } : {}),
      ...(x.humanValue !== undefined ? { human_value: x.humanValue } : {}),
    })),
  };
}

export function renderCohort(c: Cohort) {
  return {
    period: midnight(c.period),
    frequency: c.frequency,
    data: c.data.map((d) => ({ date: midnight(d.date), rate: d.rate, value: d.value })),
  };
}
