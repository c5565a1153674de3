/* Text escaped for the formats kjoule writes: JSON string literals, HTML/XML text and CSV fields.
 * Pure functions over a FILE; no allocation. */
#include "kj_escape.h"

#include <string.h>

void kj_json_put_str(FILE *f, const char *s)
{
	static const char hex[] = "0123456789abcdef";
	putc('"', f);
	for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
		unsigned char c = *p;
		if (c == '"' || c == '\\') {
			putc('\\', f);
			putc(c, f);
		} else if (c < 0x20 || c == 0x7f) {
			switch (c) {
			case '\n': fputs("\\n", f); break;
			case '\t': fputs("\\t", f); break;
			case '\r': fputs("\\r", f); break;
			default:
				fputs("\\u00", f);
				putc(hex[c >> 4], f);
				putc(hex[c & 15], f);
			}
		} else {
			putc(c, f);
		}
	}
	putc('"', f);
}

/* s with <, >, & and " escaped; with xml, control characters other than tab left out (XML 1.0
 * cannot hold them) */
static void markup_esc(FILE *f, const char *s, int xml)
{
	for (; s && *s; s++) {
		switch (*s) {
		case '<': fputs("&lt;", f); break;
		case '>': fputs("&gt;", f); break;
		case '&': fputs("&amp;", f); break;
		case '"': fputs("&quot;", f); break;
		default:
			if (!xml || (unsigned char)*s >= 0x20 || *s == '\t')
				fputc(*s, f);
		}
	}
}

void kj_html_esc(FILE *f, const char *s)
{
	markup_esc(f, s, 0);
}

void kj_xml_esc(FILE *f, const char *s)
{
	markup_esc(f, s, 1);
}

void kj_csv_put_str(FILE *f, const char *s)
{
	if (!s)
		s = "";
	if (!strpbrk(s, ",\"\n\r")) {
		fputs(s, f);
		return;
	}
	putc('"', f);
	for (; *s; s++) {
		if (*s == '"')
			putc('"', f);
		putc(*s, f);
	}
	putc('"', f);
}
