import { describe, expect, it } from 'vitest';
import { connectionFailure } from '../../../src/api/connection-failure.js';
import { ProxyError } from '../../../src/api/proxy-error.js';

const config = { baseUrl: new URL('https://api.example.com/v4/') };
const tlsError = (code: string, message: string) => Object.assign(new Error(message), { code });
const failure = (error: unknown) => connectionFailure(error, 'GET /x', config);

describe('what no retry mends, told apart from what a retry may get past', () => {
  it('a certificate that cannot be verified: unknown CA, self-signed, expired, another name', () => {
    const cases: [string, string, string][] = [
      ['UNABLE_TO_VERIFY_LEAF_SIGNATURE', 'unable to verify the first certificate', 'NODE_EXTRA_CA_CERTS'],
      [
        'SELF_SIGNED_CERT_IN_CHAIN',
        'self-signed certificate in certificate chain',
        'POST_REPORTS_API_CA_FILE',
      ],
      ['DEPTH_ZERO_SELF_SIGNED_CERT', 'self-signed certificate', 'NODE_EXTRA_CA_CERTS'],
      ['CERT_HAS_EXPIRED', 'certificate has expired', 'must renew it'],
      [
        'ERR_TLS_CERT_ALTNAME_INVALID',
        "Hostname/IP does not match certificate's altnames",
        'POST_REPORTS_BASE_URL',
      ],
    ];
    for (const [code, message, fix] of cases) {
      const error = failure(tlsError(code, message));
      expect(error, code).toMatchObject({ code: 'API_CERTIFICATE_UNTRUSTED', final: true });
      expect(error?.message, code).toContain('the certificate of api.example.com');
      expect(error?.message, code).toContain(`${message} (${code})`);
      expect(error?.message, code).toContain(fix);
    }
  });

  it("a gateway's alert about the client certificate, in OpenSSL's own words", () => {
    const alert = Object.assign(
      tlsError('ERR_SSL_TLSV13_ALERT_CERTIFICATE_REQUIRED', 'C0:error:0A00045C:SSL routines…'),
      {
        reason: 'tlsv13 alert certificate required',
      },
    );
    const error = failure(alert);
    expect(error).toMatchObject({ code: 'API_CLIENT_CERTIFICATE_REFUSED', final: true });
    expect(error?.message).toContain(
      'tlsv13 alert certificate required (ERR_SSL_TLSV13_ALERT_CERTIFICATE_REQUIRED)',
    );
    expect(error?.message).not.toContain('SSL routines');
    expect(error?.message).toContain('POST_REPORTS_API_CLIENT_CERT_FILE');
  });

  it("a proxy's 407 and 403 need a person; its 5xx, a dropped tunnel, a reset connection do not", () => {
    expect(
      failure(new ProxyError('http://p:1', 407, 'the proxy http://p:1 (HTTPS_PROXY) answered 407')),
    ).toMatchObject({
      code: 'PROXY_REFUSED',
      final: true,
    });
    expect(failure(new ProxyError('http://p:1', 403, 'answered 403'))?.message).toContain(
      'it does not allow connections to api.example.com',
    );
    for (const status of [502, 503, 504, undefined]) {
      expect(failure(new ProxyError('http://p:1', status, 'x')), String(status)).toBeUndefined();
    }
    expect(failure(tlsError('ECONNRESET', 'socket hang up'))).toBeUndefined();
    expect(failure(tlsError('ENOTFOUND', 'getaddrinfo ENOTFOUND api.example.com'))).toBeUndefined();
  });
});
