/* kjoule fit's output folder, replaced whole or not at all: the new models are built in a sibling
 * temporary folder (same file system), the earlier folder's models of other keys are carried into
 * it, and it is renamed into place; a failure leaves the earlier folder as it was. */
#ifndef KJ_FIT_OUT_H
#define KJ_FIT_OUT_H

#include <jansson.h>
#include <limits.h>

struct kj_fit_out {
	const char *shown;     /* the folder as the user named it, for messages */
	char target[PATH_MAX]; /* its absolute path */
	char tmp[PATH_MAX];    /* the folder being built ('' until kj_fit_out_begin) */
	int exists;            /* target existed when opened */
	unsigned mode;         /* permissions the built folder gets */
	json_t *old;           /* target/models.json as read (NULL: none); owned */
};

/**
 * @brief Check the output folder out_dir before anything is written: a missing folder (its parent
 *        must exist), an empty one, or a models folder (models.json with a "models" list, and only
 *        files beside it). A models.json that is no models index, a folder holding files but no
 *        models.json, or one holding a sub-folder is refused with a message naming it: fit never
 *        silently replaces what it did not write. Creates nothing.
 * @return 0, or a negative code after a message (o->old is then NULL).
 */
int kj_fit_out_open(const char *out_dir, struct kj_fit_out *o);
/** @brief Make the temporary sibling folder (TARGET.tmp-XXXXXX) the models are written into. */
int kj_fit_out_begin(struct kj_fit_out *o);
/**
 * @brief Put the built folder in place of the target: the earlier folder's files the new fit
 *        neither wrote nor replaced (replaced: the files the old index's entries in `dropped`
 *        name) are carried over (hard links, else copies), then the earlier folder is renamed
 *        aside, the new one renamed in, and the old one removed; if the second rename fails the
 *        earlier folder is put back. The temporary folder is gone on return either way.
 * @param dropped the old index's entries the new models replace (JSON array; NULL: none)
 */
int kj_fit_out_commit(struct kj_fit_out *o, json_t *dropped);
/** @brief Remove the temporary folder (if any) and free o; the target is left as it was. */
void kj_fit_out_abort(struct kj_fit_out *o);

#endif
