// The row diff and the audit history of an episode's detail view (report.js calls it
// with its helpers; one script, so the page's CSP and a reader without script are as before).
const onrecordRows = ({esc, long, table, VALUE}) => {
// Values as JSON, as `onrecord show` prints them: the text "null" and a NULL, or "1"
// and 1, read apart (before, text was shown bare).
const value = v => long(JSON.stringify(v === undefined ? null : v), VALUE);
const row = r => long(JSON.stringify(r), VALUE);  // a created or deleted row, whole
const change = (k, before, after) => esc(k) + ': <del>' + value(before) + '</del> → <ins>'
  + value(after) + '</ins>';
// A key as _row_keys.py wrote it (the TEXT key '1' as "1", the INTEGER 1 as 1, as in
// the terminal); anything else (never in a page onrecord wrote) as JSON.
const key = k => long(typeof k === 'string' ? k : JSON.stringify(k), VALUE);
function diff(ep){
  if (!ep.diff) return '';
  const rows = [];
  // The values cell says what it holds: a created or deleted row is the whole row, not
  // a "before → after" (its heading before).
  const whole = (name, kind, r) => '<tr class="' + kind + ' diff-row"><td>' + esc(name)
    + '</td><td>' + kind + '</td><td class="mono">' + kind + ': ' + row(r) + '</td></tr>';
  for (const [name, diffed] of Object.entries(ep.diff)) {
    for (const r of diffed.created) rows.push(whole(name, 'created', r));
    for (const item of diffed.changed) {
      const cols = Object.keys(item.after).filter(k => JSON.stringify(item.before[k]) !== JSON.stringify(item.after[k]));
      rows.push('<tr class="changed diff-row"><td>' + esc(name) + '</td><td>changed ' + key(item.key)
        + '</td><td class="mono">' + cols.map(k => change(k, item.before[k], item.after[k])).join('<br>')
        + '</td></tr>'); }
    for (const r of diffed.deleted) rows.push(whole(name, 'deleted', r));
  }
  // Three columns: a fourth, headed by nothing, was empty in every row (a created or
  // deleted row spanned it, a changed one left it blank).
  return '<h3>Row diff (' + rows.length + ' rows)</h3>' + (rows.length ?
    table('diff', ['table', 'change', 'values'], rows) : '<p>no row changed</p>'); }
function audit(ep){
  if (!ep.audit) return '';
  // An insert is the row it created, a delete the row it removed (each column read
  // "null → value" before, as if the row had held NULLs), an update its changed columns.
  const values = a => a.row !== undefined ? esc(a.op === 'delete' ? 'deleted' : 'created') + ': '
    + row(a.row) : Object.entries(a.changes).map(([k, v]) => change(k, v[0], v[1])).join('<br>');
  const rows = ep.audit.map(a => '<tr class="audit-row"><td class="num">' + esc(a.seq)
    + '</td><td class="num">' + esc(a.step) + '</td><td>' + esc(a.table) + '</td><td>' + esc(a.op)
    + '</td><td class="mono">' + key(a.key) + '</td><td class="mono">' + values(a) + '</td></tr>');
  return '<h3>Audit history (' + rows.length + ' changes)</h3>'
    + table('audit', ['seq', 'step', 'table', 'op', 'key', 'values'], rows); }
return {diff, audit};
};
