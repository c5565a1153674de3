/* kjoule's NVTX hooks (inject_nvtx.c) and what --capture does with the range calls they see
 * (inject_capture.c). */
#ifndef KJ_INJECT_NVTX_H
#define KJ_INJECT_NVTX_H

#include <nvtx3/nvToolsExt.h>
#include <stdint.h>

/** kjoule's hooks in front of those in one NVTX library's table (CUPTI's, or none): the push, pop,
 *  start, end and string-registration entries of the core and domain modules. A slot that already
 *  holds the hook is left alone; one whose function differs from what the first table held there
 *  is left to it, and said once (kj_spool_problem). */
void kj_nvtx_hooks_install(NvtxGetExportTableFunc_t get_export_table);
/** 1 when KJOULE_CAPTURE names an NVTX range (parsed once; no spool needed): the hooks go in. */
int kj_capture_wants_nvtx(void);
/** 1 once the capture state is ready (kj_capture_init at cuInit): instances are counted from then. */
int kj_capture_nvtx_on(void);
/** 1 when an ASCII text or an event's message is the capture range's name. */
int kj_capture_named(const char *ascii);
int kj_capture_attr_named(const nvtxEventAttributes_t *a);
/** A push (before the range is handed on) or a pop (after) of DOMAIN (NULL: the default domain). */
void kj_capture_push(const void *domain, int named);
void kj_capture_pop(const void *domain);
/** A start/end range named as the capture range: opened before it is handed on (the slot, or -1
 *  when too many are open), then tied to the id NVTX returned (a slot < 0: nothing); ended after. */
int kj_capture_range_open(void);
void kj_capture_range_tie(int slot, uint64_t id);
void kj_capture_range_end(uint64_t id);
/** A registered string whose text is the capture range's name: its handle. */
void kj_capture_string_registered(const void *handle);

#endif
