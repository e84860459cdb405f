/**
 * Duplicate live requests: a window whose report two processes of one run were working on at overlapping times.
 * With window claims, a process meeting a window another one holds waits for it and, if the other loaded it,
 * leaves it alone: two processes may load the same window one after the other, never at once.
 */

/** One API call as the recording proxy saw it (times from performance.now(), in the proxy's process). */
export interface ApiCall {
  /** The process that made it: each process of a run talks to the API through a proxy port of its own. */
  readonly client: number;
  readonly method: string;
  /** The path, without the query. */
  readonly path: string;
  /** `start..end` of a creation call's body; for a report read, the window its report was created for. */
  readonly window: string | null;
  /** The report a creation call was answered with, or the report a read asked for. */
  readonly reportId: string | null;
  /** When the request arrived. */
  readonly startMs: number;
  /** When its response was handed back whole; its arrival when the client went away first or it was cut. */
  readonly endMs: number;
}

/** A stretch of time one process spent on one window: a creation call, or a report from creation to last read. */
export interface LiveSpan {
  readonly client: number;
  readonly window: string;
  readonly reportId: string | null;
  readonly startMs: number;
  readonly endMs: number;
}

export interface DuplicateLiveWindow {
  readonly window: string;
  /** The first pair of overlapping spans found, by different processes. */
  readonly spans: readonly [LiveSpan, LiveSpan];
}

/**
 * Each process's spans per window: one per report it used (from the creation call answered with it, or its first
 * read when it resumed a report created before, to its last read), and one per creation call answered without a
 * report (a 429, a 503, a cut connection). Calls with no window (the dimensions) are left out.
 */
export function liveSpans(calls: readonly ApiCall[]): LiveSpan[] {
  const byReport = new Map<string, LiveSpan>();
  const spans: LiveSpan[] = [];
  for (const call of calls) {
    if (call.window === null) continue;
    if (call.reportId === null) {
      spans.push({ ...pick(call), window: call.window, reportId: null });
      continue;
    }
    const key = `${call.client}\u0000${call.reportId}`;
    const known = byReport.get(key);
    byReport.set(key, {
      client: call.client,
      window: call.window,
      reportId: call.reportId,
      startMs: Math.min(known?.startMs ?? call.startMs, call.startMs),
      endMs: Math.max(known?.endMs ?? call.endMs, call.endMs),
    });
  }
  return [...spans, ...byReport.values()];
}

function pick(call: ApiCall): { client: number; startMs: number; endMs: number } {
  return { client: call.client, startMs: call.startMs, endMs: call.endMs };
}

/** The windows (of one run's calls) on which two processes were live at once. */
export function duplicateLiveWindows(calls: readonly ApiCall[]): DuplicateLiveWindow[] {
  const byWindow = new Map<string, LiveSpan[]>();
  for (const span of liveSpans(calls))
    byWindow.set(span.window, [...(byWindow.get(span.window) ?? []), span]);
  const duplicates: DuplicateLiveWindow[] = [];
  for (const [window, spans] of byWindow) {
    const pair = overlappingPair(spans);
    if (pair !== null) duplicates.push({ window, spans: pair });
  }
  return duplicates.sort((a, b) => a.window.localeCompare(b.window));
}

function overlappingPair(spans: readonly LiveSpan[]): [LiveSpan, LiveSpan] | null {
  const sorted = [...spans].sort((a, b) => a.startMs - b.startMs);
  for (const [i, a] of sorted.entries()) {
    for (const b of sorted.slice(i + 1)) {
      if (b.startMs >= a.endMs) break;
      if (b.client !== a.client) return [a, b];
    }
  }
  return null;
}

/** One line for a report: which processes, which reports, when (ms from the run's first call). */
export function describeDuplicate(duplicate: DuplicateLiveWindow, originMs: number): string {
  const span = (s: LiveSpan) =>
    `process ${s.client} ${s.reportId === null ? 'creation call' : `report ${s.reportId}`} ${Math.round(s.startMs - originMs)}..${Math.round(s.endMs - originMs)} ms`;
  const [a, b] = duplicate.spans;
  return `duplicate live request: window ${duplicate.window} worked on by ${span(a)} and ${span(b)}`;
}
