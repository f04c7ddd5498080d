/** A few names and how many more: a step or message stays one short line whatever the number of machines. */
export function someNames(names: string[], shown = 3): string {
  const rest = names.length - shown;
  return rest > 0 ? `${names.slice(0, shown).join(', ')} and ${rest} more` : names.join(', ');
}
