/* Strict numbers from text, for every number a user types (command-line options, file fields):
 * the whole string is the number, in a stated range, or it is refused with the reason. */
#ifndef KJ_NUM_H
#define KJ_NUM_H

#include <stddef.h>
#include <stdint.h>

/**
 * @brief A decimal integer, optionally signed: "-3", "+7", "42"; nothing else ("3x", " 3", "3.0",
 *        "0x10", "" are refused), from lo to hi, into *out.
 * @param why  on refusal: the reason, e.g. "'3x' is not an integer" or "'0' is not in 1..64"
 * @return 0, or KJ_EINVAL with why filled (*out untouched).
 */
int kj_num_i64(const char *s, int64_t lo, int64_t hi, int64_t *out, char *why, size_t whylen);

/**
 * @brief A finite decimal number: digits with an optional sign, point and exponent ("1", "-0.5",
 *        "2.5e3", ".5"); "inf", "nan", hex, spaces and trailing text are refused; from lo to hi
 *        (both included), into *out.
 * @return 0, or KJ_EINVAL with the reason in why (*out untouched).
 */
int kj_num_f64(const char *s, double lo, double hi, double *out, char *why, size_t whylen);

/**
 * @brief As kj_num_f64 with lo excluded: a number above lo up to hi ("must be > 0" style options).
 */
int kj_num_f64_above(const char *s, double lo, double hi, double *out, char *why, size_t whylen);

/**
 * @brief A comma-separated list of one to max numbers, each as kj_num_f64 takes it ("1,3", "0.5");
 *        no empty item, no spaces. Into out[0..*n).
 * @return 0, or KJ_EINVAL with the reason in why, naming the item (out and *n untouched).
 */
int kj_num_f64_list(const char *s, double lo, double hi, double *out, size_t max, size_t *n, char *why,
		    size_t whylen);

#endif
