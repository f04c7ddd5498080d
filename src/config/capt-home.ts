import { homedir } from 'node:os';
import { join } from 'node:path';

/** Where capt keeps its state on this host: the dev server's database, the local provider's clusters and machines. */
export function captHome(): string {
  // An empty CAPT_HOME is unset, as shells treat it: as "" it put keys and databases in the current directory.
  return process.env.CAPT_HOME || join(homedir(), '.capt');
}
