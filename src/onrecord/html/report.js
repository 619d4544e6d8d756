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
const short = v => { const t = typeof v === 'string' ? v : JSON.stringify(v);
  return t && t.length > 160 ? t.slice(0, 159) + '…' : t; };
function table(cls, headers, rows){
  return '<table class="'+cls+'"><thead><tr>' + headers.map(h => '<th scope="col">'+esc(h)+'</th>').join('')
    + '</tr></thead><tbody>' + rows.join('') + '</tbody></table>'; }
function timeline(ep){
  // A long episode keeps its first and last steps and every step that did not succeed;
  // a marker row stands for each run of steps left out.
  const gaps = new Map((ep.timeline_gaps || []).map(([at, n]) => [at, n]));
  const gap = at => gaps.has(at) ? '<tr class="gap"><td colspan="5" class="meta">… '
    + gaps.get(at) + ' steps not shown …</td></tr>' : '';
  const rows = ep.timeline.map((e, at) => gap(at) + '<tr class="event '+esc(e.status)+'"><td class="num">'
    + esc(e.step) + '</td><td class="mono">' + esc(e.label) + (e.arguments ? ' ' + esc(e.arguments) : '')
    + '</td><td class="tag '+esc(e.status)+'">' + esc(e.status) + '</td><td class="mono">'
    + esc(e.error || e.detail) + '</td><td class="mono">' + esc(e.state) + '</td></tr>');
  rows.push(gap(ep.timeline.length));
  const more = ep.timeline_total > ep.timeline.length ?
    '<p class="meta">' + ep.timeline.length + ' of ' + ep.timeline_total + ' steps shown: the first, '
    + 'the last and those that did not succeed</p>' : '';
  return '<h3>Timeline (' + ep.timeline_total + ' steps, ended: ' + esc(ep.ended) + ')</h3>'
    + table('timeline', ['step', 'action', 'status', 'result / error', 'state'], rows) + more; }
function diff(ep){
  if (!ep.diff) return '';
  const rows = [];
  for (const [name, change] of Object.entries(ep.diff)) {
    for (const row of change.created) rows.push('<tr class="created diff-row"><td>'+esc(name)
      + '</td><td>created</td><td class="mono" colspan="2">'+esc(short(row))+'</td></tr>');
    for (const item of change.changed) {
      const cols = Object.keys(item.after).filter(k => JSON.stringify(item.before[k]) !== JSON.stringify(item.after[k]));
      rows.push('<tr class="changed diff-row"><td>'+esc(name)+'</td><td>changed '+esc(short(item.key))
        + '</td><td class="mono">' + cols.map(k => esc(k)+': <del>'+esc(short(item.before[k]))
        + '</del> → <ins>' + esc(short(item.after[k])) + '</ins>').join('<br>') + '</td><td></td></tr>'); }
    for (const row of change.deleted) rows.push('<tr class="deleted diff-row"><td>'+esc(name)
      + '</td><td>deleted</td><td class="mono" colspan="2">'+esc(short(row))+'</td></tr>');
  }
  return '<h3>Row diff (' + rows.length + ' rows)</h3>' + (rows.length ?
    table('diff', ['table', 'change', 'before → after', ''], rows) : '<p>no row changed</p>'); }
function audit(ep){
  if (!ep.audit) return '';
  const rows = ep.audit.map(a => '<tr class="audit-row"><td class="num">'+esc(a.seq)+'</td><td class="num">'
    + esc(a.step)+'</td><td>'+esc(a.table)+'</td><td>'+esc(a.op)+'</td><td class="mono">'+esc(a.key)
    + '</td><td class="mono">' + Object.entries(a.changes).map(([k, v]) => esc(k)+': <del>'
    + esc(short(v[0]))+'</del> → <ins>'+esc(short(v[1]))+'</ins>').join('<br>') + '</td></tr>');
  return '<h3>Audit history (' + rows.length + ' changes)</h3>'
    + table('audit', ['seq', 'step', 'table', 'op', 'key', 'before → after'], rows); }
function checks(ep){
  const bad = ep.results.filter(r => r.status !== 'pass');
  const rows = bad.map(r => '<tr class="failing-check"><td>'+esc(r.name)+'</td><td class="tag '+esc(r.status)
    + '">'+esc(r.status)+'</td><td>'+esc(r.reason)+'</td><td class="mono">'+esc(r.evidence)+'</td></tr>');
  const issues = ep.coverage_issues.map(i => '<li>' + esc(i) + '</li>').join('');
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
  view.innerHTML = '<h2>Episode ' + esc(ep.case_id) + ' #' + esc(ep.repeat) + ' <span class="'
    + esc(ep.outcome) + '">' + esc(ep.outcome) + '</span></h2><p class="meta">seed ' + esc(ep.seed)
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
    if (event.key === 'Enter' || event.key === ' ') { event.preventDefault(); openRow(row); } }); });
const filter = document.getElementById('task-filter');
if (filter) filter.hidden = false;  // the page hides it from readers without JavaScript
if (filter) filter.addEventListener('input', () => {
  const q = filter.value.toLowerCase();
  document.querySelectorAll('#tasks tbody tr').forEach(r =>
    r.style.display = r.textContent.toLowerCase().includes(q) ? '' : 'none'); });
const firstBad = data.episodes.findIndex(e => e.outcome !== 'pass');
show(firstBad >= 0 ? firstBad : 0);
document.body.dataset.rendered = 'yes';
})();
