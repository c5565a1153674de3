/* The custom phases this worker knows, by name (YAML: type: custom, kernel: NAME). Add a line
 * for yours; examples/custom_phase/add_relu.cu is the worked example. */
#include <string.h>

#include "kj_phase_api.h"

extern const struct kj_phase_ops kj_example_add_relu;

static const struct kj_phase_ops *const customs[] = {
	&kj_example_add_relu,
};

const struct kj_phase_ops *kj_custom_phase_find(const char *name)
{
	for (size_t i = 0; i < sizeof(customs) / sizeof(customs[0]); i++)
		if (!strcmp(customs[i]->name, name))
			return customs[i];
	return NULL;
}
