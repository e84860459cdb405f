/** The median of at least one value. */
export function median(values: readonly number[]): number {
  if (values.length === 0) throw new RangeError('median of no values');
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
}

/** Runs `fn` `times` times one after another and returns every result. */
export async function repeat<T>(times: number, fn: (rep: number) => Promise<T>): Promise<T[]> {
  const out: T[] = [];
  for (let rep = 0; rep < times; rep++) out.push(await fn(rep));
  return out;
}
