/*
 * Claims on windows: one process at a time works on a window, whatever the number of processes and machines on
 * the schema. A claim is a session advisory lock held by the run's claims connection, so that it frees itself when
 * its process dies (the connection dies with it). PostgreSQL is the only coordinator.
 */
import type pg from 'pg';
import { isConnectionLoss } from '../error-policy.js';
import type { Logger } from '../logger.js';
import { type Window, windowLabel } from '../model/window.js';
import { retryDatabase, waitWhileBusy } from './database-retry.js';
import {
  lockHolders,
  sessionHolds,
  tryLockSession,
  unlockSession,
  windowClaimHolders,
  windowClaimKey,
} from './locks.js';
import type { Scope } from './scope.js';
import { loadedFrom } from './window-state.js';

/** What a claim attempt found. */
export type ClaimOutcome =
  /** The windows are this run's to load. */
  | 'claimed'
  /** Another live process holds one of them. */
  | 'taken'
  /** Another process loaded them from a report as new as this run would get: nothing left to do. */
  | 'done';

/** What makes a window loaded by another process done for this run: the age of its data. */
export interface Freshness {
  /**
   * A window loaded from a report made at or after this is done: a report this run asks for is made no earlier
   * (the run's start less the API's reuse period).
   */
  readonly madeSince: Date;
  /** Whether the run reloads the window (otherwise it is also done once loaded complete, whatever its age). */
  readonly reloads: (window: Window) => boolean;
}

export class WindowClaims {
  readonly #pool: pg.Pool;
  readonly #scope: Scope;
  readonly #logger: Logger;
  /** The session's connection, shared by concurrent callers from the moment it is asked for. */
  #client: Promise<pg.PoolClient> | undefined;
  #pid = 0;
  /** The data's age decides whether another process's load is done for this run, not when a commit ran. */
  readonly #freshness: Freshness;
  /** Keys held by the current session. */
  readonly #held = new Set<string>();
  /** The session serves one caller at a time: a pg client runs one query at a time, and a claim is several. */
  #turn: Promise<unknown> = Promise.resolve();
  /** How long a claim is asked for again through the database's faults (POST_REPORTS_RECONNECT_WAIT_MS). */
  readonly #waitMs: number;

  constructor(pool: pg.Pool, scope: Scope, logger: Logger, freshness: Freshness, waitMs = 0) {
    this.#pool = pool;
    this.#scope = scope;
    this.#logger = logger;
    this.#freshness = freshness;
    this.#waitMs = waitMs;
  }

  /** Opens the claims connection. */
  async start(): Promise<void> {
    await this.#inTurn(() => this.#session());
  }

  /**
   * Claims every window of a group, or none; then tells whether another process loaded them meanwhile. A session
   * cut under the claim took its claims with it: the claim is asked for again on a new session, as is one that
   * met a deadlock or waited on a lock past lock_timeout (the database retry).
   */
  claim(group: readonly Window[], signal?: AbortSignal): Promise<ClaimOutcome> {
    return this.#inTurn(() => retryDatabase(() => this.#claim(group), { waitMs: this.#waitMs, signal }));
  }

  #claim(group: readonly Window[]): Promise<ClaimOutcome> {
    return this.#onSession((client) => this.#claimOn(client, group));
  }

  async #claimOn(client: pg.PoolClient, group: readonly Window[]): Promise<ClaimOutcome> {
    const keys = this.#keys(group);
    const taken: string[] = [];
    for (const key of keys) {
      if (!(await tryLockSession(client, key))) {
        await this.#unlock(client, taken);
        return 'taken';
      }
      taken.push(key);
      this.#held.add(key);
    }
    const { madeSince, reloads } = this.#freshness;
    if (await loadedFrom(client, this.#scope, group, madeSince, group.map(reloads))) {
      await this.#unlock(client, keys);
      return 'done';
    }
    return 'claimed';
  }

  /** Waits until the group is free, then claims it (or finds it loaded by the process that held it). */
  waitFor(group: readonly Window[], signal: AbortSignal): Promise<Exclude<ClaimOutcome, 'taken'>> {
    return waitWhileBusy(
      async () => {
        const outcome = await this.claim(group, signal);
        return outcome === 'taken' ? undefined : outcome;
      },
      {
        signal,
        onWait: () =>
          this.#logger.info(
            { windows: group.map(windowLabel) },
            'waiting for another process to finish these windows',
          ),
      },
    );
  }

  /**
   * Whether this run still holds the group ('claimed'): when its claims connection was lost, it claims the group
   * again on a new one, unless another process took it meanwhile ('taken') or loaded it ('done').
   */
  holds(group: readonly Window[]): Promise<ClaimOutcome> {
    return this.#inTurn(async () => {
      const keys = this.#keys(group);
      const pid = this.#pid;
      const held = await this.#onSession(async (client) => {
        if (pid !== this.#pid) return false;
        const holders = await lockHolders(client, keys);
        return keys.every((key) => holders.get(key)?.some((h) => h.pid === pid));
      }).catch((error: unknown) => {
        if (!isConnectionLoss(error)) throw error;
        return false;
      });
      return held ? 'claimed' : this.#claim(group);
    });
  }

  /**
   * Whether this run's claims session holds the whole group now, read by `db` (the commit's own transaction, so
   * that nothing is committed on a claim lost since holds() said yes).
   */
  async heldIn(db: Pick<pg.ClientBase, 'query'>, group: readonly Window[]): Promise<boolean> {
    return this.#pid !== 0 && this.#client !== undefined && sessionHolds(db, this.#pid, this.#keys(group));
  }

  release(group: readonly Window[]): Promise<void> {
    return this.#inTurn(async () => {
      const keys = this.#keys(group).filter((key) => this.#held.has(key));
      if (this.#client === undefined || keys.length === 0) return;
      await this.#unlock(await this.#client, keys).catch((error: unknown) => {
        // A lost connection released them already.
        this.#logger.debug({ err: error }, 'could not release window claims');
      });
    });
  }

  /** Lets go of every claim and the connection. */
  async close(): Promise<void> {
    const client = this.#client;
    const held = [...this.#held];
    this.#client = undefined;
    this.#held.clear();
    const session = await client?.catch(() => undefined);
    if (session === undefined) return;
    // Ending the session frees its locks only once its backend has exited, which another session may not see yet:
    // unlocked first, they are free when close returns. A lost connection freed them already.
    if (held.length > 0) await this.#unlock(session, held).catch(() => {});
    session.release(true);
  }

  /** The pid of this run's claims connection (0 before the first claim). */
  get pid(): number {
    return this.#pid;
  }

  /** Who else holds the claims of these windows now (this run's own claims aside). */
  heldByOthers(windows: readonly Window[]): Promise<Window[]> {
    return this.#inTurn(async () => {
      const holders = await this.#onSession((client) => windowClaimHolders(client, this.#scope, windows));
      return windows.filter((_, i) => {
        const holder = holders[i];
        return holder != null && holder.pid !== this.#pid;
      });
    });
  }

  #keys(group: readonly Window[]): string[] {
    return group.map((w) => windowClaimKey(this.#scope, w));
  }

  #inTurn<T>(work: () => Promise<T>): Promise<T> {
    const turn = this.#turn.then(work, work);
    this.#turn = turn.catch(() => undefined);
    return turn;
  }

  /**
   * Runs `work` on the session. One that dies under a query (before its 'error' event, which may come later or
   * not at all) is dropped with its claims: the next call opens another.
   */
  async #onSession<T>(work: (client: pg.PoolClient) => Promise<T>): Promise<T> {
    const session = this.#session();
    const client = await session;
    try {
      return await work(client);
    } catch (error) {
      if (isConnectionLoss(error) && this.#client === session) {
        this.#lost(client, error instanceof Error ? error : new Error(String(error)));
      }
      throw error;
    }
  }

  #session(): Promise<pg.PoolClient> {
    this.#client ??= this.#connect().catch((error: unknown) => {
      this.#client = undefined;
      throw error;
    });
    return this.#client;
  }

  async #connect(): Promise<pg.PoolClient> {
    const client = await this.#pool.connect();
    const session = this.#client;
    let released = false;
    client.on('error', (error) => {
      if (this.#client !== session || released) return;
      released = true;
      this.#lost(client, error);
    });
    try {
      const { rows } = await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
      this.#pid = rows[0]?.pid ?? 0;
    } catch (error) {
      // Killed before it was this run's session: nothing else would hand it back, and a pool that lends no more
      // connections waits forever.
      if (!released) client.release(error instanceof Error ? error : true);
      released = true;
      throw error;
    }
    return client;
  }

  // The session and every claim on it are gone (a killed backend, a network cut): the next call opens another.
  #lost(client: pg.PoolClient, error: Error): void {
    this.#logger.warn({ err: error }, 'the window claims connection was lost');
    this.#client = undefined;
    this.#held.clear();
    client.release(error);
  }

  async #unlock(client: pg.PoolClient, keys: readonly string[]): Promise<void> {
    for (const key of keys) {
      await unlockSession(client, key);
      this.#held.delete(key);
    }
  }
}
