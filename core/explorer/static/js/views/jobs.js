// Background jobs (observations, opinion updates, deferred retains, scheduled reflects): status, attempts, errors.
import { fmtDate, h, json, statusBadge } from '../dom.js';
import { statusList } from './status_list.js';

const STATUSES = ['queued', 'running', 'done', 'failed'];

export async function render(ctx) {
  const { root } = ctx;
  const list = await statusList(ctx, {
    view: 'jobs', title: 'Background jobs', statuses: STATUSES, noun: 'jobs', emptyAll: 'No background jobs.',
  });
  if (!list) return;
  const { page } = list;
  root.append(list.pager(), h('table', { class: 'grid jobs' },
    h('thead', {}, h('tr', {}, h('th', {}, 'Created (UTC)'), h('th', {}, 'Kind'), h('th', {}, 'Status'), h('th', { class: 'num' }, 'Attempts'),
      h('th', {}, 'Run after (UTC)'), h('th', {}, 'Error'), h('th', {}, 'Payload'))),
    h('tbody', {}, page.items.map((j) => h('tr', { dataset: { id: j.id } },
      h('td', { class: 'nowrap', title: j.id }, fmtDate(j.created_at)),
      h('td', {}, j.kind),
      h('td', {}, statusBadge(j.status), j.owner ? h('div', { class: 'small muted', title: 'process holding it' }, j.owner) : null),
      h('td', { class: 'num' }, j.attempts),
      h('td', { class: 'nowrap' }, fmtDate(j.run_after)),
      h('td', { class: 'text' }, j.error ? h('pre', { class: 'error-text' }, j.error) : h('span', { class: 'muted' }, '–')),
      h('td', {}, h('details', {}, h('summary', {}, 'show'), json(j.payload))))))),
  list.pager());
}
