import { signToken } from '../../src/http/auth.js';

/** An answer of the HTTP API: its status and its JSON body (typed as the caller reads it). */
export interface ApiAnswer<B = Record<string, unknown>> {
  readonly status: number;
  readonly body: B;
}

/**
 * Calls of a running serve's HTTP API as `user` (the user 'admin' signs in as an admin), each with a
 * token signed by `secret`: what the tests that drive serve processes over real HTTP share.
 */
export function apiClient(secret: string) {
  return async function request<B = Record<string, unknown>>(
    method: string,
    url: string,
    user: string,
    options: { body?: object; headers?: Record<string, string>; timeoutMs?: number } = {},
  ): Promise<ApiAnswer<B>> {
    const { body, headers = {}, timeoutMs } = options;
    const response = await fetch(url, {
      method,
      headers: {
        authorization: `Bearer ${signToken(secret, user, { admin: user === 'admin' })}`,
        ...(body ? { 'content-type': 'application/json' } : {}),
        ...headers,
      },
      ...(body ? { body: JSON.stringify(body) } : {}),
      ...(timeoutMs === undefined ? {} : { signal: AbortSignal.timeout(timeoutMs) }),
    });
    return { status: response.status, body: (await response.json()) as B };
  };
}
