/*
 * The forward proxy of a URL, as curl, Python's requests and Go's net/http read it from HTTPS_PROXY, HTTP_PROXY
 * and NO_PROXY (each also in lower case, which wins). NO_PROXY is matched as curl documents it: `*` alone for
 * every host; a name for that host and every host under it (a leading `.` or `*.` changes nothing); `name:port`
 * for that port only; an IP address, or a CIDR range, for the hosts written as such an address. Names are never
 * resolved to match an address.
 */
import { BlockList, isIP } from 'node:net';

/** A NO_PROXY entry that is not one of the forms above, named for the message. */
export class NoProxyEntryError extends Error {}

/** Whether `url`'s host is reached directly by NO_PROXY (`list`, as the variable holds it). */
export function bypassesProxy(url: URL, list: string): boolean {
  const host = bareHost(url.hostname);
  const port = Number(url.port || (url.protocol === 'https:' ? 443 : 80));
  for (const raw of list.split(/[\s,]+/)) {
    const entry = raw.trim().toLowerCase();
    if (entry === '') continue;
    if (entry === '*') return true;
    const { name, port: only } = splitPort(entry);
    if (only !== undefined && only !== port) continue;
    if (matches(host, name)) return true;
  }
  return false;
}

function matches(host: string, name: string): boolean {
  const slash = name.indexOf('/');
  if (slash !== -1) {
    const address = bareHost(name.slice(0, slash));
    const prefix = Number(name.slice(slash + 1));
    const family = isIP(address);
    const hostFamily = isIP(host);
    if (family === 0 || !Number.isInteger(prefix) || prefix < 0 || prefix > (family === 4 ? 32 : 128)) {
      throw new NoProxyEntryError(`${name} is not a CIDR range`);
    }
    if (hostFamily !== family) return false;
    const range = new BlockList();
    range.addSubnet(address, prefix, family === 4 ? 'ipv4' : 'ipv6');
    return range.check(host, family === 4 ? 'ipv4' : 'ipv6');
  }
  const bare = bareHost(name);
  if (isIP(bare) !== 0 || isIP(host) !== 0) return isIP(bare) !== 0 && isIP(host) !== 0 && sameIp(bare, host);
  const domain = bare.replace(/^\*?\./, '').replace(/\.$/, '');
  if (domain === '') return false;
  return host === domain || host.endsWith(`.${domain}`);
}

function sameIp(a: string, b: string): boolean {
  const family = isIP(a);
  if (family !== isIP(b)) return false;
  const list = new BlockList();
  list.addAddress(a, family === 4 ? 'ipv4' : 'ipv6');
  return list.check(b, family === 4 ? 'ipv4' : 'ipv6');
}

/** `name:port` → both; `[v6]:port`, `[v6]` and a bare IPv6 address (its colons no port) kept whole. */
function splitPort(entry: string): { name: string; port: number | undefined } {
  const bracketed = /^(\[[^\]]+\])(?::(\d+))?$/.exec(entry);
  if (bracketed !== null) {
    return { name: bracketed[1]!, port: bracketed[2] === undefined ? undefined : Number(bracketed[2]) };
  }
  if (isIP(entry.split('/')[0]!) === 6) return { name: entry, port: undefined };
  const withPort = /^(.+):(\d+)$/.exec(entry);
  return withPort === null
    ? { name: entry, port: undefined }
    : { name: withPort[1]!, port: Number(withPort[2]) };
}

/** A host without the brackets of an IPv6 literal or a name's trailing dot, in lower case. */
function bareHost(host: string): string {
  return host
    .toLowerCase()
    .replace(/^\[(.*)\]$/, '$1')
    .replace(/\.$/, '');
}
