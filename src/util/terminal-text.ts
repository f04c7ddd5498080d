/** Escape sequences (CSI, OSC, and the two-character ones) that a terminal acts on instead of showing. */
// eslint-disable-next-line no-control-regex -- matching control characters is this file's purpose
const escapeSequences = /\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[@-Z\\-_]/g;
/** Control characters but newline and tab, C1 controls, and the bidirectional overrides that reorder a line. */
// eslint-disable-next-line no-control-regex -- as above
const controls = /[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]/g;

/**
 * Text as a terminal may show it: what a workload cluster, a machine or a manifest wrote (conditions, events,
 * a failed command's output) can hold escape sequences that recolour, retitle or rewrite the operator's
 * screen. They are dropped, and other control characters become `?`; newlines and tabs stay.
 */
export function terminalSafe(text: string): string {
  return text.replace(escapeSequences, '').replace(controls, '?');
}
