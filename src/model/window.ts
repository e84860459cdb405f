/** A report window: dates YYYY-MM-DD, both inclusive. */
export interface Window {
  readonly start: string;
  readonly end: string;
}

/** A window whose rows are in the tables. */
export interface LoadedWindow extends Window {
  /** False for a window loaded open (before its last date was over): it is loaded again. Default true. */
  readonly complete?: boolean;
}

/** How a window is named in logs and messages: `start..end`. */
export function windowLabel(window: Window): string {
  return `${window.start}..${window.end}`;
}

/** Orders windows by their first date. */
export function byStart(a: Window, b: Window): number {
  return a.start < b.start ? -1 : a.start > b.start ? 1 : 0;
}

export function sameWindow(a: Window, b: Window): boolean {
  return a.start === b.start && a.end === b.end;
}

export function overlaps(a: Window, b: Window): boolean {
  return a.start <= b.end && b.start <= a.end;
}
