import { describe, expect, it } from 'vitest';
import { authGuard, throttleKey } from '../src/lib/auth-guard.ts';

// The throttle counts an IPv4 client by its address and an IPv6 client by its /64: rotating through
// the addresses of one's own /64 does not buy more guesses.

describe('throttleKey', () => {
  it('IPv4 as itself (mapped IPv6 too), IPv6 by its /64 in any spelling', () => {
    expect(throttleKey('203.0.113.9')).toBe('203.0.113.9');
    expect(throttleKey('::ffff:203.0.113.9')).toBe('203.0.113.9');
    expect(throttleKey('2001:db8:1:2:3:4:5:6')).toBe('2001:db8:1:2::/64');
    expect(throttleKey('2001:db8:1:2::ffff')).toBe('2001:db8:1:2::/64');
    expect(throttleKey('2001:0db8:0001:0002:aaaa::1%eth0')).toBe('2001:db8:1:2::/64');
    expect(throttleKey('2001:db8::1')).toBe('2001:db8:0:0::/64');
    expect(throttleKey('::1')).toBe('0:0:0:0::/64');
    expect(throttleKey('64:ff9b::192.0.2.1')).toBe('64:ff9b:0:0::/64');
  });

  it('failures from addresses of one /64 count together; another /64 is not affected', () => {
    const guard = authGuard({ failuresPerMinute: 3, negativeCacheMs: 0 });
    for (const ip of ['2001:db8:1:2::1', '2001:db8:1:2::2', '2001:db8:1:2:ffff::9'])
      guard.failed(ip, undefined);
    expect(guard.throttled('2001:db8:1:2::abcd')).toBeGreaterThan(0);
    expect(guard.throttled('2001:db8:1:3::1')).toBeUndefined();
    expect(guard.throttled('203.0.113.9')).toBeUndefined();
  });
});
