import { Writable } from 'node:stream';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { LiveProgress } from '../../../src/cli/live-progress.js';

/** A terminal: a TTY stream that keeps what is drawn, escape sequences included. */
function fakeTerminal(): { stream: NodeJS.WriteStream; drawn: () => string } {
  let text = '';
  const stream = new Writable({
    write(chunk: Buffer | string, _encoding, callback) {
      text += chunk.toString();
      callback();
    },
  });
  Object.assign(stream, { isTTY: true, columns: 120 });
  return { stream: stream as unknown as NodeJS.WriteStream, drawn: () => text };
}

const w = (start: string) => ({ start, end: start });

describe('LiveProgress', () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('draws no bar before the windows are known, then an empty one, and prints log lines meanwhile', () => {
    const terminal = fakeTerminal();
    const live = new LiveProgress(terminal.stream);
    live.logSink.write('{"msg":"migration applied"}\n');
    // Migrations and planning take a while: the bar's redraw timer fires meanwhile.
    vi.advanceTimersByTime(2000);
    expect(terminal.drawn()).toContain('{"msg":"migration applied"}');
    expect(terminal.drawn()).not.toContain('windows');

    live.onProgress({ type: 'planned', windows: 5, skipped: 0 });
    vi.advanceTimersByTime(1000);
    live.onProgress({ type: 'page-staged', window: w('2026-01-05'), posts: 350 });
    live.onProgress({ type: 'window-loaded', window: w('2026-01-05'), posts: 350, durationMs: 10 });
    live.stop();

    const drawn = terminal.drawn();
    expect(drawn).not.toContain('0/0 windows');
    // The first bar drawn is empty at 0 of 5, the last one has a fifth done.
    expect(drawn).toMatch(/ ░{24} 0\/5 windows \| 0 posts/);
    expect(drawn).toMatch(/ █{4,5}░{19,20} 1\/5 windows \| 350 posts/);
    expect(drawn.indexOf('0/5 windows')).toBeLessThan(drawn.indexOf('1/5 windows'));
  });

  it('draws a bar for each organization of a run of several, named, its names lined up', () => {
    const terminal = fakeTerminal();
    const live = new LiveProgress(terminal.stream);
    const onProgress = live.organizations(['acme', 'globex_eu']);
    onProgress('acme', { type: 'planned', windows: 4, skipped: 0 });
    onProgress('globex_eu', { type: 'planned', windows: 2, skipped: 0 });
    vi.advanceTimersByTime(1000);
    onProgress('globex_eu', { type: 'page-staged', window: w('2026-01-05'), posts: 70 });
    onProgress('globex_eu', { type: 'window-loaded', window: w('2026-01-05'), posts: 70, durationMs: 10 });
    live.stop();

    const drawn = terminal.drawn();
    expect(drawn).toMatch(/ acme {6}░{24} 0\/4 windows \| 0 posts/);
    expect(drawn).toMatch(/ globex_eu █{12}░{12} 1\/2 windows \| 70 posts/);
  });
});
