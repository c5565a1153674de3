#include "kj_map.h"

#include <stdlib.h>

#include "kj_error.h"

struct slot {
	uint64_t key, value;
	int used;
};

struct kj_map {
	struct slot *slots;
	size_t cap, n;
};

static size_t slot_of(uint64_t key, size_t cap)
{
	key ^= key >> 33;
	key *= 0xff51afd7ed558ccdULL;
	key ^= key >> 33;
	return (size_t)key & (cap - 1);
}

struct kj_map *kj_map_new(void)
{
	struct kj_map *m = calloc(1, sizeof(*m));
	if (!m)
		return NULL;
	m->cap = 64;
	m->slots = calloc(m->cap, sizeof(*m->slots));
	if (!m->slots) {
		free(m);
		return NULL;
	}
	return m;
}

void kj_map_free(struct kj_map *m)
{
	if (!m)
		return;
	free(m->slots);
	free(m);
}

static int grow(struct kj_map *m)
{
	size_t ncap = m->cap * 2;
	struct slot *n = calloc(ncap, sizeof(*n));
	if (!n)
		return KJ_ENOMEM;
	for (size_t i = 0; i < m->cap; i++) {
		if (!m->slots[i].used)
			continue;
		size_t j = slot_of(m->slots[i].key, ncap);
		while (n[j].used)
			j = (j + 1) & (ncap - 1);
		n[j] = m->slots[i];
	}
	free(m->slots);
	m->slots = n;
	m->cap = ncap;
	return 0;
}

int kj_map_put(struct kj_map *m, uint64_t key, uint64_t value)
{
	if ((m->n + 1) * 10 > m->cap * 7 && grow(m) != 0)
		return KJ_ENOMEM;
	size_t i = slot_of(key, m->cap);
	while (m->slots[i].used && m->slots[i].key != key)
		i = (i + 1) & (m->cap - 1);
	if (!m->slots[i].used) {
		m->slots[i].used = 1;
		m->slots[i].key = key;
		m->n++;
	}
	m->slots[i].value = value;
	return 0;
}

int kj_map_get(const struct kj_map *m, uint64_t key, uint64_t *value)
{
	size_t i = slot_of(key, m->cap);
	while (m->slots[i].used) {
		if (m->slots[i].key == key) {
			if (value)
				*value = m->slots[i].value;
			return 1;
		}
		i = (i + 1) & (m->cap - 1);
	}
	return 0;
}

size_t kj_map_size(const struct kj_map *m)
{
	return m->n;
}

uint64_t kj_hash_str(const char *s)
{
	uint64_t h = 1469598103934665603ULL;
	for (; s && *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ULL;
	return h;
}
