// One entity: its observation, the entities it is mentioned with, and every memory that mentions it (paged).
import * as api from '../api.js';
import { forget } from '../confirm.js';
import { fields, fmtDate, fmtNum, h, memoryTable, pager, paramsObject, route, section } from '../dom.js';

export async function render(ctx) {
  const { bank, params, root } = ctx;
  const current = paramsObject(params);
  const limit = Number(params.get('limit')) || 50;
  const offset = Number(params.get('offset')) || 0;
  const info = await api.get('entity', { bank, id: params.get('id'), name: params.get('name') });
  const e = info.entity;
  const page = await api.get('memories', { bank, entity: e.id, limit, offset });
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
    h('button', {
      class: 'btn danger', type: 'button', id: 'forget-entity',
      onclick: () => forget(bank, { entity: e.name }, {
        title: `Forget ${e.name}?`, message: `Every memory that mentions ${e.name} (${fmtNum(e.mention_count)}) is deleted.`,
        onDone: () => { ctx.invalidate(); ctx.go('graph'); },
      }),
    }, 'Forget entity and its memories…'))));
  const obs = info.observation;
  root.append(section('Observation', obs
    ? h('div', { class: 'observation' }, h('p', { class: 'prose' }, obs.text),
      h('p', { class: 'muted small' }, `written ${fmtDate(obs.created_at)} · `, h('a', { href: route(bank, 'memory', { id: obs.id }) }, 'memory ›')))
    : h('p', { class: 'muted' }, 'No observation yet: it is written in the background when the entity’s facts change.')));
  root.append(section('Often mentioned with', info.related.length
    ? h('div', { class: 'chips' }, info.related.map((r) => h('a', { class: 'chip', href: route(bank, 'entity', { id: r.entity.id }), title: `${r.shared} memories mention both` }, `${r.entity.name} · ${r.shared}`)))
    : h('p', { class: 'muted' }, 'No other entity.')));
  const go = (o, l) => ctx.go('entity', { ...current, offset: o, limit: l });
  root.append(section(`Memories that mention ${e.name} (${fmtNum(page.total)})`, pager(page, go), memoryTable(bank, page.items)));
}
