import net from 'node:net';

// The IP checks of upstream's validateNodeIP (Go's net.IP predicates), over text addresses.

/** An IP in Go's canonical text (`net.IP.String`); undefined when `ip` is not one. */
export function canonicalIP(ip: string): string | undefined {
  const family = net.isIP(ip);
  if (family === 4) return ip;
  if (family !== 6) return undefined;
  const host = new URL(`http://[${ip}]/`).hostname.slice(1, -1);
  // An IPv4-mapped IPv6 address prints as IPv4, as Go's does.
  const mapped = /^::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/.exec(host);
  if (mapped) {
    const hi = Number.parseInt(mapped[1]!, 16);
    const lo = Number.parseInt(mapped[2]!, 16);
    return `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`;
  }
  return host;
}

function v4Octets(ip: string): number[] | undefined {
  return net.isIPv4(ip) ? ip.split('.').map(Number) : undefined;
}

/** The first 16 bits of an IPv6 address in canonical form. */
function v6Head(ip: string): number {
  if (ip.startsWith('::')) return 0;
  return Number.parseInt(ip.split(':')[0]!, 16);
}

export function isIPv4(ip: string): boolean {
  return net.isIPv4(ip);
}

/**
 * Why `ip` may not be a node IP, with upstream's messages; undefined when it may. `hostIPs` are
 * the addresses of the host's interfaces, which the node IP must be among.
 */
export function nodeIPError(ip: string, hostIPs: readonly string[]): string | undefined {
  const c = canonicalIP(ip);
  if (c === undefined) return 'nodeIP must be a valid IP address';
  const o = v4Octets(c);
  if (o) {
    if (o[0] === 127) return "nodeIP can't be loopback address";
    if (o[0]! >= 224 && o[0]! <= 239) return "nodeIP can't be a multicast address";
    if (o[0] === 169 && o[1] === 254) return "nodeIP can't be a link-local unicast address";
    if (c === '0.0.0.0') return "nodeIP can't be an all zeros address";
  } else {
    const head = v6Head(c);
    if (c === '::1') return "nodeIP can't be loopback address";
    if (head >> 8 === 0xff) return "nodeIP can't be a multicast address";
    if ((head & 0xffc0) === 0xfe80) return "nodeIP can't be a link-local unicast address";
    if (c === '::') return "nodeIP can't be an all zeros address";
  }
  if (hostIPs.some((h) => canonicalIP(h) === c)) return undefined;
  return `node IP: ${JSON.stringify(c)} not found in the host's network interfaces`;
}
