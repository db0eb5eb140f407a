// One memory and where it came from: the source messages inside its document, its entities, its links and,
// for an opinion, how its confidence moved.
import * as api from '../api.js';
import { chartLegend, confidenceChart } from '../chart.js';
import { forget } from '../confirm.js';
import {
  dateEl, documentLink, entityChips, fields, fmtDate, h, json, memoryLink, networkBadge, route, section, statusBadge,
  whenText,
} from '../dom.js';
import { historyTable } from './opinions.js';

export async function render(ctx) {
  const { bank, params, root } = ctx;
  const data = await api.get('memory', { bank, id: params.get('id') });
  const m = data.memory;
  root.append(h('p', { class: 'crumbs' }, h('a', { href: route(bank, 'memories') }, '‹ Memories')));
  root.append(h('h1', { class: 'memory-title' }, m.text));
  root.append(section('Memory', fields([
    ['Id', h('code', {}, m.id)],
    ['Network', networkBadge(m.network)],
    ['Happened', whenText(m)],
    ['Occurred', h('span', {}, dateEl(m.occurred_start), ' → ', dateEl(m.occurred_end))],
    ['Mentioned', dateEl(m.mentioned_at)],
    ['Stored', dateEl(m.created_at)],
    m.confidence !== null && m.confidence !== undefined ? ['Confidence', m.confidence.toFixed(2)] : null,
    ['Entities', data.entities.length ? h('span', { class: 'chips' }, data.entities.map((e) =>
      h('a', { class: 'chip', href: e.id ? route(bank, 'entity', { id: e.id }) : route(bank, 'entity', { name: e.name }) }, e.name))) : '–'],
    ['Document', documentLink(bank, m)],
    ['Sources', (m.sources || []).join(', ') || '–'],
    Object.keys(m.metadata || {}).length ? ['Metadata', json(m.metadata)] : null,
  ]), h('div', { class: 'actions' }, h('button', {
    class: 'btn danger', type: 'button', id: 'forget-memory',
    onclick: () => forget(bank, { memory_id: m.id }, {
      title: 'Forget this memory?', message: `“${m.text.slice(0, 200)}”`,
      onDone: () => { ctx.invalidate(); ctx.go('memories'); },
    }),
  }, 'Forget memory…'))));

  const doc = data.document;
  const provenance = [];
  if (data.sources.length) {
    provenance.push(h('ol', { class: 'messages' }, data.sources.map((s) => h('li', { class: 'message' },
      h('div', { class: 'message-head' }, h('code', {}, s.id), s.speaker ? h('strong', {}, ` ${s.speaker}`) : null,
        s.timestamp ? h('span', { class: 'muted' }, ` ${fmtDate(s.timestamp)}`) : null),
      h('div', { class: 'message-text' }, s.text)))));
  } else {
    provenance.push(h('p', { class: 'muted' }, doc ? 'The document holds no message with these ids (plain text, or ids it did not keep).' : 'This memory comes from no stored document.'));
  }
  if (doc) {
    provenance.push(h('p', {}, 'In document ', h('a', { href: route(bank, 'document', { id: doc.id, highlight: m.sources }) }, doc.id), ' ',
      statusBadge(doc.status), h('span', { class: 'muted' }, ` · ${size(doc)} · stored ${fmtDate(doc.created_at)}`)));
  }
  root.append(section('Source messages', provenance));

  if (data.history) {
    root.append(section('Confidence over time', confidenceChart(data.history), chartLegend(), historyTable(bank, data.history)));
  }
  root.append(section(`Links (${data.links.length})`, data.links.length ? h('table', { class: 'grid' },
    h('thead', {}, h('tr', {}, h('th', {}, 'Type'), h('th', { class: 'num' }, 'Weight'), h('th', {}, 'Memory'))),
    h('tbody', {}, data.links.map((l) => h('tr', {}, h('td', {}, l.type), h('td', { class: 'num' }, l.weight.toFixed(3)),
      h('td', {}, networkBadge(l.memory.network), ' ', memoryLink(bank, l.memory)))))) : h('p', { class: 'muted' }, 'No stored links.'),
  h('p', { class: 'muted small' }, 'Entity links go through the entities above: ', entityChips(bank, m.entities))));
}

function size(doc) {
  return doc.message_count === null || doc.message_count === undefined ? `${doc.chars} characters` : `${doc.message_count} messages`;
}
