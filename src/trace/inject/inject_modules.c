/* Which module each launched function came from. JIT compilers (Triton, Inductor's autotuner,
 * XLA) load many modules that each define a function of one name, often with one signature and
 * geometry: only the module tells them apart. CUPTI names a module (its id and image) in the
 * resource callback that fires inside the program's cuModuleLoad* call, and the call's exit gives
 * its CUmodule handle; cuFuncGetModule then leads a function back to that pair. */
#include <cupti.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "inject.h"
#include "kj_map.h"

static pthread_mutex_t mod_lock = PTHREAD_MUTEX_INITIALIZER;
static struct kj_map *by_handle; /* CUmodule -> index into mods */
static struct {
	uint32_t id;
	uint64_t content;
} *mods;
static size_t nmods, capmods;

static __thread int tl_loaded;        /* a module was loaded inside the current load call */
static __thread uint32_t tl_loaded_id;
static __thread uint64_t tl_loaded_content;

/* 64-bit digest of an image, eight bytes at a time: identical images, identical digests (a
 * kernel loaded by two processes keeps one launch group identity). */
static uint64_t digest(const unsigned char *p, size_t n)
{
	uint64_t h = 0x9e3779b97f4a7c15ULL ^ n, w;
	size_t i = 0;
	for (; i + 8 <= n; i += 8) {
		memcpy(&w, p + i, 8);
		h = (h ^ w) * 0xff51afd7ed558ccdULL;
		h ^= h >> 29;
	}
	for (; i < n; i++)
		h = (h ^ p[i]) * 0x100000001b3ULL;
	return h ^ (h >> 32);
}

void kj_module_loaded(uint32_t module_id, const void *image, size_t bytes)
{
	tl_loaded = 1;
	tl_loaded_id = module_id;
	tl_loaded_content = image && bytes ? digest(image, bytes) : 0;
}

static int is_module_load(uint32_t cbid)
{
	return cbid == CUPTI_DRIVER_TRACE_CBID_cuModuleLoad || cbid == CUPTI_DRIVER_TRACE_CBID_cuModuleLoadData ||
	       cbid == CUPTI_DRIVER_TRACE_CBID_cuModuleLoadDataEx ||
	       cbid == CUPTI_DRIVER_TRACE_CBID_cuModuleLoadFatBinary;
}

int kj_module_load_call(uint32_t cbid, const CUpti_CallbackData *cb)
{
	if (!is_module_load(cbid))
		return 0;
	if (cb->callbackSite == CUPTI_API_ENTER) {
		tl_loaded = 0;
		return 1;
	}
	/* every cuModuleLoad* parameter struct starts with the CUmodule * it fills */
	const cuModuleLoad_params *p = cb->functionParams;
	if (!tl_loaded || !p || !p->module || (cb->functionReturnValue && *(const CUresult *)cb->functionReturnValue))
		return 1;
	CUmodule m = *p->module;
	tl_loaded = 0;
	pthread_mutex_lock(&mod_lock);
	if (!by_handle)
		by_handle = kj_map_new();
	if (by_handle && nmods == capmods) {
		size_t nc = capmods ? 2 * capmods : 256;
		void *nv = realloc(mods, nc * sizeof(*mods));
		if (nv)
			mods = nv, capmods = nc;
	}
	/* a handle the driver gives again after an unload is overwritten here */
	if (by_handle && nmods < capmods && kj_map_put(by_handle, (uint64_t)(uintptr_t)m, nmods) == 0) {
		mods[nmods].id = tl_loaded_id;
		mods[nmods].content = tl_loaded_content;
		nmods++;
	}
	pthread_mutex_unlock(&mod_lock);
	return 1;
}

int kj_module_of_function(CUfunction f, uint32_t *module_id, uint64_t *content)
{
	CUmodule m = NULL;
	uint64_t i;
	int found = 0;
	*module_id = 0;
	*content = 0;
	if (cuFuncGetModule(&m, f) != CUDA_SUCCESS || !m)
		return 0;
	pthread_mutex_lock(&mod_lock);
	if (by_handle && kj_map_get(by_handle, (uint64_t)(uintptr_t)m, &i) && i < nmods) {
		*module_id = mods[i].id;
		*content = mods[i].content;
		found = 1;
	}
	pthread_mutex_unlock(&mod_lock);
	return found;
}
