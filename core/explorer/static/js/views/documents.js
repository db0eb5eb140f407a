// Raw documents (what each retain stored first), newest first, with status and errors.
import * as api from '../api.js';
import { fmtDate, fmtNum, h, pager, paramsObject, route, statusBadge } from '../dom.js';

const STATUSES = ['pending', 'extracting', 'done', 'failed'];

export async function render(ctx) {
  const { bank, params, root } = ctx;
  const current = paramsObject(params);
  const status = params.get('status') || '';
  const limit = Number(params.get('limit')) || 50;
  const offset = Number(params.get('offset')) || 0;
  root.append(h('h1', {}, 'Documents'));
  root.append(h('div', { class: 'segmented' }, ['', ...STATUSES].map((s) => h('a', {
    class: `seg${s === status ? ' active' : ''}`, href: route(bank, 'documents', { ...current, status: s, offset: 0 }),
  }, s || 'all'))));
  const page = await api.get('documents', { bank, status, limit, offset });
  const go = (o, l) => ctx.go('documents', { ...current, offset: o, limit: l });
  if (!page.items.length) {
    root.append(h('p', { class: 'muted empty' }, status ? `No ${status} documents.` : 'No documents.'));
    return;
  }
  root.append(pager(page, go), h('table', { class: 'grid documents' },
    h('thead', {}, h('tr', {}, h('th', {}, 'Stored (UTC)'), h('th', {}, 'Document'), h('th', {}, 'Status'), h('th', {}, 'Said at (UTC)'),
      h('th', { class: 'num' }, 'Size'), h('th', { class: 'num' }, 'Memories'), h('th', {}, 'Preview / error'))),
    h('tbody', {}, page.items.map((d) => h('tr', { dataset: { id: d.id } },
      h('td', { class: 'nowrap' }, fmtDate(d.created_at)),
      h('td', { class: 'mono' }, h('a', { href: route(bank, 'document', { id: d.id }) }, d.id)),
      h('td', {}, statusBadge(d.status)),
      h('td', { class: 'nowrap' }, fmtDate(d.timestamp)),
      h('td', { class: 'num nowrap' }, d.message_count === null || d.message_count === undefined ? `${fmtNum(d.chars)} chars` : `${fmtNum(d.message_count)} msgs`),
      h('td', { class: 'num' }, h('a', { href: route(bank, 'memories', { document: d.id }) }, fmtNum(d.memories))),
      h('td', { class: 'text' }, d.error ? h('span', { class: 'error-text' }, d.error) : h('span', { class: 'muted' }, d.preview)))))),
  pager(page, go));
}
