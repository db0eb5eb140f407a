// A bank at a glance: its profile and its counts (the full counts load after the page shows).
import * as api from '../api.js';
import { NETWORKS, fields, fmtDate, fmtNum, h, networkBadge, route, section } from '../dom.js';

export async function render(ctx) {
  const { bank, summary, root } = ctx;
  const p = summary.profile;
  root.append(h('h1', {}, p.name === bank ? bank : `${p.name} `, p.name === bank ? null : h('span', { class: 'muted' }, `(${bank})`)));
  const d = p.disposition;
  root.append(section('Profile', fields([
    ['Background', p.background ? h('p', { class: 'prose' }, p.background) : h('span', { class: 'muted' }, 'none yet')],
    ['Disposition', `skepticism ${d.skepticism} · literalism ${d.literalism} · empathy ${d.empathy} · bias ${d.bias}`],
    ['Created', fmtDate(p.created_at)],
  ])));
  const perNetwork = h('ul', { class: 'plain' }, h('li', { class: 'muted' }, 'Counting…'));
  root.append(section('Memories',
    h('p', {}, h('a', { href: route(bank, 'memories') }, `${fmtNum(summary.memories)} memories`)), perNetwork));
  const counts = h('div', {}, h('p', { class: 'muted' }, 'Counting…'));
  root.append(section('Store counts', counts));
  const [byNetwork, stats] = await Promise.all([api.get('counts', { bank }), api.get('stats', { bank })]);
  perNetwork.replaceChildren(...NETWORKS.map((n) => h('li', {}, networkBadge(n), ' ',
    h('a', { href: route(bank, 'memories', { network: n }) }, fmtNum(byNetwork.networks[n])))));
  const group = (value, view, key) => (typeof value === 'object' && value !== null
    ? h('span', {}, Object.entries(value).map(([k, v], i) => [i ? ', ' : '', view ? h('a', { href: route(bank, view, { [key]: k }) }, `${k} ${fmtNum(v)}`) : `${k} ${fmtNum(v)}`]))
    : fmtNum(value));
  counts.replaceChildren(fields([
    ['Documents', group(stats.documents, 'documents', 'status')],
    ['Entities', h('a', { href: route(bank, 'graph') }, fmtNum(stats.entities))],
    ['Links', group(stats.links)],
    ['Jobs', group(stats.jobs, 'jobs', 'status')],
    ['Vectors', fmtNum(stats.vectors)],
  ]));
}
