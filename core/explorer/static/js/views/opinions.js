// Opinions with their current confidence; the selected one's confidence over time and each step's evidence, each
// with its verdict. Each opinion's own page (views/opinion.js) shows its stance and trajectory in full.
import * as api from '../api.js';
import { chartLegend, confidenceChart } from '../chart.js';
import {
  confidenceBar, dateEl, entityChips, fmtDate, h, memoryLink, networkBadge, pager, paramsObject, route, section, verdictBadge,
} from '../dom.js';

// Every step: when, what happened, old -> new confidence, why, and the memories that caused it.
export function historyTable(bank, history) {
  return h('table', { class: 'grid history' },
    h('thead', {}, h('tr', {}, h('th', {}, '#'), h('th', {}, 'When (UTC)'), h('th', {}, 'Step'), h('th', { class: 'num' }, 'Confidence'),
      h('th', {}, 'Rationale'), h('th', {}, 'Evidence'))),
    h('tbody', {}, history.map((e, i) => h('tr', { id: `step-${i}` },
      h('td', { class: 'num' }, i + 1),
      h('td', { class: 'nowrap' }, dateEl(e.at)),
      h('td', {}, h('span', { class: `badge label-${e.label}` }, e.label)),
      h('td', { class: 'num nowrap' }, e.old_confidence === null || e.old_confidence === undefined ? '' : `${e.old_confidence.toFixed(2)} → `, e.new_confidence.toFixed(2)),
      h('td', {}, e.rationale || '', e.old_text && e.new_text ? h('div', { class: 'small' }, 'rewrote ', h('del', {}, e.old_text), ' → ', h('ins', {}, e.new_text)) : null),
      h('td', {}, (e.evidence_memories || []).length ? h('ul', { class: 'plain' }, e.evidence_memories.map((m) => h('li', {},
        [m.verdict ? [verdictBadge(m.verdict), ' '] : null,
          m.missing ? h('span', { class: 'muted' }, `${m.id} (forgotten)`) : [networkBadge(m.network), ' ', memoryLink(bank, m)]]))) : h('span', { class: 'muted' }, '–'))))));
}

export async function render(ctx) {
  const { bank, params, root } = ctx;
  const current = paramsObject(params);
  const selected = params.get('id') || '';
  const limit = Number(params.get('limit')) || 50;
  const offset = Number(params.get('offset')) || 0;
  root.append(h('h1', {}, 'Opinions'));
  const page = await api.get('opinions', { bank, limit, offset });
  const go = (o, l) => ctx.go('opinions', { ...current, offset: o, limit: l });
  const detail = h('div', { class: 'detail' });
  if (!page.items.length) {
    root.append(h('p', { class: 'muted empty' }, 'No opinions yet: reflect forms them (or Bank.add_opinion).'));
    return;
  }
  root.append(h('div', { class: 'split' },
    h('div', { class: 'list' }, pager(page, go), h('table', { class: 'grid opinions' },
      h('thead', {}, h('tr', {}, h('th', {}, 'Opinion'), h('th', {}, 'Confidence'), h('th', { class: 'num' }, 'Steps'), h('th', {}, 'Formed (UTC)'), h('th', {}, 'Page'))),
      h('tbody', {}, page.items.map((o) => h('tr', { class: o.id === selected ? 'selected' : undefined, dataset: { id: o.id } },
        h('td', { class: 'text' }, h('a', { href: route(bank, 'opinions', { ...current, id: o.id }) }, o.text), ' ', entityChips(bank, o.entities)),
        h('td', {}, confidenceBar(o.confidence)),
        h('td', { class: 'num' }, o.history.length),
        h('td', { class: 'nowrap' }, fmtDate(o.history.length ? o.history[0].at : o.created_at)),
        h('td', { class: 'nowrap' }, h('a', { href: route(bank, 'opinion', { id: o.id }), class: 'open-opinion', title: `the trajectory of “${o.text}”` }, 'trajectory ›'))))))),
    detail));
  const id = selected || page.items[0].id;
  const data = await api.get('opinion', { bank, id });
  const o = data.opinion;
  detail.append(section('Confidence over time',
    h('p', { class: 'opinion-text' }, o.text, ' ', h('a', { href: route(bank, 'memory', { id: o.id }), class: 'small' }, 'memory ›')),
    h('p', { class: 'small' }, h('a', { href: route(bank, 'opinion', { id: o.id }), id: 'open-opinion' }, 'Stance, trajectory and each step’s evidence with its verdict ›')),
    confidenceChart(data.history, { onPick: (i) => document.getElementById(`step-${i}`)?.scrollIntoView({ block: 'center' }) }),
    chartLegend(),
    historyTable(bank, data.history)));
}
