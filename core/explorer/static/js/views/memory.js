// One memory and where it came from: the source messages inside its document, its entities, its links and,
// for an opinion, how its confidence moved; what superseded it or what it corrects, and a form to correct it.
import * as api from '../api.js';
import { chartLegend, confidenceChart } from '../chart.js';
import { forget } from '../confirm.js';
import {
  dateEl, documentLink, entityChips, fields, fmtDate, h, historyMarks, json, memoryLink, networkBadge, route, section,
  statusBadge, toast, whenText,
} from '../dom.js';
import { historyTable } from './opinions.js';

export async function render(ctx) {
  const { bank, params, root } = ctx;
  const data = await api.get('memory', { bank, id: params.get('id') });
  const m = data.memory;
  root.append(h('p', { class: 'crumbs' }, h('a', { href: route(bank, 'memories') }, '‹ Memories')));
  root.append(h('h1', { class: 'memory-title' }, m.text, historyMarks(m)));
  const history = historyNotes(bank, data, m);
  if (history.length) root.append(h('div', { class: 'history-notes', id: 'memory-history' }, history));
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
  }, 'Forget memory…')), correctForm(ctx, m)));

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
    root.append(section('Confidence over time',
      h('p', { class: 'small' }, h('a', { href: route(bank, 'opinion', { id: m.id }), id: 'opinion-page-link' }, 'The opinion’s page: its stance, and each step’s evidence with its verdict ›')),
      confidenceChart(data.history), chartLegend(), historyTable(bank, data.history)));
  }
  root.append(section(`Links (${data.links.length})`, data.links.length ? h('table', { class: 'grid' },
    h('thead', {}, h('tr', {}, h('th', {}, 'Type'), h('th', { class: 'num' }, 'Weight'), h('th', {}, 'Memory'))),
    h('tbody', {}, data.links.map((l) => h('tr', {}, h('td', {}, l.type), h('td', { class: 'num' }, l.weight.toFixed(3)),
      h('td', {}, networkBadge(l.memory.network), ' ', memoryLink(bank, l.memory)))))) : h('p', { class: 'muted' }, 'No stored links.'),
  h('p', { class: 'muted small' }, 'Entity links go through the entities above: ', entityChips(bank, m.entities))));
}

// What the memory's history says: superseded (when, by which memory), a correction of which memory (by whom,
// when), and the earlier memories it superseded; each memory a link.
function historyNotes(bank, data, m) {
  const notes = [];
  const link = (other) => (other.missing
    ? h('span', { class: 'muted' }, `memory ${other.id} (forgotten)`)
    : memoryLink(bank, other, `“${other.text}”`));
  if (data.superseded_by) {
    const since = m.valid_until ? ` on ${fmtDate(m.valid_until, { time: false })}` : '';
    notes.push(h('p', { class: 'history superseded', id: 'superseded-by' },
      h('strong', {}, `Superseded${since}`), ' by ', link(data.superseded_by), '. ',
      h('span', { class: 'muted' }, 'It is kept as history: recall puts the newer memory first.')));
  }
  if (data.corrects) {
    const fix = data.correction || {};
    const who = fix.by ? ` by ${fix.by}` : '';
    const when = fix.at ? ` on ${fmtDate(fix.at, { time: false })}` : '';
    notes.push(h('p', { class: 'history correction', id: 'corrects' },
      h('strong', {}, 'Corrects'), ' ', link(data.corrects), h('span', { class: 'muted' }, ` (corrected${who}${when})`)));
  }
  for (const older of data.supersedes || []) {
    if (data.corrects && older.id === data.corrects.id) continue; // said once, above
    notes.push(h('p', { class: 'history supersedes' }, h('strong', {}, 'Supersedes'), ' ', link(older),
      older.valid_until ? h('span', { class: 'muted' }, ` (until ${fmtDate(older.valid_until, { time: false })})`) : null));
  }
  return notes;
}

// "Correct memory…": the true text stored as a newer memory that supersedes this one, recorded as corrected by the
// token's id. The token is asked for here, as forgetting asks for it in its dialog; it is sent as a header, never in
// a form post.
function correctForm(ctx, m) {
  const { bank } = ctx;
  const text = h('textarea', { id: 'correct-text', rows: 3, maxlength: 4000, placeholder: 'What is true instead' });
  const tokenInput = h('input', { type: 'password', id: 'correct-token', autocomplete: 'off', spellcheck: 'false', value: api.token() });
  const status = h('p', { class: 'small', id: 'correct-status', role: 'status' });
  const submit = h('button', { class: 'btn primary', type: 'submit', id: 'correct-submit' }, 'Store correction');
  const form = h('form', { class: 'correct-form', id: 'correct-form' },
    h('label', { class: 'field' }, 'Corrected text', text),
    h('div', { class: 'row' }, h('label', { class: 'field grow' }, 'Token', tokenInput)),
    h('p', { class: 'muted small' }, 'Stored as a new memory that supersedes this one; this one is kept as history. The token is printed by ',
      h('code', {}, 'hindsight ui'), ' when it starts; its id is recorded as who corrected it.'),
    submit, status);
  for (const input of [text, tokenInput]) input.addEventListener('input', () => input.classList.remove('invalid'));
  form.addEventListener('submit', async (event) => {
    event.preventDefault(); // nothing is posted by the form itself: the JSON request below carries the token header
    const missing = [[text, !text.value.trim()], [tokenInput, !tokenInput.value.trim()]];
    for (const [input, bad] of missing) input.classList.toggle('invalid', bad);
    const first = missing.find(([, bad]) => bad);
    if (first) {
      first[0].focus();
      return;
    }
    api.setToken(tokenInput.value);
    submit.disabled = true;
    status.textContent = 'Storing…';
    status.className = 'small';
    try {
      const result = await api.post('correct', { bank, memory_id: m.id, text: text.value });
      toast('Correction stored: the old memory is kept as history.');
      ctx.invalidate();
      ctx.go('memory', { id: result.memory.id });
    } catch (err) {
      // As for forget: a wrong token is dropped so the next try asks again; a read-only one stays (reads still work).
      if (err.status === 403 && err.kind !== 'ReadOnlyError') {
        api.setToken('');
        tokenInput.value = '';
      }
      status.textContent = `Not corrected: ${err.message}`;
      status.className = 'small error-text';
      submit.disabled = false;
    }
  });
  return h('details', { class: 'correct', id: 'correct-memory' }, h('summary', { class: 'btn' }, 'Correct memory…'), form);
}

function size(doc) {
  return doc.message_count === null || doc.message_count === undefined ? `${doc.chars} characters` : `${doc.message_count} messages`;
}
