// The entity graph: the most mentioned entities and how often they are mentioned together (cytoscape, vendored).
// Only the top N are drawn at first; a node grows its neighbourhood on demand (double-click or "Expand").
import * as api from '../api.js';
import { forget } from '../confirm.js';
import { fields, fmtDate, fmtNum, h, pager, route } from '../dom.js';
import cytoscape from '../../vendor/cytoscape.esm.min.js';

const TOPS = [30, 60, 100, 200];
const MAX_VISIBLE = 200; // ids sent with an expansion (the server links new nodes to these)
const TYPE_COLORS = {
  PERSON: '#3b5bdb', ORGANIZATION: '#e67700', LOCATION: '#2b8a3e', PRODUCT: '#ae3ec9', CONCEPT: '#0c8599', OTHER: '#868e96',
};

const STYLE = [
  {
    selector: 'node',
    style: {
      'background-color': '#868e96', label: 'data(name)', width: 'data(size)', height: 'data(size)', 'font-size': 13,
      color: '#212529', 'text-valign': 'bottom', 'text-margin-y': 3, 'text-outline-color': '#ffffff', 'text-outline-width': 2,
    },
  },
  ...Object.entries(TYPE_COLORS).map(([type, color]) => ({ selector: `node[type = "${type}"]`, style: { 'background-color': color } })),
  { selector: 'node[?observation]', style: { 'border-width': 3, 'border-color': '#fab005' } },
  { selector: 'node:selected', style: { 'border-width': 4, 'border-color': '#e03131' } },
  { selector: 'edge', style: { width: 'data(w)', 'line-color': '#ced4da', 'curve-style': 'haystack', opacity: 0.8 } },
  { selector: 'edge:selected', style: { 'line-color': '#e03131' } },
];

function nodeElement(n) {
  return { group: 'nodes', data: { id: n.id, name: n.name, type: n.type, mentions: n.mentions, observation: n.observation, size: Math.min(70, 14 + 7 * Math.log2(1 + n.mentions)) } };
}

function edgeElement(e) {
  return { group: 'edges', data: { id: `${e.source}|${e.target}`, source: e.source, target: e.target, weight: e.weight, w: Math.min(10, 1 + Math.log2(e.weight)) } };
}

async function runLayout(cy, randomize) {
  // Stronger repulsion as the graph grows, so that labels stay readable; edges pull by their weight.
  const n = cy.nodes().length;
  const layout = cy.layout({
    name: 'cose', animate: false, randomize, fit: true, padding: 24, numIter: 1000, nodeOverlap: 20,
    nodeRepulsion: () => (n > 30 ? 60000 : 12000), idealEdgeLength: () => (n > 30 ? 140 : 90), edgeElasticity: () => 60,
  });
  const done = layout.promiseOn('layoutstop');
  layout.run();
  await done;
  // A few nodes would otherwise be blown up to fill the whole canvas.
  if (cy.zoom() > 1.5) {
    cy.zoom(1.5);
    cy.center();
  }
}

export async function render(ctx) {
  const { bank, params, root } = ctx;
  const top = Number(params.get('top')) || 60;
  const focus = params.get('entity') || '';
  root.append(h('h1', {}, 'Entities'));
  const container = h('div', { id: 'graph', class: 'graph', dataset: { nodes: '0' } });
  const panel = h('aside', { class: 'entity-panel card' }, h('p', { class: 'muted' }, 'Click an entity to see its observation; double-click to expand it.'));
  const topSelect = h('select', { 'aria-label': 'entities drawn' }, TOPS.map((n) => h('option', { value: n, selected: n === top }, `top ${n} by mentions`)));
  topSelect.addEventListener('change', () => ctx.go('graph', { top: topSelect.value }));
  const status = h('span', { class: 'muted small' });
  let cy = null;
  const toolbar = h('div', { class: 'toolbar' }, topSelect,
    h('button', { class: 'btn', type: 'button', onclick: () => cy && cy.fit(undefined, 24) }, 'Fit'),
    h('button', { class: 'btn', type: 'button', onclick: () => cy && runLayout(cy, true) }, 'Re-layout'),
    status,
    h('span', { class: 'legend' }, Object.entries(TYPE_COLORS).map(([t]) => h('span', { class: `legend-item type-${t}` }, t.toLowerCase())),
      h('span', { class: 'legend-item observed' }, 'has observation')));
  root.append(toolbar, h('div', { class: 'graph-wrap' }, container, panel));
  const table = h('section', { class: 'card' });
  root.append(table);

  const data = await api.get('graph', { bank, limit: top });
  const updateCounts = () => {
    container.dataset.nodes = String(cy.nodes().length);
    container.dataset.edges = String(cy.edges().length);
    const hidden = data.edges_total > data.edges.length ? ` (the strongest; ${fmtNum(data.edges_total)} pairs share memories)` : '';
    status.textContent = `${fmtNum(cy.nodes().length)} entities, ${fmtNum(cy.edges().length)} links drawn${hidden}`;
  };

  const addElements = (nodes, edges, near) => {
    const fresh = nodes.filter((n) => cy.getElementById(n.id).empty()).map(nodeElement);
    if (near) {
      const p = near.position();
      fresh.forEach((el, i) => { el.position = { x: p.x + 80 * Math.cos(i), y: p.y + 80 * Math.sin(i) }; });
    }
    cy.add(fresh);
    cy.add(edges.filter((e) => cy.getElementById(`${e.source}|${e.target}`).empty()
      && !cy.getElementById(e.source).empty() && !cy.getElementById(e.target).empty()).map(edgeElement));
    updateCounts();
    return fresh.length;
  };

  const expand = async (id) => {
    const node = cy.getElementById(id);
    const visible = cy.nodes().map((n) => n.id()).filter((v) => v !== id).slice(0, MAX_VISIBLE);
    const more = await api.get('graph/expand', { bank, entity: id, limit: 15, visible });
    const added = addElements(more.nodes, more.edges, node);
    if (added) await runLayout(cy, false);
    status.textContent += added ? ` · ${added} added around ${node.data('name')}` : ` · nothing new around ${node.data('name')}`;
  };

  const select = async (id) => {
    cy.$(':selected').unselect();
    const node = cy.getElementById(id);
    node.select();
    panel.replaceChildren(h('p', { class: 'muted' }, 'Loading…'));
    const info = await api.get('entity', { bank, id });
    const e = info.entity;
    const obs = info.observation;
    panel.replaceChildren(
      h('h2', {}, e.name),
      fields([
        ['Type', e.type.toLowerCase()],
        ['Mentions', h('a', { href: route(bank, 'memories', { entity: e.id, entity_name: e.name }) }, fmtNum(e.mention_count))],
        e.aliases.length ? ['Aliases', e.aliases.join(', ')] : null,
        ['First seen', fmtDate(e.first_seen)],
        ['Last seen', fmtDate(e.last_seen)],
      ]),
      h('h3', {}, 'Observation'),
      obs ? h('div', { class: 'observation' }, h('p', {}, obs.text), h('p', { class: 'muted small' }, `written ${fmtDate(obs.created_at)}`))
        : h('p', { class: 'muted' }, 'No observation yet (written in the background when its facts change).'),
      h('h3', {}, 'Often mentioned with'),
      info.related.length ? h('div', { class: 'chips' }, info.related.map((r) => h('a', {
        class: 'chip', href: route(bank, 'entity', { id: r.entity.id }), title: `${r.shared} memories mention both`,
      }, `${r.entity.name} · ${r.shared}`))) : h('p', { class: 'muted' }, 'no other entity'),
      h('div', { class: 'actions' },
        h('button', { class: 'btn', type: 'button', id: 'expand-entity', onclick: () => expand(e.id) }, 'Expand neighbours'),
        h('a', { class: 'btn', href: route(bank, 'entity', { id: e.id }) }, 'Entity page'),
        h('button', {
          class: 'btn danger', type: 'button',
          onclick: () => forget(bank, { entity: e.name }, {
            title: `Forget ${e.name}?`, message: `Every memory that mentions ${e.name} (${fmtNum(e.mention_count)}) is deleted.`,
            onDone: () => { ctx.invalidate(); ctx.go('graph', { top }); },
          }),
        }, 'Forget entity…')));
  };

  if (!data.nodes.length) {
    container.replaceWith(h('p', { class: 'muted empty' }, 'No entities yet.'));
  } else {
    cy = cytoscape({ container, style: STYLE, elements: [...data.nodes.map(nodeElement), ...data.edges.map(edgeElement)], minZoom: 0.1, maxZoom: 4 });
    cy.on('tap', 'node', (event) => { select(event.target.id()); });
    cy.on('dbltap', 'node', (event) => { expand(event.target.id()); });
    await runLayout(cy, true);
    updateCounts();
    if (focus) {
      if (cy.getElementById(focus).empty()) {
        const info = await api.get('entity', { bank, id: focus });
        addElements([{ id: info.entity.id, name: info.entity.name, type: info.entity.type, mentions: info.entity.mention_count, observation: Boolean(info.observation) }], []);
        await expand(focus);
      }
      await select(focus);
      cy.center(cy.getElementById(focus));
    }
  }
  await entityTable(ctx, table, (id, entity) => {
    if (!cy) return;
    if (cy.getElementById(id).empty()) {
      addElements([{ id, name: entity.name, type: entity.type, mentions: entity.mention_count, observation: false }], []);
      expand(id).then(() => select(id));
    } else {
      const node = cy.getElementById(id);
      const box = cy.extent();
      const p = node.position();
      if (p.x < box.x1 || p.x > box.x2 || p.y < box.y1 || p.y > box.y2) cy.center(node); // only when off screen
      select(id);
    }
    container.scrollIntoView({ block: 'nearest' });
  });
}

// Every entity, most mentioned first, searchable; paged in place (the graph above stays as it is).
async function entityTable(ctx, box, show) {
  const { bank } = ctx;
  let query = '';
  const state = { offset: 0, limit: 25 };
  const search = h('input', { type: 'search', placeholder: 'find an entity by name', 'aria-label': 'find an entity', class: 'search' });
  const body = h('div', {});
  box.append(h('h2', {}, 'All entities'), search, body);
  const load = async () => {
    const page = await api.get('entities', { bank, q: query, limit: state.limit, offset: state.offset });
    const go = (o, l) => { state.offset = o; state.limit = l; load(); };
    body.replaceChildren(pager(page, go), page.items.length ? h('table', { class: 'grid entities' },
      h('thead', {}, h('tr', {}, h('th', {}, 'Entity'), h('th', {}, 'Type'), h('th', { class: 'num' }, 'Mentions'), h('th', {}, 'First seen'), h('th', {}, 'Last seen'), h('th', {}, ''))),
      h('tbody', {}, page.items.map((e) => h('tr', { dataset: { id: e.id } },
        h('td', {}, h('a', { href: route(bank, 'entity', { id: e.id }) }, e.name), e.aliases.length ? h('span', { class: 'muted small' }, ` (${e.aliases.join(', ')})`) : null),
        h('td', {}, e.type.toLowerCase()),
        h('td', { class: 'num' }, h('a', { href: route(bank, 'memories', { entity: e.id, entity_name: e.name }) }, fmtNum(e.mention_count))),
        h('td', { class: 'nowrap' }, fmtDate(e.first_seen, { time: false })),
        h('td', { class: 'nowrap' }, fmtDate(e.last_seen, { time: false })),
        h('td', {}, h('button', { class: 'btn small', type: 'button', onclick: () => show(e.id, e) }, 'show in graph'))))))
      : h('p', { class: 'muted' }, query ? `No entity matches “${query}”.` : 'No entities.'));
  };
  let timer = null;
  search.addEventListener('input', () => {
    clearTimeout(timer);
    timer = setTimeout(() => { query = search.value.trim(); state.offset = 0; load(); }, 250);
  });
  await load();
}
