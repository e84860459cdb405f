import { rename, rm, writeFile } from 'node:fs/promises';
import { type Flags, SETTINGS } from '../config.js';
import { ConfigError } from '../errors.js';
import { schemaExists } from '../load/window-state.js';
import { startClock } from '../model/clock.js';
import { todayUtc } from '../model/dates.js';
import { DEFAULT_ORGANIZATION } from '../model/organization.js';
import { readHistory } from '../pipeline/history-calendar.js';
import { runScope } from '../pipeline/run-context.js';
import { readOrganizations } from '../pipeline/schema-status.js';
import { guarded, guardedContext, withDatabase } from './admin-commands.js';
import { calendarLines, calendarYear, legend, yearsOf } from './calendar.js';
import { calendarPage } from './calendar-html.js';
import type { Io } from './run-output.js';

export interface CalendarArgs {
  /** Draw the calendar on stdout. */
  readonly calendar: boolean;
  /** Write the page here. */
  readonly html?: string;
  /** One year (YYYY) instead of every year from the first loaded. */
  readonly year?: string;
  /** Every organization of the schema. */
  readonly all: boolean;
}

/** --year: a year from 1970 to 9999. */
function yearOf(text: string | undefined): number | undefined {
  if (text === undefined) return undefined;
  if (!/^\d{4}$/.test(text) || Number(text) < 1970) {
    throw new ConfigError(
      'CONFIG_INVALID',
      `--year must be a year from 1970 to 9999, got ${JSON.stringify(text)}`,
    );
  }
  return Number(text);
}

/**
 * `status --calendar` and `status --html FILE`: the organization's (or, `all`, each organization's) loaded history
 * as a grid of days per year, drawn on stdout (colour only on a terminal, and not with NO_COLOR or --no-color)
 * and/or written as one HTML page. The page is written beside FILE and renamed over it, so that no reader sees
 * half of one.
 */
export function statusCalendarCommand(io: Io, flags: Flags, args: CalendarArgs): Promise<number> {
  return guarded(io, async (guard) => {
    const year = yearOf(args.year);
    const { config, logger } = guardedContext(guard, flags, { db: true }, io.signal);
    const scope = runScope(config);
    const today = todayUtc(startClock(config.run.clockStart).now());
    const found = await withDatabase(config, logger, 1, async (pool) => {
      if (!(await schemaExists(pool, scope.schema))) return null;
      const orgs = await readOrganizations(pool, scope.schema);
      // An organizations file names the organizations shown, each of them, whatever it has loaded.
      const fromFile = config.organizations?.map((o) => o.id);
      if (fromFile !== undefined && args.all) {
        throw new ConfigError(
          'CONFIG_INVALID',
          `--all-organizations and ${SETTINGS.organizations.flag} (${SETTINGS.organizations.env}) are both given: give one, every organization of the schema or those of the file`,
        );
      }
      if (fromFile === undefined && !args.all && orgs.length > 0 && !orgs.includes(scope.org)) {
        throw new ConfigError(
          'CONFIG_INVALID',
          `organization ${JSON.stringify(scope.org)} has nothing in schema ${JSON.stringify(scope.schema)}, which holds ${orgs.join(', ')}: check ${SETTINGS.organization.env} (${SETTINGS.organization.flag})`,
        );
      }
      const wanted = args.all ? orgs : (fromFile ?? [scope.org]);
      if (wanted.length === 0) return null;
      const range = year === undefined ? [null, null] : [`${year}-01-01`, `${year}-12-31`];
      return readHistory(pool, scope.schema, wanted, range[0] ?? null, range[1] ?? null);
    });
    if (found === null) {
      io.stdout.write(
        `schema ${scope.schema}: nothing loaded yet (the schema is made by the first backfill, sync or migrate; check --schema if one was)\n`,
      );
      return;
    }
    const years = yearsOf(found, today, year);
    const calendars = found.flatMap((h) => years.map((y) => calendarYear(h, y, today)));
    if (args.calendar) {
      const stdout = io.stdout as Partial<NodeJS.WriteStream>;
      const colour = stdout.isTTY === true && config.log.color !== false;
      const out: string[] = [];
      for (const calendar of calendars) {
        const where =
          calendar.org === DEFAULT_ORGANIZATION
            ? `schema ${scope.schema}`
            : `organization ${calendar.org} of schema ${scope.schema}`;
        out.push(...calendarLines(calendar, where, colour), '');
      }
      out.push(legend(colour));
      io.stdout.write(`${out.join('\n')}\n`);
    }
    if (args.html !== undefined) {
      const page = calendarPage(scope.schema, found, calendars, years, today);
      const temporary = `${args.html}.${process.pid}.tmp`;
      try {
        await writeFile(temporary, page, { mode: 0o644 });
        await rename(temporary, args.html);
      } catch (error) {
        await rm(temporary, { force: true });
        throw new ConfigError(
          'CONFIG_INVALID',
          `--html ${JSON.stringify(args.html)} could not be written (${(error as NodeJS.ErrnoException).code ?? String(error)}): name a file in a directory you may write to`,
          { cause: error },
        );
      }
      if (!args.calendar) {
        io.stdout.write(
          `wrote ${args.html}: ${found.length === 1 ? 'organization' : 'organizations'} ${found.map((h) => h.org).join(', ')}, ${years[0]}..${years.at(-1)}\n`,
        );
      }
    }
  });
}
