/* Unit tests and seed makers that write a --capture run's spool include this (after cmocka.h and
 * spool_fixture.h's own needs): its records written by hand (put_train_start, put_window, put_mark;
 * spool_fixture.h's put_marker) and a whole process of eight "step" instances with a window over 2-4
 * (capture_spool, capture_spool_in), as the injection library writes them: one iteration mark per
 * instance, NVTX markers of which the first captured instance lost its end. */
#ifndef KJ_TEST_CAPTURE_SPOOL_FIXTURE_H
#define KJ_TEST_CAPTURE_SPOOL_FIXTURE_H

#include <stdint.h>
#include <string.h>

#include "kj_spool.h"

#include "spool_fixture.h"

/* The start of process pid's spool (python3 train.py). */
static inline void put_train_start(struct buf *b, int64_t pid)
{
	const char text[] = "/usr/bin/python3\0python3\0train.py\0";
	put_start(b, (uint32_t)pid, 1, text, sizeof(text));
}

static inline void put_window(struct buf *b, int64_t t, uint32_t event, uint32_t instance)
{
	struct kj_rec_window w;
	memset(&w, 0, sizeof(w));
	w.h.type = KJ_REC_WINDOW;
	w.t_ns = t;
	w.event = event;
	w.instance = instance;
	put(b, &w, sizeof(w), NULL, 0);
}

static inline void put_mark(struct buf *b, uint32_t instance, int64_t start, int64_t end, int captured, uint32_t name)
{
	struct kj_rec_iter_mark m;
	memset(&m, 0, sizeof(m));
	m.h.type = KJ_REC_ITER_MARK;
	m.start_ns = start;
	m.end_ns = end;
	m.instance = instance;
	m.name_id = name;
	m.captured = (uint32_t)captured;
	put(b, &m, sizeof(m), NULL, 0);
}

#define MS 1000000LL
static int64_t first_marker_late_ns = 3000; /* instance 2's start marker after its mark */

/* Instance i of "step" runs from i*100 to i*100+80 units (ms; µs for steps shorter than the
 * 1 ms a marker may be off its mark). */
static inline struct buf capture_spool_in(int64_t pid, int close_kind, int64_t unit)
{
	struct buf b = {NULL, 0};
	put_train_start(&b, pid);
	put_string(&b, 1, "step");
	for (uint32_t i = 0; i < 2; i++)
		put_mark(&b, i, i * 100 * unit, i * 100 * unit + 80 * unit, 0, 1);
	put_window(&b, 200 * unit, KJ_WINDOW_OPEN, 2);
	/* instance 2's start marker came, its end marker did not; instance 3 has both; 4 none */
	put_marker(&b, 7, 2, 1, 200 * unit + first_marker_late_ns);
	put_marker(&b, 8, 2, 1, 300 * unit + 2000);
	put_marker(&b, 8, 4, 0, 380 * unit - 1000);
	for (uint32_t i = 2; i < 5; i++) {
		if (i == 4 && close_kind != KJ_WINDOW_CLOSE) {
			if (close_kind == KJ_WINDOW_AT_EXIT) {
				put_mark(&b, 4, 400 * unit, 0, 1, 1); /* still open at exit */
				put_window(&b, 450 * unit, KJ_WINDOW_AT_EXIT, 4);
			}
			return b; /* 0: killed inside the window */
		}
		put_mark(&b, i, i * 100 * unit, i * 100 * unit + 80 * unit, 1, 1);
	}
	put_window(&b, 480 * unit, KJ_WINDOW_CLOSE, 4);
	for (uint32_t i = 5; i < 8; i++)
		put_mark(&b, i, i * 100 * unit, i * 100 * unit + 80 * unit, 0, 1);
	return b;
}

static inline struct buf capture_spool(int64_t pid, int close_kind)
{
	return capture_spool_in(pid, close_kind, MS);
}

#endif
