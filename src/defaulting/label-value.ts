/**
 * A name as a label value, as Cluster API writes the MachineSet name label: the name itself when it is a
 * valid label value, else `hash_<FNV-1a 32-bit of the name, unpadded base64url>_z` (names may be 253
 * characters, label values 63).
 */
const labelValue = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/;

function fnv1a32(text: string): Buffer {
  let hash = 0x811c9dc5;
  for (const byte of Buffer.from(text, 'utf8')) {
    hash ^= byte;
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  const out = Buffer.alloc(4);
  out.writeUInt32BE(hash);
  return out;
}

export function nameAsLabelValue(name: string): string {
  if (name.length <= 63 && labelValue.test(name)) return name;
  return `hash_${fnv1a32(name).toString('base64url')}_z`;
}
