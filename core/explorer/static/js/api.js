// The explorer's JSON API, and the token that writes need.
//
// The server prints an address ending in "#token=...": a fragment never leaves the browser, so the token is not
// in any request line or log. It is kept in this tab's sessionStorage only and sent as a header (never a cookie,
// so the browser cannot send it on another site's behalf).

const TOKEN_KEY = 'hindsight-explorer-token';
const TOKEN_HEADER = 'X-Hindsight-Token';

export class ApiError extends Error {
  constructor(status, message, kind) {
    super(message);
    this.status = status;
    this.kind = kind || '';
  }
}

export function token() {
  return sessionStorage.getItem(TOKEN_KEY) || '';
}

export function setToken(value) {
  const t = (value || '').trim();
  if (t) sessionStorage.setItem(TOKEN_KEY, t);
  else sessionStorage.removeItem(TOKEN_KEY);
}

// Moves a "#token=..." fragment into sessionStorage and out of the address bar (and history).
export function takeTokenFromLocation() {
  const found = location.hash.match(/^#token=([^&/]+)$/);
  if (!found) return false;
  setToken(decodeURIComponent(found[1]));
  history.replaceState(null, '', location.pathname + location.search + '#/');
  return true;
}

async function request(method, path, { params, body } = {}) {
  const url = new URL('api/' + path, document.baseURI);
  for (const [key, value] of Object.entries(params || {})) {
    if (value === undefined || value === null || value === '') continue;
    if (Array.isArray(value)) value.forEach((v) => url.searchParams.append(key, v));
    else url.searchParams.set(key, String(value));
  }
  const headers = { Accept: 'application/json' };
  const t = token();
  if (t) headers[TOKEN_HEADER] = t;
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  const response = await fetch(url, {
    method, headers, cache: 'no-store', credentials: 'omit',
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  let data = null;
  try {
    data = await response.json();
  } catch {
    data = null;
  }
  if (!response.ok) {
    throw new ApiError(response.status, (data && data.error) || response.statusText, data && data.kind);
  }
  return data;
}

export const get = (path, params) => request('GET', path, { params });
export const post = (path, body) => request('POST', path, { body });
