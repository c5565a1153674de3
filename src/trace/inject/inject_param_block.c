/* A launch's parameter block: each parameter copied to its offset and only the gaps between them
 * zeroed, so a block is written once (clearing it whole first wrote it twice). */
#include <cuda.h>
#include <string.h>

#include "inject_param_block.h"
#include "inject_hot.h"

KJ_HOT int kj_param_block_gather(const uint32_t *layout, uint32_t nparams, uint32_t total,
				 void **params, void **extra, unsigned char *blob)
{
	if (params) {
		uint32_t at = 0; /* bytes of blob written so far */
		for (uint32_t i = 0; i < nparams; i++) {
			uint32_t off = layout[2 * i], size = layout[2 * i + 1];
			if (off + size > total || off < at) { /* not a layout in offset order */
				memset(blob, 0, total);
				for (uint32_t j = 0; j < nparams; j++)
					if (params[j] && layout[2 * j] + layout[2 * j + 1] <= total)
						memcpy(blob + layout[2 * j], params[j], layout[2 * j + 1]);
				return 0;
			}
			if (off > at)
				memset(blob + at, 0, off - at);
			if (params[i])
				memcpy(blob + off, params[i], size);
			else
				memset(blob + off, 0, size);
			at = off + size;
		}
		if (at < total)
			memset(blob + at, 0, total - at);
		return 0;
	}
	if (extra) {
		void *buf = NULL;
		size_t size = 0;
		for (void **e = extra; *e != CU_LAUNCH_PARAM_END; e += 2) {
			if (*e == CU_LAUNCH_PARAM_BUFFER_POINTER)
				buf = e[1];
			else if (*e == CU_LAUNCH_PARAM_BUFFER_SIZE)
				size = *(size_t *)e[1];
		}
		if (buf && size >= total) {
			memcpy(blob, buf, total);
			return 0;
		}
	}
	return -1;
}
