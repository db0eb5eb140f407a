// Memories by network, newest first, a page at a time; filtered by entity or document when asked.
import * as api from '../api.js';
import { NETWORKS, fmtNum, h, memoryTable, pager, paramsObject, route } from '../dom.js';

export async function render(ctx) {
  const { bank, params, summary, root } = ctx;
  const current = paramsObject(params);
  const network = params.get('network') || '';
  const entity = params.get('entity') || '';
  const document_ = params.get('document') || '';
  const limit = Number(params.get('limit')) || 50;
  const offset = Number(params.get('offset')) || 0;
  root.append(h('h1', {}, 'Memories'));
  const counts = new Map(['', ...NETWORKS].map((n) => [n, h('span', { class: 'count' }, n ? '…' : fmtNum(summary.memories))]));
  root.append(h('div', { class: 'segmented', role: 'tablist', 'aria-label': 'network' },
    ['', ...NETWORKS].map((n) => h('a', {
      class: `seg${n === network ? ' active' : ''}`, role: 'tab', dataset: { network: n || 'all' },
      href: route(bank, 'memories', { ...current, network: n, offset: 0 }),
    }, n || 'all', ' ', counts.get(n)))));
  // Per-network counts scan the bank: they fill in after the first page is on screen.
  api.get('counts', { bank }).then((c) => {
    for (const n of NETWORKS) counts.get(n).textContent = fmtNum(c.networks[n]);
  }).catch(() => {});
  const filters = [];
  if (entity) filters.push(['entity', params.get('entity_name') || entity, { entity: '', entity_name: '' }]);
  if (document_) filters.push(['document', document_, { document: '' }]);
  if (filters.length) {
    root.append(h('div', { class: 'filters' }, filters.map(([kind, label, clear]) =>
      h('span', { class: 'chip filter' }, `${kind}: ${label} `,
        h('a', { href: route(bank, 'memories', { ...current, ...clear, offset: 0 }), title: `remove the ${kind} filter`, class: 'remove' }, '×')))));
  }
  const page = await api.get('memories', { bank, network, entity, document: document_, limit, offset });
  const go = (o, l) => ctx.go('memories', { ...current, offset: o, limit: l });
  root.append(pager(page, go), memoryTable(bank, page.items), pager(page, go));
}
