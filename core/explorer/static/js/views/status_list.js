// The part the documents and jobs pages share: a heading, a filter by status, one page of the list, and the
// pager that moves through it. The caller draws the table.
import * as api from '../api.js';
import { h, pager, paramsObject, route } from '../dom.js';

// Draws the heading and the status filter and fetches the page. Returns { page, pager } where pager() makes a
// pager element (one above the table, one below), or null after saying that nothing matches.
export async function statusList(ctx, { view, title, statuses, noun, emptyAll }) {
  const { bank, params, root } = ctx;
  const current = paramsObject(params);
  const status = params.get('status') || '';
  const limit = Number(params.get('limit')) || 50;
  const offset = Number(params.get('offset')) || 0;
  root.append(h('h1', {}, title));
  root.append(h('div', { class: 'segmented' }, ['', ...statuses].map((s) => h('a', {
    class: `seg${s === status ? ' active' : ''}`, href: route(bank, view, { ...current, status: s, offset: 0 }),
  }, s || 'all'))));
  const page = await api.get(view, { bank, status, limit, offset });
  if (!page.items.length) {
    root.append(h('p', { class: 'muted empty' }, status ? `No ${status} ${noun}.` : emptyAll));
    return null;
  }
  const go = (o, l) => ctx.go(view, { ...current, offset: o, limit: l });
  return { page, pager: () => pager(page, go) };
}
