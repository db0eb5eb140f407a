// Background jobs (observations, opinion updates, deferred retains, scheduled reflects): status, attempts, errors,
// and what a finished job reports (the facts job: facts stored, and each fact the checks rejected with the reason).
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
      h('th', {}, 'Run after (UTC)'), h('th', {}, 'Error'), h('th', {}, 'Result'), h('th', {}, 'Payload'))),
    h('tbody', {}, page.items.map((j) => h('tr', { dataset: { id: j.id } },
      h('td', { class: 'nowrap', title: j.id }, fmtDate(j.created_at)),
      h('td', {}, j.kind),
      h('td', {}, statusBadge(j.status), j.owner ? h('div', { class: 'small muted', title: 'process holding it' }, j.owner) : null),
      h('td', { class: 'num' }, j.attempts),
      h('td', { class: 'nowrap' }, fmtDate(j.run_after)),
      h('td', { class: 'text' }, j.error ? h('pre', { class: 'error-text' }, j.error) : h('span', { class: 'muted' }, '–')),
      h('td', { class: 'text job-result' }, result(j.result)),
      h('td', {}, h('details', {}, h('summary', {}, 'show'), json(j.payload))))))),
  list.pager());
}

// A finished job's report. The facts job's: how many facts were stored, how many the checks against the cited
// messages rejected and why, each rejected fact listed (never silently lost).
function result(r) {
  if (!r) return h('span', { class: 'muted' }, '–');
  if (typeof r.facts !== 'number') return h('details', {}, h('summary', {}, 'show'), json(r));
  const reasons = Object.entries(r.rejected_by_reason || {}).map(([k, v]) => `${k} ${v}`).join(', ');
  const line = `${r.facts} facts stored` + (r.rejected ? `, ${r.rejected} rejected (${reasons})` : '')
    + (r.repointed ? `, ${r.repointed} citations re-pointed` : '');
  if (!r.rejections || !r.rejections.length) return h('span', {}, line);
  return h('details', {}, h('summary', {}, line), h('ul', { class: 'rejections' }, r.rejections.map((x) =>
    h('li', {}, h('span', { class: 'badge' }, x.reason), ' ', x.text,
      h('span', { class: 'small muted' }, ` (cites ${(x.sources || []).join(', ') || 'nothing'}${x.detail ? `: ${x.detail}` : ''})`)))));
}
