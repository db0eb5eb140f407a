// One entity: its memories over time (uPlot), its values that changed (superseded memories, each linked to what
// superseded it), its observation sentence by sentence with the messages each rests on, the entities it is
// mentioned with, and every memory that mentions it (paged).
import * as api from '../api.js';
import { forget } from '../confirm.js';
import { NETWORKS, fields, fmtDate, fmtNum, h, memoryLink, memoryTable, networkBadge, pager, paramsObject, route, section } from '../dom.js';
import { NETWORK_COLORS, stackedBars } from '../plots.js';

function overTime(bank, e, growth) {
  const g = growth.said;
  return stackedBars({
    x: g.x, yLabel: 'memories', height: 180,
    series: NETWORKS.map((n) => ({ key: n, label: n, color: NETWORK_COLORS[n], values: g.counts[n] })),
    label: `memories that mention ${e.name} per day said and network: ${fmtNum(growth.scanned)} memories on ${g.x.length} days`,
  });
}

function changesTable(bank, e, history) {
  if (!history.changes.length) return h('p', { class: 'muted', id: 'entity-no-changes' }, `No memory about ${e.name} has been superseded: every value it holds is current.`);
  const when = (m) => (m.mentioned_at || m.occurred_start ? fmtDate(m.mentioned_at || m.occurred_start) : '–');
  return h('table', { class: 'grid', id: 'entity-changes' },
    h('thead', {}, h('tr', {}, h('th', {}, 'Was (superseded)'), h('th', {}, 'Held until (UTC)'), h('th', {}, 'Superseded by'), h('th', {}, 'Said (UTC)'))),
    h('tbody', {}, history.changes.map((c) => h('tr', { dataset: { id: c.memory.id } },
      h('td', { class: 'text superseded' }, networkBadge(c.memory.network), ' ', memoryLink(bank, c.memory), h('span', { class: 'small muted' }, ` said ${when(c.memory)}`)),
      h('td', { class: 'nowrap' }, c.memory.valid_until ? fmtDate(c.memory.valid_until) : '–'),
      h('td', { class: 'text' }, c.by.missing ? h('span', { class: 'muted' }, `${c.by.id} (forgotten since)`)
        : [memoryLink(bank, c.by), ' ', h('span', { class: `badge ${c.by.superseded_by ? 'superseded' : 'current'}` }, c.by.superseded_by ? 'superseded too' : 'current')]),
      h('td', { class: 'nowrap' }, c.by.missing ? '–' : when(c.by))))));
}

function observationBlock(bank, obs, history) {
  const sentences = history.sentences;
  const support = (s) => h('ul', { class: 'support plain' }, s.support.length ? s.support.map((m) => h('li', {},
    m.missing ? h('span', { class: 'muted' }, `${m.id} (forgotten since)`) : [
      memoryLink(bank, m),
      h('span', { class: 'small muted' }, ` · ${fmtDate(m.mentioned_at || m.occurred_start)} · `),
      m.document_id ? h('a', { class: 'mono small', href: route(bank, 'document', { id: m.document_id, highlight: m.sources }) },
        (m.sources || []).join(', ') || m.document_id) : null,
    ])) : h('li', { class: 'muted' }, 'no message recorded for this sentence'));
  return h('div', { class: 'observation' },
    sentences.length
      ? h('ol', { class: 'observation-sentences', id: 'entity-observation-sentences' }, sentences.map((s, i) => h('li', { dataset: { sentence: i } },
        h('p', { class: 'prose sentence' }, s.text), h('p', { class: 'small muted support-head' }, `rests on ${s.support.length} message${s.support.length === 1 ? '' : 's'}:`), support(s))))
      : h('p', { class: 'prose' }, obs.text),
    h('p', { class: 'muted small' }, `written ${fmtDate(obs.created_at)} · `, h('a', { href: route(bank, 'memory', { id: obs.id }) }, 'memory ›')));
}

export async function render(ctx) {
  const { bank, params, root } = ctx;
  const current = paramsObject(params);
  const limit = Number(params.get('limit')) || 50;
  const offset = Number(params.get('offset')) || 0;
  const info = await api.get('entity', { bank, id: params.get('id'), name: params.get('name') });
  const e = info.entity;
  const [page, history] = await Promise.all([
    api.get('memories', { bank, entity: e.id, limit, offset }), api.get('entity/history', { bank, id: e.id })]);
  root.append(h('p', { class: 'crumbs' }, h('a', { href: route(bank, 'graph') }, '‹ Entities')));
  root.append(h('h1', {}, e.name, ' ', h('span', { class: 'badge' }, e.type.toLowerCase())));
  root.append(section('Entity', fields([
    ['Id', h('code', {}, e.id)],
    ['Aliases', e.aliases.length ? e.aliases.join(', ') : '–'],
    ['Mentions', fmtNum(e.mention_count)],
    ['First seen', fmtDate(e.first_seen)],
    ['Last seen', fmtDate(e.last_seen)],
  ]), h('div', { class: 'actions' },
    h('a', { class: 'btn', href: route(bank, 'graph', { entity: e.id }) }, 'Show in graph'),
    h('a', { class: 'btn', href: route(bank, 'timeline', { entity: e.id }) }, 'Show on the timeline'),
    h('button', {
      class: 'btn danger', type: 'button', id: 'forget-entity',
      onclick: () => forget(bank, { entity: e.name }, {
        title: `Forget ${e.name}?`, message: `Every memory that mentions ${e.name} (${fmtNum(e.mention_count)}) is deleted.`,
        onDone: () => { ctx.invalidate(); ctx.go('graph'); },
      }),
    }, 'Forget entity and its memories…'))));
  const time = h('section', { class: 'card', id: 'entity-time' }, h('h2', {}, 'Over time'),
    h('p', { class: 'muted small' }, 'Memories that mention it per day (UTC) it was said, by network · ',
      h('a', { href: route(bank, 'timeline', { entity: e.id }) }, 'on the timeline ›')));
  root.append(time);
  const chart = await overTime(bank, e, history.growth);
  time.append(chart);
  chart.draw?.();
  if (history.growth.truncated) time.append(h('p', { class: 'muted small' }, `The newest ${fmtNum(history.growth.scanned)} of ${fmtNum(history.growth.total)}.`));
  root.append(h('section', { class: 'card', id: 'entity-values' }, h('h2', {}, 'Values that changed'),
    h('p', { class: 'muted small' }, 'A later memory supersedes an earlier one (a move, a new job, a correction): the earlier stays as history.'),
    changesTable(bank, e, history)));
  const obs = info.observation;
  root.append(h('section', { class: 'card', id: 'entity-observation' }, h('h2', {}, 'Observation'), obs
    ? observationBlock(bank, obs, history)
    : h('p', { class: 'muted' }, 'No observation yet: it is written in the background when the entity’s facts change.')));
  root.append(section('Often mentioned with', info.related.length
    ? h('div', { class: 'chips' }, info.related.map((r) => h('a', { class: 'chip', href: route(bank, 'entity', { id: r.entity.id }), title: `${r.shared} memories mention both` }, `${r.entity.name} · ${r.shared}`)))
    : h('p', { class: 'muted' }, 'No other entity.')));
  const go = (o, l) => ctx.go('entity', { ...current, offset: o, limit: l });
  root.append(section(`Memories that mention ${e.name} (${fmtNum(page.total)})`, pager(page, go), memoryTable(bank, page.items)));
}
