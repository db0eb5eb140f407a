// Background jobs (observations, opinion updates, deferred retains, scheduled reflects): status, attempts, errors.
import * as api from '../api.js';
import { fmtDate, h, json, pager, paramsObject, route, statusBadge } from '../dom.js';

const STATUSES = ['queued', 'running', 'done', 'failed'];

export async function render(ctx) {
  const { bank, params, root } = ctx;
  const current = paramsObject(params);
  const status = params.get('status') || '';
  const limit = Number(params.get('limit')) || 50;
  const offset = Number(params.get('offset')) || 0;
  root.append(h('h1', {}, 'Background jobs'));
  root.append(h('div', { class: 'segmented' }, ['', ...STATUSES].map((s) => h('a', {
    class: `seg${s === status ? ' active' : ''}`, href: route(bank, 'jobs', { ...current, status: s, offset: 0 }),
  }, s || 'all'))));
  const page = await api.get('jobs', { bank, status, limit, offset });
  const go = (o, l) => ctx.go('jobs', { ...current, offset: o, limit: l });
  if (!page.items.length) {
    root.append(h('p', { class: 'muted empty' }, status ? `No ${status} jobs.` : 'No background jobs.'));
    return;
  }
  root.append(pager(page, go), h('table', { class: 'grid jobs' },
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
  pager(page, go));
}
