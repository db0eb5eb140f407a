// The bank's audit trail, newest first: every write and forget made through the API, the command line, MCP or the
// explorer (when, through which surface and token, what, how many). "?id=" shows one entry on top (the timeline's
// forgotten gaps link here).
import * as api from '../api.js';
import { dateEl, fields, h, json, pager, paramsObject, route, section } from '../dom.js';

function what(e) {
  const counts = Object.entries(e.counts || {}).map(([k, n]) => `${n} ${k}`).join(', ');
  return [e.document_id ? `document ${e.document_id}` : '', e.summary || '', counts].filter(Boolean).join(' · ') || '–';
}

export async function render(ctx) {
  const { bank, params, root } = ctx;
  const current = paramsObject(params);
  const selected = params.get('id') || '';
  const limit = Number(params.get('limit')) || 50;
  const offset = Number(params.get('offset')) || 0;
  root.append(h('h1', {}, 'Audit trail'));
  const page = await api.get('audit', { bank, id: selected, limit, offset });
  if (page.entry) {
    const e = page.entry;
    root.append(section(`${e.operation} · ${e.at.replace('T', ' ').slice(0, 19)} UTC`, h('div', { class: 'audit-entry', id: 'audit-selected' },
      fields([
        ['Entry', h('span', { class: 'mono' }, e.id)], ['When (UTC)', dateEl(e.at)], ['Operation', e.operation],
        ['Surface', e.surface], ['Token', e.token_id || '–'], ['Document', e.document_id || '–'],
        ['Memories', e.memory_ids.length ? h('span', { class: 'mono small' }, e.memory_ids.join(', ')) : '–'],
        ['Counts', Object.keys(e.counts || {}).length ? json(e.counts) : '–'], ['Summary', e.summary || '–'],
      ]),
      e.operation === 'forget' ? h('p', { class: 'muted small' }, 'Forgotten memories are deleted from both stores: the trail keeps their ids and counts, never their text.') : null)));
  }
  const go = (o, l) => ctx.go('audit', { ...current, offset: o, limit: l });
  root.append(pager(page, go), h('table', { class: 'grid audit' },
    h('thead', {}, h('tr', {}, h('th', {}, 'When (UTC)'), h('th', {}, 'Operation'), h('th', {}, 'Surface'), h('th', {}, 'Token'),
      h('th', {}, 'What'), h('th', {}, 'Memories'))),
    h('tbody', {}, page.items.map((e) => h('tr', { dataset: { id: e.id }, class: e.id === selected ? 'selected' : undefined },
      h('td', { class: 'nowrap' }, h('a', { href: route(bank, 'audit', { ...current, id: e.id }) }, dateEl(e.at))),
      h('td', {}, h('span', { class: `badge op-${e.operation}` }, e.operation)), h('td', {}, e.surface),
      h('td', { class: 'mono small' }, e.token_id || '–'), h('td', { class: 'small' }, what(e)),
      h('td', { class: 'mono small' }, e.memory_ids.slice(0, 3).join(', ') + (e.memory_ids.length > 3 ? ` … (${e.memory_ids.length})` : '')))))),
  pager(page, go));
}
