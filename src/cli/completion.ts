import type { Command, Option } from 'commander';

export const shells = ['bash', 'zsh'] as const;
export type Shell = (typeof shells)[number];

/** Every command under `root` with its path, `/rollout/status` for `capt rollout status` ('' for capt itself). */
function commandPaths(command: Command, path = ''): { path: string; command: Command }[] {
  return [{ path, command }, ...command.commands.flatMap((c) => commandPaths(c, `${path}/${c.name()}`))];
}

const flagNames = (o: Option) => [o.short, o.long].filter((f): f is string => !!f);
const quoted = (words: readonly string[]) => `'${words.join(' ')}'`;

/**
 * The shell functions both shells share (bash and zsh read this subset alike): `__capt_complete WORD... CURRENT`
 * walks the words typed so far through the command tree, then sets `__capt_words` to what may come next (a
 * subcommand, an argument's choices, a flag, a flag's choices) and `__capt_files` when file names may.
 */
function sharedFunctions(root: Command): string {
  const paths = commandPaths(root);
  // capt's own flags (--verbose) go anywhere; every command has help.
  const globalFlags = root.options.flatMap(flagNames);
  // A flag takes a value everywhere or nowhere: the commands share one table of them (flags.ts).
  const valued = new Map<string, Option>();
  for (const { command } of paths)
    for (const o of command.options) if (o.required || o.optional) valued.set(o.long!, o);
  const nodes = paths.map(({ path, command }) => {
    const subcommands = command.commands.map((c) => c.name());
    const flags = [...command.options.flatMap(flagNames), ...(path ? globalFlags : []), '-h', '--help'];
    return `    '${path}') __capt_subcommands=${quoted(subcommands)} __capt_flags=${quoted(flags)} ;;`;
  });
  const argumentChoices = paths.flatMap(({ path, command }) =>
    command.registeredArguments.flatMap((a, i) =>
      a.argChoices ? [`    '${path}:${i}') __capt_words=${quoted(a.argChoices)} ;;`] : [],
    ),
  );
  const flagValues = [...valued.values()].map(
    (o) =>
      `    ${flagNames(o).join('|')}) ${/<FILE>/.test(o.flags) ? '__capt_files=1' : `__capt_words=${quoted(o.argChoices ?? [])}`} ;;`,
  );
  return `# The command tree: subcommands and flags by command path; 1 for no such command.
__capt_node() {
  case $1 in
${nodes.join('\n')}
    *) return 1 ;;
  esac
}

# The choices of an argument, by command path and position.
__capt_argument() {
  case $1 in
${argumentChoices.join('\n')}
  esac
}

# The flags that take a value, and the values they offer; 1 for a switch.
__capt_flag_value() {
  case $1 in
${flagValues.join('\n')}
    *) return 1 ;;
  esac
}

__capt_complete() {
  local at= position=0 valueOf= word
  while [ $# -gt 1 ]; do
    word=$1
    shift
    if [ -n "$valueOf" ]; then
      valueOf=
    elif [ "\${word#-}" != "$word" ]; then
      case $word in
        *=*) ;;
        *) __capt_flag_value "$word" && valueOf=$word ;;
      esac
    elif __capt_node "$at/$word"; then
      at=$at/$word
      position=0
    else
      position=$((position + 1))
    fi
  done
  __capt_words= __capt_files=
  if [ -n "$valueOf" ]; then
    __capt_flag_value "$valueOf"
    return
  fi
  __capt_node "$at"
  case $1 in
    -*) __capt_words=$__capt_flags ;;
    *)
      __capt_argument "$at:$position"
      [ "$position" -eq 0 ] && __capt_words="$__capt_subcommands\${__capt_words:+ $__capt_words}"
      ;;
  esac
}
`;
}

const bash = (root: Command) => `# capt completion for bash: source <(capt completion bash)
${sharedFunctions(root)}
_capt() {
  __capt_complete "\${COMP_WORDS[@]:1:COMP_CWORD}"
  local current=\${COMP_WORDS[COMP_CWORD]}
  mapfile -t COMPREPLY < <(compgen -W "$__capt_words" -- "$current")
  if [ -n "$__capt_files" ]; then
    compopt -o filenames 2>/dev/null
    mapfile -t -O \${#COMPREPLY[@]} COMPREPLY < <(compgen -f -- "$current")
  fi
}
complete -F _capt capt
`;

// Sourced, it registers _capt; installed as _capt in $fpath, zsh runs the file as the function itself.
const zsh = (root: Command) => `#compdef capt
# capt completion for zsh: source <(capt completion zsh), after compinit
compdef _capt capt
${sharedFunctions(root)}
_capt() {
  __capt_complete "\${(@)words[2,CURRENT]}"
  [ -n "$__capt_files" ] && _files
  compadd -- \${=__capt_words}
}

if [ "$funcstack[1]" = "_capt" ]; then
  _capt "$@"
fi
`;

/** A completion script for `shell`, from the commands, arguments and flags of `root`. */
export const completionScript = (root: Command, shell: Shell): string => ({ bash, zsh })[shell](root);
