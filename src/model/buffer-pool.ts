/*
 * Page-sized memory used again from page to page. V8 gives an ArrayBuffer's memory back only when a collection
 * finds its wrapper dead, and a wrapper that lived through a page's handling is old: only a full collection finds
 * it. A window's pages each left a few MB of such garbage (the body, its tape, its COPY text), and V8 ran a full
 * collection every five pages or so to free it, about 40 for 200,000 wide posts. Each owner of a page's buffers
 * takes them here and gives them back once nothing reads them any more; a buffer not given back is garbage as
 * before, so a page that ends early (a failure, an abort) costs an allocation, never a buffer read twice.
 */

/** A few ArrayBuffers of about a page's size, handed out one holder at a time. */
export class BufferPool {
  /** Free buffers, smallest first. */
  readonly #free: ArrayBuffer[] = [];
  /** Every buffer this pool made: only those are taken back. */
  readonly #made = new WeakSet<ArrayBufferLike>();
  readonly #keep: number;

  /** `keep`: how many free buffers are kept (as many as the holders that overlap). */
  constructor(keep = 2) {
    this.#keep = keep;
  }

  /** A buffer of at least `bytes` bytes, its content undefined: free, or made now with room to spare. */
  take(bytes: number): ArrayBuffer {
    const free = this.#free;
    for (let i = 0; i < free.length; i++) {
      if (free[i]!.byteLength >= bytes) return free.splice(i, 1)[0]!;
    }
    // Pages differ in size by a few percent: a little room spares a new buffer for a page a little larger.
    const made = Buffer.allocUnsafeSlow(Math.ceil(bytes * 1.125) + 1024).buffer as ArrayBuffer;
    this.#made.add(made);
    return made;
  }

  /**
   * Gives back the buffer under `view`, once nothing reads it. A view of a buffer this pool did not make (a body
   * read another way, memory another owner shares) is left alone, as is one already given back.
   */
  give(view: ArrayBufferView | undefined): void {
    if (view === undefined) return;
    const buffer = view.buffer;
    if (!this.#made.has(buffer)) return;
    const free = this.#free;
    if (free.includes(buffer as ArrayBuffer)) return;
    free.push(buffer as ArrayBuffer);
    free.sort((a, b) => a.byteLength - b.byteLength);
    // The smallest go first: a pool holding only buffers too small would make a new one for every page.
    if (free.length > this.#keep) free.shift();
  }
}
