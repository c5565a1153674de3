/* The GPU harness's idle spacer: a one-thread kernel that waits a given number of nanoseconds on
 * the GPU's global timer, drawing next to nothing. Put between the launches of a kernel in a
 * CUDA graph it spaces them out, so that a kernel's energy can be measured at a duty cycle below
 * back to back (docs/energy.md, "Paced energy under the power cap"). Kept as PTX text, with no
 * CUDA header, so a driver-API worker loads it without the CUDA runtime and a test without a GPU
 * can assemble it. */
#ifndef KJ_GPU_SPIN_PTX_H
#define KJ_GPU_SPIN_PTX_H

#ifdef __cplusplus
extern "C" {
#endif

/** @brief The spacer's PTX module text (NUL-terminated): one entry, kj_gpu_spin_entry(), taking
 *  one .u64 parameter, the nanoseconds to wait. */
const char *kj_gpu_spin_ptx(void);
/** @brief The spacer's entry name in kj_gpu_spin_ptx(). */
const char *kj_gpu_spin_entry(void);

#ifdef __cplusplus
}
#endif
#endif
