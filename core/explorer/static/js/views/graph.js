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
      'text-wrap': 'ellipsis', 'text-max-width': 140, 'min-zoomed-font-size': 7,
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

// A node's box with its label (model coordinates), widened by a margin.
function labelBox(node, margin) {
  const b = node.boundingBox({ includeNodes: true, includeLabels: true, includeEdges: false, includeOverlays: false });
  return { x1: b.x1 - margin, x2: b.x2 + margin, y1: b.y1 - margin, y2: b.y2 + margin };
}

// Pairs of drawn nodes whose boxes (node and label) overlap: 0 once the layout is done.
export function labelOverlaps(cy, margin = 0) {
  const boxes = cy.nodes().map((n) => labelBox(n, margin)).sort((a, b) => a.x1 - b.x1);
  let count = 0;
  for (let i = 0; i < boxes.length; i += 1) {
    for (let j = i + 1; j < boxes.length && boxes[j].x1 < boxes[i].x2; j += 1) {
      if (boxes[j].y1 < boxes[i].y2 && boxes[i].y1 < boxes[j].y2) count += 1;
    }
  }
  return count;
}

// Each node's position and its box (node and label) around it, measured once: moving a node moves its box.
function shapes(cy, margin) {
  return cy.nodes().map((n) => {
    const p = n.position();
    const b = labelBox(n, margin);
    return { n, x: p.x, y: p.y, l: b.x1 - p.x, r: b.x2 - p.x, t: b.y1 - p.y, b: b.y2 - p.y };
  });
}

function place(cy, items) {
  cy.batch(() => items.forEach((it) => it.n.position({ x: it.x, y: it.y })));
}

function extent(items) {
  let x1 = Infinity; let x2 = -Infinity; let y1 = Infinity; let y2 = -Infinity;
  for (const it of items) {
    x1 = Math.min(x1, it.x + it.l); x2 = Math.max(x2, it.x + it.r);
    y1 = Math.min(y1, it.y + it.t); y2 = Math.max(y2, it.y + it.b);
  }
  return { x1, x2, y1, y2, w: x2 - x1, h: y2 - y1 };
}

// Moves apart the nodes whose boxes overlap, each pair along the axis where they overlap least, half each way, until
// none does (cose keeps the nodes apart, with their labels counted in their size, but not always every label).
// Returns the rounds it took (SEPARATE_ROUNDS: it did not settle).
const SEPARATE_ROUNDS = 300;
function separate(items) {
  for (let round = 0; round < SEPARATE_ROUNDS; round += 1) {
    items.sort((a, c) => (a.x + a.l) - (c.x + c.l));
    let moved = false;
    for (let i = 0; i < items.length; i += 1) {
      const a = items[i];
      const ax1 = a.x + a.l; const ax2 = a.x + a.r; const ay1 = a.y + a.t; const ay2 = a.y + a.b;
      for (let j = i + 1; j < items.length; j += 1) {
        const c = items[j];
        const cx1 = c.x + c.l;
        if (cx1 >= ax2) break;
        const cy1 = c.y + c.t; const cy2 = c.y + c.b;
        if (!(cy1 < ay2 && ay1 < cy2)) continue;
        const ox = Math.min(ax2, c.x + c.r) - Math.max(ax1, cx1);
        const oy = Math.min(ay2, cy2) - Math.max(ay1, cy1);
        if (ox < oy) {
          const d = (ox / 2 + 0.5) * ((ax1 + ax2) < (cx1 + c.x + c.r) ? -1 : 1);
          a.x += d; c.x -= d;
        } else {
          const d = (oy / 2 + 0.5) * ((ay1 + ay2) < (cy1 + cy2) ? -1 : 1);
          a.y += d; c.y -= d;
        }
        moved = true;
      }
    }
    if (!moved) return round;
  }
  return SEPARATE_ROUNDS;
}

// Draws the nodes closer together (towards their centre, more along the axis where the drawing is longer than the
// canvas) and moves apart the labels that then overlap, while that settles with no overlap and the drawing gets
// smaller, until it fits the canvas at READABLE_ZOOM: cose spreads a large graph thinly.
const READABLE_ZOOM = 0.85;
function compact(items, width, height, rounds = 16) {
  const zoomOf = (e) => Math.min(width / e.w, height / e.h);
  for (let round = 0; round < rounds; round += 1) {
    const e = extent(items);
    const zoom = zoomOf(e);
    if (zoom >= READABLE_ZOOM) return;
    items.forEach((it) => { it.px = it.x; it.py = it.y; });
    const cx = (e.x1 + e.x2) / 2;
    const cy = (e.y1 + e.y2) / 2;
    const [sx, sy] = e.w / width > e.h / height ? [0.88, 0.94] : [0.94, 0.88];
    items.forEach((it) => { it.x = cx + (it.x - cx) * sx; it.y = cy + (it.y - cy) * sy; });
    if (separate(items) >= SEPARATE_ROUNDS || zoomOf(extent(items)) <= zoom * 1.01) {
      items.forEach((it) => { it.x = it.px; it.y = it.py; }); // no better: back to the last drawing without overlaps
      return;
    }
  }
}

async function runLayout(cy, randomize) {
  // Stronger repulsion as the graph grows; each node's size counts its label, so that labels stay apart; edges
  // pull by their weight. What cose leaves overlapping is then moved apart.
  const n = cy.nodes().length;
  const layout = cy.layout({
    name: 'cose', animate: false, randomize, fit: false, padding: 24, numIter: 1000, nodeOverlap: 8,
    nodeDimensionsIncludeLabels: true, componentSpacing: 40, gravity: n > 100 ? 4 : 1,
    nodeRepulsion: () => (n > 100 ? 6000 : n > 30 ? 20000 : 12000), idealEdgeLength: () => (n > 100 ? 40 : n > 30 ? 80 : 90),
    edgeElasticity: () => 60,
  });
  const done = layout.promiseOn('layoutstop');
  const began = performance.now();
  layout.run();
  await done;
  const laid = performance.now();
  const items = shapes(cy, 3);
  separate(items);
  const el = cy.container();
  compact(items, el.clientWidth - 48, el.clientHeight - 48);
  place(cy, items);
  // How long each part took (the force layout, then keeping labels apart), for people tuning it and the benchmark.
  cy.container().dataset.layoutMs = String(Math.round(laid - began));
  cy.container().dataset.labelsMs = String(Math.round(performance.now() - laid));
  cy.fit(undefined, 24);
  // A few nodes would otherwise be blown up to fill the whole canvas.
  if (cy.zoom() > 1.5) {
    cy.zoom(1.5);
    cy.center();
  }
  // A large graph that fits only at a zoom where labels are too small to read opens at a readable zoom on its most
  // mentioned entity ("Fit" shows it whole; labels too small to read are then hidden until zoomed in).
  cy.container().dataset.fitZoom = cy.zoom().toFixed(3);
  if (cy.zoom() < READABLE_ZOOM) {
    // The most mentioned; of those, the one nearest the middle of the drawing.
    const bb = cy.nodes().boundingBox();
    const mid = { x: (bb.x1 + bb.x2) / 2, y: (bb.y1 + bb.y2) / 2 };
    const most = cy.nodes().max((node) => node.data('mentions')).value;
    const top = cy.nodes().filter((node) => node.data('mentions') === most)
      .min((node) => Math.hypot(node.position('x') - mid.x, node.position('y') - mid.y)).ele;
    cy.zoom(READABLE_ZOOM);
    cy.center(top);
  }
  cy.container().dataset.labelOverlaps = String(labelOverlaps(cy));
}

export async function render(ctx) {
  const { bank, params, root } = ctx;
  const top = Number(params.get('top')) || 60;
  const focus = params.get('entity') || '';
  root.append(h('h1', {}, 'Entities'));
  // Taller as more entities are drawn, so that 200 stay readable (each label apart from the others).
  const container = h('div', { id: 'graph', class: `graph${top > 100 ? ' graph-large' : top > 60 ? ' graph-tall' : ''}`, dataset: { nodes: '0' } });
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
    const zoomed = Number(container.dataset.fitZoom) < READABLE_ZOOM ? ' · zoomed in so that labels stay readable: Fit shows them all' : '';
    status.textContent = `${fmtNum(cy.nodes().length)} entities, ${fmtNum(cy.edges().length)} links drawn${hidden}${zoomed}`;
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
    container.graph = { cy, overlaps: () => labelOverlaps(cy) }; // for the tests
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
