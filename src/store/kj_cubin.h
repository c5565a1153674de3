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
	uint32_t reqntid[3];  /* EIATTR_REQNTID: the only block shape it launches with; 0s when free */
};

/** CUPTI's kernel records give at least 16 registers per thread (a function compiled to 8-15
 *  shows as 16; measured on H100, CUDA 13): the registers traced for a launch are those of a
 *  function with `function_regs` when they are equal, or when traced is 16 and it has fewer. */
static inline int kj_cubin_regs_match(int traced, int function_regs)
{
	return traced == function_regs || (traced == 16 && function_regs >= 0 && function_regs < 16);
}

/** Looser: CUPTI's records also gave 32 registers for Inductor's Triton functions of 24-30
 *  (H100, CUDA 13, Triton 3.6), so a function up to 8 registers below the traced figure may be
 *  the one that ran; a replay tries this only when no function matches exactly. */
static inline int kj_cubin_regs_near(int traced, int function_regs)
{
	return kj_cubin_regs_match(traced, function_regs) ||
	       (function_regs >= 0 && function_regs < traced && traced - function_regs <= 8);
}

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
 * @return the image, or NULL with *why set (zstd's error name, a frame whose size is not `bytes`
 *         (when bytes is not 0), or "out of memory").
 */
unsigned char *kj_cubin_image(const char *codec, const void *data, size_t len, size_t bytes, size_t *out_len,
			      const char **why);

/** @brief "cubin", "fatbin", "ptx" or "unknown" by the image's magic. */
const char *kj_cubin_format(const void *image, size_t bytes);

#endif
