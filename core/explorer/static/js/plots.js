// Small stacked bar charts drawn with uPlot (vendored, the timeline's library): counts per hour or day on a UTC time
// axis, or per category. The canvas is one image with a label; the legend and a readout of the bar under the
// pointer are plain text beside it, and every chart's numbers are also in the page as text or a table.
import { fmtNum, h } from './dom.js';

let uPlotModule = null;
export async function loadUPlot() {
  if (!uPlotModule) uPlotModule = (await import('../vendor/uplot.esm.js')).default;
  return uPlotModule;
}

export const NETWORK_COLORS = { world: '#1c7ed6', experience: '#2b8a3e', opinion: '#ae3ec9', observation: '#e67700' };
export const STATUS_COLORS = { done: '#2b8a3e', failed: '#c92a2a', queued: '#868e96', running: '#1c7ed6' };
const HOUR_S = 3600;
const DAY_S = 86400;

function fmtBucket(seconds, bucket) {
  const iso = new Date(seconds * 1000).toISOString();
  return bucket === 'hour' ? `${iso.slice(0, 10)} ${iso.slice(11, 16)} UTC` : iso.slice(0, 10);
}

// series: [{key, label, color, values}] from the bottom of the stack up. x: bucket starts in ms (time) or
// category names (categories). Returns the element (the chart is drawn into it once it is in the page).
export async function stackedBars({ x, series, bucket = 'day', categories = false, label, height = 220, yLabel = '' }) {
  const uPlot = await loadUPlot();
  const shown = series.filter((s) => s.values.some((v) => v > 0));
  const legend = h('div', { class: 'legend plot-legend' }, shown.map((s) =>
    h('span', { class: 'legend-item', dataset: { color: s.color } }, s.label)));
  const readout = h('p', { class: 'plot-readout small', 'aria-live': 'off' }, '\u00a0');
  const canvasBox = h('div', { class: 'plot-canvas', role: 'img', 'aria-label': label });
  const box = h('figure', { class: 'plot', dataset: { bars: String(x.length), series: String(shown.length) } },
    canvasBox, h('figcaption', {}, legend, readout));
  // The legend's swatches take the series' colours through the CSSOM (the CSP allows no inline style attribute).
  legend.querySelectorAll('.legend-item').forEach((el) => el.style.setProperty('--swatch', el.dataset.color));
  if (!x.length) {
    canvasBox.append(h('p', { class: 'muted empty' }, 'Nothing to draw yet.'));
    return box;
  }
  const xs = categories ? x.map((_, i) => i) : x.map((ms) => ms / 1000);
  // Stacked: each drawn series is the running total up to it, drawn from the top of the stack down, so that each
  // bar's lower part is painted over by the series below it.
  const totals = [];
  let running = xs.map(() => 0);
  for (const s of shown) {
    running = running.map((v, i) => v + s.values[i]);
    totals.push(running);
  }
  const order = shown.map((_, i) => i).reverse();
  const step = categories ? 1 : bucket === 'hour' ? HOUR_S : DAY_S;
  const data = [xs, ...order.map((i) => totals[i])];
  const describe = (i) => {
    const at = categories ? x[i] : fmtBucket(xs[i], bucket);
    const parts = shown.map((s) => `${s.label} ${fmtNum(s.values[i])}`);
    return `${at}: ${parts.join(', ')}`;
  };
  const view = document.getElementById('view');
  const width = () => Math.max(320, Math.min(1100, ((view && view.clientWidth) || 900) - 48));
  const opts = {
    width: width(), height,
    tzDate: (ts) => uPlot.tzDate(new Date(ts * 1e3), 'Etc/UTC'),
    legend: { show: false },
    cursor: { drag: { x: false, y: false }, points: { show: false }, y: false },
    scales: {
      x: categories
        ? { time: false, range: [-0.6, xs.length - 0.4] }
        : { time: true, range: [xs[0] - step, xs[xs.length - 1] + step] },
      y: { range: (u, min, max) => [0, Math.max(1, max * 1.1)] },
    },
    series: [{}, ...order.map((i) => ({
      label: shown[i].label, stroke: shown[i].color, fill: shown[i].color, width: 0,
      paths: uPlot.paths.bars({ size: [0.7, 48, 3], align: 0 }), points: { show: false },
    }))],
    axes: [
      categories
        ? { stroke: '#495057', grid: { show: false }, splits: () => xs, values: () => x, gap: 4, size: 40 }
        : { stroke: '#495057', grid: { stroke: '#e9ecef' } },
      { stroke: '#495057', grid: { stroke: '#e9ecef' }, label: yLabel || undefined, size: 50,
        incrs: [1, 2, 5, 10, 20, 50, 100, 200, 500, 1e3, 2e3, 5e3, 1e4, 2e4, 5e4, 1e5, 2e5, 5e5, 1e6],
        values: (u, splits) => splits.map((v) => fmtNum(v)) },
    ],
    hooks: {
      setCursor: [(u) => {
        const i = u.cursor.idx;
        readout.textContent = i === null || i === undefined ? '\u00a0' : describe(i);
      }],
    },
  };
  // Drawn once the box is in the page (uPlot measures its axes there).
  box.draw = () => {
    if (box.plot) return box.plot;
    box.plot = new uPlot(opts, data, canvasBox);
    return box.plot;
  };
  box.describe = describe;
  return box;
}
