// A bank at a glance: its profile; pictures of how it grew, its jobs' backlog and throughput, the facts the checks
// rejected and why, and how fresh its observations are (uPlot, vendored); its counts below.
import * as api from '../api.js';
import { NETWORKS, fields, fmtDate, fmtNum, h, networkBadge, route, section } from '../dom.js';
import { NETWORK_COLORS, STATUS_COLORS, stackedBars } from '../plots.js';

const STATUSES = ['done', 'failed', 'running', 'queued'];
const FRESHNESS = [
  ['current', 'current', '#2b8a3e'], ['1–4 new', '1 to 4 new memories since', '#fab005'],
  ['5–19 new', '5 to 19 new', '#e67700'], ['20+ new', '20 or more new', '#c92a2a'],
  ['superseded', 'superseded', '#868e96'],
];

function placed(root, box) {
  root.append(box);
  if (box.draw) box.draw();
  return box;
}

function scanNote(scanned, total, what) {
  return total > scanned ? h('p', { class: 'muted small' }, `Counted over the newest ${fmtNum(scanned)} of ${fmtNum(total)} ${what}.`) : null;
}

async function growthSection(bank, growth) {
  const sec = h('section', { class: 'card', id: 'overview-growth' }, h('h2', {}, 'How the bank grew'));
  const body = h('div', {});
  let mode = 'stored';
  const tabs = h('div', { class: 'segmented', role: 'group', 'aria-label': 'count memories by' });
  const draw = async () => {
    const g = growth[mode];
    const box = await stackedBars({
      x: g.x, series: NETWORKS.map((n) => ({ key: n, label: n, color: NETWORK_COLORS[n], values: g.counts[n] })),
      label: `memories per day and network, by the day each was ${mode}: ${fmtNum(growth.scanned)} memories on ${g.x.length} days`,
      yLabel: 'memories',
    });
    body.replaceChildren();
    placed(body, box);
    tabs.querySelectorAll('button').forEach((b) => b.classList.toggle('active', b.dataset.mode === mode));
    tabs.querySelectorAll('button').forEach((b) => b.setAttribute('aria-pressed', String(b.dataset.mode === mode)));
  };
  for (const [key, text] of [['stored', 'by day stored'], ['said', 'by day said']]) {
    tabs.append(h('button', { type: 'button', class: 'seg', dataset: { mode: key }, onclick: () => { mode = key; draw(); } }, text));
  }
  sec.append(h('p', { class: 'muted small' }, 'Memories per day (UTC) and network: when each was stored, or when it was said (its mention, else when it happened).'),
    tabs, body);
  if (growth.truncated) sec.append(scanNote(growth.scanned, growth.total, 'memories'));
  return { sec, draw };
}

async function jobsSection(bank, jobs) {
  const sec = h('section', { class: 'card', id: 'overview-jobs' }, h('h2', {}, 'Jobs: backlog and throughput'));
  const b = jobs.backlog;
  sec.append(fields([
    ['Backlog', h('span', {}, h('a', { href: route(bank, 'jobs', { status: 'queued' }) }, `${fmtNum(b.queued)} queued`),
      ` (${fmtNum(b.due)} due now, ${fmtNum(b.waiting)} waiting to retry) · `,
      h('a', { href: route(bank, 'jobs', { status: 'running' }) }, `${fmtNum(b.running)} running`))],
    ['Oldest queued', b.oldest_queued ? fmtDate(b.oldest_queued) : '–'],
    ['Finished', h('span', {}, h('a', { href: route(bank, 'jobs', { status: 'done' }) }, `${fmtNum(jobs.by_status.done)} done`), ' · ',
      h('a', { href: route(bank, 'jobs', { status: 'failed' }) }, `${fmtNum(jobs.by_status.failed)} failed`))],
  ]));
  const q = jobs.queued_per_bucket;
  const box = await stackedBars({
    x: q.x, bucket: jobs.bucket, yLabel: 'jobs',
    series: STATUSES.map((s) => ({ key: s, label: s, color: STATUS_COLORS[s], values: q.counts[s] })),
    label: `jobs queued per ${jobs.bucket} by their status now: ${fmtNum(jobs.scanned)} jobs`,
  });
  sec.append(h('h3', {}, 'Queued'), h('p', { class: 'muted small' }, `Jobs queued per ${jobs.bucket} (UTC), by their status now.`));
  placed(sec, box).id = 'overview-jobs-queued';
  // Throughput: the jobs that finished per hour or day, by when they finished.
  const f = jobs.finished_per_bucket;
  const done = await stackedBars({
    x: f.x, bucket: jobs.bucket, yLabel: 'jobs',
    series: ['done', 'failed'].map((s) => ({ key: s, label: s, color: STATUS_COLORS[s], values: f.counts[s] })),
    label: `jobs finished per ${jobs.bucket}, done or failed for good: ${fmtNum(jobs.by_status.done + jobs.by_status.failed)} jobs`,
  });
  const undated = jobs.finished_undated
    ? ` ${fmtNum(jobs.finished_undated)} finished before the store recorded when: counted when they were queued.` : '';
  sec.append(h('h3', {}, 'Finished (throughput)'), h('p', { class: 'muted small' }, `Jobs done or failed for good per ${jobs.bucket} (UTC), by when they finished.${undated}`));
  placed(sec, done).id = 'overview-jobs-finished';
  const kinds = Object.entries(jobs.by_kind);
  if (kinds.length) {
    sec.append(h('table', { class: 'grid compact', id: 'overview-job-kinds' },
      h('thead', {}, h('tr', {}, h('th', {}, 'Kind'), STATUSES.map((s) => h('th', { class: 'num' }, s)))),
      h('tbody', {}, kinds.map(([kind, counts]) => h('tr', {}, h('td', {}, kind),
        STATUSES.map((s) => h('td', { class: 'num' }, fmtNum(counts[s] || 0))))))));
  }
  if (jobs.truncated) sec.append(h('p', { class: 'muted small' }, `Counted over the newest ${fmtNum(jobs.scanned)} jobs.`));
  return sec;
}

async function rejectedSection(bank, rej) {
  const sec = h('section', { class: 'card', id: 'overview-rejected' }, h('h2', {}, 'Facts rejected by the checks'));
  if (!rej.jobs) {
    sec.append(h('p', { class: 'muted' }, 'No finished fact extraction yet: a raw-retained bank has no facts to check.'));
    return sec;
  }
  const all = rej.facts + rej.rejected;
  const share = all ? ` (${Math.round((100 * rej.rejected) / all)}% of the facts the model wrote)` : '';
  sec.append(h('p', {}, `${fmtNum(rej.rejected)} rejected${share}, ${fmtNum(rej.facts)} stored, over ${fmtNum(rej.jobs)} extraction jobs. A fact is stored only when the messages it cites support it.`));
  const reasons = Object.keys(rej.by_reason);
  const box = await stackedBars({
    x: reasons, categories: true, yLabel: 'facts',
    series: [{ key: 'rejected', label: 'rejected facts', color: '#c92a2a', values: reasons.map((r) => rej.by_reason[r]) }],
    label: `rejected facts by reason: ${reasons.map((r) => `${r} ${rej.by_reason[r]}`).join(', ') || 'none'}`,
    height: 200,
  });
  placed(sec, box);
  if (rej.samples.length) {
    sec.append(h('h3', {}, 'Rejected, the newest'), h('table', { class: 'grid', id: 'overview-rejections' },
      h('thead', {}, h('tr', {}, h('th', {}, 'Fact (not stored)'), h('th', {}, 'Why'), h('th', {}, 'Cited messages'), h('th', {}, 'Document'), h('th', {}, 'Job'))),
      h('tbody', {}, rej.samples.map((s) => h('tr', {},
        h('td', { class: 'text' }, s.text),
        h('td', {}, h('span', { class: 'badge' }, s.reason), s.detail ? h('span', { class: 'small muted' }, ` ${s.detail}`) : null),
        h('td', { class: 'mono small' }, s.sources.join(', ') || '–'),
        h('td', { class: 'small' }, s.document_id ? h('a', { class: 'mono', href: route(bank, 'document', { id: s.document_id, highlight: s.sources }) }, s.document_id) : '–'),
        h('td', { class: 'small' }, h('a', { class: 'mono', href: route(bank, 'jobs') }, s.job_id.slice(0, 8))))))));
  }
  return sec;
}

function freshnessBand(o) {
  if (o.superseded_by) return 'superseded';
  if (o.new_since === null || o.new_since <= 0) return 'current';
  if (o.new_since < 5) return '1–4 new';
  return o.new_since < 20 ? '5–19 new' : '20+ new';
}

async function freshnessSection(bank, fresh) {
  const sec = h('section', { class: 'card', id: 'overview-freshness' }, h('h2', {}, 'Observations: how fresh'));
  if (!fresh.observations.length) {
    sec.append(h('p', { class: 'muted' }, 'No observation yet: they are written in the background when an entity’s facts change.'));
    return sec;
  }
  const bands = FRESHNESS.map(([key]) => key);
  const counts = bands.map((b) => fresh.observations.filter((o) => freshnessBand(o) === b).length);
  sec.append(h('p', {}, `${fmtNum(fresh.current)} of ${fmtNum(fresh.observations.length)} observations rest on everything said about their entity; the others were written before newer memories about it (a new one is written once enough arrive).`));
  const box = await stackedBars({
    x: bands, categories: true, yLabel: 'observations', height: 200,
    series: [{ key: 'observations', label: 'observations', color: '#e67700', values: counts }],
    label: `observations by memories about their entity since written: ${bands.map((b, i) => `${b} ${counts[i]}`).join(', ')}`,
  });
  placed(sec, box);
  sec.append(h('table', { class: 'grid', id: 'overview-observations' },
    h('thead', {}, h('tr', {}, h('th', {}, 'Entity'), h('th', {}, 'Written (UTC)'), h('th', { class: 'num' }, 'Memories about it then'),
      h('th', { class: 'num' }, 'Now'), h('th', { class: 'num' }, 'New since'), h('th', {}, 'Observation'))),
    h('tbody', {}, fresh.observations.slice(0, 20).map((o) => h('tr', { class: o.superseded_by ? 'superseded' : undefined },
      h('td', {}, o.entity_id ? h('a', { href: route(bank, 'entity', { id: o.entity_id }) }, o.entity || o.entity_id) : o.entity || '–'),
      h('td', { class: 'nowrap' }, fmtDate(o.written)),
      h('td', { class: 'num' }, o.evidence_then === null ? '–' : fmtNum(o.evidence_then)),
      h('td', { class: 'num' }, o.evidence_now === null ? '–' : fmtNum(o.evidence_now)),
      h('td', { class: 'num' }, o.new_since === null ? '–' : fmtNum(o.new_since)),
      h('td', {}, h('a', { href: route(bank, 'memory', { id: o.id }) }, freshnessBand(o))))))));
  if (fresh.truncated) sec.append(scanNote(fresh.observations.length, fresh.total, 'observations'));
  return sec;
}

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
  const pictures = h('div', { class: 'overview-pictures' }, h('p', { class: 'muted' }, 'Drawing…'));
  root.append(pictures);
  const perNetwork = h('ul', { class: 'plain' }, h('li', { class: 'muted' }, 'Counting…'));
  root.append(section('Memories',
    h('p', {}, h('a', { href: route(bank, 'memories') }, `${fmtNum(summary.memories)} memories`)), perNetwork));
  const counts = h('div', {}, h('p', { class: 'muted' }, 'Counting…'));
  root.append(section('Store counts', counts));
  const [byNetwork, stats, overview] = await Promise.all([
    api.get('counts', { bank }), api.get('stats', { bank }), api.get('overview', { bank })]);
  pictures.replaceChildren();
  const growth = await growthSection(bank, overview.growth);
  pictures.append(growth.sec);
  await growth.draw();
  pictures.append(await jobsSection(bank, overview.jobs));
  pictures.append(await rejectedSection(bank, overview.rejected));
  pictures.append(await freshnessSection(bank, overview.freshness));
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
