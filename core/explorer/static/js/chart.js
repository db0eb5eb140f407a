// An opinion's confidence over time as an SVG step chart: the confidence holds from one step to the next.
// Drawn here rather than with a chart library: one line, a few points and two axes.
import { fmtDate, h } from './dom.js';

const LABELS = ['formed', 'reinforce', 'weaken', 'contradict', 'neutral'];

export function confidenceChart(history, { width = 680, height = 220, onPick } = {}) {
  const pad = { left: 58, right: 18, top: 14, bottom: 40 };
  const innerW = width - pad.left - pad.right;
  const innerH = height - pad.top - pad.bottom;
  const svg = h('svg:svg', {
    class: 'chart', viewBox: `0 0 ${width} ${height}`, width, height, role: 'img',
    'aria-label': `confidence over ${history.length} steps`,
  });
  const times = history.map((e) => Date.parse(e.at));
  const t0 = Math.min(...times);
  const t1 = Math.max(...times);
  const n = history.length;
  // By time, unless the steps all fall within a minute (then evenly spaced, in the order they happened).
  const timed = t1 - t0 >= 60_000;
  const x = (i) => pad.left + (timed ? (times[i] - t0) / (t1 - t0) : n === 1 ? 0.5 : i / (n - 1)) * innerW;
  const y = (c) => pad.top + (1 - c) * innerH;

  for (const tick of [0, 0.25, 0.5, 0.75, 1]) {
    svg.append(h('svg:line', { class: 'grid-line', x1: pad.left, x2: width - pad.right, y1: y(tick), y2: y(tick) }));
    svg.append(h('svg:text', { class: 'axis-label', x: pad.left - 8, y: y(tick) + 4, 'text-anchor': 'end' }, tick.toFixed(2)));
  }
  svg.append(h('svg:text', { class: 'axis-label', x: 12, y: pad.top + innerH / 2, transform: `rotate(-90 12 ${pad.top + innerH / 2})`, 'text-anchor': 'middle' }, 'confidence'));
  if (!n) return svg;

  let d = `M ${x(0)} ${y(history[0].new_confidence)}`;
  for (let i = 1; i < n; i += 1) d += ` H ${x(i)} V ${y(history[i].new_confidence)}`;
  svg.append(h('svg:path', { class: 'line', d }));

  // Axis labels: the first and last time (or every step when evenly spaced), kept inside the chart.
  const first = times.indexOf(t0);
  const last = times.lastIndexOf(t1);
  const ticks = timed ? [first, last] : [...Array(n).keys()];
  for (const i of new Set(ticks)) {
    const px = x(i);
    const anchor = n === 1 ? 'middle' : px <= pad.left + 1 ? 'start' : px >= width - pad.right - 1 ? 'end' : 'middle';
    svg.append(h('svg:text', { class: 'axis-label', x: px, y: height - pad.bottom + 18, 'text-anchor': anchor },
      timed ? fmtDate(history[i].at) : `step ${i + 1}`));
  }
  history.forEach((e, i) => {
    const label = LABELS.includes(e.label) ? e.label : 'other';
    const old = e.old_confidence === null || e.old_confidence === undefined ? '' : `${e.old_confidence.toFixed(2)} → `;
    const point = h('svg:circle', { class: `point label-${label}`, cx: x(i), cy: y(e.new_confidence), r: 6, tabindex: 0, dataset: { step: i } },
      h('svg:title', {}, `${fmtDate(e.at)} ${e.label}: ${old}${e.new_confidence.toFixed(2)}${e.rationale ? ` (${e.rationale})` : ''}`));
    if (onPick) point.addEventListener('click', () => onPick(i));
    svg.append(point);
  });
  return svg;
}

export function chartLegend() {
  return h('div', { class: 'legend' }, LABELS.map((l) => h('span', { class: `legend-item label-${l}` }, l)));
}
