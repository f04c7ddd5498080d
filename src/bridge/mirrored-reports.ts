import { reportSequenceAnnotation } from './machine-objects';
import type { ApiObject } from './management-client';

/**
 * The report each Machine object shows, as this bridge last wrote it. Kept in memory so a report that changes
 * only a machine's status costs one status write and no metadata write. A bridge that starts (or takes the
 * lease) knows none and goes by the report-sequence annotation, written with the object's metadata: it reads
 * the machines that reported since then once more, which writes nothing where nothing changed.
 */
export class MirroredReports {
  private readonly shown = new Map<string, number>();

  /** The report `o` shows; undefined when neither this bridge nor the object knows one. */
  sequence(o: ApiObject | undefined): string | undefined {
    if (!o) return undefined;
    const known = this.shown.get(o.metadata.uid!);
    return known !== undefined ? String(known) : o.metadata.annotations?.[reportSequenceAnnotation];
  }

  note(o: ApiObject, sequence: number): void {
    this.shown.set(o.metadata.uid!, sequence);
  }

  /** Forgets the objects that are gone, so the memory is bounded by the Machine objects there are. */
  keepOnly(objects: readonly ApiObject[]): void {
    const live = new Set(objects.map((o) => o.metadata.uid));
    for (const uid of this.shown.keys()) if (!live.has(uid)) this.shown.delete(uid);
  }
}
