// The bank on a time axis: each memory's occurrence (a bar from occurred_start to occurred_end) and when it was said
// (a dot at mentioned_at, joined to the bar), one lane per network; a superseded memory drawn faded and linked by an
// arrow to the memory that superseded it; forgets as gaps (a dashed line across the lanes and a mark in the
// "forgotten" lane) that open their audit entry. Filters by network, entity and text (on the server); zoom from
// decades to minutes with the wheel, a drag, the buttons or the keyboard; a click opens the memory.
//
// Drawn on one canvas with uPlot (vendored): uPlot gives the time axis (UTC ticks from years to seconds), the
// scales, drag-to-zoom and the canvas; the bars, dots, links and gaps are drawn in its draw hook. Below the chart,
// the memories in view as a table of links (what a keyboard or a screen reader uses).
import * as api from '../api.js';
import { NETWORKS, fmtDate, fmtNum, h, memoryLink, networkBadge, paramsObject, route, whenText } from '../dom.js';

const COLORS = { world: '#1c7ed6', experience: '#2b8a3e', opinion: '#ae3ec9', observation: '#e67700' };
const FORGOTTEN = '#c92a2a';
const LINK = '#495057';
const LANES = [...NETWORKS, 'forgotten'];
const MAX_ROWS = 8; // rows per lane; further overlapping memories share the least busy row
const ROW_PX = 14;
const MIN_SPAN_S = 15 * 60; // the closest zoom: a quarter of an hour across
const IN_VIEW_ROWS = 50;
const PLACED = {
  'its message': 'drawn at the time of its message, still in the stored document',
  'stored between': 'drawn between the memories stored just before and after it (its own times are gone)',
  'forgotten at': 'drawn at the time of the forget (its own times are gone)',
};
const HOUR = 3600;
const DAY = 24 * HOUR;
const PRESETS = [['10 years', 3652 * DAY], ['year', 365 * DAY], ['month', 30 * DAY], ['week', 7 * DAY], ['day', DAY],
  ['hour', HOUR]];

let uPlotModule = null;
async function loadUPlot() {
  if (!uPlotModule) uPlotModule = (await import('../../vendor/uplot.esm.js')).default;
  return uPlotModule;
}

// Seconds (uPlot's unit) of a memory's begin and end on the axis: the occurrence and the mention together.
function prepare(items) {
  for (const m of items) {
    const times = [m.start, m.end, m.said].filter((t) => t !== null && t !== undefined);
    m.t0 = times.length ? Math.min(...times) / 1000 : null;
    m.t1 = times.length ? Math.max(...times) / 1000 : null;
  }
  return items.filter((m) => m.t0 !== null);
}

// Rows inside each lane: first fit by time (with a tolerance of about 3 px at the full view), MAX_ROWS at most.
function pack(items, forgotten, tolerance) {
  const rowsUsed = {};
  for (const lane of NETWORKS) {
    const mine = items.filter((m) => m.network === lane).sort((a, b) => a.t0 - b.t0);
    const ends = [];
    for (const m of mine) {
      let row = ends.findIndex((end) => end + tolerance < m.t0);
      if (row < 0 && ends.length < MAX_ROWS) row = ends.length;
      if (row < 0) row = ends.indexOf(Math.min(...ends));
      ends[row] = Math.max(ends[row] ?? -Infinity, m.t1);
      m.row = row;
    }
    rowsUsed[lane] = Math.max(1, ends.length);
  }
  rowsUsed.forgotten = 1;
  for (const f of forgotten) f.row = 0;
  // Lanes from the top: each starts where the one above ended; y counts rows from the bottom (uPlot's y is up).
  const lanes = [];
  let top = 0;
  for (const lane of LANES) {
    lanes.push({ name: lane, top, rows: rowsUsed[lane] });
    top += rowsUsed[lane] + 0.6;
  }
  const total = top - 0.6;
  const laneOf = Object.fromEntries(lanes.map((l) => [l.name, l]));
  const yOf = (lane, row) => total - (laneOf[lane].top + row + 0.5);
  return { lanes, total, yOf };
}

export async function render(ctx) {
  const { bank, params, root } = ctx;
  const current = paramsObject(params);
  const network = params.get('network') || '';
  const entity = params.get('entity') || '';
  const q = params.get('q') || '';
  root.append(h('h1', {}, 'Timeline'));

  const form = h('form', { class: 'toolbar timeline-filters', role: 'search' },
    h('label', {}, 'Network ', h('select', { name: 'network', id: 'tl-network' },
      ['', ...NETWORKS].map((n) => h('option', { value: n, selected: n === network }, n || 'all')))),
    h('label', {}, 'Entity ', h('input', { name: 'entity', id: 'tl-entity', value: entity, list: 'tl-entities', placeholder: 'name', autocomplete: 'off' })),
    h('datalist', { id: 'tl-entities' }),
    h('label', {}, 'Text ', h('input', { name: 'q', id: 'tl-text', type: 'search', value: q, placeholder: 'words in the memory' })),
    h('button', { class: 'btn primary', type: 'submit' }, 'Filter'),
    network || entity || q ? h('a', { class: 'btn', href: route(bank, 'timeline') }, 'Clear') : null);
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    const data = new FormData(form);
    ctx.go('timeline', { ...current, network: data.get('network'), entity: String(data.get('entity') || '').trim(),
      q: String(data.get('q') || '').trim(), from: '', to: '' });
  });
  root.append(form);
  // Entity names for the filter's suggestions, after the chart (not waited for).
  const suggest = () => api.get('entities', { bank, limit: 200 }).then((page) => {
    form.querySelector('#tl-entities').replaceChildren(...page.items.map((e) => h('option', { value: e.name })));
  }).catch(() => {});

  const t = performance.now();
  const [data, uPlot] = await Promise.all([
    api.get('timeline', { bank, network, entity, q }), loadUPlot()]);
  const fetchedMs = performance.now() - t;
  if (!ctx.isCurrent()) return;
  const items = prepare(data.items);
  const byId = new Map(items.map((m) => [m.id, m]));
  const forgotten = data.forgotten.filter((f) => f.place !== null).map((f) => ({ ...f, x: f.place / 1000, x2: (f.place_end ?? f.place) / 1000 }));

  const shownText = data.total === null
    ? `${fmtNum(items.length)} memories (the first that match; narrow the filter to see the rest)`
    : `${fmtNum(items.length)} of ${fmtNum(data.total)} memories${data.truncated ? ' (the newest stored)' : ''}`;
  const supersededCount = items.filter((m) => m.superseded_by).length;
  root.append(h('p', { class: 'muted small timeline-summary' }, shownText,
    ` · ${fmtNum(supersededCount)} superseded · ${fmtNum(forgotten.length)} forgets`));
  if (!items.length) {
    root.append(h('p', { class: 'muted empty' }, 'No memory matches.'));
    suggest();
    return;
  }

  let lo = Infinity;
  let hi = -Infinity;
  for (const m of items) { lo = Math.min(lo, m.t0); hi = Math.max(hi, m.t1); }
  for (const f of forgotten) { lo = Math.min(lo, f.x); hi = Math.max(hi, f.x2); }
  const pad = Math.max((hi - lo) * 0.02, HOUR);
  const full = [lo - pad, hi + pad];
  const layout = pack(items, forgotten, (full[1] - full[0]) / 400);

  const range = h('span', { class: 'timeline-range small' });
  const zoomBar = h('div', { class: 'toolbar timeline-zoom', role: 'group', 'aria-label': 'zoom' },
    h('button', { class: 'btn small', type: 'button', dataset: { zoom: 'all' } }, 'All'),
    h('button', { class: 'btn small', type: 'button', dataset: { zoom: 'out' }, 'aria-label': 'zoom out' }, '−'),
    h('button', { class: 'btn small', type: 'button', dataset: { zoom: 'in' }, 'aria-label': 'zoom in' }, '+'),
    h('button', { class: 'btn small', type: 'button', dataset: { zoom: 'left' }, 'aria-label': 'earlier' }, '◀'),
    h('button', { class: 'btn small', type: 'button', dataset: { zoom: 'right' }, 'aria-label': 'later' }, '▶'),
    PRESETS.map(([label, span]) => h('button', { class: 'btn small', type: 'button', dataset: { span } }, label)),
    range);
  const legend = h('div', { class: 'legend timeline-legend' },
    NETWORKS.map((n) => h('span', { class: `legend-item tl-${n}` }, n)),
    h('span', { class: 'legend-item tl-said' }, 'said (dot) · happened (bar)'),
    h('span', { class: 'legend-item tl-superseded' }, 'superseded → by'),
    h('span', { class: 'legend-item tl-forgotten' }, 'forgotten (gap)'));
  const chart = h('div', {
    class: 'timeline-chart', tabindex: '0', role: 'img',
    'aria-label': `Timeline of ${items.length} memories and ${forgotten.length} forgets; the table below lists those in view. Arrow keys move, + and - zoom.`,
  });
  const tip = h('div', { class: 'timeline-tip', role: 'tooltip', hidden: true });
  const inView = h('div', { class: 'timeline-in-view' });
  root.append(zoomBar, legend, h('div', { class: 'timeline-wrap' }, chart, tip), inView);

  let hits = []; // what the last draw put where, in CSS px inside the plot: {x0, x1, y, kind, item}
  let drawn = null;
  const firstDraw = new Promise((resolve) => { drawn = resolve; });
  const dpr = () => window.devicePixelRatio || 1;

  function drawAll(u) {
    const c = u.ctx;
    const r = dpr();
    const { left, top, width, height } = u.bbox;
    const [x0, x1] = [u.scales.x.min, u.scales.x.max];
    const px = (s) => u.valToPos(s, 'x', true);
    const py = (y) => u.valToPos(y, 'y', true);
    const rowPx = Math.abs(py(0) - py(1));
    const barH = Math.max(2 * r, Math.min(rowPx * 0.55, 9 * r));
    const next = [];
    c.save();
    c.beginPath();
    c.rect(left, top, width, height);
    c.clip();
    // Lane bands.
    for (const [i, lane] of layout.lanes.entries()) {
      const yTop = py(layout.total - lane.top + 0.3);
      const yBottom = py(layout.total - lane.top - lane.rows - 0.3);
      c.fillStyle = i % 2 ? '#f8f9fa' : '#ffffff';
      c.fillRect(left, yTop, width, yBottom - yTop);
    }
    // Gaps: a dashed line across every lane at each forget (a faint band over a span), its mark in the forgotten lane.
    c.lineWidth = r;
    for (const f of forgotten) {
      if (f.x2 < x0 || f.x > x1) continue;
      const a = px(f.x);
      const b = px(f.x2);
      if (b - a > 2 * r) {
        c.fillStyle = 'rgba(201, 42, 42, 0.06)';
        c.fillRect(a, top, b - a, height);
      }
      c.setLineDash([4 * r, 4 * r]);
      c.strokeStyle = FORGOTTEN;
      for (const x of b - a > 2 * r ? [a, b] : [a]) {
        c.beginPath();
        c.moveTo(x, top);
        c.lineTo(x, top + height);
        c.stroke();
      }
      c.setLineDash([]);
      const y = py(layout.yOf('forgotten', 0));
      c.fillStyle = '#fff5f5';
      c.fillRect(a - 6 * r, y - barH, b - a + 12 * r, barH * 2);
      c.strokeRect(a - 6 * r, y - barH, b - a + 12 * r, barH * 2);
      next.push({ x0: (a - left) / r - 7, x1: (b - left) / r + 7, y: (y - top) / r, kind: 'forgotten', item: f });
    }
    // Memories: the occurrence bar, the said dot, a thin line between them.
    for (const m of items) {
      if (m.t1 < x0 || m.t0 > x1) continue;
      const y = py(layout.yOf(m.network, m.row));
      const color = COLORS[m.network] || '#868e96';
      const faded = Boolean(m.superseded_by);
      c.globalAlpha = faded ? 0.35 : (m.network === 'opinion' && m.confidence !== null ? 0.4 + 0.6 * m.confidence : 1);
      c.fillStyle = color;
      c.strokeStyle = color;
      let a = null;
      let b = null;
      if (m.start !== null) {
        a = px(m.start / 1000);
        b = Math.max(px((m.end ?? m.start) / 1000), a + 3 * r);
        c.fillRect(a, y - barH / 2, b - a, barH);
      }
      if (m.said !== null) {
        const s = px(m.said / 1000);
        if (a !== null && (s < a - r || s > b + r)) {
          c.lineWidth = r;
          c.beginPath();
          c.moveTo(s < a ? s : b, y);
          c.lineTo(s < a ? a : s, y);
          c.stroke();
        }
        c.beginPath();
        c.arc(s, y, Math.max(2 * r, barH / 2), 0, 2 * Math.PI);
        c.fill();
        a = a === null ? s - 3 * r : Math.min(a, s - 3 * r);
        b = b === null ? s + 3 * r : Math.max(b, s + 3 * r);
      }
      if (faded) { // where it stopped holding
        c.globalAlpha = 1;
        c.strokeStyle = LINK;
        c.lineWidth = r;
        c.beginPath();
        c.moveTo(b, y - barH);
        c.lineTo(b, y + barH);
        c.stroke();
      }
      next.push({ x0: (a - left) / r, x1: (b - left) / r, y: (y - top) / r, kind: 'memory', item: m });
    }
    c.globalAlpha = 1;
    // Supersession: an arrow from the superseded memory to the one that superseded it.
    c.strokeStyle = LINK;
    c.fillStyle = LINK;
    c.lineWidth = 1.2 * r;
    let links = 0;
    for (const m of items) {
      const to = m.superseded_by && byId.get(m.superseded_by);
      if (!to) continue;
      const from = (m.said ?? m.start) / 1000;
      const target = (to.said ?? to.start) / 1000;
      if (Math.max(from, target) < x0 || Math.min(from, target) > x1) continue;
      const ax = px(from);
      const ay = py(layout.yOf(m.network, m.row));
      const bx = px(target);
      const by = py(layout.yOf(to.network, to.row));
      const lift = Math.min(Math.max(10 * r, Math.abs(bx - ax) / 6), 2.2 * rowPx);
      const cy = Math.min(ay, by) - lift;
      c.beginPath();
      c.moveTo(ax, ay);
      c.quadraticCurveTo((ax + bx) / 2, cy, bx, by);
      c.stroke();
      const angle = Math.atan2(by - cy, bx - (ax + bx) / 2);
      c.beginPath();
      c.moveTo(bx, by);
      c.lineTo(bx - 7 * r * Math.cos(angle - 0.4), by - 7 * r * Math.sin(angle - 0.4));
      c.lineTo(bx - 7 * r * Math.cos(angle + 0.4), by - 7 * r * Math.sin(angle + 0.4));
      c.closePath();
      c.fill();
      links += 1;
    }
    c.restore();
    hits = next;
    if (!listed) listInView(x0, x1); // the first draw lists what is in view at once (later zooms: after a pause)
    chart.dataset.drawnMemories = String(next.filter((e) => e.kind === 'memory').length);
    chart.dataset.drawnGaps = String(next.filter((e) => e.kind === 'forgotten').length);
    chart.dataset.drawnLinks = String(links);
    drawn();
  }

  const width = () => Math.max(480, root.clientWidth || 1000);
  const height = Math.min(720, Math.max(260, layout.total * ROW_PX + 60));
  const opts = {
    width: width(), height,
    tzDate: (ts) => uPlot.tzDate(new Date(ts * 1e3), 'Etc/UTC'),
    legend: { show: false },
    cursor: { drag: { x: true, y: false, setScale: true }, points: { show: false }, y: false },
    scales: {
      x: {
        time: true,
        range: (u, min, max) => {
          if (max - min >= MIN_SPAN_S) return [min, max];
          const mid = (min + max) / 2;
          return [mid - MIN_SPAN_S / 2, mid + MIN_SPAN_S / 2];
        },
      },
      y: { auto: false, range: [-0.2, layout.total + 1.2] }, // headroom for the arrows
    },
    series: [{}, { paths: () => null, points: { show: false } }],
    axes: [
      { grid: { stroke: '#e9ecef' }, stroke: '#495057' },
      {
        size: 96, gap: 6, stroke: '#495057', grid: { show: false }, ticks: { show: false },
        splits: () => layout.lanes.map((l) => layout.total - l.top - l.rows / 2),
        values: () => layout.lanes.map((l) => l.name),
      },
    ],
    hooks: {
      draw: [drawAll],
      setScale: [(u, key) => { if (key === 'x') afterZoom(u); }],
    },
  };
  // uPlot needs data for its scales: the two ends of the axis (everything else is drawn in the hook).
  const plot = new uPlot(opts, [full, [null, null]], chart);
  chart.timeline = { // for the tests: where a memory or a forget was drawn, in px inside the plot
    positionOf: (id) => {
      const found = hits.find((e) => (e.item.id === id));
      return found ? { x: (found.x0 + found.x1) / 2, y: found.y } : null;
    },
    plot,
  };

  function setWindow(min, max) {
    const span = Math.max(MIN_SPAN_S, max - min);
    const mid = (min + max) / 2;
    plot.setScale('x', { min: mid - span / 2, max: mid + span / 2 });
  }
  function zoom(factor, at) {
    const { min, max } = plot.scales.x;
    const anchor = at ?? (min + max) / 2;
    const span = Math.max(MIN_SPAN_S, (max - min) * factor);
    const share = (anchor - min) / (max - min);
    plot.setScale('x', { min: anchor - span * share, max: anchor - span * share + span });
  }
  function pan(share) {
    const { min, max } = plot.scales.x;
    const step = (max - min) * share;
    plot.setScale('x', { min: min + step, max: max + step });
  }
  zoomBar.addEventListener('click', (event) => {
    const button = event.target.closest('button');
    if (!button) return;
    const { zoom: action, span } = button.dataset;
    if (action === 'all') setWindow(...full);
    else if (action === 'in') zoom(0.5);
    else if (action === 'out') zoom(2);
    else if (action === 'left') pan(-0.5);
    else if (action === 'right') pan(0.5);
    else if (span) {
      const { min, max } = plot.scales.x;
      setWindow((min + max) / 2 - Number(span) / 2, (min + max) / 2 + Number(span) / 2);
    }
  });
  chart.addEventListener('keydown', (event) => {
    const keys = { ArrowLeft: () => pan(-0.25), ArrowRight: () => pan(0.25), '+': () => zoom(0.5), '=': () => zoom(0.5),
      '-': () => zoom(2), 0: () => setWindow(...full) };
    if (keys[event.key]) {
      event.preventDefault();
      keys[event.key]();
    }
  });
  plot.over.addEventListener('wheel', (event) => {
    event.preventDefault();
    zoom(event.deltaY < 0 ? 0.8 : 1.25, plot.posToVal(event.offsetX, 'x'));
  }, { passive: false });

  const hitAt = (x, y) => {
    let best = null;
    let bestDist = 7;
    for (const e of hits) {
      const dy = Math.abs(e.y - y);
      const dx = x < e.x0 ? e.x0 - x : (x > e.x1 ? x - e.x1 : 0);
      const d = Math.max(dx, dy);
      if (d <= bestDist) { best = e; bestDist = d; }
    }
    return best;
  };
  const targetOf = (e) => (e.kind === 'memory' ? route(bank, 'memory', { id: e.item.id }) : route(bank, 'audit', { id: e.item.id }));
  let down = null;
  plot.over.addEventListener('mousedown', (event) => { down = [event.clientX, event.clientY]; });
  plot.over.addEventListener('click', (event) => {
    if (down && Math.hypot(event.clientX - down[0], event.clientY - down[1]) > 4) return; // a drag zooms
    const found = hitAt(event.offsetX, event.offsetY);
    if (found) location.hash = targetOf(found);
  });
  plot.over.addEventListener('mousemove', (event) => {
    const found = hitAt(event.offsetX, event.offsetY);
    plot.over.classList.toggle('pointing', Boolean(found));
    if (!found) { tip.hidden = true; return; }
    tip.replaceChildren(...(found.kind === 'memory' ? tipOfMemory(found.item, byId) : tipOfForget(found.item)));
    tip.hidden = false;
    const box = chart.getBoundingClientRect();
    const over = plot.over.getBoundingClientRect();
    tip.style.left = `${Math.min(over.left - box.left + event.offsetX + 12, box.width - 330)}px`;
    tip.style.top = `${over.top - box.top + event.offsetY + 14}px`;
  });
  plot.over.addEventListener('mouseleave', () => { tip.hidden = true; });

  let listTimer = null;
  function afterZoom(u) {
    const { min, max } = u.scales.x;
    range.textContent = `${fmtDate(new Date(min * 1000).toISOString())} → ${fmtDate(new Date(max * 1000).toISOString())} UTC`;
    clearTimeout(listTimer);
    listTimer = setTimeout(() => listInView(min, max), 120);
  }
  let listed = '';
  function listInView(min, max) {
    if (listed === `${min} ${max}`) return; // the same window: the rows stay (a test or a reader may hold them)
    listed = `${min} ${max}`;
    const visible = items.filter((m) => m.t1 >= min && m.t0 <= max).sort((a, b) => a.t0 - b.t0);
    const gaps = forgotten.filter((f) => f.x2 >= min && f.x <= max);
    inView.replaceChildren(...[
      h('h2', {}, `In view: ${fmtNum(visible.length)} memories`, gaps.length ? `, ${fmtNum(gaps.length)} forgets` : ''),
      gaps.length ? h('ul', { class: 'plain timeline-forgets' }, gaps.map((f) => h('li', {},
        h('a', { href: route(bank, 'audit', { id: f.id }), class: 'forget-link' }, `forgotten ${fmtDate(f.at)}`),
        ` · ${forgetWhat(f)} · ${PLACED[f.placed_by] || ''}`))) : null,
      visible.length ? h('table', { class: 'grid memories' },
        h('caption', { class: 'muted small' }, visible.length > IN_VIEW_ROWS ? `the first ${IN_VIEW_ROWS} by time` : 'by time'),
        h('thead', {}, h('tr', {}, h('th', {}, 'When (UTC)'), h('th', {}, 'Said'), h('th', {}, 'Network'), h('th', {}, 'Memory'))),
        h('tbody', {}, visible.slice(0, IN_VIEW_ROWS).map((m) => h('tr', { dataset: { id: m.id }, class: m.superseded_by ? 'superseded' : undefined },
          h('td', { class: 'nowrap' }, whenText(isoOf(m))), h('td', { class: 'nowrap small' }, m.said ? fmtDate(new Date(m.said).toISOString()) : '–'),
          h('td', {}, networkBadge(m.network), m.confidence !== null ? h('span', { class: 'small muted' }, ` ${m.confidence.toFixed(2)}`) : null),
          h('td', { class: 'text' }, memoryLink(bank, m), m.superseded_by ? [' ', supersededNote(bank, m, byId)] : null))))) : null,
    ].filter(Boolean));
  }

  afterZoom(plot);
  window.addEventListener('resize', function onResize() {
    if (!chart.isConnected) { window.removeEventListener('resize', onResize); return; }
    plot.setSize({ width: width(), height });
  });
  await Promise.race([firstDraw, new Promise((resolve) => { setTimeout(resolve, 5000); })]);
  chart.dataset.fetchMs = String(Math.round(fetchedMs));
  chart.dataset.renderMs = String(Math.round(performance.now() - t - fetchedMs));
  suggest();
}

function isoOf(m) {
  const iso = (ms) => (ms === null || ms === undefined ? null : new Date(ms).toISOString());
  return { occurred_start: iso(m.start), occurred_end: iso(m.end), mentioned_at: iso(m.said) };
}

function supersededNote(bank, m, byId) {
  const to = byId.get(m.superseded_by);
  const since = m.valid_until ? ` on ${fmtDate(new Date(m.valid_until).toISOString(), { time: false })}` : '';
  return h('span', { class: 'badge superseded' }, `superseded${since} by `,
    h('a', { href: route(bank, 'memory', { id: m.superseded_by }) }, to ? to.text.slice(0, 60) : 'a newer memory'));
}

function forgetWhat(f) {
  const one = { memories: 'memory', entities: 'entity', documents: 'document' };
  const counts = Object.entries(f.counts || {}).map(([k, n]) => `${n} ${n === 1 ? (one[k] || k) : k}`).join(', ');
  const what = f.document_id ? `document ${f.document_id}` : (f.summary || (f.memory_ids.length ? `memory ${f.memory_ids[0]}` : 'memories'));
  return counts ? `${what} (${counts})` : what;
}

function tipOfMemory(m, byId) {
  const to = m.superseded_by && byId.get(m.superseded_by);
  return [
    h('div', {}, networkBadge(m.network), m.confidence !== null ? ` confidence ${m.confidence.toFixed(2)}` : ''),
    h('div', { class: 'tip-text' }, m.text),
    h('div', { class: 'small muted' }, `happened ${whenText(isoOf(m))} · said ${m.said ? fmtDate(new Date(m.said).toISOString()) : '–'}`),
    m.superseded_by ? h('div', { class: 'small' }, `superseded${m.valid_until ? ' on ' + fmtDate(new Date(m.valid_until).toISOString(), { time: false }) : ''} by: ${to ? to.text.slice(0, 80) : m.superseded_by}`) : null,
    h('div', { class: 'small muted' }, 'click to open'),
  ].filter(Boolean);
}

function tipOfForget(f) {
  return [
    h('div', {}, h('span', { class: 'badge status-failed' }, 'forgotten'), ` ${fmtDate(f.at)} UTC via ${f.surface}`),
    h('div', { class: 'tip-text' }, forgetWhat(f)),
    h('div', { class: 'small muted' }, PLACED[f.placed_by] || ''),
    h('div', { class: 'small muted' }, 'click for the audit entry'),
  ];
}

