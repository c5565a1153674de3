/* The GPU harness's idle spacer as PTX text (kj_gpu_spin_ptx.h). */
#include "kj_gpu_spin_ptx.h"

/* One thread reads the global nanosecond timer, sleeps in 0.5 µs naps and returns once the span
 * asked has passed. PTX 6.3 / sm_70 is the oldest target with nanosleep; the driver JIT-compiles
 * it for the GPU at hand. */
static const char spin_ptx[] =
	".version 6.3\n"
	".target sm_70\n"
	".address_size 64\n"
	"\n"
	".visible .entry kj_gpu_spin(\n"
	"\t.param .u64 kj_gpu_spin_ns\n"
	")\n"
	"{\n"
	"\t.reg .pred %p<2>;\n"
	"\t.reg .b64 %rd<6>;\n"
	"\n"
	"\tld.param.u64 %rd1, [kj_gpu_spin_ns];\n"
	"\tmov.u64 %rd2, %globaltimer;\n"
	"$L_nap:\n"
	"\tnanosleep.u32 500;\n"
	"\tmov.u64 %rd3, %globaltimer;\n"
	"\tsub.u64 %rd4, %rd3, %rd2;\n"
	"\tsetp.lt.u64 %p1, %rd4, %rd1;\n"
	"\t@%p1 bra $L_nap;\n"
	"\tret;\n"
	"}\n";

const char *kj_gpu_spin_ptx(void)
{
	return spin_ptx;
}

const char *kj_gpu_spin_entry(void)
{
	return "kj_gpu_spin";
}
