/**
 * A short, deterministic hash of a template (FNV-1a over its JSON), for MachineSet names and for telling
 * outdated machines from current ones. Workflow code may not use node:crypto, and needs no more than this.
 */
export function specHash(value: unknown): string {
  const text = JSON.stringify(value);
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash.toString(16).padStart(8, '0');
}

/** A revision's hash: its template's, with the restart time mixed in when a restart made it (same template, new machines). */
export const revisionHash = (template: Record<string, unknown>, restartedAt?: string) =>
  specHash(restartedAt ? { ...template, restartedAt } : template);
