/* External power-meter logs: WattsUp `time,id,pm1,pm2,sum` and generic `time,watts`, times as
 * ISO-8601 or Unix seconds. Plain C, no database: fuzzed in fuzz/meter/. */
#ifndef KJ_METER_H
#define KJ_METER_H

#include <stddef.h>

enum kj_meter_format { KJ_METER_AUTO = 0, KJ_METER_WATTSUP, KJ_METER_GENERIC };

struct kj_meter_log {
	enum kj_meter_format format;
	size_t n;
	double *t_s;   /* Unix seconds (UTC), strictly increasing */
	double *watts; /* total watts of the sample (WattsUp: sum) */
	int *line;     /* line number in the file of each sample */
	double period_s; /* median sampling period */
};

/** Energy of a window of a log. */
struct kj_meter_stats {
	double energy_j, duration_s, avg_w, peak_w, min_w;
	size_t samples; /* samples inside the window */
};

/**
 * @brief Parse a log held in memory. name is used in messages ("name:line: what").
 * @return 0, or KJ_EINVAL with a message naming the line in err (bad header, fields, times,
 *         watts). Gaps are not an error here: kj_meter_window() reports them.
 */
int kj_meter_parse(const char *buf, size_t len, const char *name, enum kj_meter_format fmt,
		   struct kj_meter_log **out, char *err, size_t errlen);

/** @brief Free a log; accepts NULL. */
void kj_meter_free(struct kj_meter_log *log);

/**
 * @brief Trapezoidal energy of [from, to] (Unix seconds; NAN: the log's start or end).
 * Returns KJ_EINVAL with a message when the window is outside the log, or when a gap longer than
 * KJ_METER_GAP_PERIODS sampling periods lies inside it (gaps are never integrated as zero).
 */
int kj_meter_window(const struct kj_meter_log *log, const char *name, double from, double to,
		    struct kj_meter_stats *out, char *err, size_t errlen);

/** @brief Parse a time: ISO-8601 (YYYY-MM-DD[T ]hh:mm:ss[.frac][Z|+hh:mm], no zone = UTC) or
 *  Unix seconds. @return 0 or -1. */
int kj_meter_parse_time(const char *s, size_t len, double *out);

/**
 * @brief Import the samples of [from, to] into meter_sample of an existing run database, in one
 * transaction; t_ns from the run's clock_sync when it has one (else NULL, with a warning).
 * meter column: the file's base name (":sum" for WattsUp). *count receives the rows written.
 */
int kj_meter_import(const char *db_path, const char *file, const struct kj_meter_log *l,
		    double from, double to, size_t *count);

#define KJ_METER_GAP_PERIODS 3.0
#define KJ_METER_MAX_WATTS 100000.0

#endif
