/*
 * The CPU time of the PostgreSQL server on this machine, for the load's figure of the database's share: every process
 * named `postgres` (its backends and background workers), with what its exited children used (a backend that ended
 * is counted in the postmaster's). Null where /proc cannot be read or the server is not on this machine.
 */
import { readdirSync, readFileSync } from 'node:fs';

/** Linux's USER_HZ: /proc counts CPU time in these ticks on every architecture it runs on. */
const TICKS_PER_SECOND = 100;

export function databaseCpuMs(): number | null {
  let names: string[];
  try {
    names = readdirSync('/proc').filter((n) => /^\d+$/.test(n));
  } catch {
    return null;
  }
  let ticks = 0;
  let found = false;
  for (const pid of names) {
    let stat: string;
    try {
      stat = readFileSync(`/proc/${pid}/stat`, 'latin1');
    } catch {
      continue;
    }
    // The command name is in parentheses and may hold spaces: the fields follow its last closing one.
    const close = stat.lastIndexOf(')');
    if (stat.slice(stat.indexOf('(') + 1, close) !== 'postgres') continue;
    const fields = stat.slice(close + 2).split(' ');
    // Fields 14-17 of proc(5) (utime, stime, cutime, cstime), here from the third field on.
    ticks += Number(fields[11]) + Number(fields[12]) + Number(fields[13]) + Number(fields[14]);
    found = true;
  }
  return found ? (ticks * 1000) / TICKS_PER_SECOND : null;
}
