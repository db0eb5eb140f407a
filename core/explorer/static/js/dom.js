// Small DOM helpers shared by the views. Text from the store only ever goes in through textContent (h() and
// its children), never as HTML.

export const NETWORKS = ['world', 'experience', 'opinion', 'observation'];
export const CHANNELS = ['semantic', 'keyword', 'graph', 'temporal'];

// h('a', {href, class, onclick, dataset}, ...children): an element; strings become text nodes.
export function h(tag, attrs, ...children) {
  const el = tag.startsWith('svg:')
    ? document.createElementNS('http://www.w3.org/2000/svg', tag.slice(4))
    : document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key === 'class') el.setAttribute('class', value);
    else if (key === 'dataset') Object.assign(el.dataset, value);
    else if (key.startsWith('on') && typeof value === 'function') el.addEventListener(key.slice(2), value);
    else el.setAttribute(key, value === true ? '' : String(value));
  }
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child instanceof Node ? child : String(child));
  }
  return el;
}

// "#/bank/<bank>/<view>?k=v": ids are encoded, so a bank or document id may hold "/" or "?".
export function route(bank, view, params) {
  const query = new URLSearchParams();
  for (const [key, value] of Object.entries(params || {})) {
    if (value === undefined || value === null || value === '') continue;
    if (Array.isArray(value)) value.forEach((v) => query.append(key, v));
    else query.set(key, String(value));
  }
  const qs = query.toString();
  return `#/bank/${encodeURIComponent(bank)}/${view}${qs ? '?' + qs : ''}`;
}

export function parseRoute(hash) {
  const raw = (hash || '').replace(/^#/, '');
  const cut = raw.indexOf('?');
  const path = cut < 0 ? raw : raw.slice(0, cut);
  const query = cut < 0 ? '' : raw.slice(cut + 1);
  const parts = path.split('/').filter(Boolean).map((p) => {
    try {
      return decodeURIComponent(p);
    } catch {
      return p;
    }
  });
  return { parts, params: new URLSearchParams(query) };
}

// Parameters of the current route as a plain object (to change one and keep the rest).
export function paramsObject(params) {
  const out = {};
  for (const key of new Set(params.keys())) {
    const all = params.getAll(key);
    out[key] = all.length > 1 ? all : all[0];
  }
  return out;
}

const numberFormat = new Intl.NumberFormat('en');
export const fmtNum = (n) => (n === null || n === undefined ? '–' : numberFormat.format(n));

// Times are shown in UTC, as stored: "2025-03-02 10:00".
export function fmtDate(iso, { time = true } = {}) {
  if (!iso) return '–';
  const text = iso.replace('T', ' ');
  return time ? text.slice(0, 16) : text.slice(0, 10);
}

export function dateEl(iso, opts) {
  return h('time', { datetime: iso || undefined, title: iso ? iso + ' (UTC)' : undefined }, fmtDate(iso, opts));
}

// When a memory happened: one date, or "start → end" for a span of days (like the CLI's display.when).
export function whenText(m) {
  const start = m.occurred_start || m.mentioned_at;
  const end = m.occurred_end || start;
  if (!start) return 'undated';
  if (!end || end.slice(0, 10) === start.slice(0, 10)) return fmtDate(start, { time: false });
  return `${fmtDate(start, { time: false })} → ${fmtDate(end, { time: false })}`;
}

export function networkBadge(network) {
  return h('span', { class: `badge net-${network}` }, network);
}

// How one memory bore on an opinion, in words (the colour only repeats it): for, against or neutral.
export const VERDICTS = ['for', 'against', 'neutral'];
const VERDICT_TITLES = { for: 'supports the opinion', against: 'goes against the opinion', neutral: 'on neither side' };

export function verdictBadge(verdict) {
  const v = VERDICTS.includes(verdict) ? verdict : 'neutral';
  return h('span', { class: `badge verdict verdict-${v}`, title: VERDICT_TITLES[v] }, v);
}

export function statusBadge(status) {
  return h('span', { class: `badge status-${status}` }, status);
}

export function confidenceBar(value) {
  const pct = Math.round((value ?? 0) * 100);
  const fill = h('span', { class: 'bar-fill' });
  fill.style.width = `${pct}%`; // CSSOM, which the CSP allows (unlike style attributes)
  return h('span', { class: 'bar', title: `confidence ${value?.toFixed(2) ?? '–'}` }, fill,
    h('span', { class: 'bar-label' }, value === null || value === undefined ? '–' : value.toFixed(2)));
}

export function entityChips(bank, names) {
  return h('span', { class: 'chips' }, (names || []).map((name) =>
    h('a', { class: 'chip', href: route(bank, 'entity', { name }) }, name)));
}

export function documentLink(bank, m) {
  if (!m.document_id) return h('span', { class: 'muted' }, '–');
  return h('a', { href: route(bank, 'document', { id: m.document_id, highlight: m.sources || [] }), class: 'mono' },
    m.document_id);
}

export function memoryLink(bank, m, text) {
  return h('a', { href: route(bank, 'memory', { id: m.id }), class: 'memory-link' }, text ?? m.text);
}

// "superseded" on a memory that is no longer current (its title says since when), "correction" on one that
// corrects another: what lists show beside the text.
export function historyMarks(m) {
  const marks = [];
  if (m.superseded_by) {
    const since = m.valid_until ? ` on ${fmtDate(m.valid_until, { time: false })}` : '';
    marks.push(h('span', { class: 'badge superseded', title: `superseded${since} by a newer memory: kept as history` }, 'superseded'));
  }
  const fix = m.metadata && m.metadata.correction;
  if (fix && fix.of) marks.push(h('span', { class: 'badge correction', title: 'a correction of another memory' }, 'correction'));
  return marks.length ? [' ', ...marks] : [];
}

// The memories table of the memories, entity and document views.
export function memoryTable(bank, items, { empty = 'No memories.' } = {}) {
  if (!items.length) return h('p', { class: 'muted empty' }, empty);
  return h('table', { class: 'grid memories' },
    h('thead', {}, h('tr', {}, h('th', {}, 'When (UTC)'), h('th', {}, 'Network'), h('th', {}, 'Memory'),
      h('th', {}, 'Entities'), h('th', {}, 'Sources'), h('th', {}, 'Document'))),
    h('tbody', {}, items.map((m) => h('tr', { dataset: { id: m.id }, class: m.superseded_by ? 'superseded' : undefined },
      h('td', { class: 'nowrap', title: `mentioned ${m.mentioned_at || '–'}` }, whenText(m)),
      h('td', {}, networkBadge(m.network),
        m.confidence !== null && m.confidence !== undefined ? h('span', { class: 'small muted' }, ` ${m.confidence.toFixed(2)}`) : null),
      h('td', { class: 'text' }, memoryLink(bank, m), historyMarks(m)),
      h('td', {}, entityChips(bank, m.entities)),
      h('td', { class: 'mono small' }, (m.sources || []).join(', ') || '–'),
      h('td', { class: 'small' }, documentLink(bank, m))))));
}

// Prev / "51–100 of 100,000" / Next, a page number and a page size; go(offset, limit) navigates.
export function pager(page, go) {
  const { offset, limit, total, has_more: more, items } = page;
  const from = items.length ? offset + 1 : 0;
  const to = offset + items.length;
  const info = total !== null && total !== undefined
    ? `${fmtNum(from)}–${fmtNum(to)} of ${fmtNum(total)}` : `${fmtNum(from)}–${fmtNum(to)}`;
  const parts = [
    h('button', { class: 'btn', type: 'button', disabled: offset === 0, onclick: () => go(Math.max(0, offset - limit), limit) }, '‹ Prev'),
    h('span', { class: 'pager-info' }, info),
    h('button', { class: 'btn', type: 'button', disabled: !more, onclick: () => go(offset + limit, limit) }, 'Next ›'),
  ];
  if (total && total > limit) {
    const pages = Math.ceil(total / limit);
    const input = h('input', { type: 'number', min: 1, max: pages, value: Math.floor(offset / limit) + 1, class: 'page-input', 'aria-label': 'page' });
    input.addEventListener('change', () => {
      const n = Math.min(pages, Math.max(1, Math.round(Number(input.value) || 1)));
      go((n - 1) * limit, limit);
    });
    parts.push(h('label', { class: 'small' }, 'page ', input, ` of ${fmtNum(pages)}`));
  }
  const size = h('select', { 'aria-label': 'page size' }, [25, 50, 100, 200].map((n) =>
    h('option', { value: n, selected: n === limit }, `${n} per page`)));
  size.addEventListener('change', () => go(0, Number(size.value)));
  parts.push(size);
  return h('div', { class: 'pager' }, parts);
}

export function errorBox(err) {
  const status = err && err.status ? ` (${err.status})` : '';
  return h('div', { class: 'error-box', role: 'alert' }, h('strong', {}, `Error${status}: `), String((err && err.message) || err));
}

export function toast(message) {
  const el = document.getElementById('toast');
  el.textContent = message;
  el.classList.add('show');
  clearTimeout(toast.timer);
  toast.timer = setTimeout(() => el.classList.remove('show'), 4000);
}

export function section(title, ...children) {
  return h('section', { class: 'card' }, h('h2', {}, title), children);
}

export function fields(rows) {
  return h('dl', { class: 'fields' }, rows.filter(Boolean).map(([k, v]) => [h('dt', {}, k), h('dd', {}, v ?? '–')]));
}

export function json(value) {
  return h('pre', { class: 'json' }, JSON.stringify(value, null, 2));
}
