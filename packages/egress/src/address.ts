import ipaddr from 'ipaddr.js';

// Address classification for the egress gate: which IP addresses a tenant-influenced request may
// connect to. Parsed by ipaddr.js (every textual form Node or a resolver can hand over: dotted,
// IPv4-mapped/compatible IPv6, NAT64, 6to4, Teredo), never by string matching. Only global
// unicast is public; everything else is private, and cloud metadata endpoints are their own class
// because no allow-list opens them.

export type AddressClass = 'public' | 'private' | 'metadata' | 'invalid';

/**
 * Instance metadata and host-agent services: never opened, not by `…_ALLOW_PRIVATE` nor by an
 * allow-list. The whole link-local ranges, because clouds put their services all over them (AWS
 * and GCP at 169.254.169.254, ECS at 169.254.170.2, EKS Pod Identity at 169.254.170.23, Tencent at
 * 169.254.0.23, Scaleway at 169.254.42.42), and nothing a tenant may reach lives there; AWS's IPv6
 * block (IMDS fd00:ec2::254, Pod Identity fd00:ec2::23); Azure's WireServer, a global unicast
 * address; Oracle Cloud Classic's metadata in the IETF protocol block; Alibaba's in CGNAT space.
 */
const METADATA_RANGES = [
  '169.254.0.0/16',
  'fe80::/10',
  'fd00:ec2::/32',
  '168.63.129.16/32',
  '192.0.0.192/32',
  '100.100.100.200/32',
].map((cidr) => ipaddr.parseCIDR(cidr));

function isMetadata(addr: ipaddr.IPv4 | ipaddr.IPv6): boolean {
  for (const range of METADATA_RANGES) if (addr.kind() === range[0].kind() && addr.match(range)) return true;
  return false;
}

/** IPv6 prefixes that carry an IPv4 address inside: the embedded address decides. */
function embeddedIPv4(v6: ipaddr.IPv6): ipaddr.IPv4 | undefined {
  const range = v6.range();
  const b = v6.toByteArray();
  if (range === 'ipv4Mapped' || range === 'rfc6145' || range === 'rfc6052')
    return new ipaddr.IPv4(b.slice(12, 16));
  if (range === '6to4') return new ipaddr.IPv4(b.slice(2, 6));
  // Teredo: the client address is the last 32 bits, inverted.
  if (range === 'teredo') return new ipaddr.IPv4(b.slice(12, 16).map((x) => x ^ 0xff));
  // IPv4-compatible (deprecated ::a.b.c.d): the first 96 bits are zero.
  if (b.slice(0, 12).every((x) => x === 0) && !(range === 'unspecified' || range === 'loopback'))
    return new ipaddr.IPv4(b.slice(12, 16));
  return undefined;
}

/**
 * RFC 8215's local-use NAT64 prefix: a network may translate it with a prefix shorter than /96,
 * where the IPv4 address sits in other bits than the last 32 (RFC 6052 §2.2), and what it leads to
 * is that network's own: private as a whole.
 */
const LOCAL_USE_NAT64 = ipaddr.parseCIDR('64:ff9b:1::/48');

function classifyParsed(addr: ipaddr.IPv4 | ipaddr.IPv6): AddressClass {
  if (isMetadata(addr)) return 'metadata';
  if (addr.kind() === 'ipv6' && (addr as ipaddr.IPv6).match(LOCAL_USE_NAT64)) return 'private';
  if (addr.kind() === 'ipv6') {
    const inner = embeddedIPv4(addr as ipaddr.IPv6);
    if (inner) return classifyParsed(inner);
  }
  return addr.range() === 'unicast' ? 'public' : 'private';
}

/**
 * The class of one IP address in any textual form (brackets allowed). Not an IP → 'invalid'.
 * Private covers loopback, RFC 1918, CGNAT 100.64/10, unique-local, multicast, broadcast,
 * 0.0.0.0/8, reserved and documentation ranges; link-local is metadata (METADATA_RANGES).
 */
export function classifyAddress(ip: string): AddressClass {
  const text = ip.replace(/^\[|\]$/g, '').replace(/%.*$/, '');
  if (!ipaddr.isValid(text)) return 'invalid';
  return classifyParsed(ipaddr.parse(text));
}

/** True for an IP literal (any form ipaddr.js accepts, brackets allowed). */
export function isIpLiteral(host: string): boolean {
  return ipaddr.isValid(host.replace(/^\[|\]$/g, '').replace(/%.*$/, ''));
}
