import type { IncomingMessage, ServerResponse } from 'node:http';

/** Largest accepted request body. */
export const MAX_BODY_BYTES = 1024 * 1024;

/** The request body could not be read completely. */
export class BodyError extends Error {
  override readonly name = 'BodyError';

  constructor(
    readonly status: 400 | 413,
    message: string,
    /** True when the rest of the body was not drained: the connection must be cut. */
    readonly cut: boolean,
  ) {
    super(message);
  }
}

/**
 * Reads the whole body, refusing more than `limit` bytes. An oversized body is drained (discarded) up to
 * `drainLimit` so the client can read the 413 instead of failing on a reset connection.
 */
export async function readBody(request: IncomingMessage, limit: number, drainLimit: number): Promise<Buffer> {
  const declared = Number(request.headers['content-length']);
  const tooLarge = (size: number) => `the request body of ${size} bytes exceeds ${limit} bytes`;
  if (Number.isFinite(declared) && declared > drainLimit) throw new BodyError(413, tooLarge(declared), true);
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of request) {
    const buffer = chunk as Buffer;
    size += buffer.length;
    if (size > drainLimit) throw new BodyError(413, tooLarge(size), true);
    if (size <= limit) chunks.push(buffer);
  }
  if (size > limit) throw new BodyError(413, tooLarge(size), false);
  return Buffer.concat(chunks);
}

/** Sends a complete response; a socket already gone is not an error worth reporting. */
export function send(
  response: ServerResponse,
  status: number,
  contentType: string,
  text: string,
  headers: Readonly<Record<string, string>> = {},
): void {
  if (response.headersSent || response.destroyed) return;
  const body = Buffer.from(text, 'utf8');
  response.writeHead(status, {
    'content-type': contentType,
    'content-length': String(body.length),
    'cache-control': 'no-store',
    ...headers,
  });
  response.end(body);
}

export function sendJson(
  response: ServerResponse,
  status: number,
  text: string,
  headers: Readonly<Record<string, string>> = {},
): void {
  send(response, status, 'application/json; charset=utf-8', text, headers);
}

/**
 * How error bodies are shaped: `{"error":{"code","message"}}` (`object`, the default), the message as plain text,
 * `[{"code","message"}]`, or no body at all. The v4 spec does not show the error body's shape.
 */
export const ERROR_BODY_SHAPES = ['object', 'text', 'array', 'empty'] as const;
export type ErrorBodyShape = (typeof ERROR_BODY_SHAPES)[number];

/** An error with its code and message, in the body shape asked for. */
export function sendError(
  response: ServerResponse,
  status: number,
  code: string,
  message: string,
  headers: Readonly<Record<string, string>> = {},
  shape: ErrorBodyShape = 'object',
): void {
  if (shape === 'text') send(response, status, 'text/plain; charset=utf-8', message, headers);
  else if (shape === 'empty') send(response, status, 'text/plain; charset=utf-8', '', headers);
  else if (shape === 'array') sendJson(response, status, JSON.stringify([{ code, message }]), headers);
  else sendJson(response, status, JSON.stringify({ error: { code, message } }), headers);
}
