/* Reading the function names a module image defines (cubin ELF, or the ELF entries inside a
 * fatbin), so replay can find which stored module holds a kernel. */
#ifndef KJ_CUBIN_H
#define KJ_CUBIN_H

#include <stddef.h>
#include <stdint.h>

/**
 * @brief Call fn(name, ud) for every function symbol of a module image.
 * @return number of functions found (>= 0), or KJ_EINVAL when the image is not an ELF or fatbin
 *         this reader understands (compressed fatbin entries are skipped and not counted).
 */
int kj_cubin_functions(const void *image, size_t bytes, void (*fn)(const char *name, void *ud),
		       void *ud);

/** What a cubin's `.nv.info` sections say of one function. */
struct kj_cubin_fn {
	const char *name;     /* the symbol (valid during the callback) */
	int regs;             /* EIATTR_REGCOUNT, -1 when absent */
	uint32_t param_bytes; /* end of the last EIATTR_KPARAM_INFO parameter, 0 when none */
};

/**
 * @brief Call fn for every function symbol of an ELF64 cubin with its registers and parameter
 *        block size (not fatbins: their entries are other images).
 * @return functions reported (>= 0), or KJ_EINVAL when the image is not an ELF this reader reads.
 */
int kj_cubin_function_facts(const void *image, size_t bytes, void (*fn)(const struct kj_cubin_fn *f, void *ud),
			    void *ud);

/**
 * @brief A stored module image (`module.codec`, `data`, `bytes`) as the driver takes it: decompressed
 *        when codec is "zstd" (bytes: its size where the frame does not say), copied otherwise, and
 *        NUL-terminated (PTX). Free with free(); *out_len is its size without the NUL.
 * @return the image, or NULL with *why set (zstd's error name, or "out of memory").
 */
unsigned char *kj_cubin_image(const char *codec, const void *data, size_t len, size_t bytes, size_t *out_len,
			      const char **why);

/** @brief "cubin", "fatbin", "ptx" or "unknown" by the image's magic. */
const char *kj_cubin_format(const void *image, size_t bytes);

#endif
