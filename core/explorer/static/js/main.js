// The explorer's router: "#/" lists the banks, "#/bank/<bank>/<view>?..." shows one view of a bank. Views are
// modules loaded on first use (the graph view brings cytoscape). When a view has rendered, <body data-ready="1">
// and data-ready-at (ms since navigation start) say so, for people reading the page and for the tests.
import * as api from './api.js';
import { errorBox, fmtDate, fmtNum, h, parseRoute, route } from './dom.js';

const VIEWS = {
  overview: './views/overview.js',
  memories: './views/memories.js',
  timeline: './views/timeline.js',
  audit: './views/audit.js',
  memory: './views/memory.js',
  graph: './views/graph.js',
  entity: './views/entity.js',
  opinions: './views/opinions.js',
  opinion: './views/opinion.js',
  documents: './views/documents.js',
  document: './views/document.js',
  jobs: './views/jobs.js',
  recall: './views/recall.js',
};
const TABS = [
  ['overview', 'Overview'], ['memories', 'Memories'], ['timeline', 'Timeline'], ['graph', 'Entities'], ['opinions', 'Opinions'],
  ['documents', 'Documents'], ['jobs', 'Jobs'], ['recall', 'Recall'], ['audit', 'Audit'],
];
const TAB_OF = { memory: 'memories', entity: 'graph', document: 'documents', opinion: 'opinions' };

let banks = null;
const summaries = new Map();
let current = 0;

async function bankList() {
  if (!banks) banks = (await api.get('banks')).banks;
  return banks;
}

async function summaryOf(bank) {
  if (!summaries.has(bank)) summaries.set(bank, await api.get('bank', { bank }));
  return summaries.get(bank);
}

function invalidate(bank) {
  summaries.delete(bank);
  banks = null;
}

function setTabs(bank, active) {
  const nav = document.getElementById('tabs');
  nav.replaceChildren(...(bank ? TABS.map(([view, label]) =>
    h('a', { href: route(bank, view), class: view === active ? 'active' : undefined, dataset: { view } }, label)) : []));
}

function setBankSelect(list, bank) {
  const select = document.getElementById('bank-select');
  select.replaceChildren(h('option', { value: '' }, '(choose)'),
    ...list.map((b) => h('option', { value: b.id, selected: b.id === bank }, b.name === b.id ? b.id : `${b.name} (${b.id})`)));
}

function setTokenState() {
  const el = document.getElementById('token-state');
  el.textContent = api.token() ? 'token set: forget and correct enabled' : 'no token: read only';
  el.classList.toggle('has-token', Boolean(api.token()));
}

function renderBanks(root, list) {
  root.append(h('h1', {}, 'Memory banks'));
  if (!list.length) {
    root.append(h('p', { class: 'muted empty' }, 'This store holds no banks yet.'));
    return;
  }
  root.append(h('table', { class: 'grid' },
    h('thead', {}, h('tr', {}, h('th', {}, 'Bank'), h('th', {}, 'Name'), h('th', { class: 'num' }, 'Memories'), h('th', {}, 'Created (UTC)'))),
    h('tbody', {}, list.map((b) => h('tr', {},
      h('td', {}, h('a', { href: route(b.id, 'memories') }, b.id)), h('td', {}, b.name),
      h('td', { class: 'num' }, fmtNum(b.memories)), h('td', {}, fmtDate(b.created_at)))))));
}

async function render() {
  const seq = ++current;
  const body = document.body;
  body.dataset.ready = '0';
  const view = document.getElementById('view');
  const root = h('div', { class: 'view' });
  api.takeTokenFromLocation(); // also when the printed address is pasted into a tab already open here
  const { parts, params } = parseRoute(location.hash);
  setTokenState();
  try {
    if (parts[0] !== 'bank' || !parts[1]) {
      const list = await bankList();
      setBankSelect(list, '');
      setTabs(null);
      view.replaceChildren(root);
      renderBanks(root, list);
    } else {
      const bank = parts[1];
      const name = parts[2] || 'overview';
      setTabs(bank, TAB_OF[name] || name);
      if (!VIEWS[name]) throw new Error(`unknown view ${JSON.stringify(name)}`);
      // The bank list (for the picker), the bank and the view's code are fetched at once.
      const [list, summary, module] = await Promise.all([bankList(), summaryOf(bank), import(VIEWS[name])]);
      setBankSelect(list, bank);
      if (seq !== current) return;
      root.classList.add(`view-${name}`);
      view.replaceChildren(root);
      document.title = `${name} · ${bank} · Hindsight explorer`;
      await module.render({
        bank, params, summary, root,
        go: (target, p) => { location.hash = route(bank, target, p); },
        invalidate: () => invalidate(bank),
        isCurrent: () => seq === current,
      });
    }
  } catch (err) {
    if (seq !== current) return;
    view.replaceChildren(root);
    root.append(errorBox(err));
  }
  if (seq !== current) return;
  body.dataset.ready = '1';
  body.dataset.readyAt = String(Math.round(performance.now()));
}

document.getElementById('bank-select').addEventListener('change', (event) => {
  const bank = event.target.value;
  location.hash = bank ? route(bank, 'memories') : '#/';
});

window.addEventListener('hashchange', render);
render();
