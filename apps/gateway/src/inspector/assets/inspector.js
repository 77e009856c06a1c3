// Loopline session inspector: a page script with no dependencies. Every value that comes from a
// session (message text, tool input and output, names, ids, errors) reaches the page through
// textContent or setAttribute on elements built here; nothing is ever parsed as HTML.

const API = document.body.dataset.api || '/admin/inspector/api';
const SVG_NS = 'http://www.w3.org/2000/svg';
const CLIP = 4000;

// ---------- DOM helpers ----------

function add(parent, child) {
  if (child === null || child === undefined || child === false) return;
  if (Array.isArray(child)) {
    for (const c of child) add(parent, c);
  } else if (typeof child === 'string' || typeof child === 'number') {
    parent.appendChild(document.createTextNode(String(child)));
  } else {
    parent.appendChild(child);
  }
}

/** Replaces a node's children (null/false children are skipped, strings become text nodes). */
function fill(node, ...children) {
  node.replaceChildren();
  add(node, children);
  return node;
}

/** h('div', {class: 'x', title: 'y'}, children…): attributes through setAttribute, text as text nodes. */
function h(tag, attrs, ...children) {
  const node = document.createElement(tag);
  setAttrs(node, attrs);
  add(node, children);
  return node;
}

function s(tag, attrs, ...children) {
  const node = document.createElementNS(SVG_NS, tag);
  setAttrs(node, attrs);
  add(node, children);
  return node;
}

function setAttrs(node, attrs) {
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (key === 'class') node.setAttribute('class', String(value));
    else node.setAttribute(key, value === true ? '' : String(value));
  }
}

const fmt = (n) => (n === null || n === undefined ? '–' : Number(n).toLocaleString('en-US'));
const time = (iso) => (iso ? new Date(iso).toISOString().replace('T', ' ').replace('Z', '') : '–');
const ms = (n) => (n === null || n === undefined ? '–' : n < 1000 ? `${n} ms` : `${(n / 1000).toFixed(2)} s`);
const badge = (text, cls) => h('span', { class: `badge ${cls || ''}` }, text);
const msgLink = (id, seq) => h('a', { href: `#msg-${encodeURIComponent(id)}` }, `#${seq}`);

function clipped(text, cls) {
  const value = String(text ?? '');
  if (value.length <= CLIP) return h('pre', { class: cls }, value);
  return h(
    'div',
    {},
    h('pre', { class: cls }, value.slice(0, CLIP)),
    h(
      'details',
      {},
      h('summary', {}, `${fmt(value.length - CLIP)} more characters`),
      h('pre', { class: cls }, value.slice(CLIP)),
    ),
  );
}

function json(value) {
  try {
    return JSON.stringify(value, null, 2);
  } catch {
    return String(value);
  }
}

function notice(text, isError) {
  const el = document.getElementById('notice');
  el.textContent = text;
  el.className = isError ? 'error' : '';
}

async function getJson(path) {
  const res = await fetch(`${API}${path}`, {
    credentials: 'same-origin',
    headers: { accept: 'application/json' },
  });
  const body = await res.json().catch(() => ({}));
  if (!res.ok) {
    const message = body?.error?.message || `HTTP ${res.status}`;
    const hint = res.status === 401 ? ' — open this page once with ?token=<operator token>' : '';
    throw new Error(`${message}${hint}`);
  }
  return body;
}

// ---------- session picker ----------

async function listSessions(current) {
  const form = document.getElementById('filter');
  const params = new URLSearchParams();
  for (const name of ['tenant', 'status', 'limit']) {
    const value = form.elements[name].value.trim();
    if (value) params.set(name, value);
  }
  const table = document.getElementById('sessions');
  try {
    const { sessions } = await getJson(`/sessions?${params}`);
    fill(
      table,
      h(
        'thead',
        {},
        h(
          'tr',
          {},
          [
            'Session',
            'Tenant',
            'Agent',
            'Model',
            'Status',
            'Steps',
            'Compactions',
            'Messages',
            'Updated',
          ].map((c, i) => h('th', { class: i >= 5 && i <= 7 ? 'num' : null }, c)),
        ),
      ),
      h(
        'tbody',
        {},
        sessions.length === 0
          ? h('tr', {}, h('td', { colspan: 9, class: 'empty' }, 'No sessions match.'))
          : sessions.map((row) =>
              h(
                'tr',
                { class: row.id === current ? 'current' : null },
                h(
                  'td',
                  { class: 'mono' },
                  h('a', { href: `?session=${encodeURIComponent(row.id)}` }, row.id),
                  row.title ? h('div', { class: 'small' }, row.title) : null,
                ),
                h('td', {}, row.tenantName, h('div', { class: 'small mono' }, row.tenantId)),
                h('td', {}, row.agent),
                h('td', { class: 'mono' }, row.model),
                h('td', {}, badge(row.status, row.status)),
                h('td', { class: 'num' }, fmt(row.stepCount)),
                h('td', { class: 'num' }, fmt(row.compactionCount)),
                h('td', { class: 'num' }, fmt(row.lastSeq)),
                h('td', {}, time(row.updatedAt)),
              ),
            ),
      ),
    );
  } catch (err) {
    notice(`Could not list sessions: ${err.message}`, true);
  }
}

// ---------- one session ----------

async function inspect(id) {
  notice(`Loading ${id}…`);
  let data;
  try {
    data = await getJson(`/sessions/${encodeURIComponent(id)}`);
  } catch (err) {
    notice(`Could not load session ${id}: ${err.message}`, true);
    return;
  }
  document.title = `${data.session.id} · Loopline inspector`;
  const ctx = context(data);
  renderOverview(data, ctx);
  renderGauge(data);
  renderTimeline(data, ctx);
  renderCompactions(data);
  renderSteps(data);
  document.getElementById('session').hidden = false;
  notice(
    `${data.messages.length} messages, ${data.compactions.length} compaction runs, ${data.steps.length} job attempts.`,
  );
  document.body.dataset.loaded = data.session.id;
  if (location.hash) document.getElementById(location.hash.slice(1))?.scrollIntoView();
}

/** Lookups the renderers share. */
function context(data) {
  const seqOf = new Map(data.messages.map((m) => [m.info.id, m.info.seq]));
  const byMarker = new Map(data.compactions.map((c) => [c.messageId, c]));
  const bySummary = new Map(
    data.compactions.filter((c) => c.summaryMessageId).map((c) => [c.summaryMessageId, c]),
  );
  // The newest completed compaction that replaced each message.
  const replacedBy = new Map();
  for (const c of data.compactions) {
    if (c.status !== 'completed' || !c.replaced) continue;
    for (const id of c.replaced.messageIds) replacedBy.set(id, c);
  }
  const stepsByMessage = new Map();
  for (const st of data.steps) {
    if (!st.messageId) continue;
    if (!stepsByMessage.has(st.messageId)) stepsByMessage.set(st.messageId, []);
    stepsByMessage.get(st.messageId).push(st);
  }
  return { seqOf, byMarker, bySummary, replacedBy, stepsByMessage };
}

function renderOverview(data, ctx) {
  const { session: se, gauge: g, boundary } = data;
  const fact = (label, ...value) => h('div', {}, h('dt', {}, label), h('dd', {}, ...value));
  fill(
    document.getElementById('overview'),
    h(
      'div',
      { class: 'overview-head' },
      h('h2', { class: 'mono' }, se.id),
      badge(se.status, se.status),
      se.statusDetail ? h('span', { class: 'small' }, se.statusDetail) : null,
      se.title ? h('span', {}, se.title) : null,
    ),
    se.error ? h('pre', { class: 'error' }, json(se.error)) : null,
    h(
      'dl',
      { class: 'facts' },
      fact('Tenant', se.tenantName, ' ', h('span', { class: 'small mono' }, se.tenantId)),
      fact('Agent · model', `${se.agentName} · `, h('span', { class: 'mono' }, se.model)),
      fact(
        'Context now (next prompt estimate)',
        h('meter', {
          min: 0,
          max: g.trigger || 1,
          value: g.used,
          high: g.background || g.trigger,
          optimum: 0,
        }),
        ` ${fmt(g.used)} / ${fmt(g.trigger)} (${g.percentOfTrigger}% of trigger)`,
      ),
      fact(
        'Limits · usable · background',
        `${fmt(g.limits.context)} ctx · ${fmt(g.usable)} usable · ${fmt(g.background)} background`,
      ),
      fact('Steps · fence · last seq', `${fmt(se.stepCount)} · ${fmt(se.fence)} · ${fmt(se.lastSeq)}`),
      fact(
        'Boundary',
        boundary
          ? h(
              'span',
              {},
              'compaction ',
              msgLink(boundary.messageId, ctx.seqOf.get(boundary.messageId) ?? '?'),
              ', model view from ',
              msgLink(boundary.tailStartId ?? boundary.messageId, boundary.seq),
            )
          : 'none (whole log in view)',
      ),
      fact('Compactions', `${fmt(se.compactionCount)} completed, ${fmt(data.compactions.length)} runs`),
      fact(
        'Switches · token ratio',
        `autocompact ${g.flags.autocompact ? 'on' : 'off'}, prune ${g.flags.prune ? 'on' : 'off'} · ${
          se.tokenRatio === null ? 'prior' : se.tokenRatio.toFixed(3)
        }`,
      ),
      fact('Created · updated', `${time(se.createdAt)} · ${time(se.updatedAt)}`),
    ),
  );
}

// ---------- gauge chart (inline SVG) ----------

/** 1, 2, 2.5 or 5 × a power of ten, at least `rough`. */
function niceStep(rough) {
  const pow = 10 ** Math.floor(Math.log10(Math.max(rough, 1)));
  for (const m of [1, 2, 2.5, 5, 10]) if (m * pow >= rough) return m * pow;
  return 10 * pow;
}

function renderGauge(data) {
  const host = document.getElementById('gauge');
  const g = data.gauge;
  const points = data.series.map((p) => ({ ...p }));
  points.push({ i: points.length, kind: 'now', tokens: g.used, label: 'next prompt (estimate)', at: null });
  const W = 1000;
  const H = 300;
  const M = { l: 64, r: 150, t: 16, b: 34 };
  const top = Math.max(g.trigger, g.usable, g.background, ...points.map((p) => p.tokens), 1);
  const tick = niceStep(top / 4);
  const maxY = Math.ceil((top * 1.05) / tick) * tick;
  const n = Math.max(points.length - 1, 1);
  const x = (i) => M.l + ((W - M.l - M.r) * i) / n;
  const y = (v) => H - M.b - ((H - M.t - M.b) * v) / maxY;

  const svg = s('svg', {
    class: 'chart',
    viewBox: `0 0 ${W} ${H}`,
    role: 'img',
    'aria-label': 'Token gauge over the session',
  });
  // axes and y ticks
  for (let v = 0; v <= maxY; v += tick) {
    svg.appendChild(s('line', { x1: M.l, x2: W - M.r, y1: y(v), y2: y(v), stroke: '#eceff4' }));
    svg.appendChild(s('text', { x: M.l - 6, y: y(v) + 4, 'text-anchor': 'end' }, fmt(v)));
  }
  svg.appendChild(s('line', { x1: M.l, x2: M.l, y1: M.t, y2: H - M.b, stroke: '#9aa1ae' }));
  svg.appendChild(s('line', { x1: M.l, x2: W - M.r, y1: H - M.b, y2: H - M.b, stroke: '#9aa1ae' }));

  const hline = (value, color, dash, label) => {
    if (!value) return;
    svg.appendChild(
      s('line', {
        x1: M.l,
        x2: W - M.r,
        y1: y(value),
        y2: y(value),
        stroke: color,
        'stroke-width': 1.5,
        'stroke-dasharray': dash,
      }),
    );
    svg.appendChild(
      s(
        'text',
        { x: W - M.r + 6, y: y(value) + 4, class: 'line-label', fill: color },
        `${label} ${fmt(value)}`,
      ),
    );
  };
  if (g.usable !== g.trigger) hline(g.usable, '#9aa1ae', '2 3', 'usable');
  hline(g.trigger, '#c62f3c', '6 4', 'trigger');
  hline(g.background, '#c77700', '2 4', 'background');

  // the series
  if (points.length > 1) {
    svg.appendChild(
      s('polyline', {
        points: points.map((p) => `${x(p.i).toFixed(1)},${y(p.tokens).toFixed(1)}`).join(' '),
        fill: 'none',
        stroke: '#2f6fde',
        'stroke-width': 2,
        'stroke-linejoin': 'round',
      }),
    );
  }
  const labelled = new Set();
  for (const p of points) {
    const cx = x(p.i);
    const cy = y(p.tokens);
    const tip = s('title', {}, `${p.label}: ${fmt(p.tokens)} tokens${p.at ? ` at ${time(p.at)}` : ''}`);
    if (p.kind === 'step') {
      svg.appendChild(s('circle', { cx, cy, r: 4, fill: '#2f6fde', class: 'pt-step' }, tip));
    } else if (p.kind === 'now') {
      svg.appendChild(
        s(
          'circle',
          { cx, cy, r: 5, fill: '#fff', stroke: '#2f6fde', 'stroke-width': 2, class: 'pt-now' },
          tip,
        ),
      );
      svg.appendChild(s('text', { x: cx, y: cy - 9, 'text-anchor': 'middle' }, 'now'));
    } else {
      const d = `M ${cx} ${cy - 6} L ${cx + 6} ${cy} L ${cx} ${cy + 6} L ${cx - 6} ${cy} Z`;
      svg.appendChild(s('path', { d, fill: '#7a3ed6', class: `pt-${p.kind}` }, tip));
      if (p.kind === 'compaction-before' && !labelled.has(p.ref)) {
        labelled.add(p.ref);
        const c = data.compactions.find((k) => k.id === p.ref);
        svg.appendChild(
          s('line', { x1: cx, x2: cx, y1: M.t, y2: H - M.b, stroke: '#7a3ed6', 'stroke-dasharray': '3 3' }),
        );
        svg.appendChild(
          s('text', { x: cx + 4, y: M.t + 10, class: 'cmp-label' }, c ? `C${c.n} ${c.reason}` : 'compaction'),
        );
      }
    }
  }
  // x labels: step numbers (sparse when crowded)
  const every = Math.ceil(points.length / 30);
  points.forEach((p, idx) => {
    if (idx % every !== 0 || p.kind !== 'step') return;
    const st = data.steps.find((k) => k.id === p.ref);
    if (st)
      svg.appendChild(s('text', { x: x(p.i), y: H - M.b + 14, 'text-anchor': 'middle' }, String(st.step)));
  });
  svg.appendChild(s('text', { x: M.l, y: H - 4 }, 'step (ordinal; hover a point for its time)'));

  const legend = h(
    'div',
    { class: 'legend' },
    h('span', {}, h('i', { class: 'used' }), 'context per call'),
    h('span', {}, h('i', { class: 'cmp' }), 'compaction (before → after)'),
    h('span', {}, h('i', { class: 'trigger' }), 'trigger'),
    h('span', {}, h('i', { class: 'background' }), 'background'),
    g.usable !== g.trigger ? h('span', {}, h('i', { class: 'usable' }), 'usable') : null,
  );
  fill(
    host,
    data.series.length === 0 ? h('p', { class: 'empty' }, 'No usage reported yet.') : null,
    svg,
    legend,
  );
}

// ---------- timeline ----------

function renderTimeline(data, ctx) {
  const items = data.messages.map((m) => {
    const marker = ctx.byMarker.get(m.info.id);
    return marker ? compactionItem(m, marker, ctx) : messageItem(m, ctx);
  });
  fill(document.getElementById('timeline'), items);
}

function compactionItem(m, c, ctx) {
  const r = c.replaced;
  const range = r
    ? h(
        'div',
        {},
        h('strong', {}, `Replaced ${fmt(r.count)} message${r.count === 1 ? '' : 's'}`),
        r.count > 0 ? ` (seq ${r.fromSeq}–${r.toSeq})` : '',
        r.tailStartSeq !== null
          ? ['; kept verbatim from ', msgLink(r.tailStartId, r.tailStartSeq)]
          : '; no tail kept',
        r.exact ? '' : ' (recomputed: the compaction was reverted)',
        h(
          'div',
          { class: 'range-list small' },
          r.messageIds.map((id) => msgLink(id, ctx.seqOf.get(id) ?? '?')),
        ),
      )
    : h('div', { class: 'small' }, 'Range unknown (compaction message not in the log).');
  const saved =
    c.tokensBefore !== null && c.tokensAfter !== null && c.tokensBefore > 0
      ? ` (−${Math.round((1 - c.tokensAfter / c.tokensBefore) * 100)}%)`
      : '';
  return h(
    'li',
    {
      id: `msg-${m.info.id}`,
      class: `compaction${m.info.reverted ? ' reverted' : ''}`,
      'data-seq': m.info.seq,
    },
    h(
      'h3',
      {},
      `C${c.n} · compaction point #${m.info.seq} `,
      badge(c.status, c.status === 'completed' ? 'ok' : c.status === 'failed' ? 'bad' : 'warn'),
      badge(c.reason, 'cmp'),
      c.rung ? badge(`rung: ${c.rung}`, 'cmp') : null,
      c.overflow ? badge('overflow', 'warn') : null,
      c.background ? badge('background', 'cmp') : null,
      m.info.reverted ? badge('reverted', 'bad') : null,
    ),
    h(
      'div',
      { class: 'small' },
      `tokens ${fmt(c.tokensBefore)} → ${fmt(c.tokensAfter)}${saved} · head ${fmt(c.headMessages)} · model ${
        c.model ?? '–'
      } · job ${c.jobId ?? '–'} (attempt ${c.attempt ?? '–'}) · ${ms(c.durationMs)} · ${c.requests ?? '–'} requests · started ${time(c.startedAt)}`,
    ),
    c.instructions ? h('div', { class: 'small' }, `instructions: ${c.instructions}`) : null,
    range,
    c.error ? h('pre', { class: 'error' }, json(c.error)) : null,
    c.summaryText !== null
      ? h(
          'div',
          { class: 'part' },
          h(
            'div',
            { class: 'small' },
            'Summary ',
            c.summarySeq !== null ? msgLink(c.summaryMessageId, c.summarySeq) : null,
          ),
          clipped(c.summaryText, 'summary-text'),
        )
      : h('div', { class: 'small' }, 'No summary written.'),
  );
}

function messageItem(m, ctx) {
  const info = m.info;
  const replaced = ctx.replacedBy.get(info.id);
  const summaryOf = ctx.bySummary.get(info.id);
  const classes = [info.role];
  if (replaced) classes.push('replaced');
  if (info.reverted) classes.push('reverted');
  const usage = info.usage
    ? `usage in ${fmt(info.usage.input)} · cache ${fmt(info.usage.cache.read)}/${fmt(info.usage.cache.write)} · out ${fmt(
        info.usage.output,
      )}`
    : null;
  const steps = ctx.stepsByMessage.get(info.id) || [];
  return h(
    'li',
    { id: `msg-${info.id}`, class: classes.join(' '), 'data-seq': info.seq },
    h(
      'div',
      { class: 'msg-head' },
      h('span', { class: 'seq' }, `#${info.seq}`),
      badge(info.role, info.role),
      info.synthetic ? badge('synthetic') : null,
      info.midRun ? badge('mid-run', 'warn') : null,
      info.summary ? badge(summaryOf ? `summary of C${summaryOf.n}` : 'summary', 'cmp') : null,
      info.finish ? badge(`finish: ${info.finish}`, info.finish === 'error' ? 'bad' : '') : null,
      info.error ? badge(info.error.name || 'error', 'bad') : null,
      info.reverted ? badge('reverted', 'bad') : null,
      replaced ? badge(`summarised by C${replaced.n}`, 'cmp') : null,
      h(
        'span',
        { class: 'meta' },
        [
          info.role === 'assistant' ? `${info.model} · ${info.agent}` : info.agent,
          info.step !== undefined ? `step ${info.step}` : null,
          usage,
          time(new Date(info.time.created).toISOString()),
        ]
          .filter(Boolean)
          .join(' · '),
      ),
    ),
    info.error ? h('pre', { class: 'error' }, `${info.error.name}: ${info.error.message ?? ''}`) : null,
    summaryOf
      ? h('details', {}, h('summary', {}, 'summary text (also shown at its compaction point)'), partsOf(m))
      : partsOf(m),
    steps.length > 0
      ? h(
          'div',
          { class: 'jobs' },
          'jobs: ',
          steps.map((st) =>
            h(
              'span',
              { class: 'job mono' },
              `${st.kind} ${st.step} · ${st.jobId} · attempt ${st.attempt} · fence ${st.fence} · ${st.outcome ?? 'running'} · ${ms(st.durationMs)}`,
            ),
          ),
        )
      : null,
  );
}

function partsOf(m) {
  return h(
    'div',
    {},
    m.parts.map((p) => {
      switch (p.type) {
        case 'text':
          return h(
            'div',
            { class: 'part' },
            p.synthetic || p.ignored
              ? h(
                  'div',
                  { class: 'small' },
                  [p.synthetic ? 'synthetic' : null, p.ignored ? 'ignored' : null].filter(Boolean).join(', '),
                )
              : null,
            clipped(p.text),
          );
        case 'reasoning':
          return h(
            'details',
            { class: 'part' },
            h('summary', {}, `reasoning (${fmt(p.tokens)} tokens)`),
            clipped(p.text),
          );
        case 'tool':
          return toolPart(p);
        case 'step-start':
          return null;
        case 'step-finish':
          return h(
            'div',
            { class: 'small part' },
            `step finished: ${p.reason} · ${fmt(p.usage.input + p.usage.cache.read + p.usage.cache.write + p.usage.output)} tokens`,
          );
        case 'file':
          return h('div', { class: 'part small' }, `file ${p.filename ?? ''} (${p.mime})`);
        case 'retry':
          return h(
            'div',
            { class: 'part small' },
            `retry ${p.attempt}: ${p.error?.name ?? ''} ${p.error?.message ?? ''}`,
          );
        case 'subtask':
          return h('div', { class: 'part small' }, `subtask for ${p.agent}: ${p.description}`);
        default:
          return h('div', { class: 'part small' }, `${p.type} part`);
      }
    }),
  );
}

function toolPart(p) {
  const st = p.state || {};
  const pruned = st.time?.compacted !== undefined;
  const output =
    st.status === 'completed' ? st.output : st.status === 'error' ? (st.output ?? st.error) : null;
  return h(
    'div',
    { class: 'tool part' },
    h(
      'div',
      {},
      h('span', { class: 'name' }, `tool ${p.tool}`),
      ' ',
      badge(st.status, st.status === 'completed' ? 'ok' : st.status === 'error' ? 'bad' : 'warn'),
      st.interrupted ? badge('interrupted', 'bad') : null,
      pruned ? badge('pruned', 'cmp') : null,
      st.truncated ? badge(`truncated (${fmt(st.truncated.totalLines)} lines)`, 'warn') : null,
      h(
        'span',
        { class: 'small' },
        ` ${p.callId} · ${fmt(p.tokens)} tokens${p.outputTokens !== undefined ? ` (output ${fmt(p.outputTokens)})` : ''}`,
      ),
    ),
    h('details', {}, h('summary', {}, 'input'), h('pre', {}, json(st.input))),
    output !== null ? clipped(output) : null,
  );
}

// ---------- jobs table ----------

function outcomeClass(outcome) {
  if (outcome === null) return 'warn';
  return ['terminal', 'failed', 'stale', 'error', 'overflow'].includes(outcome) ? 'bad' : 'ok';
}

const clock = (iso) => (iso ? new Date(iso).toISOString().slice(11, 23) : '–');

function renderSteps(data) {
  const head = [
    'Step',
    'Kind',
    'Job id',
    'Attempt',
    'Fence',
    'Started',
    'Duration',
    'Outcome',
    'Context',
    'In',
    'Cache r/w',
    'Out',
    'Message',
  ];
  const num = new Set([0, 3, 4, 8, 9, 11]);
  const attempts = new Map();
  for (const st of data.steps) attempts.set(st.jobId, (attempts.get(st.jobId) ?? 0) + 1);
  const rows = [];
  for (const st of data.steps) {
    rows.push(
      h(
        'tr',
        { class: st.error ? 'has-error' : null },
        h('td', { class: 'num' }, String(st.step)),
        h('td', {}, st.kind, attempts.get(st.jobId) > 1 ? [' ', badge('retried', 'warn')] : null),
        h('td', { class: 'mono jobid' }, st.jobId),
        h('td', { class: 'num' }, String(st.attempt)),
        h('td', { class: 'num' }, String(st.fence)),
        h('td', { title: st.startedAt }, clock(st.startedAt)),
        h('td', {}, ms(st.durationMs)),
        h('td', {}, badge(st.outcome ?? 'running', outcomeClass(st.outcome))),
        h('td', { class: 'num' }, fmt(st.tokens)),
        h('td', { class: 'num' }, st.usage ? fmt(st.usage.input) : '–'),
        h('td', {}, st.usage ? `${fmt(st.usage.cache.read)} / ${fmt(st.usage.cache.write)}` : '–'),
        h('td', { class: 'num' }, st.usage ? fmt(st.usage.output) : '–'),
        h('td', {}, st.messageId && st.messageSeq !== null ? msgLink(st.messageId, st.messageSeq) : '–'),
      ),
    );
    if (st.error) {
      rows.push(
        h(
          'tr',
          { class: 'error-row' },
          h('td', {}),
          h('td', { colspan: head.length - 1, class: 'wrap' }, `${st.error.name}: ${st.error.message ?? ''}`),
        ),
      );
    }
  }
  fill(
    document.getElementById('steps'),
    h(
      'thead',
      {},
      h(
        'tr',
        {},
        head.map((c, i) => h('th', { class: num.has(i) ? 'num' : null }, c)),
      ),
    ),
    h(
      'tbody',
      {},
      rows.length === 0
        ? h('tr', {}, h('td', { colspan: head.length, class: 'empty' }, 'No jobs recorded.'))
        : rows,
    ),
  );
}

// ---------- compaction points (overview table) ----------

function renderCompactions(data) {
  const head = [
    'Run',
    'Point',
    'Reason',
    'Status',
    'Rung',
    'Tokens before → after',
    'Replaced',
    'Tail from',
    'Summary',
    'Job',
    'Duration',
  ];
  const rows = data.compactions.map((c) => {
    const r = c.replaced;
    return h(
      'tr',
      { class: c.reverted ? 'reverted' : null },
      h('td', {}, h('strong', {}, `C${c.n}`), c.reverted ? [' ', badge('reverted', 'bad')] : null),
      h('td', {}, c.markerSeq !== null ? msgLink(c.messageId, c.markerSeq) : '–'),
      h('td', {}, c.reason, c.overflow ? ' (overflow)' : '', c.background ? ' (background)' : ''),
      h('td', {}, badge(c.status, c.status === 'completed' ? 'ok' : c.status === 'failed' ? 'bad' : 'warn')),
      h('td', {}, c.rung ?? '–'),
      h('td', { class: 'num' }, `${fmt(c.tokensBefore)} → ${fmt(c.tokensAfter)}`),
      h('td', {}, r ? `${fmt(r.count)} messages${r.count > 0 ? ` (seq ${r.fromSeq}–${r.toSeq})` : ''}` : '–'),
      h('td', {}, r && r.tailStartSeq !== null ? msgLink(r.tailStartId, r.tailStartSeq) : 'no tail'),
      h(
        'td',
        { class: 'wrap' },
        c.summarySeq !== null ? [msgLink(c.summaryMessageId, c.summarySeq), ' '] : null,
        h('span', { class: 'preview' }, c.summaryText ? c.summaryText.slice(0, 240) : '–'),
      ),
      h('td', { class: 'mono jobid' }, c.jobId ? `${c.jobId} (attempt ${c.attempt ?? '–'})` : '–'),
      h('td', {}, ms(c.durationMs)),
    );
  });
  fill(
    document.getElementById('compactions'),
    h(
      'thead',
      {},
      h(
        'tr',
        {},
        head.map((c) => h('th', {}, c)),
      ),
    ),
    h(
      'tbody',
      {},
      rows.length === 0
        ? h('tr', {}, h('td', { colspan: head.length, class: 'empty' }, 'No compactions yet.'))
        : rows,
    ),
  );
}

// ---------- wiring ----------

function start() {
  const params = new URLSearchParams(location.search);
  const current = params.get('session') || '';
  const form = document.getElementById('filter');
  for (const name of ['tenant', 'status', 'limit']) {
    const value = params.get(name);
    if (value) form.elements[name].value = value;
  }
  form.elements.session.value = current;
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    listSessions(current);
  });
  document.getElementById('open').addEventListener('click', () => {
    const id = form.elements.session.value.trim();
    if (id) location.search = `?session=${encodeURIComponent(id)}`;
  });
  listSessions(current);
  if (current) inspect(current);
  else notice('Pick a session.');
}

start();
