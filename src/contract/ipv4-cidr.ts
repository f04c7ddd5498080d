/** An IPv4 CIDR block as numbers: its first address and its size. */
export interface Ipv4Block {
  first: number;
  size: number;
}

/** `a.b.c.d/n` parsed, or a reason it is not a usable cluster network: octets 0-255, a prefix 8-30, not loopback or link-local. */
export function parseClusterCidr(text: string): Ipv4Block | string {
  const match = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})\/(\d{1,2})$/.exec(text);
  if (!match) return 'must be an IPv4 CIDR like 10.96.0.0/12';
  const octets = match.slice(1, 5).map(Number);
  const prefix = Number(match[5]);
  if (octets.some((o) => o > 255)) return 'each of its four numbers must be 0 to 255';
  if (prefix < 8 || prefix > 30)
    return 'its prefix must be /8 to /30 (a cluster network needs room for addresses, and is no bigger than a /8)';
  const address = octets.reduce((n, o) => n * 256 + o, 0);
  const size = 2 ** (32 - prefix);
  const first = address - (address % size);
  if (octets[0] === 127) return 'is loopback (127.0.0.0/8), where the host and its local machines live';
  if (octets[0] === 169 && octets[1] === 254) return 'is link-local (169.254.0.0/16)';
  if (octets[0] === 0 || octets[0]! >= 224) return 'is not a unicast range';
  return { first, size };
}

export const cidrsOverlap = (a: Ipv4Block, b: Ipv4Block) => a.first < b.first + b.size && b.first < a.first + a.size;
