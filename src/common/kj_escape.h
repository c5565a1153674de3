/* Text escaped for the formats kjoule writes: JSON string literals, HTML/XML text, CSV fields.
 * Used by the report writers (src/report) and the pipeline's CSV and HTML (src/pipeline). */
#ifndef KJ_ESCAPE_H
#define KJ_ESCAPE_H

#include <stdio.h>

/** @brief Write s as a JSON string literal (quotes included) with every control character,
 *  quote and backslash escaped. */
void kj_json_put_str(FILE *f, const char *s);
/** @brief Write s as HTML/XML text or attribute value: <, >, & and " escaped (NULL: nothing). */
void kj_html_esc(FILE *f, const char *s);
/** @brief kj_html_esc for a standalone SVG/XML file: control characters but tab are left out. */
void kj_xml_esc(FILE *f, const char *s);
/** @brief Write s as one CSV field (quoted when it holds a comma, quote or newline). */
void kj_csv_put_str(FILE *f, const char *s);

#endif
