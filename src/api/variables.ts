/**
 * clusterctl-style variables: ${VAR}, ${VAR:=default} and ${VAR:-default}. Values come from `--var`
 * first, then the environment. An unset variable without a default is an error naming every such variable.
 */
const pattern = /\$\{([A-Za-z_][A-Za-z0-9_]*)(?:(:=|:-)([^}]*))?\}/g;

export function substituteVariables(text: string, vars: Record<string, string | undefined>): { text: string; missing: string[] } {
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

/** The variables manifests see: the environment, overridden by `--var NAME=value` flags. */
export function manifestVariables(env: Record<string, string | undefined>, flags: string[]): Record<string, string | undefined> {
  return { ...env, ...parseVarFlags(flags) };
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
