import { describe, expect, it } from 'vitest';
import { bypassesProxy, NoProxyEntryError } from '../../src/proxy-env.js';

const bypass = (url: string, list: string) => bypassesProxy(new URL(url), list);

describe('NO_PROXY, as curl reads it', () => {
  it('a name covers that host and every host under it, with or without a leading dot or *.', () => {
    for (const entry of ['example.com', '.example.com', '*.example.com', 'EXAMPLE.COM', 'example.com.']) {
      expect(bypass('https://example.com/v4', entry), entry).toBe(true);
      expect(bypass('https://api.example.com/v4', entry), entry).toBe(true);
      expect(bypass('https://a.b.example.com:8443/v4', entry), entry).toBe(true);
      expect(bypass('https://notexample.com/v4', entry), entry).toBe(false);
      expect(bypass('https://example.com.evil.test/v4', entry), entry).toBe(false);
    }
  });

  it('* alone covers every host; * inside a list or a name does nothing more', () => {
    expect(bypass('https://anything.test/', '*')).toBe(true);
    expect(bypass('https://anything.test/', ' * ')).toBe(true);
    expect(bypass('https://anything.test/', 'other.test, *')).toBe(true);
    expect(bypass('https://anything.test/', '')).toBe(false);
  });

  it('name:port covers that port only, the scheme giving the port a URL leaves out', () => {
    expect(bypass('https://api.example.com/v4', 'example.com:443')).toBe(true);
    expect(bypass('https://api.example.com:8443/v4', 'example.com:443')).toBe(false);
    expect(bypass('http://api.example.com/v4', 'example.com:80')).toBe(true);
    expect(bypass('http://api.example.com/v4', 'example.com:443')).toBe(false);
  });

  it('an address or a CIDR range covers hosts written as addresses, never a name', () => {
    expect(bypass('https://10.1.2.3/v4', '10.1.2.3')).toBe(true);
    expect(bypass('https://10.1.2.3/v4', '10.1.2.4')).toBe(false);
    expect(bypass('https://10.1.2.3/v4', '10.0.0.0/8')).toBe(true);
    expect(bypass('https://11.1.2.3/v4', '10.0.0.0/8')).toBe(false);
    expect(bypass('https://[::1]:8443/v4', '::1')).toBe(true);
    expect(bypass('https://[::1]:8443/v4', '[::1]:8443')).toBe(true);
    expect(bypass('https://[::1]:8443/v4', '[::1]:443')).toBe(false);
    expect(bypass('https://[fd00::5]/v4', 'fd00::/8')).toBe(true);
    expect(bypass('https://10.1.2.3/v4', 'fd00::/8')).toBe(false);
    // A name is not resolved to match an address, nor an address a name's suffix.
    expect(bypass('https://localhost/v4', '127.0.0.1')).toBe(false);
    expect(bypass('https://10.1.2.3/v4', '2.3')).toBe(false);
  });

  it('entries apart by commas and white space', () => {
    expect(bypass('https://b.test/', 'a.test,b.test')).toBe(true);
    expect(bypass('https://b.test/', 'a.test b.test')).toBe(true);
    expect(bypass('https://c.test/', 'a.test, ,b.test')).toBe(false);
  });

  it('a range that is not one is named', () => {
    expect(() => bypass('https://10.1.2.3/', '10.0.0.0/99')).toThrow(NoProxyEntryError);
    expect(() => bypass('https://10.1.2.3/', 'intranet/8')).toThrow(/intranet\/8 is not a CIDR range/);
  });
});
