/** Requests to the lockstock API from the page. Errors arrive as `{ error, message }`. */

export interface ApiAnswer<T> {
  status: number;
  ok: boolean;
  body: T | { error: string; message: string };
}

export function isError(body: unknown): body is { error: string; message: string } {
  return typeof body === 'object' && body !== null && 'error' in body && 'message' in body;
}

/** A JSON request; network failures become a status-0 answer, so the panels can show them. */
export async function request<T>(
  method: 'GET' | 'POST',
  path: string,
  options: { token?: string; body?: unknown } = {},
): Promise<ApiAnswer<T>> {
  const headers: Record<string, string> = {};
  if (options.token) headers.authorization = `Bearer ${options.token}`;
  if (options.body !== undefined) headers['content-type'] = 'application/json';
  try {
    const response = await fetch(path, {
      method,
      headers,
      ...(options.body !== undefined ? { body: JSON.stringify(options.body) } : {}),
    });
    const body = (await response.json()) as T | { error: string; message: string };
    return { status: response.status, ok: response.ok, body };
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    return { status: 0, ok: false, body: { error: 'network', message: `No answer: ${message}` } };
  }
}

/** The claims of a JWT, decoded for display only (the server verifies it; the page cannot). */
export function claimsOf(token: string): { sub?: string; role?: string; exp?: number } | undefined {
  const payload = token.split('.')[1];
  if (!payload) return undefined;
  try {
    const json = atob(payload.replace(/-/g, '+').replace(/_/g, '/'));
    const claims: unknown = JSON.parse(json);
    return typeof claims === 'object' && claims !== null
      ? (claims as { sub?: string; role?: string })
      : undefined;
  } catch {
    return undefined; // not a JWT: the panel says so
  }
}

export function byId<T extends HTMLElement>(id: string): T {
  const element = document.getElementById(id);
  if (!element) throw new Error(`the page has no #${id}`);
  return element as T;
}
