// One opinion and how it came to be held: its text, its current confidence and stance (for an opinion judged on a
// yes/no question: the question, the side it takes and why this confidence), its confidence per step (the SVG step
// chart of chart.js), and every step of its trajectory with each evidence memory and that memory's verdict: for,
// against or neutral, said in words (the badge's colour only repeats it). An evidence memory forgotten since is
// listed as such: its id and verdict stay in the history, its text is gone.
import * as api from '../api.js';
import { chartLegend, confidenceChart } from '../chart.js';
import {
  VERDICTS, confidenceBar, dateEl, entityChips, fields, fmtDate, h, historyMarks, memoryLink, networkBadge, route,
  section, verdictBadge,
} from '../dom.js';

const STANCES = {
  yes: 'yes: the evidence weighs towards yes',
  no: 'no: the evidence weighs towards no',
  mixed: 'mixed: neither side outweighs the other',
};

// "2 for · 1 against · 1 neutral" (the verdicts that occur, in that order).
function tally(memories) {
  const n = Object.fromEntries(VERDICTS.map((v) => [v, 0]));
  for (const m of memories) n[VERDICTS.includes(m.verdict) ? m.verdict : 'neutral'] += 1;
  return VERDICTS.filter((v) => n[v]).map((v) => `${n[v]} ${v}`).join(' · ') || 'none';
}

function stanceEl(stance) {
  if (!stance) return h('span', { class: 'muted' }, 'not judged (formed without a yes/no question)');
  return h('span', { id: 'opinion-stance' }, h('span', { class: `badge stance stance-${stance}` }, stance), ' ',
    h('span', { class: 'small muted' }, (STANCES[stance] || '').replace(/^[a-z]+: /, '')));
}

function confidenceStep(e) {
  const old = e.old_confidence === null || e.old_confidence === undefined ? null : e.old_confidence;
  const delta = old === null ? '' : ` (${e.new_confidence - old >= 0 ? '+' : '−'}${Math.abs(e.new_confidence - old).toFixed(2)})`;
  return h('span', { class: 'step-confidence nowrap' },
    old === null ? `confidence ${e.new_confidence.toFixed(2)}` : `confidence ${old.toFixed(2)} → ${e.new_confidence.toFixed(2)}${delta}`);
}

function evidenceItem(bank, m) {
  const verdict = VERDICTS.includes(m.verdict) ? m.verdict : 'neutral';
  if (m.missing) {
    return h('li', { class: 'evidence missing', dataset: { id: m.id, verdict } }, verdictBadge(verdict), ' ',
      h('span', { class: 'badge forgotten' }, 'forgotten'), ' ',
      h('span', { class: 'muted' }, 'memory ', h('code', {}, m.id), ': deleted since, its text is gone (',
        h('a', { href: route(bank, 'audit') }, 'audit trail'), ')'));
  }
  const said = m.mentioned_at || m.occurred_start;
  return h('li', { class: 'evidence', dataset: { id: m.id, verdict } }, verdictBadge(verdict), ' ', networkBadge(m.network), ' ',
    memoryLink(bank, m), historyMarks(m), said ? h('span', { class: 'small muted' }, ` · said ${fmtDate(said)}`) : null);
}

function stepItem(bank, e, i) {
  const evidence = e.evidence_memories || [];
  return h('li', { class: 'step', id: `step-${i}`, dataset: { step: i, label: e.label } },
    h('div', { class: 'step-head' }, h('strong', {}, `Step ${i + 1}`), ' ', h('span', { class: `badge label-${e.label}` }, e.label), ' ',
      dateEl(e.at), ' · ', confidenceStep(e)),
    e.rationale ? h('p', { class: 'step-rationale' }, e.rationale) : null,
    e.old_text && e.new_text && e.old_text !== e.new_text
      ? h('p', { class: 'small step-rewrite' }, 'rewrote ', h('del', {}, e.old_text), ' → ', h('ins', {}, e.new_text)) : null,
    evidence.length
      ? [h('p', { class: 'small muted evidence-head' }, `Evidence (${evidence.length}): ${tally(evidence)}`),
        h('ul', { class: 'evidence plain' }, evidence.map((m) => evidenceItem(bank, m)))]
      : h('p', { class: 'small muted' }, 'No evidence recorded for this step.'));
}

export async function render(ctx) {
  const { bank, params, root } = ctx;
  const data = await api.get('opinion', { bank, id: params.get('id') });
  const o = data.opinion;
  const history = data.history;
  const meta = o.metadata || {};
  const all = history.flatMap((e) => e.evidence_memories || []);
  root.append(h('p', { class: 'crumbs' }, h('a', { href: route(bank, 'opinions', { id: o.id }) }, '‹ Opinions')));
  root.append(h('h1', { class: 'memory-title', id: 'opinion-text' }, o.text, historyMarks(o)));
  root.append(section('Opinion', fields([
    ['Confidence', h('span', { id: 'opinion-confidence' }, confidenceBar(o.confidence))],
    ['Stance', stanceEl(meta.stance)],
    meta.query ? ['Question', h('span', { id: 'opinion-question' }, meta.query)] : null,
    meta.confidence_basis ? ['Weighed when formed', meta.confidence_basis] : null,
    ['Evidence', h('span', { id: 'opinion-tally' }, `${tally(all)} over ${history.length} step${history.length === 1 ? '' : 's'}`)],
    ['Formed', dateEl(history.length ? history[0].at : o.created_at)],
    ['Entities', (o.entities || []).length ? entityChips(bank, o.entities) : '–'],
    ['Memory', h('a', { href: route(bank, 'memory', { id: o.id }), id: 'opinion-memory-link' }, 'the opinion’s memory page ›')],
  ])));
  const steps = h('ol', { class: 'steps', id: 'opinion-steps' }, history.map((e, i) => stepItem(bank, e, i)));
  const pick = (i) => {
    steps.querySelectorAll('li.step.picked').forEach((el) => el.classList.remove('picked'));
    const el = document.getElementById(`step-${i}`);
    if (!el) return;
    el.classList.add('picked');
    el.scrollIntoView({ block: 'center' });
  };
  const chart = section('Confidence per step', confidenceChart(history, { onPick: pick }), chartLegend());
  chart.id = 'opinion-chart';
  root.append(chart);
  const trajectory = section('Trajectory: each step and its evidence',
    h('p', { class: 'small muted' }, 'Each memory’s verdict says how it bore on the opinion: ',
      verdictBadge('for'), ' supports it, ', verdictBadge('against'), ' goes against it, ', verdictBadge('neutral'),
      ' bears on it on neither side. A step that moved the opinion judged its new evidence as a whole.'),
    history.length ? steps : h('p', { class: 'muted' }, 'No history recorded.'));
  trajectory.id = 'opinion-trajectory';
  root.append(trajectory);
}
