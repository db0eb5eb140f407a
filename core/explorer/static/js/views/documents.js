// Raw documents (what each retain stored first), newest first, with status and errors.
import { fmtDate, fmtNum, h, route, statusBadge } from '../dom.js';
import { statusList } from './status_list.js';

const STATUSES = ['pending', 'extracting', 'done', 'failed'];

export async function render(ctx) {
  const { bank, root } = ctx;
  const list = await statusList(ctx, {
    view: 'documents', title: 'Documents', statuses: STATUSES, noun: 'documents', emptyAll: 'No documents.',
  });
  if (!list) return;
  const { page } = list;
  root.append(list.pager(), h('table', { class: 'grid documents' },
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
  list.pager());
}
