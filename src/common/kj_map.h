/* A map from 64-bit keys to 64-bit values (open addressing). Key 0 is allowed. */
#ifndef KJ_MAP_H
#define KJ_MAP_H

#include <stddef.h>
#include <stdint.h>

struct kj_map;

/** @brief New empty map, or NULL on ENOMEM. Free with kj_map_free(). */
struct kj_map *kj_map_new(void);
/** @brief Free; accepts NULL. */
void kj_map_free(struct kj_map *m);
/** @brief Insert or replace. @return 0 or KJ_ENOMEM. */
int kj_map_put(struct kj_map *m, uint64_t key, uint64_t value);
/** @brief 1 and *value set when key is present, else 0. */
int kj_map_get(const struct kj_map *m, uint64_t key, uint64_t *value);
/** @brief Number of keys. */
size_t kj_map_size(const struct kj_map *m);
/** @brief 64-bit FNV-1a of a NUL-terminated string (NULL hashes as ""): a key for the map. */
uint64_t kj_hash_str(const char *s);

#endif
