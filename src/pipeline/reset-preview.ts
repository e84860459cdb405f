import type pg from 'pg';
import { answeredWith } from '../error-policy.js';
import { type Scope, scopeName } from '../load/scope.js';
import { previewReset, type ResetPreview } from '../load/window-state.js';

export type { ResetPreview } from '../load/window-state.js';

const NOTHING: ResetPreview = { windows: 0, posts: 0, from: null, to: null, cursor: null };

/** What --reset would remove from the organization now (nothing when it is not set up); reads only. */
export async function readResetPreview(pool: pg.Pool, scope: Scope): Promise<ResetPreview> {
  try {
    return await previewReset(pool, scope);
  } catch (error) {
    if (answeredWith(error, 'no such table')) return NOTHING;
    throw error;
  }
}

/** Whether a reset would remove anything at all. */
export function removesSomething(preview: ResetPreview): boolean {
  return preview.windows > 0 || preview.cursor !== null;
}

/** The sentence a person reads before a reset: every window, post, date and the cursor it removes. */
export function describeReset(scope: Scope, preview: ResetPreview): string {
  const name = scopeName(scope);
  if (!removesSomething(preview)) return `--reset: ${name} holds nothing loaded, nothing to remove`;
  const windows = `${preview.windows} ${preview.windows === 1 ? 'window' : 'windows'}`;
  const posts = `${preview.posts} ${preview.posts === 1 ? 'post' : 'posts'}`;
  const dates = preview.from === null ? '' : `, ${preview.from} to ${preview.to}`;
  const cursor = preview.cursor === null ? 'no cursor' : `the cursor (${preview.cursor})`;
  return `--reset removes from ${name} every loaded window, whatever its dates: ${windows} (${posts}${dates}), and ${cursor}`;
}
