/* Kernel names: demangling and the tier (kind of work) of a kernel, by table-driven name rules.
 * Called by the tracer's ingest and by the analysis commands; docs/analysis-kernels.md lists
 * the rules. */
#ifndef KJ_KERNEL_CLASS_H
#define KJ_KERNEL_CLASS_H

/**
 * @brief Demangle a C++ (Itanium ABI) symbol through the C++ runtime's __cxa_demangle.
 * @param mangled  a kernel's symbol, e.g. "_ZN2at6native...", or a plain C name; NULL gives ""
 * @return a malloc'ed string the caller frees: the demangled name, or a copy of the input when
 *         it is not a mangled name or cannot be demangled. NULL only when memory runs out.
 */
char *kj_demangle(const char *mangled);

/**
 * @brief The tier of a kernel: one of the static strings "copy", "gemm", "attention", "norm",
 * "elementwise", "reduction", "communication", "other".
 * Rules are case-sensitive substring (and prefix) tests tried in priority order against both
 * names; the first rule that matches wins, "other" when none does.
 * @param mangled    the symbol (may be NULL)
 * @param demangled  its demangled form (may be NULL)
 * @return a static string, never NULL.
 */
const char *kj_tier_classify(const char *mangled, const char *demangled);

/** @brief The tier for memcpy and memset rows (they are not kernels): "copy". */
#define KJ_TIER_COPY "copy"

/** @brief Number of tiers, and the tier names in a fixed order (for validation and reports). */
#define KJ_TIER_COUNT 8
extern const char *const kj_tier_names[KJ_TIER_COUNT];

/**
 * @brief The static tier string equal to name, or NULL when name is not a tier
 * (e.g. a tier column written by another version).
 */
const char *kj_tier_canonical(const char *name);

#endif
