/*
 * A request that failed before any answer came, for what no retry can mend: a certificate that cannot be verified,
 * a client certificate the API's gateway wants or refuses, a proxy that refuses. Each is one line naming the host
 * (or the proxy, without its credentials), the reason, and what to do; it fails at once (`final`), not retried.
 */
import { type ApiConfig, SETTINGS } from '../config.js';
import { ApiError, oneLine } from '../errors.js';
import { ProxyError } from './proxy-error.js';

/** OpenSSL's verification failures that a trusted CA would mend. */
const UNTRUSTED = new Set([
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'CERT_UNTRUSTED',
  'CERT_SIGNATURE_FAILURE',
  'UNABLE_TO_DECRYPT_CERT_SIGNATURE',
  'UNABLE_TO_DECODE_ISSUER_PUBLIC_KEY',
  'INVALID_CA',
  'CERT_REJECTED',
  'PATH_LENGTH_EXCEEDED',
  'INVALID_PURPOSE',
  'CERT_CHAIN_TOO_LONG',
]);
const OUT_OF_DATE = new Set(['CERT_HAS_EXPIRED', 'CERT_NOT_YET_VALID', 'CERT_REVOKED']);
const WRONG_NAME = new Set(['ERR_TLS_CERT_ALTNAME_INVALID', 'HOSTNAME_MISMATCH']);
/** Alerts of a server that wants a client certificate, or does not accept the one shown. */
const CLIENT_CERTIFICATE = new Set([
  'ERR_SSL_TLSV13_ALERT_CERTIFICATE_REQUIRED',
  'ERR_SSL_SSLV3_ALERT_BAD_CERTIFICATE',
  'ERR_SSL_SSLV3_ALERT_CERTIFICATE_UNKNOWN',
  'ERR_SSL_SSLV3_ALERT_CERTIFICATE_EXPIRED',
  'ERR_SSL_SSLV3_ALERT_CERTIFICATE_REVOKED',
  'ERR_SSL_SSLV3_ALERT_UNSUPPORTED_CERTIFICATE',
  'ERR_SSL_TLSV1_ALERT_UNKNOWN_CA',
  'ERR_SSL_TLSV1_ALERT_ACCESS_DENIED',
  'ERR_SSL_SSLV3_ALERT_HANDSHAKE_FAILURE',
]);

/** The first code of `error` or of the errors it wraps. */
function codeOf(error: unknown): { code: string; message: string } | undefined {
  for (let e: unknown = error, depth = 0; e instanceof Error && depth < 5; e = e.cause, depth++) {
    const code = (e as NodeJS.ErrnoException).code;
    // OpenSSL's own errors carry their words in `reason`, their message being OpenSSL's whole error line.
    const reason: unknown = (e as { reason?: unknown }).reason;
    if (typeof code === 'string') {
      return {
        code,
        message: code.startsWith('ERR_SSL_') && typeof reason === 'string' ? reason : e.message,
      };
    }
  }
  return undefined;
}

/**
 * The ApiError of a failure that needs a person, or undefined for one a retry may get past (a refused or cut
 * connection, a proxy's 502/503/504, a tunnel dropped).
 */
export function connectionFailure(
  error: unknown,
  endpoint: string,
  config: Pick<ApiConfig, 'baseUrl' | 'tls'>,
): ApiError | undefined {
  const host = config.baseUrl.host;
  if (error instanceof ProxyError) {
    if (error.status === undefined || error.status >= 500) return undefined;
    const fix =
      error.status === 407
        ? 'it wants credentials, or refused the ones of the proxy URL: give them in it (http://user:password@host:port)'
        : error.status === 403
          ? `it does not allow connections to ${host}: ask its operators to`
          : 'it did not let the request through';
    return new ApiError(
      'PROXY_REFUSED',
      `${endpoint} failed: ${oneLine(error.message, 300)}: ${fix}; or set ${SETTINGS.apiProxy.env}=off (or add the host to NO_PROXY) if the API is reached directly`,
      { endpoint, cause: error, final: true },
    );
  }
  const found = codeOf(error);
  if (found === undefined) return undefined;
  const { code } = found;
  const reason = `${oneLine(found.message, 300)} (${code})`;
  if (UNTRUSTED.has(code)) {
    const ca = config.tls?.ca;
    return new ApiError(
      'API_CERTIFICATE_UNTRUSTED',
      `${endpoint} failed: the certificate of ${host} cannot be verified: ${reason}. No retry can mend this: if a company CA signed it, add that CA (a PEM file) with NODE_EXTRA_CA_CERTS or ${SETTINGS.apiCaFile.env}${ca === undefined ? '' : ` (which holds no CA that signed it)`}`,
      { endpoint, cause: error, final: true },
    );
  }
  if (OUT_OF_DATE.has(code)) {
    return new ApiError(
      'API_CERTIFICATE_UNTRUSTED',
      `${endpoint} failed: the certificate of ${host} is not valid now: ${reason}. Its operators must renew it (or this machine's clock is wrong)`,
      { endpoint, cause: error, final: true },
    );
  }
  if (WRONG_NAME.has(code)) {
    return new ApiError(
      'API_CERTIFICATE_UNTRUSTED',
      `${endpoint} failed: the certificate of ${host} is not for that name: ${reason}. Check the host of ${SETTINGS.baseUrl.env}`,
      { endpoint, cause: error, final: true },
    );
  }
  if (CLIENT_CERTIFICATE.has(code)) {
    const shown = config.tls?.client !== undefined;
    return new ApiError(
      'API_CLIENT_CERTIFICATE_REFUSED',
      shown
        ? `${endpoint} failed: ${host} refused the client certificate of ${SETTINGS.apiClientCertFile.env}: ${reason}. Give the certificate (and key) its gateway accepts`
        : `${endpoint} failed: ${host} ended the TLS handshake: ${reason}. A gateway that requires a client certificate does so: set ${SETTINGS.apiClientCertFile.env} and ${SETTINGS.apiClientKeyFile.env}`,
      { endpoint, cause: error, final: true },
    );
  }
  return undefined;
}
