/**
 * GOMAXPROCS for each of `nodes` Temporal server processes sharing this host's `cores`. Each Go runtime otherwise
 * keeps as many threads running as the host has cores, and several of them on the same cores spend CPU spinning
 * and switching: 3 nodes on 2 cores took 13-15 % more of Temporal's CPU per machine replaced (bench/README.md).
 * Undefined (Go's default) for a single node, or when the operator set GOMAXPROCS.
 */
export function coLocatedGoMaxProcs(
  cores: number,
  nodes: number,
  env: NodeJS.ProcessEnv = process.env,
): string | undefined {
  if (env.GOMAXPROCS !== undefined || nodes <= 1) return undefined;
  return String(Math.max(1, Math.floor(cores / nodes)));
}
