#include "kj_yaml.h"

#include <stdio.h>

#include "kj_error.h"

int kj_yaml_error(const yaml_parser_t *parser, const char *path, char *err, size_t len)
{
	snprintf(err, len, "%s:%lu:%lu: YAML error: %s%s%s", path,
		 (unsigned long)parser->problem_mark.line + 1,
		 (unsigned long)parser->problem_mark.column + 1,
		 parser->problem ? parser->problem : "?", parser->context ? " " : "",
		 parser->context ? parser->context : "");
	return KJ_EINVAL;
}
