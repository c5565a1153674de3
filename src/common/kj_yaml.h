/* What kjoule says when libyaml cannot read a file: one format for every YAML reader. */
#ifndef KJ_YAML_H
#define KJ_YAML_H

#include <stddef.h>
#include <yaml.h>

/**
 * @brief After yaml_parser_load() failed: "PATH:LINE:COLUMN: YAML error: PROBLEM CONTEXT" into
 *        err (LINE and COLUMN from 1), the parser's own words kept.
 * @return KJ_EINVAL, for the caller to return.
 */
int kj_yaml_error(const yaml_parser_t *parser, const char *path, char *err, size_t len);

#endif
