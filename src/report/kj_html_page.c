/* The frame of kjoule's HTML pages: escaping, figures, CSS, the small script (table sorting and
 * a self-check the browser test reads), notes for missing parts and source lines. */
#include "kj_html_internal.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

int kj_html_jnum(const json_t *o, const char *key, double *v)
{
	json_t *x = json_object_get(o, key);
	if (!json_is_number(x))
		return 0;
	*v = json_number_value(x);
	return isfinite(*v);
}

const char *kj_html_jstr(const json_t *o, const char *key)
{
	return json_string_value(json_object_get(o, key));
}

void kj_html_num_cell(FILE *f, const json_t *o, const char *key, int prec, double na_key)
{
	double v;
	int known = kj_html_jnum(o, key, &v);
	fprintf(f, "<td data-v=\"%.6g\">", known ? v : na_key);
	if (known)
		kj_html_fig(f, v, 1, prec, NULL);
	else
		fputs("<span class=\"na\">—</span>", f);
	fputs("</td>", f);
}

void kj_html_num_cells(FILE *f, const json_t *o, const struct kj_html_col *cols, size_t n, double na_key)
{
	for (size_t i = 0; i < n; i++)
		kj_html_num_cell(f, o, cols[i].key, cols[i].prec, na_key);
}

/* digits grouped by thousands: 12,345.6 */
void kj_html_fig(FILE *f, double v, int known, int prec, const char *unit)
{
	char buf[64], out[96];
	if (!known || !isfinite(v)) {
		fputs("<span class=\"na\">not measured</span>", f);
		return;
	}
	snprintf(buf, sizeof(buf), "%.*f", prec, fabs(v));
	char *dot = strchr(buf, '.');
	size_t ip = dot ? (size_t)(dot - buf) : strlen(buf), k = 0;
	if (v < 0 && strspn(buf, "0.") != strlen(buf))
		out[k++] = '-';
	for (size_t i = 0; i < ip; i++) {
		if (i && (ip - i) % 3 == 0)
			out[k++] = ',';
		out[k++] = buf[i];
	}
	snprintf(out + k, sizeof(out) - k, "%s", buf + ip);
	fputs(out, f);
	if (unit && *unit)
		fprintf(f, "&#8239;%s", unit);
}

void kj_html_page_begin(FILE *f, const char *title)
{
	fputs("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n<title>", f);
	kj_html_esc(f, title);
	fputs("</title>\n<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
	      "<style>\n"
	      "body{font-family:system-ui,-apple-system,'Segoe UI',Roboto,sans-serif;margin:0 auto;"
	      "max-width:1200px;padding:16px 24px;color:#1d2330;background:#fff;line-height:1.4}\n"
	      "h1{font-size:1.5em;margin:.2em 0}h2{font-size:1.2em;border-bottom:2px solid #dde3ee;"
	      "padding-bottom:3px;margin-top:1.6em}h3{font-size:1em;margin:1em 0 .3em}\n"
	      "code{background:#f1f3f7;padding:1px 4px;border-radius:3px;font-size:.92em}\n"
	      ".cards{display:flex;flex-wrap:wrap;gap:10px;margin:10px 0}\n"
	      ".card{border:1px solid #dde3ee;border-radius:6px;padding:8px 12px;min-width:150px}\n"
	      ".card .v{font-size:1.3em;font-weight:600}.card .k{font-size:.8em;color:#5a6478}\n"
	      ".missing{border-left:4px solid #e0a100;background:#fff8e5;padding:6px 10px;margin:8px 0}\n"
	      ".src{font-size:.8em;color:#5a6478;margin:2px 0 12px}\n"
	      ".na{color:#a05a00;font-style:italic}\n"
	      "table{border-collapse:collapse;font-size:.85em;margin:6px 0}\n"
	      "th,td{border-bottom:1px solid #e6e9f0;padding:3px 8px;text-align:right}\n"
	      "th{background:#f1f3f7;position:sticky;top:0}\n"
	      "td.l,th.l{text-align:left}td.name{min-width:300px;max-width:460px;overflow-wrap:anywhere;text-align:left;font-family:ui-monospace,monospace;font-size:.9em}\n"
	      "table.sortable th{cursor:pointer}table.sortable th:hover{background:#e2e7f1}\n"
	      "svg.kj-chart{max-width:100%;height:auto;display:block;margin:6px 0}\n"
	      "svg .hov:hover{opacity:.7}\n"
	      ".gantt{overflow-x:auto;border:1px solid #e6e9f0}.scroll{max-height:640px;overflow:auto}\n"
	      ".twocol{display:flex;flex-wrap:wrap;gap:24px}.twocol>div{flex:1 1 520px}\n"
	      "#kj-selfcheck{font-size:.75em;color:#8a93a6}\n"
	      "@media print{body{max-width:none}.gantt,.scroll{overflow:visible;max-height:none}section{break-inside:avoid}"
	      "th{position:static}}\n"
	      "</style></head><body>\n",
	      f);
}

void kj_html_page_end(FILE *f)
{
	fputs("<p id=\"kj-selfcheck\">self-check has not run (scripts off)</p>\n"
	      "<script>\n"
	      "(function(){\n"
	      "function key(td){var v=td.getAttribute('data-v');if(v!==null&&v!==''&&!isNaN(+v))"
	      "return +v;return td.textContent.toLowerCase();}\n"
	      "document.querySelectorAll('table.sortable').forEach(function(t){\n"
	      " t.querySelectorAll('th').forEach(function(th,i){th.title='click to sort';\n"
	      "  th.addEventListener('click',function(){var tb=t.tBodies[0];\n"
	      "   var rows=Array.prototype.slice.call(tb.rows);var up=th.getAttribute('data-dir')!=='up';\n"
	      "   t.querySelectorAll('th').forEach(function(h){h.removeAttribute('data-dir');});\n"
	      "   th.setAttribute('data-dir',up?'up':'down');\n"
	      "   rows.sort(function(a,b){var x=key(a.cells[i]),y=key(b.cells[i]);\n"
	      "    if(typeof x!==typeof y){x=String(x);y=String(y);}return (x<y?-1:x>y?1:0)*(up?1:-1);});\n"
	      "   rows.forEach(function(r){tb.appendChild(r);});});});});\n"
	      "var bad=[];var charts=document.querySelectorAll('svg.kj-chart');\n"
	      "charts.forEach(function(s){if(s.querySelectorAll('rect,circle,polyline,line,path')"
	      ".length<2)bad.push('empty chart '+s.id);});\n"
	      "var tables=document.querySelectorAll('table.kj-table');\n"
	      "tables.forEach(function(t){if(!t.tBodies.length||t.tBodies[0].rows.length<1)"
	      "bad.push('empty table '+t.id);});\n"
	      "var txt='',w=document.createTreeWalker(document.body,NodeFilter.SHOW_TEXT);\n"
	      "while(w.nextNode()){var pn=w.currentNode.parentNode.nodeName;if(pn!=='SCRIPT'&&pn!=='STYLE')"
	      "txt+=w.currentNode.nodeValue+' ';}\n"
	      "if(/\\bNaN\\b|Infinity/.test(txt))bad.push('NaN or Infinity in text');\n"
	      "var el=document.getElementById('kj-selfcheck');\n"
	      "var mk='KJ_SELF'+'CHECK_'; /* the marker is not in the source, only in the result */\n"
	      "if(bad.length){el.textContent=mk+'FAIL: '+bad.join('; ');console.error(el.textContent);}\n"
	      "else el.textContent=mk+'OK charts='+charts.length+' tables='+tables.length;\n"
	      "})();\n"
	      "</script>\n</body></html>\n",
	      f);
}

void kj_html_missing(FILE *f, const char *what, const char *cmd)
{
	fputs("<div class=\"missing\"><b>Not in this run:</b> ", f);
	kj_html_esc(f, what);
	if (cmd) {
		fputs(" — to measure it: <code>", f);
		kj_html_esc(f, cmd);
		fputs("</code>", f);
	}
	fputs("</div>\n", f);
}

void kj_html_source(FILE *f, const char *tables, const char *cmd)
{
	fputs("<p class=\"src\">Source: ", f);
	kj_html_esc(f, tables);
	if (cmd) {
		fputs(" — re-create: <code>", f);
		kj_html_esc(f, cmd);
		fputs("</code>", f);
	}
	fputs("</p>\n", f);
}

void kj_html_name_cell(FILE *f, const char *name)
{
	const char *nm = name ? name : "?";
	fputs("<td class=\"name\" title=\"", f);
	kj_html_esc(f, nm);
	fputs("\">", f);
	if (strlen(nm) > 110) { /* long template names: the start here, all of it on hover */
		char cut[112];
		snprintf(cut, sizeof(cut), "%.107s", nm);
		kj_html_esc(f, cut);
		fputs("…", f);
	} else {
		kj_html_esc(f, nm);
	}
	fputs("</td>", f);
}
