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
// Characters as Python counts them (code points), not UTF-16 units: an emoji counted
// twice, so a task id of 100 emoji, whole in the HTML, was folded by the script at 60 of
// them and said "200 characters".
const PAIRS = /[\ud800-\udbff][\udc00-\udfff]/g;
const chars = t => t.length < 2 ? t.length : t.length - (t.match(PAIRS) || []).length;
// The first n characters (2n units hold at least n of them; never half of a pair).
const cutAt = (t, n) => chars(t) <= n ? t : Array.from(t.slice(0, 2 * n)).slice(0, n).join('');
function long(v, limit){
  const t = v === null || v === undefined ? '' : String(v);
  const lines = (t.match(/\n/g) || []).length + 1;
  if ((t.length <= limit || chars(t) <= limit) && lines <= LINES) return esc(t);
  return '<details class="long"><summary><span class="preview">'
    + esc(cutAt(t.split('\n', LINES).join('\n'), limit)) + '…</span> '
    + '<span class="meta">(<span class="show">show all, </span>' + chars(t) + ' characters, '
    + lines + ' line' + (lines > 1 ? 's' : '') + ')</span></summary><div class="full">'
    + esc(t) + '</div></details>'; }
// A name (check, task id) on one line: a newline, return or tab rendered as a space, so
// "posted\nonce" read as "posted once"; shown as the terminal does (name_text in _page.py).
const oneLine = v => String(v === null || v === undefined ? '' : v).replace(/[\n\r\t]/g,
  c => ({'\n': '\\n', '\r': '\\r', '\t': '\\t'}[c]));
const longName = v => long(oneLine(v), NAME);
// An attribute keeps the raw value (data-key: a task id as the data has it).
const attr = s => String(s).replace(/[&<>"']/g,
  c => ({'&':'&amp;','<':'&lt;','>':'&gt;','"':'&quot;',"'":'&#39;'}[c]));
// The searches ignore case, accents and compatibility forms: "istanbul" finds "İstanbul",
// "strasse" "Straße", "cafe" "café" and "ﬁle" "file" (NFKD, combining marks dropped, then
// upper- and lower-cased, which turns ß into ss as Python's casefold does).
const MARKS = /\p{M}/gu;
const fold = s => String(s).normalize('NFKD').replace(MARKS, '').toUpperCase().toLowerCase()
  .normalize('NFKD').replace(MARKS, '');
function table(cls, headers, rows){
  // In a box that scrolls sideways, as the page's own tables (_page.table): there its
  // first column's names break only where nothing else can give way; outside one, a
  // 1280-pixel page folded "expected_ch/anges" beside a long evidence column.
  return '<div class="scroll"><table class="'+cls+'"><thead><tr>'
    + headers.map(h => '<th scope="col">'+esc(h)+'</th>').join('')
    + '</tr></thead><tbody>' + rows.join('') + '</tbody></table></div>'; }
const {diff, audit} = onrecordRows({esc, long, table, VALUE});  // rows.js
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
function checks(ep){
  const bad = ep.results.filter(r => r.status !== 'pass');
  const rows = bad.map(r => '<tr class="failing-check"><td>'+longName(r.name)+'</td><td class="tag '+esc(r.status)
    + '">'+esc(r.status)+'</td><td class="msg">'+long(r.reason, TEXT)+'</td><td class="mono">'
    + long(r.evidence, TEXT)+'</td></tr>');
  const issues = ep.coverage_issues.map(i => '<li>' + long(i, TEXT) + '</li>').join('');
  return '<h3>Checks not passed (' + bad.length + ' of ' + ep.results.length + ')</h3>'
    + (rows.length ? table('checks', ['check', 'status', 'message', 'evidence'], rows) : '<p>every check passed</p>')
    + (issues ? '<h3>Coverage issues</h3><ul>' + issues + '</ul>' : ''); }
function heading(caseId, repeat, outcome){
  // A long task id: its first part in the heading, all of it (on request) below.
  const id = oneLine(caseId), cut = chars(id) > NAME;
  // In <bdi>: a right-to-left id ran on into " #0", drawn left of the name (Episode #0
  // שלום) as if it were part of it.
  return '<h2>Episode <bdi>' + esc(cut ? cutAt(id, NAME) + '…' : id) + '</bdi> #' + esc(repeat)
    + ' <span class="' + esc(outcome) + '">' + esc(outcome) + '</span></h2>'
    + (cut ? '<div class="meta task-id">' + long(id, NAME) + '</div>' : ''); }
function measures(values){
  // One "name value" per measure (row_writes 4 · rows_put_back 0), not the raw JSON
  // object ({"rejected_calls":0,"row_writes":4,…}) the line showed before.
  // Each pair in one piece (nowrap): the line breaks between measures, not inside one.
  const items = Object.entries(values || {}).map(([k, v]) => '<span class="measure" data-measure="'
    + attr(k) + '">' + esc(oneLine(k)) + ' ' + esc(v) + '</span>');
  return items.length ? ' · measures: ' + items.join(' · ') : ''; }
function select(key){
  if (!view) return false;
  document.querySelectorAll('.episodes tr.selected').forEach(r => r.classList.remove('selected'));
  const row = [...document.querySelectorAll('.episodes tr[data-key]')].find(r => r.dataset.key === key);
  if (row) row.classList.add('selected');
  view.dataset.episode = key;
  return true; }
function show(index){
  const ep = data.episodes[index];
  if (!ep || !select(ep.case_id + '#' + ep.repeat)) return;
  view.innerHTML = heading(ep.case_id, ep.repeat, ep.outcome) + '<p class="meta">seed ' + esc(ep.seed)
    + ' · fingerprint <code>' + esc(ep.fingerprint.slice(0, 16)) + '</code> · evidence <code>'
    + esc(String(ep.digest).slice(0, 16)) + '</code>' + measures(ep.measures) + '</p>' + checks(ep) + timeline(ep) + diff(ep) + audit(ep); }
// Every episode is listed from a compact index (failing and incomplete first), a page
// of rows at a time: 10,000 pre-rendered rows and detail views made a 63 MB page.
const index = data.episode_index || {cases: [], endings: [], checks: [], rows: []};
const list = document.querySelector('#episode-list tbody');
const PAGE = Number((document.getElementById('episode-list') || {dataset: {}}).dataset.page) || 300;
const keyOf = r => index.cases[r[0]] + '#' + r[1];
const notPassed = r => r[5].map(c => index.checks[c]).join(', ');
function summary(position){
  // Listed without details (beyond the page's budget, or a passing episode of a large
  // run): what the index knows, and the command that prints the rest.
  const r = index.rows[position];
  if (!r || !select(keyOf(r))) return;
  const run = data.run ? data.run.path : 'RUN';
  const grading = data.run && data.run.grading !== 'original' ? data.run.grading : null;
  view.innerHTML = heading(index.cases[r[0]], r[1], r[3]) + '<p class="meta">seed ' + esc(r[2])
    + ' · ended ' + esc(index.endings[r[4]]) + '</p>'
    + (r[5].length ? '<h3>Checks not passed (' + r[5].length + ')</h3><ul class="not-passed">'
      + r[5].map(c => '<li>' + longName(index.checks[c]) + '</li>').join('') + '</ul>'
      : '<p>every check passed</p>')
    + '<p class="not-detailed">This page lists this episode without its details (messages, '
    + 'evidence, timeline, row diff): <code>onrecord show ' + esc(shellWord(run)) + ' --episode '
    + esc(shellWord(keyOf(r))) + '</code> prints them'
    + (grading === null ? '' : ' (as the run graded them, not the regrade '
      + esc(grading) + ' this page shows)')
    + ', <code>onrecord report ' + esc(shellWord(run)) + ' --episodes all'
    + (grading === null ? '' : ' --grading ' + esc(shellWord(grading)))
    + '</code> details every episode.</p>'; }
// The command is copied into a shell: a task id with a space, a quote or a leading #
// (a comment) is one quoted word, as Python's shlex.quote writes it ('#' within a word
// is literal, so the usual case#repeat stays as typed).
const shellWord = s => /^[\w@%+=:,./-][\w@%+=:,./#-]*$/.test(s) ? s
  : "'" + String(s).replace(/'/g, "'\"'\"'") + "'";
function row(position){  // the markup of _listing._row
  const r = index.rows[position], key = keyOf(r);
  return '<tr data-row="' + position + '"' + (r[6] >= 0 ? ' data-index="' + r[6] + '"' : '')
    + ' data-key="' + attr(key) + '" tabindex="0" aria-controls="episode-view">'
    + '<td class="">' + longName(index.cases[r[0]]) + '</td><td class="num">' + esc(r[1])
    + '</td><td class="num">' + esc(r[2]) + '</td><td class="tag ' + esc(r[3]) + '">' + esc(r[3])
    + '</td><td class="tag">' + esc(index.endings[r[4]]) + '</td><td class="">'
    + long(notPassed(r), TEXT) + '</td></tr>'; }
const controls = document.getElementById('episode-controls');
const find = document.getElementById('episode-filter');
const byOutcome = document.getElementById('episode-outcome');
const byCheck = document.getElementById('episode-check');
const count = document.getElementById('episode-count');
let matching = index.rows.map((_, i) => i), page = 0;
let folded = null;  // the task ids, folded on the first search only (10,000: ~30 ms)
function render(){
  if (!list) return;
  const pages = Math.max(1, Math.ceil(matching.length / PAGE));
  page = Math.min(Math.max(page, 0), pages - 1);
  const first = page * PAGE, shown = matching.slice(first, first + PAGE);
  list.innerHTML = shown.map(row).join('');
  const selected = view && view.dataset.episode;
  if (selected) select(selected);
  if (count) count.textContent = matching.length ? 'episodes ' + (first + 1) + '–'
    + (first + shown.length) + ' of ' + matching.length
    + (matching.length < index.rows.length ? ' found (' + index.rows.length + ' in all)' : '')
    : 'no episode found (' + index.rows.length + ' in all)';
  paging(document.getElementById('episode-prev'), document.getElementById('episode-next'),
    page === 0, page >= pages - 1, find); }
// A focused button that becomes disabled loses the focus to the page (Chromium blurs
// it): a keyboard user who paged to the last page with Enter was sent back to the top of
// the document. The focus moves to the other paging button (or the search box) instead.
function paging(prev, next, first, last, box){
  const had = document.activeElement;
  prev.disabled = first; next.disabled = last;
  if ((had === prev && first) || (had === next && last)) {
    const to = !last ? next : !first ? prev : box;
    if (to) to.focus(); } }
function refilter(){
  const q = fold(find.value.trim()), outcome = byOutcome.value;
  const check = byCheck.value === '' ? -1 : Number(byCheck.value);
  if (q && !folded) folded = index.cases.map(fold);
  matching = [];
  index.rows.forEach((r, i) => {
    if (outcome && r[3] !== outcome) return;
    if (check >= 0 && !r[5].includes(check)) return;
    if (q && !(folded[r[0]] + '#' + r[1]).includes(q)) return;
    matching.push(i); });
  page = 0;
  render(); }
function openAt(position){  // a row of the index: its details, or what the index knows
  const r = index.rows[position];
  if (r[6] >= 0) show(r[6]); else summary(position); }
function openRow(row){
  openAt(Number(row.dataset.row));
  // The address names the episode open (a link to paste in a review); a new history
  // entry each time, so Back returns to the one open before.
  const link = linkOf(row.dataset.key);
  if (location.hash !== link) location.hash = link;
  // The detail view is below the episode table: bring it into sight.
  if (view && view.scrollIntoView) view.scrollIntoView({block: 'start'}); }
// Deep links: #episode= then task#repeat as encodeURIComponent writes it, which any task
// id survives ('#' is %23, a space %20, é %C3%A9): report.html#episode=duplicate-01%23137.
const LINK = 'episode=';
const linkOf = key => '#' + LINK + encodeURIComponent(key);
let positions = null;  // task#repeat -> its row of the index, built for the first link
function notice(text){
  let p = document.getElementById('link-notice');
  if (!p && text) {
    p = document.createElement('p'); p.id = 'link-notice'; p.className = 'notice';
    p.setAttribute('role', 'status');
    const header = document.querySelector('header');
    if (header) header.after(p); else document.body.prepend(p); }
  if (p) { p.textContent = text || ''; p.hidden = !text; } }
function follow(){
  // True when the address named an episode of this page and it is now open. An id
  // (#checks-section) is left to the browser; anything else gets a notice, not an error.
  const hash = location.hash.slice(1);
  if (!hash.includes('=')) { notice(''); return false; }
  const part = hash.split('&').find(p => p.startsWith(LINK));
  if (part === undefined) {
    notice('This link (#' + hash + ') names nothing this report knows; '
      + 'an episode is linked as #episode=task%23repeat.');
    return false; }
  let key;
  try { key = decodeURIComponent(part.slice(LINK.length)); }
  catch (e) { key = part.slice(LINK.length); }  // a stray '%': no such key either
  if (!positions) positions = new Map(index.rows.map((r, i) => [keyOf(r), i]));
  const position = positions.get(key);
  if (position === undefined) {
    notice('This link names episode ' + key + ', which this report does not list.');
    return false; }
  notice('');
  if (view && view.dataset.episode === key) return true;  // the click that set the link
  reveal(position);
  if (view && view.scrollIntoView) view.scrollIntoView({block: 'start'});
  return true; }
function reveal(position){  // a row of the index opened, on its page of the list
  if (find && !matching.includes(position)) {
    // Filtered out: clear the search and filters rather than open a row out of sight.
    find.value = ''; byOutcome.value = ''; byCheck.value = ''; refilter(); }
  page = Math.floor(Math.max(matching.indexOf(position), 0) / PAGE);
  render();
  openAt(position); }
if (list) {
  // One listener for every row, whichever page is shown.
  list.addEventListener('click', event => {
    // "show all" of a long name or list in a row unfolds it, and only that: it also
    // opened the episode and scrolled to its view, away from the text just unfolded.
    if (event.target.closest('summary')) return;
    const row = event.target.closest('tr[data-row]');
    if (row) openRow(row); });
  list.addEventListener('keydown', event => {
    const row = event.target;  // a long name's "show all" in the row opens itself
    if (!row.matches || !row.matches('tr[data-row]')) return;
    if (event.key === 'Enter' || event.key === ' ') { event.preventDefault(); openRow(row); } }); }
if (controls && list) {
  controls.hidden = false;  // the page hides them from readers without JavaScript
  const more = document.getElementById('episode-more');
  if (more) more.hidden = true;
  const hint = document.getElementById('episode-hint');
  if (hint) hint.hidden = false;
  find.addEventListener('input', refilter);
  byOutcome.addEventListener('change', refilter);
  byCheck.addEventListener('change', refilter);
  document.getElementById('episode-prev').addEventListener('click', () => { page--; render(); });
  document.getElementById('episode-next').addEventListener('click', () => { page++; render(); });
  render();
  // A check that did not pass in some episodes lists them from its row of the checks
  // table: the way from "expected_changes failed in 912" to those 912.
  const notPassedIn = new Map();  // check position → episodes it did not pass, one pass
  index.rows.forEach(r => r[5].forEach(c => notPassedIn.set(c, (notPassedIn.get(c) || 0) + 1)));
  document.querySelectorAll('#checks tr[data-check]').forEach(tr => {
    const position = index.checks.indexOf(tr.dataset.check);
    const cell = tr.querySelector('td[data-field="failed"]');
    if (position < 0 || !cell) return;
    // Say what it lists: beside a failed count of 0 a bare "list" read as "list the
    // failures", yet it lists the episodes where the check was not measured.
    const failed = Number(cell.dataset.value);
    const unmeasuredCell = tr.querySelector('td[data-field="unmeasured"]');
    const unmeasured = Number((unmeasuredCell || {dataset: {}}).dataset.value) || 0;
    const listed = notPassedIn.get(position) || 0;
    const what = failed && unmeasured ? 'failed or not measured' : failed ? 'failed' : 'not measured';
    const button = document.createElement('button');
    button.type = 'button'; button.className = 'list-episodes';
    button.textContent = 'list the ' + listed + ' ' + what;
    button.title = 'list the episodes in which this check ' + (failed && unmeasured
      ? 'failed or was not measured' : failed ? 'failed' : 'was not measured');
    button.addEventListener('click', () => {
      find.value = ''; byOutcome.value = ''; byCheck.value = String(position); refilter();
      document.getElementById('episodes-section').scrollIntoView({block: 'start'});
      // The focus follows to the filter it set: left on the button, out of sight, the
      // next Tab went on through the checks table and scrolled the list away again.
      byCheck.focus({preventScroll: true}); });
    // Beside the count it lists: in the failed column, "0 list the 4 not measured".
    (failed || !unmeasuredCell ? cell : unmeasuredCell).append(' ', button); }); }
tasksTable();
// The checks a task did not pass, as _tasks.not_passed writes them.
function taskNotPassed(t, name = c => c){ const m = t.missing || 0;
  const lacking = m ? [m + ' planned episode' + (m === 1 ? '' : 's') + ' without a trial'] : [];
  return t.failing_checks.map(name).concat((t.unmeasured_checks || []).map(c => name(c) + ' (not measured)'), lacking).join(', '); }
function taskText(t){ return fold(t.case_id + ' ' + taskNotPassed(t)); }
function tasksTable(){
  // A run of up to 300 tasks has its whole table in the HTML (failing tasks first),
  // filtered in place; a larger one is paged like the episodes, failing tasks first (as
  // the first page in the HTML), from the page's data: 5,000 pre-rendered rows were
  // 40,000 elements.
  const filter = document.getElementById('task-filter');
  const table = document.getElementById('tasks');
  const body = table && table.querySelector('tbody');
  if (!filter || !body) return;
  const controls = document.getElementById('task-controls');
  if (!controls || !data.task_list) {
    filter.hidden = false;  // the page hides it from readers without JavaScript
    // The task id and its failing checks, as the paged table matches: the row's text ran
    // its cells together ("case-2" with 2 episodes read "case-22…", found by "case-22")
    // and held the fold's "show all, N characters".
    const byId = new Map(data.tasks.map(t => [t.case_id, t]));
    let texts = null;  // each row's text, folded once
    filter.addEventListener('input', () => {
      const rows = [...body.rows], q = fold(filter.value.trim());
      if (!texts) texts = rows.map(r => { const t = byId.get(r.dataset.task);
        return t ? taskText(t) : fold(r.dataset.task); });
      rows.forEach((r, i) => { r.style.display = texts[i].includes(q) ? '' : 'none'; }); });
    return; }
  const SIZE = Number(table.dataset.page) || 100;
  const {order, rates} = data.task_list, tasks = data.tasks;
  // data-value as Python's repr writes the rate (1.0, not 1); NAME and TEXT as _tasks._row.
  const value = v => v === null || v === undefined ? '' : Number.isInteger(v) ? v.toFixed(1) : String(v);
  const row = at => { const t = tasks[at];
    return '<tr data-task="' + attr(t.case_id) + '"><td class="">' + longName(t.case_id)
      + '</td><td class="num">' + esc(t.episodes) + '</td><td class="num pass">' + esc(t.pass)
      + '</td><td class="num fail">' + esc(t.fail) + '</td><td class="num incomplete">'
      + esc(t.incomplete) + '</td><td class="num" data-value="' + attr(value(t.pass_rate)) + '">'
      + esc(rates[at]) + '</td><td class="">' + long(taskNotPassed(t, oneLine), TEXT)
      + '</td></tr>'; };
  const count = document.getElementById('task-count');
  const prev = document.getElementById('task-prev'), next = document.getElementById('task-next');
  let shown = order, at = 0, texts = null;  // the id and failing checks, folded once
  const draw = () => {
    const pages = Math.max(1, Math.ceil(shown.length / SIZE));
    at = Math.min(Math.max(at, 0), pages - 1);
    const first = at * SIZE, rows = shown.slice(first, first + SIZE);
    body.innerHTML = rows.map(row).join('');
    count.textContent = shown.length ? 'tasks ' + (first + 1) + '–' + (first + rows.length)
      + ' of ' + shown.length + (shown.length < order.length ? ' found (' + order.length
      + ' in all)' : '') : 'no task found (' + order.length + ' in all)';
    paging(prev, next, at === 0, at >= pages - 1, filter); };
  filter.addEventListener('input', () => {
    const q = fold(filter.value.trim());
    if (q && !texts) texts = tasks.map(taskText);
    shown = q ? order.filter(i => texts[i].includes(q)) : order;
    at = 0; draw(); });
  prev.addEventListener('click', () => { at--; draw(); });
  next.addEventListener('click', () => { at++; draw(); });
  controls.hidden = false;
  document.getElementById('task-more').hidden = true;
  draw(); }
// Printed, long text is shown in full and the measures past the first 20 too: paper has
// no "show all" (a closed #measure-more printed as one "15 more measures" line).
addEventListener('beforeprint', () =>
  document.querySelectorAll('details').forEach(d => { d.open = true; }));
function openFirst(){  // the first failing episode, as the page opens
  const firstBad = data.episodes.findIndex(e => e.outcome !== 'pass');
  if (data.episodes.length) show(firstBad >= 0 ? firstBad : 0);
  else if (index.rows.length) summary(0); }
// Back to the entry before any episode was opened: the episode the page opened with, on
// its page of the list (before, the list stayed on the page or search of the episode
// left, without the row of the one now open).
addEventListener('hashchange', () => {
  if (follow() || location.hash) return;
  openFirst();
  const position = index.rows.findIndex(r => keyOf(r) === (view && view.dataset.episode));
  if (position >= 0) reveal(position); });
if (!follow()) openFirst();
document.body.dataset.rendered = 'yes';
})();
