import { homedir } from 'node:os';
import { join } from 'node:path';

/** Where capt keeps its state on this host: secrets, the dev server's database, local machines. */
export function captHome(): string {
  return process.env.CAPT_HOME ?? join(homedir(), '.capt');
}
