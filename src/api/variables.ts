/**
 * clusterctl-style variables: ${VAR}, ${VAR:=default} and ${VAR:-default}. Values come from `--var`
 * first, then the environment, except capt's own settings and anything named like a secret (see
 * `fromEnvironment`). An unset variable without a default is an error naming every such variable.
 */
const pattern = /\$\{([A-Za-z_][A-Za-z0-9_]*)(?:(:=|:-)([^}]*))?\}/g;

export function substituteVariables(
  text: string,
  vars: Record<string, string | undefined>,
): { text: string; missing: string[] } {
  const missing = new Set<string>();
  const out = text.replace(pattern, (_match, name: string, op: string | undefined, fallback: string | undefined) => {
    const value = vars[name];
    // As clusterctl's envsubst: both forms fall back when the variable is unset or empty.
    if (value !== undefined && value !== '') return value;
    if (op) return fallback ?? '';
    if (value === undefined) missing.add(name);
    return '';
  });
  return { text: out, missing: [...missing].sort() };
}

/**
 * Whether the environment may fill `${name}`: not capt's or Temporal's own settings (CAPT_*, TEMPORAL_*: the
 * payload keys, TLS keys, addresses) and not a name that says it holds a secret. A manifest reaches machines
 * and Nodes, so those come only from an explicit `--var`.
 */
export const fromEnvironment = (name: string) =>
  !/^(CAPT|TEMPORAL)_/.test(name) && !/KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|CERT/i.test(name);

/** The variables manifests see: the environment's allowed ones, overridden by `--var NAME=value` flags. */
export function manifestVariables(
  env: Record<string, string | undefined>,
  flags: string[],
): Record<string, string | undefined> {
  return {
    ...Object.fromEntries(Object.entries(env).filter(([name]) => fromEnvironment(name))),
    ...parseVarFlags(flags),
  };
}

function parseVarFlags(flags: string[]): Record<string, string> {
  const vars: Record<string, string> = {};
  for (const flag of flags) {
    const eq = flag.indexOf('=');
    if (eq <= 0) throw new Error(`--var ${flag}: expected NAME=value`);
    vars[flag.slice(0, eq)] = flag.slice(eq + 1);
  }
  return vars;
}
