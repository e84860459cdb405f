import { describe, expect, it } from 'vitest';
import { renderMetrics } from '../../../src/cli/metrics-file.js';
import { groupUrl } from '../../../src/cli/pushgateway.js';
import { parsePrometheusText } from '../../helpers/prometheus-text.js';

describe('the Pushgateway group of a run', () => {
  it('is job/schema/organization under the root, its path kept', () => {
    const target = { schema: 'post_reports', organization: 'acme' };
    expect(groupUrl(new URL('http://gw:9091'), target).toString()).toBe(
      'http://gw:9091/metrics/job/post_reports_etl/schema/post_reports/organization/acme',
    );
    expect(groupUrl(new URL('https://monitoring.example.com/pushgateway/'), target).toString()).toBe(
      'https://monitoring.example.com/pushgateway/metrics/job/post_reports_etl/schema/post_reports/organization/acme',
    );
  });

  it('writes a value holding a slash, or empty, in base64 as the Pushgateway reads it', () => {
    const url = groupUrl(new URL('http://gw:9091'), { schema: 'a/b', organization: '' });
    expect(url.pathname).toBe(
      `/metrics/job/post_reports_etl/schema@base64/${Buffer.from('a/b').toString('base64url')}/organization@base64/=`,
    );
  });
});

describe('metrics without the grouping labels', () => {
  it('are the same samples, parsed, without schema and organization', () => {
    const target = { schema: 's', organization: 'o' };
    const run = {
      command: 'sync' as const,
      exitCode: 0,
      durationMs: 1500,
      windows: { planned: 3, loaded: 2, failed: 0, skipped: 1, interrupted: 0, notStarted: 0, byOthers: 0 },
      posts: 40,
      cursor: '2026-11-20',
    };
    const ended = new Date(Date.UTC(2026, 10, 28));
    const all = parsePrometheusText(renderMetrics(target, run, ended, undefined));
    const bare = parsePrometheusText(renderMetrics(target, run, ended, undefined, { targetLabels: false }));
    expect(bare.map((f) => f.name)).toEqual(all.map((f) => f.name));
    for (const [i, family] of bare.entries()) {
      expect(family.metrics.map((m) => m.value)).toEqual(all[i]!.metrics.map((m) => m.value));
      for (const m of family.metrics) {
        expect(Object.keys(m.labels ?? {}).filter((k) => k === 'schema' || k === 'organization')).toEqual([]);
      }
    }
  });
});
