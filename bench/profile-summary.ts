/*
 * Summarizes a V8 CPU profile (.cpuprofile, from node --cpu-prof) of the load path into the steps that matter
 * for choosing the next optimization. Each sample is charged to the nearest frame, from the leaf up, that belongs
 * to a known step: native JSON.parse called by parseExactJson counts as parsing, a pg driver frame called by
 * the loader counts as the driver. Parsing is split in two: pages parsed whole by lossless-json (the exact
 * parser's fallback) and the rest (the scan, native JSON.parse and the walk that revives exact numbers); writing
 * nested values back to JSON text, which lives beside the parser, is a step of its own.
 */

interface CallFrame {
  readonly functionName: string;
  readonly url: string;
  readonly lineNumber: number;
}

interface ProfileNode {
  readonly id: number;
  readonly callFrame: CallFrame;
  readonly children?: readonly number[];
}

export interface CpuProfile {
  readonly nodes: readonly ProfileNode[];
  readonly startTime: number;
  readonly endTime: number;
  readonly samples: readonly number[];
  readonly timeDeltas: readonly number[];
}

export interface ProfileSummary {
  readonly totalMs: number;
  /** Milliseconds per step, largest first. */
  readonly steps: readonly { step: string; ms: number; share: number }[];
  /** The functions with the most self time (outside idle). */
  readonly hottest: readonly { fn: string; ms: number }[];
}

const STEPS: readonly { step: string; test: (frame: CallFrame) => boolean }[] = [
  { step: 'idle: waiting for PostgreSQL or the API', test: (f) => f.functionName === '(idle)' },
  { step: 'garbage collection', test: (f) => f.functionName === '(garbage collector)' },
  // Before exact JSON: the whole-page fallback is the parse's slow path, and is told apart from the fast one.
  // lossless-json's helpers (utils.js, numbers) serve both its parse and its stringify: their callers decide.
  {
    step: 'parse (exact JSON): lossless-json, whole pages',
    test: (f) =>
      /\/lossless-json\/lib\/[^/]+\/parse\.js$/.test(f.url) ||
      (f.url.endsWith('/api/exact-json.js') && /^(parseLosslessly|parseNumberExactly)$/.test(f.functionName)),
  },
  // Writing nested values back to JSON text lives in exact-json.js too, but is no parse.
  {
    step: 'nested documents (exact JSON text)',
    test: (f) =>
      /\/lossless-json\/lib\/[^/]+\/stringify\.js$/.test(f.url) ||
      (f.url.endsWith('/api/exact-json.js') && /^(stringifyExactJson|stringifyParsed)$/.test(f.functionName)),
  },
  { step: 'parse (exact JSON)', test: (f) => f.url.endsWith('/api/exact-json.js') },
  { step: 'map (records → rows)', test: (f) => f.url.includes('/extract/record-mapping.js') },
  // The one pass from a page's text to its tape (the full way's parse and map are the steps above).
  { step: 'decode (page text → tape)', test: (f) => f.url.includes('/extract/page-decoder.js') },
  {
    step: 'encode (COPY text)',
    test: (f) => /\/load\/(copy-encoding|tape-encoding|copy-buffer)\.js/.test(f.url),
  },
  {
    step: 'type planning (schema evolution)',
    test: (f) => /\/load\/(schema-evolution|field-types)\.js/.test(f.url),
  },
  {
    step: 'pg driver and COPY stream',
    test: (f) => /node_modules\/(pg|pg-protocol|pg-copy-streams|pg-pool)\//.test(f.url),
  },
  { step: 'HTTP (fetch)', test: (f) => /undici|\/api\/client\.js/.test(f.url) },
  { step: 'logging', test: (f) => /node_modules\/(pino|thread-stream|sonic-boom)/.test(f.url) },
  { step: 'node start-up and module loading', test: (f) => /internal\/modules\//.test(f.url) },
];

function stepOf(frame: CallFrame): string | undefined {
  for (const { step, test } of STEPS) if (test(frame)) return step;
  return undefined;
}

function frameName(frame: CallFrame): string {
  const file = frame.url.split('/').slice(-2).join('/');
  return `${frame.functionName || '(anonymous)'} ${file ? `${file}:${frame.lineNumber + 1}` : '(native)'}`;
}

/** Charges every sample to a step and returns the steps with their time. */
export function summarizeProfile(profile: CpuProfile): ProfileSummary {
  const byId = new Map<number, ProfileNode>();
  const parent = new Map<number, number>();
  for (const node of profile.nodes) {
    byId.set(node.id, node);
    for (const child of node.children ?? []) parent.set(child, node.id);
  }
  const stepCache = new Map<number, string>();
  const stepOfNode = (id: number): string => {
    const cached = stepCache.get(id);
    if (cached !== undefined) return cached;
    let step: string | undefined;
    for (let at: number | undefined = id; at !== undefined && step === undefined; at = parent.get(at)) {
      const node = byId.get(at);
      if (node) step = stepOf(node.callFrame);
    }
    const found = step ?? 'other JavaScript (loader, pipeline, node internals)';
    stepCache.set(id, found);
    return found;
  };
  const stepUs = new Map<string, number>();
  const selfUs = new Map<string, number>();
  let totalUs = 0;
  for (let i = 0; i < profile.samples.length; i++) {
    const id = profile.samples[i]!;
    // V8 writes the delta before sample i; the time up to the next sample belongs to sample i.
    const us = profile.timeDeltas[i + 1] ?? 0;
    totalUs += us;
    const step = stepOfNode(id);
    stepUs.set(step, (stepUs.get(step) ?? 0) + us);
    const node = byId.get(id);
    if (node && node.callFrame.functionName !== '(idle)') {
      const name = frameName(node.callFrame);
      selfUs.set(name, (selfUs.get(name) ?? 0) + us);
    }
  }
  const steps = [...stepUs]
    .map(([step, us]) => ({ step, ms: us / 1000, share: totalUs > 0 ? us / totalUs : 0 }))
    .sort((a, b) => b.ms - a.ms);
  const hottest = [...selfUs]
    .map(([fn, us]) => ({ fn, ms: us / 1000 }))
    .sort((a, b) => b.ms - a.ms)
    .slice(0, 12);
  return { totalMs: totalUs / 1000, steps, hottest };
}
