import { describe, expect, it } from 'vitest';
import { ReportReadiness } from '../../../src/extract/report-readiness.js';

describe('ReportReadiness', () => {
  it('aims nowhere before a report was seen DONE', () => {
    expect(new ReportReadiness().nextAimMs(0)).toBeUndefined();
  });

  it('aims at the soonest of the recent reports, then twice more a fortieth of it later, then no more', () => {
    const readiness = new ReportReadiness();
    readiness.observe(2400);
    readiness.observe(2000);
    readiness.observe(2200);
    expect(readiness.nextAimMs(0)).toBe(2000);
    expect(readiness.nextAimMs(1999)).toBe(2000);
    expect(readiness.nextAimMs(2000)).toBe(2050);
    expect(readiness.nextAimMs(2060)).toBe(2100);
    expect(readiness.nextAimMs(2100)).toBeUndefined();
  });

  it('steps at least 20 ms apart for quick reports', () => {
    const readiness = new ReportReadiness();
    readiness.observe(100);
    expect(readiness.nextAimMs(100)).toBe(120);
    expect(readiness.nextAimMs(120)).toBe(140);
  });

  it('follows the run: a sooner report lowers the aim at once, old ones are forgotten after 16 newer', () => {
    const readiness = new ReportReadiness();
    readiness.observe(5000);
    readiness.observe(3000);
    expect(readiness.nextAimMs(0)).toBe(3000);
    for (let i = 0; i < 15; i++) readiness.observe(4000 + i);
    expect(readiness.nextAimMs(0)).toBe(3000);
    readiness.observe(4100);
    expect(readiness.nextAimMs(0)).toBe(4000);
  });
});
