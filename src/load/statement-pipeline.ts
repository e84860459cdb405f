/*
 * Several statements in one round trip: each is sent as the extended protocol's Parse, Bind and Execute (a COPY's
 * data right behind its Execute), and one Sync closes them all. node-postgres waits for each statement's answer
 * before it sends the next, which keeps the server idle between them while this process is busy elsewhere; a
 * page's statements sent at once keep it writing.
 * The server answers in order and, after an error, skips every message up to the Sync, COPY data included: the
 * statements behind a failed one never run, and the transaction they are in is aborted.
 */
import type pg from 'pg';

/** A parameterized statement, or a COPY … FROM STDIN with its whole data. */
export type PipelineStatement =
  | { readonly sql: string; readonly values?: readonly (string | number | null)[] }
  | { readonly copy: string; readonly data: Buffer };

/** The header of a CopyData message: 'd', then the length of the message without its type byte. */
function copyDataHeader(length: number): Buffer {
  const header = Buffer.alloc(5);
  header[0] = 0x64;
  header.writeUInt32BE(length + 4, 1);
  return header;
}

const COPY_DONE = Buffer.from([0x63, 0, 0, 0, 4]);

/**
 * Submitted with `client.query(pipeline)`; `done` resolves with the row count of each statement (COPY's rows
 * included) once the server is ready again, or rejects with the first statement's error.
 */
export class StatementPipeline implements pg.Submittable {
  readonly done: Promise<number[]>;
  readonly #statements: readonly PipelineStatement[];
  readonly #counts: number[] = [];
  #resolve!: (counts: number[]) => void;
  #reject!: (error: unknown) => void;
  #settled = false;

  constructor(statements: readonly PipelineStatement[]) {
    this.#statements = statements;
    this.done = new Promise<number[]>((resolve, reject) => {
      this.#resolve = resolve;
      this.#reject = reject;
    });
    // Read by whoever awaits done; this only keeps a failure from being reported as unhandled meanwhile.
    this.done.catch(() => {});
  }

  submit(connection: pg.Connection): void {
    const { stream } = connection;
    // Corked, the statements leave in as few packets as their size allows.
    stream.cork();
    try {
      for (const statement of this.#statements) {
        if ('copy' in statement) {
          connection.parse({ name: '', text: statement.copy, types: [] }, true);
          connection.bind({ values: [] }, true);
          connection.execute({}, true);
          if (statement.data.length > 0) {
            stream.write(copyDataHeader(statement.data.length));
            stream.write(statement.data);
          }
          stream.write(COPY_DONE);
        } else {
          connection.parse({ name: '', text: statement.sql, types: [] }, true);
          const values = (statement.values ?? []).map((v) => (v === null ? null : String(v)));
          connection.bind({ values }, true);
          connection.execute({}, true);
        }
      }
      connection.sync();
    } finally {
      stream.uncork();
    }
  }

  handleCommandComplete(message: { text?: string }): void {
    const count = /(\d+)$/.exec(message.text ?? '');
    this.#counts.push(count ? Number(count[1]) : 0);
  }

  handleReadyForQuery(): void {
    if (this.#settled) return;
    this.#settled = true;
    this.#resolve(this.#counts);
  }

  handleError(error: unknown): void {
    if (this.#settled) return;
    this.#settled = true;
    this.#reject(error);
  }

  // The data of every COPY went with its statement; the statements return no rows worth reading.
  handleCopyInResponse(): void {}
  handleRowDescription(): void {}
  handleDataRow(): void {}
  handleEmptyQuery(): void {
    this.#counts.push(0);
  }
  handlePortalSuspended(): void {}
  handleCopyData(): void {}
}
