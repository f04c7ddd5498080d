import type { MachineRecord } from '../../src/contract/owner';
import type { OwnerState } from './owner-runtime';

/**
 * An owner's machine records as it carries them across continue-as-new: one array row per record, the strings
 * that repeat (name stems, template hashes, versions, phases) kept once, times as milliseconds from a base. About
 * a fifth of the records' JSON, so 5,000 workers and a rollout's surge stay far below Temporal's 512 KB payload
 * warning. Lossless: `unpackRecords(packRecords(r))` deep-equals `r`, whatever optional fields a record holds.
 */
export interface PackedRecords {
  /** The row layout below; a reader refuses any other. */
  packed: 1;
  strings: string[];
  /** Epoch milliseconds the rows' times count from. */
  base: number;
  rows: PackedRow[];
}

/**
 * [name stem, name suffix, template hash, version, createdAt, phase, flags, sequence, address or 0, runningSince
 * or null, the record's other fields or nothing]: stems, hashes, versions and phases are indexes into `strings`;
 * a time is a number from `base`, or the string itself when it is not in toISOString's form.
 */
type PackedRow = [number, string, number, number, Time, number, number, number, string | 0, Time | null, Rest?];
type Time = number | string;
type Rest = Partial<MachineRecord>;

const packedKeys = new Set<string>([
  'name',
  'templateHash',
  'version',
  'createdAt',
  'phase',
  'deleting',
  'marked',
  'remediate',
  'skipRemediation',
  'sequence',
  'address',
  'runningSince',
]);

// Optional booleans keep "absent" apart from false, so a record comes back exactly as it went.
const flag = { deleting: 1, marked: 2, remediate: 4, remediateFalse: 8, skip: 16, skipFalse: 32 } as const;

export const isPackedRecords = (value: unknown): value is PackedRecords =>
  typeof value === 'object' && value !== null && !Array.isArray(value) && 'packed' in value;

export function packRecords(records: MachineRecord[]): PackedRecords {
  const strings: string[] = [];
  const indexes = new Map<string, number>();
  const intern = (s: string) => {
    let i = indexes.get(s);
    if (i === undefined) indexes.set(s, (i = strings.push(s) - 1));
    return i;
  };
  const base = records.reduce((min, r) => Math.min(min, Date.parse(r.createdAt) || min), Number.MAX_SAFE_INTEGER);
  const time = (iso: string): Time => {
    const at = Date.parse(iso);
    return Number.isFinite(at) && new Date(at).toISOString() === iso ? at - base : iso;
  };
  const rows = records.map((r): PackedRow => {
    const cut = r.name.lastIndexOf('-') + 1;
    const flags =
      (r.deleting ? flag.deleting : 0) |
      (r.marked ? flag.marked : 0) |
      (r.remediate === true ? flag.remediate : r.remediate === false ? flag.remediateFalse : 0) |
      (r.skipRemediation === true ? flag.skip : r.skipRemediation === false ? flag.skipFalse : 0);
    const rest = Object.fromEntries(Object.entries(r).filter(([k]) => !packedKeys.has(k))) as Rest;
    const row: PackedRow = [
      intern(r.name.slice(0, cut)),
      r.name.slice(cut),
      intern(r.templateHash),
      intern(r.version),
      time(r.createdAt),
      intern(r.phase),
      flags,
      r.sequence,
      r.address ?? 0,
      r.runningSince === undefined ? null : time(r.runningSince),
    ];
    if (Object.keys(rest).length) row.push(rest);
    return row;
  });
  return { packed: 1, strings, base: records.length ? base : 0, rows };
}

export function unpackRecords(packed: PackedRecords): MachineRecord[] {
  if (packed.packed !== 1)
    throw new Error(`machine records packed as format ${String(packed.packed)}: this build reads format 1 only`);
  const { strings, base } = packed;
  const time = (t: Time) => (typeof t === 'number' ? new Date(base + t).toISOString() : t);
  return packed.rows.map(([stem, suffix, hash, version, createdAt, phase, flags, sequence, address, since, rest]) => ({
    name: strings[stem]! + suffix,
    templateHash: strings[hash]!,
    version: strings[version]!,
    createdAt: time(createdAt),
    phase: strings[phase]! as MachineRecord['phase'],
    deleting: (flags & flag.deleting) !== 0,
    marked: (flags & flag.marked) !== 0,
    ...(flags & flag.remediate ? { remediate: true } : flags & flag.remediateFalse ? { remediate: false } : {}),
    ...(flags & flag.skip ? { skipRemediation: true } : flags & flag.skipFalse ? { skipRemediation: false } : {}),
    sequence,
    ...(address === 0 ? {} : { address }),
    ...(since === null ? {} : { runningSince: time(since) }),
    ...rest,
  }));
}

/** An owner's state as continue-as-new carries it: its records packed (runs of earlier builds carried them whole). */
export type CarriedOwnerState<S extends OwnerState> = Omit<S, 'machines'> & {
  machines: MachineRecord[] | PackedRecords;
};

export const carriedOwnerState = <S extends OwnerState>(state: S): CarriedOwnerState<S> => ({
  ...state,
  machines: packRecords(state.machines),
});

export const resumedOwnerState = <S extends OwnerState>(carried: CarriedOwnerState<S>): S =>
  ({
    ...carried,
    machines: isPackedRecords(carried.machines) ? unpackRecords(carried.machines) : carried.machines,
  }) as S;
