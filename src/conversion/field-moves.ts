import { clone, isObject, pathOf, setAt, takeAt, type Json } from './json-tree';

/**
 * Conversion between Cluster API's v1beta1 and v1beta2 written as data: each kind is a list of moves, a field's
 * path in one version and in the other, with how its value changes on the way. The same list converts both
 * ways, so the two directions cannot drift apart. A field no move names keeps its path: most of both versions
 * agree. What a version cannot hold is not named here at all; the target version's schema prunes it and the
 * conversion data (conversion-data.ts) keeps it.
 */

export type Direction = 'up' | 'down';

/** What a value mapping may need besides the value: the converted object's own namespace. */
export interface MoveContext {
  namespace?: string;
}

/** How a value changes between the versions; `undefined` means the target version cannot hold it. */
export interface ValueMapping {
  up(value: unknown, context: MoveContext): unknown;
  down(value: unknown, context: MoveContext): unknown;
}

export interface Move {
  v1beta1: string;
  v1beta2: string;
  value?: ValueMapping;
  /** For a list of objects: the moves within each item. */
  each?: Move[];
}

/** The moves of a nested structure (a Machine's spec inside a MachineDeployment's template), at its place. */
export const under = (v1beta1: string, v1beta2: string, moves: Move[]): Move[] =>
  moves.map((m) => ({ ...m, v1beta1: `${v1beta1}.${m.v1beta1}`, v1beta2: `${v1beta2}.${m.v1beta2}` }));

/**
 * `object` with every move applied in `direction` (up: v1beta1 to v1beta2). Every source field is taken out
 * before any is written, so two fields may swap places (v1beta1's `status.conditions` goes to
 * `status.deprecated.v1beta1.conditions` while `status.v1beta2.conditions` becomes `status.conditions`).
 */
export function applyMoves(moves: Move[], object: Json, direction: Direction, context: MoveContext): Json {
  const out = clone(object);
  const [from, to] = direction === 'up' ? (['v1beta1', 'v1beta2'] as const) : (['v1beta2', 'v1beta1'] as const);
  const taken = moves.map((move) => takeAt(out, pathOf(move[from])));
  moves.forEach((move, i) => {
    let value = taken[i];
    if (value === undefined) return;
    if (move.value) value = move.value[direction](value, context);
    if (move.each && Array.isArray(value)) {
      const itemMoves = move.each;
      value = value.map((item) => (isObject(item) ? applyMoves(itemMoves, item, direction, context) : item));
    }
    if (value !== undefined) setAt(out, pathOf(move[to]), value);
  });
  return out;
}
