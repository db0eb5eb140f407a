// One raw document: its messages (the memory's sources highlighted), status, error, metadata, and its memories.
import * as api from '../api.js';
import { forget } from '../confirm.js';
import { dateEl, fields, fmtDate, fmtNum, h, json, memoryTable, pager, paramsObject, route, section, statusBadge } from '../dom.js';

export async function render(ctx) {
  const { bank, params, root } = ctx;
  const current = paramsObject(params);
  const id = params.get('id');
  const highlight = new Set(params.getAll('highlight'));
  const limit = Number(params.get('limit')) || 50;
  const offset = Number(params.get('offset')) || 0;
  const [data, page] = await Promise.all([
    api.get('document', { bank, id }),
    api.get('memories', { bank, document: id, limit, offset }),
  ]);
  const d = data.document;
  root.append(h('p', { class: 'crumbs' }, h('a', { href: route(bank, 'documents') }, '‹ Documents')));
  root.append(h('h1', {}, 'Document ', h('code', {}, d.id)));
  root.append(section('Document', fields([
    ['Status', statusBadge(d.status)],
    d.error ? ['Error', h('pre', { class: 'error-text' }, d.error)] : null,
    ['Said at', dateEl(d.timestamp)],
    ['Stored', dateEl(d.created_at)],
    ['Updated', dateEl(d.updated_at)],
    ['Kind', d.kind || '–'],
    d.context ? ['Context', d.context] : null,
    d.job_id ? ['Job', h('a', { href: route(bank, 'jobs') }, d.job_id)] : null,
    ['Memories', fmtNum(data.memories)],
    Object.keys(d.metadata || {}).length ? ['Metadata', json(d.metadata)] : null,
    Object.keys(d.options || {}).length ? ['Retained with', json(d.options)] : null,
  ]), h('div', { class: 'actions' }, h('button', {
    class: 'btn danger', type: 'button', id: 'forget-document',
    onclick: () => forget(bank, { document_id: d.id }, {
      title: 'Forget this document?', message: `Document ${d.id} and the ${data.memories} memories extracted from it.`,
      onDone: () => { ctx.invalidate(); ctx.go('documents'); },
    }),
  }, 'Forget document and its memories…'))));
  const content = d.messages
    ? h('ol', { class: 'messages' }, d.messages.map((m) => h('li', { class: `message${m.id !== null && highlight.has(m.id) ? ' highlight' : ''}`, id: m.id ? `msg-${m.id}` : undefined },
      h('div', { class: 'message-head' }, m.id ? h('code', {}, m.id) : null, m.speaker ? h('strong', {}, ` ${m.speaker}`) : null,
        m.timestamp ? h('span', { class: 'muted' }, ` ${fmtDate(m.timestamp)}`) : null),
      h('div', { class: 'message-text' }, m.text))))
    : h('pre', { class: 'document-text' }, d.text);
  root.append(section(d.messages ? `Messages (${d.messages.length})` : 'Text', content));
  const go = (o, l) => ctx.go('document', { ...current, offset: o, limit: l });
  root.append(section(`Memories from this document (${fmtNum(page.total)})`, pager(page, go), memoryTable(bank, page.items)));
  const first = root.querySelector('.message.highlight');
  if (first) first.scrollIntoView({ block: 'center' });
}
