import { inspect } from 'node:util';

const REDACTED = '[redacted]';

/**
 * A value that must never be printed. Every way of turning it into text yields `[redacted]`;
 * only `reveal()` returns it, and only the HTTP client calls that, to build the Authorization header.
 */
export class Secret {
  readonly #value: string;

  constructor(value: string) {
    this.#value = value;
  }

  reveal(): string {
    return this.#value;
  }

  toString(): string {
    return REDACTED;
  }

  toJSON(): string {
    return REDACTED;
  }

  [inspect.custom](): string {
    return REDACTED;
  }
}

/**
 * Every form a secret takes in text the connector may print: as it is, JSON-escaped (a message quoted in a log
 * line or an error's JSON), URL-encoded (a connection string), and these combined. Forms shorter than the secret
 * itself do not occur (each encodes as much as the secret or more).
 */
export function secretForms(secret: string): string[] {
  if (secret === '') return [];
  const json = (text: string) => JSON.stringify(text).slice(1, -1);
  const forms = new Set([
    secret,
    json(secret),
    json(json(secret)),
    encodeURIComponent(secret),
    encodeURI(secret),
    json(encodeURIComponent(secret)),
  ]);
  // Longest first: a form that holds another is replaced whole.
  return [...forms].sort((a, b) => b.length - a.length);
}

/**
 * Replaces every form of the secrets (secretForms) with `[redacted]`: in text, or in every string of a value (a log
 * line's fields, before they are serialized). A value without a secret is returned as it is.
 */
export class Scrubber {
  readonly #forms: readonly string[];

  constructor(secrets: Iterable<string>) {
    const forms = new Set<string>();
    for (const secret of secrets) for (const form of secretForms(secret)) forms.add(form);
    this.#forms = [...forms].sort((a, b) => b.length - a.length);
  }

  get active(): boolean {
    return this.#forms.length > 0;
  }

  text(text: string): string {
    let out = text;
    for (const form of this.#forms) if (out.includes(form)) out = out.split(form).join(REDACTED);
    return out;
  }

  /** The value with its strings scrubbed, copied only where one changed (plain objects and arrays, 8 levels). */
  value<T>(value: T, depth = 0, text: (text: string) => string = (t) => this.text(t)): T {
    if (typeof value === 'string') return text(value) as T;
    if (depth >= 8 || value === null || typeof value !== 'object' || value instanceof Secret) return value;
    if (Array.isArray(value)) {
      let copy: unknown[] | undefined;
      value.forEach((item, i) => {
        const scrubbed = this.value(item, depth + 1, text);
        if (scrubbed === item) return;
        copy ??= [...value];
        copy[i] = scrubbed;
      });
      return (copy ?? value) as T;
    }
    // Errors and class instances are left to their serializers, whose output is scrubbed in turn.
    const prototype = Object.getPrototypeOf(value);
    if (prototype !== Object.prototype && prototype !== null) return value;
    const record = value as Record<string, unknown>;
    let copy: Record<string, unknown> | undefined;
    for (const [key, item] of Object.entries(record)) {
      const scrubbed = this.value(item, depth + 1, text);
      if (scrubbed === item) continue;
      copy ??= { ...record };
      copy[key] = scrubbed;
    }
    return (copy ?? value) as T;
  }
}

/**
 * The secrets a connection string carries or brings along: its password (as given and decoded), a `?password=`
 * parameter, and PGPASSWORD of the environment, which the driver sends when the string has none.
 */
export function connectionSecrets(
  url: string,
  environment: Readonly<Record<string, string | undefined>>,
): string[] {
  const secrets = urlPasswords(url);
  try {
    for (const value of new URL(url).searchParams.getAll('password')) secrets.push(value);
  } catch {
    // An unparsable URL is reported by the driver with its own message; nothing to scrub.
  }
  const fromEnvironment = environment.PGPASSWORD;
  if (fromEnvironment !== undefined && fromEnvironment !== '') secrets.push(fromEnvironment);
  return secrets.filter((secret) => secret !== '');
}

/** The password of a URL's user information, as written and decoded; none for a URL without one or unparsable. */
export function urlPasswords(url: string): string[] {
  try {
    const { password } = new URL(url);
    if (password === '') return [];
    try {
      return [password, decodeURIComponent(password)];
    } catch {
      return [password];
    }
  } catch {
    return [];
  }
}

// C0 and C1 control characters and the bidirectional overrides: data of the API must not move a terminal's
// cursor, recolour it, set its title or reorder the text around it.
// biome-ignore lint/suspicious/noControlCharactersInRegex: the control characters are what it finds.
const TERMINAL_CONTROL = /[\u0000-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/g;

/** Text for a terminal: each control character written as its \u escape, so that it shows and does nothing. */
export function terminalSafe(text: string): string {
  return text.replace(TERMINAL_CONTROL, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}
