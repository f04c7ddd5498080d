import type { MaintenanceWindow, WindowTimes } from '../contract/maintenance-window';

const dayNames = ['Sun', 'Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat'];
const syntax =
  'write it like "Sat,Sun 02:00-04:00 Europe/Berlin", "Mon-Fri 22:00-23:30 UTC" or "daily 01:00-03:00 Asia/Tokyo"';

/** Days as written: `daily`, or names and ranges (`Mon-Fri,Sun`). */
function parseDays(text: string): number[] | string {
  if (text.toLowerCase() === 'daily') return [0, 1, 2, 3, 4, 5, 6];
  const dayIndex = (d: string) => dayNames.findIndex((n) => n.toLowerCase() === d.toLowerCase());
  const days = new Set<number>();
  for (const part of text.split(',')) {
    const ends = part.split('-').map(dayIndex);
    if (ends.length > 2 || ends.some((d) => d < 0))
      return `"${part}" is not a day: use Mon, Tue, Wed, Thu, Fri, Sat, Sun, ranges like Mon-Fri, or daily`;
    const [from, to = from] = ends as [number, number?];
    for (let d = from; ; d = (d + 1) % 7) {
      days.add(d);
      if (d === to) break;
    }
  }
  return [...days].sort();
}

/** HH:MM or HH:MM:SS as seconds after midnight. */
function parseClock(text: string): number | undefined {
  const m = /^(\d{2}):(\d{2})(?::(\d{2}))?$/.exec(text);
  if (!m || Number(m[1]) > 23 || Number(m[2]) > 59 || Number(m[3] ?? 0) > 59) return undefined;
  return Number(m[1]) * 3600 + Number(m[2]) * 60 + Number(m[3] ?? 0);
}

/** The annotation's window, or what is wrong with it (a sentence saying how to write it). */
export function parseMaintenanceWindow(text: string): MaintenanceWindow | string {
  const parts = text.trim().split(/\s+/);
  if (parts.length !== 3) return `"${text}" is not a window: ${syntax}`;
  const [daysText, hours, timeZone] = parts as [string, string, string];
  const days = parseDays(daysText);
  if (typeof days === 'string') return days;
  const [open, close] = hours.split('-').map(parseClock);
  if (open === undefined || close === undefined || hours.split('-').length !== 2)
    return `"${hours}" is not a span of hours: use HH:MM-HH:MM (or HH:MM:SS), e.g. 02:00-04:00`;
  if (open === close) return `"${hours}" opens and closes at the same time: give it a length`;
  try {
    new Intl.DateTimeFormat('en-US', { timeZone });
  } catch {
    return `"${timeZone}" is not a time zone: use an IANA name such as UTC, Europe/Berlin or America/New_York`;
  }
  return { text: parts.join(' '), days, opensAt: open, closesAt: close, timeZone };
}

/** `timeZone`'s wall clock at instant `ms`, as if it were UTC (milliseconds). */
function wallClockMs(ms: number, timeZone: string): number {
  const f = new Intl.DateTimeFormat('en-US', {
    timeZone,
    hourCycle: 'h23',
    year: 'numeric',
    month: 'numeric',
    day: 'numeric',
    hour: 'numeric',
    minute: 'numeric',
    second: 'numeric',
  });
  const p = Object.fromEntries(f.formatToParts(ms).map((x) => [x.type, Number(x.value)]));
  return Date.UTC(p.year!, p.month! - 1, p.day!, p.hour!, p.minute!, p.second!);
}

/** The instant at which `timeZone`'s wall clock shows `wall` (as UTC ms); a time a clock change skips moves forward. */
function instantOf(wall: number, timeZone: string): number {
  let guess = wall;
  for (let i = 0; i < 3; i++) guess = wall - (wallClockMs(guess, timeZone) - guess);
  return guess;
}

/** The window open at `nowMs`, or else the next one to open. */
export function maintenanceWindowTimes(window: MaintenanceWindow, nowMs: number): WindowTimes {
  const today = wallClockMs(nowMs, window.timeZone);
  const midnight = today - (today % 86_400_000);
  const length = (window.closesAt - window.opensAt + 86_400) % 86_400;
  // Yesterday's window may still be open (past midnight); the next opens within a week.
  for (let d = -1; d <= 7; d++) {
    const day = midnight + d * 86_400_000;
    if (!window.days.includes(new Date(day).getUTCDay())) continue;
    const opens = instantOf(day + window.opensAt * 1000, window.timeZone);
    const closes = opens + length * 1000;
    if (closes > nowMs)
      return { open: opens <= nowMs, opensAt: new Date(opens).toISOString(), closesAt: new Date(closes).toISOString() };
  }
  throw new Error(`maintenance window "${window.text}" never opens`);
}
