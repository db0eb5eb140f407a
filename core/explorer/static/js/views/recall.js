// The recall playground: a query with budget, reference time and networks, the memories it returns, and the
// trace (every candidate's rank and raw score per channel, its fused rank, tokens, and the stage timings): the
// same facts as `hindsight recall --trace`.
import * as api from '../api.js';
import {
  CHANNELS, NETWORKS, documentLink, fmtDate, fmtNum, h, historyMarks, memoryLink, networkBadge, paramsObject, route, section,
  whenText,
} from '../dom.js';

const num = (x) => (Math.abs(x) >= 1e-3 && Math.abs(x) < 1e4 ? x.toFixed(3) : x ? x.toExponential(1) : '0');

export async function render(ctx) {
  const { bank, params, root } = ctx;
  const query = params.get('query') || '';
  const chosen = new Set(params.getAll('network'));
  root.append(h('h1', {}, 'Recall playground'));
  const q = h('input', { type: 'text', id: 'recall-query', name: 'query', value: query, placeholder: 'What did Emma do last week?', required: true, class: 'wide' });
  const budget = h('input', { type: 'number', id: 'recall-budget', min: 1, step: 1, value: params.get('budget') || 2000 });
  const max = h('input', { type: 'number', id: 'recall-max', min: 1, step: 1, value: params.get('max') || '', placeholder: 'no limit' });
  const ref = h('input', { type: 'text', id: 'recall-reference', value: params.get('reference_time') || '', placeholder: 'now (or 2025-03-23, "last Friday"...)' });
  const asOf = h('input', { type: 'text', id: 'recall-as-of', value: params.get('as_of') || '', placeholder: 'now (or 2025-03-23: what the bank held then)' });
  const boxes = NETWORKS.map((n) => h('label', { class: 'check' }, h('input', { type: 'checkbox', value: n, checked: chosen.has(n), name: 'network' }), ` ${n}`));
  const form = h('form', { class: 'recall-form card', id: 'recall-form' },
    h('label', { class: 'field wide' }, 'Query', q),
    h('div', { class: 'row' },
      h('label', { class: 'field' }, 'Budget (tokens)', budget),
      h('label', { class: 'field' }, 'Max memories', max),
      h('label', { class: 'field grow' }, 'Reference time', ref),
      h('label', { class: 'field grow' }, 'As of', asOf)),
    h('fieldset', { class: 'networks' }, h('legend', {}, 'Networks (none: all)'), boxes),
    h('button', { class: 'btn primary', type: 'submit', id: 'recall-run' }, 'Recall'));
  const out = h('div', { id: 'recall-results' });
  root.append(form, out);
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    const target = route(bank, 'recall', {
      query: q.value.trim(), budget: budget.value, max: max.value, reference_time: ref.value.trim(), as_of: asOf.value.trim(),
      network: boxes.map((b) => b.firstChild).filter((b) => b.checked).map((b) => b.value),
    });
    if (location.hash === target) window.dispatchEvent(new HashChangeEvent('hashchange'));
    else location.hash = target;
  });
  if (!query) {
    out.append(h('p', { class: 'muted' }, 'Recall runs the four channels (semantic, keyword, graph, temporal), fuses them and packs the best memories into the budget.'));
    return;
  }
  out.append(h('p', { class: 'muted' }, 'Recalling…'));
  const res = await api.post('recall', {
    bank, query, budget: Number(params.get('budget')) || 2000, max_memories: Number(params.get('max')) || null,
    reference_time: params.get('reference_time') || null, as_of: params.get('as_of') || null, networks: [...chosen],
  });
  out.replaceChildren(...results(bank, res, paramsObject(params)));
}

// How a returned candidate got its place, when a packing rule moved it (the same reasons as `hindsight recall`).
function returnedText(c) {
  if (c.context_of) return '✓ context';
  if (c.demoted) return '✓ after its successor';
  if (c.demoted_as === 'question' || c.demoted_as === 'acknowledgement') return '✓ after an answer';
  if (c.later_statement) return '✓ after a later one';
  if (c.brought_by) return '✓ brought in';
  return '✓';
}

function returnedTitle(c) {
  if (c.context_of) return 'packed beside a top hit: the memory just before or after it in its document';
  if (c.demoted) return 'superseded: packed right after the memory that is current in its place';
  if (c.demoted_as === 'question') return 'only asks: packed after the next memory that says something';
  if (c.demoted_as === 'acknowledgement') return 'only acknowledges: packed after the next memory that says something';
  if (c.later_statement) return 'the same person said something later on the same subject: packed after it, for a question about how things are now';
  if (c.brought_by) return 'brought in where the memory it superseded (or, for a question about the past, that superseded it) ranked';
  return '';
}

function results(bank, res, current) {
  const parts = [];
  parts.push(h('p', { class: 'summary', id: 'recall-summary' },
    `${fmtNum(res.memories.length)} ${res.memories.length === 1 ? 'memory' : 'memories'} · ${fmtNum(res.tokens)} / ${fmtNum(res.budget)} tokens · ${res.elapsed_ms} ms`));
  parts.push(section('Memories', res.memories.length ? h('table', { class: 'grid recall-memories' },
    h('thead', {}, h('tr', {}, h('th', { class: 'num' }, '#'), h('th', { class: 'num' }, 'Score'), h('th', {}, 'Memory'), h('th', {}, 'Network'), h('th', {}, 'When'), h('th', {}, 'Sources'), h('th', {}, 'Document'))),
    h('tbody', {}, res.memories.map((m, i) => h('tr', { dataset: { id: m.id }, class: m.superseded_by ? 'superseded' : undefined },
      h('td', { class: 'num' }, i + 1), h('td', { class: 'num' }, m.score === null ? '–' : m.score.toFixed(4)),
      h('td', { class: 'text' }, memoryLink(bank, m), historyMarks(m)), h('td', {}, networkBadge(m.network)), h('td', { class: 'nowrap' }, whenText(m)),
      h('td', { class: 'mono small' }, (m.sources || []).join(', ') || '–'), h('td', { class: 'small' }, documentLink(bank, m))))))
    : h('p', { class: 'muted' }, `No memories found for “${res.query}”.`)));
  const t = res.trace;
  if (!t) return parts;
  const info = [`reference time ${fmtDate(t.reference_time)}`];
  if (res.as_of) info.push(`as of ${fmtDate(res.as_of)}: what the bank held then`);
  if (t.time_range) info.push(`time constraint ${fmtDate(t.time_range.start, { time: false })} .. ${fmtDate(t.time_range.end, { time: false })}`);
  info.push(`candidates ${Object.entries(t.channel_sizes).map(([c, n]) => `${c} ${n}`).join(', ')}`);
  const total = t.timings_ms.total_ms || Math.max(...Object.values(t.timings_ms), 1);
  const timings = h('table', { class: 'timings' }, h('tbody', {}, Object.entries(t.timings_ms).map(([stage, ms]) => {
    const fill = h('span', { class: 'bar-fill' });
    fill.style.width = `${Math.min(100, (100 * ms) / total)}%`;
    return h('tr', {}, h('td', {}, stage.replace(/_ms$/, '')), h('td', { class: 'num' }, ms.toFixed(1)), h('td', { class: 'bar-cell' }, h('span', { class: 'bar' }, fill)));
  })));
  const onlyReturned = h('input', { type: 'checkbox', id: 'only-returned' });
  const channels = t.channels.length ? t.channels : CHANNELS.filter((c) => c in t.channel_sizes);
  const rows = res.candidates.map((c) => h('tr', { class: c.selected ? 'selected' : 'dropped', dataset: { id: c.memory_id } },
    h('td', { class: 'num' }, c.fused_rank), h('td', { class: 'num' }, c.fused_score.toFixed(4)),
    channels.map((ch) => {
      const hit = c.channels[ch];
      return h('td', { class: 'num nowrap' }, hit ? [h('strong', {}, hit.rank), h('span', { class: 'muted small' }, ` (${num(hit.score)})`)] : h('span', { class: 'muted' }, '–'));
    }),
    h('td', { class: 'num' }, c.tokens || '–'),
    h('td', { class: 'nowrap', title: returnedTitle(c) }, c.selected ? returnedText(c) : ''),
    h('td', { class: 'text' }, c.memory ? [networkBadge(c.memory.network), ' ', memoryLink(bank, c.memory), historyMarks(c.memory)] : h('code', {}, c.memory_id))));
  const table = h('table', { class: 'grid trace', id: 'recall-trace' },
    h('thead', {}, h('tr', {}, h('th', { class: 'num' }, 'fused'), h('th', { class: 'num' }, 'score'), channels.map((c) => h('th', { class: 'num' }, c)),
      h('th', { class: 'num' }, 'tokens'), h('th', {}, 'returned'), h('th', {}, 'memory'))),
    h('tbody', {}, rows));
  onlyReturned.addEventListener('change', () => table.classList.toggle('only-returned', onlyReturned.checked));
  parts.push(section('Trace', h('p', { class: 'small' }, info.join(' · ')),
    h('h3', {}, 'Stage timings (ms; channels run concurrently, so they overlap)'), timings,
    h('h3', {}, `Candidates (${fmtNum(res.candidates.length)}): rank and raw score per channel`),
    h('label', { class: 'check small' }, onlyReturned, ' only the returned ones'), table));
  return parts;
}
