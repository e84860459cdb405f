import { DAY_STATES, type DayState, type OrganizationHistory } from '../pipeline/history-calendar.js';
import { type CalendarYear, describeCounts, STATE_CHARACTERS, WEEKDAYS } from './calendar.js';

/*
 * The calendar as one self-contained HTML page (`status --html FILE`): the same grid of days per organization and
 * year, then a row per day a window covers. Inline CSS, no script and nothing fetched; every text is escaped,
 * since organization ids, report ids and errors come from elsewhere.
 */

/** Text made safe for HTML content and quoted attribute values. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

/** `in progress` → `s-in-progress`: a state's class. */
export function stateClass(state: DayState | 'to come'): string {
  return `s-${state.replaceAll(' ', '-')}`;
}

const COLOURS: Readonly<Record<DayState | 'to come', string>> = {
  final: '#2e7d32',
  open: '#f9a825',
  failed: '#c62828',
  'in progress': '#0277bd',
  'never loaded': '#e0e0e0',
  'to come': '#ffffff',
};

const STYLE = `
body { font: 14px/1.4 system-ui, sans-serif; margin: 1.5em; color: #212121; }
table.calendar { border-collapse: separate; border-spacing: 2px; margin: 0.5em 0 1.5em; }
table.calendar caption { text-align: left; font-weight: 600; padding-bottom: 0.3em; }
table.calendar th { font-weight: normal; font-size: 11px; color: #616161; text-align: left; padding: 0 4px 0 0; }
td.day { width: 11px; height: 11px; padding: 0; border-radius: 2px; font-size: 0; }
td.pad { width: 11px; height: 11px; padding: 0; }
.legend span.key { display: inline-block; width: 11px; height: 11px; border-radius: 2px; margin: 0 4px 0 12px; vertical-align: middle; }
table.days { border-collapse: collapse; margin-top: 1em; }
table.days th, table.days td { border-bottom: 1px solid #e0e0e0; padding: 2px 10px 2px 0; text-align: left; font-variant-numeric: tabular-nums; }
.s-to-come { outline: 1px solid #bdbdbd; outline-offset: -1px; }
${Object.entries(COLOURS)
  .map(([state, colour]) => `.${stateClass(state as DayState)} { background: ${colour}; }`)
  .join('\n')}
`;

function gridTable(calendar: CalendarYear): string {
  const weeks = calendar.weeks.length;
  const monthCells: string[] = [];
  let week = 0;
  for (const [i, month] of calendar.months.entries()) {
    const next = calendar.months[i + 1]?.week ?? weeks;
    if (month.week > week) monthCells.push(`<th colspan="${month.week - week}"></th>`);
    const span = Math.max(1, next - Math.max(month.week, week));
    monthCells.push(`<th colspan="${span}">${escapeHtml(month.name)}</th>`);
    week = Math.max(month.week, week) + span;
  }
  const rows = WEEKDAYS.map((name, d) => {
    const cells = calendar.weeks.map((column) => {
      const cell = column[d] ?? null;
      if (cell === null) return '<td class="pad"></td>';
      const window = cell.day?.window;
      const about =
        window === undefined
          ? cell.state
          : `${cell.state}; window ${window.windowStart}..${window.windowEnd}${window.rowCount === null ? '' : `, ${window.rowCount} rows`}`;
      return `<td class="day ${stateClass(cell.state)}" data-state="${escapeHtml(cell.state)}" data-date="${cell.date}" title="${escapeHtml(`${cell.date}: ${about}`)}">${escapeHtml(STATE_CHARACTERS[cell.state])}</td>`;
    });
    return `<tr><th>${name}</th>${cells.join('')}</tr>`;
  });
  return `<table class="calendar" data-org="${escapeHtml(calendar.org)}" data-year="${calendar.year}">
<caption>${calendar.year}: ${escapeHtml(describeCounts(calendar.counts))}</caption>
<thead><tr><th></th>${monthCells.join('')}</tr></thead>
<tbody>
${rows.join('\n')}
</tbody>
</table>`;
}

function dayRows(history: OrganizationHistory, years: readonly number[]): string {
  const rows = [...history.days.values()]
    .filter((d) => years.includes(Number(d.date.slice(0, 4))))
    .map((d) => {
      const w = d.window;
      const cells = [
        d.date,
        d.state,
        `${w.windowStart}..${w.windowEnd}`,
        w.rowCount === null ? '' : String(w.rowCount),
        w.loadedThrough ?? '',
        d.standing,
        w.lastError ?? '',
      ];
      return `<tr class="${stateClass(d.state)}-row">${cells.map((c) => `<td>${escapeHtml(c)}</td>`).join('')}</tr>`;
    });
  return `<table class="days" data-org="${escapeHtml(history.org)}">
<thead><tr><th>Date</th><th>State</th><th>Window</th><th>Rows of its window</th><th>Final through</th><th>Latest attempt</th><th>Last error</th></tr></thead>
<tbody>
${rows.join('\n')}
</tbody>
</table>`;
}

/** The page: a legend, then per organization its years' grids and its days' rows. */
export function calendarPage(
  schema: string,
  histories: readonly OrganizationHistory[],
  calendars: readonly CalendarYear[],
  years: readonly number[],
  today: string,
): string {
  const legend = DAY_STATES.map((s) => `<span class="key ${stateClass(s)}"></span>${escapeHtml(s)}`).join('');
  const sections = histories.map((history) => {
    const grids = calendars.filter((c) => c.org === history.org).map(gridTable);
    return `<section class="organization" data-org="${escapeHtml(history.org)}">
<h2>Organization ${escapeHtml(history.org)}</h2>
${grids.join('\n')}
<h3>Days loaded</h3>
${dayRows(history, years)}
</section>`;
  });
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(`Loaded history of schema ${schema}`)}</title>
<style>${STYLE}</style>
</head>
<body>
<h1>${escapeHtml(`Loaded history of schema ${schema}`)}</h1>
<p>As of ${escapeHtml(today)} (UTC). A day is final when its rows come from a report made after it ended; open when it was loaded before it was over (the next run covering it loads it again).</p>
<p class="legend">${legend}<span class="key s-to-come"></span>to come</p>
${sections.join('\n')}
</body>
</html>
`;
}
