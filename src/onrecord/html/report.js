// Renders episode details of an onrecord HTML report from its embedded data.
(function(){
const data = JSON.parse(document.getElementById('onrecord-data').textContent);
const view = document.getElementById('episode-view');
// Bidirectional controls are shown as escapes: one in a name would reverse what follows;
// other control characters too (not tab or newline), which would show as nothing.
const esc = s => String(s === null || s === undefined ? '' : s).replace(
  /[&<>"'\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/g,
  c => ({'&':'&amp;','<':'&lt;','>':'&gt;','"':'&quot;',"'":'&#39;'}[c]
    || '\\u' + c.charCodeAt(0).toString(16).padStart(4, '0')));
// Long text (a check's message, an error, a name, a value) shows its first part and all
// of it on request: a message of thousands of characters or lines no longer fills the
// page, and none of it is cut off. The same markup as long_text in _page.py.
const TEXT = 300, NAME = 120, VALUE = 160, LINES = 6;
const cutAt = (t, n) => { const h = t.slice(0, n);  // not half of a surrogate pair
  return /[\ud800-\udbff]$/.test(h) ? h.slice(0, -1) : h; };
function long(v, limit){
  const t = v === null || v === undefined ? '' : String(v);
  const lines = (t.match(/\n/g) || []).length + 1;
  if (t.length <= limit && lines <= LINES) return esc(t);
  return '<details class="long"><summary><span class="preview">'
    + esc(cutAt(t.split('\n', LINES).join('\n'), limit)) + '…</span> '
    + '<span class="meta">(<span class="show">show all, </span>' + t.length + ' characters, '
    + lines + ' line' + (lines > 1 ? 's' : '') + ')</span></summary><div class="full">'
    + esc(t) + '</div></details>'; }
const json = v => typeof v === 'string' ? v : JSON.stringify(v);  // a row or a value
function table(cls, headers, rows){
  return '<table class="'+cls+'"><thead><tr>' + headers.map(h => '<th scope="col">'+esc(h)+'</th>').join('')
    + '</tr></thead><tbody>' + rows.join('') + '</tbody></table>'; }
function timeline(ep){
  // A long episode keeps its first and last steps and every step that did not succeed;
  // a marker row stands for each run of steps left out. A tool world played as a
  // Gymnasium env: its steps' status is the capture's (ok when the env answered), so a
  // call column says what became of each call (rejected, error, ...).
  const calls = ep.timeline.some(e => e.call !== undefined);
  const gaps = new Map((ep.timeline_gaps || []).map(([at, n]) => [at, n]));
  const gap = at => gaps.has(at) ? '<tr class="gap"><td colspan="' + (calls ? 6 : 5)
    + '" class="meta">… ' + gaps.get(at) + ' steps not shown …</td></tr>' : '';
  const call = e => !calls ? '' : '<td class="tag call '+esc(e.call)+'">' + esc(e.call) + '</td>';
  const rows = ep.timeline.map((e, at) => gap(at) + '<tr class="event '+esc(e.status)
    + (e.call ? ' call-' + esc(e.call) : '') + '"><td class="num">'
    + esc(e.step) + '</td><td class="mono">' + long(e.arguments ? e.label + ' ' + e.arguments : e.label, TEXT)
    + '</td><td class="tag '+esc(e.status)+'">' + esc(e.status) + '</td>' + call(e) + '<td class="mono">'
    + long(e.error || e.detail, TEXT) + '</td><td class="mono">' + long(e.state, TEXT) + '</td></tr>');
  rows.push(gap(ep.timeline.length));
  const more = ep.timeline_total > ep.timeline.length ?
    '<p class="meta">' + ep.timeline.length + ' of ' + ep.timeline_total + ' steps shown: the first, '
    + 'the last and those that did not succeed</p>' : '';
  const headers = ['step', 'action', 'status', ...(calls ? ['call'] : []), 'result / error', 'state'];
  return '<h3>Timeline (' + ep.timeline_total + ' steps, ended: ' + esc(ep.ended) + ')</h3>'
    + table('timeline', headers, rows) + more + (calls ? callSummary(ep) : ''); }
function callSummary(ep){
  // Over every step, shown or not: tool calls: 46 ok, 1 error, 3 rejected.
  const counts = ep.call_counts || {};
  const order = Object.keys(counts).sort((a, b) =>
    ((a !== 'ok' && a !== 'finished') - (b !== 'ok' && b !== 'finished')) || (a < b ? -1 : a > b ? 1 : 0));
  return '<p class="meta call-summary">tool calls: ' + order.map(s => counts[s] + ' <span class="'
    + esc(s) + '">' + esc(s) + '</span>').join(', ') + '</p>'; }
function diff(ep){
  if (!ep.diff) return '';
  const rows = [];
  for (const [name, change] of Object.entries(ep.diff)) {
    for (const row of change.created) rows.push('<tr class="created diff-row"><td>'+esc(name)
      + '</td><td>created</td><td class="mono" colspan="2">'+long(json(row), VALUE)+'</td></tr>');
    for (const item of change.changed) {
      const cols = Object.keys(item.after).filter(k => JSON.stringify(item.before[k]) !== JSON.stringify(item.after[k]));
      rows.push('<tr class="changed diff-row"><td>'+esc(name)+'</td><td>changed '+long(json(item.key), VALUE)
        + '</td><td class="mono">' + cols.map(k => esc(k)+': <del>'+long(json(item.before[k]), VALUE)
        + '</del> → <ins>' + long(json(item.after[k]), VALUE) + '</ins>').join('<br>') + '</td><td></td></tr>'); }
    for (const row of change.deleted) rows.push('<tr class="deleted diff-row"><td>'+esc(name)
      + '</td><td>deleted</td><td class="mono" colspan="2">'+long(json(row), VALUE)+'</td></tr>');
  }
  return '<h3>Row diff (' + rows.length + ' rows)</h3>' + (rows.length ?
    table('diff', ['table', 'change', 'before → after', ''], rows) : '<p>no row changed</p>'); }
function audit(ep){
  if (!ep.audit) return '';
  const rows = ep.audit.map(a => '<tr class="audit-row"><td class="num">'+esc(a.seq)+'</td><td class="num">'
    + esc(a.step)+'</td><td>'+esc(a.table)+'</td><td>'+esc(a.op)+'</td><td class="mono">'+long(a.key, VALUE)
    + '</td><td class="mono">' + Object.entries(a.changes).map(([k, v]) => esc(k)+': <del>'
    + long(json(v[0]), VALUE)+'</del> → <ins>'+long(json(v[1]), VALUE)+'</ins>').join('<br>') + '</td></tr>');
  return '<h3>Audit history (' + rows.length + ' changes)</h3>'
    + table('audit', ['seq', 'step', 'table', 'op', 'key', 'before → after'], rows); }
function checks(ep){
  const bad = ep.results.filter(r => r.status !== 'pass');
  const rows = bad.map(r => '<tr class="failing-check"><td>'+long(r.name, NAME)+'</td><td class="tag '+esc(r.status)
    + '">'+esc(r.status)+'</td><td class="msg">'+long(r.reason, TEXT)+'</td><td class="mono">'
    + long(r.evidence, TEXT)+'</td></tr>');
  const issues = ep.coverage_issues.map(i => '<li>' + long(i, TEXT) + '</li>').join('');
  return '<h3>Checks not passed (' + bad.length + ' of ' + ep.results.length + ')</h3>'
    + (rows.length ? table('checks', ['check', 'status', 'message', 'evidence'], rows) : '<p>every check passed</p>')
    + (issues ? '<h3>Coverage issues</h3><ul>' + issues + '</ul>' : ''); }
function show(index){
  const ep = data.episodes[index];
  if (!ep || !view) return;
  document.querySelectorAll('.episodes tr.selected').forEach(r => r.classList.remove('selected'));
  const row = document.querySelector('.episodes tr[data-index="'+index+'"]');
  if (row) row.classList.add('selected');
  view.dataset.episode = ep.case_id + '#' + ep.repeat;
  // A long task id: its first part in the heading, all of it (on request) below.
  const id = String(ep.case_id), cut = id.length > NAME;
  view.innerHTML = '<h2>Episode ' + esc(cut ? cutAt(id, NAME) + '…' : id) + ' #' + esc(ep.repeat)
    + ' <span class="' + esc(ep.outcome) + '">' + esc(ep.outcome) + '</span></h2>'
    + (cut ? '<div class="meta task-id">' + long(id, NAME) + '</div>' : '')
    + '<p class="meta">seed ' + esc(ep.seed)
    + ' · fingerprint <code>' + esc(ep.fingerprint.slice(0, 16)) + '</code> · evidence <code>'
    + esc(String(ep.digest).slice(0, 16)) + '</code> · measures ' + esc(JSON.stringify(ep.measures))
    + '</p>' + checks(ep) + timeline(ep) + diff(ep) + audit(ep); }
function openRow(row){
  show(Number(row.dataset.index));
  // The detail view is below the episode table: bring it into sight.
  if (view && view.scrollIntoView) view.scrollIntoView({block: 'start'}); }
document.querySelectorAll('.episodes tr[data-index]').forEach(row => {
  row.addEventListener('click', () => openRow(row));
  row.addEventListener('keydown', event => {
    if (event.target !== row) return;  // a long name's "show all" in the row opens itself
    if (event.key === 'Enter' || event.key === ' ') { event.preventDefault(); openRow(row); } }); });
const filter = document.getElementById('task-filter');
if (filter) filter.hidden = false;  // the page hides it from readers without JavaScript
if (filter) filter.addEventListener('input', () => {
  const q = filter.value.toLowerCase();
  document.querySelectorAll('#tasks tbody tr').forEach(r =>
    r.style.display = r.textContent.toLowerCase().includes(q) ? '' : 'none'); });
// Printed, long text is shown in full: paper has no "show all".
addEventListener('beforeprint', () =>
  document.querySelectorAll('details.long').forEach(d => { d.open = true; }));
const firstBad = data.episodes.findIndex(e => e.outcome !== 'pass');
show(firstBad >= 0 ? firstBad : 0);
document.body.dataset.rendered = 'yes';
})();
