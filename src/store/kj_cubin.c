#include "kj_cubin.h"

#include <stdint.h>
#include <string.h>

#include "kj_error.h"

#define FATBIN_MAGIC 0xBA55ED50u

static int is_elf64(const unsigned char *p, size_t n)
{
	return n >= 64 && p[0] == 0x7f && p[1] == 'E' && p[2] == 'L' && p[3] == 'F' && p[4] == 2;
}

const char *kj_cubin_format(const void *image, size_t bytes)
{
	const unsigned char *p = image;
	uint32_t magic;
	if (is_elf64(p, bytes))
		return "cubin";
	if (bytes >= 4) {
		memcpy(&magic, p, 4);
		if (magic == FATBIN_MAGIC)
			return "fatbin";
	}
	if (bytes >= 8 && (memcmp(p, "//", 2) == 0 || memcmp(p, ".vers", 5) == 0))
		return "ptx";
	return "unknown";
}

/* Symbols of one ELF64 image; every read is bounds-checked against n. */
static int elf_functions(const unsigned char *p, size_t n, void (*fn)(const char *, void *), void *ud)
{
	uint64_t shoff;
	uint16_t shentsize, shnum;
	int found = 0;
	if (!is_elf64(p, n))
		return KJ_EINVAL;
	memcpy(&shoff, p + 0x28, 8);
	memcpy(&shentsize, p + 0x3A, 2);
	memcpy(&shnum, p + 0x3C, 2);
	if (shentsize < 64 || shoff > n || (uint64_t)shnum * shentsize > n - shoff)
		return KJ_EINVAL;
	for (uint16_t i = 0; i < shnum; i++) {
		const unsigned char *sh = p + shoff + (uint64_t)i * shentsize;
		uint32_t type, link;
		uint64_t off, size, entsize;
		memcpy(&type, sh + 4, 4);
		if (type != 2 /* SHT_SYMTAB */)
			continue;
		memcpy(&off, sh + 0x18, 8);
		memcpy(&size, sh + 0x20, 8);
		memcpy(&link, sh + 0x28, 4);
		memcpy(&entsize, sh + 0x38, 8);
		if (entsize < 24 || off > n || size > n - off || link >= shnum)
			continue;
		const unsigned char *strsh = p + shoff + (uint64_t)link * shentsize;
		uint64_t stroff, strsize;
		memcpy(&stroff, strsh + 0x18, 8);
		memcpy(&strsize, strsh + 0x20, 8);
		if (stroff > n || strsize > n - stroff)
			continue;
		for (uint64_t s = 0; s + entsize <= size; s += entsize) {
			const unsigned char *sym = p + off + s;
			uint32_t name;
			memcpy(&name, sym, 4);
			if ((sym[4] & 0xf) != 2 /* STT_FUNC */ || name >= strsize)
				continue;
			const char *str = (const char *)p + stroff + name;
			if (!memchr(str, 0, strsize - name) || !*str)
				continue;
			fn(str, ud);
			found++;
		}
	}
	return found;
}

int kj_cubin_functions(const void *image, size_t bytes, void (*fn)(const char *name, void *ud), void *ud)
{
	const unsigned char *p = image;
	uint32_t magic;
	uint16_t hsize;
	uint64_t fsize;
	int found = 0;
	if (is_elf64(p, bytes))
		return elf_functions(p, bytes, fn, ud);
	if (bytes < 16)
		return KJ_EINVAL;
	memcpy(&magic, p, 4);
	if (magic != FATBIN_MAGIC)
		return KJ_EINVAL;
	/* fatbin: {magic u32, version u16, header size u16, payload size u64}, then entries
	 * {kind u16 (1 PTX, 2 ELF), version u16, header size u32, payload size u64, u32 u32,
	 * version u16 u16, arch u32 (0x1c), name offset and length u32 u32, flags u64 (0x28)}. */
	memcpy(&hsize, p + 6, 2);
	memcpy(&fsize, p + 8, 8);
	if (hsize < 16 || hsize > bytes)
		return KJ_EINVAL;
	size_t pos = hsize, end = bytes;
	if (fsize < bytes - hsize)
		end = hsize + fsize;
	while (pos + 16 <= end) {
		uint16_t kind;
		uint32_t ehsize;
		uint64_t esize, flags = 0;
		memcpy(&kind, p + pos, 2);
		memcpy(&ehsize, p + pos + 4, 4);
		memcpy(&esize, p + pos + 8, 8);
		if (ehsize < 16 || ehsize > end - pos || esize > end - pos - ehsize)
			break;
		if (ehsize >= 0x30)
			memcpy(&flags, p + pos + 0x28, 8);
		if (kind == 2 && !(flags & 0x2000)) {
			int r = elf_functions(p + pos + ehsize, esize, fn, ud);
			if (r > 0)
				found += r;
		}
		pos += ehsize + esize;
	}
	return found;
}
