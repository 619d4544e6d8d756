// The row diff and the audit history of an episode's detail view (report.js calls it
// with its helpers; one script, so the page's CSP and a reader without script are as before).
const onrecordRows = ({esc, long, table, VALUE}) => {
// Values as _episode.py wrote them: JSON as the evidence stores them, as `onrecord show`
// prints them (the text "null" and a NULL, "1" and 1, the REAL 1.0 and the INTEGER 1 read
// apart; 9007199254740993 whole). Printed as given: parsed here, they were JavaScript
// numbers, 1.0 read 1 and 2**53 + 1 read 2**53.
const value = v => long(v, VALUE);
const changes = cols => cols.map(([k, before, after]) => esc(k) + ': <del>' + value(before)
  + '</del> → <ins>' + value(after) + '</ins>').join('<br>');
// A key as _row_keys.py wrote it (the TEXT key '1' as "1", the INTEGER 1 as 1, as in
// the terminal).
const key = k => value(k);
function diff(ep){
  if (!ep.diff) return '';
  const rows = [];
  // The values cell says what it holds: a created or deleted row is the whole row, not
  // a "before → after" (its heading before).
  const whole = (name, kind, r) => '<tr class="' + kind + ' diff-row"><td>' + esc(name)
    + '</td><td>' + kind + '</td><td class="mono">' + kind + ': ' + value(r) + '</td></tr>';
  for (const [name, diffed] of Object.entries(ep.diff)) {
    for (const r of diffed.created) rows.push(whole(name, 'created', r));
    for (const item of diffed.changed)
      rows.push('<tr class="changed diff-row"><td>' + esc(name) + '</td><td>changed ' + key(item.key)
        + '</td><td class="mono">' + changes(item.columns) + '</td></tr>');
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
    + value(a.row) : changes(a.changes);
  const rows = ep.audit.map(a => '<tr class="audit-row"><td class="num">' + esc(a.seq)
    + '</td><td class="num">' + esc(a.step) + '</td><td>' + esc(a.table) + '</td><td>' + esc(a.op)
    + '</td><td class="mono">' + key(a.key) + '</td><td class="mono">' + values(a) + '</td></tr>');
  return '<h3>Audit history (' + rows.length + ' changes)</h3>'
    + table('audit', ['seq', 'step', 'table', 'op', 'key', 'values'], rows); }
return {diff, audit};
};
