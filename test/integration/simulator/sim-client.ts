import { isLosslessNumber, parse } from 'lossless-json';
import type { ReportParams, RunningSimulator } from '../../../src/simulator/server.js';

/** Headers of a well-formed request. */
export function headers(simulator: RunningSimulator): Record<string, string> {
  return { authorization: `Bearer ${simulator.token}`, 'content-type': 'application/json' };
}

export interface ReportHandle {
  id: string;
  status: string;
}

export async function createReport(simulator: RunningSimulator, params: ReportParams): Promise<ReportHandle> {
  const response = await fetch(`${simulator.baseUrl}/reports/posts`, {
    method: 'POST',
    headers: headers(simulator),
    body: JSON.stringify(params),
  });
  if (response.status !== 200)
    throw new Error(`creation answered ${response.status}: ${await response.text()}`);
  return (await response.json()) as ReportHandle;
}

export function reportUrl(simulator: RunningSimulator, id: string, page?: string): string {
  const base = `${simulator.baseUrl}/reports/posts/${encodeURIComponent(id)}`;
  return page === undefined ? base : `${base}?page=${encodeURIComponent(page)}`;
}

export async function getText(
  simulator: RunningSimulator,
  url: string,
): Promise<{ status: number; text: string }> {
  const response = await fetch(url, { headers: headers(simulator) });
  return { status: response.status, text: await response.text() };
}

/** Parses without ever turning a number into a JavaScript number. */
export function parseExact(text: string): unknown {
  return parse(text);
}

export function nextPageOf(page: unknown): unknown {
  const metadata = (page as { response_metadata?: unknown }).response_metadata;
  if (!Array.isArray(metadata) || metadata.length !== 1)
    throw new Error('response_metadata is not a one-item array');
  return (metadata[0] as { next_page?: unknown }).next_page;
}

/** The post ids of a page's raw text, as exact integers. */
export function idsOf(text: string, idField = 'platform_post_id'): bigint[] {
  return [...text.matchAll(new RegExp(`"${idField}":(-?\\d+)[,}]`, 'g'))].map((match) =>
    BigInt(match[1] ?? ''),
  );
}

/** Reads every page of a DONE report; returns the raw page texts. */
export async function readAllPages(simulator: RunningSimulator, id: string): Promise<string[]> {
  const pages: string[] = [];
  let page: string | undefined;
  for (;;) {
    const { status, text } = await getText(simulator, reportUrl(simulator, id, page));
    if (status !== 200) throw new Error(`page answered ${status}: ${text}`);
    pages.push(text);
    const next = nextPageOf(parseExact(text));
    if (next === null) return pages;
    if (typeof next !== 'string') throw new Error(`next_page is ${String(next)}`);
    page = next;
  }
}

/** True when a parsed value holds a null anywhere. */
export function containsNull(value: unknown): boolean {
  if (value === null) return true;
  if (isLosslessNumber(value) || typeof value !== 'object') return false;
  return Object.values(value as object).some(containsNull);
}
